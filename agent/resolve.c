/*
 * resolve.c -- find the real functions behind the hooks (see resolve.h):
 * what a call from the main program binds to, in the process as it is.
 *
 * dlsym(RTLD_DEFAULT) is the answer, except where it is not a definition:
 * a non-PIE executable that takes a function's address has a canonical PLT
 * entry for it, which dlsym returns and which jumps through the very GOT
 * slot we patch (a hook calling it would call itself forever); an IFUNC's
 * result is not a symbol's value either.  Then the first module in load
 * order that defines the name is taken, as ld.so binds it.  The answers go
 * into hooks.c's table of real functions (ha_hooks_set_real), where they
 * never change again.
 */
#define _GNU_SOURCE
#include "resolve.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>

#include "elfmod.h"
#include "forklock.h"
#include "hooks.h"
#include "imports.h"

struct lookup {
	const char *name;
	uintptr_t addr;
};

static int lookup_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *l = data;
	struct ha_mod m;
	(void)size;
	if (ha_mod_skip(info) || !ha_mod_parse(info, &m))
		return 0;
	l->addr = ha_mod_lookup(&m, l->name);
	return l->addr != 0;
}

/* Is addr a canonical PLT entry (an undefined symbol with a value: a non-PIE
 * executable that takes the function's address)?  dlsym returns that PLT
 * entry, which jumps through the very GOT slot we patch: a hook calling it
 * would call itself forever. */
static int is_canonical_plt(uintptr_t addr)
{
#ifdef HA_LIBC_MUSL
	/* musl has no dladdr1: no answer, and resolve_default keeps the
	 * address (musl-gcc builds PIE programs, which have no such entries). */
	(void)addr;
	return 0;
#else
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	if (!ha_imp.dladdr1((const void *)addr, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 0;
	return sym->st_shndx == SHN_UNDEF;
#endif
}

struct defcheck {
	const char *name;
	uintptr_t addr;
	int is_def;
};

static int defcheck_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct defcheck *d = data;
	struct ha_mod m;
	(void)size;
	if (!ha_mod_contains(info, d->addr, 1, NULL))
		return 0;
	d->is_def = ha_mod_parse(info, &m) && ha_mod_lookup(&m, d->name) == d->addr;
	return 1;
}

/* The function name really is defined at addr (not a PLT entry). */
static int is_definition(const char *name, uintptr_t addr)
{
	struct defcheck d = { name, addr, 0 };
	ha_fork_lock();
	(void)dl_iterate_phdr(defcheck_cb, &d);
	ha_fork_unlock();
	return d.is_def;
}

static void set_why(char *why, size_t whylen, const char *a, const char *b)
{
	size_t n = 0;
	if (!why || !whylen)
		return;
	for (const char *s = a; s && *s && n + 1 < whylen; s++)
		why[n++] = *s;
	for (const char *s = b; s && *s && n + 1 < whylen; s++)
		why[n++] = *s;
	why[n] = '\0';
}

/* The process's definition of hook t: what a call from the main program
 * binds to (dlsym(RTLD_DEFAULT)), corrected for canonical PLT entries and
 * IFUNC results.  0 if there is none.  Not inside dl_iterate_phdr. */
static uintptr_t resolve_default(const char *name)
{
	uintptr_t addr = (uintptr_t)ha_imp.dlsym(RTLD_DEFAULT, name);
	if (addr && !is_definition(name, addr)) {
		/* Not a plain definition: a canonical PLT entry, or something
		 * unusual (an IFUNC's result).  Take the first module in load
		 * order that defines it, as the loader binds it. */
		struct lookup l = { name, 0 };
		ha_fork_lock();
		(void)dl_iterate_phdr(lookup_cb, &l);
		ha_fork_unlock();
		if (l.addr)
			addr = l.addr;
		else if (is_canonical_plt(addr))
			addr = 0;
	}
	return addr;
}

int ha_resolve_optional(int t)
{
	if (t < HA_HOOK_REQUIRED)
		return -1;  /* resolved at session start, or no session */
	struct lookup l = { ha_hooks_name((enum ha_hook_fn)t), 0 };
	(void)dl_iterate_phdr(lookup_cb, &l);
	if (!l.addr || ha_hooks_set_real((enum ha_hook_fn)t, l.addr) != 0)
		return -1;
	return 0;
}

int ha_resolve_real(char *why, size_t whylen)
{
	for (int t = 0; t < HA_HOOK_COUNT; t++) {
		const char *name = ha_hooks_name((enum ha_hook_fn)t);
		if (ha_hooks_real((enum ha_hook_fn)t))
			continue;
		uintptr_t addr = resolve_default(name);
		if (t >= HA_HOOK_REQUIRED) {
			/* Optional: absent now (free_sized on glibc 2.36, C++ in a C
			 * program); looked up again when a slot for it turns up. */
			if (addr)
				(void)ha_hooks_set_real((enum ha_hook_fn)t, addr);
			continue;
		}
		if (!addr) {
			set_why(why, whylen, "cannot resolve the process's ", name);
			return -ENOENT;
		}
		if (ha_hooks_set_real((enum ha_hook_fn)t, addr) != 0) {
			set_why(why, whylen, "unusable address for ", name);
			return -EINVAL;
		}
	}
	return 0;
}
