/*
 * heapattach_stay.c -- staying attached (step 5 of heapattach.c's order of
 * events): the signals, blocked from the start and read from a signalfd,
 * the timers (periodic snapshots, the once-a-second status line or view),
 * and the one poll loop that turns a signal, the agent's hang-up, a timer
 * or a key of the view into a snapshot, a refresh or the reason to stop.
 *
 * Separate because it owns the command's time and its signals, and nothing
 * else: it decides when, never what.  What a snapshot holds is the
 * collector's, the status line's text is heapattach_status.c's, the view's
 * plumbing is heapattach_live.c's, and the detach that follows is
 * heapattach_session.c's.  Driven by heapattach_record.c; cmd_setup_signals
 * is called by main before anything else can be interrupted (the signals
 * are blocked from before main already: block_early), and main asks
 * cmd_stop_pending whether one came before the attach or during it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "heapattach_int.h"
#include "collector.h"
#include "ha_proto.h"
#include "live_view.h"
#include "proc.h"
#include "procmaps.h"
#include "session.h"
#include "util.h"

/* Is the agent still mapped in pid?  After an exec it is not: the process
 * lives on with a new program, and our session ended with the old one. */
static int agent_mapped(pid_t pid)
{
	struct ha_maps maps = { 0 };
	if (ha_maps_read(pid, &maps) < 0)
		return 1; /* cannot tell: assume the agent is there */
	int mapped = ha_maps_find_module(&maps, HA_AGENT_SONAME) != NULL;
	ha_maps_free(&maps);
	return mapped;
}

static struct timespec to_timespec(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };
	return ts;
}

static int make_timer(double period_s)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (fd < 0 || period_s <= 0)
		return fd;
	struct itimerspec it = { .it_interval = to_timespec(period_s), .it_value = to_timespec(period_s) };
	timerfd_settime(fd, 0, &it, NULL);
	return fd;
}

/* When the periodic snapshots fall, in seconds since the attach: dense at
 * first -- 1, 2, 3, 5 and 7 s, then 10, 20, 30, 50, 70 s and so on, the
 * same steps in every decade -- as long as they are shorter than the
 * period, then every period.  A session of any length gets enough points
 * to tell a trend (3 s: the baseline, 1 s, 2 s and the final one), and a
 * long one is not written more often than asked.  The first point after
 * `after` seconds; period 0: none (-1). */
static double next_snapshot_at(double after, double period)
{
	static const double steps[] = { 1, 2, 3, 5, 7 };
	if (period <= 0)
		return -1;
	/* decade is a power of ten, exact in a double, that only bounds the
	 * loop against period: NOLINTNEXTLINE(cert-flp30-c) */
	for (double decade = 1; decade < period; decade *= 10)
		for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
			double t = steps[i] * decade;
			if (t >= period)
				goto periodic;
			if (t > after + 1e-6)
				return t;
		}
periodic:
	return (floor(after / period + 1e-6) + 1) * period;
}

/* Arm the one-shot snapshot timer for the next point after now (seconds
 * since t0_ms on the monotonic clock); points missed while busy are
 * skipped, not caught up, and so is a point that falls at the end of the
 * --duration (0: none), where the final snapshot comes anyway. */
static void arm_snapshot_timer(int fd, double t0_ms, double period, double duration)
{
	double at = next_snapshot_at((ha_now_ms() - t0_ms) / 1e3, period);
	if (fd < 0 || at < 0 || (duration > 0 && at > duration - 0.05))
		return;
	/* ha_now_ms is CLOCK_MONOTONIC in ms: the timer's time line. */
	struct itimerspec it = { .it_value = to_timespec(t0_ms / 1e3 + at) };
	timerfd_settime(fd, TFD_TIMER_ABSTIME, &it, NULL);
}

/* The signals read from the signalfd: those that end heapattach, SIGUSR1
 * (a snapshot) and SIGUSR2 (a snapshot with a reachability scan). */
static void read_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	sigaddset(mask, SIGUSR1);
	sigaddset(mask, SIGUSR2);
}

/* Blocked from before main: run from .preinit_array, once the dynamic
 * loader has done its work and before the shared libraries' constructors
 * (ours load some forty: tens of ms on a busy machine), so that a Ctrl-C
 * meanwhile waits for main, which says it was interrupted and that nothing
 * was done, instead of ending heapattach without a word.  Only the loader's
 * own few milliseconds before it keep the default action, as for any
 * program.  (glibc calls it with main's arguments.) */
static void block_early(int argc, char **argv, char **envp)
{
	sigset_t mask;
	(void)argc;
	(void)argv;
	(void)envp;
	read_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
}
__attribute__((section(".preinit_array"), used))
static void (*const block_early_entry)(int, char **, char **) = block_early;

/* Block the signals we handle and return a signalfd for them.  From here
 * on, termination signals arrive only through it, so nothing can interrupt
 * the injector half-way. */
int cmd_setup_signals(void)
{
	sigset_t mask;
	read_signals(&mask);
	sigaddset(&mask, SIGCHLD); /* the injector waits for ptrace stops */
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN); /* NOLINT(cert-err33-c): fails only for a bad signal number */
	sigdelset(&mask, SIGCHLD);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* A signal that ends heapattach, waiting in the signalfd (left there: the
 * loop while attached reads it as ever), or 0. */
int cmd_stop_pending(const char **name)
{
	static const struct { int signo; const char *name; } stops[] = {
		{ SIGINT, "SIGINT" }, { SIGTERM, "SIGTERM" }, { SIGHUP, "SIGHUP" },
	};
	sigset_t p;
	if (sigpending(&p) != 0)
		return 0;
	for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
		if (sigismember(&p, stops[i].signo) == 1) {
			*name = stops[i].name;
			return stops[i].signo;
		}
	}
	return 0;
}

/* Stay attached.  Polls the signalfd, the agent's socket and the timers;
 * the duration is a deadline on the poll timeout. */
enum stop_reason cmd_stay_attached(const struct options *o, struct ha_session *s, int sigfd,
                                   struct ha_collector *coll, struct ha_live *live,
                                   struct ha_view *view, struct ha_push *push, int *signo)
{
	double t0 = ha_now_ms();
	double deadline = o->duration_s > 0 ? t0 + o->duration_s * 1e3 : 0;
	int status = !view && !o->quiet && isatty(STDERR_FILENO);
	int snap_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	arm_snapshot_timer(snap_fd, t0, o->snapshot_every_s, o->duration_s);
	int status_fd = make_timer(status || view ? 1.0 : 0);
	int reach_fd = o->reach_every_s > 0 ? make_timer(o->reach_every_s) : -1;
	if (view) {
		ha_collector_live(coll);
		ha_view_draw(view, live);
	}
	uint64_t last_samples = 0, ticks;
	enum stop_reason why;
	for (;;) {
		int timeout = -1;
		if (deadline) {
			double left = deadline - ha_now_ms();
			if (left <= 0) {
				why = STOP_DURATION;
				break;
			}
			timeout = (int)ceil(left);
		}
		struct pollfd p[6] = { { .fd = sigfd, .events = POLLIN },
		                       { .fd = s->conn_fd, .events = POLLIN },
		                       { .fd = snap_fd, .events = POLLIN },
		                       { .fd = status_fd, .events = POLLIN },
		                       { .fd = view ? ha_view_fd(view) : -1, .events = POLLIN },
		                       { .fd = reach_fd, .events = POLLIN } };
		int n = poll(p, 6, timeout), view_woken = 0;
		if (n < 0 && errno == EINTR) {
			if (!view)
				continue;
			/* SIGWINCH (ncurses's handler): the view reads the
			 * resize as a key. */
			view_woken = 1;
			n = 0;
			for (int i = 0; i < 6; i++)
				p[i].revents = 0;
		}
		if (n < 0) {
			why = STOP_AGENT_LOST;
			break;
		}
		if (p[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
				if (si.ssi_signo == SIGUSR1) {
					ha_collector_snapshot(coll, "signal");
				} else if (si.ssi_signo == SIGUSR2) {
					cmd_reach_ask(coll);
				} else {
					*signo = (int)si.ssi_signo;
					why = STOP_SIGNAL;
					break;
				}
			}
		}
		if (p[1].revents && ha_session_spurious_wake(s))
			p[1].revents = 0; /* the collector's exchange took what came */
		if (p[1].revents) {
			/* The agent only speaks when asked; anything else here
			 * is a hang-up: the target exited, or the agent gave up
			 * (and may have said why). */
			char said[512];
			if (ha_session_last_word(s, said, sizeof said))
				fprintf(stderr, "heapattach: %s\n", said);
			why = !ha_proc_alive(o->pid) ? STOP_TARGET_EXIT
			      : agent_mapped(o->pid)   ? STOP_AGENT_LOST
			                               : STOP_TARGET_EXEC;
			break;
		}
		if ((p[5].revents & POLLIN) && read(reach_fd, &ticks, sizeof ticks) > 0)
			cmd_reach_ask(coll);
		if ((p[2].revents & POLLIN) && read(snap_fd, &ticks, sizeof ticks) > 0) {
			ha_collector_snapshot(coll, "periodic");
			arm_snapshot_timer(snap_fd, t0, o->snapshot_every_s, o->duration_s);
		}
		if ((p[3].revents & POLLIN) && read(status_fd, &ticks, sizeof ticks) > 0) {
			if (view) {
				/* A frame of now (the collector answers within
				 * a drain), then the screen. */
				ha_collector_live(coll);
				cmd_live_feed(coll->to_live, live, 200);
				ha_view_draw(view, live);
			} else {
				/* The frame asked for a second ago, and the
				 * stacks symbolized since; then the next one. */
				if (live)
					cmd_live_feed(coll->to_live, live, 0);
				cmd_print_status(coll, s, &last_samples, live, push);
				if (live)
					ha_collector_live(coll);
			}
		}
		if (view && (view_woken || (p[4].revents & POLLIN))) {
			enum ha_view_action a = ha_view_input(view, live);
			if (a == HA_VIEW_QUIT) {
				/* q or Ctrl-C: exactly what SIGINT does. */
				*signo = SIGINT;
				why = STOP_SIGNAL;
				break;
			}
			if (a == HA_VIEW_SNAPSHOT) {
				ha_collector_snapshot(coll, "live");
				ha_view_message(view, "snapshot asked for: written to the database");
			}
			if (a == HA_VIEW_TRIM) {
				char msg[256];
				ha_view_message(view, "trim: predicting, then malloc_trim(0) in the target...");
				cmd_trim_now(o->pid, s, (int)(o->timeout_s * 1e3), msg, sizeof msg);
				ha_view_message(view, msg);
			}
			ha_view_draw(view, live);
		}
	}
	if (status)
		fputc('\n', stderr);
	close(snap_fd);
	close(status_fd);
	if (reach_fd >= 0)
		close(reach_fd);
	return why;
}
