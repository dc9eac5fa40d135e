#!/bin/bash
# t_cover_dlopen_path: dlopen keeps the caller's library search path while
# attached.  dlopen finds a bare name through the CALLING module's
# DT_RUNPATH (and $ORIGIN, namespaces): the dlopen hook must not change the
# caller glibc sees.  A host whose RUNPATH is the only way to the plugin
# loads it by bare name while attached (the hook jumps straight to the real
# dlopen there), and the plugin is patched by the agent's periodic pass soon
# after: its leaks show up.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/cover_lib.sh"
require_all
command -v g++ >/dev/null || skip "g++ is not installed (Debian package g++)"

mkdir -p "$W/lib"
cat >"$W/plugin.cc" <<'SRC'
namespace pathplug {
__attribute__((noinline)) char *leak_one(unsigned long size) { char *p = new char[size]; p[0] = 1; return p; }
}
extern "C" void plugin_leak(unsigned long n, unsigned long size)
{
	for (unsigned long i = 0; i < n; i++)
		(void)pathplug::leak_one(size);
}
SRC
g++ -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -shared -fPIC \
	-o "$W/lib/libpathplug.so" "$W/plugin.cc" || fail "cannot compile the plugin"
compile_c "$W/host" "$HA_SRCDIR/tests/targets/plugin_host.c" -ldl -Wl,--enable-new-dtags,-rpath,"$W/lib"
readelf -d "$W/host" | grep -q RUNPATH || fail "the host has no DT_RUNPATH"

db=$W/path.db
start_cmd host "$W/host"
wait_target_ready
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -i 1 --block -s 3600 -o "$db" "$pid"
wait_ready "$pid" host
send "$TFD" "load libpathplug.so 10 1000"
wait_line "$TOUT" '^(done load libpathplug.so 10 1000|dlopen failed.*)$'
grep -q '^done load libpathplug.so' "$TOUT" ||
	fail "dlopen by bare name failed while attached: the caller's RUNPATH was lost"
log "dlopen(\"libpathplug.so\") found the plugin through the host's RUNPATH while attached"
# The periodic pass (every second) patches the plugin: poll until a leak
# made after that shows up.
seen=0
for i in 1 2 3 4 5 6 7 8; do
	send "$TFD" "load libpathplug.so 100 2000"
	wait_line "$TOUT" "^done load libpathplug.so 100 2000\$"
	snapshot_now "$db"
	read -r b _ < <(live_under "$db" 'pathplug::leak_one%' heap)
	if [ "$b" -gt 0 ]; then
		seen=1
		break
	fi
	sleep 0.5
done
[ "$seen" = 1 ] || fail "the plugin's allocations never showed up (not patched by the periodic pass)"
log "plugin patched by the periodic pass after $i round(s): pathplug::leak_one holds $b bytes"
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10 && [ "$RC" = 0 ] || fail "host exited $RC"
echo ok
