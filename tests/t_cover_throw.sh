#!/bin/bash
# t_cover_throw: a C++ exception goes through the operator new hook
# (std::bad_alloc from new[] of 2^62 bytes, caught by the program) while
# attached with -i 1 --block.  The hook's cleanup runs (its personality
# routine and _Unwind_Resume are the target's own, found through dlsym:
# libgcc_s is no NEEDED of the agent, agent/imports.c), the program catches
# the exception as it would unattached, and the thread is profiled as
# before: the N blocks it then leaks are counted exactly.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all
require_cmd g++ g++
require_cmd sqlite3 sqlite3

cat >"$W/thrower.cc" <<'CXX'
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <new>
#include <string>
#include <unistd.h>
static char *kept[100000];
static int nkept;
__attribute__((noinline)) void leak_after_throw(int n, int size)
{
	for (int i = 0; i < n && nkept < 100000; i++)
		kept[nkept++] = new char[size];
}
__attribute__((noinline)) int throw_through_new(void)
{
	try {
		volatile size_t huge = (size_t)1 << 62;
		void *p = ::operator new[](huge);   /* a call, not an elidable new-expression */
		std::printf("got %p\n", p);
		::operator delete[](p);
		return 0;
	} catch (const std::bad_alloc &) {
		return 1;
	}
}
int main()
{
	std::printf("ready pid=%d\n", (int)getpid());
	std::fflush(stdout);
	std::string cmd;
	while (std::cin >> cmd) {
		if (cmd == "throw") {
			int caught = throw_through_new();
			std::printf("done throw caught %d\n", caught);
		} else if (cmd == "leak") {
			int n, size;
			std::cin >> n >> size;
			leak_after_throw(n, size);
			std::printf("done leak %d %d\n", n, size);
		} else if (cmd == "quit") {
			std::printf("done quit\n");
			break;
		}
		std::fflush(stdout);
	}
	return 0;
}
CXX
g++ -O2 -g -fno-omit-frame-pointer -o "$W/thrower" "$W/thrower.cc" || fail "cannot compile thrower.cc"

N=500 SIZE=96
start_cmd thrower "$W/thrower"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
target_cmd throw
grep -q '^done throw caught 1$' "$TOUT" || fail "unattached: the exception was not caught"
db=$W/throw.db
start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
wait_ready "$pid" thrower
for i in 1 2 3; do
	target_cmd throw
done
[ "$(grep -c '^done throw caught 1$' "$TOUT")" = 4 ] ||
	fail "attached: the exception through the hook was not caught: $(tail -n 3 "$TOUT")"
target_cmd "leak $N $SIZE"
snapshot_now "$db"
detach_by_signal INT "$pid"
target_cmd throw
target_cmd quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "thrower exited $RC"
got=$(live_under "$db" 'leak_after_throw%' heap)
[ "$got" = "$((N * SIZE)) $N" ] ||
	fail "after exceptions through the hook: live under leak_after_throw '$got', expected '$((N * SIZE)) $N' (the hook's depth not restored?)"
echo "ok: std::bad_alloc through the operator new[] hook caught 3 times while attached; then $N blocks of $SIZE exact"
