/* sref.c -- stack references, the attacher's side (sref.h).
 *
 * The reader is behind the agent: by the time it reads a sample naming
 * (slot, seq), it may have republished that slot several times for the
 * copies it read before that sample.  So a publication is kept with its
 * slot for as long as the slot shows it -- however long that is: a
 * popular entry may stay for the whole session, and every sample that
 * names it must resolve -- and, once replaced, in a history of the last
 * HIST publications replaced (by seq: seqs grow by 2 for each), for the
 * samples that named it and are still on their way.  (Kept by seq alone,
 * the history of every publication, a slot that outlived 4,096 later
 * publications lost its pcs while the agent went on naming it: each of
 * its samples a failed unwind, the commonest stack of a busy service
 * first.)  A history entry is reused for a newer retirement while samples
 * naming the old one may still wait in a batch: the words kept with it
 * are handed out by (slot, seq), ha_srefs_ids, never by a pointer kept
 * across. */
#include "sref.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define SREF_PCS 64          /* deeper stacks are not published (the cache's SC_FRAMES) */
#define HIST 4096            /* replaced publications remembered */
#define SREF_PATIENCE 16     /* copies of a group's length before one of its entries goes */
/* Replacements a second at most (and at once): the history then holds
 * what was replaced in the last 4 s or so (by seq: a long-lived entry
 * retired now takes the place of one 8,192 seqs from it, and the
 * replacements of a modules change are not counted), far longer than a sample
 * spends between the agent's look at the table and the collector's read
 * of its record (rings of a few thousand records), unless the thread was
 * stopped in between.  Untaxed, 4,096 hot paths taking turns in the 64
 * slots replaced ~9,000 a second -- each a 512-byte write the agent then
 * misses in its cache, and hardly one named twice -- and a sample whose
 * record waited behind the other rings' backlog named a publication
 * already gone (t_rare_path, once in a loaded run). */
#define SREF_REPLACE_RATE 1000.0
#define SREF_REPLACE_BURST 64.0

/* One publication, as published (the table itself is never read back). */
struct pub {
	uint32_t seq;            /* 0: nothing */
	int n, nfp;              /* pcs, of which found by frame pointer */
	uint64_t rip;            /* the capture pc */
	uint32_t ids[2];
	uint64_t pcs[SREF_PCS];
};

/* What a slot shows the agent now. */
struct slot {
	uint32_t offers;         /* (a group's first slot) copies since the last change */
	uint64_t src;            /* the cache entry it came from */
	uint64_t hits;           /* since published, halved at each change in its group */
	struct pub cur;          /* cur.seq 0: nothing */
};

struct ha_srefs {
	struct ha_sref *table;
	uint16_t gen;
	uint32_t last_seq;
	struct slot slot[HA_SREF_SLOTS];
	struct pub hist[HIST];   /* replaced, by seq */
	double tokens, tokens_ms; /* replacements allowed now, as of when */
	struct ha_srefs_stats st;
};

static struct pub *hist_of(struct ha_srefs *r, uint32_t seq)
{
	return &r->hist[(seq >> 1) % HIST];
}

/* The slot's publication leaves it: into the history, for the samples
 * that named it and are still on their way. */
static void retire(struct ha_srefs *r, struct slot *sl)
{
	if (!sl->cur.seq)
		return;
	struct pub *h = hist_of(r, sl->cur.seq);
	memcpy(h, &sl->cur, offsetof(struct pub, pcs) + (size_t)sl->cur.n * sizeof sl->cur.pcs[0]);
	sl->cur.seq = 0;
}

/* Publication seq as named by a sample with slot: the slot's own while it
 * shows it, else the history's; NULL if forgotten or never published. */
static struct pub *pub_of(struct ha_srefs *r, uint32_t slot, uint32_t seq)
{
	if (!seq || (seq & 1) || slot >= HA_SREF_SLOTS)
		return NULL;
	if (r->slot[slot].cur.seq == seq)
		return &r->slot[slot].cur;
	struct pub *p = hist_of(r, seq);
	return p->seq == seq ? p : NULL;
}

struct ha_srefs *ha_srefs_new(struct ha_sref *table)
{
	if (!table)
		return NULL;
	struct ha_srefs *r = calloc(1, sizeof *r);
	if (r)
		r->table = table;
	return r;
}

void ha_srefs_free(struct ha_srefs *r)
{
	free(r);
}

/* A new even seq, never 0 (they grow: one a slot had never comes back
 * within 2^31 publications). */
static uint32_t next_seq(struct ha_srefs *r)
{
	r->last_seq += 2;
	if (!r->last_seq)
		r->last_seq = 2;
	return r->last_seq;
}

/* Write e into slot t as the seqlock wants it (ha_proto.h). */
static void write_slot(struct ha_srefs *r, uint32_t t, const struct ha_sref *e)
{
	struct ha_sref *d = &r->table[t];
	__atomic_store_n(&d->seq, e->seq - 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy((char *)d + offsetof(struct ha_sref, gen), (const char *)e + offsetof(struct ha_sref, gen),
	       sizeof *e - offsetof(struct ha_sref, gen));
	__atomic_store_n(&d->seq, e->seq, __ATOMIC_RELEASE);
}

/* May a slot be replaced at now_ms (a token taken)? */
static int may_replace(struct ha_srefs *r, double now_ms)
{
	if (now_ms > r->tokens_ms) {
		r->tokens += (now_ms - r->tokens_ms) * (SREF_REPLACE_RATE / 1000.0);
		if (r->tokens > SREF_REPLACE_BURST)
			r->tokens = SREF_REPLACE_BURST;
		r->tokens_ms = now_ms;
	}
	if (r->tokens < 1.0)
		return 0;
	r->tokens -= 1.0;
	return 1;
}

void ha_srefs_offer(struct ha_srefs *r, struct ha_unwinder *u, uint64_t ref, uint64_t len, int max,
                    double now_ms)
{
	if (!r || !ref)
		return;
	uint32_t g = ha_sref_group(len), t = HA_SREF_SLOTS;
	for (uint32_t i = g; i < g + HA_SREF_WAYS; i++) {
		if (r->slot[i].cur.seq && r->slot[i].src == ref)
			return; /* published already (the sample was in flight before it was) */
		if (!r->slot[i].cur.seq && t == HA_SREF_SLOTS)
			t = i;
	}
	if (t == HA_SREF_SLOTS) {
		/* All taken by other paths of this length: after enough copies,
		 * the least used entry of the group goes. */
		if (++r->slot[g].offers < SREF_PATIENCE)
			return;
		t = g;
		for (uint32_t i = g + 1; i < g + HA_SREF_WAYS; i++)
			if (r->slot[i].hits < r->slot[t].hits)
				t = i;
	}
	struct ha_sref e;
	uint64_t pcs[SREF_PCS];
	int nfp = 0;
	/* A replacement takes a token; given back if nothing is published. */
	int taxed = r->slot[t].cur.seq != 0;
	if (taxed && !may_replace(r, now_ms))
		return;
	int n = ha_unwind_export(u, ref, &e, pcs, max, SREF_PCS, &nfp);
	if (n <= 0 || e.len != len) {
		r->tokens += taxed;
		return;
	}
	e.seq = next_seq(r);
	e.gen = r->gen;
	retire(r, &r->slot[t]);
	struct pub *p = &r->slot[t].cur;
	memset(p, 0, offsetof(struct pub, pcs));
	p->seq = e.seq;
	p->rip = e.rip;
	p->n = n;
	p->nfp = nfp;
	memcpy(p->pcs, pcs, (size_t)n * sizeof *pcs);
	r->slot[g].offers = 0;
	for (uint32_t i = g; i < g + HA_SREF_WAYS; i++)
		r->slot[i].hits /= 2;
	r->slot[t].src = ref;
	r->slot[t].hits = 0;
	write_slot(r, t, &e);
	r->st.published++;
}

int ha_srefs_resolve(struct ha_srefs *r, const struct ha_rec_sref *ref, uint64_t rip,
                     uint64_t *pcs, int max)
{
	struct pub *p = r ? pub_of(r, ref->slot, ref->seq) : NULL;
	if (!p || p->rip != rip || p->n <= 0 || p->n > max)
		goto stale;
	memcpy(pcs, p->pcs, (size_t)p->n * sizeof *pcs);
	if (p == &r->slot[ref->slot].cur)
		r->slot[ref->slot].hits++;
	r->st.hits++;
	r->st.frames += (uint64_t)p->n;
	r->st.fp_frames += (uint64_t)p->nfp;
	return p->n;
stale:
	if (r)
		r->st.stale++;
	return 0;
}

uint32_t *ha_srefs_ids(struct ha_srefs *r, uint32_t slot, uint32_t seq)
{
	struct pub *p = r ? pub_of(r, slot, seq) : NULL;
	return p ? p->ids : NULL;
}

int ha_srefs_modules(struct ha_srefs *r, uint16_t gen)
{
	/* Forward only: two modules records can reach the ring in the other
	 * order than their generations were drawn (and a record the ring had
	 * no room for is seen in the header instead, see sref.h). */
	if (!r || (int16_t)(gen - r->gen) <= 0)
		return 0;
	r->gen = gen;
	/* Empty every slot: entries of the old generation would hold again
	 * once the 16-bit generation wraps.  A thread in the middle of a
	 * check sees its seq change and takes nothing.  (What was published
	 * stays resolvable: samples read after this that name an older entry
	 * were checked against it by a thread that had not seen the change.) */
	for (uint32_t i = 0; i < HA_SREF_SLOTS; i++) {
		retire(r, &r->slot[i]);
		r->slot[i].offers = 0;
		r->slot[i].src = 0;
		r->slot[i].hits = 0;
		__atomic_store_n(&r->table[i].seq, 0, __ATOMIC_RELEASE);
	}
	return 1;
}

void ha_srefs_stats(const struct ha_srefs *r, struct ha_srefs_stats *st)
{
	if (r)
		*st = r->st;
	else
		memset(st, 0, sizeof *st);
}
