/* trim.h -- heapattach --trim on the agent's side (trim.c). */
#ifndef HA_AGENT_TRIM_H
#define HA_AGENT_TRIM_H

#include "tls.h"

/* malloc_trim(0) on the calling thread (the agent's: never a hook, no lock
 * of ours held), then TRIMMED on sock with its result and time. */
HA_HIDDEN void ha_trim_reply(int sock);

/* The attacher's TRIM or ALLOC_ASK (alloc_stats.h), answered on sock. */
struct ha_msg;
HA_HIDDEN void ha_alloc_serve(int sock, const struct ha_msg *m);

#endif
