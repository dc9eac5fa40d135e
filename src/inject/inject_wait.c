/* inject_wait.c -- waiting for ptrace events of the injection's tracees.
 *
 * Contract: the helper thread never sleeps for a fixed period on the path
 * of a stop.  Every ptrace stop and exit of a tracee sends SIGCHLD, which
 * the helper keeps blocked and reads from its signalfd (j->sigfd), so a wait
 * ends as soon as something happened, or after EVENT_POLL_MS at the most.
 * Status changes are collected only for the tracees of this thread
 * (__WNOTHREAD), never for a child of the caller; those of threads other
 * than the one waited for go to j->other_event (inject_pick.c's), so that no
 * probe stays stopped while we wait for the hijacked thread.  While the
 * agent's init call runs (j->watching), the caller's descriptor wakes us
 * too and its work (o->step) is done here. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EVENT_POLL_MS    5          /* longest sleep between two looks at our tracees */

/* Sleep until a tracee changes state or until `until`.  Every ptrace stop
 * and exit of a tracee sends SIGCHLD to the tracer's process; the helper
 * thread blocks it (as heapattach's other threads do), so it stays pending
 * for its signalfd (or sigtimedwait) and wakes us at once -- no polling
 * period on the path of each stop.  Should another thread of the caller
 * take the signal, the wait still ends within EVENT_POLL_MS.  While the
 * init call runs, the caller's descriptor (o->watch) wakes us too, and its
 * work (o->step) is done here. */
void inj_wait_event(struct injection *j, double until)
{
	double left = until - ha_now_ms();
	struct timespec ts;
	sigset_t set;

	if (left <= 0)
		return;
	if (left > EVENT_POLL_MS)
		left = EVENT_POLL_MS;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)(left * 1e6) + 1;
	if (j->sigfd >= 0) {
		struct pollfd p[2] = { { .fd = j->sigfd, .events = POLLIN },
		                       { .fd = -1, .events = POLLIN } };
		struct signalfd_siginfo si;
		if (j->watching)
			p[1].fd = j->o->watch(j->o->ctx);
		if (ppoll(p, 2, &ts, NULL) <= 0)
			return;
		if (p[0].revents)
			while (read(j->sigfd, &si, sizeof si) > 0)
				;
		if (p[1].revents && j->watching) {
			inj_log(j, "the agent is talking to us: handshake step");
			j->o->step(j->o->ctx);
		}
		return;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigtimedwait(&set, NULL, &ts);
}

/* Collect every pending status change of our tracees.  The one of `tid` is
 * returned in *st (1); the others go to j->other_event.  0 when nothing is
 * pending, -errno (-ECHILD: we trace nobody).  __WNOTHREAD: only the
 * tracees of this (helper) thread, never a child of the caller. */
int inj_drain_events(struct injection *j, pid_t tid, int *st)
{
	for (;;) {
		int s;
		pid_t w = waitpid(-1, &s, __WALL | __WNOTHREAD | WNOHANG);
		if (w == 0)
			return 0;
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == tid) {
			*st = s;
			return 1;
		}
		if (j->other_event)
			j->other_event(j, w, s);
		else
			inj_log(j, "note: unexpected status 0x%x of thread %d", s, (int)w);
	}
}

/* The next status change of thread tid, meanwhile handling those of the
 * other threads we probe (so that none stays stopped while we wait).
 * 1 with the status in *st, 0 when the deadline passed, -errno. */
int inj_wait_tid(struct injection *j, pid_t tid, int *st, double deadline)
{
	for (;;) {
		int rc = inj_drain_events(j, tid, st);
		if (rc != 0)
			return rc;
		if (ha_now_ms() >= deadline)
			return 0;
		inj_wait_event(j, deadline);
	}
}
