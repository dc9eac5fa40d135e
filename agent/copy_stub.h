/*
 * copy_stub.h -- where the agent's copy stub is (copy_stub.c): the code a
 * reachability scan runs its clone and wait4 in (src/proto/ha_copy_stub.h).
 */
#ifndef HA_AGENT_COPY_STUB_H
#define HA_AGENT_COPY_STUB_H

#include <stdint.h>

#include "tls.h"

/* Its address in this process, published in the ring header (park.c). */
HA_HIDDEN uint64_t ha_copy_stub_addr(void);

#endif /* HA_AGENT_COPY_STUB_H */
