/* unwind_access.c -- libunwind's remote API over a stack copied out of the
 * target, with our own accessors (modelled on perf's
 * unwind-libunwind-local.c).
 *
 * Where memory reads are served from, in this order:
 *   1. the copied stack window [regs.rsp, regs.rsp + stack_len), as
 *      ha_unwind cut it (uw_copy_len: never over a module's mapping, whose
 *      bytes, its unwind tables among them, come from 2.);
 *   2. file-backed mappings and [vdso]: their images (unwind_maps.c);
 *   3. anonymous memory only (heap, JIT, "[anon:...]"): the live process via
 *      process_vm_readv through a small cache of 4 KiB pages.
 * Never anything else: not the rest of the thread's own stack (stale by the
 * time we look), not [vvar]/[vsyscall], not unmapped or unreadable memory.
 *
 * find_proc_info locates the mapping of ip, the module's PT_GNU_EH_FRAME and
 * lets dwarf_search_unwind_table binary-search .eh_frame_hdr through
 * access_mem (UNW_INFO_FORMAT_REMOTE_TABLE).  With UNW_CACHE_GLOBAL libunwind
 * keeps the register-state of every pc it has seen, so a repeated call path
 * costs only the reads of the saved registers from the stack copy. */
#define _GNU_SOURCE
#include "unwind_int.h"

#include <sys/mman.h>

/* Not in the public headers, but exported by libunwind-x86_64 (perf uses it
 * the same way). */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
                                              unw_dyn_info_t *di, unw_proc_info_t *pi,
                                              int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

/* ------------------------------------------------------------------ reads */

static int read_live(struct ha_unwinder *u, uint64_t addr, uint8_t *out, size_t n)
{
	while (n > 0) {
		uint64_t pa = addr & ~(uint64_t)(PAGE_SZ - 1);
		size_t off = (size_t)(addr - pa), k = PAGE_SZ - off;
		struct page *pg = &u->pages[(pa / PAGE_SZ) % PCACHE_N];
		if (k > n)
			k = n;
		if (pg->gen != u->pc_gen || pg->addr != pa) {
			pg->addr = pa;
			pg->gen = u->pc_gen;
			pg->ok = ha_remote_read(u->pid, pa, pg->data, PAGE_SZ) == 0;
		}
		if (!pg->ok)
			return -1;
		memcpy(out, pg->data + off, k);
		out += k;
		addr += k;
		n -= k;
	}
	return 0;
}

/* Read one word at addr from anything but the stack copy. */
static int read_other(struct uctx *c, uint64_t addr, unw_word_t *valp)
{
	const struct ha_map *m;
	struct mapinfo *mi;
	uint8_t buf[8];

	if (addr >= c->smap_lo && addr < c->smap_hi)
		return -UNW_EINVAL;     /* the thread's stack outside the copy */
	m = find_map(c, addr);
	if (!m)
		return -UNW_EINVAL;
	mi = uw_mapinfo_of(c->u, m);
	if (mi->kind == MI_IMAGE) {
		uint64_t off = (mi->img->is_vdso ? 0 : m->offset) + (addr - m->start);
		size_t k;
		if (off >= mi->img->size)
			return -UNW_EINVAL;
		k = mi->img->size - off < 8 ? (size_t)(mi->img->size - off) : 8;
		memset(buf, 0, sizeof buf);
		memcpy(buf, mi->img->data + off, k);
	} else if (mi->kind == MI_LIVE) {
		if (m->end - addr < 8 || read_live(c->u, addr, buf, 8) != 0)
			return -UNW_EINVAL;
	} else {
		return -UNW_EINVAL;
	}
	memcpy(valp, buf, 8);
	return 0;
}

/* ------------------------------------------------------------------ accessors */

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
                          void *arg)
{
	struct uctx *c = arg;
	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (addr >= c->lo && addr < c->hi && c->hi - addr >= 8) {
		memcpy(valp, c->stack + (addr - c->lo), 8);
		return 0;
	}
	return read_other(c, addr, valp);
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write,
                          void *arg)
{
	const struct ha_regs *r = ((struct uctx *)arg)->regs;
	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	switch (reg) {
	case UNW_X86_64_RIP: *valp = r->rip; return 0;
	case UNW_X86_64_RSP: *valp = r->rsp; return 0;
	case UNW_X86_64_RBP: *valp = r->rbp; return 0;
	case UNW_X86_64_RBX: *valp = r->rbx; return 0;
	case UNW_X86_64_R12: *valp = r->r12; return 0;
	case UNW_X86_64_R13: *valp = r->r13; return 0;
	case UNW_X86_64_R14: *valp = r->r14; return 0;
	case UNW_X86_64_R15: *valp = r->r15; return 0;
	default: return -UNW_EBADREG;
	}
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                              int need_unwind_info, void *arg)
{
	struct uctx *c = arg;
	const struct ha_map *m = find_map(c, ip);
	struct mapinfo *mi;
	unw_dyn_info_t di;

	if (!m) {
		c->unknown_ip = 1;
		return -UNW_ENOINFO;
	}
	if (!(m->prot & PROT_EXEC))
		return -UNW_ENOINFO;
	mi = uw_mapinfo_of(c->u, m);
	if (mi->kind != MI_IMAGE)
		return -UNW_ENOINFO;    /* JIT/anonymous code: frame-pointer fallback */
	if (mi->table_state == 0) {
		struct image *im = mi->img;
		uint64_t bias;
		/* 0 (this ip is in no segment): ask again with the next one. */
		if ((mi->table_state = uw_image_bias(im, m, ip, &bias)) != 1)
			return -UNW_ENOINFO;
		if (!uw_image_table(im)) {
			mi->table_state = -1;   /* no .eh_frame_hdr */
			return -UNW_ENOINFO;
		}
		mi->segbase = im->hdr_vaddr + bias;
		mi->table_addr = mi->segbase + im->table_rel;
		mi->fde_count = im->fde_count;
	}
	if (mi->table_state != 1)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof di);
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = mi->segbase;
	di.u.rti.table_data = mi->table_addr;
	di.u.rti.table_len = mi->fde_count * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as, (void)pi, (void)arg;
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as, (void)dilap, (void)arg;
	return -UNW_ENOINFO;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
                            void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EINVAL;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	(void)as, (void)cu, (void)arg;
	return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
                             unw_word_t *offp, void *arg)
{
	(void)as, (void)addr, (void)buf, (void)len, (void)offp, (void)arg;
	return -UNW_ENOINFO;    /* names come from the symbolizer */
}

unw_accessors_t uw_accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_get_proc_name,
};

/* ------------------------------------------------------------------ the walk */

int uw_unwind_once(struct ha_unwinder *u, struct uctx *c, uint64_t *pcs, int max)
{
	unw_cursor_t cur;
	unw_word_t ip, sp, prev_ip, prev_sp;
	int n = 0;

	c->last = NULL;
	c->unknown_ip = 0;
	if (!c->smap_known)
		find_stack_map(c);
	if (unw_init_remote(&cur, u->as, c) < 0)
		return -1;
	uctx_sp(c, n, c->regs->rsp);
	pcs[n++] = c->regs->rip;
	prev_ip = c->regs->rip;
	prev_sp = c->regs->rsp;
	while (n < max) {
		int st = unw_step(&cur);
		if (st <= 0)
			break;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0 ||
		    unw_get_reg(&cur, UNW_REG_SP, &sp) < 0)
			break;
		if (ip == prev_ip && sp == prev_sp)
			break;          /* no progress: a loop */
		uctx_sp(c, n, sp);
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = sp;
	}
	return n;
}
