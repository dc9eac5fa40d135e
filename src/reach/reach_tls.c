/* reach_tls.c -- which module's static TLS block holds a TLS root word,
 * and at what offset in it, so that a block held only in TLS is named by
 * its variable (reach_sym.c's STT_TLS symbol, the writer's DWARF) and not
 * by its thread alone.
 *
 * glibc on x86_64 (TLS variant II): a module loaded at startup (or
 * dlopen'ed into the static surplus) has its TLS block at tp -
 * l_tls_offset in every thread, tp the thread pointer (fs_base); the block
 * is the module's PT_TLS template (its symbols' offsets are from its
 * start).  l_tls_offset and l_tls_modid are private fields of glibc's
 * link_map, so they are found, not assumed: the link_map chain is read
 * from r_debug (the DT_DEBUG entry of the executable's dynamic section, in
 * the copy), each map is matched to its module by l_ld (its dynamic
 * section's address), and the module's TLS fields by their values:
 * l_tls_initimage (l_addr + p_vaddr), l_tls_initimage_size (p_filesz),
 * l_tls_blocksize (p_memsz), l_tls_align (p_align), then
 * l_tls_firstbyte_offset, l_tls_offset, l_tls_modid (their order in
 * glibc's struct since 2.3).  Each thread's answer is then checked against
 * its dtv (tcbhead_t.dtv at tp + 8; dtv[modid].val must be tp - offset), so
 * that a wrong guess names nothing rather than the wrong variable.
 * Not told (the holder keeps "tid N"): dynamic TLS (a dlopen'ed module's
 * block is malloc'ed when first used and reached through the dtv, a heap
 * block: hops >= 2), the thread block above tp, other libcs.  The copy's
 * memory is untrusted: every read checked, chains and searches bounded.
 * The same reading of a module's program headers in memory tells where a
 * module's memory ends (reach_bss_end): the agent's .bss, which the
 * kernel may merge with the anonymous mapping after it (the main thread's
 * TLS, ld.so's allocations), is never a root, the rest of that mapping is. */
#include "reach_int.h"

#include <stdlib.h>
#include <string.h>

#define MAPS_MAX 4096        /* link_maps followed at most */
#define DYN_MAX 512          /* dynamic entries read at most */
#define LM_WORDS 320         /* link_map words searched for the TLS fields */
#define OFFSET_MAX (1u << 24)

#define PT_LOAD_ 1
#define PT_DYNAMIC_ 2
#define PT_TLS_ 7
#define DT_DEBUG_ 21

struct elf_info {
	uint64_t bias;      /* runtime = vaddr + bias */
	uint64_t load_end;  /* the end of its last PT_LOAD's memory (runtime) */
	uint64_t dyn;       /* PT_DYNAMIC's runtime address (0: none) */
	uint64_t dynsz;
	int has_tls;
	uint64_t tls_vaddr, tls_filesz, tls_memsz, tls_align;
};

static int rd(struct reach_mem *m, uint64_t a, uint64_t *v)
{
	return reach_mem_word(m, a, v);
}

/* The program headers of the module whose first mapping starts at start
 * (its ELF header): 0 with *ei, -1 when it is not a 64-bit ELF there. */
static int elf_info(struct reach_mem *m, uint64_t start, struct elf_info *ei)
{
	uint64_t w0, w2, phoff, w7;
	memset(ei, 0, sizeof *ei);
	if (rd(m, start, &w0) != 0 || (uint32_t)w0 != 0x464c457fu || ((w0 >> 32) & 0xff) != 2 ||
	    rd(m, start + 16, &w2) != 0 || rd(m, start + 32, &phoff) != 0 ||
	    rd(m, start + 56, &w7) != 0 || phoff > 65536)
		return -1;
	int etype = (int)(w2 & 0xffff);
	uint64_t phnum = w7 & 0xffff;
	int have_load = 0;
	uint64_t dyn_vaddr = 0;
	for (uint64_t k = 0; k < phnum && k < 64; k++) {
		uint64_t at = start + phoff + k * 56, type, vaddr, filesz, memsz, align;
		if (rd(m, at, &type) != 0 || rd(m, at + 16, &vaddr) != 0 ||
		    rd(m, at + 32, &filesz) != 0 || rd(m, at + 40, &memsz) != 0 ||
		    rd(m, at + 48, &align) != 0)
			return -1;
		switch ((uint32_t)type) {
		case PT_LOAD_:
			if (!have_load) {
				have_load = 1;
				ei->bias = etype == 3 /* ET_DYN */ ? start - (vaddr & ~0xfffull) : 0;
			}
			if (vaddr <= UINT64_MAX - memsz && vaddr + memsz + ei->bias > ei->load_end)
				ei->load_end = vaddr + memsz + ei->bias;
			break;
		case PT_DYNAMIC_:
			dyn_vaddr = vaddr;
			ei->dynsz = memsz;
			break;
		case PT_TLS_:
			if (memsz == 0 || memsz > OFFSET_MAX)
				break;
			ei->has_tls = 1;
			ei->tls_vaddr = vaddr;
			ei->tls_filesz = filesz;
			ei->tls_memsz = memsz;
			ei->tls_align = align;
			break;
		}
	}
	if (!have_load)
		return -1;
	ei->dyn = dyn_vaddr ? dyn_vaddr + ei->bias : 0;
	return 0;
}

/* r_debug's address: the DT_DEBUG entry of a module's dynamic section
 * (the executable's: the only one the loader fills). */
static uint64_t r_debug_of(struct reach_mem *m, const struct ha_maps *maps)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct ha_map *e = &maps->v[i];
		struct elf_info ei;
		if (e->offset != 0 || e->path[0] != '/' || elf_info(m, e->start, &ei) != 0 || !ei.dyn)
			continue;
		for (uint64_t k = 0; k < ei.dynsz / 16 && k < DYN_MAX; k++) {
			uint64_t tag, val;
			if (rd(m, ei.dyn + 16 * k, &tag) != 0 || tag == 0 ||
			    rd(m, ei.dyn + 16 * k + 8, &val) != 0)
				break;
			if (tag == DT_DEBUG_ && val != 0)
				return val;
		}
	}
	return 0;
}

static void add_mod(struct reach_tls *t, uint64_t module, uint64_t offset, uint64_t size,
                    uint64_t modid)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct reach_tls_mod *v = realloc(t->v, cap * sizeof *v);
		if (!v)
			return;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = (struct reach_tls_mod){ module, offset, size, modid };
}

/* Link map lm of the module at module (ei its headers): its TLS fields. */
static void tls_fields(struct reach_tls *t, struct reach_mem *m, uint64_t lm, uint64_t l_addr,
                       uint64_t module, const struct elf_info *ei)
{
	uint64_t w[LM_WORDS];
	size_t n = 0;
	while (n < LM_WORDS && rd(m, lm + 8 * n, &w[n]) == 0)
		n++;
	for (size_t i = 4; i + 6 < n; i++) {
		if ((w[i] != l_addr + ei->tls_vaddr && w[i] != ei->tls_vaddr) ||
		    w[i + 1] != ei->tls_filesz ||
		    w[i + 2] != ei->tls_memsz || w[i + 3] != ei->tls_align)
			continue;
		uint64_t offset = w[i + 5], modid = w[i + 6];
		if (offset >= ei->tls_memsz && offset < OFFSET_MAX && modid > 0 && modid < 65536)
			add_mod(t, module, offset, ei->tls_memsz, modid);
		return;
	}
}

void reach_tls_find(struct reach_tls *t, struct reach_mem *m, const struct ha_maps *maps)
{
	t->done = 1;
	uint64_t rdbg = r_debug_of(m, maps), lm, version;
	if (!rdbg || rd(m, rdbg, &version) != 0 || (uint32_t)version == 0 ||
	    (uint32_t)version > 16 || rd(m, rdbg + 8, &lm) != 0)
		return;
	for (int k = 0; lm && k < MAPS_MAX; k++) {
		uint64_t l_addr, l_ld, next;
		if (rd(m, lm, &l_addr) != 0 || rd(m, lm + 16, &l_ld) != 0 ||
		    rd(m, lm + 24, &next) != 0)
			return;
		const struct ha_map *e = l_ld ? ha_maps_find_addr(maps, l_ld) : NULL;
		const struct ha_map *mod = e ? ha_maps_module_of(maps, e) : NULL;
		struct elf_info ei;
		if (mod && elf_info(m, mod->start, &ei) == 0 && ei.has_tls)
			tls_fields(t, m, lm, l_addr, mod->start, &ei);
		lm = next;
	}
}

int reach_tls_locate(const struct reach_tls *t, struct reach_mem *m, uint64_t tp, uint64_t at,
                     uint64_t *module, uint64_t *off)
{
	uint64_t dtv;
	if (at >= tp || rd(m, tp + 8, &dtv) != 0)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		const struct reach_tls_mod *x = &t->v[i];
		if (x->offset > tp || at < tp - x->offset || at - (tp - x->offset) >= x->size)
			continue;
		uint64_t val;
		if (dtv > UINT64_MAX - 16 * (x->modid + 1) || rd(m, dtv + 16 * x->modid, &val) != 0 ||
		    val != tp - x->offset)
			return -1;   /* the dtv disagrees: say nothing */
		*module = x->module;
		*off = at - (tp - x->offset);
		return 0;
	}
	return -1;
}

uint64_t reach_bss_end(struct reach_mem *m, const struct ha_maps *maps, size_t i)
{
	const struct ha_map *e = &maps->v[i];
	const struct ha_map *mod = i > 0 ? ha_maps_module_of(maps, &maps->v[i - 1]) : NULL;
	struct elf_info ei;
	if (!mod || elf_info(m, mod->start, &ei) != 0 || ei.load_end <= mod->start ||
	    ei.load_end > UINT64_MAX - 4095)
		return e->end;
	uint64_t end = (ei.load_end + 4095) & ~4095ull;
	return end > e->start && end < e->end ? end : e->end;
}

void reach_tls_free(struct reach_tls *t)
{
	free(t->v);
	memset(t, 0, sizeof *t);
}
