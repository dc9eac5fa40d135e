#!/bin/bash
# t_memory_by_stack: heapdiff --memory --by-stack (issue 41, step 6): the
# free bytes of each page pinned by live blocks charged to the sampled
# blocks on it, by call path, as tcmalloc's span accounting does.  Not
# built yet: the walk (src/rss/mem_glibc.c) knows each page's pinned bytes
# and the book the sampled blocks, but nothing joins them, and heapdiff has
# no --by-stack for --memory.  This test stays skipped until it is.
. "$(dirname "$0")/lib.sh"
"$HA_BUILDDIR/src/heapdiff" --help 2>&1 | grep -q -- '--memory --by-stack' ||
	skip "heapdiff --memory --by-stack is not built (issue 41, step 6)"
fail "heapdiff --memory --by-stack exists: write this test's checks"
