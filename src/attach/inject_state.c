/* inject_state.c -- saving and restoring the hijacked thread.
 *
 * Contract: inj_save_state keeps everything of the stopped thread that our
 * calls may change -- registers (already in h->regs from the thread
 * search), FP/vector state (XSAVE layout, or FXSAVE where there is none),
 * signal mask, time slice -- and changes nothing but its time slice and
 * its ptrace options.  inj_prepare_calls, once the first call is set up
 * (its registers in place, so that from then on the signal frame puts the
 * thread back should we die, see inject_frame.c), blocks asynchronous
 * signals (they stay pending and are delivered once the mask is back) and
 * gives the calls an ABI-default x87/SSE control state.  inj_restore_state
 * puts all of it back and detaches; a thread stopped in a system call then
 * restarts that call, as after any signal without a handler.  It restores
 * the registers last: until then the thread is on its way into the frame's
 * rt_sigreturn, which restores the rest too.  h->saved says whether there
 * is anything to restore. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define STACK_GAP        256        /* below the saved rsp: red zone + margin */
#define XSTATE_MAX       (64 << 10) /* any XSAVE layout (AMX is ~11 KiB) */
#define FXSAVE_SIZE      512

/* Save FP/vector state and the signal mask (registers are already in
 * h->regs); ask for syscall stops marked as such. */
int inj_save_state(struct injection *j, struct hijack *h)
{
	struct iovec iov;

	h->fp = malloc(XSTATE_MAX);
	if (!h->fp) {
		ha_err(j->err, j->errlen, "out of memory");
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
			ha_err(j->err, j->errlen, "cannot read the FP state of thread %d: %s",
			       (int)h->tid, strerror(errno));
			return -1;
		}
		h->fptype = NT_PRFPREG;
	}
	h->fplen = iov.iov_len;
	/* returns the mask to restore even inside sigsuspend/ppoll (the
	 * kernel's saved_sigmask) */
	if (PT(PTRACE_GETSIGMASK, h->tid, sizeof h->sigmask, &h->sigmask) < 0) {
		ha_err(j->err, j->errlen, "cannot read the signal mask of thread %d: %s",
		       (int)h->tid, strerror(errno));
		return -1;
	}
	/* syscall stops tell the end of a call (SIGTRAP | 0x80) */
	if (PT(PTRACE_SETOPTIONS, h->tid, 0, PTRACE_O_TRACESYSGOOD) < 0) {
		ha_err(j->err, j->errlen, "cannot set ptrace options of thread %d: %s",
		       (int)h->tid, strerror(errno));
		return -1;
	}
	h->saved = 1;
	h->sp = h->regs.rsp - STACK_GAP;
	inj_hijack_sched(j, h, 1);
	return 0;
}

/* Once the first call's registers are set: block asynchronous signals and
 * reset the x87/SSE control state for the calls. */
int inj_prepare_calls(struct injection *j, struct hijack *h)
{
	struct iovec iov;
	uint64_t mask;

	/* Signals that arrive during the calls stay pending and are delivered
	 * once the mask is back.  SIGKILL/SIGSTOP cannot be blocked; nor is
	 * the mark's signal, ignored by default and not handled (see
	 * inject_frame.c): another sender's is delivered, i.e. dropped, as it
	 * would have been without us. */
	mask = ~SYNC_SIGNALS;
	if (j->mark_sig)
		mask &= ~(1ULL << (j->mark_sig - 1));
	if (PT(PTRACE_SETSIGMASK, h->tid, sizeof mask, &mask) < 0) {
		ha_err(j->err, j->errlen, "cannot block signals of thread %d: %s",
		       (int)h->tid, strerror(errno));
		return -1;
	}
	h->call_mask = mask;

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
			inj_log(j, "note: cannot reset the FP control state of thread %d: %s",
			        (int)h->tid, strerror(errno));
	}
	return 0;
}

/* Put the thread back exactly as it was and detach.  Registers include
 * rax = -ERESTART* and orig_rax = syscall number for a thread stopped in a
 * system call: on resume the kernel restarts that call.  Detaching with
 * signal 0 discards our own SIGSEGV.  0, or -1 with j->err set (unless an
 * earlier error is already there). */
int inj_restore_state(struct injection *j, struct hijack *h, int have_err)
{
	struct iovec iov = { h->fp, h->fplen };
	const char *what = NULL;
	int e = 0;

	if (h->at_sigreturn) {
		/* stuck at the entry of the frame's rt_sigreturn (inj_end_calls
		 * failed): let it run, it restores the thread (inject_frame.c) */
		inj_hijack_sched(j, h, 0);
		PT(PTRACE_DETACH, h->tid, 0, 0);
		h->saved = 0;
		return -1;
	}
	if (PT(PTRACE_SETREGSET, h->tid, h->fptype, &iov) < 0)
		what = "FP state", e = errno;
	if (PT(PTRACE_SETSIGMASK, h->tid, sizeof h->sigmask, &h->sigmask) < 0 && !what)
		what = "signal mask", e = errno;
	inj_test_die_at(j, "restore");
	if (PT(PTRACE_SETREGS, h->tid, 0, &h->regs) < 0 && !what)
		what = "registers", e = errno;
	inj_hijack_sched(j, h, 0);
	if (PT(PTRACE_DETACH, h->tid, 0, 0) < 0 && !what)
		what = "detach", e = errno;
	h->saved = 0;
	if (!what)
		return 0;
	if (!have_err)
		ha_err(j->err, j->errlen, "cannot restore thread %d (%s): %s", (int)h->tid, what,
		       strerror(e));
	return -1;
}
