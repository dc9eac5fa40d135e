#!/bin/bash
# The live sampled set and its free filter (agent/liveset.h): no inserted
# address ever reported absent, an exact set, and false positives and full
# buckets within bounds, for every stride from 16 B to 1 MiB.
set -u
exec "$HA_BUILDDIR/tests/liveset_check"
