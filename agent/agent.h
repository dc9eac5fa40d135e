/*
 * agent.h -- the agent's entry points (agent.c), the top of its chain of
 * modules (tls.h draws the chain).
 *
 * The protocol itself (init args, state word, messages, ring layout) is in
 * src/proto/ha_proto.h and only there.  Exported from the shared object, with C
 * linkage and default visibility, are exactly:
 *     int heapattach_agent_init(struct ha_init_args *args);
 *     struct ha_agent_state heapattach_agent_state;
 * Everything else is hidden (-fvisibility=hidden, HA_HIDDEN).
 */
#ifndef HA_AGENT_AGENT_H
#define HA_AGENT_AGENT_H

#include "ha_proto.h"
#include "tls.h"

#ifdef __cplusplus
extern "C" {
#endif

HA_EXPORT int heapattach_agent_init(struct ha_init_args *args);
extern HA_EXPORT struct ha_agent_state heapattach_agent_state;

#ifdef __cplusplus
}
#endif

#endif /* HA_AGENT_AGENT_H */
