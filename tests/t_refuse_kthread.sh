#!/bin/bash
# t_refuse_kthread: a kernel thread (pid 2, kthreadd) is refused with
# "kernel thread".
. "$(dirname "$0")/lib.sh"
require_all

grep -q '^2 (kthreadd) ' /proc/2/stat 2>/dev/null || skip "pid 2 is not kthreadd here"
run_ha 2
check_refusal "kernel thread"
tracer_free 2 || fail "kthreadd has a tracer"
echo "ok"
