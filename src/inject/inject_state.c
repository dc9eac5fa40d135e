/* inject_state.c -- the hijacked thread's states; saving and restoring it.
 *
 * Contract: inj_save_state keeps everything of the stopped thread that our
 * calls may change -- registers (already in h->regs from the thread
 * search), FP/vector state (XSAVE layout, or FXSAVE where there is none),
 * signal mask, time slice -- and changes nothing but its time slice and
 * its ptrace options.  inj_prepare_calls, once the first call is set up
 * (its registers in place, so that from then on the signal frame puts the
 * thread back should we die, see inject_frame.c), blocks asynchronous
 * signals (they stay pending and are delivered once the mask is back) and
 * gives the calls an ABI-default x87/SSE control state.  inj_release
 * puts all of it back and detaches; a thread stopped in a system call then
 * restarts that call, as after any signal without a handler.  It restores
 * the registers last: until then the thread is on its way into the frame's
 * rt_sigreturn, which restores the rest too.  h->state says what there is
 * to do (enum hij_state); inj_hij_set is the only writer, and inj_release
 * does what the state says at the end, whatever happened. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "sigframe.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

/* The steps a hijacked thread may take (the graph in inject_int.h): a bit
 * per state it may go to.  Any live state may end in RELEASED or GONE. */
#define TO(s) (1u << (s))
#define ENDS (TO(HIJ_RELEASED) | TO(HIJ_GONE))
static const unsigned next_ok[] = {
	[HIJ_NONE]         = TO(HIJ_STOPPED),
	[HIJ_STOPPED]      = TO(HIJ_SAVED) | ENDS,
	[HIJ_SAVED]        = TO(HIJ_CALLING) | ENDS,
	/* CALLING -> CALLING: a call after a legacy call's return (dlerror's,
	 * at its SIGSEGV stop at address 0), e.g. the next way of delivering
	 * the agent (inject_deliver.c) */
	[HIJ_CALLING]      = TO(HIJ_CALLING) | TO(HIJ_MARKED) | TO(HIJ_AT_SIGRETURN) |
	                     TO(HIJ_ENDED) | ENDS,
	[HIJ_MARKED]       = TO(HIJ_AT_SIGRETURN) | ENDS,
	[HIJ_AT_SIGRETURN] = TO(HIJ_CALLING) | ENDS,
	[HIJ_ENDED]        = ENDS,
	[HIJ_RELEASED]     = 0,
	[HIJ_GONE]         = 0,
};

void inj_hij_set(struct hijack *h, enum hij_state to)
{
	/* A step outside the graph is a bug of ours, not of the target: said,
	 * never an abort, which would leave the target's thread hijacked (the
	 * state is what the code did; the release that follows reads it). */
	if (!(next_ok[h->state] & TO(to)))
		fprintf(stderr, "heapattach: internal error: hijacked thread %d went from state %d to %d\n",
		        (int)h->tid, (int)h->state, (int)to);
	h->state = to;
}

/* Save FP/vector state and the signal mask (registers are already in
 * h->regs); ask for syscall stops marked as such. */
int inj_save_state(struct injection *j, struct hijack *h)
{
	h->fp = malloc(HA_FPSTATE_MAX);
	if (!h->fp) {
		ha_err(j->err, j->errlen, "out of memory");
		return -1;
	}
	struct ha_thread_ctx c = { .regs = h->regs, .fp = h->fp };
	if (ha_thread_ctx_read(h->tid, &c, j->err, j->errlen) != 0)
		return -1;
	h->fplen = c.fplen;
	h->fptype = c.fptype;
	h->sigmask = c.sigmask;
	/* syscall stops tell the end of a call (SIGTRAP | 0x80) */
	if (PT(j, PTRACE_SETOPTIONS, h->tid, 0, PTRACE_O_TRACESYSGOOD) != PT_OK) {
		ha_err(j->err, j->errlen, "cannot set ptrace options of thread %d: %s",
		       (int)h->tid, j->pt_err);
		return -1;
	}
	inj_hij_set(h, HIJ_SAVED);
	h->sp = h->regs.rsp - HA_SIGFRAME_GAP;
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
	if (PT(j, PTRACE_SETSIGMASK, h->tid, sizeof mask, &mask) != PT_OK) {
		ha_err(j->err, j->errlen, "cannot block signals of thread %d: %s",
		       (int)h->tid, j->pt_err);
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
		if (PT(j, PTRACE_SETREGSET, h->tid, NT_PRFPREG, &iov) != PT_OK)
			inj_log(j, "note: cannot reset the FP control state of thread %d: %s",
			        (int)h->tid, j->pt_err);
	}
	return 0;
}

/* Let the thread go as it is, delivering sig, its own time slice back:
 * nothing of ours is in it (not stopped yet by us, back in its own code),
 * or the frame's rt_sigreturn, where it is stopped, restores it. */
void inj_let_go(struct injection *j, struct hijack *h, int sig)
{
	inj_hijack_sched(j, h, 0);
	switch (PT(j, PTRACE_DETACH, h->tid, 0, sig)) {
	case PT_OK:
		inj_hij_set(h, HIJ_RELEASED);
		break;
	case PT_FAILED:
		/* the kernel lets go of it when the helper thread exits */
		inj_log(j, "note: cannot let thread %d go: %s", (int)h->tid, j->pt_err);
		inj_hij_set(h, HIJ_GONE);
		break;
	case PT_GONE:
		inj_hij_set(h, HIJ_GONE);
		break;
	}
}

/* Put the thread back exactly as it was and detach.  Registers include
 * rax = -ERESTART* and orig_rax = syscall number for a thread stopped in a
 * system call: on resume the kernel restarts that call.  Detaching with
 * signal 0 discards our own SIGSEGV.  0, or -1 with j->err set (unless an
 * earlier error is already there). */
static int restore_state(struct injection *j, struct hijack *h, int have_err)
{
	struct iovec iov = { h->fp, h->fplen };
	char what[sizeof j->pt_err + 16] = "";
	enum pt_rc detach;

	/* each step is tried whatever the one before did; the first failure
	 * is the one told */
	if (PT(j, PTRACE_SETREGSET, h->tid, h->fptype, &iov) != PT_OK)
		snprintf(what, sizeof what, "FP state, %s", j->pt_err);
	if (PT(j, PTRACE_SETSIGMASK, h->tid, sizeof h->sigmask, &h->sigmask) != PT_OK && !what[0])
		snprintf(what, sizeof what, "signal mask, %s", j->pt_err);
	inj_test_die_at(j, "restore");
	if (PT(j, PTRACE_SETREGS, h->tid, 0, &h->regs) != PT_OK && !what[0])
		snprintf(what, sizeof what, "registers, %s", j->pt_err);
	inj_hijack_sched(j, h, 0);
	detach = PT(j, PTRACE_DETACH, h->tid, 0, 0);
	if (detach != PT_OK && !what[0])
		snprintf(what, sizeof what, "detach, %s", j->pt_err);
	inj_hij_set(h, detach == PT_OK ? HIJ_RELEASED : HIJ_GONE);
	if (!what[0])
		return 0;
	if (!have_err)
		ha_err(j->err, j->errlen, "cannot restore thread %d (%s)", (int)h->tid, what);
	return -1;
}

/* The end of the injection for the hijacked thread, whatever happened:
 * what its state says (enum hij_state).  0, or -1 with j->err set (unless
 * have_err: an earlier error is there). */
int inj_release(struct injection *j, struct hijack *h, int have_err)
{
	switch (h->state) {
	case HIJ_NONE:
	case HIJ_RELEASED:
	case HIJ_GONE:
		return 0;
	case HIJ_STOPPED:
		inj_let_go(j, h, 0);
		return 0;
	case HIJ_AT_SIGRETURN:
		/* stuck at the entry of the frame's rt_sigreturn (inj_end_calls
		 * failed): let it run, it restores the thread (inject_frame.c) */
		inj_let_go(j, h, 0);
		return -1;
	case HIJ_SAVED:
	case HIJ_CALLING:
	case HIJ_MARKED:
	case HIJ_ENDED:
		break;
	}
	return restore_state(j, h, have_err);
}
