#!/bin/bash
# The /proc/PID/stat and /proc/PID/status parsers on hostile input (comm
# names with ')', spaces and newlines, cut-off lines, prefixes of field
# names), then on this process's own files.
set -u
exec "$HA_BUILDDIR/tests/proc_check"
