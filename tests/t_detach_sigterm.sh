#!/bin/bash
# t_detach_sigterm: SIGTERM to heapattach = clean detach, exit 0; the target's
# GOT is restored and it keeps running normally.
. "$(dirname "$0")/lib.sh"
require_all idle
detach_by_signal_test TERM
