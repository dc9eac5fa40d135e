/*
 * imports.c -- the target's functions behind ha_imp, and the unwinder's
 * entries a hook's cleanup calls (see imports.h).
 */
#define _GNU_SOURCE
#include "imports.h"

#include <sched.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

HA_HIDDEN struct ha_imports ha_imp;

/* The target's unwinder, found when first needed (a C++ exception going
 * through a hook: only then is one loaded and in use). */
typedef int (*personality_fn)(int, int, uint64_t, void *, void *);
HA_HIDDEN personality_fn ha_gcc_personality;
HA_HIDDEN void (*ha_unwind_resume)(void *);

int ha_imports_init(uintptr_t dlsym_addr, const char **missing)
{
	static const struct {
		const char *name;
		size_t off;
	} fns[] = {
		{ "dladdr", offsetof(struct ha_imports, dladdr) },
#ifndef HA_LIBC_MUSL   /* musl has no dladdr1, and no namespaces to ask dlinfo about */
		{ "dladdr1", offsetof(struct ha_imports, dladdr1) },
		{ "dlinfo", offsetof(struct ha_imports, dlinfo) },
#endif
		{ "pthread_create", offsetof(struct ha_imports, pthread_create) },
		{ "pthread_attr_setstacksize", offsetof(struct ha_imports, pthread_attr_setstacksize) },
		{ "pthread_getattr_np", offsetof(struct ha_imports, pthread_getattr_np) },
		{ "pthread_attr_getstack", offsetof(struct ha_imports, pthread_attr_getstack) },
	};
	struct ha_imports t = { 0 };

	*missing = NULL;
	if (ha_imp.dlsym)
		return 0;   /* the target's functions do not change */
	*missing = "dlsym";
	if (!dlsym_addr)
		return -1;
	t.dlsym = (void *(*)(void *, const char *))dlsym_addr;
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
		void *f = t.dlsym(RTLD_DEFAULT, fns[i].name);
		if (!f) {
			*missing = fns[i].name;
			return -1;
		}
		__builtin_memcpy((char *)&t + fns[i].off, &f, sizeof f);
	}
	ha_imp = t;
	*missing = NULL;
	return 0;
}

/* The personality routine of the hooks' cleanups (hooks.c's DEPTH_SCOPE,
 * built with -fexceptions): the target's, found now if not yet.  Without
 * an unwinder of the usual ABI to hand the frame to, the cleanup is skipped
 * (the thread then stays "inside a hook" and is no longer sampled): never
 * a jump to nothing. */
/* NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): the compiler's */
HA_HIDDEN int __gcc_personality_v0(int version, int actions, uint64_t cls, void *exc,
                                  void *ctx)
{
	personality_fn p = __atomic_load_n(&ha_gcc_personality, __ATOMIC_ACQUIRE);
	if (!p && ha_imp.dlsym) {
		void (*r)(void *) = (void (*)(void *))ha_imp.dlsym(RTLD_DEFAULT, "_Unwind_Resume");
		p = (personality_fn)ha_imp.dlsym(RTLD_DEFAULT, "__gcc_personality_v0");
		if (p == __gcc_personality_v0)
			p = NULL;   /* ourselves: never, we are hidden */
		if (r && p) {
			__atomic_store_n(&ha_unwind_resume, r, __ATOMIC_RELAXED);
			__atomic_store_n(&ha_gcc_personality, p, __ATOMIC_RELEASE);
		} else {
			p = NULL;
		}
	}
	if (!p)
		return 8; /* _URC_CONTINUE_UNWIND */
	return p(version, actions, cls, exc, ctx);
}

/* Reached only from a cleanup's landing pad, after the personality above
 * found both: a jump, so that the unwinder sees the landing pad as its
 * caller. */
__asm__(".text\n"
        ".globl _Unwind_Resume\n"
        ".hidden _Unwind_Resume\n"
        ".type _Unwind_Resume, @function\n"
        "_Unwind_Resume:\n"
        "\tjmp *ha_unwind_resume(%rip)\n"
        ".size _Unwind_Resume, .-_Unwind_Resume\n");

void ha_once(int *state, void (*fn)(void))
{
	int expect = 0;
	if (__atomic_compare_exchange_n(state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		fn();
		__atomic_store_n(state, 2, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(state, __ATOMIC_ACQUIRE) != 2)
		(void)sched_yield();
}

int ha_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}
