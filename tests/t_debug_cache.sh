#!/bin/bash
# t_debug_cache: a compressed detached debug file is inflated once, into the
# cache (HEAPATTACH_CACHE), when the first session ends; later sessions read
# the cached copy and name the same frames (function, file:line); a damaged
# copy is not used (and is replaced); an empty HEAPATTACH_CACHE writes
# nothing; a target that exits before its stacks are symbolized (the
# database's creation held back until it is gone) still has its frames
# named, and its session still stores the copy (the files are opened while
# the target lives: they cannot be opened through /proc/PID once PID is
# gone).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all
for t in objcopy readelf; do
	command -v "$t" >/dev/null || skip "$t is not installed (binutils)"
done

cat >"$W/dc.c" <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void *keep[2000];
__attribute__((noinline)) void *dc_make_record(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 2, n);
	return p;
}
int main(void)
{
	char line[64];
	int k = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "go", 2) == 0) {
			for (int i = 0; i < 500; i++, k++)
				keep[k % 2000] = dc_make_record(4000);
			printf("done\n");
		} else if (strncmp(line, "quit", 4) == 0)
			break;
	}
	return keep[0] == NULL;
}
SRC
compile_c "$W/dc" "$W/dc.c" -Wl,--build-id
# The debug info apart, compressed, found through .gnu_debuglink (as
# Debian's -dbg and -dbgsym packages are found through their build-ids).
objcopy --only-keep-debug --compress-debug-sections=zlib "$W/dc" "$W/dc.debug" || fail "objcopy --only-keep-debug failed"
objcopy --strip-debug --add-gnu-debuglink="$W/dc.debug" "$W/dc" || fail "objcopy --add-gnu-debuglink failed"
readelf -S -W "$W/dc.debug" 2>/dev/null | grep -A1 '\.debug_info' | grep -q ' C ' ||
	fail "objcopy did not compress .debug_info"
id=$(readelf -n "$W/dc" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
[ -n "$id" ] || fail "dc has no build-id note"
cached=$W/cache/debug/$id.debug

# The cache reads and writes files: under the sanitizers when they are built.
if [ -x "$HA_BUILDDIR/src/heapattach_san" ]; then
	HA=$HA_BUILDDIR/src/heapattach_san
	export ASAN_OPTIONS=abort_on_error=0:exitcode=99:detect_leaks=1
	export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99
	printf 'leak:libdw\nleak:libelf\nleak:libunwind\nleak:libsqlite3\n' >"$W/lsan.supp"
	export LSAN_OPTIONS=suppressions=$W/lsan.supp
fi
log "attacher: $HA"

# session N: attach, allocate 500 records, detach; the top row's leaf frame
# of the live heap into $W/leafN.
# session_begin N: start dc and attach to it (SPID), allocate the records.
session_begin() {
	local n=$1
	start_cmd "dc$n" "$W/dc"
	wait_target_ready
	SPID=$TPID
	wait_syscall "$SPID" "$SPID" "$NR_READ"
	start_ha -v -q -i 1 --block -s 3600 -o "$W/s$n.db" "$SPID"
	wait_ready "$SPID" dc
	send "$TFD" go
	wait_line "$TOUT" '^done$'
}

session() {
	local n=$1
	session_begin "$n"
	local pid=$SPID
	detach_by_signal INT "$pid"
	grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error' "$HA_ERR" && fail "session $n: sanitizer report from heapattach"
	send "$TFD" quit
	wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "session $n: dc did not exit cleanly ($RC)"
	"$HA_BUILDDIR/src/heapdiff" --bytes "$W/s$n.db" last >"$W/live$n" || fail "session $n: heapdiff failed"
	# the leaf frame of the call paths (the top functions above them name
	# no line)
	sed -n '/STACK (leaf first)/,$p' "$W/live$n" | grep -m 1 'dc_make_record' | sed 's/^ *//' >"$W/leaf$n"
	log "session $n: $(cat "$W/leaf$n"); $(grep 'debug info cache' "$HA_ERR")"
	grep -q 'dc\.c:[0-9]' "$W/leaf$n" || fail "session $n: dc_make_record has no dc.c:LINE: $(cat "$W/leaf$n")"
}

# 1. The first session inflates the debug file into the cache at its end.
export HEAPATTACH_CACHE=$W/cache
session 1
grep -Eq "debug info cache $W/cache: 0 files read from it, [1-9][0-9]* stored" "$HA_ERR" ||
	fail "session 1 did not store its compressed debug file: $(grep 'debug info cache' "$HA_ERR")"
[ -f "$cached" ] || fail "no $cached after session 1"
readelf -S -W "$cached" 2>/dev/null | grep -E '\] \.debug_' | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[WAXMSILOGTCxoEDlp]+$/ && $i ~ /C/) bad = 1 } END { exit bad }' ||
	fail "the cached copy still has compressed sections"
[ "$(stat -c %s "$cached")" -gt "$(stat -c %s "$W/dc.debug")" ] || fail "the cached copy is not larger than the compressed file"

# 2. The next session reads the copy, and names the same frame.
session 2
grep -Eq "debug info cache $W/cache: [1-9][0-9]* files read from it, 0 stored" "$HA_ERR" ||
	fail "session 2 did not read the cached copy: $(grep 'debug info cache' "$HA_ERR")"
cmp -s "$W/leaf1" "$W/leaf2" || fail "with the cached copy the frame differs: '$(cat "$W/leaf1")' vs '$(cat "$W/leaf2")'"

# 3. A damaged copy is not used: the original is read, and the copy replaced.
head -c 4096 "$cached" >"$cached.tmp" && mv "$cached.tmp" "$cached"
session 3
# (libc's copy, if its debug file is installed, is still read from the cache)
grep -Eq "debug info cache $W/cache: [0-9]+ files read from it, [1-9][0-9]* stored" "$HA_ERR" ||
	fail "session 3 used (or did not replace) a truncated copy: $(grep 'debug info cache' "$HA_ERR")"
cmp -s "$W/leaf1" "$W/leaf3" || fail "with a damaged copy the frame differs: '$(cat "$W/leaf3")'"
[ "$(stat -c %s "$cached")" -gt 4096 ] || fail "the truncated copy was not replaced"

# 4. HEAPATTACH_CACHE set and empty: no cache at all.
export HEAPATTACH_CACHE= XDG_CACHE_HOME=$W/xdg
session 4
[ ! -e "$W/xdg/heapattach" ] || fail "an empty HEAPATTACH_CACHE still wrote $W/xdg/heapattach"
! grep -q 'debug info cache' "$HA_ERR" || fail "an empty HEAPATTACH_CACHE still used a cache"
cmp -s "$W/leaf1" "$W/leaf4" || fail "without the cache the frame differs: '$(cat "$W/leaf4")'"
# 5. The target exits while attached, before its stacks reach the writer:
# the database's creation is held back (HEAPATTACH_TEST_DB_GATE, a slow
# disk made exact) until the target is gone.  Its frames are still named
# (the files were opened while it lived), and the copy is still stored,
# into a cache that has none.
export HEAPATTACH_CACHE=$W/cache5
gate=$W/gate
mkfifo "$gate" || fail "mkfifo $gate"
export HEAPATTACH_TEST_DB_GATE=$gate
session_begin 5
unset HEAPATTACH_TEST_DB_GATE
pid5=$SPID
# (The files are opened right after the attach; -v says when.)
wait_line "$HA_ERR" 'the files of [1-9][0-9]* modules of code' 20
! grep -q 'database .* opened in' "$HA_ERR" || fail "session 5: the database was opened before the gate let it"
send "$TFD" quit
wait_exit "$pid5" 10 && [ "$RC" = 0 ] || fail "session 5: dc did not exit cleanly ($RC)"
is_alive "$HAPID" || fail "session 5: heapattach exited before the gate let the database through"
timeout 10 sh -c 'echo go >"$1"' sh "$gate" || fail "session 5: heapattach did not read the gate"
wait_for 20 '! is_alive "$HAPID"' || fail "session 5: heapattach still running 20 s after its target exited"
wait "$HAPID"
rc=$?
grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error' "$HA_ERR" && fail "session 5: sanitizer report from heapattach"
grep -q 'target [0-9]* exited' "$HA_ERR" || fail "session 5: heapattach did not see its target exit: $(tail -n 3 "$HA_ERR")"
"$HA_BUILDDIR/src/heapdiff" --bytes "$W/s5.db" last >"$W/live5" || fail "session 5: heapdiff failed"
sed -n '/STACK (leaf first)/,$p' "$W/live5" | grep -m 1 'dc_make_record' | sed 's/^ *//' >"$W/leaf5"
log "session 5 (target exited, heapattach exit $rc): $(cat "$W/leaf5"); $(grep 'debug info cache' "$HA_ERR")"
cmp -s "$W/leaf1" "$W/leaf5" ||
	fail "session 5: the frames of a target that exited before they were symbolized differ: '$(cat "$W/leaf5")' vs '$(cat "$W/leaf1")'"
grep -Eq "debug info cache $W/cache5: 0 files read from it, [1-9][0-9]* stored" "$HA_ERR" ||
	fail "session 5 (the target exited) did not store its debug file: $(grep 'debug info cache' "$HA_ERR")"
[ -f "$W/cache5/debug/$id.debug" ] || fail "no copy in $W/cache5 after the target exited"
cmp -s "$cached" "$W/cache5/debug/$id.debug" || fail "the copy stored after the target exited differs from session 3's"
echo ok
