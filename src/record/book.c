/* book.c -- bucket interning, per-bucket estimates, live sampled
 * blocks (see book.h).  Two hash tables (hashtab.h), both owned by the
 * collector thread, so no locking anywhere. */
#define _GNU_SOURCE
#include "book.h"
#include "hashtab.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One bucket per (callstack, kind): the same pcs seen as heap and as mmap
 * are two entries with two local ids (the writer interns their frames into
 * the same database stack; each row carries its kind). */
struct bucket {
	uint64_t hash;
	uint64_t *pcs;
	int n;
	int kind;
	uint8_t changed;         /* in b->changed: since the last take_changed */
	uint8_t peak_dirty;      /* in b->peak_dirty: since the last peak copy */
	uint8_t at_peak;         /* peak holds its value at the peak copy */
	uint8_t in_db;           /* a snapshot took it already */
	struct ha_db_bucket v;
	struct ha_db_bucket peak;
};

struct live {            /* a slot of the live table; addr (first) 0 = empty slot */
	uint64_t addr;
	uint32_t bucket;
	uint64_t size;
	double weight;
};

struct id_list {
	uint32_t *v;
	size_t n, cap;
};

struct ha_book {
	struct bucket *buckets;    /* index = id - 1 */
	size_t nbuckets, capbuckets;
	struct ha_hashtab bucket_index; /* uint32_t ids by pcs and kind (bucket_type) */
	struct ha_hashtab live;  /* struct live by addr (live_type) */
	struct id_list changed;  /* ids changed since the last take */
	struct id_list peak_dirty; /* ids changed since the last peak copy */
	double live_bytes[HA_KIND_COUNT]; /* live bytes per kind, summed over buckets */
	int have_peak;           /* a peak copy was made */
};

/* On every sample: one multiply per pc (a bijection of the running value),
 * one full mix at the end. */
static uint64_t hash_pcs(const uint64_t *pcs, int n, int kind)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n ^ ((uint64_t)kind << 40);
	for (int i = 0; i < n; i++)
		h = (h ^ pcs[i]) * 0x9fb21c651e98df25ULL;
	h = ha_mix64(h);
	return h ? h : 1;
}

static int same_pcs(const uint64_t *a, const uint64_t *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* The bucket index: slots are ids, keys the pcs and kind of a bucket. */
struct bucket_key {
	uint64_t hash;
	const uint64_t *pcs;
	int n, kind;
};

static uint64_t bucket_hash(const void *ctx, const void *slot)
{
	const struct ha_book *b = ctx;
	return b->buckets[*(const uint32_t *)slot - 1].hash;
}

static inline int bucket_eq(const void *ctx, const void *slot, const void *key)
{
	const struct ha_book *b = ctx;
	const struct bucket *s = &b->buckets[*(const uint32_t *)slot - 1];
	const struct bucket_key *k = key;
	return s->hash == k->hash && s->n == k->n && s->kind == k->kind && same_pcs(s->pcs, k->pcs, k->n);
}

static const struct ha_ht_type bucket_type = {
	.size = sizeof(uint32_t), .first_cap = 1024, .hash = bucket_hash, .eq = bucket_eq,
};

/* The live table: slots are the live sampled blocks, keys their addresses. */
static uint64_t live_hash(const void *ctx, const void *slot)
{
	(void)ctx;
	return ha_mix64(((const struct live *)slot)->addr);
}

static const struct ha_ht_type live_type = {
	.size = sizeof(struct live), .first_cap = 1024, .hash = live_hash, .eq = ha_ht_u64_eq,
	.used = ha_ht_u64_used, /* addr first */
};

double ha_sample_weight(uint64_t size, uint64_t interval)
{
	if (interval <= 1)
		return 1.0;
	if (size == 0)
		size = 1;
	double p = -expm1(-(double)size / (double)interval);
	return p > 0 ? 1.0 / p : 1.0;
}

struct ha_book *ha_book_new(void)
{
	struct ha_book *b = calloc(1, sizeof *b);
	if (!b)
		return NULL;
	ha_ht_init(&b->bucket_index);
	ha_ht_init(&b->live);
	if (ha_ht_alloc(&b->bucket_index, &bucket_type) != 0 || ha_ht_alloc(&b->live, &live_type) != 0) {
		ha_book_free(b);
		return NULL;
	}
	return b;
}

void ha_book_free(struct ha_book *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nbuckets; i++)
		free(b->buckets[i].pcs);
	free(b->buckets);
	ha_ht_free(&b->bucket_index);
	ha_ht_free(&b->live);
	free(b->changed.v);
	free(b->peak_dirty.v);
	free(b);
}

uint32_t ha_book_find(const struct ha_book *b, const uint64_t *pcs, int n, int kind)
{
	struct bucket_key k = { hash_pcs(pcs, n, kind), pcs, n, kind };
	const uint32_t *slot = ha_ht_find((struct ha_hashtab *)&b->bucket_index, &bucket_type,
	                                  (void *)b, k.hash, &k);
	return *slot;
}

uint32_t ha_book_bucket(struct ha_book *b, const uint64_t *pcs, int n, int kind, int *is_new)
{
	struct bucket_key k = { hash_pcs(pcs, n, kind), pcs, n, kind };
	uint32_t *slot = ha_ht_find(&b->bucket_index, &bucket_type, b, k.hash, &k), found = *slot;
	*is_new = 0;
	if (found)
		return found;
	struct bucket *nb = ha_grow(b->buckets, &b->capbuckets, b->nbuckets + 1, sizeof *nb, 256);
	if (!nb)
		return 0;
	b->buckets = nb;
	struct bucket *s = &b->buckets[b->nbuckets];
	memset(s, 0, sizeof *s);
	s->pcs = malloc((size_t)(n ? n : 1) * sizeof *pcs);
	if (!s->pcs)
		return 0;
	if (n > 0) /* pcs may be NULL when n is 0 */
		memcpy(s->pcs, pcs, (size_t)n * sizeof *pcs);
	s->n = n;
	s->kind = kind;
	s->hash = k.hash;
	if (!(slot = ha_ht_add(&b->bucket_index, &bucket_type, b, k.hash, slot))) {
		free(s->pcs);
		return 0;
	}
	uint32_t id = (uint32_t)++b->nbuckets;
	s->v.stack_id = id;
	s->v.kind = kind;
	*slot = id;
	*is_new = 1;
	return id;
}

/* Add id to l; 0, or -1 when out of memory (the mark is then not set, and
 * the next change that fits sets it). */
static int list_add(struct id_list *l, uint32_t id)
{
	uint32_t *nv = ha_grow(l->v, &l->cap, l->n + 1, sizeof *nv, 256);
	if (!nv)
		return -1;
	l->v = nv;
	l->v[l->n++] = id;
	return 0;
}

/* s goes into the next snapshot. */
static void mark_for_snapshot(struct ha_book *b, struct bucket *s)
{
	if (!s->changed && list_add(&b->changed, (uint32_t)s->v.stack_id) == 0)
		s->changed = 1;
}

static void mark_changed(struct ha_book *b, struct bucket *s)
{
	mark_for_snapshot(b, s);
	if (!s->peak_dirty && list_add(&b->peak_dirty, (uint32_t)s->v.stack_id) == 0)
		s->peak_dirty = 1;
}

/* The bucket of id, NULL for an id out of range. */
static struct bucket *bucket_of(const struct ha_book *b, uint32_t id)
{
	return id && id <= b->nbuckets ? &b->buckets[id - 1] : NULL;
}

/* Move the estimate of the live sample l from live to freed. */
static void account_free(struct ha_book *b, const struct live *l)
{
	struct bucket *s = &b->buckets[l->bucket - 1];
	double before = s->v.live_bytes;
	s->v.free_count += l->weight;
	s->v.free_bytes += l->weight * (double)l->size;
	s->v.live_count -= l->weight;
	s->v.live_bytes -= l->weight * (double)l->size;
	/* Rounding must never show a negative live heap. */
	if (s->v.live_count < 1e-6)
		s->v.live_count = 0;
	if (s->v.live_bytes < 1e-3)
		s->v.live_bytes = 0;
	b->live_bytes[s->kind] += s->v.live_bytes - before;
	mark_changed(b, s);
}

/* The slot holding addr, or the empty slot ending its probe chain. */
static struct live *live_find(const struct ha_book *b, uint64_t addr)
{
	return ha_ht_find(&b->live, &live_type, NULL, ha_mix64(addr), &addr);
}

void ha_book_prefetch(const struct ha_book *b, uint32_t bucket, uint64_t addr)
{
	const struct bucket *s = bucket_of(b, bucket);
	if (s) {
		__builtin_prefetch(s, 1);
		__builtin_prefetch((const char *)(s + 1) - 1, 1);
	}
	if (addr)
		__builtin_prefetch(ha_ht_slot(&b->live, &live_type, ha_mix64(addr) & b->live.mask), 1);
}

void ha_book_alloc(struct ha_book *b, uint32_t bucket, uint64_t addr, uint64_t size, double weight)
{
	struct bucket *s = bucket_of(b, bucket);
	if (!s || addr == 0)
		return;
	struct live *l = live_find(b, addr);
	if (l->addr) {
		/* The same address sampled twice without a free in between (a
		 * free we did not see): the older sample is no longer live; the
		 * new one takes its slot. */
		account_free(b, l);
	} else if (!(l = ha_ht_add(&b->live, &live_type, NULL, ha_mix64(addr), l))) {
		return;
	}
	*l = (struct live){ addr, bucket, size, weight };
	s->v.alloc_count += weight;
	s->v.alloc_bytes += weight * (double)size;
	s->v.live_count += weight;
	s->v.live_bytes += weight * (double)size;
	b->live_bytes[s->kind] += weight * (double)size;
	mark_changed(b, s);
}

int ha_book_release(struct ha_book *b, uint64_t addr)
{
	if (!addr)
		return 0;
	struct live *l = live_find(b, addr);
	if (!l->addr)
		return 0;
	account_free(b, l);
	ha_ht_delete(&b->live, &live_type, NULL, l);
	return 1;
}


void ha_book_gain(struct ha_book *b, uint32_t bucket, double bytes)
{
	struct bucket *s = bucket_of(b, bucket);
	if (!s || !(bytes > 0))
		return;
	s->v.alloc_count += bytes / 4096;
	s->v.alloc_bytes += bytes;
	s->v.live_count += bytes / 4096;
	s->v.live_bytes += bytes;
	b->live_bytes[s->kind] += bytes;
	mark_changed(b, s);
}

void ha_book_lose(struct ha_book *b, uint32_t bucket, double bytes)
{
	struct bucket *s = bucket_of(b, bucket);
	if (!s || !(bytes > 0))
		return;
	struct live l = { .bucket = bucket, .size = 4096, .weight = bytes / 4096 };
	account_free(b, &l);
}

size_t ha_book_count(const struct ha_book *b)
{
	return b->nbuckets;
}

const struct ha_db_bucket *ha_book_value(const struct ha_book *b, uint32_t id)
{
	const struct bucket *s = bucket_of(b, id);
	return s ? &s->v : NULL;
}

const uint64_t *ha_book_pcs(const struct ha_book *b, uint32_t bucket, int *n, int *kind)
{
	const struct bucket *s = bucket_of(b, bucket);
	if (!s)
		return NULL;
	*n = s->n;
	*kind = s->kind;
	return s->pcs;
}

size_t ha_book_take_changed(struct ha_book *b, struct ha_db_bucket **rows)
{
	size_t n = b->changed.n;
	*rows = NULL;
	if (n == 0)
		return 0;
	struct ha_db_bucket *r = malloc(n * sizeof *r);
	if (!r)
		return 0; /* the marks stay: the next snapshot carries them */
	for (size_t i = 0; i < n; i++) {
		struct bucket *s = &b->buckets[b->changed.v[i] - 1];
		r[i] = s->v;
		s->changed = 0;
		s->in_db = 1;
	}
	b->changed.n = 0;
	*rows = r;
	return n;
}

double ha_book_live_bytes(const struct ha_book *b, int kind)
{
	if (kind >= 0 && kind < HA_KIND_COUNT)
		return b->live_bytes[kind] > 0 ? b->live_bytes[kind] : 0;
	return ha_book_live_bytes(b, HA_KIND_HEAP) + ha_book_live_bytes(b, HA_KIND_MMAP);
}

void ha_book_totals(const struct ha_book *b, struct ha_db_snapshot *s)
{
	s->has_live = 1;
	s->live_count = 0;
	for (int k = 0; k < HA_KIND_COUNT; k++)
		s->live_bytes[k] = ha_book_live_bytes(b, k);
	for (size_t i = 0; i < b->nbuckets; i++)
		if (b->buckets[i].v.kind == HA_KIND_HEAP || b->buckets[i].v.kind == HA_KIND_MMAP)
			s->live_count += b->buckets[i].v.live_count;
}

void ha_book_keep_peak(struct ha_book *b)
{
	for (size_t i = 0; i < b->peak_dirty.n; i++) {
		struct bucket *s = &b->buckets[b->peak_dirty.v[i] - 1];
		s->peak = s->v;
		s->at_peak = 1;
		s->peak_dirty = 0;
	}
	b->peak_dirty.n = 0;
	b->have_peak = 1;
}

size_t ha_book_peak_dirty(const struct ha_book *b)
{
	return b->peak_dirty.n;
}

size_t ha_book_take_peak(struct ha_book *b, struct ha_db_bucket **rows)
{
	size_t n = 0;
	*rows = NULL;
	if (!b->have_peak || b->nbuckets == 0)
		return 0;
	struct ha_db_bucket *r = malloc(b->nbuckets * sizeof *r);
	if (!r)
		return 0;
	for (size_t i = 0; i < b->nbuckets; i++) {
		struct bucket *s = &b->buckets[i];
		if (s->at_peak)
			r[n] = s->peak;
		else if (s->in_db)
			r[n] = (struct ha_db_bucket){ .stack_id = s->v.stack_id, .kind = s->kind };
		else
			continue;
		n++;
		s->in_db = 1;
		mark_for_snapshot(b, s); /* written again by the next one (book.h) */
	}
	*rows = r;
	return n;
}

void ha_book_each_block(const struct ha_book *b,
                        void (*each)(void *ctx, uint64_t addr, uint64_t size, double weight,
                                     uint32_t bucket, int kind),
                        void *ctx)
{
	for (size_t i = 0; i < b->live.cap; i++) {
		const struct live *l = ha_ht_slot(&b->live, &live_type, i);
		if (l->addr && l->bucket && l->bucket <= b->nbuckets)
			each(ctx, l->addr, l->size, l->weight, l->bucket, b->buckets[l->bucket - 1].kind);
	}
}
