/*
 * slices.h -- the agent thread asks for short time slices, so that on a
 * busy machine it runs soon after the attacher's message wakes it.  Sits on
 * tls; agent.c calls it once its thread runs.
 */
#ifndef HA_AGENT_SLICES_H
#define HA_AGENT_SLICES_H

#include <stdint.h>
#include "tls.h"

/* init_flags: ha_init_args.flags (HA_INIT_SHORT_SLICES: the attacher saw
 * no seccomp filter that could kill the process for the call). */
HA_HIDDEN void ha_ask_short_slices(uint32_t init_flags);

#endif
