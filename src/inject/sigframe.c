/* sigframe.c -- a signal frame of our own on a stopped thread's stack
 * (sigframe.h), so that the thread is whole again even if heapattach dies
 * while it runs code of our choosing (SIGKILL, OOM killer, a crash).
 *
 * Below the top it is given, ha_sigframe_write lays out what the kernel
 * itself would push to deliver a signal (struct rt_sigframe): the return
 * address, a ucontext holding the thread's saved registers, signal mask and
 * XSAVE state, and room for a siginfo.  The return address is code that
 * runs rt_sigreturn (libc's __restore_rt for the injection's calls, the
 * agent's copy stub for the scan's).  Code started with rsp at the frame
 * and returning from there makes the kernel put back the saved context --
 * exactly what happens after a signal handler.
 *
 * What the frame cannot do exactly, and only matters if we died:
 *   - a thread stopped inside a system call: the frame resumes it at the
 *     syscall instruction (rip - 2) with rax = the call number, which
 *     restarts it, as the kernel does for -ERESTARTSYS & co. without a
 *     handler.  For -ERESTART_RESTARTBLOCK (nanosleep, poll, futex with a
 *     timeout) the call restarts with its original arguments: a relative
 *     timeout starts again (rt_sigreturn resets the restart block, so
 *     restart_syscall would make it fail with EINTR, which is worse);
 *   - the alternate signal stack: rt_sigreturn sets it from uc_stack, and
 *     ptrace cannot read it.  uc_stack holds an invalid ss_flags, so that
 *     the kernel's sigaltstack() refuses it with EINVAL -- and
 *     restore_altstack ignores that error ("squash all but EFAULT") -- so
 *     the thread's own stays as it is.
 * The layout is the kernel's x86_64 ABI (arch/x86/include/asm/sigframe.h,
 * uapi ucontext and sigcontext), spelled out here with size checks rather
 * than taken from headers that clash with glibc's. */
#define _GNU_SOURCE
#include "sigframe.h"
#include "util.h"

#include <cpuid.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#define XSTATE_MAGIC1       0x46505853u  /* FP_XSTATE_MAGIC1 of asm/sigcontext.h */
#define XSTATE_MAGIC2       0x46505845u
#define UC_FP_XSTATE        0x1
#define UC_SIGCONTEXT_SS    0x2
#define UC_STRICT_RESTORE_SS 0x4
#define SW_BYTES_OFFSET     464   /* struct _fpx_sw_bytes in the FXSAVE area */
#define XSTATE_BV_OFFSET    512   /* the XSAVE header's XSTATE_BV */
#define XFEATURES_DYNAMIC   (1ULL << 18) /* AMX tile data: the kernel's USER_DYNAMIC */
#define FXSAVE_SIZE         512
#define XSAVE_MIN           576   /* FXSAVE area + XSAVE header */
#define ALTSTACK_INVALID    3     /* not 0, SS_ONSTACK or SS_DISABLE: EINVAL */

#define ERESTARTSYS           512
#define ERESTARTNOINTR        513
#define ERESTARTNOHAND        514
#define ERESTART_RESTARTBLOCK 516

struct k_sigcontext {            /* struct sigcontext, x86_64 */
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;            /* user address of the FXSAVE/XSAVE area */
	uint64_t reserved1[8];
};

struct k_stack {                 /* stack_t */
	uint64_t ss_sp;
	int32_t ss_flags;
	int32_t pad;
	uint64_t ss_size;
};

struct k_ucontext {              /* the kernel's struct ucontext */
	uint64_t uc_flags;
	uint64_t uc_link;
	struct k_stack uc_stack;
	struct k_sigcontext uc_mcontext;
	uint64_t uc_sigmask;         /* the kernel's sigset_t: 64 signals */
};

struct k_rt_sigframe {
	uint64_t pretcode;           /* where the "handler" returns: __restore_rt */
	struct k_ucontext uc;
	unsigned char info[128];     /* siginfo: unused by rt_sigreturn */
};

_Static_assert(sizeof(struct k_sigcontext) == 256, "sigcontext layout");
_Static_assert(offsetof(struct k_ucontext, uc_mcontext) == 40, "ucontext layout");
_Static_assert(offsetof(struct k_ucontext, uc_sigmask) == 296, "ucontext layout");
_Static_assert(sizeof(struct k_rt_sigframe) == 440, "rt_sigframe layout");

/* The context the thread is to resume in if it returns through the frame:
 * its saved registers, with a system call it was stopped in set up to be
 * made again (see the top of this file). */
static void frame_regs(const struct user_regs_struct *r, struct k_sigcontext *sc)
{
	uint64_t rax = r->rax, rip = r->rip;

	if ((int64_t)r->orig_rax >= 0) {
		switch (-(int64_t)rax) {
		case ERESTARTSYS: case ERESTARTNOINTR: case ERESTARTNOHAND:
		case ERESTART_RESTARTBLOCK:
			rax = r->orig_rax;
			rip -= 2;        /* back onto the 2-byte syscall instruction */
			break;
		default:
			break;
		}
	}
	sc->r8 = r->r8; sc->r9 = r->r9; sc->r10 = r->r10; sc->r11 = r->r11;
	sc->r12 = r->r12; sc->r13 = r->r13; sc->r14 = r->r14; sc->r15 = r->r15;
	sc->rdi = r->rdi; sc->rsi = r->rsi; sc->rbp = r->rbp; sc->rbx = r->rbx;
	sc->rdx = r->rdx; sc->rax = rax; sc->rcx = r->rcx; sc->rsp = r->rsp;
	sc->rip = rip; sc->eflags = r->eflags;
	sc->cs = (uint16_t)r->cs;
	sc->ss = (uint16_t)r->ss;
}

/* The end of the standard-format XSAVE layout of the features in mask
 * (CPUID leaf 0xd: each one's size and offset), 0 if unknown. */
static size_t xsave_std_size(uint64_t mask)
{
	size_t end = 0;

	for (unsigned i = 2; i < 64; i++) {
		unsigned size, off, ecx, edx;
		if (!((mask >> i) & 1) || !__get_cpuid_count(0xd, i, &size, &off, &ecx, &edx))
			continue;
		if (off + size > end)
			end = off + size;
	}
	return end;
}

/* The xstate_size of the frame, where its MAGIC2 goes.  rt_sigreturn
 * wants xstate_size <= the thread's own XSAVE size (the kernel's
 * fpstate->user_size) and MAGIC2 at xstate_size -- or, since "x86/fpu:
 * Refine and simplify the magic number check during signal return", MAGIC2
 * at user_size itself.  On a CPU with AMX the ptrace regset is larger than
 * user_size: it always covers the tile data, which a thread's area has only
 * once it has asked for AMX and used it.  A frame sized by the regset is
 * then taken for a legacy FXSAVE one, and rt_sigreturn puts the thread's
 * AVX state back to init (upper ymm halves zeroed).  So: the regset's size
 * if the thread's tile data is live (its area is the large one); else the
 * size without the dynamic features -- a MAGIC2 there lands on tile data
 * XRSTOR does not read (XSTATE_BV says init) -- and the caller puts one at
 * the regset's end too, for a large area whose tiles were released. */
static size_t frame_xsave_size(const struct ha_thread_ctx *c)
{
	uint64_t xcr0, bv;
	size_t small;

	memcpy(&xcr0, c->fp + SW_BYTES_OFFSET, sizeof xcr0);
	memcpy(&bv, c->fp + XSTATE_BV_OFFSET, sizeof bv);
	if ((bv & XFEATURES_DYNAMIC) || !(xcr0 & XFEATURES_DYNAMIC))
		return c->fplen;
	small = xsave_std_size(xcr0 & ~XFEATURES_DYNAMIC);
	return small >= XSAVE_MIN && small < c->fplen ? small : c->fplen;
}

int ha_thread_ctx_read(pid_t tid, struct ha_thread_ctx *c, char *err, size_t errlen)
{
	struct iovec iov = { c->fp, HA_FPSTATE_MAX };

	if (ptrace(PTRACE_GETREGSET, tid, (void *)(long)NT_X86_XSTATE, &iov) == 0 &&
	    iov.iov_len >= FXSAVE_SIZE && iov.iov_len < HA_FPSTATE_MAX) {
		c->fptype = NT_X86_XSTATE;
	} else {
		iov.iov_base = c->fp;
		iov.iov_len = FXSAVE_SIZE;
		if (ptrace(PTRACE_GETREGSET, tid, (void *)(long)NT_PRFPREG, &iov) != 0) {
			ha_err(err, errlen, "cannot read the FP state of thread %d: %s", (int)tid,
			       strerror(errno));
			return -1;
		}
		if (iov.iov_len != FXSAVE_SIZE) {
			ha_err(err, errlen, "cannot read the FP state of thread %d: %zu bytes", (int)tid,
			       iov.iov_len);
			errno = EIO;
			return -1;
		}
		c->fptype = NT_PRFPREG;
	}
	c->fplen = iov.iov_len;
	/* the mask to restore even inside sigsuspend/ppoll (the kernel's
	 * saved_sigmask) */
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof c->sigmask, &c->sigmask) != 0) {
		ha_err(err, errlen, "cannot read the signal mask of thread %d: %s", (int)tid,
		       strerror(errno));
		return -1;
	}
	return 0;
}

int ha_sigframe_write(pid_t pid, pid_t tid, const struct ha_thread_ctx *c, uint64_t top,
                      uint64_t restorer, uint64_t *frame_out, size_t *xsize_out, char *err,
                      size_t errlen)
{
	size_t fpsize = c->fplen, xsize = 0, total;
	uint64_t fpaddr, frame;
	struct k_rt_sigframe f;
	unsigned char *buf;
	int xstate = 0, rc;

	/* The XSAVE regset ptrace gave us is the standard layout a signal frame
	 * holds too; its software bytes hold XCR0 (the gdb convention), where
	 * a frame wants the struct _fpx_sw_bytes, written below. */
	if (c->fptype == NT_X86_XSTATE && c->fplen >= XSAVE_MIN) {
		xstate = 1;
		fpsize = c->fplen + sizeof(uint32_t);       /* + MAGIC2 */
	}
	if (!xstate)
		fpsize = FXSAVE_SIZE;
	/* XRSTOR wants 64-byte alignment; the frame sits below it at an
	 * address that is 8 mod 16, as rsp is at a function's entry */
	fpaddr = (top - fpsize) & ~(uint64_t)63;
	frame = ((fpaddr - sizeof f) & ~(uint64_t)15) - 8;
	total = top - frame;
	if (c->regs.rsp - frame > HA_SIGFRAME_ROOM) {
		ha_err(err, errlen, "no room for the signal frame on the stack of thread %d", (int)tid);
		return -1;
	}

	memset(&f, 0, sizeof f);
	f.pretcode = restorer;
	f.uc.uc_flags = UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS | (xstate ? UC_FP_XSTATE : 0);
	f.uc.uc_stack.ss_flags = ALTSTACK_INVALID;
	f.uc.uc_sigmask = c->sigmask;
	frame_regs(&c->regs, &f.uc.uc_mcontext);
	f.uc.uc_mcontext.fpstate = fpaddr;

	buf = calloc(1, total);
	if (!buf) {
		ha_err(err, errlen, "out of memory");
		return -1;
	}
	memcpy(buf, &f, sizeof f);
	memcpy(buf + (fpaddr - frame), c->fp, xstate ? c->fplen : FXSAVE_SIZE);
	if (xstate) {
		/* struct _fpx_sw_bytes: magic1, extended_size, xfeatures,
		 * xstate_size; MAGIC2 at xstate_size and after the area */
		unsigned char *sw = buf + (fpaddr - frame) + SW_BYTES_OFFSET;
		uint32_t magic1 = XSTATE_MAGIC1, ext = (uint32_t)fpsize, xs;
		uint32_t magic2 = XSTATE_MAGIC2;
		uint64_t xcr0;
		xsize = frame_xsave_size(c);
		xs = (uint32_t)xsize;
		memcpy(&xcr0, c->fp + SW_BYTES_OFFSET, sizeof xcr0);
		memset(sw, 0, FXSAVE_SIZE - SW_BYTES_OFFSET);
		memcpy(sw, &magic1, 4);
		memcpy(sw + 4, &ext, 4);
		memcpy(sw + 8, &xcr0, 8);
		memcpy(sw + 16, &xs, 4);
		memcpy(buf + (fpaddr - frame) + xsize, &magic2, sizeof magic2);
		memcpy(buf + (fpaddr - frame) + c->fplen, &magic2, sizeof magic2);
	}
	rc = ha_remote_write(pid, frame, buf, total);
	free(buf);
	if (rc < 0) {
		ha_err(err, errlen, "cannot write to the stack of thread %d: %s", (int)tid,
		       strerror(-rc));
		return -1;
	}
	*frame_out = frame;
	*xsize_out = xsize;
	return 0;
}
