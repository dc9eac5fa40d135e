# memory_alloc_lib.sh: the memory breakdown (issue 41) on mem_truth with an
# allocator other than glibc's LD_PRELOAD'ed (t_memory_jemalloc.sh,
# t_memory_tcmalloc.sh, t_memory_mimalloc.sh).  Their own statistics are
# not read (they need a call in the target): the allocator is named with
# why it is not read, no glibc arena is made up out of the brk heap
# tcmalloc takes, the terms still add up to RssAnon and their memory is in
# other_anon; heapattach --trim refuses in one line, --trim=predict says
# why and exits 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"

# alloc_case LIB NAME PACKAGE CALL: LIB under /usr/lib/x86_64-linux-gnu
# (skipped with the package to install if missing), NAME as the breakdown
# names it, CALL the call it says its stats need.
alloc_case() {
	local lib=$1 name=$2 pkg=$3 call=$4 path
	require_all mem_truth
	CHECK=$HA_BUILDDIR/tests/mem_view_check
	[ -x "$CHECK" ] || fail "mem_view_check not built: $CHECK"
	path=/usr/lib/x86_64-linux-gnu/$lib
	[ -e "$path" ] || skip "$lib is not installed (apt-get install $pkg)"
	export LD_PRELOAD=$path
	start_target "$name" mem_truth
	unset LD_PRELOAD
	pid=$TPID
	grep -q "$lib" "/proc/$pid/maps" || fail "$lib is not mapped in mem_truth"
	target_cmd "holes 16"
	target_cmd "anon 16"
	"$CHECK" "$pid" >"$W/$name.view" || fail "mem_view_check on $name failed"
	sed 's/^/    /' "$W/$name.view"
	grep -qxF "allocator $name (not read: its stats need $call called in the target; its memory in other_anon)" "$W/$name.view" ||
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
	echo "ok: $name named as not read (its stats need $call), the terms add up, --trim refused"
}
