/*
 * got.c -- patch and restore the GOT slots of the hooked functions (the
 * table of hooks.h: the malloc family, C++ new/delete, jemalloc's *allocx,
 * mmap & co, dlopen, vfork; about 45 names).
 *
 * Which slots: in every module dl_iterate_phdr() reports (except the agent,
 * the vdso and the dynamic loader), every R_X86_64_JUMP_SLOT and
 * R_X86_64_GLOB_DAT relocation of DT_JMPREL and DT_RELA whose symbol is one
 * of those names (elfmod.c reads them).  slot = dlpi_addr + r_offset.
 * Not the mmap family's slots in a module that provides malloc itself (see
 * is_allocator_mapping).
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
 *     read-only: whole pages of PT_GNU_RELRO (ha_mod_relro, elfmod.h).  That
 *     page is made PROT_READ|PROT_WRITE, CAS'ed, and put back to PROT_READ.
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
 * backwards.  It changes only under the fork lock (forklock.h): on the
 * agent thread, or on a program thread in the pass after its dlopen.
 */
#define _GNU_SOURCE
#include "got.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "elfmod.h"
#include "forklock.h"
#include "hooks.h"
#include "imports.h"
#include "resolve.h"
#include "sampler.h"
#include "stubs.h"
#include "tls.h"

#define GOT_MAX_ENTRIES 4096
#define GOT_CAS_TRIES 16

#define E_RELRO 0x1u  /* the slot's page is one ld.so made read-only */
#define E_SEGW  0x2u  /* the slot's PT_LOAD segment is PF_W            */

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
static int g_enabled;            /* a session may patch (under the fork lock) */


/* A private word nobody waits on: FUTEX_WAKE_OP needs a first futex. */
static uint32_t g_probe_word;

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
	uintptr_t page = addr & ~(ha_pagesize() - 1);
	if (msync((void *)page, ha_pagesize(), MS_ASYNC) != 0)
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
	if (w != 1 && !dance && !(w < 0 && seg_writable))
		return -2;

	uintptr_t page = slot & ~(ha_pagesize() - 1);
	if (dance && mprotect((void *)page, ha_pagesize(), PROT_READ | PROT_WRITE) != 0)
		return -2;
	int ok = __atomic_compare_exchange_n((uintptr_t *)slot, expect, val, 0,
	                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	/* If this fails the page stays writable: weaker, not wrong. */
	if (dance)
		(void)mprotect((void *)page, ha_pagesize(), PROT_READ);
	return ok ? 0 : -1;
}

static int sym_target(const struct ha_mod *m, const ElfW(Sym) *sym)
{
	for (int t = 0; t < HA_HOOK_COUNT; t++)
		if (ha_mod_sym_is(m, sym, ha_hooks_name((enum ha_hook_fn)t)))
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

static void patch_slot(const struct ha_mod *m, int t, uintptr_t slot)
{
	uint32_t segflags = 0;
	if ((slot & (sizeof(uintptr_t) - 1)) != 0 ||
	    !ha_mod_contains(m->info, slot, sizeof(uintptr_t), &segflags))
		return;

	/* A function without its real counterpart (operator new before
	 * libstdc++ was loaded, jemalloc's *allocx...) is looked up now, in
	 * load order as ld.so binds it; if there is none, the slot stays. */
	if (!ha_hooks_real((enum ha_hook_fn)t) && ha_resolve_optional(t) != 0)
		return;
	uintptr_t hook = ha_hooks_hook((enum ha_hook_fn)t);
	uint32_t flags = (ha_page_in_relro(m->relro_lo, m->relro_hi, slot) ? E_RELRO : 0) |
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
		if (!cur || g_ntab == GOT_MAX_ENTRIES)
			return;
		g_tab[g_ntab++] = (struct got_entry){ slot, cur, hook, m->base, flags, g_gen };
		return;
	}
	if (idx < 0) {
		if (g_ntab == GOT_MAX_ENTRIES)
			return;
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
static int is_allocator_mapping(const struct ha_mod *m, int t)
{
	if (t != HA_HOOK_MMAP && t != HA_HOOK_MMAP64 && t != HA_HOOK_MUNMAP && t != HA_HOOK_MREMAP)
		return 0;
	uintptr_t real_malloc = ha_hooks_real(HA_HOOK_MALLOC);
	return real_malloc && ha_mod_contains(m->info, real_malloc, 1, NULL);
}

/* One JUMP_SLOT or GLOB_DAT of the module (ha_mod_slots): ours if its
 * symbol is one of the hooked functions. */
static void slot_cb(const struct ha_mod *m, const ElfW(Sym) *sym, uintptr_t slot, uint32_t type,
                    void *ctx)
{
	(void)type;
	(void)ctx;
	int t = sym_target(m, sym);
	if (t < 0 || is_allocator_mapping(m, t))
		return;
	patch_slot(m, t, slot);
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
		    ha_mod_contains(info, g_tab[i].slot, sizeof(uintptr_t), NULL))
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
	if (ha_mod_skip(info))
		return 0;
	struct ha_mod m;
	if (ha_mod_parse(info, &m))
		ha_mod_slots(&m, slot_cb, NULL);
	if (mod_has_live(info->dlpi_addr))
		p->modules++;
	return 0;
}

static void load_barrier(void)
{
	/* dladdr() takes and releases dl_load_lock: returns only once no
	 * dlopen/dlclose is in progress.  Its answer is not needed. */
	Dl_info di;
	(void)ha_imp.dladdr((const void *)&load_barrier, &di);
}

void ha_got_session_start(void)
{
	/* Before any slot points at the dlopen stub (see stubs.h). */
	ha_stubs_on_dlopen(ha_got_patch_now);
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

	ha_hooks_park_publish(); /* the park works while the hooks are in */
	(void)ha_pagesize();
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
	ha_mod_relro(info, &lo, &hi);
	for (size_t i = g_ntab; i-- > 0;) {
		struct got_entry *e = &g_tab[i];
		uint32_t segflags = 0;
		if (!e->slot || e->seen == g_gen ||
		    !ha_mod_contains(info, e->slot, sizeof(uintptr_t), &segflags))
			continue;
		e->seen = g_gen;
		/* Mapped: the module is listed and cannot go while we are here. */
		if (__atomic_load_n((const uintptr_t *)e->slot, __ATOMIC_ACQUIRE) != e->hook) {
			e->slot = 0;  /* no longer ours (someone rewrote it): leave it */
			continue;
		}
		uintptr_t expect = e->hook;
		int r = write_slot(e->slot, &expect, e->orig, ha_page_in_relro(lo, hi, e->slot),
		                   (segflags & PF_W) != 0);
		if (r == -2)
			continue; /* still ours: stays in the table */
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
	ha_hooks_park_end(); /* the parked go on now, not at their deadline */
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
