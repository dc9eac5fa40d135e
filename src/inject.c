/* inject.c -- load the agent into a running process with ptrace and call its
 * init on one hijacked thread; restore that thread exactly.
 *
 * Outline (x86_64, glibc):
 *   1. preflight: the target is a dynamically linked x86_64 glibc program,
 *      not stopped, not traced, not in seccomp strict mode;
 *   2. find dlopen (libc >= 2.34, libdl, or __libc_dlopen_mode) and dlerror
 *      in the target's own libc, from the ELF file on disk;
 *   3. pick a thread: PTRACE_SEIZE + PTRACE_INTERRUPT, stop with a timeout,
 *      unwind it, and use it only if no frame holds a lock that dlopen
 *      needs (see inject_safe.c).  A thread caught inside malloc & co. is
 *      run to the return from the outermost such frame with a per-thread
 *      hardware breakpoint, then checked again; other threads are let go.
 *      Threads blocked in a syscall are tried first, and we keep going
 *      round until the time budget is spent;
 *   4. save its registers, FP/vector state and signal mask, block
 *      (asynchronous) signals, and make calls on its stack: dlopen(agent),
 *      then heapattach_agent_init(&args).  A call "returns" to address 0:
 *      the SIGSEGV stop with rip == 0 is the end of the call;
 *   5. put everything back and detach.  The kernel then restarts the system
 *      call the thread was in, as after any signal without a handler.
 *
 * All ptrace work runs on a short-lived helper thread: ptrace attachments
 * belong to the tracing thread and the kernel drops them all when it exits,
 * so a thread we seized but that never stopped (D state, vfork parent) is
 * released when we return, whatever happened.
 *
 * Nothing of the target is trusted: symbol addresses come from the ELF files
 * on disk, strings read back are bounded, and every stop we did not cause
 * is handled as the kernel would have without us (signals delivered, group
 * stops kept). */
#define _GNU_SOURCE
#include "inject.h"
#include "elfsym.h"
#include "inject_safe.h"
#include "procmaps.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STACK_GAP        256        /* below the saved rsp: red zone + margin */
#define STACK_MIN_ROOM   (64 << 10) /* what dlopen may need below rsp */
#define PUSH_ROOM        (16 << 10) /* what we write below rsp ourselves, at most */
#define STOP_TIMEOUT_MS  200        /* a thread that does not stop by then is skipped */
#define DEFAULT_TIMEOUT_MS 5000     /* when o->timeout_ms <= 0 */
#define CALL_MIN_MS      2000       /* a remote call always gets at least this */
#define ABORT_WAIT_MS    1000       /* waiting for a timed-out call to stop */
#define XSTATE_MAX       (64 << 10) /* any XSAVE layout (AMX is ~11 KiB) */
#define FXSAVE_SIZE      512
#define MAX_ABANDONED    64
#define RUN_TO_EXIT_MS   250        /* to leave malloc & co. */
#define MAX_HOPS         2          /* run-to-exit attempts per stop */
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

/* One injection. */
struct target {
	const struct ha_inject_opts *o;
	struct ha_inject_result *r;
	pid_t pid;
	char *err;
	size_t errlen;
	double t0;
	int timeout_ms;          /* o->timeout_ms, or the default */
	double deadline;         /* end of the thread search */
	struct ha_maps maps;
	int seccomp;             /* "Seccomp:" of /proc/PID/status */
	uint64_t dlopen_fn;      /* dlopen or __libc_dlopen_mode in the target */
	uint64_t dlerror_fn;     /* 0 if none */
	const char *dlopen_name;
	int dlopen_flags;
	uint64_t init_fn;        /* heapattach_agent_init, once known */
	pid_t abandoned[MAX_ABANDONED]; /* seized, never stopped yet */
	size_t nabandoned;
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
};

/* glibc's ptrace() reads addr and data as void * varargs: pass them as
 * such (a plain int argument would leave the upper half undefined). */
#define PT(req, tid, addr, data) \
	ptrace((req), (tid), (void *)(uintptr_t)(addr), (void *)(uintptr_t)(data))

enum { TRY_OK, TRY_NEXT, TRY_FATAL };
enum { STOP_OK, STOP_GONE, STOP_TIMEOUT, STOP_GROUP };

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
	fprintf(stderr, "heapattach: %s\n", line);   /* one write per line */
}

static double elapsed(const struct target *t)
{
	return ha_now_ms() - t->t0;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
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

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* ------------------------------------------------------------------ */
/* waiting for ptrace stops, with a deadline                           */
/* ------------------------------------------------------------------ */

/* A thread we seized that did not stop in time: if it has stopped since,
 * let it go at once, so that it cannot sit stopped (maybe holding a lock a
 * remote call needs) while we are busy with another thread. */
static void service_abandoned(struct target *t)
{
	for (size_t i = 0; i < t->nabandoned;) {
		int st;
		pid_t w = waitpid(t->abandoned[i], &st, __WALL | WNOHANG);
		if (w == 0) {
			i++;
			continue;
		}
		if (w > 0 && WIFSTOPPED(st)) {
			/* a signal-delivery-stop carries a signal to pass on */
			int sig = (st >> 16) == 0 ? WSTOPSIG(st) : 0;
			PT(PTRACE_DETACH, t->abandoned[i], 0, sig);
		}
		t->abandoned[i] = t->abandoned[--t->nabandoned];
	}
}

/* waitpid(tid) until a status arrives or the deadline passes.  The tracee's
 * stop is normally reported within microseconds; poll with a short backoff
 * (SIGCHLD-based waiting is unreliable in a multi-threaded attacher whose
 * other threads do not block SIGCHLD).  1 status in *st, 0 timeout, -errno. */
static int wait_tid(struct target *t, pid_t tid, int *st, double deadline)
{
	long us = 5;

	for (;;) {
		pid_t w = waitpid(tid, st, __WALL | WNOHANG);
		if (w == tid)
			return 1;
		if (w < 0 && errno != EINTR)
			return -errno;
		if (t->nabandoned)
			service_abandoned(t);
		if (ha_now_ms() >= deadline)
			return 0;
		/* Most stops come within microseconds (the end of a short
		 * call, a breakpoint): start with short sleeps (the helper
		 * thread runs with 1 us timer slack), then back off.  Sleeping
		 * rather than sched_yield() also behaves on a loaded machine,
		 * where a yield can cost a whole time slice. */
		sleep_us(us);
		if (us < 200)
			us *= 2;
	}
}

/* After PTRACE_INTERRUPT: wait for the interrupt stop. */
static int wait_interrupt_stop(struct target *t, pid_t tid, double deadline)
{
	for (;;) {
		int st, rc = wait_tid(t, tid, &st, deadline);
		if (rc == 0)
			return STOP_TIMEOUT;
		if (rc < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return STOP_GONE;
		if (!WIFSTOPPED(st))
			continue;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			return WSTOPSIG(st) == SIGTRAP ? STOP_OK : STOP_GROUP;
		/* A signal arrived first (signal-delivery-stop): deliver it as
		 * if we were not there; our interrupt stop comes next. */
		PT(PTRACE_CONT, tid, 0, (st >> 16) == 0 ? WSTOPSIG(st) : 0);
	}
}

/* ------------------------------------------------------------------ */
/* preflight and symbol resolution                                     */
/* ------------------------------------------------------------------ */

static int preflight(struct target *t)
{
	char buf[128];
	int cls, mach, interp;

	if (t->pid <= 0 || t->pid == getpid()) {
		ha_err(t->err, t->errlen, "invalid target PID %d", (int)t->pid);
		return -1;
	}
	if (kill(t->pid, 0) < 0 && errno == ESRCH) {
		ha_err(t->err, t->errlen, "no process with PID %d", (int)t->pid);
		return -1;
	}
	if (ha_proc_status_field(t->pid, 0, "State", buf, sizeof buf) == 0 && buf[0] == 'T') {
		ha_err(t->err, t->errlen, "process %d is stopped (job control); "
		       "resume it with kill -CONT %d first", (int)t->pid, (int)t->pid);
		return -1;
	}
	if (ha_proc_status_field(t->pid, 0, "TracerPid", buf, sizeof buf) == 0 &&
	    atoi(buf) != 0) {
		ha_err(t->err, t->errlen, "process %d is already traced by PID %d (a debugger?)",
		       (int)t->pid, atoi(buf));
		return -1;
	}
	if (ha_proc_status_field(t->pid, 0, "Seccomp", buf, sizeof buf) == 0)
		t->seccomp = atoi(buf);
	if (t->seccomp == 1) {
		ha_err(t->err, t->errlen, "process %d runs in seccomp strict mode: "
		       "loading a library would kill it", (int)t->pid);
		return -1;
	}
	if (ha_elf_exe_info(t->pid, &cls, &mach, &interp) == 0) {
		if (cls != ELFCLASS64 || mach != EM_X86_64) {
			ha_err(t->err, t->errlen, "process %d is not a 64-bit x86_64 program "
			       "(ELF class %d, machine %d): not supported", (int)t->pid, cls, mach);
			return -1;
		}
		if (!interp) {
			ha_err(t->err, t->errlen, "process %d is statically linked: "
			       "it cannot load the agent", (int)t->pid);
			return -1;
		}
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
	if (t->o->agent_path && *base_name(t->o->agent_path))
		m = ha_maps_find_module(&t->maps, base_name(t->o->agent_path));
	return m ? m : ha_maps_find_module(&t->maps, HA_AGENT_SONAME);
}

static int resolve_init(struct target *t, uint64_t handle)
{
	const struct ha_map *agent;
	int rc;

	ha_maps_free(&t->maps);
	rc = ha_maps_read(t->pid, &t->maps);
	if (rc < 0) {
		ha_err(t->err, t->errlen, "cannot read /proc/%d/maps: %s", (int)t->pid, strerror(-rc));
		return -1;
	}
	agent = find_agent(t, handle);
	if (!agent) {
		ha_err(t->err, t->errlen, "the agent (%s) is not mapped in process %d",
		       t->o->agent_path ? t->o->agent_path : HA_AGENT_SONAME, (int)t->pid);
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

/* Load the symbol tables the thread inspections will need most (libc's,
 * libstdc++'s and the executable's) now, while no thread is stopped,
 * instead of during the first inspection.  Failures do not matter here. */
static void warm_symbols(struct target *t)
{
	static const char *const common[] = { "libc.so.6", "libc-", "libstdc++.so" };
	char path[64], exe[4096];
	const struct ha_map *m;
	uint64_t addr;
	ssize_t n;

	for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) {
		m = ha_maps_find_module(&t->maps, common[i]);
		if (m)
			ha_elf_symbol(t->pid, m, "malloc", &addr);
	}
	snprintf(path, sizeof path, "/proc/%d/exe", (int)t->pid);
	n = readlink(path, exe, sizeof exe - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	m = ha_maps_find_module(&t->maps, base_name(exe));
	if (m)
		ha_elf_symbol(t->pid, m, "main", &addr);
}

/* ------------------------------------------------------------------ */
/* choosing a thread                                                   */
/* ------------------------------------------------------------------ */

struct cand {
	pid_t tid;
	int rank;                /* lower is tried first */
};

/* How promising a thread is: 0 blocked in a system call (it holds no
 * user-space lock unless its stack says so, and stops at once), 1 blocked
 * elsewhere, 2 running, 3 in uninterruptible sleep (may not stop), -1 dead. */
static int thread_rank(pid_t pid, pid_t tid)
{
	char path[96], buf[512];
	const char *p;

	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (ha_read_file(path, buf, sizeof buf) <= 0)
		return -1;
	p = strrchr(buf, ')');  /* comm may contain anything, even ')' */
	if (!p || p[1] != ' ')
		return -1;
	switch (p[2]) {
	case 'Z': case 'X': case 'x':
		return -1;
	case 'D':
		return 3;
	default:
		break;
	}
	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (ha_read_file(path, buf, sizeof buf) <= 0 || strncmp(buf, "running", 7) == 0)
		return 2;
	return isdigit((unsigned char)buf[0]) ? 0 : 1;
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

/* Seize thread tid and wait until it is stopped.  TRY_OK: stopped in a
 * PTRACE_EVENT_STOP.  TRY_NEXT: gone or did not stop (why).  TRY_FATAL. */
static int seize_stop(struct target *t, pid_t tid, char *why, size_t whylen)
{
	double deadline;

	if (PT(PTRACE_SEIZE, tid, 0, 0) < 0) {
		int e = errno;
		char tracer[32];
		if (e == ESRCH) {
			snprintf(why, whylen, "thread %d exited", (int)tid);
			return TRY_NEXT;
		}
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
		snprintf(why, whylen, "cannot interrupt thread %d: %s", (int)tid, strerror(errno));
		PT(PTRACE_DETACH, tid, 0, 0);
		return TRY_NEXT;
	}
	deadline = ha_now_ms() + STOP_TIMEOUT_MS;
	if (deadline > t->deadline)
		deadline = t->deadline;
	switch (wait_interrupt_stop(t, tid, deadline)) {
	case STOP_OK:
		return TRY_OK;
	case STOP_GONE:
		snprintf(why, whylen, "thread %d exited", (int)tid);
		return TRY_NEXT;
	case STOP_TIMEOUT:
		/* PTRACE_DETACH needs a stopped tracee; keep it on a list and
		 * let it go as soon as it stops (or when the helper exits). */
		snprintf(why, whylen, "thread %d did not stop (uninterruptible sleep?)", (int)tid);
		if (t->nabandoned < MAX_ABANDONED)
			t->abandoned[t->nabandoned++] = tid;
		return TRY_NEXT;
	default: /* STOP_GROUP */
		PT(PTRACE_DETACH, tid, 0, 0);   /* stays in the group stop */
		ha_err(t->err, t->errlen, "process %d was stopped (job control) while attaching",
		       (int)t->pid);
		return TRY_FATAL;
	}
}

/* Debug registers of a thread, set or restored while it is stopped. */
static int set_dr(pid_t tid, int i, unsigned long v)
{
	return (int)PT(PTRACE_POKEUSER, tid, DR_OFFSET(i), v);
}

/* A thread was stopped inside malloc & co.: rather than let it go and hope
 * for better luck, let it run until it returns from the outermost unsafe
 * frame, with a hardware breakpoint on the return address.  Debug registers
 * are per thread (an int3 in the shared code would trap every thread), and
 * the thread runs at full speed meanwhile.
 *
 * The breakpoint must never outlive our attachment (an untraced thread
 * hitting it would die of SIGTRAP), so the thread is always stopped again
 * and the registers put back before this returns -- waiting for a long
 * time if it must.  STOP_OK: stopped at ex (in a SIGTRAP signal-delivery
 * stop that the next resume discards).  STOP_TIMEOUT: stopped elsewhere.
 * STOP_GONE: exited.  -1: cannot be done, thread untouched. */
static int run_to_exit(struct target *t, pid_t tid, const struct ha_safe_exit *ex)
{
	double deadline = ha_now_ms() + RUN_TO_EXIT_MS;
	uint64_t mask;
	long dr0, dr6, dr7;
	int rc = STOP_TIMEOUT, interrupted = 0;

	/* With SIGTRAP blocked, the kernel would force it through and reset
	 * the thread's SIGTRAP handler to SIG_DFL. */
	if (PT(PTRACE_GETSIGMASK, tid, sizeof mask, &mask) < 0 || ((mask >> (SIGTRAP - 1)) & 1))
		return -1;
	errno = 0;
	dr0 = PT(PTRACE_PEEKUSER, tid, DR_OFFSET(0), 0);
	dr6 = PT(PTRACE_PEEKUSER, tid, DR_OFFSET(6), 0);
	dr7 = PT(PTRACE_PEEKUSER, tid, DR_OFFSET(7), 0);
	if (errno || (dr7 & 0xff))  /* unreadable, or breakpoints in use */
		return -1;
	/* DR7 = L0 only: execute breakpoint, length 1, on DR0 */
	if (set_dr(tid, 0, ex->ip) < 0 || set_dr(tid, 7, 1) < 0) {
		set_dr(tid, 7, (unsigned long)dr7);
		set_dr(tid, 0, (unsigned long)dr0);
		return -1;
	}
	if (deadline > t->deadline)
		deadline = t->deadline;
	if (PT(PTRACE_CONT, tid, 0, 0) < 0)
		goto restore;   /* still stopped */

	for (;;) {
		struct user_regs_struct regs;
		siginfo_t si;
		int st, w = wait_tid(t, tid, &st, deadline);

		if (w == 0) {
			/* see above: we must get it back, so wait long */
			if (interrupted++ >= BKPT_WAIT_ROUNDS) {
				vlog(t, "thread %d: cannot stop it to remove the breakpoint at "
				     "0x%llx", (int)tid, (unsigned long long)ex->ip);
				return STOP_TIMEOUT;
			}
			if (interrupted == 1)
				PT(PTRACE_INTERRUPT, tid, 0, 0);
			deadline = ha_now_ms() + ABORT_WAIT_MS;
			continue;
		}
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return STOP_GONE;
		if (!WIFSTOPPED(st))
			continue;
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			if (interrupted)
				break;          /* stopped elsewhere: STOP_TIMEOUT */
			PT(PTRACE_CONT, tid, 0, 0);
			continue;
		}
		if ((st >> 16) != 0) {
			PT(PTRACE_CONT, tid, 0, 0);
			continue;
		}
		if (WSTOPSIG(st) == SIGTRAP && PT(PTRACE_GETSIGINFO, tid, 0, &si) == 0 &&
		    si.si_code == TRAP_HWBKPT && PT(PTRACE_GETREGS, tid, 0, &regs) == 0 &&
		    regs.rip == ex->ip) {
			if (regs.rsp == ex->sp) {
				rc = STOP_OK;
				break;
			}
			PT(PTRACE_CONT, tid, 0, 0);     /* same code, other frame */
			continue;
		}
		/* a signal of the program: deliver it, as without us */
		PT(PTRACE_CONT, tid, 0, WSTOPSIG(st));
	}
restore:
	set_dr(tid, 7, (unsigned long)dr7);
	set_dr(tid, 0, (unsigned long)dr0);
	set_dr(tid, 6, (unsigned long)dr6);
	return rc;
}

/* Stop thread tid and decide whether to use it.  TRY_OK: it is stopped at
 * a safe point, and h->tid and h->regs are set.  TRY_NEXT: it was let go
 * (why says why).  TRY_FATAL: t->err is set. */
static int try_thread(struct target *t, pid_t tid, struct hijack *h, char *why, size_t whylen)
{
	struct ha_safe_exit ex = { 0, 0 };
	double ts;
	int rc;

	rc = seize_stop(t, tid, why, whylen);
	if (rc != TRY_OK)
		return rc;
	ts = ha_now_ms();
	for (int hop = 0;; hop++) {
		if (PT(PTRACE_GETREGS, tid, 0, &h->regs) < 0) {
			snprintf(why, whylen, "cannot read registers of thread %d: %s", (int)tid,
			         strerror(errno));
			rc = -1;
		} else if (!stack_usable(t, h->regs.rsp, why, whylen)) {
			rc = 0;
			ex.ip = 0;
		} else {
			rc = ha_thread_is_safe_ex(t->pid, tid, &t->maps, &ex, why, whylen);
		}
		vlog(t, "thread %d: %s (inspected in %.3f ms)", (int)tid,
		     rc == 1 ? "safe" : why, ha_now_ms() - ts);
		if (rc != 0 || !ex.ip || hop == MAX_HOPS)
			break;
		ts = ha_now_ms();
		rc = run_to_exit(t, tid, &ex);
		vlog(t, "thread %d: ran to 0x%llx: %s (%.3f ms)", (int)tid,
		     (unsigned long long)ex.ip, rc == STOP_OK ? "there" : rc == STOP_GONE ?
		     "exited" : rc < 0 ? "not possible" : "not reached", ha_now_ms() - ts);
		if (rc == STOP_GONE) {
			snprintf(why, whylen, "thread %d exited", (int)tid);
			return TRY_NEXT;
		}
		if (rc != STOP_OK) {
			rc = 0;
			break;
		}
		ts = ha_now_ms();
	}
	if (rc != 1) {
		PT(PTRACE_DETACH, tid, 0, 0);   /* also discards a breakpoint SIGTRAP */
		return TRY_NEXT;
	}
	h->tid = tid;
	return TRY_OK;
}

/* Go round the threads until one is stopped at a safe point. */
static int pick_thread(struct target *t, struct hijack *h)
{
	char why[256] = "", last[300] = "no thread tried";
	long pause_us = 500;

	while (ha_now_ms() < t->deadline) {
		struct cand *c = NULL;
		size_t n = 0;
		double tl = ha_now_ms();
		int rc;

		/* fresh maps each round: thread stacks and modules come and go */
		ha_maps_free(&t->maps);
		rc = ha_maps_read(t->pid, &t->maps);
		if (rc == 0)
			rc = list_threads(t->pid, &c, &n);
		vlog(t, "%zu threads listed in %.3f ms", n, ha_now_ms() - tl);
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
		for (size_t i = 0; i < n && ha_now_ms() < t->deadline; i++) {
			int skip = 0;
			for (size_t k = 0; k < t->nabandoned; k++)
				skip |= t->abandoned[k] == c[i].tid;
			if (skip)
				continue;
			rc = try_thread(t, c[i].tid, h, why, sizeof why);
			if (rc == TRY_OK) {
				free(c);
				return 0;
			}
			if (rc == TRY_FATAL) {
				free(c);
				return -1;
			}
			snprintf(last, sizeof last, "thread %d %s", (int)c[i].tid, why);
			if (strncmp(why, "thread ", 7) == 0)
				snprintf(last, sizeof last, "%s", why);
		}
		free(c);
		/* Everyone was busy: give the threads time to leave the
		 * allocator or loader before the next round. */
		sleep_us(pause_us);
		if (pause_us < 20000)
			pause_us *= 2;
	}
	ha_err(t->err, t->errlen, "no thread reached a safe point within %d ms (last: %s)",
	       t->timeout_ms, last);
	return -1;
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
	const char *path = t->o->agent_path;
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
	       t->seccomp ? " (the target has a seccomp filter)" : "");
	return -1;
}

static int call_init(struct target *t, struct hijack *h)
{
	uint64_t argp, ret;

	if (remote_push(t, h, t->o->args, sizeof *t->o->args, &argp) < 0)
		return -1;
	if (remote_call(t, h, HA_AGENT_INIT_SYMBOL, t->init_fn, &argp, 1, &ret) < 0)
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
	if (preflight(t) < 0)
		return -1;
	rc = ha_maps_read(t->pid, &t->maps);
	if (rc < 0) {
		ha_err(t->err, t->errlen, "cannot read /proc/%d/maps: %s", (int)t->pid, strerror(-rc));
		return -1;
	}
	rc = -1;
	if (t->o->agent_loaded) {
		if (resolve_init(t, 0) < 0)
			goto out;
	} else if (resolve_dlopen(t) < 0) {
		goto out;
	}

	warm_symbols(t);
	t1 = ha_now_ms();
	if (pick_thread(t, &h) < 0)
		goto out;
	t->r->tid = h.tid;
	vlog(t, "hijacking thread %d after %d tries (%.3f ms)", (int)h.tid, t->r->tries,
	     ha_now_ms() - t1);

	t1 = ha_now_ms();
	if (save_state(t, &h) < 0)
		goto restore;
	if (!t->o->agent_loaded &&
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
	free(h.fp);
	ha_maps_free(&t->maps);
	return rc;
}

struct job {
	struct target *t;
	int rc;
};

static void *inject_thread(void *arg)
{
	struct job *j = arg;
	/* our short sleeps while the tracee runs should be short: the
	 * default 50 us of slack would dominate a remote call */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	j->rc = inject_run(j->t);
	return NULL;
}

int ha_inject(const struct ha_inject_opts *o, struct ha_inject_result *r,
              char *err, size_t errlen)
{
	struct target t;
	struct job j = { &t, -1 };
	pthread_t th;
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	memset(r, 0, sizeof *r);
	memset(&t, 0, sizeof t);
	t.o = o;
	t.r = r;
	t.pid = o->pid;
	t.err = err;
	t.errlen = errlen;
	t.t0 = ha_now_ms();
	t.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	t.deadline = t.t0 + t.timeout_ms;
	if (err && errlen)
		err[0] = '\0';
	if (!o->args || (!o->agent_loaded && (!o->agent_path || !o->agent_path[0]))) {
		ha_err(err, errlen, "ha_inject: missing agent path or init arguments");
		return -1;
	}

	/* The helper inherits our mask: block everything there so that the
	 * attacher's own signal handlers keep running on its own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	rc = pthread_create(&th, &attr, inject_thread, &j);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		pthread_join(th, NULL);
	else
		j.rc = inject_run(&t);  /* no thread: do it here, minus the safety net */

	ha_elf_cache_clear();
	ha_thread_safe_reset();
	r->ms = elapsed(&t);
	vlog(&t, "injection %s in %.3f ms", j.rc == 0 ? "done" : "failed", r->ms);
	return j.rc;
}
