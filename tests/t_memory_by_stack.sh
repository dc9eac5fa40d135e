#!/bin/bash
# t_memory_by_stack: heapdiff --memory --by-stack (issue 41): the free bytes
# of each resident page that holds live blocks charged to the sampled
# blocks on it, by call path (tcmalloc's span accounting).  Known truth
# (tests/targets/mem_truth, `pin 16` after the attach): pin_site_a keeps
# one 1 KiB block on each page and frees the other three (12 MiB of holes
# pinned by its 4,096 blocks); pin_site_b frees runs of eight 8 KiB blocks
# so that their pages empty entirely (it pins nothing).  pin_site_a is
# charged within 30% of the truth, pin_site_b under 2% of it; the charges
# never exceed allocator_free_pinned; text and json agree; a version-12
# file is refused in one line.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all mem_truth
command -v sqlite3 >/dev/null || skip "the sqlite3 command-line shell is not installed"
q() { sqlite3 -batch "$@" || fail "sqlite3 failed: $*"; }
HD=$HA_BUILDDIR/src/heapdiff
db=$W/pin.db

start_target mt mem_truth
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha -q -s 0 -i 4096 -o "$db" "$pid"
wait_ready "$pid" mem_truth
target_cmd "pin 16"
truth() { sed -n "s/^truth.* $1=\\([0-9]*\\).*/\\1/p; s/^truth $1=\\([0-9]*\\).*/\\1/p" "$TOUT" | head -1; }
[ "$(truth aligned)" = 1 ] || fail "mem_truth could not lay its blocks on page boundaries: $(grep '^truth' "$TOUT")"
pin_a=$(truth pinned_a)
snapshot_now "$db"
sid=$(q "$db" "SELECT max(id) FROM snapshots WHERE memory_rss_anon_bytes IS NOT NULL")
[ -n "$sid" ] || fail "no snapshot has a memory breakdown"
q -header -column "$db" "SELECT stack_id, pinned_bytes, blocks FROM memory_pinning WHERE snapshot_id = $sid
	ORDER BY pinned_bytes DESC LIMIT 5" | sed 's/^/    /'

"$HD" --memory --by-stack --bytes "$db" "$sid" >"$W/pin.txt" 2>&1 || fail "heapdiff --memory --by-stack: $(cat "$W/pin.txt")"
sed -n '/^pinned holes/,$p' "$W/pin.txt" | head -40 | sed 's/^/    /'
# charged FUNC: the bytes charged to the first call path holding FUNC (0 if none)
charged() {
	awk -v f="$1" '
		/^ *[0-9]+ +[0-9.]+% +[0-9]+$/ { bytes = $1; next }
		/^ +stack [0-9]+$/ { next }
		bytes != "" && index($0, " " f " ") || bytes != "" && $1 == f { print bytes; found = 1; exit }
		END { if (!found) print 0 }' "$W/pin.txt"
}
a=$(charged pin_site_a)
b=$(charged pin_site_b)
log "pin_site_a charged $a bytes (truth $pin_a), pin_site_b $b (truth 0)"
awk -v g="$a" -v w="$pin_a" 'BEGIN { exit !(g >= w * 0.7 && g <= w * 1.3) }' ||
	fail "pin_site_a charged $a bytes, not within 30% of the $pin_a it pins"
awk -v g="$b" -v w="$pin_a" 'BEGIN { exit !(g <= w * 0.02) }' ||
	fail "pin_site_b charged $b bytes: its pages emptied entirely, it pins nothing"
pinned=$(q "$db" "SELECT bytes FROM memory_terms WHERE snapshot_id = $sid AND term = 'allocator_free_pinned'")
sum=$(q "$db" "SELECT CAST(total(pinned_bytes) AS INTEGER) FROM memory_pinning WHERE snapshot_id = $sid")
awk -v s="$sum" -v p="$pinned" 'BEGIN { exit !(s <= p * 1.1) }' ||
	fail "the call paths are charged $sum bytes, more than the $pinned pinned"
echo "ok: pin_site_a charged $a bytes for $pin_a pinned, pin_site_b $b"

"$HD" --memory --by-stack -f json "$db" "$sid" >"$W/pin.json" || fail "heapdiff --memory --by-stack -f json failed"
python3 - "$W/pin.json" "$a" "$pinned" <<'PY' || fail "heapdiff --memory --by-stack -f json: $(head -c 800 "$W/pin.json")"
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
p = m["pinning"]
assert p["pinned_bytes"] == int(sys.argv[3]), p["pinned_bytes"]
assert abs(p["pinned_bytes"] - p["charged_bytes"] - p["uncharged_bytes"]) <= 1, p
first = next(s for s in p["stacks"] if any(f["function"] == "pin_site_a" for f in s["frames"]))
assert abs(first["pinned_bytes"] - int(sys.argv[2])) <= 1, (first["pinned_bytes"], sys.argv[2])
assert first["blocks"] > 0
PY
echo "ok: the json says the same"

# Without --memory, --by-stack is a usage error; a file of version 12 has no charges
"$HD" --by-stack "$db" >"$W/u.out" 2>&1; [ $? = 2 ] || fail "--by-stack without --memory: not a usage error"
q "$db" ".backup $W/v12.db"
q "$W/v12.db" "DROP TABLE memory_pinning; ALTER TABLE snapshots DROP COLUMN memory_cpus_online;
	ALTER TABLE snapshots DROP COLUMN memory_cpus_allowed; ALTER TABLE snapshots DROP COLUMN memory_cpu_quota;
	UPDATE meta SET value = '12' WHERE key = 'schema_version'"
"$HD" --memory --by-stack "$W/v12.db" >"$W/v12.out" 2>&1 && fail "--by-stack on a version-12 file succeeded"
grep -qx "heapdiff: $W/v12.db: no pinned bytes by call path: the file was written before schema version 13" "$W/v12.out" ||
	fail "--by-stack on a version-12 file: $(cat "$W/v12.out")"
"$HD" --memory "$W/v12.db" >/dev/null 2>&1 || fail "--memory (without --by-stack) on a version-12 file failed"
echo "ok: usage and older files"
check_alive "$pid"
echo ok
