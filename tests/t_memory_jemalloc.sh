#!/bin/bash
# t_memory_jemalloc: the memory breakdown on mem_truth with Debian's jemalloc
# LD_PRELOAD'ed (memory_alloc_lib.sh); skipped if libjemalloc2 is not installed.
. "$(dirname "$0")/memory_alloc_lib.sh"
alloc_case libjemalloc.so.2 jemalloc libjemalloc2 'mallctl()'
echo ok
