/* reach_freeze.c -- the target frozen for as short as possible, and a
 * copy of it that never runs.
 *
 * 1. The agent's threads are asked to park (reach_park.c: each waits at
 *    its next allocation hook's entry, outside the allocator, until we end
 *    the park or its deadline, HA_PARK_MAX_MS, passes).  Every thread is
 *    seized and interrupted (PTRACE_SEIZE, INTERRUPT; the task list read
 *    again until no new thread shows).  A thread inside the allocator or
 *    the loader (inject_safe.h, which still judges every thread, the
 *    parked too) is let run on, the others staying stopped (they hold
 *    none of its locks), until it waits in the park (the park's count
 *    says so; or for 200 us without a park: an agent without one, a
 *    thread that allocates only through libc's own calls), and stopped
 *    again, up to safe_tries rounds: the copy's heap is then whole.  The
 *    park ends (a new generation, all woken) right after the clone.
 * 2. One thread not stopped by a signal runs a raw clone syscall: flags 0
 *    and exit signal 0 (no SIGCHLD: a waitpid(-1) without __WALL or
 *    __WCLONE never sees the copy; no atfork handler runs, no lock is
 *    taken), in the agent's copy stub, under a signal frame of its own
 *    context (reach_syscall.c): the copy is born ptrace-stopped under us
 *    (PTRACE_O_TRACECLONE on that thread) and given EXITKILL at its first
 *    stop.  Should the attacher die at any step, the thread returns
 *    through the frame to where it was, and a copy made untraced runs
 *    only the stub's exit_group -- never the target's code; the target is
 *    never killed (the old way, EXITKILL on the thread during the clone,
 *    killed it if we died in those 10-15 ms per GB).  The thread is driven
 *    syscall stop to syscall stop, then its registers are put back and
 *    every thread is detached, with any signal it had stopped for.
 * 3. reach_copy_end: SIGKILL to the copy, reaped as its tracer; it stays a
 *    zombie child of the target (exit signal 0 makes no autoreap), so one
 *    target thread is stopped again and made to run wait4(copy, __WALL |
 *    WNOHANG), then restored.  If the attacher dies between the two, the
 *    zombie stays until the target exits (ps shows it <defunct>); so it
 *    does if the attacher died in the middle of step 2. */
#define _GNU_SOURCE
#include "reach_int.h"
#include "inject_safe.h"
#include "ha_proto.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_ON_US 200

static int known(const struct reach_frozen *f, pid_t tid)
{
	for (size_t i = 0; i < f->nth; i++)
		if (f->th[i].tid == tid)
			return 1;
	return 0;
}

/* After PTRACE_INTERRUPT: wait for the stop, read the registers. */
static int settle(struct reach_thread *t)
{
	int st;
	if (reach_wait_stop(t->tid, &st) != 0)
		return -1;
	int sig = reach_stop_signal(st);
	if (sig)
		t->sig = sig;
	return ptrace(PTRACE_GETREGS, t->tid, NULL, &t->regs) == 0 ? 0 : -1;
}

static void drop(struct reach_frozen *f, size_t i)
{
	f->th[i] = f->th[--f->nth];
}

/* Seize and stop every thread not stopped yet. 0, -1 (err) */
static int stop_new(struct reach_frozen *f, char *err, size_t errlen)
{
	for (int pass = 0; pass < 100; pass++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/task", (int)f->pid);
		DIR *d = opendir(path);
		if (!d) {
			ha_err(err, errlen, "cannot read %s: %s", path, strerror(errno));
			return -1;
		}
		size_t before = f->nth;
		struct dirent *de;
		while ((de = readdir(d))) {
			char *end;
			long n = strtol(de->d_name, &end, 10);
			if (*end || n <= 0 || n > INT_MAX)
				continue;   /* ".", "..", not a tid */
			pid_t tid = (pid_t)n;
			if (known(f, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD) != 0) {
				if (errno == ESRCH)
					continue;
				ha_err(err, errlen, "cannot ptrace thread %d: %s", (int)tid, strerror(errno));
				closedir(d);
				return -1;
			}
			struct reach_thread *v = realloc(f->th, (f->nth + 1) * sizeof *v);
			if (!v) {
				ptrace(PTRACE_DETACH, tid, NULL, NULL);
				closedir(d);
				ha_err(err, errlen, "out of memory");
				return -1;
			}
			f->th = v;
			memset(&f->th[f->nth], 0, sizeof f->th[0]);
			f->th[f->nth++].tid = tid;
			ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
		}
		closedir(d);
		if (f->nth == before)
			return 0;
		for (size_t i = before; i < f->nth;)
			if (settle(&f->th[i]) != 0)
				drop(f, i);
			else
				i++;
	}
	return 0;
}

/* Detach every thread, last_tid last; *slow: the thread whose detach
 * took longest, and how long.  A detach waits in the kernel until the
 * thread is off its run queue (wait_task_inactive), and a thread that just
 * ran long -- the clone's, 20-110 ms in the kernel copying page tables --
 * may stay queued a while after it stopped (EEVDF's delayed dequeue, we
 * believe: 10-57 ms seen, bench/reach_pause): so it goes last, and the
 * other threads are not held behind it. */
static void detach_all_timed(struct reach_frozen *f, pid_t last_tid, pid_t *slow, double *slow_ms)
{
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < f->nth; i++) {
			if ((f->th[i].tid == last_tid) != pass)
				continue; /* the others first, then last_tid */
			double t = ha_now_ms();
			ptrace(PTRACE_DETACH, f->th[i].tid, NULL, (void *)(long)f->th[i].sig);
			t = ha_now_ms() - t;
			if (slow && t > *slow_ms) {
				*slow_ms = t;
				*slow = f->th[i].tid;
			}
		}
}

static void detach_all(struct reach_frozen *f)
{
	detach_all_timed(f, 0, NULL, NULL);
}

/* Let the unsafe threads run on until all are safe: each round looks only
 * at the threads that ran since the last (the others have not moved), for
 * at most `tries` rounds and SAFE_BUDGET_MS in all (the target waits).
 * With the park asked (pk->on), a round lets them run until as many more
 * threads wait in the park as were let run (each comes to it at its next
 * allocation call), or until PARK_BUDGET_MS; without it, for RUN_ON_US.
 * 1 safe, 0 not. */
#define SAFE_BUDGET_MS 50.0
#define PARK_BUDGET_MS 80.0
static int make_safe(struct reach_frozen *f, const struct ha_maps *maps, int tries, int verbose,
                     double t0, struct reach_park *pk)
{
	char *moved = calloc(f->nth ? f->nth : 1, 1);
	if (!moved)
		return 0;
	memset(moved, 1, f->nth);
	int safe = 0;
	double budget = pk->on ? PARK_BUDGET_MS : SAFE_BUDGET_MS;
	for (int round = 0; round < tries && ha_now_ms() - t0 < budget; round++) {
		int unsafe = 0;
		char why[128];
		uint32_t parked = reach_park_parked(pk); /* all stopped: a steady count */
		reach_park_poke(pk);
		for (size_t i = 0; i < f->nth; i++) {
			struct reach_thread *t = &f->th[i];
			if (!moved[i] ||
			    ha_thread_is_safe_ex(f->pid, t->tid, maps, NULL, why, sizeof why) == 1) {
				moved[i] = 0;
				continue;
			}
			if (verbose > 1)
				fprintf(stderr, "heapattach: reach: thread %d %s\n", (int)t->tid, why);
			unsafe++;
			ptrace(PTRACE_CONT, t->tid, NULL, (void *)(long)t->sig);
			t->sig = 0;
		}
		if (!unsafe) {
			safe = 1;
			f->parked = (int)parked;
			break;
		}
		if (pk->on) {
			if (reach_park_wait(pk, parked + (uint32_t)unsafe, t0 + budget))
				reach_test_die_at("parked"); /* the ones let run wait in the park */
		} else {
			struct timespec ts = { 0, (long)RUN_ON_US * 1000 };
			nanosleep(&ts, NULL);
		}
		for (size_t i = 0; i < f->nth;) {
			struct reach_thread *t = &f->th[i];
			if (moved[i]) {
				ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
				if (settle(t) != 0) {
					ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
					moved[i] = moved[f->nth - 1];
					drop(f, i);
					continue;
				}
			}
			i++;
		}
	}
	free(moved);
	return safe;
}

/* A thread to run the clone on: one not stopped by a signal (if we died,
 * the signal of a signal-delivery stop would be lost). */
static struct reach_thread *pick(struct reach_frozen *f)
{
	for (size_t i = 0; i < f->nth; i++)
		if (!f->th[i].sig)
			return &f->th[i];
	return NULL;
}

static int freeze_copy(const struct ha_maps *maps, int safe_tries, int verbose,
                       struct reach_frozen *f, char *err, size_t errlen, double t0,
                       struct reach_park *pk);

int reach_freeze(pid_t pid, const struct ha_maps *maps, int safe_tries, int verbose,
                 struct ha_ring_hdr *park, struct reach_frozen *f, char *err, size_t errlen)
{
	memset(f, 0, sizeof *f);
	f->pid = pid;
	/* The clone runs in the agent's copy stub: no stub, no scan. */
	f->stub = reach_stub_find(pid, maps, park);
	if (!f->stub) {
		ha_err(err, errlen, "the agent shows no copy stub to clone in (an older agent?): no scan");
		return -1;
	}
	/* The safe-point check's unwind tables are read again only when the
	 * target's mappings changed. */
	static pid_t last_pid;
	static uint64_t last_sig;
	uint64_t sig = (uint64_t)pid;
	for (size_t i = 0; i < maps->n; i++)
		sig = ha_mix64(sig ^ maps->v[i].start ^ (maps->v[i].end << 1) ^ maps->v[i].inode);
	if (pid != last_pid || sig != last_sig) {
		static const char *const mods[] = { "libc.so.6", "ld-linux-x86-64.so.2" };
		ha_thread_safe_reset();
		ha_thread_safe_warm(pid, maps, mods, 2);
		last_pid = pid;
		last_sig = sig;
	}

	/* The collector's thread runs niced (--nice); while the target waits
	 * for it, it runs at heapattach's own priority. */
	pid_t self = (pid_t)syscall(SYS_gettid);
	errno = 0;
	int nice_was = getpriority(PRIO_PROCESS, (id_t)self);
	int renice = errno == 0 && ha_background_nice > 0 &&
	             setpriority(PRIO_PROCESS, (id_t)self, nice_was - ha_background_nice) == 0;
	double t0 = ha_now_ms();
	/* The park is asked before the first stop: a thread that comes to it
	 * meanwhile is found there at once. */
	struct reach_park pk;
	reach_park_ask(&pk, park, pid, maps, HA_PARK_MAX_MS);
	int rc = freeze_copy(maps, safe_tries, verbose, f, err, errlen, t0, &pk);
	reach_park_end(&pk);
	if (renice)
		setpriority(PRIO_PROCESS, (id_t)self, nice_was);
	return rc;
}

static int freeze_copy(const struct ha_maps *maps, int safe_tries, int verbose,
                       struct reach_frozen *f, char *err, size_t errlen, double t0,
                       struct reach_park *pk)
{
	if (stop_new(f, err, errlen) != 0) {
		detach_all(f);
		return -1;
	}
	int safe = 0;
	for (int again = 0; again < 3 && !safe; again++) {
		safe = make_safe(f, maps, safe_tries, verbose, t0, pk);
		size_t before = f->nth;
		if (stop_new(f, err, errlen) != 0) {
			detach_all(f);
			return -1;
		}
		if (f->nth != before)
			safe = 0; /* new threads: look at them too */
	}
	if (!safe) {
		reach_park_end(pk);
		detach_all(f);
		f->pause_ms = ha_now_ms() - t0;
		ha_err(err, errlen, "no safe point: a thread stayed inside the allocator or the loader");
		return -1;
	}
	reach_test_die_at("stopped");
	struct reach_thread *h = pick(f);
	long ret = -ENOSYS;
	pid_t child = 0;
	const uint64_t args[5] = { 0, 0, 0, 0, 0 }; /* flags 0, exit signal 0; same stack */
	double t_safe = ha_now_ms();
	int cloned = h && reach_syscall(f->pid, h, f->stub, SYS_clone, args, &ret, &child) == 0;
	reach_park_end(pk); /* the parked go on as soon as they are let run */
	if (!cloned) {
		detach_all(f);
		f->pause_ms = ha_now_ms() - t0;
		f->copy = child; /* if one was made: killed and reaped */
		ha_err(err, errlen, "no thread could run the clone");
		return -1;
	}
	f->reaper = h->tid;
	double t_clone = ha_now_ms(), slow_ms = 0;
	pid_t slow = 0;
	detach_all_timed(f, h->tid, &slow, &slow_ms);
	f->pause_ms = ha_now_ms() - t0;
	if (verbose > 1)
		fprintf(stderr, "heapattach: reach: safe point %.2f ms (%d of %zu threads in the "
		        "park), clone %.2f ms, resumed in %.2f ms (slowest: thread %d, %.2f ms)\n",
		        t_safe - t0, f->parked, f->nth, t_clone - t_safe, ha_now_ms() - t_clone,
		        (int)slow, slow_ms);
	if (ret < 0 || child <= 0) {
		ha_err(err, errlen, "the target's clone failed: %s", strerror((int)(ret < 0 ? -ret : EIO)));
		return -1;
	}
	f->copy = child;
	int st;
	if (reach_wait_stop(child, &st) != 0) {
		ha_err(err, errlen, "the copy %d did not stop", (int)child);
		reach_copy_end(f);
		return -1;
	}
	/* from now on the kernel kills it if we die (until now, it would have
	 * run the stub's exit_group) */
	ptrace(PTRACE_SETOPTIONS, child, NULL, (void *)(long)(PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL));
	reach_test_die_at("copy");
	return 0;
}

/* Have one of the target's threads reap the copy's zombie. */
static void reap_in_target(struct reach_frozen *f, pid_t copy)
{
	pid_t order[2] = { f->reaper, 0 };
	for (size_t k = 0; k < f->nth + 1; k++) {
		pid_t tid = k == 0 ? order[0] : f->th[k - 1].tid;
		if (tid <= 0 || (k > 0 && tid == f->reaper))
			continue;
		if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)PTRACE_O_TRACESYSGOOD) != 0)
			continue;
		struct reach_thread t = { .tid = tid };
		ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
		if (settle(&t) != 0)
			continue;
		long ret = 0;
		pid_t none = 0;
		const uint64_t args[5] = { (uint64_t)copy, 0, (uint64_t)(__WALL | WNOHANG), 0, 0 };
		int ok = !t.sig && reach_syscall(f->pid, &t, f->stub, SYS_wait4, args, &ret, &none) == 0;
		ptrace(PTRACE_DETACH, tid, NULL, (void *)(long)t.sig);
		if (ok)
			return;
	}
}

void reach_copy_end(struct reach_frozen *f)
{
	if (f->copy <= 0)
		return;
	pid_t copy = f->copy;
	f->copy = 0;
	kill(copy, SIGKILL);
	int st;
	for (;;) {
		pid_t w = waitpid(copy, &st, __WALL);
		if (w == copy && (WIFEXITED(st) || WIFSIGNALED(st)))
			break;
		if (w < 0 && errno != EINTR)
			break;
	}
	reach_test_die_at("killed");
	reap_in_target(f, copy);
}

void reach_frozen_free(struct reach_frozen *f)
{
	reach_copy_end(f);
	free(f->th);
	f->th = NULL;
	f->nth = 0;
}
