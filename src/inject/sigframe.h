/* sigframe.h -- a signal frame of our own on a stopped thread's stack, so
 * that code we make the thread run returns through rt_sigreturn to exactly
 * where the thread was, also if heapattach dies meanwhile (the injection's
 * calls, src/inject/inject_frame.c; the reachability scan's system calls,
 * src/reach/reach_syscall.c).  sigframe.c says the layout and what a frame
 * cannot put back. */
#ifndef HA_SIGFRAME_H
#define HA_SIGFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define HA_SIGFRAME_GAP     256        /* below the thread's rsp: red zone + margin */
#define HA_SIGFRAME_ROOM    (16 << 10) /* what we write below rsp ourselves, at most */
#define HA_FPSTATE_MAX      (64 << 10) /* any XSAVE layout (AMX is ~11 KiB) */

/* What a frame puts back: the thread's registers, FP/vector state (the
 * XSAVE regset, NT_X86_XSTATE, or FXSAVE, NT_PRFPREG) and signal mask. */
struct ha_thread_ctx {
	struct user_regs_struct regs;
	unsigned char *fp;
	size_t fplen;
	int fptype;
	uint64_t sigmask;
};

/* Read the FP state (into c->fp, HA_FPSTATE_MAX bytes of the caller's) and
 * the signal mask of the ptrace-stopped tid; c->regs is the caller's.  0,
 * or -1 with errno (ESRCH: gone) and err naming what failed. */
int ha_thread_ctx_read(pid_t tid, struct ha_thread_ctx *c, char *err, size_t errlen);

/* Lay out a frame for c below top (nothing may be pushed after it: code
 * run from it grows its stack down from the frame) and write it into pid
 * with one remote write.  restorer: the frame's return address, code that
 * runs rt_sigreturn.  *frame: its address, where rsp is to start (8 mod
 * 16, as at a function's entry); *xsize: the XSAVE size it gives the
 * kernel (0: FXSAVE).  0, or -1 with err. */
int ha_sigframe_write(pid_t pid, pid_t tid, const struct ha_thread_ctx *c, uint64_t top,
                      uint64_t restorer, uint64_t *frame, size_t *xsize, char *err,
                      size_t errlen);

#endif
