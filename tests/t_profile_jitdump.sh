#!/bin/bash
# t_profile_jitdump: JIT frames named from a jitdump file (/tmp/jit-PID.dump,
# code-load records with timestamps, which would tell reused code addresses
# apart exactly).  Not built yet (issue 18): only perf maps are read
# (src/record/perfmap.c); see doc/design.md, "Perf maps".
. "$(dirname "$0")/lib.sh"
skip "jitdump is not read yet (issue 18: perf maps only, see doc/design.md)"
