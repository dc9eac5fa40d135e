/*
 * stubs.h -- the hooks of dlopen and vfork (stubs.c), assembler stubs that
 * hooks.c puts in its table of hooked functions like any other hook.
 *
 * dlopen: patches the modules a dlopen loaded before returning them to the
 * program, where the caller's search path allows it (see stubs.c); the
 * patching itself belongs to a higher module (got.c), which registers it
 * here with ha_stubs_on_dlopen -- a callback upward, so that this module
 * includes nothing above it.
 *
 * vfork: marks the thread (ha_tls.in_vfork, tls.h) while a vfork() child
 * may run on its stack and TLS, so that the sampler leaves the child's
 * allocations alone without a getpid() per sample.
 */
#ifndef HA_AGENT_STUBS_H
#define HA_AGENT_STUBS_H

#include <stdint.h>
#include <sys/types.h>

#include "tls.h"

/* The hooks (entered through a patched GOT slot, never called from C). */
HA_HIDDEN void *ha_hook_dlopen(const char *file, int mode);
HA_HIDDEN pid_t ha_hook_vfork(void);

/* The real dlopen, for the stub: written once by ha_hooks_set_real
 * (hooks.c) before any slot points at the stub, never changed after. */
extern HA_HIDDEN uintptr_t ha_dlopen_real;

/* Have fn run (on the program's thread, errno kept, re-entrancy guard not
 * held) after every dlopen the stub wrapped that returned a handle.  Set
 * before the first slot is patched; fn stays valid forever. */
HA_HIDDEN void ha_stubs_on_dlopen(void (*fn)(void));

#endif /* HA_AGENT_STUBS_H */
