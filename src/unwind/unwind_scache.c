/* unwind_scache.c -- the whole-stack cache in front of the walk: what it
 * is and how a hit is found are in unwind_int.h ("stack cache", sc_lookup,
 * inlined into ha_unwind); here what the rest of it does: allocating it,
 * storing a walk (and moving templates), the prefetch of a batch, the
 * caller's words kept with an entry, the counters. */
#define _GNU_SOURCE
#include "unwind_int.h"

#include <stdlib.h>

void uw_sc_new(struct ha_unwinder *u)
{
	/* the sets are cache lines: 64-byte aligned */
	u->sc = aligned_alloc(_Alignof(struct scache), sizeof *u->sc);
	if (u->sc)
		memset(u->sc, 0, sizeof *u->sc);
}

void uw_sc_free(struct ha_unwinder *u)
{
	if (u->sc)
		for (int i = 0; i < SC_SETS; i++)
			for (int k = 0; k < SC_WAYS; k++)
				free(u->sc->s[i].e[k]);
	free(u->sc);
}

/* Store the walk recorded in sc->scratch (its pcs: pcs[0..n)). */
void uw_sc_store(struct ha_unwinder *u, const struct ha_regs *regs, uint64_t len,
                 const uint8_t *stack, const uint64_t *pcs, int n, int max)
{
	struct scache *sc = u->sc;
	struct sc_rec *rec = &sc->scratch;
	struct sc_tmpl *t = sc_tmpl_of(sc, regs->rip, len);
	uint32_t off[SC_TMPL_WORDS];
	int no = 0;

	if (rec->bad || n < 1 || n > SC_FRAMES)
		return;
	/* This walk's shape: the offsets of its return addresses. */
	for (int k = 0; k < rec->nchk && no < SC_TMPL_WORDS; k++)
		if (!rec->chk[k].rel)
			off[no++] = rec->chk[k].off;
	if (!sc_tmpl_valid(u, t, regs->rip, len) ||
	    ((t->n != no || memcmp(t->off, off, (size_t)no * sizeof *off) != 0) &&
	     ++t->misses >= SC_TMPL_PATIENCE)) {
		/* entries stored under the old template age out */
		t->rip = regs->rip;
		t->len = len;
		t->gen = u->maps_gen;
		t->n = no;
		t->misses = 0;
		memcpy(t->off, off, (size_t)no * sizeof *off);
		sc->tver++;
	}
	uint64_t h = sc_hash(t, regs->rip, len, stack);
	unsigned set = SC_SET(h);
	struct sc_set *st = &sc->s[set];
	unsigned way = st->rr++ % SC_WAYS;
	struct sc_ent *e = st->e[way];
	size_t need = sizeof *e + (size_t)rec->nchk * sizeof *rec->chk + (size_t)n * sizeof *pcs;
	if (!e || e->cap < need) {
		free(e);
		e = st->e[way] = malloc(need);
		if (!e)
			return;
		e->cap = need;
	}
	e->gen = 0;
	st->fp[way] = SC_FP(h);
	e->rip = regs->rip;
	e->len = len;
	e->uses_rbp = rec->uses_rbp;
	e->nfp = rec->nfp;
	e->rsp_low = (int)(regs->rsp & 7);
	e->rbp_rel = regs->rbp - regs->rsp;
	e->max = max;
	e->n = n;
	e->nchk = rec->nchk;
	memcpy(e->chk, rec->chk, (size_t)rec->nchk * sizeof *rec->chk);
	memcpy(SC_PCS(e), pcs, (size_t)n * sizeof *pcs);
	e->user[0] = e->user[1] = 0;
	e->stamp = ++sc->stamps;
	e->gen = u->maps_gen;
	sc->last_ref = e->stamp << SC_WAY_BITS | (set * SC_WAYS + way);
}

uint64_t ha_unwind_ref(const struct ha_unwinder *u)
{
	return u && u->sc ? u->sc->last_ref : 0;
}

uint32_t *ha_unwind_user(struct ha_unwinder *u, uint64_t ref)
{
	if (!u || !u->sc || !ref)
		return NULL;
	uint64_t i = ref & ((1u << SC_WAY_BITS) - 1);
	struct sc_ent *e = u->sc->s[i / SC_WAYS].e[i % SC_WAYS];
	return e && e->stamp == ref >> SC_WAY_BITS ? e->user : NULL;
}

int ha_unwind_export(const struct ha_unwinder *u, uint64_t ref, struct ha_sref *out,
                     uint64_t *pcs, int max, int cap, int *nfp)
{
	if (!u || !u->sc || !ref)
		return 0;
	uint64_t i = ref & ((1u << SC_WAY_BITS) - 1);
	const struct sc_ent *e = u->sc->s[i / SC_WAYS].e[i % SC_WAYS];
	if (!e || e->stamp != ref >> SC_WAY_BITS || e->gen != u->maps_gen || e->max != max ||
	    e->n < 1 || e->n > max || e->n > cap || e->nchk < 0 || (unsigned)e->nchk > HA_SREF_CHECKS ||
	    e->len > UINT32_MAX)
		return 0;
	memset(out, 0, sizeof *out);
	out->len = (uint32_t)e->len;
	out->rip = e->rip;
	out->uses_rbp = e->uses_rbp != 0;
	out->rbp_rel = e->rbp_rel;
	out->rsp_low = e->nfp ? (uint8_t)e->rsp_low : 0xff;
	out->nchk = (uint32_t)e->nchk;
	for (int k = 0; k < e->nchk; k++)
		out->chk[k] = (struct ha_sref_chk){ e->chk[k].off, e->chk[k].rel, e->chk[k].val };
	memcpy(pcs, SC_PCS(e), (size_t)e->n * sizeof *pcs);
	*nfp = e->nfp;
	return e->n;
}

/* Ask for the lines a cache lookup of this stack will read: stage 0 the
 * entries of its set, stage 1 (after stage 0 for the whole batch) the
 * checks and pcs of those entries. */
void ha_unwind_prefetch(const struct ha_unwinder *u, const struct ha_regs *regs,
                        const uint8_t *stack, size_t stack_len, int stage)
{
	if (!u || !u->sc || u->sc_off || !regs || !stack || !u->maps_gen)
		return;
	uint64_t h = sc_hash_of(u, regs, stack_len, stack, 0);
	const struct sc_set *st = &u->sc->s[SC_SET(h)];
	if (stage == 0) {
		__builtin_prefetch(st);
		return;
	}
	for (int i = 0; i < SC_WAYS; i++)
		if (st->fp[i] == SC_FP(h) && st->e[i]) {
			/* the key and the checks; the pcs are read on a hit only */
			const char *p = (const char *)st->e[i];
			size_t n = sizeof *st->e[i] + 16 * (size_t)SC_TMPL_WORDS;
			for (size_t k = 0; k < n; k += 64)
				__builtin_prefetch(p + k);
		}
}

void ha_unwinder_set_stack_cache(struct ha_unwinder *u, int on)
{
	if (u)
		u->sc_off = !on;
}

void ha_unwinder_cache_stats(const struct ha_unwinder *u, uint64_t *hits, uint64_t *misses)
{
	*hits = u ? u->sc_hits : 0;
	*misses = u ? u->sc_misses : 0;
}
