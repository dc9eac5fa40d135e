#!/bin/bash
# t_memory_mimalloc: the memory breakdown on mem_truth with Debian's mimalloc
# LD_PRELOAD'ed (memory_alloc_lib.sh); skipped if libmimalloc2.0 is not installed.
. "$(dirname "$0")/memory_alloc_lib.sh"
alloc_case libmimalloc.so.2 mimalloc libmimalloc2.0 'mi_stats'
echo ok
