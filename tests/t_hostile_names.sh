#!/bin/bash
# t_hostile_names: everything a target names holds markup ('<b>', '&',
# quotes), newlines, terminal escapes (ESC [ 2J, OSC 52 with its BEL), a
# C1 control (U+009B, CSI) and invalid UTF-8: the target's executable (so
# its comm), the shared library it dlopens (its file name), and the
# library's functions and source file (C identifiers cannot, so the
# library is built with placeholders of the same length, which are then
# replaced in its symbol table and DWARF).  The target allocates through
# those functions.  heapattach (-v, so that every line it can print is
# printed, and under script(1), where its status line names the top
# function) must print no control byte of the target's; the names must reach
# the database as they are; and every heapdiff report of it must be valid:
# JSON parses, SVG is well-formed XML, HTML holds no raw markup of the
# target's, text and folded hold no control byte.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/hostile_lib.sh"
require_all

# The hostile bytes, and placeholders of the same lengths.
FN1=$'\e[2J\e]52;c;aGVsbG8=\a<b>hostile</b>&"\'\n\xff\xfe\xc2\x9bone'
FN2=$'<b>hostile</b>\e[31m&amp;\'"\r\n\x7f\xc0\xafcaller'
SRC=$'<b>hostile\e[H&\'"\xff\n.c'
# placeholder TAG NAME: "ph_TAG_000..." as long as NAME in bytes.
placeholder() {
	local n
	n=$(printf '%s' "$2" | wc -c)
	printf 'ph_%s_%0*d' "$1" $((n - 4 - ${#1})) 0
}
PH1=$(placeholder one "$FN1")
PH2=$(placeholder two "$FN2")
PHS=$(placeholder src "$SRC")

mkdir -p "$W/src"
cat >"$W/src/$PHS.c" <<SRC
#include <stdlib.h>
#include <string.h>
__attribute__((noinline, visibility("hidden"))) void *$PH1(size_t n)
{
	char *p = malloc(n);
	if (p)
		memset(p, 9, n);
	__asm__ volatile("" ::: "memory");
	return p;
}
__attribute__((noinline, visibility("hidden"))) void *$PH2(size_t n)
{
	void *p = $PH1(n);
	__asm__ volatile("" ::: "memory");
	return p;
}
void *hostile_entry(size_t n)
{
	return $PH2(n);
}
SRC
(cd "$W/src" && gcc -shared -fPIC -O1 -g -fno-omit-frame-pointer -o "$W/src/lib.so" "$PHS.c") ||
	fail "cannot build the library"
# Replace every placeholder, byte for byte (same lengths: no offset moves).
python3 - "$W/src/lib.so" "$PH1" "$FN1" "$PH2" "$FN2" "$PHS" "$SRC" <<'PY' || fail "cannot rename the library's names"
import os, sys
path, pairs = sys.argv[1], sys.argv[2:]
data = open(path, 'rb').read()
for ph, name in zip(pairs[0::2], pairs[1::2]):
    ph, name = os.fsencode(ph), os.fsencode(name)
    assert len(ph) == len(name), (ph, name)
    assert data.count(ph) > 0, ph
    data = data.replace(ph, name)
open(path, 'wb').write(data)
PY
LIB="$W/lib<b>hostile&\"'"$'\e[2J\e]52;c;aGk=\a\n\xff\xfe.so'
cp "$W/src/lib.so" "$LIB" || fail "cannot name the library"

cat >"$W/t.c" <<'SRC'
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static void *keep[1000];
int main(int argc, char **argv)
{
	char line[64];
	(void)argc;
	setvbuf(stdout, NULL, _IOLBF, 0);
	void *h = dlopen(argv[1], RTLD_NOW);
	void *(*entry)(size_t) = h ? (void *(*)(size_t))dlsym(h, "hostile_entry") : NULL;
	if (!entry) {
		printf("error %s\n", dlerror());
		return 1;
	}
	printf("ready pid=%d\n", (int)getpid());
	int n = 0;
	while (fgets(line, sizeof line, stdin))
		if (strncmp(line, "alloc", 5) == 0) {
			for (int i = 0; i < 500 && n < 1000; i++)
				keep[n++] = entry(1000);
			printf("done alloc %d\n", n);
		}
	printf("bye\n");
	return 0;
}
SRC
EXE=$W/$'t\e[2J<b>&\n\xff'
compile_c "$EXE" "$W/t.c" -ldl

db=$W/names.db
# (Through the environment: the test's own log names what it starts.)
export HOSTILE_EXE=$EXE HOSTILE_LIB=$LIB
start_cmd names sh -c 'exec "$HOSTILE_EXE" "$HOSTILE_LIB"'
pid=$TPID
wait_target_ready
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -v -q -i 1 -s 3600 -o "$db" "$pid"
wait_line "$HA_ERR" "^heapattach: attached to $pid \\(" 15
grep -qF "heapattach: attached to $pid (t?[2J<b>&??): agent ready in" "$HA_ERR" ||
	fail "the attached line does not show the comm cleaned: $(grep 'attached to' "$HA_ERR")"
target_cmd alloc
snapshot_now "$db"
detach_by_signal INT "$pid"
no_controls "$HA_ERR" "heapattach -v's stderr"
no_controls "$HA_OUT" "heapattach's stdout"

# The names reached the database as the target spelled them.
q() { sqlite3 "$db" "$1"; }
[ "$(q "SELECT count(*) FROM frames WHERE instr(function, CAST(X'$(printf '%s' "$FN1" | od -An -tx1 | tr -d ' \n')' AS TEXT)) > 0")" -ge 1 ] ||
	fail "no frame holds the first hostile function name as it is: $(q 'SELECT function FROM frames' | cat -v | head -n 5)"
[ "$(q "SELECT count(*) FROM frames WHERE instr(function, '<b>hostile</b>') > 0")" -ge 2 ] ||
	fail "the two hostile functions are not both in the profile"
[ "$(q "SELECT count(*) FROM frames WHERE instr(file, '<b>hostile') > 0")" -ge 1 ] ||
	fail "no frame has the hostile source file"
[ "$(q "SELECT count(*) FROM modules WHERE instr(path, '<b>hostile') > 0")" -ge 1 ] ||
	fail "the hostile module path is not in the profile"
log "the hostile names are in the database as they are"
check_reports "$db" names
# The flame graph's names are the ones of the profile, cleaned, not lost.
grep -q '&lt;b&gt;hostile&lt;/b&gt;' "$W/names.svg" || fail "the SVG does not show the names (escaped)"
grep -q '<b>hostile</b>' "$W/names.text" || fail "the text report does not show the names"

# On a terminal heapattach rewrites a status line naming the top growing
# function: none of that name's bytes may drive the terminal either (its
# own carriage returns and ESC [ K aside).
if command -v script >/dev/null; then
	export HA_BIN=$HA HA_PID=$pid HA_TTY_DB=$W/tty.db
	script -qefc 'stty cols 400; exec "$HA_BIN" -i 1 -d 6 -o "$HA_TTY_DB" "$HA_PID"' "$W/tty.raw" </dev/null >/dev/null 2>&1 &
	spid=$!
	_PIDS+=("$spid")
	wait_for 15 'grep -aq "attached to" "$W/tty.raw"' || fail "heapattach under script(1) did not attach"
	target_cmd alloc
	wait_for 15 'grep -aq "top: " "$W/tty.raw"' || fail "no status line naming the top function"
	wait_for 20 '! is_alive "$spid"' || fail "heapattach under script(1) did not finish"
	python3 - "$W/tty.raw" "$W/tty.out" <<'PY'
import sys
data = open(sys.argv[1], 'rb').read()
open(sys.argv[2], 'wb').write(data.replace(b'\r', b'').replace(b'\x1b[K', b''))
PY
	no_controls "$W/tty.out" "heapattach's status line on a terminal"
	log "status line: $(grep -ao 'top: .*' "$W/tty.out" | tail -n 1 | cut -c1-80)"
fi
send "$TFD" quit
close_fd "$TFD"
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "the target exited $RC"
echo ok
