/* inject.c -- load the agent into a running process with ptrace and call its
 * init on one hijacked thread; restore that thread exactly.
 *
 * Outline (x86_64, glibc):
 *   1. the target was checked by ha_target_check (target.c) before, and
 *      what inject needs of it comes from there (struct ha_target); here
 *      only what can have changed since is checked again (check_moment);
 *   2. find dlopen (libc >= 2.34, libdl, or __libc_dlopen_mode) and dlerror
 *      in the target's own libc, from the ELF file on disk;
 *   3. pick a thread: PTRACE_SEIZE + PTRACE_INTERRUPT the candidates
 *      (running threads all at once, a couple of threads blocked in a
 *      syscall), take their stops as they come (with a timeout), unwind
 *      each, and use the first whose frames hold no lock that dlopen needs
 *      (see inject_safe.c); every other one is let go the moment it stops.
 *      A thread caught inside malloc & co. may be run to the return from
 *      the outermost such frame with a per-thread hardware breakpoint, then
 *      checked again.  We keep going round until the time budget is spent;
 *   4. save its registers, FP/vector state and signal mask, block
 *      (asynchronous) signals, and make calls on its stack: dlopen(agent),
 *      then heapattach_agent_init(&args).  A call "returns" to address 0:
 *      the SIGSEGV stop with rip == 0 is the end of the call;
 *   5. put everything back and detach.  The kernel then restarts the system
 *      call the thread was in, as after any signal without a handler.
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
 * tracee sends), asks for short time slices (it then runs as soon as its
 * event comes), spends as little CPU as it can while threads are stopped
 * (symbol and unwind tables are loaded before), and interrupts many threads
 * at once rather than waiting for each in turn (see "Probes").  The caller
 * can use ha_inject_start/ha_inject_wait to do other work meanwhile.
 *
 * Nothing of the target is trusted: symbol addresses come from the ELF files
 * on disk, strings read back are bounded, and every stop we did not cause
 * is handled as the kernel would have without us (signals delivered, group
 * stops kept). */
#define _GNU_SOURCE
#include "inject.h"
#include "ha_sched.h"
#include "elfsym.h"
#include "inject_safe.h"
#include "proc.h"
#include "procmaps.h"
#include "target.h"
#include "util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK_GAP        256        /* below the saved rsp: red zone + margin */
#define STACK_MIN_ROOM   (64 << 10) /* what dlopen may need below rsp */
#define PUSH_ROOM        (16 << 10) /* what we write below rsp ourselves, at most */
#define STOP_TIMEOUT_MS  200        /* a thread that does not stop by then is skipped */
#define EVENT_POLL_MS    5          /* longest sleep between two looks at our tracees */
#define DEFAULT_TIMEOUT_MS 5000     /* when o->timeout_ms <= 0 */
#define CALL_MIN_MS      2000       /* a remote call always gets at least this */
#define ABORT_WAIT_MS    1000       /* waiting for a timed-out call to stop */
#define XSTATE_MAX       (64 << 10) /* any XSAVE layout (AMX is ~11 KiB) */
#define FXSAVE_SIZE      512
#define MAX_PROBES       64         /* threads seized at once, at most */
#define QUIET_PROBES     2          /* of those, threads blocked in a system call */
#define MAX_TRIED        256        /* blocked threads found unsafe, remembered */
#define MAX_OWN_THREADS  64         /* see ha_inject_start */
#define RUN_TO_EXIT_MS   250        /* to leave malloc & co. */
#define MAX_HOPS         2          /* run-to-exit attempts per thread */
#define BKPT_WAIT_ROUNDS 10         /* x ABORT_WAIT_MS to stop a thread with a breakpoint */
#define DR_OFFSET(i)     (offsetof(struct user, u_debugreg) + (i) * sizeof(long))
#define RTLD_DLOPEN_FLAG 0x80000000 /* __RTLD_DLOPEN, wanted by __libc_dlopen_mode */
#define X86_EFLAGS_TF    0x100
#define X86_EFLAGS_DF    0x400

/* Signals the kernel forces on a fault: if one of them is blocked when the
 * fault happens, the kernel unblocks it AND resets the process's handler to
 * SIG_DFL (force_sig_info_to_task).  So they stay unblocked during our calls;
 * ptrace reports them to us before any handler could run. */
#define SYNC_SIGNALS ((1ULL << (SIGSEGV - 1)) | (1ULL << (SIGBUS - 1)) | \
                      (1ULL << (SIGILL - 1)) | (1ULL << (SIGFPE - 1)) | \
                      (1ULL << (SIGTRAP - 1)) | (1ULL << (SIGSYS - 1)))

/* A thread seized while looking for one to hijack (see "choosing a thread"). */
enum { PR_FREE, PR_WAIT, PR_ARMED };

struct probe {
	pid_t tid;
	int state;               /* PR_WAIT: interrupted, its stop not seen yet;
	                          * PR_ARMED: running to ex with a breakpoint */
	int release;             /* armed: interrupted to be let go */
	int late;                /* did not stop within STOP_TIMEOUT_MS */
	int hops;                /* times armed */
	int rank;                /* see thread_rank */
	double since;            /* interrupted / armed at */
	double until;            /* armed: give up then */
	struct ha_safe_exit ex;  /* where it is out of the allocator */
	long dr0, dr6, dr7;      /* armed: debug registers to put back */
};

/* One injection. */
struct target {
	const struct ha_inject_opts *o;
	const struct ha_target *target;  /* o->target */
	struct ha_inject_result *r;
	pid_t pid;               /* target->pid */
	char *err;
	size_t errlen;
	double t0;
	int timeout_ms;          /* o->timeout_ms, or the default */
	double deadline;         /* end of the thread search */
	struct ha_maps maps;
	uint64_t dlopen_fn;      /* dlopen or __libc_dlopen_mode in the target */
	uint64_t dlerror_fn;     /* 0 if none */
	const char *dlopen_name;
	int dlopen_flags;
	uint64_t init_fn;        /* heapattach_agent_init, once known */
	struct probe probe[MAX_PROBES];
	int nlive;               /* probes not PR_FREE */
	struct probe *armed;     /* the one PR_ARMED probe, if any */
	pid_t chosen;            /* the probe found at a safe point */
	struct user_regs_struct chosen_regs;
	int fatal;               /* stop looking (t->err set) */
	char last[300];          /* why the last probe was not used */
	int round;               /* of the thread search */
	pid_t tried[MAX_TRIED];  /* blocked threads found unsafe: try others first */
	size_t ntried;
	int sigfd;               /* signalfd for SIGCHLD, or -1 (see wait_event) */
	int watching;            /* o->watch/o->step apply (the init call runs) */
};

/* The hijacked thread and what must be put back. */
struct hijack {
	pid_t tid;
	int saved;               /* regs/fp/mask below are valid: restore */
	struct user_regs_struct regs;
	unsigned char *fp;
	size_t fplen;
	int fptype;              /* NT_X86_XSTATE or NT_PRFPREG */
	uint64_t sigmask;
	uint64_t sp;             /* pushed data grows down from here */
	uint64_t sched_old;      /* its time slice, while sched_set */
	int sched_set;           /* hijack_sched changed it */
};

/* glibc's ptrace() reads addr and data as void * varargs: pass them as
 * such (a plain int argument would leave the upper half undefined). */
#define PT(req, tid, addr, data) \
	ptrace((req), (tid), (void *)(uintptr_t)(addr), (void *)(uintptr_t)(data))

enum { TRY_OK, TRY_NEXT, TRY_FATAL };

/* ------------------------------------------------------------------ */
/* small helpers                                                       */
/* ------------------------------------------------------------------ */

static void vlog(const struct target *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void vlog(const struct target *t, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!t->o->verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* one write per line; the time since ha_inject_start, and the CPU
	 * time of this thread (on a busy machine, what it has used decides
	 * how soon the scheduler lets it run again) */
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	fprintf(stderr, "heapattach: [%.3f, cpu %.3f] %s\n", ha_now_ms() - t->t0,
	        cpu.tv_sec * 1e3 + cpu.tv_nsec / 1e6, line);
}

static double elapsed(const struct target *t)
{
	return ha_now_ms() - t->t0;
}

/* Read a NUL-terminated string of at most len-1 bytes from the target, page
 * by page so that a string near the end of a mapping still reads.  0 or
 * -errno; buf is always terminated. */
static int remote_read_string(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;

	buf[0] = '\0';
	while (got + 1 < len) {
		size_t chunk = 4096 - ((addr + got) & 4095);
		int rc;
		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		rc = ha_remote_read(pid, addr + got, buf + got, chunk);
		if (rc < 0) {
			buf[got] = '\0';
			return got ? 0 : rc;
		}
		if (memchr(buf + got, '\0', chunk))
			return 0;
		got += chunk;
	}
	buf[got] = '\0';
	return 0;
}

/* ------------------------------------------------------------------ */
/* waiting for ptrace events                                           */
/* ------------------------------------------------------------------ */

static void probe_event(struct target *t, pid_t tid, int st);
static void probes_expire(struct target *t);
static double probes_next_expiry(const struct target *t, double limit);

/* Sleep until a tracee changes state or until `until`.  Every ptrace stop
 * and exit of a tracee sends SIGCHLD to the tracer's process; the helper
 * thread blocks it (as heapattach's other threads do), so it stays pending
 * for its signalfd (or sigtimedwait) and wakes us at once -- no polling
 * period on the path of each stop.  Should another thread of the caller
 * take the signal, the wait still ends within EVENT_POLL_MS.  While the
 * init call runs, the caller's descriptor (o->watch) wakes us too, and its
 * work (o->step) is done here. */
static void wait_event(struct target *t, double until)
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
	if (t->sigfd >= 0) {
		struct pollfd p[2] = { { .fd = t->sigfd, .events = POLLIN },
		                       { .fd = -1, .events = POLLIN } };
		struct signalfd_siginfo si;
		if (t->watching)
			p[1].fd = t->o->watch(t->o->ctx);
		if (ppoll(p, 2, &ts, NULL) <= 0)
			return;
		if (p[0].revents)
			while (read(t->sigfd, &si, sizeof si) > 0)
				;
		if (p[1].revents && t->watching) {
			vlog(t, "the agent is talking to us: handshake step");
			t->o->step(t->o->ctx);
		}
		return;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigtimedwait(&set, NULL, &ts);
}

/* Collect every pending status change of our tracees.  The one of `tid` is
 * returned in *st (1); the others go to probe_event.  0 when nothing is
 * pending, -errno (-ECHILD: we trace nobody).  __WNOTHREAD: only the
 * tracees of this (helper) thread, never a child of the caller. */
static int drain_events(struct target *t, pid_t tid, int *st)
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
		probe_event(t, w, s);
	}
}

/* The next status change of thread tid, meanwhile handling those of the
 * other threads we probe (so that none stays stopped while we wait).
 * 1 with the status in *st, 0 when the deadline passed, -errno. */
static int wait_tid(struct target *t, pid_t tid, int *st, double deadline)
{
	for (;;) {
		int rc = drain_events(t, tid, st);
		if (rc != 0)
			return rc;
		probes_expire(t);
		if (ha_now_ms() >= deadline)
			return 0;
		wait_event(t, probes_next_expiry(t, deadline));
	}
}

/* ------------------------------------------------------------------ */
/* checks of the moment and symbol resolution                          */
/* ------------------------------------------------------------------ */

/* The checks of the moment.  Everything that can be known about the
 * target without touching it was checked by ha_target_check (target.c)
 * before heapattach opened its database and socket; its answer, o->target,
 * is what the injection goes by.  What is checked again here is what the
 * target itself can change at any time, in between as well: it may have
 * exited, or been stopped by job control (a stopped process would not run
 * our calls; a group stop that begins later, during the thread search, is
 * seen there).  A tracer that came in between is seen by PTRACE_SEIZE
 * itself (probe_add), the only moment that is never too early. */
static int check_moment(struct target *t)
{
	char state[16];

	if (kill(t->pid, 0) < 0 && errno == ESRCH) {
		ha_err(t->err, t->errlen, "no such process: %d", (int)t->pid);
		return -1;
	}
	if (ha_proc_status_field(t->pid, 0, "State", state, sizeof state) == 0 &&
	    state[0] == 'T') {
		ha_err(t->err, t->errlen, "process %d is stopped (job control); "
		       "resume it with kill -CONT %d first", (int)t->pid, (int)t->pid);
		return -1;
	}
	return 0;
}

/* Find how to call dlopen in the target: libc >= 2.34 exports dlopen and
 * dlerror; before that they live in libdl (if loaded) and libc only has
 * __libc_dlopen_mode, which wants __RTLD_DLOPEN and has no dlerror. */
static int resolve_dlopen(struct target *t)
{
	const struct ha_map *libc, *libdl;
	int rc;

	libc = ha_maps_find_module(&t->maps, "libc.so.6");
	if (!libc)
		libc = ha_maps_find_module(&t->maps, "libc-");
	if (!libc) {
		ha_err(t->err, t->errlen, "no libc found in process %d "
		       "(statically linked, or not a glibc program?)", (int)t->pid);
		return -1;
	}
	t->dlopen_flags = RTLD_NOW;
	t->dlopen_name = "dlopen";
	rc = ha_elf_symbol(t->pid, libc, "dlopen", &t->dlopen_fn);
	if (rc == 0) {
		if (ha_elf_symbol(t->pid, libc, "dlerror", &t->dlerror_fn) < 0)
			t->dlerror_fn = 0;
	} else if (rc == -ENOENT) {
		libdl = ha_maps_find_module(&t->maps, "libdl.so");
		if (libdl && ha_elf_symbol(t->pid, libdl, "dlopen", &t->dlopen_fn) == 0) {
			if (ha_elf_symbol(t->pid, libdl, "dlerror", &t->dlerror_fn) < 0)
				t->dlerror_fn = 0;
		} else if (ha_elf_symbol(t->pid, libc, "__libc_dlopen_mode", &t->dlopen_fn) == 0) {
			t->dlopen_name = "__libc_dlopen_mode";
			t->dlopen_flags = RTLD_NOW | (int)RTLD_DLOPEN_FLAG;
			t->dlerror_fn = 0;
		} else {
			ha_err(t->err, t->errlen, "libc in target (%s) has no dlopen or "
			       "__libc_dlopen_mode (static binary?)", libc->path);
			return -1;
		}
	} else {
		ha_err(t->err, t->errlen, "cannot read the symbols of %s in process %d: %s",
		       libc->path, (int)t->pid, strerror(-rc));
		return -1;
	}
	vlog(t, "libc %s at 0x%llx: %s at 0x%llx, dlerror at 0x%llx", libc->path,
	     (unsigned long long)libc->start, t->dlopen_name,
	     (unsigned long long)t->dlopen_fn, (unsigned long long)t->dlerror_fn);
	return 0;
}

/* The agent module in the current maps.  Through the dlopen handle when we
 * have one (glibc's handle is the struct link_map, whose first field l_addr
 * is the load bias: the offset-0 mapping starts there for a normal .so);
 * otherwise by name: the basename of agent_path, then the agent's soname. */
static const struct ha_map *find_agent(struct target *t, uint64_t handle)
{
	const struct ha_map *m;
	uint64_t l_addr;

	if (handle && ha_remote_read(t->pid, handle, &l_addr, sizeof l_addr) == 0) {
		for (size_t i = 0; i < t->maps.n; i++) {
			m = &t->maps.v[i];
			if (m->start == l_addr && m->offset == 0 && m->path[0] == '/')
				return m;
		}
	}
	m = NULL;
	if (*ha_base_name(t->target->agent_path))
		m = ha_maps_find_module(&t->maps, ha_base_name(t->target->agent_path));
	return m ? m : ha_maps_find_module(&t->maps, HA_AGENT_SONAME);
}

static int resolve_init(struct target *t, uint64_t handle)
{
	const struct ha_map *agent;
	int rc;

	if (handle) {   /* dlopen just mapped it: the maps we have predate it */
		ha_maps_free(&t->maps);
		rc = ha_maps_read(t->pid, &t->maps);
		if (rc < 0) {
			ha_err(t->err, t->errlen, "cannot read /proc/%d/maps: %s", (int)t->pid,
			       strerror(-rc));
			return -1;
		}
	}
	agent = find_agent(t, handle);
	if (!agent) {
		ha_err(t->err, t->errlen, "the agent (%s) is not mapped in process %d",
		       t->target->agent_path[0] ? t->target->agent_path : HA_AGENT_SONAME,
		       (int)t->pid);
		return -1;
	}
	rc = ha_elf_symbol(t->pid, agent, HA_AGENT_INIT_SYMBOL, &t->init_fn);
	if (rc < 0) {
		ha_err(t->err, t->errlen, "cannot find %s in %s: %s", HA_AGENT_INIT_SYMBOL,
		       agent->path, rc == -ENOENT ? "no such symbol" : strerror(-rc));
		return -1;
	}
	vlog(t, "agent %s at 0x%llx, init at 0x%llx", agent->path,
	     (unsigned long long)agent->start, (unsigned long long)t->init_fn);
	return 0;
}

/* Load what the thread inspections will need most -- the symbol tables and
 * unwind tables of libc, libstdc++ and the executable -- while no thread
 * is stopped (ha_inject_prepare: even before the target is checked; files
 * and /proc are only read).  Failures do not matter here. */
static void warm_up(pid_t pid, const struct ha_maps *maps)
{
	static const char *const common[] = { "libc.so.6", "libc-", "libstdc++.so" };
	const char *names[4];
	char path[64], exe[4096];
	const struct ha_map *m;
	uint64_t addr;
	size_t n = 0;
	ssize_t len;

	for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) {
		m = ha_maps_find_module(maps, common[i]);
		if (m) {
			ha_elf_symbol(pid, m, "malloc", &addr);
			names[n++] = common[i];
		}
	}
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	len = readlink(path, exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = '\0';
		m = ha_maps_find_module(maps, ha_base_name(exe));
		if (m) {
			ha_elf_symbol(pid, m, "main", &addr);
			names[n++] = ha_base_name(exe);
		}
	}
	ha_thread_safe_warm(pid, maps, names, n);
}

/* ------------------------------------------------------------------ */
/* choosing a thread                                                   */
/* ------------------------------------------------------------------ */

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
		if (*n == cap) {
			struct cand *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof *v);
			if (!nv) {
				closedir(d);
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
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
static int stack_usable(const struct target *t, uint64_t rsp, char *why, size_t whylen)
{
	const struct ha_map *m = ha_maps_find_addr(&t->maps, rsp - 1);
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
		if (m > t->maps.v && m[-1].end == m->start && m[-1].prot == 0)
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
 * A probe caught inside malloc & co. can be run to the return from the
 * outermost such frame with a hardware breakpoint (debug registers are per
 * thread; an int3 in the shared code would trap every thread).  That is the
 * last resort, when no other probe is still on its way: the next stop is
 * usually sooner, and the first debug register write for a thread can take
 * ms (the kernel sets up a perf event).  One probe at a time, since each
 * must be stopped again to remove the breakpoint before it may be let go
 * (an untraced thread hitting it would die of SIGTRAP).
 */

/* Stopped probe p: read its registers and decide.  1 safe (registers in
 * *regs), 0 unsafe (p->ex: where it will be safe, if known), -1 unreadable.
 * quick: a first frame in the allocator is enough to say no. */
static int probe_inspect(struct target *t, struct probe *p, struct user_regs_struct *regs,
                         int quick)
{
	double ts = ha_now_ms();
	char why[256];
	int rc;

	p->ex.ip = p->ex.sp = 0;
	if (PT(PTRACE_GETREGS, p->tid, 0, regs) < 0) {
		snprintf(why, sizeof why, "cannot read its registers: %s", strerror(errno));
		rc = -1;
	} else if (!stack_usable(t, regs->rsp, why, sizeof why)) {
		rc = 0;
	} else if (quick && ha_addr_is_safe(t->pid, &t->maps, regs->rip, why, sizeof why) == 0) {
		rc = 0;
	} else {
		rc = ha_thread_is_safe_ex(t->pid, p->tid, &t->maps, &p->ex, why, sizeof why);
		if (rc != 0)
			p->ex.ip = p->ex.sp = 0;
	}
	vlog(t, "thread %d: %s (inspected in %.3f ms)", (int)p->tid, rc == 1 ? "safe" : why,
	     ha_now_ms() - ts);
	if (rc != 1)
		snprintf(t->last, sizeof t->last, "thread %d %s", (int)p->tid, why);
	return rc;
}

static int set_dr(pid_t tid, int i, unsigned long v)
{
	return (int)PT(PTRACE_POKEUSER, tid, DR_OFFSET(i), v);
}

/* Put back the debug registers of an armed probe (stopped). */
static void probe_disarm(struct target *t, struct probe *p)
{
	set_dr(p->tid, 7, (unsigned long)p->dr7);
	set_dr(p->tid, 0, (unsigned long)p->dr0);
	set_dr(p->tid, 6, (unsigned long)p->dr6);
	p->state = PR_WAIT;
	t->armed = NULL;
}

/* Let probe p (stopped) go, delivering sig, and forget it. */
static void probe_release(struct target *t, struct probe *p, int sig)
{
	if (p->state == PR_ARMED)
		probe_disarm(t, p);
	PT(PTRACE_DETACH, p->tid, 0, sig);
	p->state = PR_FREE;
	t->nlive--;
}

/* A probe that has exited: nothing to put back. */
static void probe_forget(struct target *t, struct probe *p)
{
	vlog(t, "thread %d exited", (int)p->tid);
	if (t->armed == p)
		t->armed = NULL;
	p->state = PR_FREE;
	t->nlive--;
}

/* Let stopped probe p run to p->ex with a hardware breakpoint there.
 * 0, or -1 (p untouched, still stopped). */
static int probe_arm(struct target *t, struct probe *p)
{
	uint64_t mask;

	/* With SIGTRAP blocked, the kernel would force it through and reset
	 * the thread's SIGTRAP handler to SIG_DFL. */
	if (PT(PTRACE_GETSIGMASK, p->tid, sizeof mask, &mask) < 0 ||
	    ((mask >> (SIGTRAP - 1)) & 1))
		return -1;
	errno = 0;
	p->dr0 = PT(PTRACE_PEEKUSER, p->tid, DR_OFFSET(0), 0);
	p->dr6 = PT(PTRACE_PEEKUSER, p->tid, DR_OFFSET(6), 0);
	p->dr7 = PT(PTRACE_PEEKUSER, p->tid, DR_OFFSET(7), 0);
	if (errno || (p->dr7 & 0xff))  /* unreadable, or breakpoints in use */
		return -1;
	p->state = PR_ARMED;
	t->armed = p;
	/* DR7 = L0 only: execute breakpoint, length 1, on DR0 */
	if (set_dr(p->tid, 0, p->ex.ip) < 0 || set_dr(p->tid, 7, 1) < 0 ||
	    PT(PTRACE_CONT, p->tid, 0, 0) < 0) {
		probe_disarm(t, p);
		return -1;
	}
	p->release = 0;
	p->hops++;
	p->since = ha_now_ms();
	p->until = p->since + RUN_TO_EXIT_MS;
	if (p->until > t->deadline)
		p->until = t->deadline;
	return 0;
}

/* Stopped probe p is at a safe point: it is the one. */
static void probe_choose(struct target *t, struct probe *p, const struct user_regs_struct *regs)
{
	t->chosen = p->tid;
	t->chosen_regs = *regs;
	p->state = PR_FREE;     /* the hijack owns it from here */
	t->nlive--;
	probes_expire(t);       /* an armed probe is not needed any more */
}

static int tried_before(const struct target *t, pid_t tid)
{
	for (size_t i = 0; i < t->ntried; i++)
		if (t->tried[i] == tid)
			return 1;
	return 0;
}

/* Probe p, stopped, is of no use now: if it was blocked (it may well be
 * blocked there for long), try the other blocked threads first. */
static void probe_tried(struct target *t, const struct probe *p)
{
	if (p->rank != 2 && t->ntried < MAX_TRIED && !tried_before(t, p->tid))
		t->tried[t->ntried++] = p->tid;
}

/* Probes other than p interrupted recently whose stop has not come yet. */
static int probes_pending(const struct target *t, const struct probe *p)
{
	double now = ha_now_ms();

	for (size_t i = 0; i < MAX_PROBES; i++) {
		const struct probe *q = &t->probe[i];
		if (q != p && q->state == PR_WAIT && now < q->since + STOP_TIMEOUT_MS)
			return 1;
	}
	return 0;
}

/* Probe p is stopped where we can look at it (its interrupt stop, or the
 * breakpoint at p->ex): use it, run it further, or let it go. */
static void probe_judge(struct target *t, struct probe *p)
{
	struct user_regs_struct regs;
	int rc;

	if (t->chosen || t->fatal || (p->state == PR_ARMED && p->release)) {
		probe_release(t, p, 0);   /* also discards a breakpoint SIGTRAP */
		return;
	}
	if (p->state == PR_ARMED) {
		vlog(t, "thread %d: ran to 0x%llx (%.3f ms)", (int)p->tid,
		     (unsigned long long)p->ex.ip, ha_now_ms() - p->since);
		probe_disarm(t, p);
	}
	/* Once another probe is running out of the allocator, this one is
	 * only of use if it is safe already: a first look may do. */
	rc = probe_inspect(t, p, &regs, t->armed != NULL);
	if (rc == 1) {
		probe_choose(t, p, &regs);
		return;
	}
	if (rc == 0 && p->ex.ip && !t->armed && p->hops < MAX_HOPS && !probes_pending(t, p) &&
	    probe_arm(t, p) == 0)
		return;
	probe_tried(t, p);
	probe_release(t, p, 0);
}

/* Is this SIGTRAP stop of armed probe p our breakpoint?  1 at p->ex, 2 at
 * p->ex.ip in another frame (recursion), 0 not ours. */
static int probe_at_exit(struct probe *p)
{
	struct user_regs_struct regs;
	siginfo_t si;

	if (PT(PTRACE_GETSIGINFO, p->tid, 0, &si) < 0 || si.si_code != TRAP_HWBKPT ||
	    PT(PTRACE_GETREGS, p->tid, 0, &regs) < 0 || regs.rip != p->ex.ip)
		return 0;
	return regs.rsp == p->ex.sp ? 1 : 2;
}

static struct probe *probe_find(struct target *t, pid_t tid)
{
	for (size_t i = 0; i < MAX_PROBES; i++)
		if (t->probe[i].state != PR_FREE && t->probe[i].tid == tid)
			return &t->probe[i];
	return NULL;
}

/* A status change of thread tid reported by waitpid, when it is not the
 * one being waited for: one of our probes. */
static void probe_event(struct target *t, pid_t tid, int st)
{
	struct probe *p = probe_find(t, tid);
	int event = st >> 16, sig = WSTOPSIG(st);

	if (!p) {
		vlog(t, "note: unexpected status 0x%x of thread %d", st, (int)tid);
		return;
	}
	if (WIFEXITED(st) || WIFSIGNALED(st)) {
		probe_forget(t, p);
		return;
	}
	if (!WIFSTOPPED(st))
		return;
	if (event == PTRACE_EVENT_STOP && sig != SIGTRAP) {
		/* a group stop: the process is being stopped (job control);
		 * the thread stays in it when let go */
		if (!t->chosen && !t->fatal) {
			ha_err(t->err, t->errlen, "process %d was stopped (job control) while "
			       "attaching", (int)t->pid);
			t->fatal = 1;
		}
		probe_release(t, p, 0);
		return;
	}
	if (event == PTRACE_EVENT_STOP) {       /* our interrupt */
		if (p->state == PR_ARMED)
			probe_release(t, p, 0); /* interrupted to be let go */
		else
			probe_judge(t, p);
		return;
	}
	if (event != 0) {                       /* no other events asked for */
		PT(PTRACE_CONT, tid, 0, 0);
		return;
	}
	if (p->state == PR_ARMED && sig == SIGTRAP) {
		int at = probe_at_exit(p);
		if (at == 1) {
			probe_judge(t, p);
			return;
		}
		if (at == 2) {                  /* same code, deeper frame */
			if (p->release)
				probe_release(t, p, 0);
			else
				PT(PTRACE_CONT, tid, 0, 0);
			return;
		}
	}
	/* A signal for the program (signal-delivery-stop): deliver it as if
	 * we were not there.  A probe we no longer need gets it with its
	 * release; otherwise its interrupt stop or breakpoint comes later. */
	if (t->chosen || t->fatal || p->release)
		probe_release(t, p, sig);
	else
		PT(PTRACE_CONT, tid, 0, sig);
}

/* Ask the armed probe, if any, to stop for good when it has run out of time
 * or is not needed any more; its stop releases it. */
static void probes_expire(struct target *t)
{
	struct probe *p = t->armed;

	if (!p || p->release)
		return;
	if (t->chosen || t->fatal || ha_now_ms() >= p->until) {
		if (!t->chosen && !t->fatal)
			snprintf(t->last, sizeof t->last, "thread %d did not leave the allocator "
			         "within %d ms", (int)p->tid, RUN_TO_EXIT_MS);
		p->release = 1;
		PT(PTRACE_INTERRUPT, p->tid, 0, 0);
	}
}

/* When the next probe deadline is, if before limit. */
static double probes_next_expiry(const struct target *t, double limit)
{
	const struct probe *p = t->armed;
	return p && !p->release && p->until < limit ? p->until : limit;
}

/* Probes still expected to stop soon: interrupted less than STOP_TIMEOUT_MS
 * ago, or running to an exit.  The others (D state, vfork parent...) are
 * let go if they ever stop, and released by the kernel otherwise. */
static int probes_waiting(struct target *t)
{
	double now = ha_now_ms();
	int n = 0;

	for (size_t i = 0; i < MAX_PROBES; i++) {
		struct probe *p = &t->probe[i];
		if (p->state == PR_ARMED || (p->state == PR_WAIT && now < p->since + STOP_TIMEOUT_MS))
			n++;
		else if (p->state == PR_WAIT && !p->late) {
			p->late = 1;
			snprintf(t->last, sizeof t->last, "thread %d did not stop (uninterruptible "
			         "sleep?)", (int)p->tid);
			vlog(t, "%s", t->last);
		}
	}
	return n;
}

/* Seize and interrupt thread tid (of that rank) as a new probe.  TRY_OK,
 * TRY_NEXT (gone), TRY_FATAL (t->err set). */
static int probe_add(struct target *t, pid_t tid, int rank)
{
	struct probe *p = NULL;

	for (size_t i = 0; i < MAX_PROBES && !p; i++)
		if (t->probe[i].state == PR_FREE)
			p = &t->probe[i];
	if (!p)
		return TRY_NEXT;
	if (PT(PTRACE_SEIZE, tid, 0, 0) < 0) {
		int e = errno;
		char tracer[32];
		if (e == ESRCH)
			return TRY_NEXT;
		if (e == EPERM && ha_proc_status_field(t->pid, tid, "TracerPid", tracer,
		                                       sizeof tracer) == 0 && atoi(tracer) != 0)
			ha_err(t->err, t->errlen, "cannot ptrace thread %d: already traced by PID %d",
			       (int)tid, atoi(tracer));
		else
			ha_err(t->err, t->errlen, "cannot ptrace thread %d: %s%s", (int)tid, strerror(e),
			       e == EPERM ? " (other user, or kernel.yama.ptrace_scope?)" : "");
		return TRY_FATAL;
	}
	t->r->tries++;
	if (PT(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
		/* not stopped, so it cannot be detached: the kernel releases
		 * it when the helper thread exits */
		vlog(t, "cannot interrupt thread %d: %s", (int)tid, strerror(errno));
		return TRY_NEXT;
	}
	memset(p, 0, sizeof *p);
	p->tid = tid;
	p->rank = rank;
	p->state = PR_WAIT;
	p->since = ha_now_ms();
	t->nlive++;
	return TRY_OK;
}

/* Probe candidate c unless it is a probe already: 1 added (and counted in
 * *added), 0 not, -1 fatal (t->err set). */
static int batch_add(struct target *t, const struct cand *c, int *added)
{
	int rc;

	if (t->nlive >= MAX_PROBES || probe_find(t, c->tid))
		return 0;
	rc = probe_add(t, c->tid, c->rank);
	if (rc == TRY_FATAL)
		return -1;
	*added += rc == TRY_OK;
	return rc == TRY_OK;
}

/* Seize a batch of the candidates c (best first): a couple of threads
 * blocked in a system call (they stop at once), not tried yet; every running
 * thread (the one on a CPU stops first); a thread in uninterruptible sleep
 * only when there is nothing else.  Threads probed in an earlier round and
 * not stopped yet are not probed again.  The number added, or -1 (t->err
 * set). */
static int probe_batch(struct target *t, const struct cand *c, size_t n)
{
	int added = 0, quiet = 0, rc;

	for (size_t i = 0; i < n && quiet < QUIET_PROBES; i++) {
		if (c[i].rank > 1 || tried_before(t, c[i].tid))
			continue;
		if ((rc = batch_add(t, &c[i], &added)) < 0)
			return -1;
		quiet += rc;
	}
	for (size_t i = 0; i < n; i++) {
		if (c[i].rank == 2 && batch_add(t, &c[i], &added) < 0)
			return -1;
	}
	for (size_t i = 0; i < n && !added; i++) {
		if (c[i].rank != 3 || tried_before(t, c[i].tid))
			continue;
		if (batch_add(t, &c[i], &added) < 0)
			return -1;
	}
	if (!added)
		t->ntried = 0;  /* all tried: start over */
	return added;
}

/* Handle probe stops until one is chosen, none is expected any more, or the
 * search deadline passes. */
static void probes_run(struct target *t)
{
	int st, rc;

	while (!t->chosen && !t->fatal) {
		rc = drain_events(t, 0, &st);
		if (rc < 0 && rc != -ECHILD)
			break;
		probes_expire(t);
		if (t->chosen || t->fatal || !probes_waiting(t) || ha_now_ms() >= t->deadline)
			break;
		wait_event(t, probes_next_expiry(t, t->deadline));
	}
}

/* Let time pass until `until` (at most the search deadline), releasing
 * late probes as they stop. */
static void probes_idle(struct target *t, double until)
{
	int st;

	if (until > t->deadline)
		until = t->deadline;
	for (;;) {
		int rc = drain_events(t, 0, &st);
		if ((rc < 0 && rc != -ECHILD) || ha_now_ms() >= until)
			return;
		wait_event(t, until);
	}
}

/* Before the helper thread ends: stop every armed probe to remove its
 * breakpoint, waiting long if need be (see above).  Probes not stopped yet
 * are left to the kernel. */
static void probes_finish(struct target *t)
{
	double deadline = ha_now_ms() + BKPT_WAIT_ROUNDS * ABORT_WAIT_MS;
	int st;

	while (t->armed && ha_now_ms() < deadline) {
		struct probe *p = t->armed;
		if (!p->release) {
			p->release = 1;
			PT(PTRACE_INTERRUPT, p->tid, 0, 0);
		}
		if (drain_events(t, 0, &st) < 0)
			break;
		if (t->armed)
			wait_event(t, deadline);
	}
	if (t->armed)
		vlog(t, "thread %d: cannot stop it to remove the breakpoint at 0x%llx",
		     (int)t->armed->tid, (unsigned long long)t->armed->ex.ip);
}

/* Go round the threads until one is stopped at a safe point; it is left
 * stopped, its registers in h->regs. */
static int pick_thread(struct target *t, struct hijack *h)
{
	long pause_us = 500;

	snprintf(t->last, sizeof t->last, "no thread tried");
	for (t->round = 1; ha_now_ms() < t->deadline; t->round++) {
		struct cand *c = NULL;
		size_t n = 0;
		double tl = ha_now_ms();
		int rc, added;

		/* fresh maps each round: thread stacks and modules come and go
		 * (those of the first round were read just before; each read
		 * waits for the target's mmap_lock) */
		rc = 0;
		if (t->round > 1) {
			ha_maps_free(&t->maps);
			rc = ha_maps_read(t->pid, &t->maps);
		}
		if (rc == 0)
			rc = list_threads(t->pid, &c, &n);
		if (rc < 0) {
			ha_err(t->err, t->errlen, "process %d: cannot list threads or maps: %s",
			       (int)t->pid, rc == -ENOENT || rc == -ESRCH ? "process exited" : strerror(-rc));
			return -1;
		}
		if (n == 0) {
			free(c);
			ha_err(t->err, t->errlen, "process %d has no live thread (exited?)", (int)t->pid);
			return -1;
		}
		added = probe_batch(t, c, n);
		free(c);
		if (added < 0)
			return -1;
		vlog(t, "%zu threads listed, %d probed in %.3f ms", n, added, ha_now_ms() - tl);
		probes_run(t);
		if (t->fatal)
			return -1;
		if (t->chosen) {
			h->tid = t->chosen;
			h->regs = t->chosen_regs;
			return 0;
		}
		/* Everyone was busy: give the threads time to leave the
		 * allocator or loader before the next round. */
		probes_idle(t, ha_now_ms() + pause_us / 1e3);
		if (pause_us < 20000)
			pause_us *= 2;
	}
	ha_err(t->err, t->errlen, "no thread reached a safe point within %d ms (last: %s)",
	       t->timeout_ms, t->last);
	return -1;
}

/* ------------------------------------------------------------------ */
/* scheduling                                                          */
/* ------------------------------------------------------------------ */

/*
 * On a machine whose cores are all busy, the attach is a chain of waits for
 * a CPU (see "Latency" above), and the scheduler (EEVDF, Linux 6.6 and
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
 * (see hijack_sched).
 */
#define HA_BOOST_NICE -10

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
static void prefer(pid_t tid, int boost)
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
static void hijack_sched(struct target *t, struct hijack *h, int on)
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
		vlog(t, "note: cannot put back the time slice of thread %d: %s", (int)h->tid,
		     strerror(errno));
}

/* ------------------------------------------------------------------ */
/* saving and restoring the hijacked thread                            */
/* ------------------------------------------------------------------ */

/* Save FP/vector state and the signal mask (registers are already in
 * h->regs), then prepare the thread for calls: asynchronous signals
 * blocked, an ABI-default x87/SSE control state. */
static int save_state(struct target *t, struct hijack *h)
{
	struct iovec iov;
	uint64_t mask;

	h->fp = malloc(XSTATE_MAX);
	if (!h->fp) {
		ha_err(t->err, t->errlen, "out of memory");
		return -1;
	}
	iov.iov_base = h->fp;
	iov.iov_len = XSTATE_MAX;
	if (PT(PTRACE_GETREGSET, h->tid, NT_X86_XSTATE, &iov) == 0 &&
	    iov.iov_len >= FXSAVE_SIZE && iov.iov_len < XSTATE_MAX) {
		h->fptype = NT_X86_XSTATE;
	} else {
		iov.iov_base = h->fp;
		iov.iov_len = FXSAVE_SIZE;
		if (PT(PTRACE_GETREGSET, h->tid, NT_PRFPREG, &iov) < 0 ||
		    iov.iov_len != FXSAVE_SIZE) {
			ha_err(t->err, t->errlen, "cannot read the FP state of thread %d: %s",
			       (int)h->tid, strerror(errno));
			return -1;
		}
		h->fptype = NT_PRFPREG;
	}
	h->fplen = iov.iov_len;
	/* returns the mask to restore even inside sigsuspend/ppoll (the
	 * kernel's saved_sigmask) */
	if (PT(PTRACE_GETSIGMASK, h->tid, sizeof h->sigmask, &h->sigmask) < 0) {
		ha_err(t->err, t->errlen, "cannot read the signal mask of thread %d: %s",
		       (int)h->tid, strerror(errno));
		return -1;
	}
	h->saved = 1;
	h->sp = h->regs.rsp - STACK_GAP;
	hijack_sched(t, h, 1);

	/* Signals that arrive during the calls stay pending and are delivered
	 * once the mask is back.  SIGKILL/SIGSTOP cannot be blocked. */
	mask = ~SYNC_SIGNALS;
	if (PT(PTRACE_SETSIGMASK, h->tid, sizeof mask, &mask) < 0) {
		ha_err(t->err, t->errlen, "cannot block signals of thread %d: %s",
		       (int)h->tid, strerror(errno));
		return -1;
	}

	/* The thread may have been stopped mid-computation with values on
	 * the x87 stack or a non-default rounding mode; the calls get the
	 * state the ABI promises at a function entry.  The legacy area is the
	 * first 512 bytes of the XSAVE layout as well. */
	{
		struct user_fpregs_struct fx;
		memcpy(&fx, h->fp, sizeof fx);
		fx.cwd = 0x037f;
		fx.swd = 0;
		fx.ftw = 0;         /* abridged tag word: all empty */
		fx.mxcsr = 0x1f80;
		iov.iov_base = &fx;
		iov.iov_len = sizeof fx;
		if (PT(PTRACE_SETREGSET, h->tid, NT_PRFPREG, &iov) < 0)
			vlog(t, "note: cannot reset the FP control state of thread %d: %s",
			     (int)h->tid, strerror(errno));
	}
	return 0;
}

/* Put the thread back exactly as it was and detach.  Registers include
 * rax = -ERESTART* and orig_rax = syscall number for a thread stopped in a
 * system call: on resume the kernel restarts that call.  Detaching with
 * signal 0 discards our own SIGSEGV.  0, or -1 with t->err set (unless an
 * earlier error is already there). */
static int restore_state(struct target *t, struct hijack *h, int have_err)
{
	struct iovec iov = { h->fp, h->fplen };
	const char *what = NULL;
	int e = 0;

	if (PT(PTRACE_SETREGS, h->tid, 0, &h->regs) < 0)
		what = "registers", e = errno;
	if (PT(PTRACE_SETREGSET, h->tid, h->fptype, &iov) < 0 && !what)
		what = "FP state", e = errno;
	if (PT(PTRACE_SETSIGMASK, h->tid, sizeof h->sigmask, &h->sigmask) < 0 && !what)
		what = "signal mask", e = errno;
	hijack_sched(t, h, 0);
	if (PT(PTRACE_DETACH, h->tid, 0, 0) < 0 && !what)
		what = "detach", e = errno;
	h->saved = 0;
	if (!what)
		return 0;
	if (!have_err)
		ha_err(t->err, t->errlen, "cannot restore thread %d (%s): %s", (int)h->tid, what,
		       strerror(e));
	return -1;
}

/* ------------------------------------------------------------------ */
/* remote calls                                                        */
/* ------------------------------------------------------------------ */

/* Copy n bytes below the data already pushed on the thread's stack,
 * 16-byte aligned.  Address in *addr.  0 or -1 (t->err set). */
static int remote_push(struct target *t, struct hijack *h, const void *data, size_t n,
                       uint64_t *addr)
{
	uint64_t a = (h->sp - n) & ~(uint64_t)15;
	int rc;

	if (n > PUSH_ROOM / 2 || h->regs.rsp - a > PUSH_ROOM) {
		ha_err(t->err, t->errlen, "too much data to push on the stack of thread %d",
		       (int)h->tid);
		return -1;
	}
	rc = ha_remote_write(t->pid, a, data, n);
	if (rc < 0) {
		ha_err(t->err, t->errlen, "cannot write to the stack of thread %d: %s",
		       (int)h->tid, strerror(-rc));
		return -1;
	}
	h->sp = a;
	*addr = a;
	return 0;
}

/* "SEGV" for SIGSEGV (sigabbrev_np needs glibc 2.32). */
static const char *signame(int sig)
{
	static const struct { int sig; const char *name; } tab[] = {
		{ SIGSEGV, "SEGV" }, { SIGBUS, "BUS" }, { SIGILL, "ILL" }, { SIGFPE, "FPE" },
		{ SIGTRAP, "TRAP" }, { SIGSYS, "SYS" }, { SIGKILL, "KILL" }, { SIGABRT, "ABRT" },
		{ SIGTERM, "TERM" }, { SIGINT, "INT" }, { SIGHUP, "HUP" }, { SIGQUIT, "QUIT" },
		{ SIGSTOP, "STOP" }, { SIGPIPE, "PIPE" }, { SIGALRM, "ALRM" }, { SIGUSR1, "USR1" },
		{ SIGUSR2, "USR2" },
	};
	static __thread char buf[16];
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (tab[i].sig == sig)
			return tab[i].name;
	snprintf(buf, sizeof buf, "%d", sig);  /* "SIG34" */
	return buf;
}

/* The thread is in a signal-delivery-stop for a fault inside our call:
 * describe it.  The caller restores the thread (discarding the fault). */
static void report_crash(struct target *t, struct hijack *h, const char *what, int sig,
                         const struct user_regs_struct *regs)
{
	siginfo_t si;
	char extra[96] = "";

	if (PT(PTRACE_GETSIGINFO, h->tid, 0, &si) == 0) {
		if (sig == SIGSYS)
			snprintf(extra, sizeof extra, " (seccomp denied system call %d)",
			         si.si_syscall);
		else
			snprintf(extra, sizeof extra, " (address 0x%llx)",
			         (unsigned long long)(uintptr_t)si.si_addr);
	}
	ha_err(t->err, t->errlen, "%s crashed in process %d: SIG%s at rip 0x%llx%s; "
	       "thread %d restored", what, (int)t->pid, signame(sig),
	       (unsigned long long)regs->rip, extra, (int)h->tid);
}

/* The call did not return in time: stop the thread so that it can be put
 * back where it was (abandoning the call half-way: dlopen may hold the
 * loader lock, the target may be left in a bad state; nothing better is
 * possible).  Returns -1 always; h->saved is cleared if the thread could
 * not be stopped. */
static int abort_call(struct target *t, struct hijack *h, const char *what, int ms)
{
	double deadline = ha_now_ms() + ABORT_WAIT_MS;
	int st;

	PT(PTRACE_INTERRUPT, h->tid, 0, 0);
	while (wait_tid(t, h->tid, &st, deadline) == 1) {
		if (WIFEXITED(st) || WIFSIGNALED(st))
			break;
		if (WIFSTOPPED(st)) {
			ha_err(t->err, t->errlen, "%s did not return within %d ms in process %d "
			       "(deadlock?); call abandoned, thread %d restored, the target may "
			       "be left in a bad state", what, ms, (int)t->pid, (int)h->tid);
			return -1;
		}
	}
	h->saved = 0;
	ha_err(t->err, t->errlen, "%s did not return within %d ms in process %d and thread %d "
	       "cannot be stopped: it was left inside the call", what, ms, (int)t->pid,
	       (int)h->tid);
	return -1;
}

/* Wait for the end of a call: the SIGSEGV stop at rip 0 with the return
 * address popped.  Other stops are handled as the kernel would have without
 * us: an interrupt or group stop resumes (the group stop is re-entered at
 * detach), a signal that got through the mask (SIGSTOP) is delivered, a
 * fault is a crash of the call. */
static int wait_call(struct target *t, struct hijack *h, const char *what, uint64_t ret_sp,
                     uint64_t *ret)
{
	int ms = t->timeout_ms > CALL_MIN_MS ? t->timeout_ms : CALL_MIN_MS;
	double deadline = ha_now_ms() + ms;

	for (;;) {
		struct user_regs_struct regs;
		int st, sig, rc = wait_tid(t, h->tid, &st, deadline);

		if (rc == 0)
			return abort_call(t, h, what, ms);
		if (rc < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			h->saved = 0;   /* nothing left to restore */
			if (rc > 0) {
				if (WIFSIGNALED(st))
					ha_err(t->err, t->errlen, "process %d was killed by SIG%s during "
					       "%s", (int)t->pid, signame(WTERMSIG(st)), what);
				else
					ha_err(t->err, t->errlen, "process %d exited (status %d) during %s",
					       (int)t->pid, WEXITSTATUS(st), what);
			} else {
				ha_err(t->err, t->errlen, "thread %d vanished during %s: %s",
				       (int)h->tid, what, strerror(-rc));
			}
			return -1;
		}
		if (!WIFSTOPPED(st))
			continue;
		sig = WSTOPSIG(st);
		if ((st >> 16) != 0) {          /* event stop: keep going */
			PT(PTRACE_CONT, h->tid, 0, 0);
			continue;
		}
		if (PT(PTRACE_GETREGS, h->tid, 0, &regs) < 0) {
			ha_err(t->err, t->errlen, "cannot read registers of thread %d: %s",
			       (int)h->tid, strerror(errno));
			return -1;
		}
		if (sig == SIGSEGV && regs.rip == 0 && regs.rsp == ret_sp) {
			*ret = regs.rax;
			return 0;
		}
		if ((SYNC_SIGNALS >> (sig - 1)) & 1) {
			siginfo_t si;
			/* kernel-generated (si_code > 0): a fault in the call */
			if (PT(PTRACE_GETSIGINFO, h->tid, 0, &si) < 0 || si.si_code > 0) {
				report_crash(t, h, what, sig, &regs);
				return -1;
			}
		}
		/* an asynchronous signal our mask cannot hold back */
		PT(PTRACE_CONT, h->tid, 0, sig);
	}
}

/* Call fn(args...) on the hijacked thread; its return value in *ret.
 * Starts from the saved registers so that fs (TLS) and the rest are the
 * thread's own. */
static int remote_call(struct target *t, struct hijack *h, const char *what, uint64_t fn,
                       const uint64_t *args, int nargs, uint64_t *ret)
{
	struct user_regs_struct regs = h->regs;
	uint64_t sp = (h->sp & ~(uint64_t)15) - 8;   /* (sp + 8) % 16 == 0 at entry */
	uint64_t zero = 0;
	double t1 = ha_now_ms();
	int rc;

	rc = ha_remote_write(t->pid, sp, &zero, sizeof zero);   /* return address */
	if (rc < 0) {
		ha_err(t->err, t->errlen, "cannot write to the stack of thread %d: %s",
		       (int)h->tid, strerror(-rc));
		return -1;
	}
	regs.rdi = nargs > 0 ? args[0] : 0;
	regs.rsi = nargs > 1 ? args[1] : 0;
	regs.rdx = nargs > 2 ? args[2] : 0;
	regs.rcx = nargs > 3 ? args[3] : 0;
	regs.r8 = nargs > 4 ? args[4] : 0;
	regs.r9 = nargs > 5 ? args[5] : 0;
	regs.rax = 0;                   /* no vector args (for varargs callees) */
	regs.rip = fn;
	regs.rsp = sp;
	regs.orig_rax = (uint64_t)-1;   /* not in a syscall: nothing to restart */
	regs.eflags &= ~(uint64_t)(X86_EFLAGS_DF | X86_EFLAGS_TF);
	if (PT(PTRACE_SETREGS, h->tid, 0, &regs) < 0 ||
	    PT(PTRACE_CONT, h->tid, 0, 0) < 0) {
		ha_err(t->err, t->errlen, "cannot start %s on thread %d: %s", what, (int)h->tid,
		       strerror(errno));
		return -1;
	}
	rc = wait_call(t, h, what, sp + 8, ret);
	if (rc == 0)
		vlog(t, "%s returned 0x%llx in %.3f ms", what, (unsigned long long)*ret,
		     ha_now_ms() - t1);
	return rc;
}

/* dlopen(agent_path) in the target; the handle in *handle. */
static int load_agent(struct target *t, struct hijack *h, uint64_t *handle)
{
	const char *path = t->target->agent_path;
	uint64_t args[2], errp = 0;
	char text[512];

	if (remote_push(t, h, path, strlen(path) + 1, &args[0]) < 0)
		return -1;
	args[1] = (uint64_t)(uint32_t)t->dlopen_flags;
	if (remote_call(t, h, t->dlopen_name, t->dlopen_fn, args, 2, handle) < 0)
		return -1;
	if (*handle != 0)
		return 0;

	snprintf(text, sizeof text, "unknown reason (no dlerror in this glibc)");
	if (t->dlerror_fn && remote_call(t, h, "dlerror", t->dlerror_fn, NULL, 0, &errp) == 0 &&
	    errp && remote_read_string(t->pid, errp, text, sizeof text) < 0)
		snprintf(text, sizeof text, "unknown reason (dlerror text unreadable)");
	ha_err(t->err, t->errlen, "dlopen in target failed: %s%s", text,
	       t->target->seccomp_filter ? " (the target has a seccomp filter)" : "");
	return -1;
}

static int call_init(struct target *t, struct hijack *h)
{
	uint64_t argp, ret;
	int rc;

	if (remote_push(t, h, t->o->args, sizeof *t->o->args, &argp) < 0)
		return -1;
	/* The agent connects and expects its CONFIG during this call. */
	t->watching = t->o->watch && t->o->step;
	t->r->t_init = ha_now_ms();
	rc = remote_call(t, h, HA_AGENT_INIT_SYMBOL, t->init_fn, &argp, 1, &ret);
	t->watching = 0;
	if (rc < 0)
		return -1;
	t->r->init_ret = (int)(uint32_t)ret;
	return 0;
}

/* ------------------------------------------------------------------ */
/* the whole injection                                                 */
/* ------------------------------------------------------------------ */

static int inject_run(struct target *t)
{
	struct hijack h;
	uint64_t handle = 0;
	double t1;
	int rc = -1;

	memset(&h, 0, sizeof h);
	vlog(t, "injector running");
	if (check_moment(t) < 0)
		return -1;
	rc = ha_maps_read(t->pid, &t->maps);
	if (rc < 0) {
		ha_err(t->err, t->errlen, "cannot read /proc/%d/maps: %s", (int)t->pid, strerror(-rc));
		return -1;
	}
	rc = -1;
	if (t->target->agent_loaded) {
		if (resolve_init(t, 0) < 0)
			goto out;
	} else if (resolve_dlopen(t) < 0) {
		goto out;
	}

	warm_up(t->pid, &t->maps);
	vlog(t, "symbol and unwind tables loaded");
	t1 = ha_now_ms();
	if (pick_thread(t, &h) < 0)
		goto out;
	t->r->tid = h.tid;
	vlog(t, "hijacking thread %d after %d tries (%.3f ms)", (int)h.tid, t->r->tries,
	     ha_now_ms() - t1);

	t1 = ha_now_ms();
	if (save_state(t, &h) < 0)
		goto restore;
	if (!t->target->agent_loaded &&
	    (load_agent(t, &h, &handle) < 0 || resolve_init(t, handle) < 0))
		goto restore;
	if (call_init(t, &h) < 0)
		goto restore;
	rc = 0;
restore:
	if (h.saved) {
		if (restore_state(t, &h, rc != 0) < 0)
			rc = -1;
	} else if (h.tid && rc != 0) {
		/* stopped but nothing saved yet (or the call could not be
		 * undone): let it go as it is */
		PT(PTRACE_DETACH, h.tid, 0, 0);
	}
	vlog(t, "thread %d stopped for %.3f ms in total", (int)h.tid, ha_now_ms() - t1);
out:
	probes_finish(t);
	free(h.fp);
	ha_maps_free(&t->maps);
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
	struct target t;
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
	prefer(0, 1);     /* if ha_inject_start could not */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	in->t.sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	in->rc = inject_run(&in->t);
	if (in->t.sigfd >= 0)
		close(in->t.sigfd);
	in->t.r->t_done = ha_now_ms();
	return NULL;
}

struct ha_injection *ha_inject_start(const struct ha_inject_opts *o, struct ha_inject_result *r,
                                     char *err, size_t errlen)
{
	struct ha_injection *in;
	struct target *t;
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
	t = &in->t;
	t->o = &in->o;
	t->target = o->target;
	t->r = r;
	t->pid = o->target->pid;
	t->err = err;
	t->errlen = errlen;
	t->t0 = ha_now_ms();
	t->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	t->deadline = t->t0 + t->timeout_ms;

	/* All ptrace work runs on a helper thread (see the top of the file).
	 * It inherits our mask: block everything there, so that the caller's
	 * own signal handlers keep running on its own threads, and so that
	 * SIGCHLD stays pending for wait_event. */
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
			prefer(tid, 1);
	}
	return in;
}

int ha_inject_wait(struct ha_injection *in)
{
	struct target *t = &in->t;
	int rc;

	pthread_join(in->th, NULL);
	rc = in->rc;
	ha_elf_cache_clear();
	ha_thread_safe_reset();
	t->r->ms = elapsed(t);
	vlog(t, "injection %s in %.3f ms", rc == 0 ? "done" : "failed", t->r->ms);
	free(in);
	return rc;
}
