/* alloc_stats.h -- another allocator's statistics and trim, on the agent's
 * thread (alloc_stats.c, trim.c). */
#ifndef HA_AGENT_ALLOC_STATS_H
#define HA_AGENT_ALLOC_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha_proto.h"
#include "tls.h"

typedef int (*ha_mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef int (*ha_tc_get_fn)(const char *, size_t *);
typedef void (*ha_mi_info_fn)(size_t *, size_t *, size_t *, size_t *, size_t *, size_t *,
                              size_t *, size_t *);

/* The allocator's entry points, found in the modules' symbol tables (no dlsym: a failed one allocates). */
struct ha_alloc_fns {
	int kind;                   /* enum ha_alloc_kind */
	ha_mallctl_fn mallctl;      /* jemalloc */
	ha_tc_get_fn tc_get;        /* tcmalloc */
	void (*tc_release)(void);   /* tcmalloc's ReleaseFreeMemory, maybe NULL */
	ha_mi_info_fn mi_info;      /* mimalloc */
	void (*mi_collect)(bool);   /* mimalloc's mi_collect, maybe NULL */
};

/* Which allocator serves the program (jemalloc, tcmalloc, mimalloc in this
 * order; HA_ALLOC_NONE: none of them).  Returns f->kind. */
HA_HIDDEN int ha_alloc_find(struct ha_alloc_fns *f);

/* Read its statistics and send ALLOC_STATS on sock (part 0, then the arena
 * parts), each carrying seq.  The agent's thread only. */
HA_HIDDEN void ha_alloc_stats_reply(int sock, uint32_t seq);

#endif
