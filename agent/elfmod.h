/*
 * elfmod.h -- a loaded module's ELF structures, as dl_iterate_phdr()
 * reports it (elfmod.c): segments, RELRO, dynamic section, symbols,
 * relocations, and a look-up of a defined function by name through the
 * module's GNU or SysV hash table.  x86_64 (ELF64, RELA) only.
 *
 * The GOT patching (got.c) and the resolution of the real functions
 * (resolve.c) sit on this; it knows nothing of hooks or sessions, so a
 * unit test (tests/reloc_check.c) can run it over any module.  Call it
 * only where the module stays mapped: inside a dl_iterate_phdr() callback
 * for that module (dlclose unmaps under the lock the callback holds).
 */
#ifndef HA_AGENT_ELFMOD_H
#define HA_AGENT_ELFMOD_H

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include "tls.h"

#if !defined(__x86_64__)
#error "heapattach agent: x86_64 only for now"
#endif

/* What ha_mod_parse() found; a NULL table is absent (or out of bounds). */
struct ha_mod {
	const struct dl_phdr_info *info;
	uintptr_t base;
	uintptr_t relro_lo, relro_hi;   /* pages ld.so made read-only */
	const ElfW(Sym) *symtab;
	const char *strtab;
	size_t strsz;
	const ElfW(Rela) *jmprel;       /* DT_JMPREL (the PLT's JUMP_SLOTs) */
	size_t njmprel;
	const ElfW(Rela) *rela;         /* DT_RELA (GLOB_DATs among others) */
	size_t nrela;
	const uint32_t *gnu_hash;
	const uint32_t *sysv_hash;
};

/* sysconf(_SC_PAGESIZE), cached. */
HA_HIDDEN uintptr_t ha_pagesize(void);

/* Is [a, a+len) inside one PT_LOAD segment of the module?  *pflags (if
 * given) gets that segment's p_flags. */
HA_HIDDEN int ha_mod_contains(const struct dl_phdr_info *info, uintptr_t a, size_t len,
                              uint32_t *pflags);

/* The whole pages of PT_GNU_RELRO, exactly as ld.so's _dl_protect_relro
 * rounds them (start and end rounded DOWN to the page size; the last
 * partial page stays writable): [*lo, *hi), or 0, 0 without RELRO. */
HA_HIDDEN void ha_mod_relro(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);

/* Is slot's page one of those pages? */
HA_HIDDEN int ha_page_in_relro(uintptr_t lo, uintptr_t hi, uintptr_t slot);

/* Never to be patched: the module this code is linked into (the agent),
 * the vdso and the dynamic loader. */
HA_HIDDEN int ha_mod_skip(const struct dl_phdr_info *info);

/* Read the module's dynamic section into *m.  1, or 0 if it has none we
 * can use (no PT_DYNAMIC, no symbol or string table, odd entry sizes,
 * tables outside the module). */
HA_HIDDEN int ha_mod_parse(const struct dl_phdr_info *info, struct ha_mod *m);

/* Symbol idx of the module, or NULL if outside the module. */
HA_HIDDEN const ElfW(Sym) *ha_mod_sym(const struct ha_mod *m, size_t idx);

/* Does sym's name equal name?  Bounded by the string table. */
HA_HIDDEN int ha_mod_sym_is(const struct ha_mod *m, const ElfW(Sym) *sym, const char *name);

/* Every R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT relocation with a symbol
 * (DT_JMPREL first, then DT_RELA, each in table order): fn(m, its symbol,
 * slot = load base + r_offset, its type, ctx).  The slot is not checked
 * here (alignment, segment): that is the caller's business. */
typedef void (*ha_mod_slot_fn)(const struct ha_mod *m, const ElfW(Sym) *sym, uintptr_t slot,
                               uint32_t type, void *ctx);
HA_HIDDEN void ha_mod_slots(const struct ha_mod *m, ha_mod_slot_fn fn, void *ctx);

/* Address of the function name defined by the module (global or weak,
 * STT_FUNC or STT_NOTYPE, through its hash table), or 0. */
HA_HIDDEN uintptr_t ha_mod_lookup(const struct ha_mod *m, const char *name);

#endif /* HA_AGENT_ELFMOD_H */
