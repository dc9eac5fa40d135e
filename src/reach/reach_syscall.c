/* reach_syscall.c -- a system call made by a stopped thread of the target
 * for the scan (the raw clone that takes the copy, the wait4 that reaps
 * it), such that the target is unharmed and the copy never runs the
 * target's code, whenever the attacher dies.
 *
 * The call runs in the agent's copy stub (src/proto/ha_copy_stub.h; found
 * through the ring header's copy_stub, used only if its bytes are the
 * header's, in an executable mapping) with rsp at a signal frame of the
 * thread's own context (src/inject/sigframe.h) whose return address is the
 * stub's rt_sigreturn.  While we live, the thread is driven syscall stop
 * to syscall stop and its registers put back at the exit stop: it never
 * runs past the syscall, its FP state and mask are never touched, and the
 * frame below its red zone is only dead stack.  If we die at any step:
 *   - before the call: the kernel detaches the thread, which makes the call
 *     untraced, then returns through the frame to where it was (a system
 *     call it was stopped in restarted, sigframe.c);
 *   - in the clone, before the copy is linked to us: the copy is born
 *     untraced and runs the stub's next instructions, rax 0: exit_group;
 *   - after: the copy is detached in its first stop and does the same
 *     (the caller also sets EXITKILL on it: then the kernel kills it).
 * The copy then stays a zombie of the target (exit signal 0: no SIGCHLD,
 * no autoreap, invisible to waitpid(-1) without __WALL) until the target
 * exits.  Without the stub (an agent that publishes none) there is no
 * scan: the old way, a syscall instruction of libc's with EXITKILL on the
 * thread, killed the target if we died during the clone. */
#define _GNU_SOURCE
#include "reach_int.h"
#include "ha_copy_stub.h"
#include "ha_proto.h"
#include "sigframe.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

void reach_test_die_at(const char *step)
{
	const char *at = getenv("HEAPATTACH_TEST_REACH_DIE_AT");
	if (at && strcmp(at, step) == 0)
		(void)raise(SIGKILL);
}

uint64_t reach_stub_find(pid_t pid, const struct ha_maps *maps, const struct ha_ring_hdr *h)
{
	static const unsigned char want[HA_COPY_STUB_SIZE] = { HA_COPY_STUB_BYTES };
	_Static_assert(sizeof(want) == sizeof((unsigned char[]){ HA_COPY_STUB_BYTES }),
	               "HA_COPY_STUB_SIZE is the stub's length");
	if (!h)
		return 0;
	uint64_t at = __atomic_load_n(&h->copy_stub, __ATOMIC_ACQUIRE);
	const struct ha_map *m = at ? ha_maps_find_addr(maps, at) : NULL;
	if (!m || !(m->prot & 4) || at > m->end - sizeof want)
		return 0;
	unsigned char got[sizeof want];
	struct iovec l = { got, sizeof got }, r = { (void *)(uintptr_t)at, sizeof got };
	if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof got ||
	    memcmp(got, want, sizeof want) != 0)
		return 0;
	return at;
}

int reach_stop_signal(int st)
{
	int sig = WSTOPSIG(st);
	if ((st >> 16) != 0 || sig == (SIGTRAP | 0x80))
		return 0;
	return sig;
}

int reach_wait_stop(pid_t tid, int *st)
{
	for (;;) {
		pid_t w = waitpid(tid, st, __WALL);
		if (w == tid)
			return WIFSTOPPED(*st) ? 0 : -1;
		if (w < 0 && errno == EINTR)
			continue;
		return -1;
	}
}

/* The registers a thread stopped in a system call resumes with: the call
 * restarted, as the kernel would have done it without our stop. */
static void restart_fixup(struct user_regs_struct *r)
{
	if ((long long)r->orig_rax < 0)
		return;
	switch ((long long)r->rax) {
	case -512: /* ERESTARTSYS */
	case -513: /* ERESTARTNOINTR */
	case -514: /* ERESTARTNOHAND */
		r->rax = r->orig_rax;
		r->rip -= 2;
		break;
	case -516: /* ERESTART_RESTARTBLOCK */
		r->rax = SYS_restart_syscall;
		r->rip -= 2;
		break;
	}
}

int reach_syscall(pid_t pid, struct reach_thread *t, uint64_t stub, long nr, const uint64_t a[5],
                  long *ret, pid_t *child)
{
	int clone = nr == SYS_clone;
	struct ha_thread_ctx c = { .regs = t->regs, .fp = malloc(HA_FPSTATE_MAX) };
	char err[160];
	uint64_t frame = 0;
	size_t xsize = 0;
	if (!c.fp)
		return -1;
	int ok = ha_thread_ctx_read(t->tid, &c, err, sizeof err) == 0 &&
	         ha_sigframe_write(pid, t->tid, &c, t->regs.rsp - HA_SIGFRAME_GAP,
	                           stub + HA_COPY_STUB_RESTORE, &frame, &xsize, err, sizeof err) == 0;
	free(c.fp);
	if (!ok)
		return -1;

	struct user_regs_struct r = t->regs;
	r.rip = stub + (clone ? HA_COPY_STUB_CLONE : HA_COPY_STUB_SYSCALL);
	r.rsp = frame;
	r.rax = (unsigned long long)nr;
	r.orig_rax = (unsigned long long)-1;
	r.rdi = a[0];
	r.rsi = a[1];
	r.rdx = a[2];
	r.r10 = a[3];
	r.r8 = a[4];
	long opts = PTRACE_O_TRACESYSGOOD;
	/* the copy is born ptrace-stopped under us (no EXITKILL on the thread:
	 * our death must not kill the target) */
	if (clone && ptrace(PTRACE_SETOPTIONS, t->tid, NULL,
	                    (void *)(opts | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
	                             PTRACE_O_TRACEVFORK)) != 0)
		return -1;
	if (ptrace(PTRACE_SETREGS, t->tid, NULL, &r) != 0)
		return -1;
	reach_test_die_at(clone ? "clone_set" : "reap_set");
	int st, entered = 0, late_sig = 0;
	*ret = -ENOSYS;
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL) != 0)
			return -1;
		if (entered == 1 && clone) {
			entered = 2;
			reach_test_die_at("cloning"); /* the kernel copies the page tables */
		}
		if (reach_wait_stop(t->tid, &st) != 0)
			return -1;
		int ev = st >> 16;
		if (ev == PTRACE_EVENT_CLONE || ev == PTRACE_EVENT_FORK || ev == PTRACE_EVENT_VFORK) {
			unsigned long msg = 0;
			ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg);
			*child = (pid_t)msg;
			continue;
		}
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			if (!entered) {
				entered = 1;
				continue;
			}
			struct user_regs_struct out;
			if (ptrace(PTRACE_GETREGS, t->tid, NULL, &out) == 0)
				*ret = (long)out.rax;
			break;
		}
		if (reach_stop_signal(st))
			late_sig = reach_stop_signal(st); /* a signal for it meanwhile: given back */
	}
	if (clone)
		ptrace(PTRACE_SETOPTIONS, t->tid, NULL, (void *)opts);
	struct user_regs_struct back = t->regs;
	restart_fixup(&back);
	ptrace(PTRACE_SETREGS, t->tid, NULL, &back);
	if (late_sig && !t->sig)
		t->sig = late_sig;
	return 0;
}
