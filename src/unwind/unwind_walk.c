/* unwind_walk.c -- the walk of one copied stack: in front of libunwind
 * (unwind_access.c), a fast walk with per-pc rules taken from .eh_frame
 * through libdw (unwind_cfi.c) and cached by pc: CFA = register + offset,
 * return address and callee-saved registers in CFA-relative slots.  It
 * follows libunwind's semantics step by step; where a rule is not that
 * simple, or a read leaves the copy for anything but the thread's own
 * stack, the whole stack goes to libunwind instead.  A return address
 * without any CFI is stepped over by the frame-pointer rule of
 * unwind_fp.c, with its checks.  HA_UNWIND_VERIFY=1
 * walks every stack with libunwind as well and reports any difference. */
#define _GNU_SOURCE
#include "unwind_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define PCACHE_TTL_MS 1000.0     /* live memory changes: refetch after this */
#define RC_SIZE 16384            /* per-pc rule cache entries (direct-mapped) */

/* A per-pc rule cache entry: valid iff gen == maps_gen. */
struct rc_ent {
	uint64_t addr;
	unsigned gen;
	struct ha_cfi_rule r;
};

/* ------------------------------------------------------------------ fast walk */

/* The rule for the code address addr (a pc, or a return address - 1), from
 * the cache or from the module's CFI. */
static const struct ha_cfi_rule *rule_of(struct ha_unwinder *u, struct uctx *c, uint64_t addr)
{
	uint64_t h = addr * 0x9E3779B97F4A7C15ULL;
	struct rc_ent *e = &u->rc[(h >> 32) % RC_SIZE];
	const struct ha_map *m;
	struct mapinfo *mi;

	if (e->gen == u->maps_gen && e->addr == addr)
		return &e->r;
	e->addr = addr;
	e->gen = u->maps_gen;
	memset(&e->r, 0, sizeof e->r);
	e->r.kind = CFI_FALLBACK;
	/* as acc_find_proc_info: file-backed executable code only */
	m = find_map(c, addr);
	if (!m || !(m->prot & PROT_EXEC))
		return &e->r;
	mi = uw_mapinfo_of(u, m);
	if (mi->kind != MI_IMAGE) {
		e->r.kind = CFI_NONE;   /* anonymous (JIT) code */
		return &e->r;
	}
	if (mi->bias_state == 0)
		mi->bias_state = uw_image_bias(mi->img, m, addr, &mi->bias); /* 0: ask again */
	if (mi->bias_state == 1 && uw_image_cfi(mi->img))
		ha_cfi_rule(mi->img->cfi, addr - mi->bias, &e->r);
	else if (mi->bias_state == 1)
		e->r.kind = CFI_NONE;   /* a module without .eh_frame */
	return &e->r;
}

/* A register of the walk: known, unreadable (libunwind's read would fail:
 * the thread's stack outside the copy) or unknown (only libunwind knows). */
enum { FW_KNOWN, FW_FAIL, FW_UNKNOWN };
/* Where a known register's value came from, for the stack cache: already
 * accounted for relative to rsp (rsp itself, a CFA, a checked base), the
 * captured register, or the word at this offset of the copy (>= 0). */
enum { SRC_FREE = -1, SRC_INIT = -2 };
struct fw_reg {
	uint64_t v;
	int st;                  /* FW_* */
	int64_t src;             /* SRC_* or an offset */
};

/* Read the word at addr as libunwind's access_mem would see it. */
static inline int fw_read(struct uctx *c, uint64_t addr, uint64_t *v)
{
	if (addr - c->lo < c->hi - c->lo && c->hi - addr >= 8) {
		memcpy(v, c->stack + (addr - c->lo), 8);
		return FW_KNOWN;
	}
	if (!c->smap_known)
		find_stack_map(c);
	if (addr >= c->smap_lo && addr < c->smap_hi)
		return FW_FAIL;
	return FW_UNKNOWN;
}

/* Would the frame-pointer rule give a return address after a call?  (Code
 * without CFI that keeps frame pointers -- node's builtins, JIT code --
 * takes it before the call-site scan; an rbp that is no frame pointer
 * mostly leads to a word that is no return address.) */
static int fp_plausible(struct uctx *c, const struct fw_reg *r)
{
	uint64_t ra;
	if (r[CFI_RBP].st != FW_KNOWN || !uw_fp_chain_ok(c, r[CFI_RBP].v, r[CFI_RSP].v) ||
	    fw_read(c, r[CFI_RBP].v + 8, &ra) != FW_KNOWN)
		return 0;
	return uw_fp_ra_ok(c, ra) && uw_call_before(c, ra);
}

/* The walk uw_unwind_once does with libunwind, with the cached rules: the same
 * pcs, or 0 if this stack needs libunwind.  Every step: CFA from the rule's
 * register, the return address from its slot, the callee-saved registers
 * from theirs (or unchanged); the caller's rsp is the CFA.  Stops where
 * libunwind stops: an outermost frame, a read that fails, ip 0, no
 * progress.  With rec, notes what a stack cache hit must check (see
 * "stack cache"); rec->bad if the walk cannot be stored. */
static int fast_walk(struct ha_unwinder *u, struct uctx *c, uint64_t *pcs, int max,
                     struct sc_rec *rec)
{
	const uint64_t *init = &c->regs->rip;
	struct fw_reg r[CFI_NREG];
	uint64_t addr, prev_ip, prev_sp;
	int n = 0, nfp = 0;

	for (int i = 0; i < CFI_NREG; i++)
		r[i] = (struct fw_reg){ .v = init[i], .st = FW_KNOWN,
		                        .src = i == CFI_RSP ? SRC_FREE : SRC_INIT };
	uctx_sp(c, n, c->regs->rsp);
	pcs[n++] = c->regs->rip;
	addr = prev_ip = c->regs->rip;   /* the first frame: its exact pc */
	prev_sp = c->regs->rsp;
	while (n < max) {
		const struct ha_cfi_rule *ru = rule_of(u, c, addr);
		struct uw_scan sc;
		uint64_t cfa, ip, ra;
		int st, fp = 0;

		if (ru->kind == CFI_NONE && n > 1 && !fp_plausible(c, r) &&
		    uw_scan_frame(c, addr, r[CFI_RSP].v, &sc)) {
			/* A module's code without CFI, whose rbp is no frame
			 * pointer (musl's libc): the return address of a call
			 * proven to reach this function, its pushes
			 * (unwind_scan.c). */
			for (int k = 0; k < sc.npush; k++) {
				struct fw_reg *sr = &r[sc.saved[k].reg];
				sr->st = fw_read(c, sc.saved[k].at, &sr->v);
				sr->src = (int64_t)(sc.saved[k].at - c->lo);
			}
			if (rec)
				rec->bad = 1;   /* the scanned words are not checked by a hit */
			if (c->scan_at < 0)
				c->scan_at = n;
			r[CFI_RSP] = (struct fw_reg){ .v = sc.slot + 8, .st = FW_KNOWN, .src = SRC_FREE };
			u->scan_frames++;
			uctx_sp(c, n, sc.slot + 8);
			pcs[n++] = prev_ip = sc.ra;
			prev_sp = sc.slot + 8;
			addr = sc.ra - 1;
			continue;
		}
		if (ru->kind == CFI_NONE) {
			/* No CFI: follow rbp (unwind_fp.c), but not from the
			 * exact pc of the first frame (maybe in its prologue). */
			if (n == 1 || r[CFI_RBP].st == FW_UNKNOWN)
				return 0;
			if (r[CFI_RBP].st == FW_FAIL ||
			    !uw_fp_chain_ok(c, r[CFI_RBP].v, r[CFI_RSP].v))
				goto failed;
			ru = &uw_fp_rule;
			fp = 1;
		}
		if (ru->kind == CFI_FALLBACK)
			return 0;
		if (ru->kind == CFI_END)
			break;
		struct fw_reg *cr = &r[ru->cfa_reg];
		if (cr->st == FW_UNKNOWN)
			return 0;
		if (cr->st == FW_FAIL)
			goto failed;
		if (rec && cr->src != SRC_FREE) {
			if (cr->src >= 0)
				sc_add(rec, (uint64_t)cr->src, 1, cr->v - c->lo);
			else if (ru->cfa_reg == CFI_RBP)
				rec->uses_rbp = 1;
			else
				rec->bad = 1;   /* the key holds rsp and rbp only */
			cr->src = SRC_FREE;
		}
		cfa = cr->v + (uint64_t)(int64_t)ru->cfa_off;
		ra = cfa + (uint64_t)(int64_t)ru->save[CFI_RIP];
		st = fw_read(c, ra, &ip);
		if (st == FW_UNKNOWN)
			return 0;
		if (st == FW_FAIL)
			goto failed;
		if (rec)
			sc_add(rec, ra - c->lo, 0, ip);
		for (int i = CFI_RBP; i < CFI_NREG; i++) {
			int32_t s = ru->save[i];
			if (s == CFI_SAME)
				continue;
			if (s == CFI_LOST) {
				r[i].st = FW_UNKNOWN;
			} else {
				uint64_t at = cfa + (uint64_t)(int64_t)s;
				r[i].st = fw_read(c, at, &r[i].v);
				r[i].src = (int64_t)(at - c->lo);
			}
		}
		r[CFI_RSP] = (struct fw_reg){ .v = cfa, .st = FW_KNOWN, .src = SRC_FREE };
		if (ip == 0)
			break;
		if (ip == prev_ip && cfa == prev_sp)
			goto failed;    /* no progress: a loop */
		if (fp && !uw_fp_ra_ok(c, ip))
			goto failed;    /* not a return address */
		nfp += fp;
		if (rec)
			rec->nfp = nfp;
		uctx_sp(c, n, cfa);
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = cfa;
		addr = ip - 1;          /* a return address: the call is before it */
	}
	u->fp_frames += (uint64_t)nfp;
	return n;
failed:
	if (rec)
		rec->bad = 1;   /* an error, not the outermost frame */
	u->fp_frames += (uint64_t)nfp;
	return n;
}

/* How many frames of a libunwind walk came after a pc without CFI (its own
 * frame-pointer heuristic found them). */
static int count_fp(struct ha_unwinder *u, struct uctx *c, const uint64_t *pcs, int n)
{
	int k = 0;
	for (int i = 1; i < n; i++)
		k += rule_of(u, c, i == 1 ? pcs[0] : pcs[i - 1] - 1)->kind == CFI_NONE;
	return k;
}

/* Debugging aid (HA_UNWIND_VERIFY=1): unwind again with libunwind and
 * report any difference on stderr. */
void uw_verify_walk(struct ha_unwinder *u, struct uctx *c, const uint64_t *pcs, int n,
                    int max)
{
	uint64_t *again = malloc((size_t)max * sizeof *again);
	if (!again)
		return;
	uint64_t *sps = c->sps;
	c->sps = NULL;           /* the walk's own stack pointers are kept */
	int m = uw_unwind_once(u, c, again, max);
	c->sps = sps;
	u->verified++;
	/* libunwind has no call-site scan: up to the first scanned frame */
	if (c->scan_at >= 0 && n > c->scan_at && m >= c->scan_at)
		n = m = c->scan_at;
	if (m != n || memcmp(pcs, again, (size_t)n * sizeof *pcs) != 0) {
		if (u->verify_bad++ < 10) {
			fprintf(stderr, "heapattach: unwind verify: fast walk %d pcs, libunwind %d:", n, m);
			for (int i = 0; i < (n > m ? n : m); i++)
				fprintf(stderr, " %llx/%llx", i < n ? (unsigned long long)pcs[i] : 0ull,
				        i < m ? (unsigned long long)again[i] : 0ull);
			fprintf(stderr, "\n");
		}
	}
	free(again);
}

/* The fast walk if it can, else libunwind (and the maps refresh of an
 * unknown pc).  rec->bad unless the fast walk answered. */
int uw_walk(struct ha_unwinder *u, struct uctx *c, uint64_t *pcs, int max,
            struct sc_rec *rec)
{
	int n;

	c->last = NULL;
	c->unknown_ip = 0;
	c->scan_at = -1;
	/* The rule cache also counts libunwind's frame-pointer frames
	 * (count_fp), with the fast walk off too. */
	if (!u->rc)
		u->rc = calloc(RC_SIZE, sizeof *u->rc);
	if (!u->fast_off && u->rc) {
		uint64_t fp0 = u->fp_frames;
		n = fast_walk(u, c, pcs, max, rec);
		if (n > 0) {
			u->fast_n++;
			u->frames += (uint64_t)n;
			if (u->verify)
				uw_verify_walk(u, c, pcs, n, max);
			return n;
		}
		u->fp_frames = fp0;     /* libunwind walks it again */
	}
	if (rec)
		rec->bad = 1;
	u->slow_n++;
	/* Only libunwind reads live memory or needs the time: live pages age
	 * out (the process keeps running), maps are re-read at most so often. */
	double now = ha_now_ms();
	if (now - u->pc_epoch_ms > PCACHE_TTL_MS) {
		u->pc_gen++;
		u->pc_epoch_ms = now;
	}
	n = uw_unwind_once(u, c, pcs, max);
	/* A pc in no mapping: something was mapped since we read maps (dlopen,
	 * JIT).  Re-read them (rate-limited) and try again. */
	if (c->unknown_ip && now - u->maps_ms >= UW_REFRESH_MIN_MS && uw_refresh(u)) {
		/* the copy as the new maps allow it, the stack's mapping again */
		c->hi = c->lo + uw_copy_len(u, c->lo, (size_t)(c->hi - c->lo));
		c->smap_known = 0;
		n = uw_unwind_once(u, c, pcs, max);
	}
	if (n > 0 && u->rc) {
		u->frames += (uint64_t)n;
		u->fp_frames += (uint64_t)count_fp(u, c, pcs, n);
	}
	return n;
}

void ha_unwinder_set_fast(struct ha_unwinder *u, int on)
{
	if (u)
		u->fast_off = !on;
}

void ha_unwinder_fast_stats(const struct ha_unwinder *u, uint64_t *fast, uint64_t *slow)
{
	*fast = u ? u->fast_n : 0;
	*slow = u ? u->slow_n : 0;
}
