/*
 * ha_copy_stub.h -- the agent's copy stub: the code a reachability scan
 * makes a stopped thread of the target run its system calls in (the raw
 * clone that takes the frozen copy, the wait4 that reaps it), so that
 * whatever becomes of the attacher, the thread and the copy only ever run
 * this code and the target's own (src/reach/reach_syscall.c).
 *
 * Contract.  The agent places these bytes in its text (agent/copy_stub.c)
 * and publishes their address in the ring header's copy_stub; the agent is
 * never unloaded, so the address stays good for the process's life.  The
 * attacher reads the bytes back and uses the stub only if they are these,
 * in an executable mapping.  It enters at HA_COPY_STUB_CLONE or
 * HA_COPY_STUB_SYSCALL with rax = the call, its arguments in rdi, rsi,
 * rdx, r10, r8, and rsp at a signal frame (struct rt_sigframe) whose
 * return address is HA_COPY_STUB_RESTORE and whose context is the
 * thread's own.  While the attacher lives it stops the thread at the call's
 * syscall-exit stop and puts the registers back itself: the stub never
 * runs past the syscall.  If the attacher dies first, the stub returns
 * through the frame (rt_sigreturn: the thread is as it was, an interrupted
 * system call restarted), and a copy that the clone made untraced runs
 * exit_group(0) at once -- never an instruction of the target's code.
 *
 *   0x00  syscall                 clone entry
 *   0x02  test %rax,%rax
 *   0x05  je 0x08                 the copy (rax 0): out
 *   0x07  ret                     the thread: into the frame
 *   0x08  mov $231,%eax           exit_group(0)
 *   0x0d  xor %edi,%edi
 *   0x0f  syscall
 *   0x11  ud2
 *   0x13  syscall                 any other call's entry
 *   0x15  ret
 *   0x16  mov $15,%eax            the frame's return address: rt_sigreturn
 *   0x1b  syscall
 *   0x1d  ud2
 */
#ifndef HA_COPY_STUB_H
#define HA_COPY_STUB_H

#define HA_COPY_STUB_BYTES                                                       \
	0x0f, 0x05, 0x48, 0x85, 0xc0, 0x74, 0x01, 0xc3, 0xb8, 0xe7, 0x00, 0x00, 0x00, \
	0x31, 0xff, 0x0f, 0x05, 0x0f, 0x0b, 0x0f, 0x05, 0xc3, 0xb8, 0x0f, 0x00, 0x00, \
	0x00, 0x0f, 0x05, 0x0f, 0x0b
#define HA_COPY_STUB_SIZE    31
#define HA_COPY_STUB_CLONE   0x00
#define HA_COPY_STUB_SYSCALL 0x13
#define HA_COPY_STUB_RESTORE 0x16

#endif
