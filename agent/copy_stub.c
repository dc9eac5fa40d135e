/*
 * copy_stub.c -- the code a reachability scan runs its system calls in,
 * on a thread of the target it has stopped (src/proto/ha_copy_stub.h says
 * the contract, src/reach/reach_syscall.c the attacher's side).
 *
 * Why it is ours: the scan's raw clone makes a copy of the process that
 * must never run the target's code, even if the attacher dies while the
 * kernel copies the page tables (tens of milliseconds on a big heap).  A
 * syscall instruction of libc's would leave such a copy running on into
 * libc and the program; after ours, the copy finds rax 0 and calls
 * exit_group.  The bytes are the header's (one definition for both
 * sides); the attacher reads them back before it uses them.  They sit in
 * their own text section, never called from C.  The agent is never
 * unloaded (-z nodelete), so the address published stays good.
 */
#define _GNU_SOURCE
#include <stdint.h>

#include "ha_copy_stub.h"
#include "copy_stub.h"

#define STUB_STR_(...) #__VA_ARGS__
#define STUB_STR(...) STUB_STR_(__VA_ARGS__)

__asm__(".pushsection .text.ha_copy_stub,\"ax\",@progbits\n"
        ".p2align 4\n"
        ".globl ha_copy_stub\n"
        ".hidden ha_copy_stub\n"
        ".type ha_copy_stub,@function\n"
        "ha_copy_stub:\n"
        ".byte " STUB_STR(HA_COPY_STUB_BYTES) "\n"
        ".size ha_copy_stub, .-ha_copy_stub\n"
        ".popsection\n");

extern const unsigned char ha_copy_stub[];

uint64_t ha_copy_stub_addr(void)
{
	return (uint64_t)(uintptr_t)ha_copy_stub;
}
