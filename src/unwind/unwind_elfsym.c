/* unwind_elfsym.c -- what the call-site scan (unwind_scan.c) needs to know
 * of a module's symbols: where its functions start, a function's start by
 * name, and which symbol a PLT or GOT slot is for.
 *
 * Read from the image's own bytes (the whole file, mapped by
 * unwind_maps.c), ELF64 little-endian only, every offset, size, index and
 * name checked against the file: the file is the target's and may be
 * anything.  Function starts come from .symtab and .dynsym (musl's libc
 * has only .dynsym: its static functions have no start, which the scan
 * allows for); slots from the RELA sections' JUMP_SLOT and GLOB_DAT
 * relocations (.rela.plt, .rela.dyn).  Parsed once per image, on first
 * need, into three sorted arrays.  A file that is not usable gives empty
 * arrays, never an error: the scan then accepts no call through it. */
#define _GNU_SOURCE
#include "unwind_elfsym.h"

#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define SYMS_MAX 2000000u          /* symbols and relocations kept, at most */

struct named {
	uint64_t start;
	const char *name;
};

struct uw_syms {
	uint64_t *starts;               /* function starts, sorted, unique */
	size_t nstarts;
	struct named *byname;           /* defined functions, sorted by name */
	size_t nbyname;
	struct named *slots;            /* slot vaddr -> symbol name, sorted */
	size_t nslots;
};

/* A section's header, or NULL when its index or bounds are not the file's. */
static const Elf64_Shdr *shdr_at(const uint8_t *data, size_t size, const Elf64_Ehdr *eh,
                                 uint32_t i)
{
	if (i == 0 || i >= eh->e_shnum)
		return NULL;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(data + eh->e_shoff) + i;
	if (sh->sh_type == SHT_NOBITS || sh->sh_offset > size || sh->sh_size > size - sh->sh_offset)
		return NULL;
	return sh;
}

/* The NUL-terminated name at off of the string table st, or NULL. */
static const char *str_at(const uint8_t *data, const Elf64_Shdr *st, uint64_t off)
{
	if (!st || off >= st->sh_size)
		return NULL;
	const char *s = (const char *)data + st->sh_offset + off;
	return memchr(s, 0, st->sh_size - off) ? s : NULL;
}

static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 256;
	void *p = realloc(*v, nc * elem);
	if (!p)
		return -1;
	*v = p;
	*cap = nc;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_name(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : cmp_u64(&x->start, &y->start);
}

static int cmp_slot(const void *a, const void *b)
{
	return cmp_u64(&((const struct named *)a)->start, &((const struct named *)b)->start);
}

/* The functions a symbol table defines. */
static int add_symtab(struct uw_syms *s, const uint8_t *data, size_t size, const Elf64_Ehdr *eh,
                      const Elf64_Shdr *sh, size_t *cap_s, size_t *cap_n)
{
	const Elf64_Shdr *st = shdr_at(data, size, eh, sh->sh_link);
	size_t n = sh->sh_size / sizeof(Elf64_Sym);
	const Elf64_Sym *sym = (const Elf64_Sym *)(data + sh->sh_offset);
	for (size_t i = 1; i < n && s->nstarts < SYMS_MAX; i++) {
		unsigned type = ELF64_ST_TYPE(sym[i].st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[i].st_shndx == SHN_UNDEF ||
		    sym[i].st_value == 0)
			continue;
		if (grow((void **)&s->starts, cap_s, s->nstarts, sizeof *s->starts) < 0)
			return -1;
		s->starts[s->nstarts++] = sym[i].st_value;
		const char *name = str_at(data, st, sym[i].st_name);
		if (!name || !name[0])
			continue;
		if (grow((void **)&s->byname, cap_n, s->nbyname, sizeof *s->byname) < 0)
			return -1;
		s->byname[s->nbyname++] = (struct named){ sym[i].st_value, name };
	}
	return 0;
}

/* The JUMP_SLOT and GLOB_DAT relocations of a RELA section, by slot. */
static int add_rela(struct uw_syms *s, const uint8_t *data, size_t size, const Elf64_Ehdr *eh,
                    const Elf64_Shdr *sh, size_t *cap)
{
	const Elf64_Shdr *symtab = shdr_at(data, size, eh, sh->sh_link);
	if (!symtab || (symtab->sh_type != SHT_DYNSYM && symtab->sh_type != SHT_SYMTAB) ||
	    symtab->sh_offset % 8)
		return 0;
	const Elf64_Shdr *st = shdr_at(data, size, eh, symtab->sh_link);
	size_t nsym = symtab->sh_size / sizeof(Elf64_Sym);
	const Elf64_Sym *sym = (const Elf64_Sym *)(data + symtab->sh_offset);
	size_t n = sh->sh_size / sizeof(Elf64_Rela);
	const Elf64_Rela *r = (const Elf64_Rela *)(data + sh->sh_offset);
	for (size_t i = 0; i < n && s->nslots < SYMS_MAX; i++) {
		uint32_t type = (uint32_t)ELF64_R_TYPE(r[i].r_info);
		uint64_t k = ELF64_R_SYM(r[i].r_info);
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || k == 0 || k >= nsym)
			continue;
		const char *name = str_at(data, st, sym[k].st_name);
		if (!name || !name[0])
			continue;
		if (grow((void **)&s->slots, cap, s->nslots, sizeof *s->slots) < 0)
			return -1;
		s->slots[s->nslots++] = (struct named){ r[i].r_offset, name };
	}
	return 0;
}

struct uw_syms *uw_syms_parse(const uint8_t *data, size_t size)
{
	struct uw_syms *s = calloc(1, sizeof *s);
	size_t cap_s = 0, cap_n = 0, cap_r = 0;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)data;
	if (!s)
		return NULL;
	if (!data || size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > size ||
	    (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size - eh->e_shoff || eh->e_shoff % 8)
		return s;   /* not usable: empty */
	for (uint32_t i = 1; i < eh->e_shnum; i++) {
		const Elf64_Shdr *sh = shdr_at(data, size, eh, i);
		int rc = 0;
		if (!sh || sh->sh_offset % 8)
			continue;
		if (sh->sh_type == SHT_SYMTAB || sh->sh_type == SHT_DYNSYM)
			rc = add_symtab(s, data, size, eh, sh, &cap_s, &cap_n);
		else if (sh->sh_type == SHT_RELA)
			rc = add_rela(s, data, size, eh, sh, &cap_r);
		if (rc < 0) {
			uw_syms_free(s);
			return NULL;
		}
	}
	if (s->nstarts) {
		qsort(s->starts, s->nstarts, sizeof *s->starts, cmp_u64);
		size_t k = 1;
		for (size_t i = 1; i < s->nstarts; i++)
			if (s->starts[i] != s->starts[k - 1])
				s->starts[k++] = s->starts[i];
		s->nstarts = k;
	}
	if (s->nbyname)
		qsort(s->byname, s->nbyname, sizeof *s->byname, cmp_name);
	if (s->nslots)
		qsort(s->slots, s->nslots, sizeof *s->slots, cmp_slot);
	return s;
}

void uw_syms_free(struct uw_syms *s)
{
	if (!s)
		return;
	free(s->starts);
	free(s->byname);
	free(s->slots);
	free(s);
}

int uw_syms_func_le(const struct uw_syms *s, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = s ? s->nstarts : 0;
	while (lo < hi) {   /* the first start > vaddr */
		size_t mid = lo + (hi - lo) / 2;
		if (s->starts[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return 0;
	*start = s->starts[lo - 1];
	return 1;
}

int uw_syms_func_named(const struct uw_syms *s, const char *name, uint64_t *start)
{
	size_t lo = 0, hi = s ? s->nbyname : 0;
	while (lo < hi) {   /* the first entry >= name */
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(s->byname[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!s || lo >= s->nbyname || strcmp(s->byname[lo].name, name) != 0)
		return 0;
	*start = s->byname[lo].start;
	return 1;
}

const char *uw_syms_slot_name(const struct uw_syms *s, uint64_t slot_vaddr)
{
	size_t lo = 0, hi = s ? s->nslots : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->slots[mid].start < slot_vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return s && lo < s->nslots && s->slots[lo].start == slot_vaddr ? s->slots[lo].name : NULL;
}
