/*
 * elfmod.c -- read a loaded module's program headers and dynamic section
 * (see elfmod.h): its segments, its RELRO pages, its symbol and string
 * tables, its relocations and its symbol hash tables.
 *
 * Everything is read in place, in the memory ld.so mapped, and every
 * address taken from the module is checked to lie inside one of its
 * PT_LOAD segments before it is read: a module with a damaged or unusual
 * dynamic section is skipped, never a fault.  glibc relocates the d_ptr
 * values of a writable dynamic section in place; where it did not (a
 * read-only one, another libc), they are still offsets from the load base.
 *
 * No allocation, no lock, no state beyond the page size: callers run it
 * inside a dl_iterate_phdr() callback, which keeps the module mapped.
 */
#define _GNU_SOURCE
#include "elfmod.h"

#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define ELFMOD_MAX_DYN 4096          /* sanity bound on a dynamic section  */

static uintptr_t g_pagesize;

uintptr_t ha_pagesize(void)
{
	if (!g_pagesize) {
		long ps = sysconf(_SC_PAGESIZE);
		g_pagesize = ps > 0 ? (uintptr_t)ps : 4096;
	}
	return g_pagesize;
}

/* Is [a, a+len) inside one PT_LOAD segment of the module?  *pflags gets that
 * segment's p_flags. */
int ha_mod_contains(const struct dl_phdr_info *info, uintptr_t a, size_t len,
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

void ha_mod_relro(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi)
{
	*lo = *hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_GNU_RELRO)
			continue;
		uintptr_t mask = ~(ha_pagesize() - 1);
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;
		*lo = start & mask;
		*hi = (start + ph->p_memsz) & mask;
		return;
	}
}

int ha_page_in_relro(uintptr_t lo, uintptr_t hi, uintptr_t slot)
{
	uintptr_t page = slot & ~(ha_pagesize() - 1);
	return lo < hi && page >= lo && page + ha_pagesize() <= hi;
}

static int is_self(const struct dl_phdr_info *info)
{
	return ha_mod_contains(info, (uintptr_t)&is_self, 1, NULL);
}

/* The agent itself, the vdso and the dynamic loader are never patched
 * (musl's loader is its libc: that one is). */
int ha_mod_skip(const struct dl_phdr_info *info)
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
#ifndef HA_LIBC_MUSL
	/* (musl's loader is its libc, whose own calls of malloc go through
	 * its GOT like glibc's: patched.) */
	unsigned long at_base = getauxval(AT_BASE);
	if (at_base && info->dlpi_addr == at_base)
		return 1;
#endif
	unsigned long vdso = getauxval(AT_SYSINFO_EHDR);
	if (vdso && ha_mod_contains(info, vdso, 1, NULL))
		return 1;
	return is_self(info);
}

/* A d_ptr value as an address (see the top). */
static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v)
{
	return v < base ? v + base : v;
}

int ha_mod_parse(const struct dl_phdr_info *info, struct ha_mod *m)
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
	ha_mod_relro(info, &m->relro_lo, &m->relro_hi);

	uintptr_t dynaddr = base + dynph->p_vaddr;
	size_t ndyn = dynph->p_memsz / sizeof(ElfW(Dyn));
	if (ndyn > ELFMOD_MAX_DYN)
		ndyn = ELFMOD_MAX_DYN;
	if (!ha_mod_contains(info, dynaddr, ndyn * sizeof(ElfW(Dyn)), NULL))
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
	if (!ha_mod_contains(info, strtab, strsz, NULL) ||
	    !ha_mod_contains(info, symtab, sizeof(ElfW(Sym)), NULL))
		return 0;
	m->symtab = (const ElfW(Sym) *)symtab;
	m->strtab = (const char *)strtab;
	m->strsz = strsz;
	if (jmprel && pltrel == DT_RELA && pltrelsz &&
	    ha_mod_contains(info, jmprel, pltrelsz, NULL)) {
		m->jmprel = (const ElfW(Rela) *)jmprel;
		m->njmprel = pltrelsz / sizeof(ElfW(Rela));
	}
	if (rela && relasz && ha_mod_contains(info, rela, relasz, NULL)) {
		m->rela = (const ElfW(Rela) *)rela;
		m->nrela = relasz / sizeof(ElfW(Rela));
	}
	if (gnuh && ha_mod_contains(info, gnuh, 4 * sizeof(uint32_t), NULL))
		m->gnu_hash = (const uint32_t *)gnuh;
	if (sysvh && ha_mod_contains(info, sysvh, 2 * sizeof(uint32_t), NULL))
		m->sysv_hash = (const uint32_t *)sysvh;
	return 1;
}

/* Symbol idx of the module, or NULL if out of the module. */
const ElfW(Sym) *ha_mod_sym(const struct ha_mod *m, size_t idx)
{
	uintptr_t a = (uintptr_t)m->symtab + idx * sizeof(ElfW(Sym));
	if (idx > ((size_t)-1) / sizeof(ElfW(Sym)) ||
	    !ha_mod_contains(m->info, a, sizeof(ElfW(Sym)), NULL))
		return NULL;
	return (const ElfW(Sym) *)a;
}

/* Does symbol sym's name equal name?  Bounded by the string table. */
int ha_mod_sym_is(const struct ha_mod *m, const ElfW(Sym) *sym, const char *name)
{
	if (sym->st_name >= m->strsz || m->strtab[sym->st_name] != name[0])
		return 0;
	size_t len = strlen(name);
	if (m->strsz - sym->st_name <= len)
		return 0;
	const char *s = m->strtab + sym->st_name;
	return memcmp(s, name, len) == 0 && s[len] == '\0';
}

void ha_mod_slots(const struct ha_mod *m, ha_mod_slot_fn fn, void *ctx)
{
	const ElfW(Rela) *tab[2] = { m->jmprel, m->rela };
	size_t n[2] = { m->njmprel, m->nrela };
	for (int k = 0; k < 2; k++) {
		const ElfW(Rela) *r = tab[k];
		if (!r)
			continue;
		for (size_t i = 0; i < n[k]; i++) {
			uint32_t type = ELF64_R_TYPE(r[i].r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			size_t si = ELF64_R_SYM(r[i].r_info);
			if (si == 0)
				continue;
			const ElfW(Sym) *sym = ha_mod_sym(m, si);
			if (!sym)
				continue;
			fn(m, sym, m->base + r[i].r_offset, type, ctx);
		}
	}
}

/* ------------------------------------------------------------------ */
/* Symbol look-up                                                      */
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
uintptr_t ha_mod_lookup(const struct ha_mod *m, const char *name)
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
		if (!ha_mod_contains(info, ba, sizeof(uint32_t), NULL))
			return 0;
		uint32_t i = *(const uint32_t *)ba;
		if (i < symoffset)
			return 0;
		for (unsigned guard = 0; guard < (1u << 24); guard++, i++) {
			uintptr_t ca = chain + (uintptr_t)(i - symoffset) * sizeof(uint32_t);
			if (!ha_mod_contains(info, ca, sizeof(uint32_t), NULL))
				return 0;
			uint32_t ch = *(const uint32_t *)ca;
			if ((ch | 1) == (hv | 1)) {
				const ElfW(Sym) *s = ha_mod_sym(m, i);
				if (s && ha_mod_sym_is(m, s, name) && sym_defined_func(s))
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
		    !ha_mod_contains(info, (uintptr_t)(h + 2), ((size_t)nbucket + nchain) * sizeof(uint32_t), NULL))
			return 0;
		const uint32_t *bucket = h + 2, *chain = bucket + nbucket;
		uint32_t n = 0;
		for (uint32_t i = bucket[sysv_hash(name) % nbucket]; i && i < nchain && n < nchain;
		     i = chain[i], n++) {
			const ElfW(Sym) *s = ha_mod_sym(m, i);
			if (s && ha_mod_sym_is(m, s, name) && sym_defined_func(s))
				return m->base + s->st_value;
		}
	}
	return 0;
}
