/* proc_test -- the /proc parsers (src/common/proc.c, and procmaps.c's
 * " (deleted)" suffix) on hostile input: a target chooses its comm (16
 * bytes, ')' ' ' and newlines included), and a status line can be cut off
 * anywhere; and a process's memory, known only while it has a memory map.
 * Each case states what must come out; the program prints every mismatch
 * and exits 1 if there is one. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc.h"
#include "procmaps.h"
#include "unit.h"

static void stat_case(const char *line, int want_rc, char want_state, unsigned long want_flags)
{
	char state = '?';
	unsigned long flags = 12345;
	int rc = ha_parse_stat(line, &state, &flags);
	EXPECT(rc == want_rc, "stat '%s': rc %d, expected %d", line, rc, want_rc);
	if (rc == 0 && want_rc == 0)
		EXPECT(state == want_state && flags == want_flags,
		       "stat '%s': state %c flags %lu, expected %c %lu", line, state, flags, want_state,
		       want_flags);
	if (rc != 0)
		EXPECT(state == '?' && flags == 12345, "stat '%s': outputs written on failure", line);
}

static void field_case(const char *status, const char *name, int want_rc, const char *want)
{
	char out[16] = "untouched";
	int rc = ha_status_field(status, name, out, sizeof out);
	EXPECT(rc == want_rc, "field %s: rc %d, expected %d", name, rc, want_rc);
	if (rc == 0)
		EXPECT(strcmp(out, want) == 0, "field %s: '%s', expected '%s'", name, out, want);
}

int main(void)
{
	/* stat: comm is everything between the first '(' and the LAST ')'. */
	stat_case("42 (sleep) S 1 42 42 0 -1 4194560 100", 0, 'S', 4194560);
	stat_case("42 (a) R 1 2 3 4 5 6) Z 1 2 3 4 5 7", 0, 'Z', 7);      /* comm "a) R 1 2 3 4 5 6" */
	stat_case("42 (x\ny) D 1 2 3 4 5 9\n", 0, 'D', 9);                 /* newline in comm */
	stat_case("42 ()) T 0 0 0 0 0 0", 0, 'T', 0);
	stat_case("42 (no close paren S 1 2 3 4 5 6", -EINVAL, 0, 0);
	stat_case("42 (cut) S 1 2 3", -EINVAL, 0, 0);                       /* truncated */
	stat_case("", -EINVAL, 0, 0);
	stat_case(")", -EINVAL, 0, 0);
	stat_case("42 (big) S 1 2 3 4 5 99999999999999999999999", 0, 'S', (unsigned long)-1);

	/* status: whole names only, at the start of a line; values cut to fit. */
	const char *st = "Name:\tUid) X\nUidx:\t7\nUid:\t1000\t1000\t1000\t1000\nTracerPid:\t0\n"
	                 "Seccomp:\t2";
	field_case(st, "Uid", 0, "1000\t1000\t1000\t"); /* cut to 15 chars + NUL */
	field_case(st, "Uidx", 0, "7");
	field_case(st, "Name", 0, "Uid) X");
	field_case(st, "Seccomp", 0, "2");           /* no final newline */
	field_case(st, "Tracer", -ENOENT, NULL);     /* a prefix is not a field */
	field_case(st, "Gid", -ENOENT, NULL);
	field_case("", "Uid", -ENOENT, NULL);
	field_case("Uid:", "Uid", 0, "");
	field_case("x\nUid:\t  \t5\n", "Uid", 0, "5");

	/* maps: a " (deleted)" suffix is cut from the path and remembered. */
	EXPECT(ha_maps_path_len("/lib/x.so (deleted)") == 9, "path_len of a deleted path");
	EXPECT(ha_maps_path_len("/lib/x.so") == 9, "path_len of a path");
	EXPECT(ha_maps_path_len(" (deleted)") == 0 && ha_maps_path_len("") == 0,
	       "path_len of the suffix alone");
	char maps[] = "7f00-7f10 r-xp 00000000 08:01 42 /tmp/a b (deleted)\n"
	              "7f10-7f20 r--p 00001000 08:01 42 /tmp/a b\n";
	struct ha_maps mm = { 0 };
	EXPECT(ha_maps_parse(maps, sizeof maps - 1, &mm) == 0 && mm.n == 2 &&
	           strcmp(mm.v[0].path, "/tmp/a b") == 0 && mm.v[0].deleted == 1 &&
	           strcmp(mm.v[1].path, "/tmp/a b") == 0 && mm.v[1].deleted == 0,
	       "maps with a deleted file: %zu entries", mm.n);
	/* ...and a module's mapping is found by its name with the suffix. */
	EXPECT(mm.n == 2 &&
	           ha_maps_module_mapping(&mm, "/tmp/a b (deleted)", 0x7f00, 0x7f20, PROT_EXEC) ==
	               &mm.v[0] &&
	           ha_maps_module_mapping(&mm, "/tmp/a b", 0x7f08, 0x7f20, 0) == &mm.v[1] &&
	           !ha_maps_module_mapping(&mm, "/tmp/a b", 0x7f08, 0x7f20, PROT_EXEC) &&
	           !ha_maps_module_mapping(&mm, "/tmp/a", 0x7f00, 0x7f20, 0),
	       "module mappings by name, range and protection");
	ha_maps_free(&mm);
	/* The agent's memfd is known by the name given to memfd_create;
	 * another memfd is not a module of the name it chose. */
	EXPECT(strcmp(ha_maps_module_name("/memfd:heapattach_agent.so"), "heapattach_agent.so") == 0 &&
	           strcmp(ha_maps_module_name("/memfd:libc.so.6 (deleted)"),
	                  "memfd:libc.so.6 (deleted)") == 0 &&
	           strcmp(ha_maps_module_name("/memfd:a/b.so"), "b.so") == 0 &&
	           strcmp(ha_maps_module_name("/tmp/memfd:x.so"), "memfd:x.so") == 0 &&
	           strcmp(ha_maps_module_name("/lib/libc.so.6"), "libc.so.6") == 0,
	       "module names of memfds and files");

	/* The C library: glibc's by its soname (or libc-2.NN.so), else musl's
	 * loader, which is its libc; none in a static program. */
	char mglibc[] = "1000-2000 r--p 00000000 08:01 7 /lib/ld-musl-x86_64.so.1\n"
	                "2000-3000 r-xp 00001000 08:01 7 /lib/ld-musl-x86_64.so.1\n"
	                "4000-5000 r--p 00000000 08:01 9 /lib/x86_64-linux-gnu/libc.so.6\n"
	                "5000-6000 r-xp 00001000 08:01 9 /lib/x86_64-linux-gnu/libc.so.6\n";
	char mmusl[] = "1000-2000 r--p 00000000 08:01 7 /lib/ld-musl-x86_64.so.1\n"
	               "2000-3000 r-xp 00001000 08:01 7 /lib/ld-musl-x86_64.so.1\n";
	char malpine[] = "1000-2000 r-xp 00000000 08:01 7 /lib/libc.musl-x86_64.so.1\n";
	char mdebian[] = "1000-2000 r-xp 00000000 08:01 7 /usr/lib/x86_64-linux-musl/libc.so\n";
	char mnotmusl[] = "1000-2000 r-xp 00000000 08:01 7 /opt/x/libc.so\n";
	char mstatic[] = "1000-2000 r-xp 00000000 08:01 7 /bin/prog\n";
	int musl = -1;
	EXPECT(ha_maps_parse(mglibc, sizeof mglibc - 1, &mm) == 0 &&
	           ha_maps_find_libc(&mm, &musl) == &mm.v[2] && musl == 0,
	       "glibc is the libc when both are mapped (musl %d)", musl);
	ha_maps_free(&mm);
	EXPECT(ha_maps_parse(mmusl, sizeof mmusl - 1, &mm) == 0 &&
	           ha_maps_find_libc(&mm, &musl) == &mm.v[0] && musl == 1,
	       "musl's loader is the libc of a musl program (musl %d)", musl);
	ha_maps_free(&mm);
	EXPECT(ha_maps_parse(malpine, sizeof malpine - 1, &mm) == 0 &&
	           ha_maps_find_libc(&mm, &musl) == &mm.v[0] && musl == 1,
	       "Alpine's libc.musl name is musl (musl %d)", musl);
	ha_maps_free(&mm);
	EXPECT(ha_maps_parse(mdebian, sizeof mdebian - 1, &mm) == 0 &&
	           ha_maps_find_libc(&mm, &musl) == &mm.v[0] && musl == 1,
	       "Debian's musl (the loader's link resolved: .../x86_64-linux-musl/libc.so) is musl (musl %d)",
	       musl);
	ha_maps_free(&mm);
	EXPECT(ha_maps_parse(mnotmusl, sizeof mnotmusl - 1, &mm) == 0 &&
	           !ha_maps_find_libc(&mm, &musl) && musl == 0,
	       "a libc.so outside a -musl directory is no libc (musl %d)", musl);
	ha_maps_free(&mm);
	EXPECT(ha_maps_parse(mstatic, sizeof mstatic - 1, &mm) == 0 &&
	           !ha_maps_find_libc(&mm, &musl) && musl == 0,
	       "no libc in a static program (musl %d)", musl);
	ha_maps_free(&mm);

	/* The real files of this process parse. */
	char state;
	unsigned long flags;
	EXPECT(ha_proc_stat(getpid(), 0, &state, &flags) == 0 && state == 'R',
	       "own /proc/self/stat: state %c", state);
	char buf[64];
	EXPECT(ha_proc_status_field(getpid(), getpid(), "Tgid", buf, sizeof buf) == 0 &&
	       strtol(buf, NULL, 10) == getpid(), "own task status Tgid '%s'", buf);
	EXPECT(ha_proc_alive(getpid()), "this process is not alive?");
	EXPECT(ha_proc_stat(0x7ffffff0, 0, &state, &flags) < 0, "a pid that cannot exist parses");
	EXPECT(!ha_proc_alive(0x7ffffff0), "a pid that cannot exist is alive");

	/* Memory: this process's is read whole; a zombie's (no memory map,
	 * statm all zeros) and a missing process's are unknown, not 0. */
	struct ha_proc_mem mem;
	EXPECT(ha_proc_mem(getpid(), 1, &mem) == 0 && mem.rss > 0 && mem.rss_anon > 0,
	       "own memory: rss %llu, RssAnon %llu", (unsigned long long)mem.rss,
	       (unsigned long long)mem.rss_anon);
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	siginfo_t si;
	/* WNOWAIT: returns once the child is a zombie, and leaves it one. */
	EXPECT(child > 0 && waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT) == 0,
	       "fork or waitid: %s", strerror(errno));
	for (int with_status = 0; with_status <= 1 && child > 0; with_status++) {
		memset(&mem, 0x55, sizeof mem);
		EXPECT(ha_proc_mem(child, with_status, &mem) == -1 && mem.rss == 0 && mem.rss_anon == 0 &&
		           mem.swap == 0,
		       "a zombie's memory (with_status %d) reads as known: rss %llu", with_status,
		       (unsigned long long)mem.rss);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
	EXPECT(ha_proc_mem(0x7ffffff0, 1, &mem) == -1, "a pid that cannot exist has memory");

	return UNIT_RESULT("stat and status parsers on hostile lines; deleted paths in maps");
}
