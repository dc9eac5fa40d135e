#!/bin/bash
# t_push: heapattach --push to a receiver on loopback that checks each
# request as Pyroscope's ingest handler does (tests/push_receiver.py).  A
# session of leak_cmd (every allocation sampled: exact values) with two
# SIGUSR1 snapshots around a leak of 1000 x 4096 bytes sends one request per
# snapshot but the baseline (and the peak, if one is kept), in order, and:
#  - POST /ingest, name=leak_cmd{hostname=H,pid=P,comm=leak_cmd,kind=K,
#    team=core,env=test} (K peak for the peak, else snapshot), parsed back
#    exactly from the escaped query; from/until the snapshot's period in
#    integer unix seconds (the one before it by time, and its own);
#    format=pprof; the --push-header and the bearer token of the
#    environment as headers;
#  - each body byte for byte the `heapdiff -f pprof DB S` of its snapshot,
#    read by go tool pprof: the sample types and period type of a Go heap
#    profile; the snapshot after the leak has leak_here allocating its
#    4104192 bytes in its period and holding them; the last one still holds them
#    but allocated nothing more in its period;
#  - nothing of it reaches the target: no libcurl or TLS library in its
#    maps, and the receiver's connection is heapattach's, not the target's;
#  - the summary says every profile was sent; the database is complete.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
. "$(dirname "$0")/push_lib.sh"
require_all leak_cmd
require_go

start_receiver r
db=$W/push.db
export HEAPATTACH_PUSH_TOKEN=tok-123
start_profiled leak leak_cmd -q -i 1 --block -s 0 -o "$db" --push "$RURL/" \
	--label team=core --label env=test --push-header 'X-Scope-OrgID: tenant-a'
unset HEAPATTACH_PUSH_TOKEN
target_cmd "churn 20000"
snapshot_now "$db"
wait_requests 1

# Nothing of the pushing is in the target.
grep -Eq 'libcurl|libssl|libcrypto|libnghttp' "/proc/$pid/maps" &&
	fail "the target maps an HTTP or TLS library: $(grep -E 'libcurl|libssl|libcrypto' "/proc/$pid/maps" | head -n 3)"
# The receiver's connection (kept alive by libcurl): its socket inodes, in
# /proc/net/tcp by the receiver's port (hex), belong to heapattach only.
hexport=$(printf '%04X' "$RPORT")
inodes=$(awk -v p=":$hexport" '$2 ~ p"$" || $3 ~ p"$" { print $10 }' /proc/net/tcp | sort -u)
[ -n "$inodes" ] || fail "no TCP socket of the receiver's port $RPORT in /proc/net/tcp"
sockets_of() { ls -l "/proc/$1/fd" 2>/dev/null | grep -o 'socket:\[[0-9]*\]' | tr -dc '0-9\n' | sort -u; }
for i in $inodes; do
	sockets_of "$pid" | grep -qx "$i" && fail "the target holds a socket of the receiver's connection (inode $i)"
done
client=0
for i in $inodes; do sockets_of "$HAPID" | grep -qx "$i" && client=1; done
[ "$client" = 1 ] || fail "heapattach holds none of the receiver's connection sockets ($inodes)"
log "the receiver's connection is heapattach's; the target maps no HTTP library"

target_cmd "leak 1000 4096"
snapshot_now "$db"
wait_requests 2
detach_by_signal INT "$pid"
send "$TFD" quit
wait_exit "$pid" 10
[ "$RC" = 0 ] || fail "leak_cmd exited $RC"
[ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check failed"
[ ! -e "$db-wal" ] || fail "a -wal file was left next to the database (the writer was not the last to close it)"

# One request per snapshot but the baseline, in id order.
mapfile -t snaps < <(sqlite3 -separator ' ' "$db" "SELECT id, reason FROM snapshots WHERE reason <> 'attach' ORDER BY id")
n=${#snaps[@]}
[ "$n" -ge 3 ] || fail "only $n snapshots besides the baseline: ${snaps[*]}"
[ "$(requests)" = "$n" ] || fail "the receiver recorded $(requests) requests for $n snapshots"
grep -Eq "^heapattach: --push $RURL/: $n of $n profiles sent\$" "$HA_ERR" ||
	fail "no summary line '$n of $n profiles sent': $(grep -- --push "$HA_ERR")"
host=$(hostname)

for ((k = 1; k <= n; k++)); do
	read -r id reason <<<"${snaps[k - 1]}"
	kind=snapshot
	[ "$reason" = peak ] && kind=peak
	# The period: the snapshot before it by time (never the peak), and its own time.
	read -r from until < <(sqlite3 -separator ' ' "$db" "
		SELECT (SELECT CAST(p.time AS INTEGER) FROM snapshots p WHERE p.session_id = s.session_id
		          AND p.id <> s.id AND p.reason <> 'peak' AND (p.time < s.time OR (p.time = s.time AND p.id < s.id))
		        ORDER BY p.time DESC, p.id DESC LIMIT 1), CAST(s.time AS INTEGER)
		  FROM snapshots s WHERE s.id = $id")
	got=$(req "$k" '[r["status"], r["error"], r["method"], r["path"], r["labels"], r["query"]["from"], r["query"]["until"], r["query"]["format"], r["query"].get("spyName"), r["headers"].get("x-scope-orgid"), r["headers"].get("authorization"), r["headers"].get("content-type")]')
	want=$(python3 -c 'import json, sys; a = sys.argv[1:]; print(json.dumps([200, None, "POST", "/ingest", {"__name__": "leak_cmd", "hostname": a[0], "pid": a[1], "comm": "leak_cmd", "kind": a[2], "team": "core", "env": "test"}, a[3], a[4], "pprof", "heapattach", "tenant-a", "Bearer tok-123", "application/octet-stream"], sort_keys=True))' \
		"$host" "$pid" "$kind" "$from" "$until")
	[ "$got" = "$want" ] || fail "request $k (snapshot $id, $reason):
   got:  $got
   want: $want"
	"$HA_BUILDDIR/src/heapdiff" -f pprof -o "$W/s$id.pb.gz" "$db" "$id" || fail "heapdiff -f pprof $db $id failed"
	cmp -s "$RDIR/req-$k.body" "$W/s$id.pb.gz" ||
		fail "request $k's body is not the heapdiff -f pprof of snapshot $id"
	log "request $k: snapshot $id ($reason): labels, period $from..$until, headers, body = heapdiff -f pprof"
done

# The bodies through go tool pprof: a Go heap profile, the leak in its period.
pprof -raw "$RDIR/req-$n.body" >"$W/raw"
grep -qx 'alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes\[dflt\]' "$W/raw" ||
	fail "the sample types are not a Go heap profile's: $(grep -m1 -B1 -A1 'alloc_' "$W/raw")"
grep -qx 'PeriodType: space bytes' "$W/raw" || fail "the period type is not 'space bytes'"
grep -qx 'Period: 1' "$W/raw" || fail "the period is not the sampling interval (1)"
# The snapshot right after the leak: the second asked for (signal).  (No
# periodic ones (-s 0): on a loaded machine those of the first seconds
# came between, one could split the leak's period.)
# leak_here made 1000 blocks of 4096 bytes and grew its array of them to
# 1024 pointers (realloc, 8192 bytes): 4104192 bytes, all of them kept.
leak_k= signals=0
for ((k = 1; k <= n; k++)); do
	read -r id reason <<<"${snaps[k - 1]}"
	[ "$reason" = signal ] && signals=$((signals + 1))
	[ "$signals" = 2 ] && { leak_id=$id leak_k=$k; break; }
done
[ -n "$leak_k" ] || fail "no second signal snapshot among: ${snaps[*]}"
pprof -top -unit=B -sample_index=alloc_space "$RDIR/req-$leak_k.body" >"$W/alloc"
grep -Eq '^ +4104192B .* leak_here$' "$W/alloc" ||
	fail "snapshot $leak_id: leak_here did not allocate 4104192 B in its period: $(head -n 12 "$W/alloc")"
pprof -top -unit=B -sample_index=inuse_space "$RDIR/req-$leak_k.body" >"$W/inuse"
grep -Eq '^ +4104192B .* leak_here$' "$W/inuse" || fail "snapshot $leak_id: leak_here does not hold 4104192 B"
awk '/ flat%/ { getline; print; exit }' "$W/inuse" | grep -q ' leak_here$' ||
	fail "leak_here is not at the top of inuse_space: $(cat "$W/inuse")"
# The last one: still held, nothing more allocated there in its period.
pprof -top -unit=B -sample_index=inuse_space "$RDIR/req-$n.body" | grep -Eq '^ +4104192B .* leak_here$' ||
	fail "the last profile: leak_here does not hold 4104192 B"
pprof -top -unit=B -sample_index=alloc_space "$RDIR/req-$n.body" | grep -q 'leak_here' &&
	fail "the last profile: leak_here allocated in a period where it did not"
echo "ok: $n profiles pushed: Pyroscope's request, the heapdiff -f pprof body, the leak in its period"
echo ok
