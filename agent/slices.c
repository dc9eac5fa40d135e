/* slices.c -- short time slices for the agent thread (see slices.h). */
#define _GNU_SOURCE
#include "slices.h"

#include "ha_proto.h"
#include "ha_sched.h"

/* Short time slices for the agent thread (sched_setattr with sched_runtime,
 * Linux 6.12 and later; older kernels ignore it): on a busy machine it then
 * runs soon after the attacher's message wakes it (a detach waits for that)
 * instead of after the running thread's tick.  Its CPU share (nice) is
 * unchanged; it is our own thread, the program's are left alone.  Only when
 * the attacher said the process has no seccomp filter, which could kill it
 * for an unusual system call. */
void ha_ask_short_slices(uint32_t init_flags)
{
	struct ha_sched_attr a;

	if (!(init_flags & HA_INIT_SHORT_SLICES) || ha_sched_get(0, &a) != 0)
		return;
	a.sched_runtime = HA_SHORT_SLICE_NS;    /* policy and nice as they were */
	(void)ha_sched_set(0, &a);
}
