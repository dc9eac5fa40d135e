#!/bin/bash
# t_hostile_files: a target whose maps point at files it should not make us
# read.  It runs as nobody in a mount namespace of its own; once its three
# modules are mapped, the directory that holds them is covered (in its
# namespace only) by a tmpfs where each module's path is now a symbolic
# link to a file of root's (mode 0600 in a 0700 directory: an ELF library
# with a function secret_function_xyzzy) or to /etc/shadow, or a FIFO; the
# stripped module is there (a copy), but its .gnu_debuglink names a FIFO
# next to it and a link to the secret in .debug/.  heapattach, as root, reads the
# modules through /proc/PID/root and /proc/PID/map_files.  It must:
#  - never open the secret nor /etc/shadow (inotify on both: no open, no
#    read), never block on a FIFO (it detaches within seconds), and still
#    name the modules' functions (from the mapped files themselves);
#  - print no control byte; heapdiff's reports of the profile are valid.
# And a target in a chroot whose /tmp is a symbolic link out of it: the
# socket directory is not made through it (nor in any other directory, and
# in its own network namespace no abstract socket: refused, nothing
# created, the target untouched).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
require_all idle
for c in setpriv unshare nsenter; do
	command -v "$c" >/dev/null || skip "$c not installed"
done
unshare -m --propagation private true 2>/dev/null || skip "unshare -m not possible here"
nobody=65534

# The modules, the secret, the watcher and the target.
cat >"$W/mod.c" <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) void *FN(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 7, n);
	__asm__ volatile("" ::: "memory");
	return p;
}
/* The target waits for its commands in here: the thread heapattach stops
 * and unwinds (to see whether it may call dlopen) has a frame in each. */
__attribute__((noinline)) char *READ(char *buf, int n, FILE *f)
{
	char *r = fgets(buf, n, f);
	__asm__ volatile("" ::: "memory");
	return r;
}
SRC
mkdir -p "$W/d/lib" "$W/secret"
for m in victim fifo shadow debug; do
	gcc -shared -fPIC -O1 -g -DFN="${m}_alloc" -DREAD="${m}_read" -o "$W/d/lib/lib$m.so" "$W/mod.c" ||
		fail "cannot build lib$m.so"
done
objcopy --only-keep-debug "$W/d/lib/libdebug.so" "$W/d/lib/libdebug.debug" &&
	strip --strip-debug "$W/d/lib/libdebug.so" &&
	objcopy --add-gnu-debuglink="$W/d/lib/libdebug.debug" "$W/d/lib/libdebug.so" ||
	fail "cannot give libdebug.so a debug link"
rm -f "$W/d/lib/libdebug.debug"
gcc -shared -fPIC -O1 -g -DFN=secret_function_xyzzy -DREAD=secret_read -o "$W/secret/secret.so" "$W/mod.c" ||
	fail "cannot build the secret"
chmod 0600 "$W/secret/secret.so"
chmod 0700 "$W/secret"
chmod -R a+rX "$W/d"

cat >"$W/watch.c" <<'SRC'
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>
/* Say every open and read of the files named. */
int main(int argc, char **argv)
{
	char buf[4096];
	int fd = inotify_init1(IN_CLOEXEC);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++)
		if (inotify_add_watch(fd, argv[i], IN_OPEN | IN_ACCESS) < 0) {
			perror(argv[i]);
			return 1;
		}
	printf("watching\n");
	for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
		for (char *p = buf; p < buf + n;) {
			struct inotify_event *e = (struct inotify_event *)p;
			printf("event 0x%x on %s\n", e->mask, argv[e->wd]);
			p += sizeof *e + e->len;
		}
	return 0;
}
SRC
compile_c "$W/watch" "$W/watch.c"

cat >"$W/maps.c" <<'SRC'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void *keep[1000];
int main(int argc, char **argv)
{
	static const char *const mods[] = { "victim", "fifo", "shadow", "debug" };
	void *(*fn[4])(size_t);
	char *(*rd[4])(char *, int, FILE *);
	char path[4096], line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < 4; i++) {
		snprintf(path, sizeof path, "%s/lib%s.so", argv[1], mods[i]);
		void *h = dlopen(path, RTLD_NOW);
		snprintf(line, sizeof line, "%s_alloc", mods[i]);
		if (!h || !(fn[i] = (void *(*)(size_t))dlsym(h, line))) {
			printf("error %s\n", dlerror());
			return 1;
		}
		snprintf(line, sizeof line, "%s_read", mods[i]);
		if (!(rd[i] = (char *(*)(char *, int, FILE *))dlsym(h, line))) {
			printf("error %s\n", dlerror());
			return 1;
		}
	}
	printf("ready pid=%d\n", (int)getpid());
	int n = 0, r = 0;
	/* Blocked reading in each module in turn: libfifo's first, the one
	 * whose path becomes a FIFO. */
	while (rd[(r++ + 1) % 4](line, sizeof line, stdin)) {
		if (strncmp(line, "alloc", 5) == 0) {
			for (int k = 0; k < 100 && n < 1000 - 4; k++)
				for (int i = 0; i < 4; i++)
					keep[n++] = fn[i](512);
			printf("done alloc %d\n", n);
		} else {
			printf("echo %s", line);
		}
	}
	printf("bye\n");
	return 0;
}
SRC
compile_c "$W/maps" "$W/maps.c" -ldl
chmod 755 "$W/maps" "$W/watch"

start_cmd maps unshare -m --propagation private \
	setpriv --reuid=$nobody --regid=$nobody --clear-groups "$W/maps" "$W/d/lib"
pid=$TPID
wait_target_ready
wait_syscall "$pid" "$pid" "$NR_READ"
[ "$(awk '/^Uid:/ { print $5 }' "/proc/$pid/status")" = $nobody ] || fail "precondition: the target does not run as nobody"

# The target's view of its modules' directory changes under their mappings.
nsenter -t "$pid" -m sh -c '
	lib=$1 secret=$2
	cp "$lib/libdebug.so" /tmp/libdebug.so.$$ &&
	mount -t tmpfs -o mode=0777 hostile "$lib" &&
	ln -s "$secret" "$lib/libvictim.so" &&
	mkfifo -m 0666 "$lib/libfifo.so" &&
	ln -s /etc/shadow "$lib/libshadow.so" &&
	mv /tmp/libdebug.so.$$ "$lib/libdebug.so" &&
	mkfifo -m 0666 "$lib/libdebug.debug" &&
	mkdir "$lib/.debug" && ln -s "$secret" "$lib/.debug/libdebug.debug"' sh "$W/d/lib" "$W/secret/secret.so" ||
	fail "cannot cover the target's module directory"
[ -L "/proc/$pid/root$W/d/lib/libvictim.so" ] && [ -p "/proc/$pid/root$W/d/lib/libfifo.so" ] ||
	fail "precondition: the module paths are not replaced in the target's namespace"
grep -q "$W/d/lib/libvictim.so$" "/proc/$pid/maps" || fail "precondition: the maps do not name libvictim.so as it was"
[ -f "$W/d/lib/libvictim.so" ] || fail "precondition: our own view changed too"

start_cmd watch "$W/watch" "$W/secret/secret.so" /etc/shadow
wait_line "$TOUT" '^watching$'
watch_out=$TOUT

db=$W/files.db
TOUT=$W/maps.out
start_ha -q -i 1 -s 3600 -o "$db" "$pid"
wait_ready "$pid" maps
send "${_FDS[0]}" alloc
wait_line "$W/maps.out" '^done alloc 400$'
snapshot_now "$db"
# The writer symbolizes every new stack before the last snapshot: a FIFO
# opened on the way would keep it (and the detach) waiting for ever.
detach_by_signal INT "$pid"
no_controls "$HA_ERR" "heapattach's stderr"
no_controls "$HA_OUT" "heapattach's stdout"

! grep -q '^event' "$watch_out" ||
	fail "heapattach opened or read a file the target's user may not: $(grep '^event' "$watch_out" | head -n 3 | tr '\n' ';')"
log "neither the secret nor /etc/shadow was opened"
funcs=$(sqlite3 "$db" "SELECT DISTINCT function FROM frames")
for f in victim_alloc fifo_alloc shadow_alloc debug_alloc; do
	grep -qx "$f" <<<"$funcs" || fail "no frame names $f (read from the mapped file): $(echo $funcs)"
done
! grep -q secret_function <<<"$funcs" || fail "the secret's symbols are in the profile"
log "victim_alloc, fifo_alloc, shadow_alloc, debug_alloc named from the mapped files"
check_reports "$db" files
send "${_FDS[0]}" "still here"
wait_line "$W/maps.out" '^echo still here$'

# A chroot whose tmp is a link out of it (to a directory of ours).
root=$W/croot
# The chroot binds /usr, /etc, /proc and the top directory of the build
# tree (where the target program is).
top=$(cd "$HA_BUILDDIR" && pwd -P)
top=${top#/}
top=${top%%/*}
case $top in
'' | usr | etc | proc | tmp | lib | lib64 | bin | sbin)
	skip "the build tree's top directory /$top cannot be bound into the chroot" ;;
esac
setpriv --reuid=$nobody --regid=$nobody --clear-groups test -x "$TARGETS/idle" ||
	skip "nobody cannot reach $TARGETS/idle (the build tree's directories are closed to it)"
mkdir -p "$root"/usr "$root"/etc "$root/$top" "$root"/proc "$W/outside"
for l in lib lib64 bin sbin; do ln -s "usr/$l" "$root/$l"; done
ln -s "$W/outside" "$root/tmp"
chmod 755 "$root" "$W/outside"
# Its own network namespace: no abstract socket either (the way left
# when no directory will do), so the attach is refused.
start_cmd chroot unshare -m -n --propagation private sh -c '
	for d in usr etc "$3" proc; do mount --bind "/$d" "$1/$d" || exit 1; done
	exec chroot "$1" setpriv --reuid=65534 --regid=65534 --clear-groups "$2"' sh "$root" "$TARGETS/idle" "$top"
cpid=$TPID
wait_target_ready
wait_syscall "$cpid" "$cpid" "$NR_READ"
[ -L "/proc/$cpid/root/tmp" ] || fail "precondition: the chroot's tmp is not a link"
run_ha -q -o "$W/chroot.db" "$cpid"
check_refusal "socket directory in /proc/$cpid/root/tmp: it is a symbolic link"
check_untouched "$cpid"
[ -z "$(ls -A "$W/outside")" ] || fail "heapattach made something through the chroot's tmp link: $(ls -A "$W/outside")"
echo ok
