#!/bin/bash
# t_profile_shlib: allocations made inside a shared library are attributed
# to the library's function, with its file:line and module.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all

cat >"$W/shleak.c" <<'SRC'
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) void *shlib_make_buffer(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 1, n);
	return p;
}
SRC
cat >"$W/shmain.c" <<'SRC'
#include <stdio.h>
#include <string.h>
#include <unistd.h>
void *shlib_make_buffer(size_t n);
static void *keep[10000];
int main(void)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "go", 2) == 0) {
			for (int i = 0; i < 10000; i++)
				keep[i] = shlib_make_buffer(1000);
			printf("done\n");
		} else if (strncmp(line, "quit", 4) == 0)
			break;
	}
	return keep[0] == NULL;
}
SRC
compile_c "$W/libshleak.so" "$W/shleak.c" -shared -fPIC
compile_c "$W/shmain" "$W/shmain.c" -L"$W" -lshleak -Wl,-rpath,"$W"

db=$W/sh.db
start_cmd sh "$W/shmain"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
wait_ready "$pid" shmain
send "$TFD" go
wait_line "$TOUT" '^done$'
finish_live "$pid" "$pid" shmain "$db" "$W/live" 20
read -r bytes objects leaf < <(heapdiff_rows "$W/live" | head -n 1)
[ "$leaf" = shlib_make_buffer ] || fail "top of the live heap is '$leaf', expected shlib_make_buffer"
[ "$bytes" = 10000000 ] && [ "$objects" = 10000 ] ||
	fail "shlib_make_buffer holds $bytes bytes in $objects objects, expected 10000000 in 10000"
grep 'shlib_make_buffer' "$W/live" | grep -q 'shleak\.c:[0-9]*.*\[libshleak\.so\]' ||
	fail "the library frame lacks shleak.c:LINE or its module [libshleak.so]"
echo ok
