/*
 * pymem.h -- CPython's object and mem allocators, wrapped so that small
 * objects are sampled too (issue 37, part 3).
 *
 * pymalloc serves objects of 1..512 bytes from its arenas: the malloc hooks
 * see only the arenas' mmaps.  As tracemalloc does, the agent wraps the
 * PYMEM_DOMAIN_MEM and PYMEM_DOMAIN_OBJ allocators (PyMem_SetAllocator),
 * which must be done holding the GIL: through Py_AddPendingCall, run by the
 * main thread at its next eval-breaker check.  If the main thread never
 * runs Python the wrap waits (HA_PYW_WAITING, in the ring header) and the
 * malloc-level profile goes on.
 *
 * Counted once: a request of 1..512 bytes is sampled by the wrapper, on the
 * same Poisson countdown as malloc; any other size goes on to malloc inside
 * CPython's allocator, whose hook samples it as before.  The arenas'
 * allocator is wrapped too, to raise the depth around an arena's mmap (the
 * mmap hook then passes it on): its objects are the samples, not the
 * mapping.  The path that does not sample is a count and a jump on to
 * CPython's function, as the malloc hooks' is.  A free of a sampled block
 * sends its free record like the free hook does.  With PYTHONMALLOC=malloc
 * there are no arenas: nothing is wrapped.
 *
 * Removed at detach by another pending call, only if the allocators are
 * still ours (tracemalloc may have wrapped them since: then ours stay as a
 * pass-through, which the agent, never unloaded, keeps valid).  A later
 * session takes the wrap back as it is.
 *
 * Sits on sampler and liveset; agent.c calls it.
 */
#ifndef HA_AGENT_PYMEM_H
#define HA_AGENT_PYMEM_H

#include <stdint.h>
#include "tls.h"

/* At session start, when the attacher found CPython: ask for the wrap. */
HA_HIDDEN void ha_pymem_start(void);
/* At session end: ask for its removal (not waited for). */
HA_HIDDEN void ha_pymem_stop(void);
/* Where the wrap stands (enum ha_py_wrap), for the ring header. */
HA_HIDDEN uint32_t ha_pymem_state(void);
/* ...written into the session's first ring header (NULL: none), once a
 * tick of the agent thread: the pending call that changes it runs on the
 * main thread, whenever that gets to it. */
HA_HIDDEN void ha_pymem_publish(void *ring);

#endif
