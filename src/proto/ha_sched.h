/*
 * ha_sched.h -- struct sched_attr for sched_getattr/sched_setattr, which
 * glibc 2.36 does not wrap: used by the attacher's injector (inject.c) and
 * by the agent thread (agent/agent.c) to ask for short time slices.
 */
#ifndef HA_SCHED_H
#define HA_SCHED_H

#include <stdint.h>

struct ha_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

#endif /* HA_SCHED_H */
