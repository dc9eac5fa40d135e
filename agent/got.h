/*
 * got.h -- find, patch and restore the GOT slots of the hooked functions
 * (enum ha_hook_fn: the malloc family, C++ new/delete, jemalloc's *allocx,
 * mmap/munmap/mremap, dlopen) in every loaded module (except the agent, the
 * vdso and the dynamic loader).
 *
 * ha_got_patch() runs on the agent thread (its one-second pass) and on a
 * thread of the program right after its dlopen returned (ha_got_patch_now,
 * hooks.h); it patches only while a session is on (between
 * ha_got_session_start and ha_got_restore), checked under the fork lock, so
 * a dlopen racing the detach never leaves a slot patched.  The other
 * functions run on the agent thread only, except ha_got_restore_child().
 * They take the agent's fork lock (agent.h) around every dl_iterate_phdr()
 * pass and every change of the slot table, so that fork() never snapshots a
 * half-written table or a thread of ours inside dl_iterate_phdr (glibc 2.36
 * does not reset dl_load_write_lock in the child).
 */
#ifndef HA_AGENT_GOT_H
#define HA_AGENT_GOT_H

#include <stddef.h>
#include <stdint.h>

#include "hooks.h"

/* Resolve the real functions the process uses (what a call from the main
 * program binds to: dlsym(RTLD_DEFAULT), corrected for the canonical PLT
 * entry of a non-PIE executable).  malloc/free/calloc/realloc are required
 * (resolved once per process); the others are taken where they exist, and
 * looked up again (in load order) when a slot for one turns up in a module
 * loaded later (operator new once libstdc++ is loaded).  0 or -errno; on
 * error why[] says which. */
HA_HIDDEN int ha_got_resolve_real(char *why, size_t whylen);

/* Start of a session: forget which module set the last pass saw, so that the
 * next ha_got_patch() scans everything. */
HA_HIDDEN void ha_got_session_start(void);

/* Patch every matching slot of every module not patched yet.  Does nothing if
 * no module was loaded or unloaded since the last complete pass; modules
 * loaded while the pass runs are left for the next call.  After a pass that
 * saw a change, tells the attacher (an HA_REC_MODULES ring record) to read
 * the maps again.  Returns 0. */
HA_HIDDEN int ha_got_patch(void);

/* Put back the original value of every slot that still holds our hook and
 * whose module is still loaded; forget the others. */
HA_HIDDEN void ha_got_restore(void);

/* Same, in the child of fork() (single thread, fork lock held by the forking
 * thread's prepare handler): no dl_iterate_phdr, every slot read safely. */
HA_HIDDEN void ha_got_restore_child(void);

/* Slots currently pointing at a hook, modules with at least one of them. */
HA_HIDDEN void ha_got_counts(uint64_t *slots, uint64_t *modules);

#endif /* HA_AGENT_GOT_H */
