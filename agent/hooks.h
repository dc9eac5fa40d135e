/*
 * hooks.h -- the functions the patched GOT slots point at while a session is
 * active (hooks.c; dlopen and vfork in stubs.c), the table of hooked
 * functions (names and hook addresses), and the real functions they
 * forward to.  Their call counters are counters.h's.
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

#include "tls.h"

/* The functions we interpose, in a fixed order used as an index (got.c,
 * resolve.c).
 * The first four are required (resolved at session start, or no session);
 * every other one is patched only where its real function can be found
 * (C++ operators once libstdc++ or a program defining them is loaded,
 * jemalloc's *allocx when jemalloc is, free_sized where glibc has it). */
enum ha_hook_fn {
	HA_HOOK_MALLOC = 0,
	HA_HOOK_FREE,
	HA_HOOK_CALLOC,
	HA_HOOK_REALLOC,
	HA_HOOK_REQUIRED,                 /* the ones above are required */
	HA_HOOK_REALLOCARRAY = HA_HOOK_REQUIRED,
	HA_HOOK_POSIX_MEMALIGN,
	HA_HOOK_ALIGNED_ALLOC,
	HA_HOOK_MEMALIGN,
	HA_HOOK_VALLOC,
	HA_HOOK_PVALLOC,
	HA_HOOK_FREE_SIZED,
	HA_HOOK_FREE_ALIGNED_SIZED,
	/* C++: new, new[] x (plain, nothrow, aligned, aligned nothrow) */
	HA_HOOK_NW, HA_HOOK_NW_NT, HA_HOOK_NW_AL, HA_HOOK_NW_AL_NT,
	HA_HOOK_NA, HA_HOOK_NA_NT, HA_HOOK_NA_AL, HA_HOOK_NA_AL_NT,
	/* delete, delete[] x (plain, sized, nothrow, aligned, sized aligned,
	 * aligned nothrow) */
	HA_HOOK_DL, HA_HOOK_DL_S, HA_HOOK_DL_NT, HA_HOOK_DL_AL, HA_HOOK_DL_S_AL, HA_HOOK_DL_AL_NT,
	HA_HOOK_DA, HA_HOOK_DA_S, HA_HOOK_DA_NT, HA_HOOK_DA_AL, HA_HOOK_DA_S_AL, HA_HOOK_DA_AL_NT,
	/* jemalloc */
	HA_HOOK_MALLOCX, HA_HOOK_RALLOCX, HA_HOOK_XALLOCX, HA_HOOK_SDALLOCX, HA_HOOK_DALLOCX,
	/* anonymous mappings */
	HA_HOOK_MMAP, HA_HOOK_MMAP64, HA_HOOK_MUNMAP, HA_HOOK_MREMAP,
	/* modules loaded later */
	HA_HOOK_DLOPEN,
	/* marks the thread while a vfork() child may run on it */
	HA_HOOK_VFORK,
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

/* The park (park.c), while the hooks are in (got.c): publish
 * our word's address in the session's ring header (at each patch pass);
 * once they are out, clear the word, end any park asked and wake the
 * parked (the ring still mapped).  Outside a session both do nothing (a
 * word set then, or in a fork() child, is cleared by the first hook that
 * sees it with no session). */
HA_HIDDEN void ha_hooks_park_publish(void);
HA_HIDDEN void ha_hooks_park_end(void);

#endif /* HA_AGENT_HOOKS_H */
