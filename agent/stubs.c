/*
 * stubs.c -- the two hooks written in assembler, dlopen and vfork (see
 * stubs.h), with the C they call.
 *
 * dlopen: dlopen uses its return address to find the calling module (its
 * RPATH/RUNPATH, $ORIGIN, link-map namespace), so the stub asks
 * ha_dlopen_decide() first: when the caller's search path cannot matter (a
 * path with '/' and no '$', or a caller without DT_RPATH/DT_RUNPATH, in the
 * base namespace) it jumps to ha_dlopen_wrap(), which calls the real dlopen
 * and has the new modules patched (the function got.c registered with
 * ha_stubs_on_dlopen) before returning them to the program; otherwise it
 * jumps straight to the real dlopen (the caller's return address untouched)
 * and the agent thread's one-second pass patches the module.
 *
 * Both stay valid forever, like every hook (the agent is never unloaded).
 */
#define _GNU_SOURCE
#include "stubs.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include "imports.h"
#include "sampler.h"
#include "tls.h"

#define HA_STR_(x) #x
#define HA_STR(x) HA_STR_(x)

#define ha_dlopen_depth (ha_tls.dlopen_depth)

/* ------------------------------------------------------------------ */
/* dlopen                                                              */
/* ------------------------------------------------------------------ */

typedef void *(*dlopen_fn)(const char *, int);

uintptr_t ha_dlopen_real;
/* Set once by the higher module that patches new modules (got.c, through
 * ha_stubs_on_dlopen): the one call upward in the chain. */
static void (*after_dlopen)(void);

void ha_stubs_on_dlopen(void (*fn)(void))
{
	__atomic_store_n(&after_dlopen, fn, __ATOMIC_RELEASE);
}

/* Called from the assembler stub only. */
HA_HIDDEN int ha_dlopen_decide(const char *file, int mode, void *ret);
HA_HIDDEN void *ha_dlopen_wrap(const char *file, int mode);

/* Does the module's dynamic section have DT_RPATH or DT_RUNPATH? */
static int has_search_path(const struct link_map *lm)
{
	const ElfW(Dyn) *d = lm->l_ld;
	for (int i = 0; d && i < 4096 && d[i].d_tag != DT_NULL; i++)
		if (d[i].d_tag == DT_RPATH || d[i].d_tag == DT_RUNPATH)
			return 1;
	return 0;
}

/* 1: call the real dlopen from ha_dlopen_wrap and patch right after;
 * 0: jump to it with the caller's return address (see the top). */
int ha_dlopen_decide(const char *file, int mode, void *ret)
{
	(void)mode;
	if (!file || ha_dlopen_depth || ha_hook_guard || !ha_sampler_active() ||
	    strchr(file, '$'))
		return 0;
	int e = errno, wrap = 0;
	if (!ha_tls_same_process()) {
		errno = e;
		return 0;  /* a vfork child: it must not touch the session */
	}
#ifdef HA_LIBC_MUSL
	/* musl's dlopen searches the main program's paths whoever calls it,
	 * and has no namespaces: wrapping it changes nothing it finds. */
	(void)ret;
	(void)has_search_path;
	wrap = 1;
#else
	Dl_info di;
	struct link_map *lm = NULL;
	Lmid_t id = -1;
	ha_hook_guard++;
	if (ha_imp.dladdr1(ret, &di, (void **)&lm, RTLD_DL_LINKMAP) && lm &&
	    ha_imp.dlinfo(lm, RTLD_DI_LMID, &id) == 0 && id == LM_ID_BASE)
		wrap = strchr(file, '/') != NULL || !has_search_path(lm);
	ha_hook_guard--;
#endif
	errno = e;
	return wrap;
}

void *ha_dlopen_wrap(const char *file, int mode)
{
	ha_dlopen_depth++;
	void *h = ((dlopen_fn)ha_dlopen_real)(file, mode);
	ha_dlopen_depth--;
	void (*patch)(void) = __atomic_load_n(&after_dlopen, __ATOMIC_ACQUIRE);
	if (h && patch) {
		int e = errno;
		patch();
		errno = e;
	}
	return h;
}

/* Entered with the program's return address on top of the stack. */
__asm__(".text\n"
        ".globl ha_hook_dlopen\n"
        ".hidden ha_hook_dlopen\n"
        ".type ha_hook_dlopen, @function\n"
        "ha_hook_dlopen:\n"
        "\t.cfi_startproc\n"
        "\tpush %rdi\n"
        "\t.cfi_adjust_cfa_offset 8\n"
        "\tpush %rsi\n"
        "\t.cfi_adjust_cfa_offset 8\n"
        "\tsub $8, %rsp\n"
        "\t.cfi_adjust_cfa_offset 8\n"
        "\tmov 24(%rsp), %rdx\n"
        "\tcall ha_dlopen_decide\n"
        "\tadd $8, %rsp\n"
        "\t.cfi_adjust_cfa_offset -8\n"
        "\tpop %rsi\n"
        "\t.cfi_adjust_cfa_offset -8\n"
        "\tpop %rdi\n"
        "\t.cfi_adjust_cfa_offset -8\n"
        "\ttest %eax, %eax\n"
        "\tjnz ha_dlopen_wrap\n"
        "\tjmp *ha_dlopen_real(%rip)\n"
        "\t.cfi_endproc\n"
        ".size ha_hook_dlopen, .-ha_hook_dlopen\n");

/* ------------------------------------------------------------------ */
/* vfork                                                               */
/* ------------------------------------------------------------------ */

/* A vfork() child runs on its parent thread's stack and TLS, in its memory,
 * until it execs or exits; the parent thread is suspended meanwhile.  The
 * hook marks the thread (ha_tls.in_vfork, which the child sees as its own)
 * around the system call, so that the sampler leaves the child's
 * allocations alone (ha_sampler_same_process) without a getpid() per
 * sample.  Like glibc's vfork it keeps the return address in a register:
 * the child's return overwrites the stack slot the parent returns through.
 * It makes the system call itself (no real vfork to call afterwards).  A
 * count, not a flag: a vfork child that vforks again stays marked. */
/* Called from the assembler stub only. */
HA_HIDDEN long ha_vfork_failed(long err);

long ha_vfork_failed(long err)
{
	errno = (int)-err;
	return -1;
}

_Static_assert(offsetof(struct ha_tls, in_vfork) == 0, "the vfork stub writes offset 0");
__asm__(".text\n"
        ".globl ha_hook_vfork\n"
        ".hidden ha_hook_vfork\n"
        ".type ha_hook_vfork, @function\n"
        "ha_hook_vfork:\n"
        "\t.cfi_startproc\n"
        "\tpop %rdi\n"
        "\t.cfi_adjust_cfa_offset -8\n"
        "\t.cfi_register %rip, %rdi\n"
#ifdef HA_LIBC_MUSL
        /* musl: the block's offset from %fs through its TLS descriptor
         * (tls.h; the call changes no register but %rax) */
        "\tlea ha_tls@tlsdesc(%rip), %rax\n"
        "\tcall *ha_tls@tlscall(%rax)\n"
        "\tmov %rax, %rsi\n"
#else
        "\tmovq ha_tls@gottpoff(%rip), %rsi\n"
#endif
        "\taddl $1, %fs:(%rsi)\n"
        "\tmovl $" HA_STR(SYS_vfork) ", %eax\n"
        "\tsyscall\n"
        "\ttest %rax, %rax\n"
        "\tjz 1f\n"                  /* the child keeps the mark */
        "\tsubl $1, %fs:(%rsi)\n"    /* the parent, resumed (or vfork failed) */
        "1:\n"
        "\tpush %rdi\n"
        "\t.cfi_adjust_cfa_offset 8\n"
        "\t.cfi_rel_offset %rip, 0\n"
        "\tcmp $-4095, %rax\n"
        "\tjae 2f\n"
        "\tret\n"
        "2:\n"
        "\tmov %rax, %rdi\n"
        "\tjmp ha_vfork_failed\n"
        "\t.cfi_endproc\n"
        ".size ha_hook_vfork, .-ha_hook_vfork\n");

