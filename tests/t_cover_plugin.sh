#!/bin/bash
# t_cover_plugin: a C program (no libstdc++ loaded) dlopen's a C++ plugin
# AFTER heapattach attached and calls it at once; the plugin leaks through
# new[].  The dlopen hook patches the plugin (and libstdc++, loaded with it)
# before dlopen returns, so every leaked block is seen: the plugin's frames
# (demangled, with file:line, module libcoverplugin.so) hold exactly the
# leaked bytes (--interval 1 --block).  A second plugin loaded later is
# patched the same way.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all plugin_host
command -v g++ >/dev/null || skip "g++ is not installed (Debian package g++)"

for i in 1 2; do
	cat >"$W/plugin$i.cc" <<SRC
#include <cstddef>
namespace plugin$i {
static char *kept[100000];
static std::size_t nkept;
class Leaker {
public:
	__attribute__((noinline)) void leak(unsigned long n, unsigned long size)
	{
		for (unsigned long i = 0; i < n && nkept < 100000; i++) {
			char *p = new char[size];
			p[0] = 1;
			kept[nkept++] = p;
		}
	}
};
}
extern "C" void plugin_leak(unsigned long n, unsigned long size)
{
	static plugin$i::Leaker l;
	l.leak(n, size);
}
SRC
	g++ -O2 -g -fno-omit-frame-pointer -shared -fPIC -o "$W/libcoverplugin$i.so" "$W/plugin$i.cc" ||
		fail "cannot compile the plugin"
done

db=$W/plugin.db
start_target host plugin_host
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
! grep -q 'libstdc++' "/proc/$pid/maps" || fail "plugin_host already has libstdc++ loaded"
start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
wait_ready "$pid" plugin_host
send "$TFD" "load $W/libcoverplugin1.so 1000 3000"
wait_line "$TOUT" '^done load .*libcoverplugin1'
snapshot_now "$db"
send "$TFD" "load $W/libcoverplugin2.so 500 5000"
wait_line "$TOUT" '^done load .*libcoverplugin2'
finish_live "$pid" "$pid" plugin_host "$db" "$W/live" 30
got=$(live_under "$db" 'plugin1::Leaker::leak%' heap)
[ "$got" = "3000000 1000" ] || fail "plugin1::Leaker::leak holds '$got', expected '3000000 1000'"
got=$(live_under "$db" 'plugin2::Leaker::leak%' heap)
[ "$got" = "2500000 500" ] || fail "plugin2::Leaker::leak holds '$got', expected '2500000 500'"
n=$(sqlite3 "$db" "SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id
                    WHERE f.function LIKE 'plugin1::Leaker::leak%' AND f.file LIKE '%plugin1.cc'
                      AND f.line > 0 AND m.path LIKE '%libcoverplugin1.so'")
[ "$n" -ge 1 ] || fail "no symbolized plugin1::Leaker::leak frame with plugin1.cc:LINE in libcoverplugin1.so"
grep -q 'plugin1::Leaker::leak' "$W/live" || fail "heapdiff does not show the plugin's frame"
log "plugin frames: exact bytes in both plugins, loaded after attach"
echo ok
