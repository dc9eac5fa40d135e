/* mem_terms.c -- the names of the RssAnon terms (mem_terms.h). */
#include "mem_terms.h"

#include <string.h>

static const char *const names[HA_MT_COUNT] = {
	[HA_MT_LIVE_SAMPLED] = "live_heap_sampled",
	[HA_MT_LIVE_BEFORE] = "live_heap_before_attach",
	[HA_MT_FREE_TRIMMABLE] = "allocator_free_trimmable",
	[HA_MT_FREE_PINNED] = "allocator_free_pinned",
	[HA_MT_OVERHEAD] = "allocator_overhead",
	[HA_MT_MMAP_CHUNKS] = "mmap_chunks",
	[HA_MT_THREAD_STACKS] = "thread_stacks",
	[HA_MT_PROFILER] = "profiler",
	[HA_MT_OTHER_ANON] = "other_anon",
	[HA_MT_UNEXPLAINED] = "unexplained",
};

const char *ha_mem_term_name(int term)
{
	return term >= 0 && term < HA_MT_COUNT ? names[term] : NULL;
}

int ha_mem_term_of(const char *name)
{
	for (int i = 0; name && i < HA_MT_COUNT; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}
