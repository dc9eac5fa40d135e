#!/bin/bash
# run-all-timeout: 420
# t_fuzz: the short run of every libFuzzer harness of tests/fuzz (make fuzz
# is the long one): each built with clang by tests/fuzz/run, replays its
# seed corpus (the crash-* inputs there are the crashes found before: the
# regressions), then fuzzes for 5 s.  Fails on any crash, sanitizer report
# or failed check; the crashing inputs and their harness's log are kept in
# tests/logs/.  Skipped
# without clang or its libFuzzer.
. "$(dirname "$0")/lib.sh"

command -v clang >/dev/null 2>&1 || skip "no clang (build-aux/setup installs it)"
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
	>"$W/probe.c"
clang -fsanitize=fuzzer,address,undefined -o "$W/probe" "$W/probe.c" >"$W/probe.err" 2>&1 ||
	skip "clang cannot link -fsanitize=fuzzer (no libFuzzer)"

if ! FUZZ_RUNS=10000000 FUZZ_SECS=${FUZZ_SECS:-5} sh "$HA_SRCDIR/tests/fuzz/run" "$W/fuzz"; then
	mkdir -p "$HA_BUILDDIR/tests/logs"
	cp "$W"/fuzz/fuzz_*-crash-* "$W"/fuzz/fuzz_*-leak-* "$W"/fuzz/fuzz_*-timeout-* \
		"$HA_BUILDDIR/tests/logs/" 2>/dev/null
	# The failed harnesses' whole logs too (libFuzzer's seed, the
	# harness's report): an input that needs the ones before it does not
	# fail again alone.
	for f in "$W"/fuzz/fuzz_*.log; do
		n=$(basename "$f" .log)
		ls "$W"/fuzz/"$n"-* >/dev/null 2>&1 && cp "$f" "$HA_BUILDDIR/tests/logs/$n.fuzz.log"
	done
	fail "a harness failed (crashing inputs and their logs, if any, in $HA_BUILDDIR/tests/logs/)"
fi
echo "ok: every harness ran clean"
