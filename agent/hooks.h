/*
 * hooks.h -- the functions the patched GOT slots point at while a session is
 * active, the real allocator functions they forward to, and the call
 * counters they keep.
 *
 * Invariants (see hooks.c):
 *   - a hook never allocates (outside the re-entrancy guard), locks or
 *     prints, and touches the ring only through sampler.c;
 *   - a hook stays valid forever: the agent is never unloaded (-z nodelete),
 *     and a thread may still be inside a hook long after the slot it came
 *     through has been restored;
 *   - the real function pointers are set once, before the first slot points
 *     at a hook, and never change or go back to NULL afterwards.
 */
#ifndef HA_AGENT_HOOKS_H
#define HA_AGENT_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "ha_proto.h"

#define HA_HIDDEN __attribute__((visibility("hidden")))

/* The functions we interpose, in a fixed order used by got.c as an index. */
enum ha_hook_fn {
	HA_HOOK_MALLOC = 0,
	HA_HOOK_FREE,
	HA_HOOK_CALLOC,
	HA_HOOK_REALLOC,
	HA_HOOK_COUNT
};

HA_HIDDEN void *ha_hook_malloc(size_t size);
HA_HIDDEN void ha_hook_free(void *ptr);
HA_HIDDEN void *ha_hook_calloc(size_t nmemb, size_t size);
HA_HIDDEN void *ha_hook_realloc(void *ptr, size_t size);

/* Symbol name ("malloc", ...) and hook address of fn. */
HA_HIDDEN const char *ha_hooks_name(enum ha_hook_fn fn);
HA_HIDDEN uintptr_t ha_hooks_hook(enum ha_hook_fn fn);

/* The real function behind fn, or 0 if not resolved yet. */
HA_HIDDEN uintptr_t ha_hooks_real(enum ha_hook_fn fn);

/* Set the real function of fn.  Only the first non-zero value is kept (a
 * later call with another value returns -1 and changes nothing): a thread
 * can be inside a hook at any time, the target must never change under it. */
HA_HIDDEN int ha_hooks_set_real(enum ha_hook_fn fn, uintptr_t addr);

/* Counters: reset at the start of a session; read fills the *_calls fields
 * of c and leaves the others alone. */
HA_HIDDEN void ha_hooks_reset_counters(void);
HA_HIDDEN void ha_hooks_read_counters(struct ha_counters *c);

/* Per-thread re-entrancy guard for the sampling path (issue 3): initial-exec
 * TLS, so that touching it never calls into the dynamic loader (a
 * global-dynamic access can allocate on a thread's first touch). */
extern HA_HIDDEN __thread int ha_hook_guard __attribute__((tls_model("initial-exec")));

#endif /* HA_AGENT_HOOKS_H */
