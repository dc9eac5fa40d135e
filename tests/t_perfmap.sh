#!/bin/bash
# t_perfmap: the perf-map reader (src/symbolize/perfmap.c) on files made by
# tests/perfmap_check: format, hostile lines, incremental reads, the
# generation rule of reused addresses, refused files (FIFO, symlink, another
# user's).
. "$(dirname "$0")/lib.sh"
prog=$HA_BUILDDIR/tests/perfmap_check
[ -x "$prog" ] || fail "not built: $prog (make check builds it)"
"$prog" || fail "perfmap_check failed"
echo ok
