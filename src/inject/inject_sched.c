/* inject_sched.c -- short time slices for the threads on the attach's path.
 *
 * Contract: only scheduling attributes change, and only of SCHED_OTHER and
 * SCHED_BATCH threads (ha_sched.h); a refusal by the kernel changes nothing
 * and is no error.  Our own helper thread gets a short slice and, when
 * permitted, a higher weight for its short life; the hijacked thread of
 * the target gets a short slice only, for the time of our calls, and its
 * own slice back before it is let go.  ha_sched_note_default (inject.h)
 * must run before any of our threads' attributes change.
 *
 * On a machine whose cores are all busy, the attach is a chain of waits for
 * a CPU (see "Latency" in inject.c), and the scheduler (EEVDF, Linux 6.6 and
 * later) decides each of them by two numbers per thread:
 *   - its lag, the CPU time it is owed or owes within its group: a thread
 *     that has run more than its share waits until the others have caught
 *     up -- with 33 busy threads, 1 ms of our CPU costs ~33 ms of theirs;
 *   - its time slice: of the threads owed time, the one whose slice ends
 *     first runs first, and a waking thread with a shorter slice preempts
 *     the running one.
 * So the threads on the path ask for short slices (sched_runtime, any user
 * may, Linux 6.12 and later; older kernels ignore it), and the injector,
 * when the attacher may (CAP_SYS_NICE, e.g. root), for a higher weight
 * (nice HA_BOOST_NICE) for its short life: what it does while a thread of
 * the target waits for it should not have to wait for 33 other threads.
 * (Not the main thread: changing the attributes of a thread that has used
 * up its share gets it preempted on the spot, which cost more than it
 * saved.)  The hijacked thread of the target gets a short slice for the
 * time of our calls only, and its own attributes back before it is let go
 * (see inj_hijack_sched).
 */
#define _GNU_SOURCE
#include "inject_int.h"
#include "ha_sched.h"
#include "util.h"

#include <errno.h>
#include <string.h>

#define HA_BOOST_NICE (-10)

/* The default slice: this process's, read before anything changed it. */
static uint64_t default_slice;

void ha_sched_note_default(void)
{
	struct ha_sched_attr a;
	if (!default_slice && ha_sched_get(0, &a) == 0)
		default_slice = a.sched_runtime;
}

/* Short slices for thread tid of ours (0: this one), and the higher weight
 * if boost and permitted. */
void inj_sched_prefer(pid_t tid, int boost)
{
	struct ha_sched_attr a;

	if (ha_sched_get(tid, &a) != 0)
		return;
	/* done already: changing a running thread's attributes requeues it */
	if (a.sched_runtime == HA_SHORT_SLICE_NS && (!boost || a.sched_nice <= HA_BOOST_NICE))
		return;
	a.sched_runtime = HA_SHORT_SLICE_NS;
	if (boost && a.sched_nice > HA_BOOST_NICE) {
		int nice = a.sched_nice;
		a.sched_nice = HA_BOOST_NICE;
		if (ha_sched_set(tid, &a) == 0)
			return;
		a.sched_nice = nice;       /* not permitted: the slice alone */
	}
	ha_sched_set(tid, &a);
}

/* The hijacked thread, stopped: a short slice while it runs our calls, so
 * that it gets a CPU as soon as we let it go (each call, and each message
 * the agent waits for, is such a wake-up).  on = 0 puts back what it had: a
 * slice equal to the default becomes "the default" again.  Only its slice
 * changes, never its policy, nice or share of the CPU; if the kernel says
 * no (another user's thread and no CAP_SYS_NICE), nothing changes. */
void inj_hijack_sched(struct injection *j, struct hijack *h, int on)
{
	struct ha_sched_attr a;

	if (on) {
		if (ha_sched_get(h->tid, &a) != 0 || a.sched_runtime == HA_SHORT_SLICE_NS)
			return;
		h->sched_old = a.sched_runtime;
		a.sched_runtime = HA_SHORT_SLICE_NS;
		h->sched_set = ha_sched_set(h->tid, &a) == 0;
		return;
	}
	if (!h->sched_set)
		return;
	h->sched_set = 0;
	if (ha_sched_get(h->tid, &a) != 0)
		return;
	a.sched_runtime = h->sched_old == default_slice ? 0 : h->sched_old;
	if (ha_sched_set(h->tid, &a) != 0)
		inj_log(j, "note: cannot put back the time slice of thread %d: %s", (int)h->tid,
		        strerror(errno));
}
