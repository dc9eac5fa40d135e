/*
 * forklock.h -- the fork lock (forklock.c).
 *
 * Held by the agent thread around every change a fork() child must not see
 * half done (the GOT slot table and the slots, the session's file
 * descriptors and ring mapping) and around every dl_iterate_phdr() pass
 * (glibc 2.36 does not reset dl_load_write_lock in the child).  The
 * pthread_atfork prepare handler (agent.c) takes it, the parent and child
 * handlers release it.  Never held across a blocking call: only around
 * system calls that return at once and dl_iterate_phdr(); never across a
 * call into the real allocator from a hook (no hook takes it).
 */
#ifndef HA_AGENT_FORKLOCK_H
#define HA_AGENT_FORKLOCK_H

#include "tls.h"

HA_HIDDEN void ha_fork_lock(void);
HA_HIDDEN void ha_fork_unlock(void);

/* Make the lock a new, unlocked one: only in a fork() child that no atfork
 * handler cleaned up (the lock may have been copied locked), single
 * threaded as far as the agent is concerned.  0 or an error number. */
HA_HIDDEN int ha_fork_lock_reinit(void);

#endif /* HA_AGENT_FORKLOCK_H */
