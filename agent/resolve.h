/*
 * resolve.h -- the real functions behind the hooks (resolve.c), looked up
 * in the process and handed to hooks.c (ha_hooks_set_real).
 */
#ifndef HA_AGENT_RESOLVE_H
#define HA_AGENT_RESOLVE_H

#include <stddef.h>

#include "tls.h"

/* Resolve the real functions the process uses (what a call from the main
 * program binds to: dlsym(RTLD_DEFAULT), corrected for the canonical PLT
 * entry of a non-PIE executable).  malloc/free/calloc/realloc are required
 * (resolved once per process); the others are taken where they exist, and
 * looked up again (ha_resolve_optional, in load order) when a slot for one
 * turns up in a module loaded later (operator new once libstdc++ is
 * loaded).  Takes the fork lock around its dl_iterate_phdr() passes; not
 * inside one.  0 or -errno; on error why[] says which. */
HA_HIDDEN int ha_resolve_real(char *why, size_t whylen);

/* Inside a dl_iterate_phdr() callback (the loader's list lock is
 * recursive): set the real function of optional hook t (an enum
 * ha_hook_fn) to the first definition in load order.  0, or -1 if t is a
 * required one, or there is none, or it is unusable. */
HA_HIDDEN int ha_resolve_optional(int t);

#endif /* HA_AGENT_RESOLVE_H */
