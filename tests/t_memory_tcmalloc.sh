#!/bin/bash
# t_memory_tcmalloc: the memory breakdown on mem_truth with Debian's tcmalloc
# LD_PRELOAD'ed (memory_alloc_lib.sh); skipped if libgoogle-perftools4 is not installed.
. "$(dirname "$0")/memory_alloc_lib.sh"
alloc_case libtcmalloc_minimal.so.4 tcmalloc libgoogle-perftools4 'MallocExtension'
echo ok
