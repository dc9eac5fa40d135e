/*
 * heapattach.c -- the heapattach command: attach to a running process, profile, detach.
 *
 * The order of events is the product's promise to the user:
 *   1. check the target by reading /proc only (refusals leave it untouched);
 *   2. open the socket and the ring the agent will use;
 *   3. inject: one thread briefly hijacked to dlopen the agent and call its
 *      init, then restored exactly (src/attach/inject.c);
 *   4. handshake with the agent (src/attach/session.c);
 *   5. stay attached until Ctrl-C, SIGTERM, --duration or the target's exit;
 *   6. detach: the agent restores what it changed and goes dormant.
 * Termination signals are blocked from the start and read from a signalfd,
 * so a Ctrl-C can never interrupt the injector half-way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "heapattach_args.h"
#include "collector.h"
#include "live_model.h"
#include "live_view.h"
#include "pf_events.h"
#include "db_write.h"
#include "writer.h"
#include "push.h"

#include "ha_proto.h"
#include "ha_ring_map.h"
#include "inject.h"
#include "procmaps.h"
#include "session.h"
#include "proc.h"
#include "target.h"
#include "util.h"

#ifndef HA_PKGLIBDIR
#define HA_PKGLIBDIR "/usr/local/lib/heapattach"
#endif
/* Rings by address when --rings does not say (ha_proto.h, section 4): one
 * per CPU that can write at once, at least MIN_RINGS (threads whose arenas
 * fall in one ring share it: more rings, fewer of them), none under
 * MIN_RING_BYTES (a thread writes into the ring of its arena alone).
 * doc/design.md, "Rings by address". */
#define MIN_RINGS 4
#define MIN_RING_BYTES (1u << 20)
/* Without --ring-size, the rings' size in all: the 8 MiB of the one ring
 * before.  Smaller rings are faster (their lines stay in the caches: at
 * 512K, 2 MiB rings measured 0.879 of the unhooked speed and 8 MiB ones
 * 0.840), larger ones drop less when the attacher is kept off the CPU (at
 * 64K on two busy threads, 2 MiB rings dropped samples in most runs,
 * 8 MiB ones in none).  doc/design.md, "Rings by address". */
#define DEFAULT_RINGS_BYTES (8u << 20)
enum { EXIT_REFUSED = 1, EXIT_USAGE = 2, EXIT_FAILED = 3 };

/* The agent to inject: --agent, $HEAPATTACH_AGENT, the build tree next to
 * this binary (src/../agent/.libs), then the installed one. */
static int find_agent(const struct options *o, char *out, size_t outlen)
{
	const char *cand = o->agent ? o->agent : getenv("HEAPATTACH_AGENT");
	char self[PATH_MAX], built[PATH_MAX + 64];

	if (!cand || !*cand) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		cand = HA_PKGLIBDIR "/" HA_AGENT_SONAME;
		if (n > 0) {
			self[n] = '\0';
			snprintf(built, sizeof built, "%s/../agent/.libs/%s", dirname(self),
			         HA_AGENT_SONAME);
			if (access(built, R_OK) == 0)
				cand = built;
		}
	}
	if (!realpath(cand, out)) {
		fprintf(stderr, "heapattach: agent not found: %s: %s\n", cand, strerror(errno));
		return -1;
	}
	(void)outlen;
	return 0;
}

/* What ends a session. */
enum stop_reason { STOP_SIGNAL, STOP_DURATION, STOP_TARGET_EXIT, STOP_TARGET_EXEC, STOP_AGENT_LOST };

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

/* One status line, rewritten in place on a terminal: the counters, then
 * what the live model says (the live heap since attach and the top growing
 * function), cut to the terminal's width so that it stays one line. */
static void print_status(struct ha_collector *c, const struct ha_session *s,
                         uint64_t *last_samples, struct ha_live *live, struct ha_push *push)
{
	struct ha_collector_stats st;
	char line[512], what[256] = "";
	ha_collector_read_stats(c, &st);
	/* The fullest ring.  The target can write prod and cons: a fill
	 * beyond the ring is not one. */
	double fill = 0;
	for (uint32_t i = 0; i < s->ring_count; i++) {
		struct ha_ring_hdr *ring = ha_ring_at(s->ring, s->ring_data_size, i);
		uint64_t prod = __atomic_load_n(&ring->prod, __ATOMIC_RELAXED);
		uint64_t cons = __atomic_load_n(&ring->cons, __ATOMIC_RELAXED);
		double f = prod - cons <= s->ring_data_size
		           ? 100.0 * (double)(prod - cons) / (double)s->ring_data_size : 0;
		if (f > fill)
			fill = f;
	}
	if (live)
		ha_live_status(live, what, sizeof what);
	/* What the heap does first: on a narrow terminal the counters are
	 * what is cut. */
	int n = snprintf(line, sizeof line, "heapattach: %s%s%llu samples (%llu/s), %llu stacks, "
	                 "%llu drops, ring %.0f%%, %llu snapshots", what, what[0] ? " | " : "",
	                 (unsigned long long)st.samples,
	                 (unsigned long long)(st.samples - *last_samples),
	                 (unsigned long long)st.stacks,
	                 (unsigned long long)ha_rings_drops(s->ring, s->ring_data_size, s->ring_count),
	                 fill,
	                 (unsigned long long)st.snapshots);
	if (c->rss_period && n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, ", %llu page-fault samples",
		              (unsigned long long)st.rss_samples);
	if (push && n > 0 && (size_t)n < sizeof line) {
		struct ha_push_stats ps;
		ha_push_totals(push, &ps);
		snprintf(line + n, sizeof line - (size_t)n, ", pushed %llu, %llu failed, %llu dropped",
		         (unsigned long long)ps.sent, (unsigned long long)ps.failed,
		         (unsigned long long)ps.dropped);
	}
	struct winsize ws;
	size_t width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
	if (width < sizeof line) {
		/* Not in the middle of a UTF-8 sequence (a name's). */
		while (width > 0 && ((unsigned char)line[width] & 0xc0) == 0x80)
			width--;
		line[width] = '\0';
	}
	/* \r, the line, and clear to the end of the line (ECMA-48 EL). */
	fprintf(stderr, "\r%s\033[K", line);
	*last_samples = st.samples;
}

/* Take every message the collector and the writer sent the live model;
 * with wait_ms > 0, wait that long at most for a frame (just asked for). */
static void feed_live(struct ha_queue *q, struct ha_live *live, int wait_ms)
{
	struct ha_qmsg *m;
	double until = ha_now_ms() + wait_ms;
	int left = wait_ms;
	while ((m = ha_queue_get(q, left > 0 ? left : 0)) != NULL) {
		int frame = m->type == HA_LMSG_FRAME;
		ha_live_take(live, m);
		left = frame ? 0 : (int)(until - ha_now_ms());
	}
}

/* While the view owns the terminal, what heapattach says on stderr (an
 * interval raised, a warning) goes to a memory file, and is said after the
 * view is gone: nothing is lost, nothing is drawn over the view. */
static int hold_stderr(int *saved)
{
	int mem = memfd_create("heapattach-stderr", MFD_CLOEXEC);
	*saved = mem >= 0 ? dup(STDERR_FILENO) : -1;
	if (*saved < 0 || dup2(mem, STDERR_FILENO) < 0) {
		if (mem >= 0)
			close(mem);
		if (*saved >= 0)
			close(*saved);
		*saved = -1;
		return -1;
	}
	return mem;
}

static void release_stderr(int saved, int mem)
{
	char buf[4096];
	ssize_t n;
	if (saved < 0)
		return;
	dup2(saved, STDERR_FILENO);
	close(saved);
	for (off_t off = 0; (n = pread(mem, buf, sizeof buf, off)) > 0; off += n)
		if (write(STDERR_FILENO, buf, (size_t)n) < 0)
			break;
	close(mem);
}

/* Stay attached.  Polls the signalfd, the agent's socket and the timers;
 * the duration is a deadline on the poll timeout. */
static enum stop_reason stay_attached(const struct options *o, struct ha_session *s, int sigfd,
                                      struct ha_collector *coll, struct ha_live *live,
                                      struct ha_view *view, struct ha_push *push, int *signo)
{
	double t0 = ha_now_ms();
	double deadline = o->duration_s > 0 ? t0 + o->duration_s * 1e3 : 0;
	int status = !view && !o->quiet && isatty(STDERR_FILENO);
	int snap_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	arm_snapshot_timer(snap_fd, t0, o->snapshot_every_s, o->duration_s);
	int status_fd = make_timer(status || view ? 1.0 : 0);
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
		struct pollfd p[5] = { { .fd = sigfd, .events = POLLIN },
		                       { .fd = s->conn_fd, .events = POLLIN },
		                       { .fd = snap_fd, .events = POLLIN },
		                       { .fd = status_fd, .events = POLLIN },
		                       { .fd = view ? ha_view_fd(view) : -1, .events = POLLIN } };
		int n = poll(p, view ? 5 : 4, timeout), view_woken = 0;
		if (n < 0 && errno == EINTR) {
			if (!view)
				continue;
			/* SIGWINCH (ncurses's handler): the view reads the
			 * resize as a key. */
			view_woken = 1;
			n = 0;
			for (int i = 0; i < 5; i++)
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
				} else {
					*signo = (int)si.ssi_signo;
					why = STOP_SIGNAL;
					break;
				}
			}
		}
		if (p[1].revents) {
			/* The agent only speaks when asked; anything here is a
			 * hang-up: the target exited, or the agent gave up (and
			 * may have said why). */
			char said[512];
			if (ha_session_last_word(s, said, sizeof said))
				fprintf(stderr, "heapattach: %s\n", said);
			why = !ha_proc_alive(o->pid) ? STOP_TARGET_EXIT
			      : agent_mapped(o->pid)   ? STOP_AGENT_LOST
			                               : STOP_TARGET_EXEC;
			break;
		}
		if ((p[2].revents & POLLIN) && read(snap_fd, &ticks, sizeof ticks) > 0) {
			ha_collector_snapshot(coll, "periodic");
			arm_snapshot_timer(snap_fd, t0, o->snapshot_every_s, o->duration_s);
		}
		if ((p[3].revents & POLLIN) && read(status_fd, &ticks, sizeof ticks) > 0) {
			if (view) {
				/* A frame of now (the collector answers within
				 * a drain), then the screen. */
				ha_collector_live(coll);
				feed_live(coll->to_live, live, 200);
				ha_view_draw(view, live);
			} else {
				/* The frame asked for a second ago, and the
				 * stacks symbolized since; then the next one. */
				if (live)
					feed_live(coll->to_live, live, 0);
				print_status(coll, s, &last_samples, live, push);
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
			ha_view_draw(view, live);
		}
	}
	if (status)
		fputc('\n', stderr);
	close(snap_fd);
	close(status_fd);
	return why;
}

/* heapattach-<comm>-<pid>.db, with the comm made safe for a file name. */
static void default_db_name(const struct ha_target *t, char *out, size_t outlen)
{
	char comm[sizeof t->comm];
	snprintf(comm, sizeof comm, "%s", t->comm);
	for (char *p = comm; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			*p = '_';
	snprintf(out, outlen, "heapattach-%s-%d.db", comm, (int)t->pid);
}

static void print_counters(const char *what, pid_t pid, double ms, const struct ha_counters *c)
{
	fprintf(stderr,
	        "heapattach: %s %d in %.1f ms: malloc=%llu calloc=%llu realloc=%llu "
	        "slots=%llu\n",
	        what, (int)pid, ms, (unsigned long long)c->malloc_calls,
	        (unsigned long long)c->calloc_calls,
	        (unsigned long long)c->realloc_calls, (unsigned long long)c->slots_patched);
}

/* Block the signals we handle and return a signalfd for them.  From here
 * on, termination signals arrive only through it, so nothing can interrupt
 * the injector half-way. */
static int setup_signals(void)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGCHLD); /* the injector waits for ptrace stops */
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN); /* NOLINT(cert-err33-c): fails only for a bad signal number */
	sigdelset(&mask, SIGCHLD);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Opening (and checking, or creating) the database costs a few ms of CPU;
 * on a busy machine every ms the attacher spends before the agent is ready
 * adds many more of waiting for a CPU, so it is done on its own thread while
 * the agent is injected. */
struct db_open_job {
	const char *path;
	struct ha_db *db;
	double ms;
	int rc;
	const char *gate;       /* $HEAPATTACH_TEST_DB_GATE (tests only), or NULL */
	int threaded;           /* th runs db_open_thread */
	int done;               /* opened (or failed) already, before the attach */
	pthread_t th;
	char err[512];
};

static void *db_open_thread(void *arg)
{
	struct db_open_job *j = arg;
	double t0 = ha_now_ms();
	/* Tests only (t_db_late): a slow disk, made exact -- the creation of
	 * a new database waits for a line from this FIFO. */
	if (j->gate) {
		/* A FIFO only: looked at through O_PATH (which opens nothing),
		 * then opened through that descriptor, which waits for a writer
		 * (one already waiting is met at once). */
		struct stat st;
		int fd = open(j->gate, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
			char again[64], c;
			snprintf(again, sizeof again, "/proc/self/fd/%d", fd);
			int w = open(again, O_RDONLY | O_CLOEXEC);
			if (w >= 0) {
				while (read(w, &c, 1) == 1 && c != '\n')
					;
				close(w);
			}
		}
		if (fd >= 0)
			close(fd);
	}
	j->rc = ha_db_open(j->path, &j->db, j->err, sizeof j->err);
	j->ms = ha_now_ms() - t0;
	return NULL;
}

static void db_open_start(struct db_open_job *j)
{
	const char *gate = getenv("HEAPATTACH_TEST_DB_GATE");
	j->gate = gate && *gate ? gate : NULL;
	if (!j->done)
		j->threaded = pthread_create(&j->th, NULL, db_open_thread, j) == 0;
}

/* The part of the database checks that is cheap, done before the target is
 * touched (the rest comes with the open): the file, or the directory a new
 * one goes to, must be there and writable, and no name of it (the file, its
 * -wal, its -shm) a symbolic link.  0, or -1 with err set. */
static int db_path_usable(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];

	if (ha_db_path_check(path, err, errlen) < 0)
		return -1;
	if (access(path, R_OK | W_OK) == 0)
		return 0;
	if (errno == ENOENT) {
		snprintf(dir, sizeof dir, "%s", path);
		if (access(dirname(dir), W_OK | X_OK) == 0)
			return 0;
	}
	ha_err(err, errlen, "%s: %s", path, strerror(errno));
	return -1;
}

/* The database of db_open_start, opened (here if no thread could do it);
 * 0 or -1 with j->err set. */
static int db_open_finish(struct db_open_job *j)
{
	if (j->threaded)
		pthread_join(j->th, NULL);
	else if (!j->done)
		db_open_thread(j);
	j->threaded = 0;
	j->done = 1;
	return j->rc ? -1 : 0;
}

/* The database of a session that did not start: closed; never made if its
 * creation had not begun.  (A new file is left, empty: another heapattach
 * may be recording into the same path by now.) */
static void db_open_abandon(struct db_open_job *j)
{
	if (!j->threaded && !j->done)
		return;
	(void)db_open_finish(j);
	ha_db_close(j->db);
	j->db = NULL;
}

/* The handshake runs on the injector's thread while the agent's init call
 * is under way (see ha_inject_opts.watch): the agent answers from the
 * hijacked thread, which is on a CPU already, and the injector is awake. */
static int handshake_watch(void *ctx)
{
	return ha_session_handshake_fd(ctx);
}

static void handshake_step(void *ctx)
{
	(void)ha_session_handshake_step(ctx);
}

/* Inject the agent and complete the handshake.  Returns 0, or an exit
 * status after printing the reason. */
static int attach(const struct options *o, const struct ha_target *t, struct ha_session *s,
                  struct db_open_job *dbj, double t_start, double t_checked)
{
	double t_prepared = ha_now_ms();
	char err[512];
	struct ha_init_args args = { .magic = HA_PROTO_MAGIC, .version = HA_PROTO_VERSION,
	                             .attacher_pid = (int32_t)getpid(),
	                             .attacher_uid = (uint32_t)geteuid(),
	                             .flags = (t->seccomp_filter ? 0 : HA_INIT_SHORT_SLICES) |
	                                      (t->pid_ns_below ? HA_INIT_PEER_OUTSIDE : 0) };
	snprintf(args.sock_path, sizeof args.sock_path, "%s", s->sock_target);
	struct ha_msg_config cfg = { .sample_interval = o->interval,
	                             .stack_bytes = (uint32_t)o->stack_bytes,
	                             .flags = o->block ? HA_CFG_BLOCK : 0 };
	if (getrandom(args.cookie, sizeof args.cookie, 0) != (ssize_t)sizeof args.cookie) {
		fprintf(stderr, "heapattach: cannot draw the session's cookie: %s\n", strerror(errno));
		return EXIT_FAILED;
	}
	memcpy(cfg.cookie, args.cookie, sizeof cfg.cookie);
	ha_session_handshake_begin(s, &cfg);
	struct ha_inject_opts io = { .target = t, .args = &args,
	                             .timeout_ms = (int)(o->timeout_s * 1e3), .verbose = o->verbose,
	                             .watch = handshake_watch, .step = handshake_step, .ctx = s };
	struct ha_inject_result ir = { 0 };
	struct ha_injection *in = ha_inject_start(&io, &ir, err, sizeof err);
	/* Only now: a new thread may take the CPU from this one, and it had
	 * better be the injector's. */
	db_open_start(dbj);
	if (!in || ha_inject_wait(in)) {
		fprintf(stderr, "heapattach: %s\n", err);
		return EXIT_REFUSED;
	}
	double t_resumed = ha_now_ms();
	if (o->verbose)
		fprintf(stderr, "heapattach: injected through thread %d in %.1f ms (%d tries)\n",
		        (int)ir.tid, ir.ms, ir.tries);
	if (ir.init_ret == HA_INIT_BUSY) {
		fprintf(stderr, "heapattach: %d (%s) is already being profiled by another heapattach\n",
		        (int)t->pid, t->comm);
		return EXIT_REFUSED;
	}
	if (ir.init_ret == HA_INIT_FAILED) {
		/* The agent undid everything before its init returned. */
		fprintf(stderr, "heapattach: handshake with the agent in %d failed: %s\n", (int)t->pid,
		        s->hs_state == HA_HS_FAILED ? s->hs_err
		        : s->hs_state == HA_HS_ACCEPT ? "it could not connect to the attacher's socket"
		                                       : "it gave up");
		return EXIT_FAILED;
	}
	if (ir.init_ret != HA_INIT_STARTED) {
		fprintf(stderr, "heapattach: the agent in %d (%s) refused to start (code %d)\n",
		        (int)t->pid, t->comm, ir.init_ret);
		return EXIT_REFUSED;
	}
	/* Done on the injector's thread already, normally; otherwise the
	 * agent's own thread finishes it. */
	if (ha_session_handshake(s, (int)(o->timeout_s * 1e3), err, sizeof err)) {
		/* The agent restores itself when we hang up. */
		fprintf(stderr, "heapattach: handshake with the agent in %d failed: %s\n", (int)t->pid,
		        err);
		return EXIT_FAILED;
	}
	/* Ready: READY received and the hijacked thread restored, both seen
	 * by the attacher's threads when they happened (this thread may only
	 * get the CPU back later on a busy machine: t_resumed). */
	double t_ready = s->t_ready > ir.t_done ? s->t_ready : ir.t_done;
	double t_init = ir.t_init > 0 ? ir.t_init : t_ready;
	fprintf(stderr, "heapattach: attached to %d (%s): agent ready in %.1f ms\n", (int)t->pid,
	        t->comm, t_ready - t_start);
	if (o->verbose)
		fprintf(stderr, "heapattach: checks %.1f ms, socket and ring %.1f ms, injection "
		        "%.1f ms, handshake %.1f ms; %llu GOT slots patched in %llu modules; READY "
		        "%.1f ms %s the thread was restored; main thread resumed %.1f ms later\n",
		        t_checked - t_start, t_prepared - t_checked, t_init - t_prepared,
		        t_ready - t_init, (unsigned long long)s->ready.slots_patched,
		        (unsigned long long)s->ready.modules_patched,
		        fabs(ir.t_done - s->t_ready), s->t_ready <= ir.t_done ? "before" : "after",
		        t_resumed > t_ready ? t_resumed - t_ready : 0.0);
	return 0;
}

/* Tell the agent to leave and report what it says.  Returns the exit status. */
static int detach(const struct options *o, const struct ha_target *t, struct ha_session *s,
                  enum stop_reason why, int signo)
{
	char err[512];
	if (why == STOP_TARGET_EXIT) {
		fprintf(stderr, "heapattach: target %d exited\n", (int)t->pid);
		return 0;
	}
	if (why == STOP_TARGET_EXEC) {
		fprintf(stderr, "heapattach: target %d replaced its program (exec): the session ended "
		        "with the old one\n", (int)t->pid);
		return 0;
	}
	if (why == STOP_AGENT_LOST) {
		fprintf(stderr, "heapattach: lost the agent in %d: it hung up; it restores the process "
		        "by itself\n", (int)t->pid);
		return EXIT_FAILED;
	}
	if (o->verbose)
		fprintf(stderr, "heapattach: detaching (%s)\n",
		        why == STOP_SIGNAL ? strsignal(signo) : "duration reached");
	struct ha_counters final;
	double t_detach = ha_now_ms();
	if (ha_session_detach(s, (int)(o->timeout_s * 1e3), &final, err, sizeof err) == 0) {
		print_counters("detached from", t->pid, ha_now_ms() - t_detach, &final);
		if (o->verbose)
			fprintf(stderr, "heapattach: the agent took %llu samples, dropped %llu\n",
			        (unsigned long long)final.samples, (unsigned long long)final.drops);
		return 0;
	}
	if (!ha_proc_alive(t->pid)) {
		fprintf(stderr, "heapattach: target %d exited\n", (int)t->pid);
		return 0;
	}
	fprintf(stderr, "heapattach: detach from %d failed: %s\n", (int)t->pid, err);
	return EXIT_FAILED;
}

/* The first lines a user reads when the session ends: what was recorded,
 * where, and the peak when one was kept. */
static void print_summary(const struct options *o, const struct ha_session *s,
                          struct ha_collector *c, const struct ha_writer *w,
                          const struct ha_db_session *info, const char *dbname)
{
	struct ha_collector_stats st;
	ha_collector_read_stats(c, &st);
	if (c->err[0])
		fprintf(stderr, "heapattach: %s\n", c->err);
	if (w->failed)
		fprintf(stderr, "heapattach: %s: %s\n", dbname, w->err);
	uint64_t drops = ha_rings_drops(s->ring, s->ring_data_size, s->ring_count);
	fprintf(stderr, "heapattach: %llu samples, %llu callstacks, %llu unwind failures, "
	        "%llu drops; %llu snapshots in %s (last: %lld)\n",
	        (unsigned long long)st.samples, (unsigned long long)st.stacks,
	        (unsigned long long)st.unwind_failures, (unsigned long long)drops,
	        (unsigned long long)w->snapshots_written, dbname,
	        (long long)w->last_snapshot_id);
	if (st.fp_frames)
		fprintf(stderr, "heapattach: %llu of %llu frames found by frame pointer (code without "
		        "unwind tables)\n", (unsigned long long)st.fp_frames,
		        (unsigned long long)st.frames);
	uint64_t jit = __atomic_load_n(&w->jit_frames, __ATOMIC_RELAXED);
	if (jit)
		fprintf(stderr, "heapattach: %llu frames of new callstacks named by the perf map "
		        "(JIT code)\n", (unsigned long long)jit);
	if (st.peak_bytes)
		fprintf(stderr, "heapattach: the live heap peaked at %.1f MiB (estimated, heap and mmap), "
		        "%.1f s after attach: snapshot 'peak' (heapdiff --peak %s)\n",
		        (double)st.peak_bytes / 1048576.0, (double)st.peak_unix_ms / 1e3 - info->start_time,
		        dbname);
	if (c->rss_period)
		fprintf(stderr, "heapattach: --rss: %llu page-fault samples (1 in %llu faults), %llu lost; "
		        "%.1f MiB resident attributed to %llu pages' call paths at the end "
		        "(heapdiff --kind rss %s)\n",
		        (unsigned long long)st.rss_samples, (unsigned long long)c->rss_period,
		        (unsigned long long)st.rss_lost, (double)st.rss_bytes / 1048576.0,
		        (unsigned long long)st.rss_pages, dbname);
	if (c->rss_period && st.rss_lost)
		fprintf(stderr, "heapattach: --rss: the kernel dropped %llu page-fault samples (its rings "
		        "were full): resident memory is underestimated; a longer --rss-period takes "
		        "fewer samples\n", (unsigned long long)st.rss_lost);
	if (o->verbose && c->rss_period)
		fprintf(stderr, "heapattach: --rss: %llu pages forgotten as dropped, %llu as the zero page, "
		        "%llu as file-backed; %llu unwinds failed; %.1f ms reading pagemap in all\n",
		        (unsigned long long)st.rss_dropped, (unsigned long long)st.rss_zero,
		        (unsigned long long)st.rss_file, (unsigned long long)st.rss_unwind_failures,
		        (double)st.rss_check_ns / 1e6);
	if (o->verbose && st.live_frames)
		fprintf(stderr, "heapattach: %llu live frames of %llu buckets at the end, %.1f us each in "
		        "the collector\n", (unsigned long long)st.live_frames,
		        (unsigned long long)st.stacks, (double)st.live_ns / 1e3 / (double)st.live_frames);
	if (st.abandoned)
		fprintf(stderr, "heapattach: %llu records were reserved in the ring and never written "
		        "(a thread left the sampling code without returning); skipped\n",
		        (unsigned long long)st.abandoned);
	/* What the program wrote over its ring cost the profile (ring_heal.h). */
	if (st.corrupt_records || st.ring_repairs)
		fprintf(stderr, "heapattach: %llu corrupt records rejected, %llu ring positions put back, "
		        "%llu bytes of the ring skipped: the program wrote over its ring; the profile "
		        "misses what they held\n", (unsigned long long)st.corrupt_records,
		        (unsigned long long)st.ring_repairs, (unsigned long long)st.ring_skipped);
	if (o->verbose && st.samples)
		fprintf(stderr, "heapattach: %.1f us per unwind (%.0f stacks/s), %.0f bytes per record, "
		        "%llu frees of sampled blocks\n", st.unwind_ns / 1e3 / (double)st.samples,
		        st.unwind_ns ? 1e9 * (double)st.samples / (double)st.unwind_ns : 0,
		        (double)st.ring_bytes / (double)st.records, (unsigned long long)st.frees);
	if (o->verbose && (st.sref_published || st.sref_stale))
		fprintf(stderr, "heapattach: %llu samples named their stack instead of copying it "
		        "(%llu stack references published, %llu references to nothing published)\n",
		        (unsigned long long)st.sref_hits, (unsigned long long)st.sref_published,
		        (unsigned long long)st.sref_stale);
	if (o->verbose && st.samples) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		double cpu_us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
		                ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
		fprintf(stderr, "heapattach: attacher CPU %.2f us per sample (%.2f s in all), "
		        "max RSS %ld KiB; %.1f%% of unwinds from the stack cache\n",
		        cpu_us / (double)st.samples, cpu_us / 1e6, ru.ru_maxrss,
		        100.0 * (double)st.unwind_cached / (double)(st.samples + st.rss_samples));
	}
}

/* --push: what became of the profiles, one line per receiver. */
static void print_push(const struct ha_push *push)
{
	for (int i = 0; i < ha_push_receivers(push); i++) {
		struct ha_push_stats st;
		const char *url = ha_push_receiver(push, i, &st);
		char line[1024];
		int n = snprintf(line, sizeof line, "heapattach: --push %s: %llu of %llu profiles sent",
		                 url, (unsigned long long)st.sent, (unsigned long long)st.queued);
		if (st.retries && n > 0 && (size_t)n < sizeof line)
			n += snprintf(line + n, sizeof line - (size_t)n, " (%llu retries)",
			              (unsigned long long)st.retries);
		if (st.dropped && n > 0 && (size_t)n < sizeof line)
			n += snprintf(line + n, sizeof line - (size_t)n, "; %llu dropped (the queue of %d "
			              "was full)", (unsigned long long)st.dropped, HA_PUSH_QUEUE);
		if (st.unsent && n > 0 && (size_t)n < sizeof line)
			n += snprintf(line + n, sizeof line - (size_t)n, "; %llu not sent by the end "
			              "(--push-timeout)", (unsigned long long)st.unsent);
		if (st.failed && n > 0 && (size_t)n < sizeof line)
			snprintf(line + n, sizeof line - (size_t)n, "; %llu failed, the last: %s",
			         (unsigned long long)st.failed, st.last_error);
		fprintf(stderr, "%s\n", line);
	}
}

/* --push at the end: what is still queued gets --push-timeout at most (a
 * signal on sigfd ends the wait), then db, which the writer left open, is
 * closed (after the push threads' readers: the writer's handle stays the
 * last on the WAL file), and each receiver's line is said. */
static void end_push(struct ha_push *push, int sigfd, struct ha_db *db)
{
	if (!push)
		return;
	ha_push_finish(push, sigfd);
	ha_db_close(db);
	print_push(push);
	ha_push_free(push);
}

/* --rss: the page-fault events on every thread of the target, or NULL
 * after one line saying why not (the heap profile goes on without). */
static struct ha_pf *open_rss(const struct options *o, pid_t pid)
{
	char err[512];
	struct ha_pf_report rep;
	double t0 = ha_now_ms();
	struct ha_pf *pf = ha_pf_open(pid, o->rss_period, &rep, err, sizeof err);
	if (!pf) {
		fprintf(stderr, "heapattach: --rss: %s; going on without resident memory\n", err);
		return NULL;
	}
	if (rep.threads_left_out)
		fprintf(stderr, "heapattach: --rss: %d of %d threads left out: each thread needs one "
		        "event per CPU (%d CPUs) and the open files limit is %lu; their page faults "
		        "are not sampled\n", rep.threads_left_out, rep.threads + rep.threads_left_out,
		        rep.cpus, rep.fd_limit);
	if (o->verbose)
		fprintf(stderr, "heapattach: --rss: %d threads x %d CPUs of page-fault events in %.1f ms, "
		        "rings of %zu KiB per CPU%s\n", rep.threads, rep.cpus, ha_now_ms() - t0,
		        rep.ring_bytes / 1024,
		        rep.inherit_thread ? "" : " (kernel without inherit_thread: forked children's "
		                                  "samples are dropped)");
	return pf;
}

/* The live session: start the collector, then (once the database is
 * open) the writer, stay attached, detach, and say what was recorded.  The
 * writer owns the database from its start (it closes it).  Returns the exit
 * status. */
static int profile(const struct options *o, const struct ha_target *t, struct ha_session *s,
                   int sigfd, struct db_open_job *dbj, const char *dbname, struct ha_pf *pf)
{
	char err[512];
	char exe_link[64], exe[PATH_MAX] = "";
	snprintf(exe_link, sizeof exe_link, "/proc/%d/exe", (int)t->pid);
	ssize_t n = readlink(exe_link, exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = '\0';
	struct ha_db_session info = { .pid = t->pid, .comm = t->comm, .exe = exe,
	                              .interval = o->interval, .start_time = ha_unix_now(),
	                              .hostname = host };
	static struct ha_writer writer;
	static struct ha_collector coll;
	static struct ha_queue live_q;
	struct ha_live *live = NULL;
	/* The view, or the status line on a terminal, shows what the live
	 * model knows. */
	if (o->live || (!o->quiet && isatty(STDERR_FILENO))) {
		live = ha_live_new(t->pid, t->comm, info.start_time);
		if (live) {
			ha_queue_init(&live_q);
			coll.to_live = writer.to_live = &live_q;
		}
	}
	/* --push: its threads are told of each snapshot the writer commits;
	 * the writer leaves the database to us to close after them. */
	struct ha_push *push = NULL;
	if (o->push.nurls) {
		push = ha_push_start(&o->push, dbname, err, sizeof err);
		if (!push) {
			fprintf(stderr, "heapattach: %s; going on without pushing\n", err);
		} else {
			writer.on_snapshot = ha_push_snapshot;
			writer.on_snapshot_arg = push;
			writer.keep_db = 1;
		}
	}
	coll.pf = pf;
	coll.rss_period = coll.pf ? o->rss_period : 0;
	info.rss_period = coll.rss_period;
	writer.pid = t->pid;
	writer.own_pid = t->own_pid;
	writer.verbose = o->verbose;
	/* The collector drains the ring from the moment the agent is ready;
	 * what it sends the writer waits in the writer's inbox until the
	 * database is open.  (The agent samples from READY on: a collector
	 * started after the open, 30-70 ms later on a busy machine, found
	 * the rings of a 2-thread malloc loop half full and dropped
	 * samples.) */
	ha_writer_init(&writer);
	coll.pid = t->pid;
	coll.ring = s->ring;
	coll.data_size = s->ring_data_size;
	coll.rings = s->ring_count;
	coll.interval = o->interval;
	coll.adaptive = !o->block;
	coll.no_stack_refs = o->no_stack_refs;
	coll.verbose = o->verbose;
	coll.to_writer = &writer.inbox;
	int coll_failed = ha_collector_start(&coll);
	if (coll_failed)
		fprintf(stderr, "heapattach: %s\n", coll.err);
	/* The files the symbols come from, opened now, while the open of the
	 * database goes on: a target that exits before then is still named. */
	if (!coll_failed)
		ha_writer_prepare(&writer);
	int db_failed = db_open_finish(dbj);
	if (db_failed)
		fprintf(stderr, "heapattach: %s\n", dbj->err);
	else if (o->verbose)
		fprintf(stderr, "heapattach: database %s opened in %.1f ms\n", dbname, dbj->ms);
	writer.db = dbj->db;
	if (!coll_failed && !db_failed &&
	    (ha_db_begin_session(writer.db, &info, &writer.session_id, err, sizeof err) ||
	     ha_writer_start(&writer))) {
		fprintf(stderr, "heapattach: %s: %s\n", dbname, writer.err[0] ? writer.err : err);
		db_failed = 1;
	}
	if (coll_failed || db_failed) {
		/* The agent restores itself when the caller hangs up. */
		if (!coll_failed)
			ha_collector_stop(&coll, "detach");
		ha_writer_discard(&writer);
		ha_pf_close(coll.pf);
		dbj->db = writer.db;
		db_open_abandon(dbj);
		end_push(push, -1, NULL);
		return EXIT_FAILED;
	}

	int signo = 0, saved_stderr = -1, held = -1;
	struct ha_view *view = NULL;
	if (o->live && live) {
		view = ha_view_open(err, sizeof err);
		if (!view)
			fprintf(stderr, "heapattach: --live: %s; going on without the view\n", err);
		else
			held = hold_stderr(&saved_stderr);
	}
	enum stop_reason why = stay_attached(o, s, sigfd, &coll, live, view, push, &signo);
	if (view) {
		ha_view_close(view);
		release_stderr(saved_stderr, held);
	}
	int status = detach(o, t, s, why, signo);

	/* What the agent wrote before it left is still in our mapping of the
	 * ring: the collector drains it into the final snapshot. */
	ha_collector_stop(&coll, why == STOP_TARGET_EXIT   ? "exit"
	                         : why == STOP_TARGET_EXEC ? "exec"
	                                                   : "detach");
	ha_writer_finish(&writer, ha_unix_now());
	if (live) {
		feed_live(&live_q, live, 0);
		ha_live_free(live);
		ha_queue_destroy(&live_q);
	}
	print_summary(o, s, &coll, &writer, &info, dbname);
	/* The target is detached and the database complete: only the
	 * receivers are waited for. */
	end_push(push, sigfd, writer.db);
	return writer.failed ? EXIT_FAILED : status;
}

int main(int argc, char **argv)
{
	double t_start = ha_now_ms();
	/* Before any thread's scheduling attributes change (inject_sched.c). */
	ha_sched_note_default();
	struct options o = { .timeout_s = 5, .ring_bytes = DEFAULT_RINGS_BYTES,
	                     .interval = 512u << 10, .stack_bytes = 64u << 10,
	                     .snapshot_every_s = 10, .rss_period = 251,
	                     .nice = HA_BACKGROUND_NICE };
	char agent[PATH_MAX], err[512], dbname[PATH_MAX];
	struct ha_target t;
	struct ha_session s;
	int status;

	if (ha_parse_args(argc, argv, &o))
		return EXIT_USAGE;
	ha_background_nice = (int)o.nice; /* before the threads that use it exist */
	/* Symbolization never goes to the network (libdw would ask debuginfod
	 * servers); set once here, before any thread exists. */
	unsetenv("DEBUGINFOD_URLS");
	/* The symbolizer holds a descriptor for each file the target maps,
	 * and --rss one for each page-fault event. */
	ha_raise_fd_limit();
	if (!ha_ring_size_ok(o.ring_bytes)) {
		fprintf(stderr, "heapattach: --ring-size must be a power of two between 64K and 1G\n");
		return EXIT_USAGE;
	}
	/* --rings as asked for while each ring keeps 64 KiB; without it, one
	 * per CPU, at least MIN_RINGS, none under MIN_RING_BYTES. */
	uint32_t rings = (uint32_t)o.rings;
	if (!rings) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		for (rings = MIN_RINGS; rings < HA_RINGS_MAX && rings < cpus; rings *= 2)
			;
		while (rings > 1 && o.ring_bytes / rings < MIN_RING_BYTES)
			rings /= 2;
	}
	if (!ha_ring_size_ok(o.ring_bytes / rings)) {
		fprintf(stderr, "heapattach: --ring-size %llu cannot be split into %u rings of at least "
		        "64K\n", (unsigned long long)o.ring_bytes, (unsigned)rings);
		return EXIT_USAGE;
	}
	int sigfd = setup_signals();
	if (sigfd < 0) {
		fprintf(stderr, "heapattach: signalfd: %s\n", strerror(errno));
		return EXIT_FAILED;
	}

	/* Everything that can refuse does so before the target is touched. */
	if (o.live && !(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))) {
		fprintf(stderr, "heapattach: --live needs a terminal on standard input and output\n");
		return EXIT_REFUSED;
	}
	if (find_agent(&o, agent, sizeof agent))
		return EXIT_REFUSED;
	if (ha_target_check(o.pid, agent, &t, err, sizeof err)) {
		fprintf(stderr, "heapattach: %s\n", err);
		return EXIT_REFUSED;
	}
	double t_checked = ha_now_ms();
	if (o.verbose)
		fprintf(stderr, "heapattach: target %d (%s) checked in %.1f ms%s%s\n", (int)t.pid,
		        t.comm, t_checked - t_start, t.agent_loaded ? "; agent already loaded" : "",
		        t.seccomp_filter ? "; a seccomp filter is active" : "");
	if (o.db)
		snprintf(dbname, sizeof dbname, "%s", o.db);
	else
		default_db_name(&t, dbname, sizeof dbname);
	if (db_path_usable(dbname, err, sizeof err)) {
		fprintf(stderr, "heapattach: %s\n", err);
		return EXIT_REFUSED;
	}
	struct db_open_job dbj = { .path = dbname };
	/* An existing file is opened (and so checked: a heapattach database of
	 * a version we know, not damaged) before the target is touched; only
	 * the creation of a new one, which can fail only in the ways
	 * db_path_usable looked at or for lack of space, runs alongside. */
	if (access(dbname, F_OK) == 0 && db_open_finish(&dbj)) {
		fprintf(stderr, "heapattach: %s\n", dbj.err);
		return EXIT_REFUSED;
	}
	ha_session_init(&s);
	s.own_pid = t.own_pid;
	if (ha_session_open(&s, t.pid, t.uid, t.gid, t.same_root, o.ring_bytes / rings, rings, err,
	                    sizeof err)) {
		fprintf(stderr, "heapattach: %s\n", err);
		ha_session_close(&s);
		return EXIT_REFUSED;
	}

	/* --rss: the page-fault events are on before the agent is ready, so
	 * that the session samples page faults from the moment it says it is
	 * attached.  (They observe the target; they do not change it.) */
	struct ha_pf *pf = o.rss ? open_rss(&o, t.pid) : NULL;
	status = attach(&o, &t, &s, &dbj, t_start, t_checked);
	if (status) {
		db_open_abandon(&dbj);
		ha_pf_close(pf);
	} else {
		status = profile(&o, &t, &s, sigfd, &dbj, dbname, pf);
	}
	ha_session_close(&s);
	close(sigfd);
	return status;
}
