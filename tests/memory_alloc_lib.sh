# memory_alloc_lib.sh: the memory breakdown (issue 41) on mem_truth with an
# allocator other than glibc's LD_PRELOAD'ed (t_memory_jemalloc.sh,
# t_memory_tcmalloc.sh, t_memory_mimalloc.sh), whose own figures the agent
# reads on its thread at each snapshot (ALLOC_STATS).  mem_truth makes, with
# the allocator: 32 MiB of 8 KiB blocks live, 16 MiB of 2 KiB blocks every
# other one freed (8 MiB free beside live blocks), a written anonymous
# mapping of 16 MiB, and last 32 MiB in blocks freed so that their pages
# empty entirely.  Checked against that truth:
#   - read from outside alone (mem_view_check), the allocator is named as
#     not read and the terms add up (no glibc arena made up);
#   - at a snapshot of heapattach, the allocator's line says what is read;
#     the terms add up to RssAnon with unexplained within 5% + 4 MiB and
#     the anonymous mapping left in other_anon; jemalloc and tcmalloc: the
#     live terms within 15% of the live truth, free beside live blocks
#     (pinned) within 25% of 8 MiB, the
#     trimmable part at least a quarter of the freed pages (jemalloc
#     purges dirty pages over 10 s by itself) and at most 120% (a freed
#     large block's padding page is dirty, maybe never touched);
#     jemalloc's arenas (json "arenas") sum to its allocated bytes; mimalloc
#     (committed only): at least the live truth;
#   - heapattach --trim=predict attaches, predicts, purges nothing (RssAnon
#     stays); --trim asks the allocator's own trim on the agent's thread and
#     gives back what it predicted within 25% (mimalloc: no prediction,
#     the line says so).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"

# alloc_case LIB NAME PACKAGE CALL: LIB under /usr/lib/x86_64-linux-gnu
# (skipped with the package to install if missing), NAME as the breakdown
# names it, CALL the call it says its stats need when read from outside.
alloc_case() {
	local lib=$1 name=$2 pkg=$3 call=$4 path
	require_all mem_truth
	command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
	CHECK=$HA_BUILDDIR/tests/mem_view_check
	[ -x "$CHECK" ] || fail "mem_view_check not built: $CHECK"
	path=/usr/lib/x86_64-linux-gnu/$lib
	[ -e "$path" ] || skip "$lib is not installed (apt-get install $pkg)"
	export LD_PRELOAD=$path
	start_target "$name" mem_truth
	unset LD_PRELOAD
	pid=$TPID
	grep -q "$lib" "/proc/$pid/maps" || fail "$lib is not mapped in mem_truth"
	for c in "grow 32" "holes 16" "anon 16" "empty 32"; do
		target_cmd "$c"
	done
	live_truth=$((32 * 1048576 + $(sed -n 's/^truth pinned=[0-9]* live=//p' "$TOUT")))
	freed_truth=$(sed -n 's/^truth freed=//p' "$TOUT")

	# ---- from outside alone: named, not read
	"$CHECK" "$pid" >"$W/$name.view" || fail "mem_view_check on $name failed"
	grep -qxF "allocator $name (not read: its stats need $call called in the target; its memory in other_anon)" "$W/$name.view" ||
		fail "$name: allocator line from outside: $(grep allocator "$W/$name.view")"
	grep -q '^arena ' "$W/$name.view" && fail "$name: a glibc arena was made up"

	# ---- at a snapshot: read by the agent
	local db=$W/$name.db
	# (a snapshot asked for while attached: the one at detach is taken
	# after the agent left, with the figures it read just before, and
	# jemalloc may purge as the agent's thread exits)
	start_ha -q -s 0 -o "$db" "$pid"
	wait_ready "$pid" mem_truth
	snapshot_now "$db"
	kill -INT "$HAPID"
	wait "$HAPID" || fail "$name: heapattach exited $? on SIGINT: $(tail -3 "$HA_ERR")"
	q() { sqlite3 -batch "$db" "$@" || fail "sqlite3 failed: $*"; }
	local sid alloc
	sid=$(q "SELECT id FROM snapshots WHERE reason = 'signal' AND memory_rss_anon_bytes IS NOT NULL")
	[ -n "$sid" ] || fail "$name: no snapshot has a memory breakdown"
	alloc=$(q "SELECT memory_allocator FROM snapshots WHERE id = $sid")
	q -header -column "SELECT term, bytes FROM memory_terms WHERE snapshot_id = $sid" | sed 's/^/    /'
	log "allocator: $alloc"
	"$HA_BUILDDIR/src/heapdiff" --memory -f json "$db" >"$W/$name.json" || fail "$name: heapdiff --memory -f json failed"
	term() { q "SELECT bytes FROM memory_terms WHERE snapshot_id = $sid AND term = '$1'"; }
	local rss sum unexp other live pinned trim
	rss=$(q "SELECT memory_rss_anon_bytes FROM snapshots WHERE id = $sid")
	sum=$(q "SELECT sum(bytes) FROM memory_terms WHERE snapshot_id = $sid")
	[ "$sum" = "$rss" ] || fail "$name: the terms add up to $sum, not RssAnon $rss"
	unexp=$(term unexplained)
	awk -v u="$unexp" -v r="$rss" 'BEGIN { if (u < 0) u = -u; exit !(u <= 0.05 * r + 4 * 1048576) }' ||
		fail "$name: unexplained $unexp of RssAnon $rss (more than 5% + 4 MiB)"
	other=$(term other_anon)
	[ "$other" -ge $((12 * 1048576)) ] || fail "$name: other_anon $other: the 16 MiB mapping was taken by the allocator's terms"
	live=$(($(term live_heap_sampled) + $(term live_heap_before_attach)))
	pinned=$(term allocator_free_pinned)
	trim=$(term allocator_free_trimmable)
	within() { # within WHAT GOT WANT PCT
		awk -v g="$2" -v w="$3" -v p="$4" 'BEGIN { exit !(g >= w * (1 - p / 100) && g <= w * (1 + p / 100)) }' ||
			fail "$name: $1 $2, not within $4% of $3"
		log "$name: $1 $2 for $3 true"
	}
	case $name in
	jemalloc | tcmalloc)
		case $alloc in "$name (read by "*) ;; *) fail "$name: allocator line: $alloc" ;; esac
		within live "$live" "$live_truth" 15
		within pinned "$pinned" $((8 * 1048576)) 25
		awk -v t="$trim" -v f="$freed_truth" 'BEGIN { exit !(t >= 0.25 * f && t <= 1.2 * f) }' ||
			fail "$name: trimmable $trim for $freed_truth freed in whole pages"
		;;
	mimalloc)
		case $alloc in "mimalloc (read by mi_process_info: committed "*) ;; *) fail "$name: allocator line: $alloc" ;; esac
		local commit
		commit=$(sed -n 's/.*committed \([0-9.]*\) MiB.*/\1/p' <<<"$alloc")
		awk -v c="$commit" -v l="$live_truth" 'BEGIN { exit !(c * 1048576 >= l) }' ||
			fail "$name: committed $commit MiB, less than the $live_truth bytes live"
		;;
	esac
	if [ "$name" = jemalloc ]; then
		python3 - "$W/$name.json" "$live" <<'PY' || fail "$name: json arenas"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
a = m["arenas"]
s = sum(x["allocated_bytes"] for x in a)
assert a and all("dirty_bytes" in x and "threads" in x for x in a), a
assert abs(s - int(sys.argv[2])) <= 0.01 * s + 65536, (s, sys.argv[2])
PY
		"$HA_BUILDDIR/src/heapdiff" --memory "$db" | grep -q '^  ARENA THREADS *HELD *ALLOCATED *PINNED *DIRTY *MUZZY$' ||
			fail "$name: no arena table in heapdiff --memory"
	fi

	# ---- --trim=predict: attaches, purges nothing; --trim: gives back
	local rss0 rss1 gave pred
	rss0=$(awk '/^Anonymous:/ { print $2 }' "/proc/$pid/smaps_rollup")
	run_ha --trim=predict "$pid"
	[ "$HA_RC" = 0 ] || fail "$name: --trim=predict exited $HA_RC: $(tail -2 "$HA_ERR")"
	grep -Eq "$(re_detached "$pid")" "$HA_ERR" || fail "$name: --trim=predict did not detach"
	rss1=$(awk '/^Anonymous:/ { print $2 }' "/proc/$pid/smaps_rollup")
	[ "$rss1" -ge $((rss0 * 3 / 4)) ] || fail "$name: --trim=predict: RssAnon $rss0 -> $rss1 kB (purged?)"
	run_ha --trim "$pid"
	[ "$HA_RC" = 0 ] || fail "$name: --trim exited $HA_RC: $(tail -2 "$HA_ERR")"
	sed 's/^/    /' "$HA_ERR"
	if [ "$name" = mimalloc ]; then
		grep -q "mimalloc's mi_collect(true) ran [0-9.]* ms: RssAnon .* gave back -*[0-9.]* MiB (no prediction" "$HA_ERR" ||
			fail "$name: --trim's line"
	else
		read -r gave pred <<<"$(sed -n 's/.*gave back \(-*[0-9.]*\) MiB (predicted \([0-9.]*\) MiB.*/\1 \2/p' "$HA_ERR")"
		[ -n "$pred" ] || fail "$name: --trim: no 'gave back ... (predicted ...)' line"
		awk -v g="$gave" -v p="$pred" 'BEGIN { exit !(p >= 4 && g >= 0.75 * p && g <= 1.25 * p) }' ||
			fail "$name: --trim gave back $gave MiB for $pred MiB predicted (4 MiB at least, within 25%)"
		log "$name: --trim gave back $gave MiB, predicted $pred MiB"
	fi
	check_alive "$pid"
	send "$TFD" exit
	echo "ok: $name: its figures read at a snapshot and checked, --trim gave back what it predicted"
}
