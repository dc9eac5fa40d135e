/* inject_int.h -- the injector's private interfaces, shared by the files of
 * src/attach that implement inject.h and by nothing else.
 *
 *   inject.c        the whole injection, start to end, on its helper thread
 *   inject_log.c    progress lines and test hooks (calls none of the others)
 *   inject_ptrace.c every ptrace request, checked, named when it fails
 *   inject_wait.c   waiting for ptrace events of our tracees
 *   inject_resolve.c  where dlopen, dlerror and the agent's init are
 *   inject_pick.c   choosing the thread to hijack ("probes")
 *   inject_sched.c  short time slices for the threads on the attach's path
 *   inject_state.c  the hijacked thread's states; saving and restoring it
 *   inject_frame.c  the signal frame our calls return through
 *   inject_call.c   calls on the hijacked thread: dlopen, the agent's init
 *   inject_libs.c   glibc < 2.34: libdl and libpthread loaded first if missing
 *   inject_deliver.c  how the agent reaches the target: its path, a memfd, a copy
 *   inject_safe.c   is a stopped thread at a safe point? (inject_safe.h)
 *
 * Every function here runs on the helper thread of one injection, with that
 * injection's state (struct injection) as its first argument, except the
 * scheduling ones (any thread).  Errors: -1 with a one-line reason in
 * j->err, set once, by the function that saw the failure. */
#ifndef HA_INJECT_INT_H
#define HA_INJECT_INT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>

#include "inject.h"
#include "inject_safe.h"
#include "procmaps.h"
#include "sigframe.h"
#include "target.h"

#define PUSH_ROOM        HA_SIGFRAME_ROOM /* what we write below rsp ourselves, at most */
#define ABORT_WAIT_MS    1000       /* waiting for a timed-out call to stop */
#define MAX_PROBES       64         /* threads seized at once, at most */
#define MAX_TRIED        256        /* blocked threads found unsafe, remembered */
#define RTLD_DLOPEN_FLAG 0x80000000 /* __RTLD_DLOPEN, wanted by __libc_dlopen_mode */

/* The libraries of glibc before 2.34 the agent's dlsym and pthread_create
 * are in, when the target has not loaded them (inject_libs.c). */
enum { INJ_LIB_DL = 1, INJ_LIB_PTHREAD = 2 };

/* Signals the kernel forces on a fault: if one of them is blocked when the
 * fault happens, the kernel unblocks it AND resets the process's handler to
 * SIG_DFL (force_sig_info_to_task).  So they stay unblocked during our calls;
 * ptrace reports them to us before any handler could run. */
#define SYNC_SIGNALS ((1ULL << (SIGSEGV - 1)) | (1ULL << (SIGBUS - 1)) | \
                      (1ULL << (SIGILL - 1)) | (1ULL << (SIGFPE - 1)) | \
                      (1ULL << (SIGTRAP - 1)) | (1ULL << (SIGSYS - 1)))

/* Every ptrace request goes through inj_ptrace (inject_ptrace.c), which
 * names it in j->pt_err when it fails; PT() takes pointers and integers
 * alike for addr and data. */
enum pt_rc {
	PT_OK,                   /* done */
	PT_GONE,                 /* ESRCH: exited, being killed, or not stopped */
	PT_FAILED,               /* any other error (errno, j->pt_err) */
};
#define PT(j, req, tid, addr, data) \
	inj_ptrace((j), (req), (tid), (uint64_t)(uintptr_t)(addr), (uint64_t)(uintptr_t)(data))

/* A thread seized while looking for one to hijack (see inject_pick.c). */
enum { PR_FREE, PR_WAIT };

struct probe {
	pid_t tid;
	int state;               /* PR_WAIT: interrupted, its stop not seen yet */
	int late;                /* did not stop within STOP_TIMEOUT_MS */
	int rank;                /* see thread_rank */
	double since;            /* interrupted at */
};

/* The state of one injection (the target itself is o->target, as
 * ha_target_check found it). */
struct injection {
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
	uint64_t dlsym_fn;       /* dlsym, for the agent (agent/imports.h) */
	const char *dlopen_name;
	int dlopen_flags;
	unsigned libs_need;      /* INJ_LIB_*: to load before the agent (glibc < 2.34), 0: none */
	uint64_t libs_fn;        /* __libc_dlopen_mode, which loads them */
	int libs_tried;          /* they were loaded: inj_resolve_dlopen plans no more */
	char libs_why[200];      /* what was tried, for the refusal when dlsym is still missing */
	uint64_t init_fn;        /* heapattach_agent_init, once known */
	uint64_t syscall_fn;     /* libc's syscall(), for a delivery (inject_deliver.c) */
	uint64_t sigreturn_fn;   /* "mov $15,%rax; syscall" in libc (__restore_rt) */
	uint64_t pop_rdi_ret;    /* "pop %rdi; ret" in libc, for the mark (inject_frame.c) */
	uint64_t raise_fn;       /* libc's raise, for the mark */
	int mark_sig;            /* the mark's signal, 0: none (the calls run on syscall stops) */
	struct probe probe[MAX_PROBES];
	int nlive;               /* probes not PR_FREE */
	pid_t chosen;            /* the probe found at a safe point */
	struct user_regs_struct chosen_regs;
	int fatal;               /* stop looking (j->err set) */
	char last[300];          /* why the last probe was not used */
	int round;               /* of the thread search */
	pid_t tried[MAX_TRIED];  /* blocked threads found unsafe: try others first */
	size_t ntried;
	int sigfd;               /* signalfd for SIGCHLD, or -1 (see inj_wait_event) */
	/* Status changes of tracees other than the one waited for: the
	 * probes' (set by inj_pick_thread).  A pointer, so that inject_wait.c,
	 * below inject_pick.c, need not call back into it by name. */
	void (*other_event)(struct injection *j, pid_t tid, int st);
	int watching;            /* o->watch/o->step apply (the init call runs) */
	char pt_err[96];         /* the last failed ptrace request and its error */
	char die_at[64];         /* HEAPATTACH_TEST_DIE_AT's (or _STOP_AT's) point, "" if unset */
	int die_after;           /* its N: hits left */
	int stop_only;           /* HEAPATTACH_TEST_STOP_AT: stop there (SIGSTOP), not die */
};

/* Where the hijacked thread is; what is left to do with it follows from
 * that alone (inj_release).  Changed only by inj_hij_set (inject_state.c),
 * which knows the allowed steps:
 *
 *   NONE -> STOPPED -> SAVED -> CALLING <-> AT_SIGRETURN    any live state
 *                                  |  \        ^           -> RELEASED
 *                                  |   MARKED -'           -> GONE
 *                                  '-> ENDED
 *
 * (CALLING -> AT_SIGRETURN directly when the call has no mark; CALLING ->
 * CALLING when a call starts after a legacy call, which ends at a signal
 * stop: dlerror's, then another way of delivering the agent.) */
enum hij_state {
	HIJ_NONE,                /* no thread chosen yet */
	HIJ_STOPPED,             /* stopped by the thread search, nothing of ours in it:
	                          * let go as it is */
	HIJ_SAVED,               /* its state saved (regs, fp, sigmask below): restore */
	HIJ_CALLING,             /* running code of ours (a call, or the way out of the
	                          * last one), or stopped inside it: restore at a stop;
	                          * the frame restores it should we die */
	HIJ_MARKED,              /* this call's mark seen: on to its rt_sigreturn */
	HIJ_AT_SIGRETURN,        /* at the syscall-entry stop of the frame's rt_sigreturn:
	                          * the next call starts here; restore after
	                          * inj_end_calls, or let it run that rt_sigreturn */
	HIJ_ENDED,               /* the calls over, at an interrupt stop: restore */
	HIJ_RELEASED,            /* detached: restored, or on its way back through the
	                          * frame, or back in its own code already */
	HIJ_GONE,                /* out of our hands: exited, or could not be stopped or
	                          * detached (the kernel lets go of it when the helper
	                          * thread exits) */
};

/* The hijacked thread and what must be put back. */
struct hijack {
	pid_t tid;
	enum hij_state state;
	struct user_regs_struct regs;
	unsigned char *fp;
	size_t fplen;
	int fptype;              /* NT_X86_XSTATE or NT_PRFPREG */
	uint64_t sigmask;
	uint64_t sp;             /* pushed data grows down from here */
	uint64_t frame;          /* the signal frame (inject_frame.c), 0 before */
	uint64_t mark_chain;     /* the mark's return chain below it, 0 if none: calls start there */
	uint64_t call_mask;      /* the signal mask during the calls (inj_prepare_calls) */
	/* its time slice: a resource of its own, put back whatever the state */
	uint64_t sched_old;      /* its time slice, while sched_set */
	int sched_set;           /* inj_hijack_sched changed it */
};

/* inject_log.c: a progress line on stderr when o->verbose. */
void inj_log(const struct injection *j, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* inject_log.c: for tests of our own death, HEAPATTACH_TEST_DIE_AT=POINT[:N]
 * kills heapattach (SIGKILL) the Nth time (default 1) the injection passes
 * POINT; for tests of the target's death, HEAPATTACH_TEST_STOP_AT=POINT[:N]
 * stops heapattach there instead (SIGSTOP to itself, after a -v line
 * saying so), so that a test can kill the target and then SIGCONT it.
 * Returns 0 otherwise.  inj_test_die_in is the point KIND@WHAT
 * (e.g. "syscall@dlopen"); inj_test_hooks_read reads the environment, once,
 * before the injection starts. */
void inj_test_hooks_read(struct injection *j);
int inj_test_die_at(struct injection *j, const char *point);
int inj_test_die_in(struct injection *j, const char *kind, const char *what);

/* inject_ptrace.c: one ptrace request, checked (see enum pt_rc). */
enum pt_rc inj_ptrace(struct injection *j, enum __ptrace_request req, pid_t tid, uint64_t addr,
                      uint64_t data);

/* inject_wait.c */
void inj_wait_event(struct injection *j, double until);
int inj_drain_events(struct injection *j, pid_t tid, int *st);
int inj_wait_tid(struct injection *j, pid_t tid, int *st, double deadline);

/* inject_resolve.c: dlopen, dlerror and dlsym in the target.  0 (with
 * j->libs_need set when libdl or libpthread must be loaded first), or -1
 * with the one-line refusal in j->err. */
int inj_resolve_dlopen(struct injection *j);
/* A library of glibc in maps by its soname (so), else by its file (file:
 * "libdl-2" for libdl-2.31.so); NULL if not mapped. */
const struct ha_map *inj_find_lib(const struct ha_maps *maps, const char *so, const char *file);
/* dlsym in the target (libc from glibc 2.34, else libdl with libpthread
 * loaded) into j->dlsym_fn: 0, or -1 (then 0 there). */
int inj_resolve_dlsym(struct injection *j);
int inj_resolve_init(struct injection *j, int reread);
void inj_warm_up(pid_t pid, const struct ha_maps *maps);

/* inject_pick.c */
int inj_pick_thread(struct injection *j, struct hijack *h);

/* inject_sched.c */
void inj_sched_prefer(pid_t tid, int boost);
void inj_hijack_sched(struct injection *j, struct hijack *h, int on);

int inj_resolve_sigreturn(struct injection *j);
void inj_choose_mark(struct injection *j, pid_t tid, uint64_t blocked);

/* inject_state.c */
void inj_hij_set(struct hijack *h, enum hij_state to);
int inj_save_state(struct injection *j, struct hijack *h);
int inj_prepare_calls(struct injection *j, struct hijack *h);
void inj_let_go(struct injection *j, struct hijack *h, int sig);
int inj_release(struct injection *j, struct hijack *h, int have_err);

/* inject_frame.c */
int inj_write_frame(struct injection *j, struct hijack *h);
int inj_write_mark(struct injection *j, struct hijack *h);

/* inject_call.c */
int inj_push(struct injection *j, struct hijack *h, const void *data, size_t n,
             uint64_t *addr);
int inj_load_agent(struct injection *j, struct hijack *h, uint64_t path);
int inj_call(struct injection *j, struct hijack *h, const char *what, uint64_t fn,
             const uint64_t *args, int nargs);

/* inject_libs.c: the bytes of the names of the libraries in j->libs_need
 * (0: none to load), to push before the frame; then, at `names` where they
 * were pushed, each loaded with __libc_dlopen_mode, dlopen and dlsym
 * resolved again (inj_resolve_dlopen), and the init arguments at `args`
 * given the new dlsym.  0, or -1 with j->err set (the refusal naming what
 * was tried). */
size_t inj_libs_room(const struct injection *j);
int inj_load_libs(struct injection *j, struct hijack *h, uint64_t names, uint64_t args);

/* inject_deliver.c: the room the delivery needs on the stack (pushed by
 * the caller before the frame, at `room`); then the agent loaded (dlopen)
 * by whichever way works.  0, or -1 with j->err set. */
size_t inj_deliver_room(const struct injection *j);
int inj_deliver_agent(struct injection *j, struct hijack *h, uint64_t room, size_t len);
int inj_call_init(struct injection *j, struct hijack *h, uint64_t args);
int inj_end_calls(struct injection *j, struct hijack *h);

#endif
