#!/bin/bash
# t_push_unit: src/push without a network (tests/push_check.c, under ASan,
# UBSan and LSan): untrusted names cleaned for Pyroscope's name{k=v} syntax
# (what ends a value, controls, invalid UTF-8, overlong forms and
# surrogates; the service name's characters; cut at a character), the
# ingest URL (escaping, a --label replacing a default, the last of two
# labels of one name, no hostname when it is unknown, --app), and
# ha_push_profile_load: a corrupt file (the values unreadable), a missing
# file, a missing snapshot and a file that is not a database come back as
# -1 with their line, the process goes on, no descriptor stays open, and
# the peak loads right after each (its period from the snapshot before it
# by time).
. "$(dirname "$0")/lib.sh"
FILL=$HA_BUILDDIR/tests/db_fill
[ -x "$HA_BUILDDIR/tests/push_check" ] || fail "push_check not built (make check builds it)"
[ -x "$FILL" ] || fail "db_fill not built: $FILL"
"$FILL" --attacher "$W/a.db" >/dev/null || fail "db_fill --attacher failed"
# A copy whose buckets table's root page is garbage: it opens, its values
# cannot be read.
page=$(sqlite3 "$W/a.db" 'PRAGMA page_size') || fail "sqlite3 failed"
root=$(sqlite3 "$W/a.db" "SELECT rootpage FROM sqlite_master WHERE name = 'buckets'") || fail "sqlite3 failed"
cp "$W/a.db" "$W/corrupt.db"
head -c "$page" /dev/urandom | dd of="$W/corrupt.db" bs="$page" seek=$((root - 1)) conv=notrunc status=none ||
	fail "dd failed"
printf 'leak:libsqlite3\n' >"$W/lsan.supp"
ASAN_OPTIONS=abort_on_error=0:exitcode=99:detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=99 \
LSAN_OPTIONS=suppressions=$W/lsan.supp "$HA_BUILDDIR/tests/push_check" "$W/a.db" "$W/corrupt.db" || fail "push_check found mismatches"
echo ok
