/*
 * got.c -- patch and restore the GOT slots of malloc/free/calloc/realloc.
 *
 * Which slots: in every module dl_iterate_phdr() reports (except the agent,
 * the vdso and the dynamic loader), every R_X86_64_JUMP_SLOT and
 * R_X86_64_GLOB_DAT relocation of DT_JMPREL and DT_RELA whose symbol is one
 * of the four names.  slot = dlpi_addr + r_offset.
 *
 * How a slot is written (write_slot):
 *   - always with one 8-byte compare-and-swap, so a thread jumping through
 *     the slot sees the old or the new pointer, never a mix, and a concurrent
 *     lazy-binding resolver (_dl_fixup storing into a JUMP_SLOT) is never
 *     overwritten blindly: if the value changed, the CAS fails and we retry
 *     with the new value as the original;
 *   - writability is probed with an atomic no-op on the slot (FUTEX_WAKE_OP,
 *     "add 0" on its low 32 bits): the kernel does it with a locked RMW and
 *     fails with EFAULT on a read-only or unmapped page, without a signal.
 *     (process_vm_writev would also fail cleanly, but it copies with a plain
 *     memcpy that may tear an 8-byte pointer another thread is reading.)
 *   - a read-only slot is written only if its page is one ld.so itself made
 *     read-only: whole pages of PT_GNU_RELRO, exactly as _dl_protect_relro
 *     rounds them (start and end rounded DOWN to the page size; the last
 *     partial page stays writable and is never mprotect'ed).  That page is
 *     made PROT_READ|PROT_WRITE, CAS'ed, and put back to PROT_READ.
 *
 * Modules still being loaded: dl_iterate_phdr() lists a module as soon as it
 * is mapped, before ld.so relocated it and applied RELRO; patching it then
 * would save a garbage original or collide with relocation.  A pass therefore
 * (1) reads dlpi_adds ("pass A"), (2) calls dladdr(), which takes and
 * releases dl_load_lock and so waits for every dlopen in progress (dlopen
 * holds that lock through mapping, relocation and RELRO), (3) walks the
 * modules again ("pass B") and patches only those pass A could have seen:
 * ld.so appends new modules at the tail of the list, so with k loads since
 * pass A, the first (list length - k) modules are old enough.  The others
 * wait for the next pass (the agent thread runs one every second while a
 * session is active), so a process that loads and unloads plugins all the
 * time is still patched, only its newest plugins a little later.
 *
 * Modules unloaded meanwhile: every slot access of the agent thread happens
 * inside a dl_iterate_phdr() callback for the module that contains the slot;
 * dlclose() unmaps and unlinks a module under dl_load_write_lock, which the
 * callback holds, so the slot is mapped while we touch it.  Entries whose
 * module is no longer listed are dropped without touching memory.  In a
 * fork() child (no dl_iterate_phdr there) slots are read with
 * process_vm_readv on ourselves first.
 *
 * The table is static (no allocation), in patch order; restore walks it
 * backwards.  Only the agent thread changes it, always under the fork lock.
 */
#define _GNU_SOURCE
#include "got.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent.h"
#include "sampler.h"

#if !defined(__x86_64__)
#error "heapattach agent: x86_64 only for now"
#endif

#define GOT_MAX_ENTRIES 4096
#define GOT_MAX_DYN 4096          /* sanity bound on a dynamic section  */
#define GOT_CAS_TRIES 16

#define E_RELRO 0x1u  /* the slot's page is one ld.so made read-only */
#define E_SEGW  0x2u  /* the slot's PT_LOAD segment is PF_W            */

struct got_entry {
	uintptr_t slot;   /* 0: free entry */
	uintptr_t orig;   /* value before we patched */
	uintptr_t hook;   /* value we stored */
	uintptr_t base;   /* dlpi_addr of the module */
	uint32_t flags;   /* E_* */
	uint32_t seen;    /* generation of the last pass that found its module */
};

static struct got_entry g_tab[GOT_MAX_ENTRIES];
static size_t g_ntab;            /* entries in use: g_tab[0 .. g_ntab) */
static uint32_t g_gen;           /* pass generation */
static uint64_t g_live_slots;    /* entries with slot != 0 */
static uint64_t g_live_modules;  /* modules with a live entry */
static int g_have_seen;          /* g_seen_adds/subs valid */
static unsigned long long g_seen_adds, g_seen_subs;
static uintptr_t g_pagesize;
static int g_enabled;            /* a session may patch (under the fork lock) */

/* Diagnostics (not in the protocol): kept for a debugger or a later message. */
static struct {
	uint64_t table_full;
	uint64_t unwritable;
	uint64_t mprotect_failed;
	uint64_t restore_failed;
} g_diag;

/* A private word nobody waits on: FUTEX_WAKE_OP needs a first futex. */
static uint32_t g_probe_word;

static uintptr_t pagesize(void)
{
	if (!g_pagesize) {
		long ps = sysconf(_SC_PAGESIZE);
		g_pagesize = ps > 0 ? (uintptr_t)ps : 4096;
	}
	return g_pagesize;
}

/* ------------------------------------------------------------------ */
/* Memory probes                                                       */
/* ------------------------------------------------------------------ */

/* 1: writable, 0: not writable or not mapped, -1: cannot tell. */
static int probe_writable(uintptr_t addr)
{
	/* *(u32 *)addr += 0 atomically; wakes at most one waiter of
	 * g_probe_word (none) and, if the old value is 0, one waiter on addr
	 * (nobody futex-waits on a GOT slot). */
	long r = syscall(SYS_futex, &g_probe_word, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG,
	                 0, (void *)0, (uint32_t *)addr,
	                 FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_EQ, 0));
	if (r >= 0)
		return 1;
	if (errno == EFAULT)
		return 0;
	return -1;  /* ENOSYS, EPERM (seccomp), ... */
}

/* Read one word of our own memory without faulting.  0 or -1. */
static int safe_read_word(uintptr_t addr, uintptr_t *out)
{
	struct iovec local = { out, sizeof *out };
	struct iovec remote = { (void *)addr, sizeof *out };
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (n == (ssize_t)sizeof *out)
		return 0;
	if (n >= 0 || errno == EFAULT)
		return -1;
	/* process_vm_readv unavailable (seccomp, old kernel): msync fails with
	 * ENOMEM on an unmapped range and is a no-op otherwise.  Only used
	 * single-threaded (fork child), where nothing unmaps in between. */
	uintptr_t page = addr & ~(pagesize() - 1);
	if (msync((void *)page, pagesize(), MS_ASYNC) != 0)
		return -1;
	*out = __atomic_load_n((const uintptr_t *)addr, __ATOMIC_ACQUIRE);
	return 0;
}

/* CAS *slot from *expect to val.  may_mprotect: the slot's page is a page ld.so
 * made read-only (so we may make it writable for the write and read-only
 * again).  seg_writable: the slot's segment is PF_W (used only if the probe
 * cannot tell).  Returns 0 done, -1 the value was not *expect (now in
 * *expect), -2 cannot write this slot. */
static int write_slot(uintptr_t slot, uintptr_t *expect, uintptr_t val,
                      int may_mprotect, int seg_writable)
{
	int w = probe_writable(slot);
	int dance;

	if (w == 1)
		dance = 0;
	else if (w == 0)
		dance = may_mprotect;
	else
		dance = may_mprotect ? 1 : 0;
	if (w != 1 && !dance && !(w < 0 && seg_writable)) {
		g_diag.unwritable++;
		return -2;
	}

	uintptr_t page = slot & ~(pagesize() - 1);
	if (dance && mprotect((void *)page, pagesize(), PROT_READ | PROT_WRITE) != 0) {
		g_diag.mprotect_failed++;
		return -2;
	}
	int ok = __atomic_compare_exchange_n((uintptr_t *)slot, expect, val, 0,
	                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	if (dance && mprotect((void *)page, pagesize(), PROT_READ) != 0)
		g_diag.mprotect_failed++;  /* page stays writable: weaker, not wrong */
	return ok ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* Module parsing                                                      */
/* ------------------------------------------------------------------ */

struct mod {
	const struct dl_phdr_info *info;
	uintptr_t base;
	uintptr_t relro_lo, relro_hi;   /* pages ld.so made read-only */
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const ElfW(Rela) *jmprel;
	size_t njmprel;
	const ElfW(Rela) *rela;
	size_t nrela;
	const uint32_t *gnu_hash;
	const uint32_t *sysv_hash;
};

/* Is [a, a+len) inside one PT_LOAD segment of the module?  *pflags gets that
 * segment's p_flags. */
static int mod_contains(const struct dl_phdr_info *info, uintptr_t a, size_t len,
                        uint32_t *pflags)
{
	if (a + len < a || !info->dlpi_phdr)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		uintptr_t hi = lo + ph->p_memsz;
		if (a >= lo && a + len <= hi) {
			if (pflags)
				*pflags = ph->p_flags;
			return 1;
		}
	}
	return 0;
}

static void mod_relro(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_GNU_RELRO)
			continue;
		uintptr_t mask = ~(pagesize() - 1);
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		*lo = start & mask;
		*hi = (start + ph->p_memsz) & mask;
		return;
	}
}

static int page_in_relro(uintptr_t lo, uintptr_t hi, uintptr_t slot)
{
	uintptr_t page = slot & ~(pagesize() - 1);
	return lo < hi && page >= lo && page + pagesize() <= hi;
}

static int is_self(const struct dl_phdr_info *info)
{
	return mod_contains(info, (uintptr_t)&is_self, 1, NULL);
}

/* The agent itself, the vdso and the dynamic loader are never patched. */
static int skip_module(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	if (!info->dlpi_phdr || info->dlpi_phnum == 0)
		return 1;
	if (strstr(name, "linux-vdso") || strstr(name, "linux-gate"))
		return 1;
	const char *b = strrchr(name, '/');
	b = b ? b + 1 : name;
	if (strncmp(b, "ld-linux", 8) == 0)
		return 1;
	unsigned long at_base = getauxval(AT_BASE);
	if (at_base && info->dlpi_addr == at_base)
		return 1;
	unsigned long vdso = getauxval(AT_SYSINFO_EHDR);
	if (vdso && mod_contains(info, vdso, 1, NULL))
		return 1;
	return is_self(info);
}

/* glibc relocates the d_ptr values of a writable dynamic section in place;
 * where it did not, they are still offsets from the load base. */
static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}

static int parse_module(const struct dl_phdr_info *info, struct mod *m)
{
	const ElfW(Phdr) *dynph = NULL;
	uintptr_t base = info->dlpi_addr;

	memset(m, 0, sizeof *m);
	m->info = info;
	m->base = base;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dynph = &info->dlpi_phdr[i];
	if (!dynph)
		return 0;
	mod_relro(info, &m->relro_lo, &m->relro_hi);

	uintptr_t dynaddr = base + dynph->p_vaddr;
	size_t ndyn = dynph->p_memsz / sizeof(ElfW(Dyn));
	if (ndyn > GOT_MAX_DYN)
		ndyn = GOT_MAX_DYN;
	if (!mod_contains(info, dynaddr, ndyn * sizeof(ElfW(Dyn)), NULL))
		return 0;
	const ElfW(Dyn) *dyn = (const ElfW(Dyn) *)dynaddr;

	uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0, gnuh = 0, sysvh = 0;
	size_t strsz = 0, pltrelsz = 0, relasz = 0;
	size_t relaent = sizeof(ElfW(Rela)), syment = sizeof(ElfW(Sym));
	long pltrel = DT_RELA;
	for (size_t i = 0; i < ndyn && dyn[i].d_tag != DT_NULL; i++) {
		switch (dyn[i].d_tag) {
		case DT_SYMTAB: symtab = dyn_ptr(base, dyn[i].d_un.d_ptr); break;
		case DT_STRTAB: strtab = dyn_ptr(base, dyn[i].d_un.d_ptr); break;
		case DT_STRSZ: strsz = dyn[i].d_un.d_val; break;
		case DT_SYMENT: syment = dyn[i].d_un.d_val; break;
		case DT_JMPREL: jmprel = dyn_ptr(base, dyn[i].d_un.d_ptr); break;
		case DT_PLTRELSZ: pltrelsz = dyn[i].d_un.d_val; break;
		case DT_PLTREL: pltrel = (long)dyn[i].d_un.d_val; break;
		case DT_RELA: rela = dyn_ptr(base, dyn[i].d_un.d_ptr); break;
		case DT_RELASZ: relasz = dyn[i].d_un.d_val; break;
		case DT_RELAENT: relaent = dyn[i].d_un.d_val; break;
		case DT_GNU_HASH: gnuh = dyn_ptr(base, dyn[i].d_un.d_ptr); break;
		case DT_HASH: sysvh = dyn_ptr(base, dyn[i].d_un.d_ptr); break;
		default: break;
		}
	}
	if (!symtab || !strtab || !strsz || syment != sizeof(ElfW(Sym)) ||
	    relaent != sizeof(ElfW(Rela)))
		return 0;
	if (!mod_contains(info, strtab, strsz, NULL) ||
	    !mod_contains(info, symtab, sizeof(ElfW(Sym)), NULL))
		return 0;
	m->symtab = (const ElfW(Sym) *)symtab;
	m->strtab = (const char *)strtab;
	m->strsz = strsz;
	if (jmprel && pltrel == DT_RELA && pltrelsz &&
	    mod_contains(info, jmprel, pltrelsz, NULL)) {
		m->jmprel = (const ElfW(Rela) *)jmprel;
		m->njmprel = pltrelsz / sizeof(ElfW(Rela));
	}
	if (rela && relasz && mod_contains(info, rela, relasz, NULL)) {
		m->rela = (const ElfW(Rela) *)rela;
		m->nrela = relasz / sizeof(ElfW(Rela));
	}
	if (gnuh && mod_contains(info, gnuh, 4 * sizeof(uint32_t), NULL))
		m->gnu_hash = (const uint32_t *)gnuh;
	if (sysvh && mod_contains(info, sysvh, 2 * sizeof(uint32_t), NULL))
		m->sysv_hash = (const uint32_t *)sysvh;
	return 1;
}

/* Symbol idx of the module, or NULL if out of the module. */
static const ElfW(Sym) *mod_sym(const struct mod *m, size_t idx)
{
	uintptr_t a = (uintptr_t)m->symtab + idx * sizeof(ElfW(Sym));
	if (idx > ((size_t)-1) / sizeof(ElfW(Sym)) ||
	    !mod_contains(m->info, a, sizeof(ElfW(Sym)), NULL))
		return NULL;
	return (const ElfW(Sym) *)a;
}

/* Does symbol sym's name equal name?  Bounded by the string table. */
static int sym_is(const struct mod *m, const ElfW(Sym) *sym, const char *name)
{
	if (sym->st_name >= m->strsz || m->strtab[sym->st_name] != name[0])
		return 0;
	size_t len = strlen(name);
	if (m->strsz - sym->st_name <= len)
		return 0;
	const char *s = m->strtab + sym->st_name;
	return memcmp(s, name, len) == 0 && s[len] == '\0';
}

static int sym_target(const struct mod *m, const ElfW(Sym) *sym)
{
	for (int t = 0; t < HA_HOOK_COUNT; t++)
		if (sym_is(m, sym, ha_hooks_name((enum ha_hook_fn)t)))
			return t;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Table                                                               */
/* ------------------------------------------------------------------ */

static long find_entry(uintptr_t slot)
{
	for (size_t i = g_ntab; i-- > 0;)
		if (g_tab[i].slot == slot)
			return (long)i;
	return -1;
}

static int mod_has_live(uintptr_t base)
{
	for (size_t i = 0; i < g_ntab; i++)
		if (g_tab[i].slot && g_tab[i].base == base)
			return 1;
	return 0;
}

/* Drop live entries whose module was not found in pass g_gen, squeeze out
 * free entries (keeping the order), recount. */
static void compact(int drop_unseen)
{
	size_t j = 0;
	for (size_t i = 0; i < g_ntab; i++) {
		struct got_entry *e = &g_tab[i];
		if (e->slot && drop_unseen && e->seen != g_gen)
			e->slot = 0;
		if (!e->slot)
			continue;
		if (j != i)
			g_tab[j] = *e;
		j++;
	}
	for (size_t i = j; i < g_ntab; i++)
		memset(&g_tab[i], 0, sizeof g_tab[i]);
	g_ntab = j;
	g_live_slots = j;
}

/* ------------------------------------------------------------------ */
/* Patching                                                            */
/* ------------------------------------------------------------------ */

static int resolve_optional(int t);

static void patch_slot(const struct mod *m, int t, uintptr_t slot)
{
	uint32_t segflags = 0;
	if ((slot & (sizeof(uintptr_t) - 1)) != 0 ||
	    !mod_contains(m->info, slot, sizeof(uintptr_t), &segflags))
		return;

	/* A function without its real counterpart (operator new before
	 * libstdc++ was loaded, jemalloc's *allocx...) is looked up now, in
	 * load order as ld.so binds it; if there is none, the slot stays. */
	if (!ha_hooks_real((enum ha_hook_fn)t) && resolve_optional(t) != 0)
		return;
	uintptr_t hook = ha_hooks_hook((enum ha_hook_fn)t);
	uint32_t flags = (page_in_relro(m->relro_lo, m->relro_hi, slot) ? E_RELRO : 0) |
	                 ((segflags & PF_W) ? E_SEGW : 0);
	uintptr_t cur = __atomic_load_n((const uintptr_t *)slot, __ATOMIC_ACQUIRE);
	long idx = find_entry(slot);

	if (cur == hook) {
		if (idx >= 0) {
			g_tab[idx].seen = g_gen;
			return;
		}
		/* Left pointing at us by an earlier session whose restore could
		 * not write it: the original is what the process resolves. */
		cur = ha_hooks_real((enum ha_hook_fn)t);
		if (!cur || g_ntab == GOT_MAX_ENTRIES) {
			g_diag.table_full += cur != 0;
			return;
		}
		g_tab[g_ntab++] = (struct got_entry){ slot, cur, hook, m->base, flags, g_gen };
		return;
	}
	if (idx < 0) {
		if (g_ntab == GOT_MAX_ENTRIES) {
			g_diag.table_full++;
			return;
		}
		idx = (long)g_ntab++;
	}
	/* Record first, then write: a restore can never miss a written slot. */
	struct got_entry *e = &g_tab[idx];
	*e = (struct got_entry){ slot, cur, hook, m->base, flags, g_gen };
	for (int tries = 0; tries < GOT_CAS_TRIES; tries++) {
		uintptr_t expect = e->orig;
		int r = write_slot(slot, &expect, hook, (flags & E_RELRO) != 0,
		                   (flags & E_SEGW) != 0);
		if (r == 0)
			return;
		if (r == -2 || expect == hook)
			break;
		e->orig = expect;  /* the lazy resolver got there first */
	}
	e->slot = 0;  /* not patched; compact() removes it */
}

/* mmap & co. called by a module that provides malloc itself (jemalloc,
 * tcmalloc, a program with its own allocator) are that allocator getting
 * memory for its heap, whose blocks the malloc hooks already count.  Those
 * slots are left alone: the tail-calling malloc hooks cannot mark the
 * allocator's own calls the way a depth counter would (hooks.c). */
static int is_allocator_mapping(const struct mod *m, int t)
{
	if (t != HA_HOOK_MMAP && t != HA_HOOK_MMAP64 && t != HA_HOOK_MUNMAP && t != HA_HOOK_MREMAP)
		return 0;
	uintptr_t real_malloc = ha_hooks_real(HA_HOOK_MALLOC);
	return real_malloc && mod_contains(m->info, real_malloc, 1, NULL);
}

static void scan_relocs(const struct mod *m, const ElfW(Rela) *r, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t type = ELF64_R_TYPE(r[i].r_info);
		if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
			continue;
		size_t si = ELF64_R_SYM(r[i].r_info);
		if (si == 0)
			continue;
		const ElfW(Sym) *sym = mod_sym(m, si);
		if (!sym)
			continue;
		int t = sym_target(m, sym);
		if (t < 0 || is_allocator_mapping(m, t))
			continue;
		patch_slot(m, t, m->base + r[i].r_offset);
	}
}

struct pass {
	unsigned long long adds, subs;  /* dlpi_adds/dlpi_subs seen by pass A */
	int have;        /* adds/subs valid */
	int first;       /* next callback is the first one */
	size_t index;    /* list position of the current module */
	size_t limit;    /* modules at positions >= limit are too new */
	size_t skipped;  /* modules left for the next pass */
	uint64_t modules;
};

static int have_counts(size_t size)
{
	return size >= offsetof(struct dl_phdr_info, dlpi_subs) +
	                sizeof(((struct dl_phdr_info *)0)->dlpi_subs);
}

static int counts_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct pass *p = data;
	if (have_counts(size)) {
		p->adds = info->dlpi_adds;
		p->subs = info->dlpi_subs;
		p->have = 1;
	}
	return 1;  /* the first module is enough */
}

/* Mark every entry whose slot lies in this module as seen in this pass. */
static void mark_seen(const struct dl_phdr_info *info)
{
	for (size_t i = 0; i < g_ntab; i++)
		if (g_tab[i].slot && g_tab[i].seen != g_gen &&
		    mod_contains(info, g_tab[i].slot, sizeof(uintptr_t), NULL))
			g_tab[i].seen = g_gen;
}

static int count_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)info;
	(void)size;
	(*(size_t *)data)++;
	return 0;
}

static int patch_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct pass *p = data;
	if (p->first) {
		/* Which modules were already listed in pass A?  ld.so only ever
		 * appends to the list, so they are the first len - k, where k is
		 * the number of loads since pass A.  The nested call is safe:
		 * dl_load_write_lock is recursive, and we hold it, so the list
		 * cannot change between the count and the rest of this pass. */
		size_t len = 0;
		p->first = 0;
		(void)dl_iterate_phdr(count_cb, &len);
		if (p->have && have_counts(size)) {
			unsigned long long k = info->dlpi_adds - p->adds;
			p->limit = k >= len ? 0 : len - (size_t)k;
		} else {
			p->limit = len;  /* no counters (not glibc): trust the list */
		}
	}
	size_t idx = p->index++;
	mark_seen(info);
	if (idx >= p->limit) {
		/* Loaded after pass A, maybe not relocated yet: next pass. */
		p->skipped++;
		return 0;
	}
	if (skip_module(info))
		return 0;
	struct mod m;
	if (parse_module(info, &m)) {
		if (m.jmprel)
			scan_relocs(&m, m.jmprel, m.njmprel);
		if (m.rela)
			scan_relocs(&m, m.rela, m.nrela);
	}
	if (mod_has_live(info->dlpi_addr))
		p->modules++;
	return 0;
}

static void load_barrier(void)
{
	/* dladdr() takes and releases dl_load_lock: returns only once no
	 * dlopen/dlclose is in progress.  Its answer is not needed. */
	Dl_info di;
	(void)dladdr((const void *)&load_barrier, &di);
}

void ha_got_session_start(void)
{
	ha_fork_lock();
	g_have_seen = 0;
	g_enabled = 1;
	ha_fork_unlock();
}

void ha_got_patch_now(void)
{
	/* On a thread of the program, right after its dlopen returned: the
	 * new modules are relocated; whatever else loads meanwhile is left to
	 * the agent thread's next pass. */
	ha_hook_guard++;
	(void)ha_got_patch();
	ha_hook_guard--;
}

int ha_got_patch(void)
{
	struct pass a = { 0 };

	(void)pagesize();
	/* Pass A: which loads happened so far. */
	ha_fork_lock();
	(void)dl_iterate_phdr(counts_cb, &a);
	int same = a.have && g_have_seen && a.adds == g_seen_adds && a.subs == g_seen_subs;
	ha_fork_unlock();
	if (same)
		return 0;

	/* Every load that pass A saw the start of is finished after this. */
	load_barrier();

	/* Pass B: patch the modules pass A saw. */
	struct pass b = a;
	b.first = 1;
	ha_fork_lock();
	if (!g_enabled) {
		/* The session ended meanwhile (a dlopen hook racing the detach). */
		ha_fork_unlock();
		return 0;
	}
	g_gen++;
	(void)dl_iterate_phdr(patch_cb, &b);
	compact(1);  /* entries of modules no longer listed: forget */
	g_live_modules = b.modules;
	/* Complete only if no module was left for later. */
	g_have_seen = a.have && b.skipped == 0;
	g_seen_adds = a.adds;
	g_seen_subs = a.subs;
	ha_fork_unlock();
	/* The attacher's view of the maps is stale now. */
	ha_sampler_note_modules();
	return 0;
}

/* ------------------------------------------------------------------ */
/* Restoring                                                           */
/* ------------------------------------------------------------------ */

static int restore_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct pass *p = data;
	uintptr_t lo, hi;
	(void)size;
	mod_relro(info, &lo, &hi);
	for (size_t i = g_ntab; i-- > 0;) {
		struct got_entry *e = &g_tab[i];
		uint32_t segflags = 0;
		if (!e->slot || e->seen == g_gen ||
		    !mod_contains(info, e->slot, sizeof(uintptr_t), &segflags))
			continue;
		e->seen = g_gen;
		/* Mapped: the module is listed and cannot go while we are here. */
		if (__atomic_load_n((const uintptr_t *)e->slot, __ATOMIC_ACQUIRE) != e->hook) {
			e->slot = 0;  /* no longer ours (someone rewrote it): leave it */
			continue;
		}
		uintptr_t expect = e->hook;
		int r = write_slot(e->slot, &expect, e->orig, page_in_relro(lo, hi, e->slot),
		                   (segflags & PF_W) != 0);
		if (r == -2) {
			g_diag.restore_failed++;  /* still ours: stays in the table */
			continue;
		}
		/* Restored, or no longer ours (someone else rewrote it): leave it. */
		e->slot = 0;
	}
	if (mod_has_live(info->dlpi_addr))
		p->modules++;
	return 0;
}

void ha_got_restore(void)
{
	struct pass p = { 0 };
	ha_fork_lock();
	g_enabled = 0;
	if (g_ntab) {
		g_gen++;
		(void)dl_iterate_phdr(restore_cb, &p);
		compact(1);  /* entries of unloaded modules: forget */
		g_live_modules = p.modules;
	}
	g_have_seen = 0;
	ha_fork_unlock();
}

void ha_got_restore_child(void)
{
	for (size_t i = g_ntab; i-- > 0;) {
		struct got_entry *e = &g_tab[i];
		uintptr_t cur;
		if (!e->slot || safe_read_word(e->slot, &cur) != 0 || cur != e->hook)
			continue;
		uintptr_t expect = e->hook;
		(void)write_slot(e->slot, &expect, e->orig, (e->flags & E_RELRO) != 0,
		                 (e->flags & E_SEGW) != 0);
	}
	/* Whatever could not be written keeps pointing at a hook, which stays
	 * valid in the child; a later session finds it and adopts it. */
	memset(g_tab, 0, g_ntab * sizeof g_tab[0]);
	g_ntab = 0;
	g_live_slots = 0;
	g_live_modules = 0;
	g_have_seen = 0;
	g_enabled = 0;
}

void ha_got_counts(uint64_t *slots, uint64_t *modules)
{
	*slots = g_live_slots;
	*modules = g_live_modules;
}

/* ------------------------------------------------------------------ */
/* Resolving the real functions                                        */
/* ------------------------------------------------------------------ */

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0;
	for (; *s; s++) {
		h = (h << 4) + (unsigned char)*s;
		uint32_t g = h & 0xf0000000u;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

static int sym_defined_func(const ElfW(Sym) *s)
{
	unsigned bind = ELF64_ST_BIND(s->st_info), type = ELF64_ST_TYPE(s->st_info);
	return s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
	       (bind == STB_GLOBAL || bind == STB_WEAK) &&
	       (type == STT_FUNC || type == STT_NOTYPE);
}

/* Address of the defined function name in module m, or 0. */
static uintptr_t mod_lookup(const struct mod *m, const char *name)
{
	const struct dl_phdr_info *info = m->info;
	if (m->gnu_hash) {
		const uint32_t *h = m->gnu_hash;
		uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
		if (nbuckets == 0)
			return 0;
		uintptr_t buckets = (uintptr_t)(h + 4) + (uintptr_t)bloom_size * sizeof(ElfW(Addr));
		uintptr_t chain = buckets + (uintptr_t)nbuckets * sizeof(uint32_t);
		uint32_t hv = gnu_hash(name);
		uintptr_t ba = buckets + (hv % nbuckets) * sizeof(uint32_t);
		if (!mod_contains(info, ba, sizeof(uint32_t), NULL))
			return 0;
		uint32_t i = *(const uint32_t *)ba;
		if (i < symoffset)
			return 0;
		for (unsigned guard = 0; guard < (1u << 24); guard++, i++) {
			uintptr_t ca = chain + (uintptr_t)(i - symoffset) * sizeof(uint32_t);
			if (!mod_contains(info, ca, sizeof(uint32_t), NULL))
				return 0;
			uint32_t ch = *(const uint32_t *)ca;
			if ((ch | 1) == (hv | 1)) {
				const ElfW(Sym) *s = mod_sym(m, i);
				if (s && sym_is(m, s, name) && sym_defined_func(s))
					return m->base + s->st_value;
			}
			if (ch & 1)
				break;
		}
		return 0;
	}
	if (m->sysv_hash) {
		const uint32_t *h = m->sysv_hash;
		uint32_t nbucket = h[0], nchain = h[1];
		if (nbucket == 0 ||
		    !mod_contains(info, (uintptr_t)(h + 2), ((size_t)nbucket + nchain) * sizeof(uint32_t), NULL))
			return 0;
		const uint32_t *bucket = h + 2, *chain = bucket + nbucket;
		uint32_t n = 0;
		for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i && i < nchain && n < nchain;
		     i = chain[i], n++) {
			const ElfW(Sym) *s = mod_sym(m, i);
			if (s && sym_is(m, s, name) && sym_defined_func(s))
				return m->base + s->st_value;
		}
	}
	return 0;
}

struct lookup {
	const char *name;
	uintptr_t addr;
};

static int lookup_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *l = data;
	struct mod m;
	(void)size;
	if (skip_module(info) || !parse_module(info, &m))
		return 0;
	l->addr = mod_lookup(&m, l->name);
	return l->addr != 0;
}

/* Is addr a canonical PLT entry (an undefined symbol with a value: a non-PIE
 * executable that takes the function's address)?  dlsym returns that PLT
 * entry, which jumps through the very GOT slot we patch: a hook calling it
 * would call itself forever. */
static int is_canonical_plt(uintptr_t addr)
{
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1((const void *)addr, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 0;
	return sym->st_shndx == SHN_UNDEF;
}

struct defcheck {
	const char *name;
	uintptr_t addr;
	int is_def;
};

static int defcheck_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct defcheck *d = data;
	struct mod m;
	(void)size;
	if (!mod_contains(info, d->addr, 1, NULL))
		return 0;
	d->is_def = parse_module(info, &m) && mod_lookup(&m, d->name) == d->addr;
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
	uintptr_t addr = (uintptr_t)dlsym(RTLD_DEFAULT, name);
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

/* Inside a dl_iterate_phdr callback (the loader's list lock is recursive):
 * the first module in load order that defines hook t's function. */
static int resolve_optional(int t)
{
	if (t < HA_HOOK_REQUIRED)
		return -1;  /* resolved at session start, or no session */
	struct lookup l = { ha_hooks_name((enum ha_hook_fn)t), 0 };
	(void)dl_iterate_phdr(lookup_cb, &l);
	if (!l.addr || ha_hooks_set_real((enum ha_hook_fn)t, l.addr) != 0)
		return -1;
	return 0;
}

int ha_got_resolve_real(char *why, size_t whylen)
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
