/*
 * agent.h -- the agent's entry points and what its parts share.
 *
 * The protocol itself (init args, state word, messages, ring layout) is in
 * src/proto/ha_proto.h and only there.  Exported from the shared object, with C
 * linkage and default visibility, are exactly:
 *     int heapattach_agent_init(const struct ha_init_args *args);
 *     struct ha_agent_state heapattach_agent_state;
 * Everything else is hidden (-fvisibility=hidden).
 */
#ifndef HA_AGENT_AGENT_H
#define HA_AGENT_AGENT_H

#include "ha_proto.h"

#define HA_EXPORT __attribute__((visibility("default")))
#define HA_HIDDEN __attribute__((visibility("hidden")))

#ifdef __cplusplus
extern "C" {
#endif

HA_EXPORT int heapattach_agent_init(const struct ha_init_args *args);
extern HA_EXPORT struct ha_agent_state heapattach_agent_state;

#ifdef __cplusplus
}
#endif

/* The fork lock.  Held by the agent thread around every change a fork()
 * child must not see half done (the GOT slot table and the slots, the
 * session's file descriptors and ring mapping) and around every
 * dl_iterate_phdr() pass.  The pthread_atfork prepare handler takes it, the
 * parent and child handlers release it.  Never held across a blocking call:
 * only around system calls that return at once and dl_iterate_phdr(). */
HA_HIDDEN void ha_fork_lock(void);
HA_HIDDEN void ha_fork_unlock(void);

#endif /* HA_AGENT_AGENT_H */
