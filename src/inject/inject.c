/* inject.c -- load the agent into a running process with ptrace and call its
 * init on one hijacked thread; restore that thread exactly (inject.h).
 *
 * This file holds the sequence of an injection and the helper thread it
 * runs on; each step lives in a file of its own (inject_int.h lists them).
 * Outline (x86_64, glibc):
 *   1. the target was checked by ha_target_check (target.c) before, and
 *      what inject needs of it comes from there (struct ha_target); here
 *      only what can have changed since is checked again (check_moment);
 *   2. find dlopen (libc >= 2.34, libdl, or __libc_dlopen_mode) and dlerror
 *      in the target's own libc, from the ELF file on disk
 *      (inject_resolve.c); a glibc before 2.34 without libdl and
 *      libpthread loaded gets them first, by the first calls of step 4
 *      (inject_libs.c);
 *   3. pick a thread: PTRACE_SEIZE + PTRACE_INTERRUPT the candidates
 *      (running threads all at once, a couple of threads blocked in a
 *      syscall), take their stops as they come (with a timeout), unwind
 *      each, and use the first whose frames hold no lock that dlopen needs
 *      (see inject_safe.c); every other one is let go the moment it stops.
 *      A thread caught inside malloc & co. is tried again later.  We keep
 *      going round until the time budget is spent
 *      (inject_pick.c);
 *   4. save its registers, FP/vector state and signal mask
 *      (inject_state.c), push room for the agent's path and the init
 *      arguments on its stack and below them a signal frame of its saved
 *      context (inject_frame.c), block (asynchronous) signals, and make
 *      calls: __libc_dlopen_mode of libdl and libpthread if step 2 said
 *      so, dlopen(agent) -- of its path, or of a memfd or a copy when
 *      the target's file system has no path to it (inject_deliver.c) --
 *      then heapattach_agent_init(&args).  A call returns
 *      into the frame's rt_sigreturn, whose syscall-entry stop is its end
 *      (inject_call.c); should heapattach die at any moment, the thread
 *      runs that rt_sigreturn and is back where it was;
 *   5. put everything back and detach (inject_state.c).  The kernel then
 *      restarts the system call the thread was in, as after any signal
 *      without a handler.
 *
 * All ptrace work runs on a short-lived helper thread: ptrace attachments
 * belong to the tracing thread and the kernel drops them all when it exits,
 * so a thread we seized but that never stopped (D state, vfork parent, or a
 * probe we no longer need) is released when we return, whatever happened.
 *
 * Latency.  On a machine whose cores are all busy (say 32 threads in malloc
 * on 2 cores) every thread gets a fair share, so the attach is a chain of
 * waits for a CPU: ours (after each stop we wait for) and the target's
 * (each thread that must stop or run our call).  So: the helper never
 * sleeps for a fixed period (it waits for SIGCHLD, which every stop of a
 * tracee sends: inject_wait.c), asks for short time slices (it then runs as
 * soon as its event comes: inject_sched.c), spends as little CPU as it can
 * while threads are stopped (symbol and unwind tables are loaded before),
 * and interrupts many threads at once rather than waiting for each in turn
 * (see "Probes" in inject_pick.c).  The caller does other work meanwhile,
 * between ha_inject_start and ha_inject_wait.
 *
 * Nothing of the target is trusted: symbol addresses come from the ELF files
 * on disk, strings read back are bounded, and every stop we did not cause
 * is handled as the kernel would have without us (signals delivered, group
 * stops kept). */
#define _GNU_SOURCE
#include "inject_int.h"
#include "elfsym.h"
#include "proc.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 5000     /* when o->timeout_ms <= 0 */
#define MAX_OWN_THREADS  64         /* see ha_inject_start */

static double elapsed(const struct injection *j)
{
	return ha_now_ms() - j->t0;
}

/* The checks of the moment.  Everything that can be known about the
 * target without touching it was checked by ha_target_check (target.c)
 * before heapattach opened its database and socket; its answer, o->target,
 * is what the injection goes by.  What is checked again here is what the
 * target itself can change at any time, in between as well: it may have
 * exited, or been stopped by job control (a stopped process would not run
 * our calls; a group stop that begins later, during the thread search, is
 * seen there).  A tracer that came in between is seen by PTRACE_SEIZE
 * itself (inject_pick.c), the only moment that is never too early. */
static int check_moment(struct injection *j)
{
	char state[16];

	if (kill(j->pid, 0) < 0 && errno == ESRCH) {
		ha_err(j->err, j->errlen, "no such process: %d", (int)j->pid);
		return -1;
	}
	if (ha_proc_status_field(j->pid, 0, "State", state, sizeof state) == 0 &&
	    state[0] == 'T') {
		ha_err(j->err, j->errlen, "process %d is stopped (job control); "
		       "resume it with kill -CONT %d first", (int)j->pid, (int)j->pid);
		return -1;
	}
	return 0;
}

/* The whole injection, on the helper thread: 0 when the agent's init ran
 * (its return value in j->r->init_ret), -1 with j->err set otherwise; the
 * target's threads are left running as they were either way. */
static int inject_run(struct injection *j)
{
	struct hijack h;
	double t1;
	int rc = -1;

	memset(&h, 0, sizeof h);
	inj_log(j, "injector running");
	if (check_moment(j) < 0)
		return -1;
	rc = ha_maps_read(j->pid, &j->maps);
	if (rc < 0) {
		ha_err(j->err, j->errlen, "cannot read /proc/%d/maps: %s", (int)j->pid, strerror(-rc));
		return -1;
	}
	rc = -1;
	if (inj_resolve_sigreturn(j) < 0)
		goto out;
	if (j->target->agent_loaded) {
		if (inj_resolve_init(j, 0) < 0)
			goto out;
		/* Its dlsym again: a session killed before the agent's init
		 * ever ran leaves it loaded without the target's functions
		 * (0 here is fine once it has them). */
		(void)inj_resolve_dlsym(j);
	} else if (inj_resolve_dlopen(j) < 0) {
		goto out;
	}

	inj_warm_up(j->pid, &j->maps);
	inj_log(j, "symbol and unwind tables loaded");
	t1 = ha_now_ms();
	if (inj_pick_thread(j, &h) < 0)
		goto out;
	j->r->tid = h.tid;
	inj_log(j, "hijacking thread %d after %d tries (%.3f ms)", (int)h.tid, j->r->tries,
	        ha_now_ms() - t1);

	t1 = ha_now_ms();
	if (inj_save_state(j, &h) < 0)
		goto restore;
	inj_test_die_at(j, "saved");
	{
		/* what the calls get, pushed above the frame they return through;
		 * the agent writes its result into the copy of the arguments */
		struct ha_init_args args = *j->o->args;
		static const char room[4096 + 1];   /* zeros: the agent's path, or the delivery's */
		size_t room_len = j->target->agent_loaded ? 0 : inj_deliver_room(j);
		size_t libs_len = j->target->agent_loaded ? 0 : inj_libs_room(j);
		uint64_t room_at = 0, args_at = 0, libs_at = 0;
		args.result = -1;
		args.dlsym_addr = j->dlsym_fn;   /* 0: the agent uses what it found before */
		if (room_len > sizeof room) {
			ha_err(j->err, j->errlen, "agent path too long: %s", j->target->agent_path);
			goto restore;
		}
		if ((room_len && inj_push(j, &h, room, room_len, &room_at) < 0) ||
		    (libs_len && inj_push(j, &h, room, libs_len, &libs_at) < 0) ||
		    inj_push(j, &h, &args, sizeof args, &args_at) < 0 || inj_write_frame(j, &h) < 0)
			goto restore;
		/* glibc < 2.34 without libdl, libpthread: loaded first */
		if (libs_len && inj_load_libs(j, &h, libs_at, args_at) < 0)
			goto restore;
		if (room_len && inj_deliver_agent(j, &h, room_at, room_len) < 0)
			goto restore;
		if (inj_call_init(j, &h, args_at) < 0)
			goto restore;
	}
	if (inj_end_calls(j, &h) < 0)
		goto restore;
	rc = 0;
restore:
	if (inj_release(j, &h, rc != 0) < 0)
		rc = -1;
	inj_log(j, "thread %d stopped for %.3f ms in total", (int)h.tid, ha_now_ms() - t1);
out:
	free(h.fp);
	ha_maps_free(&j->maps);
	return rc;
}

/* The ids of our threads, in v[0..max); their number, or -1 if more. */
static int own_threads(pid_t *v, int max)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) != NULL && n >= 0) {
		long tid = strtol(de->d_name, NULL, 10);
		if (tid <= 0)
			continue;
		if (n == max)
			n = -1;
		else
			v[n++] = (pid_t)tid;
	}
	closedir(d);
	return n;
}

/* The thread that is in after[] and not in before[], if it is the only one. */
static pid_t new_thread(const pid_t *before, int nb, const pid_t *after, int na)
{
	pid_t found = 0;

	for (int i = 0; i < na; i++) {
		int old = 0;
		for (int k = 0; k < nb && !old; k++)
			old = after[i] == before[k];
		if (!old && found)
			return 0;
		if (!old)
			found = after[i];
	}
	return found;
}

/* An injection under way on its helper thread. */
struct ha_injection {
	pthread_t th;
	struct injection j;
	struct ha_inject_opts o;    /* a copy: the caller's may go */
	int rc;                     /* of inject_run */
};

static void *inject_thread(void *arg)
{
	struct ha_injection *in = arg;
	sigset_t set;

	/* the timeouts of our waits should be precise: the default 50 us
	 * of slack would dominate a short remote call */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	inj_sched_prefer(0, 1);     /* if ha_inject_start could not */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	in->j.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	in->rc = inject_run(&in->j);
	if (in->j.sigfd >= 0)
		close(in->j.sigfd);
	in->j.r->t_done = ha_now_ms();
	return NULL;
}

struct ha_injection *ha_inject_start(const struct ha_inject_opts *o, struct ha_inject_result *r,
                                     char *err, size_t errlen)
{
	struct ha_injection *in;
	struct injection *j;
	pthread_attr_t attr;
	sigset_t all, old;
	pid_t before[MAX_OWN_THREADS], after[MAX_OWN_THREADS];
	int rc, nb;

	memset(r, 0, sizeof *r);
	if (err && errlen)
		err[0] = '\0';
	ha_sched_note_default();
	if (!o->target || !o->args || (!o->target->agent_loaded && !o->target->agent_path[0])) {
		ha_err(err, errlen, "ha_inject_start: missing target, agent path or init arguments");
		return NULL;
	}
	in = calloc(1, sizeof *in);
	if (!in) {
		ha_err(err, errlen, "out of memory");
		return NULL;
	}
	in->o = *o;
	j = &in->j;
	j->o = &in->o;
	j->target = o->target;
	j->r = r;
	j->pid = o->target->pid;
	j->err = err;
	j->errlen = errlen;
	j->t0 = ha_now_ms();
	j->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	inj_test_hooks_read(j);
	j->deadline = j->t0 + j->timeout_ms;

	/* All ptrace work runs on a helper thread (see the top of this file).
	 * It inherits our mask: block everything there, so that the caller's
	 * own signal handlers keep running on its own threads, and so that
	 * SIGCHLD stays pending for inj_wait_event. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	nb = own_threads(before, MAX_OWN_THREADS);
	rc = pthread_create(&in->th, &attr, inject_thread, in);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		ha_err(err, errlen, "cannot start the injector thread: %s", strerror(rc));
		free(in);
		return NULL;
	}
	/* The short slice from the helper's very first run: a new thread
	 * with the default one can wait tens of ms for it.  (pthreads do not
	 * tell a thread's id: it is the one new in /proc/self/task.) */
	if (nb >= 0) {
		int na = own_threads(after, MAX_OWN_THREADS);
		pid_t tid = na > 0 ? new_thread(before, nb, after, na) : 0;
		if (tid)
			inj_sched_prefer(tid, 1);
	}
	return in;
}

int ha_inject_wait(struct ha_injection *in)
{
	struct injection *j = &in->j;
	int rc;

	pthread_join(in->th, NULL);
	rc = in->rc;
	ha_elf_cache_clear();
	ha_thread_safe_reset();
	j->r->ms = elapsed(j);
	inj_log(j, "injection %s in %.3f ms", rc == 0 ? "done" : "failed", j->r->ms);
	free(in);
	return rc;
}
