#!/bin/bash
# The live view's model (src/live/live_model.c, tests/live_check.c): growth
# since attach and since a mark, sorts, kinds, the filter, late stack texts,
# the summary and its history, the status line's top function.
set -u
exec "$HA_BUILDDIR/tests/live_check"
