/* mem_terms.h -- the terms RssAnon is broken down into (issue 41), named
 * once for the attacher that measures them (src/rss/mem_view.c), the
 * database that stores them (memory_terms.term) and heapdiff that shows
 * them.  Their sum is RssAnon (smaps_rollup's Anonymous); unexplained is
 * what is left, always shown, never folded into another term. */
#ifndef HA_MEM_TERMS_H
#define HA_MEM_TERMS_H

enum ha_mem_term {
	HA_MT_LIVE_SAMPLED,     /* live in the arenas, sampled since attach (estimate) */
	HA_MT_LIVE_BEFORE,      /* live in the arenas, the rest: from before attach */
	HA_MT_FREE_TRIMMABLE,   /* free, resident, whole pages: what malloc_trim gives back */
	HA_MT_FREE_PINNED,      /* free bytes on resident pages that also hold live blocks */
	HA_MT_OVERHEAD,         /* headers, arena structures, thread arenas' tops */
	HA_MT_MMAP_CHUNKS,      /* blocks malloc took with mmap, resident */
	HA_MT_THREAD_STACKS,    /* [stack] and the threads' stacks */
	HA_MT_PROFILER,         /* heapattach's agent */
	HA_MT_OTHER_ANON,       /* every other anonymous page */
	HA_MT_UNEXPLAINED,      /* RssAnon minus the others (may be negative) */
	HA_MT_COUNT
};

/* "live_heap_sampled", ... as in the database and the JSON; NULL out of range. */
const char *ha_mem_term_name(int term);
/* The term of a name, -1 if none. */
int ha_mem_term_of(const char *name);

#endif
