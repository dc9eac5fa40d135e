#!/bin/bash
# t_memory_allocators: the memory breakdown (issue 41) on a program whose
# malloc is not glibc's: tests/targets/mem_truth with Debian's jemalloc,
# tcmalloc (minimal) and mimalloc LD_PRELOAD'ed, each installed library in
# turn.  Their own statistics are not read (that needs a call in the
# target): the allocator is named as not read, no glibc arena is made up
# out of the brk heap tcmalloc takes, the terms still add up to RssAnon and
# their memory is in other_anon; heapattach --trim refuses in one line,
# --trim=predict says why and exits 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all mem_truth
CHECK=$HA_BUILDDIR/tests/mem_view_check
[ -x "$CHECK" ] || fail "mem_view_check not built: $CHECK"
MiB=1048576
n=0
for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4 libmimalloc.so.2; do
	path=/usr/lib/x86_64-linux-gnu/$lib
	[ -e "$path" ] || { log "$lib not installed: left out"; continue; }
	name=${lib#lib}; name=${name%%[._]*}
	export LD_PRELOAD=$path
	start_target "$name" mem_truth
	unset LD_PRELOAD
	pid=$TPID
	grep -q "$lib" "/proc/$pid/maps" || fail "$lib is not mapped in mem_truth"
	target_cmd "holes 16"
	target_cmd "anon 16"
	"$CHECK" "$pid" >"$W/$name.view" || fail "mem_view_check on $name failed"
	sed 's/^/    /' "$W/$name.view"
	grep -qx "allocator $name (not read: in other_anon)" "$W/$name.view" ||
		fail "$name: allocator line: $(grep allocator "$W/$name.view")"
	grep -q '^arena ' "$W/$name.view" && fail "$name: a glibc arena was made up"
	awk '$1 == "rss_anon" { r = $2 } $1 == "term" { s += $3; if ($2 == "other_anon") o = $3 }
		END { exit !(s == r && o >= 24 * 1048576) }' "$W/$name.view" ||
		fail "$name: the terms do not add up, or other_anon holds less than 24 MiB"
	run_ha --trim "$pid"
	[ "$HA_RC" = 1 ] || fail "$name: --trim exited $HA_RC (1 wanted: refused)"
	grep -q "no glibc arenas found in $pid (allocator $name" "$HA_ERR" || fail "$name: --trim's refusal"
	check_untouched "$pid"
	run_ha --trim=predict "$pid"
	[ "$HA_RC" = 0 ] || fail "$name: --trim=predict exited $HA_RC"
	send "$TFD" exit
	n=$((n + 1))
	echo "ok: $name named as not read, the terms add up, --trim refused"
done
[ "$n" -gt 0 ] || skip "none of libjemalloc2, libgoogle-perftools4 (tcmalloc) and libmimalloc2.0 is installed"
echo ok
