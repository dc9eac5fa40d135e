#!/bin/bash
# The live view's model (src/live/live_model.c, tests/live_check.c): growth
# since attach and since a mark, sorts, kinds, the filter, late stack texts,
# the summary and its history, the status line's top function; functions
# (src/live/live_funcs.c): flat and cumulative sums, folding, recursion,
# the filter, the sorts, callers, and the cost with 100,000 buckets.
set -u
exec "$HA_BUILDDIR/tests/live_check"
