/* inject_pick.c -- choosing the thread to hijack.
 *
 * Contract: inj_pick_thread returns with exactly one thread of the target
 * stopped under our ptrace, at a safe point (its frames hold no lock that
 * dlopen needs, see inject_safe.c; its stack is a real thread stack with
 * room for our calls), its registers in h->regs -- or -1 with j->err set.
 * Every other thread it seized ("probes") is let go the moment it stops,
 * with any signal it was to get; the injector's waits keep doing that
 * after the choice (probe_event, as j->other_event).  A group
 * stop (job control) during the search is a refusal: the thread stays in
 * it.  Threads blocked in a system call are tried first, then running
 * ones, then those in uninterruptible sleep; the search goes round until
 * j->deadline. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "proc.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define STACK_MIN_ROOM   (64 << 10) /* what dlopen may need below rsp */
#define STOP_TIMEOUT_MS  200        /* a thread that does not stop by then is skipped */
#define QUIET_PROBES     2          /* of MAX_PROBES, threads blocked in a system call */

enum { TRY_OK, TRY_NEXT, TRY_FATAL };

struct cand {
	pid_t tid;
	int rank;                /* lower is tried first */
};

/* How promising a thread is: 0 asleep in the kernel, i.e. blocked in a
 * system call (it holds no user-space lock unless its stack says so, and
 * stops at once), 1 stopped or traced, 2 running, 3 in uninterruptible
 * sleep (may not stop), -1 dead. */
static int thread_rank(pid_t pid, pid_t tid)
{
	char state;
	if (ha_proc_stat(pid, tid, &state, NULL) < 0)
		return -1;
	switch (state) {
	case 'Z': case 'X': case 'x':
		return -1;
	case 'D':
		return 3;
	case 'R':
		return 2;
	case 'S': case 'I':
		return 0;
	default:
		return 1;
	}
}

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->tid - y->tid;
}

/* The target's live threads, best candidates first.  0 or -errno. */
static int list_threads(pid_t pid, struct cand **out, size_t *n)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	size_t cap = 0;
	struct cand *v = NULL;

	*n = 0;
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		int rank;
		if (*end || tid <= 0)
			continue;
		rank = thread_rank(pid, (pid_t)tid);
		if (rank < 0)
			continue;
		struct cand *nv = ha_grow(v, &cap, *n + 1, sizeof *v, 64);
		if (!nv) {
			closedir(d);
			free(v);
			return -ENOMEM;
		}
		v = nv;
		v[*n].tid = (pid_t)tid;
		v[*n].rank = rank;
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof *v, cmp_cand);
	*out = v;
	return 0;
}

/* Is the stack under rsp a real thread stack we may use for dlopen?  The
 * main thread's [stack] grows on demand (but only through the thread's own
 * faults, not through our writes to /proc/PID/mem, so the data we push must
 * fit in what is mapped); a pthread stack is an anonymous mapping directly
 * above its PROT_NONE guard.  A stack malloc'ed by a coroutine library has
 * neither, and running dlopen there could overflow into the heap: refuse. */
static int stack_usable(const struct injection *j, uint64_t rsp, char *why, size_t whylen)
{
	const struct ha_map *m = ha_maps_find_addr(&j->maps, rsp - 1);
	uint64_t room;

	if (!m || !(m->prot & PROT_WRITE)) {
		snprintf(why, whylen, "stack pointer 0x%llx not in a writable mapping",
		         (unsigned long long)rsp);
		return 0;
	}
	room = rsp - m->start;
	if (strcmp(m->path, "[stack]") == 0) {
		if (room >= PUSH_ROOM)
			return 1;
	} else if (room >= STACK_MIN_ROOM) {
		if (m > j->maps.v && m[-1].end == m->start && m[-1].prot == 0)
			return 1;
		snprintf(why, whylen, "on a stack without a guard page (coroutine?)");
		return 0;
	}
	snprintf(why, whylen, "too little stack below rsp (%llu bytes)", (unsigned long long)room);
	return 0;
}

/*
 * Probes.  A running thread stops for PTRACE_INTERRUPT only when it next
 * gets a CPU.  With more busy threads than cores that can be a whole round
 * of the scheduler -- tens of ms for any one thread -- while of several
 * interrupted at once, the one on a CPU stops at once and the others follow
 * one per time slice.  So all running candidates (and a couple of blocked
 * ones, which stop at once anyway) are seized and interrupted together and
 * handled in the order they stop: the first at a safe point is the one we
 * hijack.  Each of the others is let go as soon as it stops -- by every
 * wait of the injection, calls included, so that none stays stopped holding
 * a lock that the hijacked thread's dlopen needs -- and those still on
 * their way to the stop when we finish are released by the kernel when the
 * helper thread exits (it cancels their pending interrupt).
 *
 * A probe caught inside malloc & co. is let go and tried again in a later
 * round.  (It used to be run to the return from the outermost allocator
 * frame with a hardware breakpoint there; but a ptrace breakpoint outlives
 * its tracer -- x86 drops it only at exec and exit -- so heapattach killed
 * at that moment would leave the thread to die of SIGTRAP.  Nothing of
 * ours that a thread may meet without us may be a trap; see
 * inject_frame.c.)
 */

/* Stopped probe p: read its registers and decide.  1 safe (registers in
 * *regs), 0 unsafe, -1 unreadable. */
static int probe_inspect(struct injection *j, struct probe *p, struct user_regs_struct *regs)
{
	double ts = ha_now_ms();
	char why[256];
	int rc;

	if (PT(j, PTRACE_GETREGS, p->tid, 0, regs) != PT_OK) {
		snprintf(why, sizeof why, "cannot read its registers: %s", j->pt_err);
		rc = -1;
	} else if (!stack_usable(j, regs->rsp, why, sizeof why)) {
		rc = 0;
	} else {
		struct ha_safe_exit ex;  /* where it would be safe: not used */
		rc = ha_thread_is_safe_ex(j->pid, p->tid, &j->maps, &ex, why, sizeof why);
	}
	inj_log(j, "thread %d: %s (inspected in %.3f ms)", (int)p->tid, rc == 1 ? "safe" : why,
	        ha_now_ms() - ts);
	if (rc != 1)
		snprintf(j->last, sizeof j->last, "thread %d %s", (int)p->tid, why);
	return rc;
}

/* Let probe p (stopped) go, delivering sig, and forget it.  Should the
 * detach fail, nothing better can be done: a thread that is gone needs
 * nothing, and the kernel lets go of any other when the helper exits. */
static void probe_release(struct injection *j, struct probe *p, int sig)
{
	if (PT(j, PTRACE_DETACH, p->tid, 0, sig) != PT_OK)
		inj_log(j, "note: cannot let thread %d go: %s", (int)p->tid, j->pt_err);
	p->state = PR_FREE;
	j->nlive--;
}

/* A probe that has exited: nothing to put back. */
static void probe_forget(struct injection *j, struct probe *p)
{
	inj_log(j, "thread %d exited", (int)p->tid);
	p->state = PR_FREE;
	j->nlive--;
}

/* Stopped probe p is at a safe point: it is the one. */
static void probe_choose(struct injection *j, struct probe *p, const struct user_regs_struct *regs)
{
	j->chosen = p->tid;
	j->chosen_regs = *regs;
	p->state = PR_FREE;     /* the hijack owns it from here */
	j->nlive--;
}

static int tried_before(const struct injection *j, pid_t tid)
{
	for (size_t i = 0; i < j->ntried; i++)
		if (j->tried[i] == tid)
			return 1;
	return 0;
}

/* Probe p, stopped, is of no use now: if it was blocked (it may well be
 * blocked there for long), try the other blocked threads first. */
static void probe_tried(struct injection *j, const struct probe *p)
{
	if (p->rank != 2 && j->ntried < MAX_TRIED && !tried_before(j, p->tid))
		j->tried[j->ntried++] = p->tid;
}

/* Probe p is stopped at its interrupt stop: use it or let it go. */
static void probe_judge(struct injection *j, struct probe *p)
{
	struct user_regs_struct regs;

	if (j->chosen || j->fatal) {
		probe_release(j, p, 0);
		return;
	}
	if (probe_inspect(j, p, &regs) == 1) {
		probe_choose(j, p, &regs);
		return;
	}
	probe_tried(j, p);
	probe_release(j, p, 0);
}

static struct probe *probe_find(struct injection *j, pid_t tid)
{
	for (size_t i = 0; i < MAX_PROBES; i++)
		if (j->probe[i].state != PR_FREE && j->probe[i].tid == tid)
			return &j->probe[i];
	return NULL;
}

/* Let stopped probe p run on to its interrupt stop, delivering sig.  Gone
 * (killed meanwhile): its exit comes next.  Should it stay stopped for any
 * other reason, let it go rather than keep it stopped (it might hold a lock
 * the hijacked thread needs). */
static void probe_resume(struct injection *j, struct probe *p, int sig)
{
	if (PT(j, PTRACE_CONT, p->tid, 0, sig) == PT_FAILED) {
		inj_log(j, "note: cannot resume thread %d: %s", (int)p->tid, j->pt_err);
		probe_release(j, p, sig);
	}
}

/* A status change of thread tid reported by waitpid, when it is not the
 * one being waited for: one of our probes (j->other_event). */
static void probe_event(struct injection *j, pid_t tid, int st)
{
	struct probe *p = probe_find(j, tid);
	int event = st >> 16, sig = WSTOPSIG(st);

	if (!p) {
		inj_log(j, "note: unexpected status 0x%x of thread %d", st, (int)tid);
		return;
	}
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		probe_forget(j, p);
		return;
	}
	if (!WIFSTOPPED(st))
		return;
	if (event == PTRACE_EVENT_STOP && sig != SIGTRAP) {
		/* a group stop: the process is being stopped (job control);
		 * the thread stays in it when let go */
		if (!j->chosen && !j->fatal) {
			ha_err(j->err, j->errlen, "process %d was stopped (job control) while "
			       "attaching", (int)j->pid);
			j->fatal = 1;
		}
		probe_release(j, p, 0);
		return;
	}
	if (event == PTRACE_EVENT_STOP) {       /* our interrupt */
		probe_judge(j, p);
		return;
	}
	if (event != 0) {                       /* no other events asked for */
		probe_resume(j, p, 0);
		return;
	}
	/* A signal for the program (signal-delivery-stop): deliver it as if
	 * we were not there.  A probe we no longer need gets it with its
	 * release; otherwise its interrupt stop comes later. */
	if (j->chosen || j->fatal)
		probe_release(j, p, sig);
	else
		probe_resume(j, p, sig);
}

/* Probes still expected to stop soon: interrupted less than STOP_TIMEOUT_MS
 * ago.  The others (D state, vfork parent...) are
 * let go if they ever stop, and released by the kernel otherwise. */
static int probes_waiting(struct injection *j)
{
	double now = ha_now_ms();
	int n = 0;

	for (size_t i = 0; i < MAX_PROBES; i++) {
		struct probe *p = &j->probe[i];
		if (p->state == PR_WAIT && now < p->since + STOP_TIMEOUT_MS)
			n++;
		else if (p->state == PR_WAIT && !p->late) {
			p->late = 1;
			snprintf(j->last, sizeof j->last, "thread %d did not stop (uninterruptible "
			         "sleep?)", (int)p->tid);
			inj_log(j, "%s", j->last);
		}
	}
	return n;
}

/* Seize and interrupt thread tid (of that rank) as a new probe.  TRY_OK,
 * TRY_NEXT (gone), TRY_FATAL (j->err set). */
static int probe_add(struct injection *j, pid_t tid, int rank)
{
	struct probe *p = NULL;

	for (size_t i = 0; i < MAX_PROBES && !p; i++)
		if (j->probe[i].state == PR_FREE)
			p = &j->probe[i];
	if (!p)
		return TRY_NEXT;
	if (PT(j, PTRACE_SEIZE, tid, 0, 0) != PT_OK) {
		int e = errno;
		char tracer[32];
		if (e == ESRCH)
			return TRY_NEXT;
		if (e == EPERM && ha_proc_status_field(j->pid, tid, "TracerPid", tracer,
		                                       sizeof tracer) == 0 && strtol(tracer, NULL, 10) != 0)
			ha_err(j->err, j->errlen, "cannot ptrace thread %d: already traced by PID %d",
			       (int)tid, (int)strtol(tracer, NULL, 10));
		else
			ha_err(j->err, j->errlen, "cannot ptrace thread %d: %s%s", (int)tid, strerror(e),
			       e == EPERM ? " (other user, or kernel.yama.ptrace_scope?)" : "");
		return TRY_FATAL;
	}
	j->r->tries++;
	if (PT(j, PTRACE_INTERRUPT, tid, 0, 0) != PT_OK) {
		/* not stopped, so it cannot be detached: the kernel releases
		 * it when the helper thread exits */
		inj_log(j, "cannot interrupt thread %d: %s", (int)tid, j->pt_err);
		return TRY_NEXT;
	}
	memset(p, 0, sizeof *p);
	p->tid = tid;
	p->rank = rank;
	p->state = PR_WAIT;
	p->since = ha_now_ms();
	j->nlive++;
	return TRY_OK;
}

/* Probe candidate c unless it is a probe already: 1 added (and counted in
 * *added), 0 not, -1 fatal (j->err set). */
static int batch_add(struct injection *j, const struct cand *c, int *added)
{
	int rc;

	if (j->nlive >= MAX_PROBES || probe_find(j, c->tid))
		return 0;
	rc = probe_add(j, c->tid, c->rank);
	if (rc == TRY_FATAL)
		return -1;
	*added += rc == TRY_OK;
	return rc == TRY_OK;
}

/* Seize a batch of the candidates c (best first): a couple of threads
 * blocked in a system call (they stop at once), not tried yet; every running
 * thread (the one on a CPU stops first); a thread in uninterruptible sleep
 * only when there is nothing else.  Threads probed in an earlier round and
 * not stopped yet are not probed again.  The number added, or -1 (j->err
 * set). */
static int probe_batch(struct injection *j, const struct cand *c, size_t n)
{
	int added = 0, quiet = 0, rc;

	for (size_t i = 0; i < n && quiet < QUIET_PROBES; i++) {
		if (c[i].rank > 1 || tried_before(j, c[i].tid))
			continue;
		if ((rc = batch_add(j, &c[i], &added)) < 0)
			return -1;
		quiet += rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (c[i].rank == 2 && batch_add(j, &c[i], &added) < 0)
			return -1;
	}
	for (size_t i = 0; i < n && !added; i++) {
		if (c[i].rank != 3 || tried_before(j, c[i].tid))
			continue;
		if (batch_add(j, &c[i], &added) < 0)
			return -1;
	}
	if (!added)
		j->ntried = 0;  /* all tried: start over */
	return added;
}

/* Handle probe stops until one is chosen, none is expected any more, or the
 * search deadline passes. */
static void probes_run(struct injection *j)
{
	int st, rc;

	while (!j->chosen && !j->fatal) {
		rc = inj_drain_events(j, 0, &st);
		if (rc < 0 && rc != -ECHILD)
			break;
		if (j->chosen || j->fatal || !probes_waiting(j) || ha_now_ms() >= j->deadline)
			break;
		inj_wait_event(j, j->deadline);
	}
}

/* Let time pass until `until` (at most the search deadline), releasing
 * late probes as they stop. */
static void probes_idle(struct injection *j, double until)
{
	int st;

	if (until > j->deadline)
		until = j->deadline;
	for (;;) {
		int rc = inj_drain_events(j, 0, &st);
		if ((rc < 0 && rc != -ECHILD) || ha_now_ms() >= until)
			return;
		inj_wait_event(j, until);
	}
}

/* Go round the threads until one is stopped at a safe point; it is left
 * stopped, its registers in h->regs. */
int inj_pick_thread(struct injection *j, struct hijack *h)
{
	long pause_us = 500;

	snprintf(j->last, sizeof j->last, "no thread tried");
	j->other_event = probe_event;   /* from now on, for every wait */
	for (j->round = 1; ha_now_ms() < j->deadline; j->round++) {
		struct cand *c = NULL;
		size_t n = 0;
		double tl = ha_now_ms();
		int rc, added;

		/* fresh maps each round: thread stacks and modules come and go
		 * (those of the first round were read just before; each read
		 * waits for the target's mmap_lock) */
		rc = 0;
		if (j->round > 1) {
			ha_maps_free(&j->maps);
			rc = ha_maps_read(j->pid, &j->maps);
		}
		if (rc == 0)
			rc = list_threads(j->pid, &c, &n);
		if (rc < 0) {
			ha_err(j->err, j->errlen, "process %d: cannot list threads or maps: %s",
			       (int)j->pid, rc == -ENOENT || rc == -ESRCH ? "process exited" : strerror(-rc));
			return -1;
		}
		if (n == 0) {
			free(c);
			ha_err(j->err, j->errlen, "process %d has no live thread (exited?)", (int)j->pid);
			return -1;
		}
		added = probe_batch(j, c, n);
		free(c);
		if (added < 0)
			return -1;
		inj_log(j, "%zu threads listed, %d probed in %.3f ms", n, added, ha_now_ms() - tl);
		probes_run(j);
		if (j->fatal)
			return -1;
		if (j->chosen) {
			h->tid = j->chosen;
			h->regs = j->chosen_regs;
			inj_hij_set(h, HIJ_STOPPED);
			return 0;
		}
		/* Everyone was busy: give the threads time to leave the
		 * allocator or loader before the next round. */
		probes_idle(j, ha_now_ms() + pause_us / 1e3);
		if (pause_us < 20000)
			pause_us *= 2;
	}
	ha_err(j->err, j->errlen, "no thread reached a safe point within %d ms (last: %s)",
	       j->timeout_ms, j->last);
	return -1;
}
