/* inject_frame.c -- the signal frame our calls on the hijacked thread
 * return through, so that the thread is whole again even if heapattach dies
 * in the middle (SIGKILL, OOM killer, a crash).
 *
 * Why.  When the tracer dies, the kernel detaches its tracees and they run
 * on from wherever they are.  A call that "returned" to address 0 (the old
 * way: the SIGSEGV stop at rip 0 was the end of the call) then kills the
 * target with that SIGSEGV; a hardware breakpoint of ours outlives the
 * tracer too (x86 drops ptrace breakpoints only at exec and exit) and kills
 * it with SIGTRAP.  Every way the end of a call is noticed must be harmless
 * without us.
 *
 * How.  Below the data we pushed, inj_write_frame lays out what the kernel
 * itself would push to deliver a signal (struct rt_sigframe): the return
 * address, a ucontext holding the thread's saved registers, signal mask and
 * XSAVE state, and room for a siginfo.  The return address is libc's
 * __restore_rt (`mov $15,%rax; syscall`, found by inj_resolve_sigreturn).
 * Each call starts with rsp at the frame, as if the frame's return address
 * had been pushed by a call instruction; when the function returns, the
 * thread runs rt_sigreturn and the kernel puts back the saved context --
 * exactly what happens after a signal handler.  While we live, we stop the
 * thread at the entry of that rt_sigreturn (a PTRACE_SYSCALL stop, harmless
 * without us) and never let it run: the next call starts from there, and the
 * last one ends with the exact restore of inject_state.c.  The calls
 * themselves run without a stop at each system call: they start at a
 * return chain below the frame, the mark (write_mark), which tells us
 * their end with a signal the thread sends itself and the kernel drops
 * without us.
 *
 * The frame itself (its layout, what it cannot put back) is sigframe.c's. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "sigframe.h"
#include "util.h"

#include <signal.h>
#include <string.h>

#define MARK_CHAIN          4     /* words of the mark's return chain */

/* The mark: a return chain below the frame, where the calls start.  A
 * call returns into `pop %rdi; ret` (rdi = the mark's signal), then a `ret`
 * (for the stack's alignment), then libc's raise, which returns into the
 * frame and so to where the thread was:
 *
 *   mark_chain + 0    pop %rdi; ret     <- rsp at the call's entry (8 mod 16)
 *              + 8    j->mark_sig
 *              + 16   ret
 *              + 24   raise              (entered with rsp at the frame)
 *   frame      + 0    __restore_rt       (the frame's own return address)
 *
 * So the thread sends itself the mark's signal at the end of each call.
 * While we live, ptrace shows us that signal before anything happens to it
 * (a signal-delivery-stop inside raise): the end of the call, without a
 * stop at each of its system calls (each stop is two scheduler round
 * trips, ~1-2 ms apiece on busy cores); we drop it and take the thread one
 * system call on, to the frame's rt_sigreturn, as before.  Without us the
 * kernel drops it as it is sent: its default action is to ignore it, the
 * target has no handler for it and the thread does not block it
 * (inj_choose_mark).  No rt_sigreturn runs
 * while we live: it would reset the restart block of a thread stopped in
 * nanosleep, poll or a futex wait with a timeout (restart_syscall would then
 * fail with EINTR).  The calls' mask lets the mark's signal through
 * (inj_prepare_calls).  Without a mark (j->mark_sig 0) the calls start at
 * the frame and end on its rt_sigreturn's syscall stop. */
static int write_mark(struct injection *j, struct hijack *h)
{
	uint64_t at = h->frame - MARK_CHAIN * sizeof(uint64_t);

	h->mark_chain = 0;
	inj_choose_mark(j, h->tid, h->sigmask);
	if (j->mark_sig && h->regs.rsp - at > PUSH_ROOM)
		j->mark_sig = 0;             /* no room for it: none */
	if (!j->mark_sig) {
		inj_log(j, "no mark: the calls end on system call stops");
		return 0;
	}
	h->mark_chain = at;
	h->sp = at;
	inj_log(j, "mark at 0x%llx: the calls end on SIG%s", (unsigned long long)at,
	        j->mark_sig == SIGURG ? "URG" : j->mark_sig == SIGWINCH ? "WINCH" : "CHLD");
	return inj_write_mark(j, h);
}

/* (Re)write the mark's chain: raise's own stack, below the frame, runs over
 * it each time.  Before each call; 0 or -1 (j->err set). */
int inj_write_mark(struct injection *j, struct hijack *h)
{
	uint64_t chain[MARK_CHAIN];
	int rc;

	chain[0] = j->pop_rdi_ret;
	chain[1] = (uint64_t)j->mark_sig;
	chain[2] = j->pop_rdi_ret + 1;   /* its ret */
	chain[3] = j->raise_fn;
	rc = ha_remote_write(j->pid, h->mark_chain, chain, sizeof chain);
	if (rc < 0) {
		ha_err(j->err, j->errlen, "cannot write to the stack of thread %d: %s",
		       (int)h->tid, strerror(-rc));
		return -1;
	}
	return 0;
}

/* Lay out the frame below the data already pushed (nothing may be pushed
 * after it: the calls' own stack grows down from it) and write it with one
 * remote write (sigframe.c).  h->frame is its address, where every call's
 * rsp starts.  0 or -1 (j->err set). */
int inj_write_frame(struct injection *j, struct hijack *h)
{
	struct ha_thread_ctx c = { .regs = h->regs, .fp = h->fp, .fplen = h->fplen,
	                           .fptype = h->fptype, .sigmask = h->sigmask };
	uint64_t frame = 0;
	size_t xsize = 0;

	if (!j->sigreturn_fn) {
		ha_err(j->err, j->errlen, "no rt_sigreturn sequence found in the target's libc");
		return -1;
	}
	if (ha_sigframe_write(j->pid, h->tid, &c, h->sp, j->sigreturn_fn, &frame, &xsize, j->err,
	                      j->errlen) != 0)
		return -1;
	if (xsize)
		inj_log(j, "signal frame at 0x%llx (%llu bytes, XSAVE %zu of %zu)",
		        (unsigned long long)frame, (unsigned long long)(h->sp - frame), xsize, h->fplen);
	else
		inj_log(j, "signal frame at 0x%llx (%llu bytes, FXSAVE)", (unsigned long long)frame,
		        (unsigned long long)(h->sp - frame));
	h->frame = frame;
	h->sp = frame;
	return write_mark(j, h);
}
