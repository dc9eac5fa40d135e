/*
 * got.h -- find, patch and restore the GOT slots of the hooked functions
 * (got.c; enum ha_hook_fn of hooks.h: the malloc family, C++ new/delete,
 * jemalloc's *allocx, mmap/munmap/mremap, dlopen, vfork) in every loaded
 * module (except the agent, the vdso and the dynamic loader).
 *
 * ha_got_patch() runs on the agent thread (its one-second pass) and on a
 * thread of the program right after its dlopen returned (ha_got_patch_now,
 * which ha_got_session_start registers with the dlopen stub, stubs.h); it
 * patches only while a session is on (between ha_got_session_start and
 * ha_got_restore), checked under the fork lock, so a dlopen racing the
 * detach never leaves a slot patched.  The other functions run on the agent
 * thread only, except ha_got_restore_child().
 * They take the fork lock (forklock.h) around every dl_iterate_phdr()
 * pass and every change of the slot table, so that fork() never snapshots a
 * half-written table or a thread of ours inside dl_iterate_phdr (glibc 2.36
 * does not reset dl_load_write_lock in the child).
 */
#ifndef HA_AGENT_GOT_H
#define HA_AGENT_GOT_H

#include <stddef.h>
#include <stdint.h>

#include "tls.h"

/* Start of a session: forget which module set the last pass saw, so that the
 * next ha_got_patch() scans everything; register ha_got_patch_now with the
 * dlopen stub.  The real functions are resolved already (resolve.h). */
HA_HIDDEN void ha_got_session_start(void);

/* Patch every matching slot of every module not patched yet.  Does nothing if
 * no module was loaded or unloaded since the last complete pass; modules
 * loaded while the pass runs are left for the next call.  After a pass that
 * saw a change, tells the attacher (an HA_REC_MODULES ring record) to read
 * the maps again.  Returns 0. */
HA_HIDDEN int ha_got_patch(void);

/* Patch modules loaded by a dlopen that has just returned (on the
 * program's thread, under the re-entrancy guard it raises itself). */
HA_HIDDEN void ha_got_patch_now(void);

/* Put back the original value of every slot that still holds our hook and
 * whose module is still loaded; forget the others. */
HA_HIDDEN void ha_got_restore(void);

/* Same, in the child of fork() (single thread, fork lock held by the forking
 * thread's prepare handler): no dl_iterate_phdr, every slot read safely. */
HA_HIDDEN void ha_got_restore_child(void);

/* Slots currently pointing at a hook, modules with at least one of them. */
HA_HIDDEN void ha_got_counts(uint64_t *slots, uint64_t *modules);

#endif /* HA_AGENT_GOT_H */
