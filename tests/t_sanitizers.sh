#!/bin/bash
# t_sanitizers: the attacher, heapdiff and the ring protocol built with
# ASan and UBSan (src/heapattach_san, src/heapdiff_san, src/proto/ring_test_san)
# run a full profile session without a single sanitizer report, a
# session with --rss (page-fault samples, pagemap checks) and one with
# --push (to a loopback receiver, a retry included) too.  (The agent
# is never built with sanitizers: it runs inside someone else's process.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/profile_lib.sh"
require_all leak_cmd touch_pages
for b in src/heapattach_san src/heapdiff_san src/proto/ring_test_san; do
	[ -x "$HA_BUILDDIR/$b" ] || fail "$b was not built"
done
# Any report fails the run; leaks of the attacher's own are reports too,
# except inside libraries we do not own (their caches live to exit).
export ASAN_OPTIONS=abort_on_error=0:exitcode=99:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99
printf 'leak:libdw\nleak:libelf\nleak:libunwind\nleak:libsqlite3\n' >"$W/lsan.supp"
export LSAN_OPTIONS=suppressions=$W/lsan.supp

"$HA_BUILDDIR/src/proto/ring_test_san" >"$W/ring.out" 2>&1 || fail "ring_test under sanitizers: $(tail -n 20 "$W/ring.out")"

HA=$HA_BUILDDIR/src/heapattach_san
db=$W/san.db
start_profiled leak leak_cmd -q -i 4096 -s 3600 -o "$db"
send "$TFD" "churn 20000"
wait_line "$TOUT" '^done churn 20000'
snapshot_now "$db"
send "$TFD" "leak 500 3000"
wait_line "$TOUT" '^done leak 500 3000'
detach_by_signal INT "$pid"
grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error' "$HA_ERR" && fail "sanitizer report from heapattach"

"$HA_BUILDDIR/src/heapdiff_san" --bytes "$db" first last >"$W/diff" 2>&1 || fail "heapdiff_san: $(tail -n 20 "$W/diff")"
read -r bytes objects leaf < <(heapdiff_rows "$W/diff" | head -n 1)
[ "$leaf" = leak_here ] || fail "heapdiff_san's top growth is '$leaf', expected leak_here"
for f in html svg json; do
	"$HA_BUILDDIR/src/heapdiff_san" -f "$f" -o "$W/san.$f" "$db" first last >"$W/fmt" 2>&1 ||
		fail "heapdiff_san -f $f: $(tail -n 20 "$W/fmt")"
done
grep -q leak_here "$W/san.html" || fail "heapdiff_san -f html does not name leak_here"
log "sanitized attacher and heapdiff: clean; top growth $leaf $bytes"

# --rss: the page-fault events, their samples and the pagemap checks.
db=$W/rss.db
start_target tp touch_pages 2
pid=$TPID
wait_syscall "$pid" "$pid" "$NR_READ"
start_ha --rss -q -s 3600 -o "$db" "$pid"
wait_ready "$pid" touch_pages
for c in "touch 64" "drop 32" "thread 32" "huge 16"; do
	target_cmd "$c"
	snapshot_now "$db"
done
detach_by_signal INT "$pid"
grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error' "$HA_ERR" && fail "sanitizer report from heapattach --rss"
grep -q '^heapattach: --rss: [0-9]* page-fault samples' "$HA_ERR" || fail "no --rss summary from heapattach_san"
"$HA_BUILDDIR/src/heapdiff_san" --kind rss --bytes "$db" >"$W/rssdiff" 2>&1 || fail "heapdiff_san --kind rss: $(tail -n 20 "$W/rssdiff")"
"$HA_BUILDDIR/src/heapdiff_san" --heap-vs-rss "$db" >"$W/vs" 2>&1 || fail "heapdiff_san --heap-vs-rss: $(tail -n 20 "$W/vs")"
log "sanitized attacher with --rss: clean"

# --push: the queue, its thread, libcurl and a retry (the receiver's first
# answer is a 503), the profiles read through the push thread's own
# connection; then heapdiff --push of the same file.
if command -v python3 >/dev/null; then
	. "$(dirname "$0")/push_lib.sh"
	start_receiver r --fail-first 1
	db=$W/push.db
	start_profiled pushed leak_cmd -q -i 4096 -s 3600 -o "$db" --push "$RURL" --label team=san
	target_cmd "leak 500 3000"
	snapshot_now "$db"
	detach_by_signal INT "$pid"
	grep -Eq 'ERROR: (Address|Leak)Sanitizer|runtime error' "$HA_ERR" && fail "sanitizer report from heapattach --push"
	grep -Eq "^heapattach: --push $RURL: ([0-9]+) of \\1 profiles sent \\(1 retries\\)" "$HA_ERR" ||
		fail "heapattach_san --push: $(grep -- --push "$HA_ERR")"
	"$HA_BUILDDIR/src/heapdiff_san" --push "$RURL" "$db" >"$W/hdpush" 2>&1 || fail "heapdiff_san --push: $(tail -n 20 "$W/hdpush")"
	log "sanitized attacher and heapdiff with --push: clean"
else
	log "python3 is not installed: --push not run under the sanitizers"
fi
echo ok
