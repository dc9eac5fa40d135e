/*
 * counters.h -- the hooks' allocation-call counters (counters.c).
 *
 * Calls are counted per thread with one increment of a field of ha_tls
 * (tls.h) and added to shared totals only from the sampling path
 * (ha_counters_flush, at every sample or, outside a session, whenever a
 * thread crosses the dormant countdown): a shared atomic, or even a
 * compare-and-flush, on every call would cost as much as the rest of the
 * fast path.  The totals lag each thread by its calls since it last
 * flushed: a statistic, not an exact count.  Frees are not counted: nothing
 * but the -v line showed the number, and the increment was a sixth of the
 * free hook's cost.
 *
 * Indexed by counter class, not by hook: the per-thread TLS must stay small.
 */
#ifndef HA_AGENT_COUNTERS_H
#define HA_AGENT_COUNTERS_H

#include "ha_proto.h"
#include "tls.h"

enum { HA_C_MALLOC, HA_C_CALLOC, HA_C_REALLOC, HA_C_OTHER, HA_C_COUNT };
_Static_assert(HA_C_COUNT <= HA_TLS_CALL_CLASSES, "ha_tls.calls too small");

/* One call of class c on this thread (the fast path: one increment). */
static inline void ha_count(int c)
{
	ha_tls.calls[c]++;
}

/* This thread's calls of every class so far. */
static inline uint64_t ha_count_all(void)
{
	return ha_tls.calls[HA_C_MALLOC] + ha_tls.calls[HA_C_CALLOC] + ha_tls.calls[HA_C_REALLOC] +
	       ha_tls.calls[HA_C_OTHER];
}

/* Add this thread's calls since its last flush to the shared totals.
 * Called on the sampling path, never on the fast path. */
HA_HIDDEN void ha_counters_flush(void);

/* Reset at the start of a session; read fills the *_calls fields of c and
 * leaves the others alone. */
HA_HIDDEN void ha_counters_reset(void);
HA_HIDDEN void ha_counters_read(struct ha_counters *c);

#endif /* HA_AGENT_COUNTERS_H */
