/* inject_call.c -- calls on the hijacked thread: dlopen of the agent (and
 * dlerror when it fails), then the agent's init.
 *
 * Contract: a call starts from the thread's saved registers (so fs, TLS and
 * the rest are its own) with the System V arguments set, its rsp at the
 * signal frame below what we pushed (inject_frame.c), whose first word is
 * the return address: libc's rt_sigreturn sequence -- or at the mark's
 * return chain below it, which ends in that frame.  With a mark it runs
 * with PTRACE_CONT up to the mark's signal, then one system call on to the
 * frame's rt_sigreturn; without one, on syscall stops throughout.  Its end is the
 * syscall-entry stop of that rt_sigreturn, which we never let run: the next
 * call starts from there, and inj_end_calls takes the thread to an
 * interrupt stop for the exact restore.  Should heapattach die at any
 * moment, the thread returns through the frame to where it was.  The price:
 * a return value cannot be read (the sequence overwrites rax), so the agent
 * writes its own into the arguments we pushed, and dlopen's success is told
 * by the maps.  Only dlerror, called when dlopen failed, returns the old way
 * (to address 0: the SIGSEGV stop at rip 0 is its end), for its text.
 * Meanwhile every other stop is handled as the kernel would have without
 * us (see wait_call); a fault inside the call is reported as a crash of
 * it, and a call that does not return within the budget is abandoned with
 * the thread stopped again, so that the caller can restore it either way.
 * Strings read back from the target are bounded. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "ha_proto.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#define CALL_MIN_MS      2000       /* a remote call always gets at least this */
#define X86_EFLAGS_TF    0x100
#define X86_EFLAGS_DF    0x400
#define SIGRETURN_LEN    9          /* mov $15,%rax (7 bytes); syscall (2) */
#define MARK_STACK       4096       /* raise's stack below the frame, at most */

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

/* Copy n bytes below the data already pushed on the thread's stack,
 * 16-byte aligned (before the frame is written: the calls' stack grows down
 * from it).  Address in *addr.  0 or -1 (j->err set). */
int inj_push(struct injection *j, struct hijack *h, const void *data, size_t n, uint64_t *addr)
{
	uint64_t a = (h->sp - n) & ~(uint64_t)15;
	int rc;

	if (h->frame) {
		ha_err(j->err, j->errlen, "internal error: data pushed below the signal frame");
		return -1;
	}
	if (n > PUSH_ROOM / 2 || h->regs.rsp - a > PUSH_ROOM) {
		ha_err(j->err, j->errlen, "too much data to push on the stack of thread %d",
		       (int)h->tid);
		return -1;
	}
	rc = ha_remote_write(j->pid, a, data, n);
	if (rc < 0) {
		ha_err(j->err, j->errlen, "cannot write to the stack of thread %d: %s",
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
static void report_crash(struct injection *j, struct hijack *h, const char *what, int sig,
                         const struct user_regs_struct *regs)
{
	siginfo_t si;
	char extra[96] = "";

	if (PT(j, PTRACE_GETSIGINFO, h->tid, 0, &si) == PT_OK) {
		if (sig == SIGSYS)
			snprintf(extra, sizeof extra, " (seccomp denied system call %d)",
			         si.si_syscall);
		else
			snprintf(extra, sizeof extra, " (address 0x%llx)",
			         (unsigned long long)(uintptr_t)si.si_addr);
	}
	ha_err(j->err, j->errlen, "%s crashed in process %d: SIG%s at rip 0x%llx%s; "
	       "thread %d restored", what, (int)j->pid, signame(sig),
	       (unsigned long long)regs->rip, extra, (int)h->tid);
}

/* Has the thread gone back to its own code through the frame (a mark
 * missed, say)?  Then it is in its own context again, and must not be put
 * back to where it was.  Told by its signal mask, which the frame's
 * rt_sigreturn put back (during the calls it is h->call_mask); not by rsp,
 * which its own code may take anywhere.  A thread whose own mask is the
 * calls' cannot be told: taken as still in the call.  (Asked only once a
 * call has run, so after inj_prepare_calls set h->call_mask.) */
static int returned(struct injection *j, const struct hijack *h)
{
	uint64_t mask;

	return h->sigmask != h->call_mask &&
	       PT(j, PTRACE_GETSIGMASK, h->tid, sizeof mask, &mask) == PT_OK &&
	       mask != h->call_mask;
}

/* The call did not return in time: stop the thread so that it can be put
 * back where it was (abandoning the call half-way: dlopen may hold the
 * loader lock, the target may be left in a bad state; nothing better is
 * possible).  Returns -1 always; the thread is left stopped for the
 * restore, let go (it had returned through the frame already: RELEASED),
 * or out of reach (GONE). */
static int abort_call(struct injection *j, struct hijack *h, const char *what, int ms)
{
	double deadline = ha_now_ms() + ABORT_WAIT_MS;
	int st;

	/* gone: its exit comes next; any other failure: it cannot be stopped */
	if (PT(j, PTRACE_INTERRUPT, h->tid, 0, 0) == PT_FAILED)
		deadline = 0;
	while (inj_wait_tid(j, h->tid, &st, deadline) == 1) {
		if (WIFEXITED(st) || WIFSIGNALED(st))
			break;
		if (WIFSTOPPED(st) && (st >> 16) == 0 && WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			/* a syscall stop is no place to restore at (see
			 * inj_end_calls): on to the interrupt stop */
			if (PT(j, PTRACE_CONT, h->tid, 0, 0) == PT_FAILED)
				break;
			continue;
		}
		if (WIFSTOPPED(st)) {
			if (returned(j, h)) {
				inj_let_go(j, h, 0);   /* in its own context: as it is */
				ha_err(j->err, j->errlen, "%s did not return within %d ms in process "
				       "%d; thread %d had gone back to its own code through the "
				       "frame", what, ms, (int)j->pid, (int)h->tid);
				return -1;
			}
			ha_err(j->err, j->errlen, "%s did not return within %d ms in process %d "
			       "(deadlock?); call abandoned, thread %d restored, the target may "
			       "be left in a bad state", what, ms, (int)j->pid, (int)h->tid);
			return -1;
		}
	}
	inj_hij_set(h, HIJ_GONE);
	ha_err(j->err, j->errlen, "%s did not return within %d ms in process %d and thread %d "
	       "cannot be stopped: it was left inside the call", what, ms, (int)j->pid,
	       (int)h->tid);
	return -1;
}

/* How a call goes on after a stop: with a mark, to its end without a stop
 * at each system call; else (or once the mark is seen) to the next one. */
static enum __ptrace_request resume_req(const struct hijack *h, uint64_t ret_sp)
{
	return ret_sp || (h->mark_chain && h->state != HIJ_MARKED) ? PTRACE_CONT : PTRACE_SYSCALL;
}

/* Is this signal-delivery-stop the mark (inject_frame.c): a tgkill, with
 * the thread inside the raise the chain entered with rsp at the frame?
 * (Not si_pid: it is the sender's pid in the target's own pid namespace.)
 * Should another sender's tgkill of that signal land right there, the
 * call goes on on syscall stops to the same end, and our own mark, met
 * later, is delivered: ignored. */
static int is_mark(struct injection *j, const struct hijack *h,
                   const struct user_regs_struct *regs)
{
	siginfo_t si;

	return regs->rsp < h->frame && regs->rsp >= h->frame - MARK_STACK &&
	       PT(j, PTRACE_GETSIGINFO, h->tid, 0, &si) == PT_OK && si.si_code == SI_TKILL;
}

/* Let the thread, stopped during a call, go on with req, delivering sig.
 * Gone (killed meanwhile): 0, its end is the next status.  Any other
 * failure: -1 with j->err set, the thread still stopped (and restored). */
static int resume(struct injection *j, struct hijack *h, const char *what,
                  enum __ptrace_request req, int sig)
{
	if (PT(j, req, h->tid, 0, sig) != PT_FAILED)
		return 0;
	ha_err(j->err, j->errlen, "cannot resume %s on thread %d: %s", what, (int)h->tid,
	       j->pt_err);
	return -1;
}

/* What a status of the hijacked thread during a call is (classify_stop). */
enum stop_kind {
	STOP_EXIT,               /* it exited or was killed */
	STOP_NONE,               /* not a stop (continued): wait on */
	STOP_EVENT,              /* a ptrace event stop (interrupt, group stop) */
	STOP_SYSCALL,            /* a syscall stop inside the call */
	STOP_END,                /* the syscall-entry stop of the frame's rt_sigreturn */
	STOP_RETURNED,           /* a legacy call's return to address 0 (SIGSEGV) */
	STOP_MARK,               /* the mark's signal (inject_frame.c) */
	STOP_FAULT,              /* a fault: a synchronous signal the kernel sent */
	STOP_SIGNAL,             /* another signal for the thread */
	STOP_UNREADABLE,         /* its registers cannot be read (j->pt_err) */
};

/* Classify status st of the thread during a call (ret_sp: see wait_call);
 * the registers of a signal or syscall stop in *regs. */
static enum stop_kind classify_stop(struct injection *j, const struct hijack *h, int st,
                                    uint64_t ret_sp, struct user_regs_struct *regs)
{
	siginfo_t si;
	int sig;

	if (WIFEXITED(st) || WIFSIGNALED(st))
		return STOP_EXIT;
	if (!WIFSTOPPED(st))
		return STOP_NONE;
	if ((st >> 16) != 0)
		return STOP_EVENT;
	if (PT(j, PTRACE_GETREGS, h->tid, 0, regs) != PT_OK)
		return STOP_UNREADABLE;
	sig = WSTOPSIG(st);
	if (sig == (SIGTRAP | 0x80))
		return !ret_sp && regs->orig_rax == SYS_rt_sigreturn &&
		       regs->rip == j->sigreturn_fn + SIGRETURN_LEN && regs->rsp == h->frame + 8 ?
		       STOP_END : STOP_SYSCALL;
	if (ret_sp && sig == SIGSEGV && regs->rip == 0 && regs->rsp == ret_sp)
		return STOP_RETURNED;
	if (!ret_sp && h->mark_chain && h->state == HIJ_CALLING && sig == j->mark_sig &&
	    is_mark(j, h, regs))
		return STOP_MARK;
	/* kernel-generated (si_code > 0): a fault, not a kill() of that signal */
	if (((SYNC_SIGNALS >> (sig - 1)) & 1) &&
	    (PT(j, PTRACE_GETSIGINFO, h->tid, 0, &si) != PT_OK || si.si_code > 0))
		return STOP_FAULT;
	return STOP_SIGNAL;
}

/* Wait for the end of a call.  ret_sp 0: the syscall-entry stop of the
 * frame's rt_sigreturn (rip right after its syscall instruction, rsp just
 * above the popped return address); otherwise the SIGSEGV stop at rip 0
 * with rsp == ret_sp, its return value in *ret.  Other stops are handled
 * as the kernel would have without us: syscall stops and interrupts go on
 * (a group stop is re-entered at detach), a signal that got through the
 * mask (SIGSTOP) is delivered, a fault is a crash of the call. */
static int wait_call(struct injection *j, struct hijack *h, const char *what, uint64_t ret_sp,
                     uint64_t *ret)
{
	int ms = j->timeout_ms > CALL_MIN_MS ? j->timeout_ms : CALL_MIN_MS;
	double deadline = ha_now_ms() + ms;
	unsigned nsys = 0;
	double t_mark = 0;

	for (;;) {
		struct user_regs_struct regs;
		enum __ptrace_request req = resume_req(h, ret_sp);
		int st, sig = 0, rc = inj_wait_tid(j, h->tid, &st, deadline);

		if (rc == 0)
			return abort_call(j, h, what, ms);
		if (rc < 0) {
			inj_hij_set(h, HIJ_GONE);
			ha_err(j->err, j->errlen, "thread %d vanished during %s: %s", (int)h->tid, what,
			       strerror(-rc));
			return -1;
		}
		switch (classify_stop(j, h, st, ret_sp, &regs)) {
		case STOP_EXIT:
			inj_hij_set(h, HIJ_GONE);   /* nothing left to restore */
			if (WIFSIGNALED(st))
				ha_err(j->err, j->errlen, "process %d was killed by SIG%s during %s",
				       (int)j->pid, signame(WTERMSIG(st)), what);
			else
				ha_err(j->err, j->errlen, "process %d exited (status %d) during %s",
				       (int)j->pid, WEXITSTATUS(st), what);
			return -1;
		case STOP_NONE:
			continue;
		case STOP_UNREADABLE:
			ha_err(j->err, j->errlen, "cannot read registers of thread %d: %s",
			       (int)h->tid, j->pt_err);
			return -1;
		case STOP_END:
			if (h->state == HIJ_MARKED)
				inj_log(j, "%s: marked its end, rt_sigreturn %.3f ms later", what,
				        ha_now_ms() - t_mark);
			else
				inj_log(j, "%s: %u syscall stops", what, nsys);
			inj_hij_set(h, HIJ_AT_SIGRETURN);
			return 0;
		case STOP_RETURNED:
			*ret = regs.rax;
			return 0;
		case STOP_EVENT:
			break;                      /* keep going */
		case STOP_SYSCALL:
			nsys++;
			inj_test_die_in(j, "syscall", what);
			break;
		case STOP_MARK:
			/* the call is over: the signal dropped, on to the
			 * frame's rt_sigreturn (the next system call) */
			inj_hij_set(h, HIJ_MARKED);
			t_mark = ha_now_ms();
			inj_test_die_in(j, "mark", what);
			req = PTRACE_SYSCALL;
			break;
		case STOP_FAULT:
			/* a fault in the call -- unless the thread is back in its
			 * own code, whose fault it is: delivered to it, the thread
			 * let go as it is */
			if (returned(j, h)) {
				inj_let_go(j, h, WSTOPSIG(st));
				ha_err(j->err, j->errlen, "%s: thread %d went back to its own code "
				       "through the frame before its end was seen", what, (int)h->tid);
				return -1;
			}
			report_crash(j, h, what, WSTOPSIG(st), &regs);
			return -1;
		case STOP_SIGNAL:
			sig = WSTOPSIG(st);         /* one our mask cannot hold back */
			break;
		}
		if (resume(j, h, what, req, sig) < 0)
			return -1;
	}
}

/* Call fn(args...) on the hijacked thread.  Safe (legacy == 0): it returns
 * through the signal frame, its return value lost.  Legacy: it returns to
 * address 0, its return value in *ret (a window in which our death kills
 * the target: see the top of this file).  Starts from the saved registers
 * so that fs (TLS) and the rest are the thread's own. */
static int remote_call(struct injection *j, struct hijack *h, const char *what, uint64_t fn,
                       const uint64_t *args, int nargs, int legacy, uint64_t *ret)
{
	struct user_regs_struct regs = h->regs;
	/* its return address: the mark's chain if any, else rt_sigreturn */
	uint64_t sp = h->mark_chain ? h->mark_chain : h->frame;
	double t1 = ha_now_ms();
	int rc, first;

	if (!h->frame) {
		ha_err(j->err, j->errlen, "internal error: a call before the signal frame");
		return -1;
	}
	if (h->mark_chain && inj_write_mark(j, h) < 0)
		return -1;
	if (legacy) {                    /* below the mark, also 8 mod 16 */
		uint64_t zero = 0;
		sp -= 16;
		rc = ha_remote_write(j->pid, sp, &zero, sizeof zero);
		if (rc < 0) {
			ha_err(j->err, j->errlen, "cannot write to the stack of thread %d: %s",
			       (int)h->tid, strerror(-rc));
			return -1;
		}
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
	/* not in a syscall: nothing to restart; at the syscall-entry stop of
	 * the last call's rt_sigreturn, that syscall is skipped */
	regs.orig_rax = (uint64_t)-1;
	regs.eflags &= ~(uint64_t)(X86_EFLAGS_DF | X86_EFLAGS_TF);
	if (PT(j, PTRACE_SETREGS, h->tid, 0, &regs) != PT_OK) {
		ha_err(j->err, j->errlen, "cannot start %s on thread %d: %s", what, (int)h->tid,
		       j->pt_err);
		return -1;
	}
	first = h->state == HIJ_SAVED;
	inj_hij_set(h, HIJ_CALLING);
	if (first && inj_prepare_calls(j, h) < 0)   /* from now on the frame restores it all */
		return -1;
	inj_test_die_at(j, what);
	/* PT_GONE: killed since its last stop (SIGKILL takes a tracee out of
	 * it); wait_call reaps it and says how it died */
	if (PT(j, resume_req(h, legacy ? sp + 8 : 0), h->tid, 0, 0) == PT_FAILED) {
		ha_err(j->err, j->errlen, "cannot start %s on thread %d: %s", what, (int)h->tid,
		       j->pt_err);
		return -1;
	}
	rc = wait_call(j, h, what, legacy ? sp + 8 : 0, ret);
	if (rc == 0)
		inj_log(j, "%s returned in %.3f ms", what, ha_now_ms() - t1);
	return rc;
}

/* After the last call, from the syscall-entry stop of its rt_sigreturn, to
 * a stop where the thread can be restored exactly: the interrupt stop of
 * PTRACE_INTERRUPT, taken on its way out of that system call (skipped).
 * Its rip goes back to the rt_sigreturn sequence: should we die in between,
 * it runs it.  (Restoring right at the syscall stop would not do: the
 * kernel restarts an interrupted system call only when it leaves through
 * its signal code, as it does after an interrupt stop.)  0 or -1. */
int inj_end_calls(struct injection *j, struct hijack *h)
{
	double deadline = ha_now_ms() + ABORT_WAIT_MS;
	struct user_regs_struct regs;
	int st;

	if (h->state != HIJ_AT_SIGRETURN)
		return 0;              /* at an interrupt or signal stop already */
	if (PT(j, PTRACE_GETREGS, h->tid, 0, &regs) != PT_OK)
		goto fail;
	regs.rip = j->sigreturn_fn;
	regs.orig_rax = (uint64_t)-1;
	if (PT(j, PTRACE_SETREGS, h->tid, 0, &regs) != PT_OK ||
	    PT(j, PTRACE_INTERRUPT, h->tid, 0, 0) != PT_OK)
		goto fail;
	inj_test_die_at(j, "end");
	if (PT(j, PTRACE_CONT, h->tid, 0, 0) != PT_OK)
		goto fail;
	inj_hij_set(h, HIJ_CALLING);   /* on its way out of the last call */
	snprintf(j->pt_err, sizeof j->pt_err, "no stop within %d ms", ABORT_WAIT_MS);
	while (inj_wait_tid(j, h->tid, &st, deadline) == 1) {
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			inj_hij_set(h, HIJ_GONE);
			ha_err(j->err, j->errlen, "process %d ended after the agent's init", (int)j->pid);
			return -1;
		}
		if (!WIFSTOPPED(st))
			continue;
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			inj_hij_set(h, HIJ_ENDED);
			return 0;
		}
		/* a signal our mask cannot hold back (SIGSTOP): delivered;
		 * gone meanwhile: its exit is the next status */
		if (PT(j, PTRACE_CONT, h->tid, 0, (st >> 16) ? 0 : WSTOPSIG(st)) == PT_FAILED)
			break;
	}
fail:
	ha_err(j->err, j->errlen, "cannot stop thread %d after the agent's init: %s", (int)h->tid,
	       j->pt_err);
	return -1;
}

/* dlopen(agent path pushed at `path`) in the target; then whether the agent
 * is mapped tells its success (inj_resolve_init).  0: loaded; 1: dlopen ran
 * but the agent is not mapped, why in j->err (dlerror's text), the thread
 * ready for the next call; -1: a call failed (j->err), no more calls. */
int inj_load_agent(struct injection *j, struct hijack *h, uint64_t path)
{
	uint64_t args[2] = { path, (uint64_t)(uint32_t)j->dlopen_flags }, errp = 0;
	char text[512], why[300];
	int rc = 1;

	if (remote_call(j, h, j->dlopen_name, j->dlopen_fn, args, 2, 0, NULL) < 0)
		return -1;
	if (inj_resolve_init(j, 1) == 0)
		return 0;
	snprintf(why, sizeof why, "%s", j->err);   /* the agent is not mapped: why? */
	j->err[0] = '\0';

	snprintf(text, sizeof text, "%s", why);
	if (j->dlerror_fn && remote_call(j, h, "dlerror", j->dlerror_fn, NULL, 0, 1, &errp) < 0) {
		snprintf(text, sizeof text, "%s (then %.200s)", why, j->err);
		rc = -1;
	} else if (j->dlerror_fn && errp && remote_read_string(j->pid, errp, text, sizeof text) < 0) {
		snprintf(text, sizeof text, "unknown reason (dlerror text unreadable)");
	}
	ha_err(j->err, j->errlen, "dlopen in target failed: %s%s", text,
	       j->target->seccomp_filter ? " (the target has a seccomp filter)" : "");
	return rc;
}

/* fn(args...) on the hijacked thread, its return value lost (see the top of
 * this file).  0 or -1 (j->err set). */
int inj_call(struct injection *j, struct hijack *h, const char *what, uint64_t fn,
             const uint64_t *args, int nargs)
{
	return remote_call(j, h, what, fn, args, nargs, 0, NULL);
}

/* heapattach_agent_init(args pushed at `argp`) in the target, the caller's
 * o->watch and o->step served meanwhile; the value the agent wrote into
 * args->result in j->r->init_ret. */
int inj_call_init(struct injection *j, struct hijack *h, uint64_t argp)
{
	struct ha_init_args back;
	int rc, e;

	/* The agent connects and expects its CONFIG during this call. */
	j->watching = j->o->watch && j->o->step;
	j->r->t_init = ha_now_ms();
	rc = remote_call(j, h, HA_AGENT_INIT_SYMBOL, j->init_fn, &argp, 1, 0, NULL);
	j->watching = 0;
	if (rc < 0)
		return -1;
	e = ha_remote_read(j->pid, argp, &back, sizeof back);
	if (e < 0) {
		ha_err(j->err, j->errlen, "cannot read the result of %s: %s", HA_AGENT_INIT_SYMBOL,
		       strerror(-e));
		return -1;
	}
	j->r->init_ret = back.result;
	return 0;
}
