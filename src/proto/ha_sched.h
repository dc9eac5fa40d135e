/*
 * ha_sched.h -- struct sched_attr for sched_getattr/sched_setattr, which
 * glibc 2.36 does not wrap, and the two calls on it: used by the attacher's
 * injector (src/inject/inject_sched.c) and by the agent thread
 * (agent/agent.c) to ask for short time slices.
 */
#ifndef HA_SCHED_H
#define HA_SCHED_H

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef SCHED_BATCH
#define SCHED_BATCH 3
#endif

#define HA_SHORT_SLICE_NS 100000     /* the scheduler's shortest slice (0.1 ms) */
#define HA_SCHED_FLAG_RESET_ON_FORK 0x01

struct ha_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

/* The scheduling attributes of thread tid (0: the calling thread) in *a.
 * 0 when its policy is SCHED_OTHER or SCHED_BATCH, the ones whose slice
 * (sched_runtime, Linux 6.12 and later; older kernels ignore it) and nice
 * we change; -1 otherwise, or if they cannot be read. */
static inline int ha_sched_get(pid_t tid, struct ha_sched_attr *a)
{
	memset(a, 0, sizeof *a);
	if (syscall(SYS_sched_getattr, tid, a, sizeof *a, 0) != 0)
		return -1;
	return a->sched_policy == SCHED_OTHER || a->sched_policy == SCHED_BATCH ? 0 : -1;
}

/* Set policy, nice and slice of *a (runtime 0: the default slice) for
 * thread tid; the reset-on-fork flag is kept, utilization clamps are left
 * alone.  0, or -1 with errno set. */
static inline int ha_sched_set(pid_t tid, const struct ha_sched_attr *a)
{
	struct ha_sched_attr b = *a;
	b.size = sizeof b;
	b.sched_flags &= HA_SCHED_FLAG_RESET_ON_FORK;
	return (int)syscall(SYS_sched_setattr, tid, &b, 0);
}

#endif /* HA_SCHED_H */
