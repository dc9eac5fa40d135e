/* hashtab_test.c -- the hash table (hashtab.h) on its own: insert, look
 * up, delete and grow; random operations checked against a reference
 * array (after every deletion every other key is still found, none that
 * was deleted is); the same with a constant hash, every key in one chain;
 * an index table (entry numbers into a dense array that moves its last
 * entry into a deleted one's place); and out of memory refused cleanly.
 * Exit 0 = pass; the first failure is printed. */
#include "hashtab.h"

#include <stdio.h>
#include <stdlib.h>

static int fails;
#define CHECK(c)                                                                 \
	do {                                                                     \
		if (!(c)) {                                                      \
			fprintf(stderr, "hashtab_test:%d: %s\n", __LINE__, #c); \
			fails++;                                                 \
			return;                                                  \
		}                                                                \
	} while (0)

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* ---- a table of whole entries: key (never 0) and a value */

struct kv {
	uint64_t key, val;
};

static int const_hash; /* 1: every key hashes to 7 (one chain) */

static uint64_t key_hash(uint64_t k)
{
	return const_hash ? 7 : mix(k);
}

static uint64_t kv_hash(const void *ctx, const void *slot)
{
	(void)ctx;
	return key_hash(((const struct kv *)slot)->key);
}

/* kv_type tells a filled slot by its key; kv_type3 by comparing it all with
 * zero bytes, and grows at 3/4 full. */
static const struct ha_ht_type kv_type = { sizeof(struct kv), 4, 2, kv_hash, ha_ht_u64_eq,
	                                   ha_ht_u64_used };
static const struct ha_ht_type kv_type3 = { sizeof(struct kv), 8, 3, kv_hash, ha_ht_u64_eq, NULL };

static struct kv *put(struct ha_hashtab *t, const struct ha_ht_type *ty, uint64_t k, uint64_t v)
{
	uint64_t h = key_hash(k);
	struct kv *s = ha_ht_find(t, ty, NULL, h, &k);
	if (!s->key && !(s = ha_ht_add(t, ty, NULL, h, s)))
		return NULL;
	*s = (struct kv){ k, v };
	return s;
}

static struct kv *get(struct ha_hashtab *t, const struct ha_ht_type *ty, uint64_t k)
{
	struct kv *s = ha_ht_find(t, ty, NULL, key_hash(k), &k);
	return s->key ? s : NULL;
}

static void test_basic(const struct ha_ht_type *ty)
{
	struct ha_hashtab t;
	ha_ht_init(&t);
	CHECK(get(&t, ty, 5) == NULL); /* no slots yet */
	for (uint64_t k = 1; k <= 1000; k++)
		CHECK(put(&t, ty, k, k * 3));
	CHECK(t.n == 1000);
	CHECK(t.cap >= 2000 / (ty->load == 3 ? 3 : 2) && (t.cap & (t.cap - 1)) == 0);
	for (uint64_t k = 1; k <= 1000; k++) {
		struct kv *s = get(&t, ty, k);
		CHECK(s && s->val == k * 3);
	}
	CHECK(get(&t, ty, 1001) == NULL);
	CHECK(put(&t, ty, 10, 7) && t.n == 1000 && get(&t, ty, 10)->val == 7); /* replace */
	for (uint64_t k = 2; k <= 1000; k += 2)
		ha_ht_delete(&t, ty, NULL, get(&t, ty, k));
	CHECK(t.n == 500);
	for (uint64_t k = 1; k <= 1000; k++)
		CHECK((get(&t, ty, k) != NULL) == (k & 1));
	ha_ht_free(&t);
	CHECK(t.n == 0 && t.cap == 0 && get(&t, ty, 1) == NULL);
	CHECK(put(&t, ty, 1, 1) && get(&t, ty, 1)); /* usable again */
	ha_ht_free(&t);
}

static uint64_t rng; /* xorshift64: the same sequence on every libc */

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

/* Random adds and deletes against a reference array of which keys are in. */
static void test_random(unsigned seed, int nkeys, int ops)
{
	struct ha_hashtab t = { 0 }; /* zero bytes: an empty table too */
	uint64_t *ref = calloc((size_t)nkeys + 1, sizeof *ref); /* value, 0 = absent */
	size_t n = 0;
	CHECK(ref);
	rng = mix(seed) | 1;
	for (int op = 0; op < ops; op++) {
		uint64_t k = 1 + rnd((unsigned)nkeys);
		if (rnd(3)) {
			uint64_t v = (uint64_t)rnd(1u << 30) + 1;
			CHECK(put(&t, &kv_type, k, v));
			n += !ref[k];
			ref[k] = v;
		} else {
			struct kv *s = get(&t, &kv_type, k);
			CHECK((s != NULL) == (ref[k] != 0));
			if (s) {
				ha_ht_delete(&t, &kv_type, NULL, s);
				ref[k] = 0;
				n--;
				/* every other key still findable, this one gone */
				for (int j = 1; j <= nkeys; j++) {
					struct kv *e = get(&t, &kv_type, (uint64_t)j);
					CHECK(ref[j] ? e && e->val == ref[j] : e == NULL);
				}
			}
		}
		CHECK(t.n == n);
	}
	ha_ht_free(&t);
	free(ref);
}

/* ---- an index table: entry numbers into a dense array of keys */

struct dense {
	uint64_t *key;
	size_t n;
};

static uint64_t ix_hash(const void *ctx, const void *slot)
{
	const struct dense *d = ctx;
	return key_hash(d->key[*(const uint32_t *)slot - 1]);
}

static int ix_eq(const void *ctx, const void *slot, const void *key)
{
	const struct dense *d = ctx;
	return d->key[*(const uint32_t *)slot - 1] == *(const uint64_t *)key;
}

static const struct ha_ht_type ix_type = { sizeof(uint32_t), 16, 2, ix_hash, ix_eq, NULL };

static void test_index(void)
{
	enum { N = 3000 };
	struct dense d = { calloc(N, sizeof(uint64_t)), 0 };
	struct ha_hashtab t;
	CHECK(d.key);
	ha_ht_init(&t);
	CHECK(ha_ht_alloc(&t, &ix_type) == 0 && t.cap == 16);
	for (uint64_t k = 100; k < 100 + N; k++) {
		uint32_t *s = ha_ht_find(&t, &ix_type, &d, key_hash(k), &k);
		CHECK(*s == 0);
		d.key[d.n] = k; /* the entry first: a grow hashes it */
		s = ha_ht_add(&t, &ix_type, &d, key_hash(k), s);
		CHECK(s);
		*s = (uint32_t)++d.n;
	}
	/* Delete every third, moving the last entry into its place. */
	for (uint64_t k = 100; k < 100 + N; k += 3) {
		uint32_t *s = ha_ht_find(&t, &ix_type, &d, key_hash(k), &k);
		CHECK(*s && d.key[*s - 1] == k);
		size_t i = *s - 1, last = d.n - 1;
		ha_ht_delete(&t, &ix_type, &d, s);
		if (i != last) {
			d.key[i] = d.key[last];
			s = ha_ht_find(&t, &ix_type, &d, key_hash(d.key[i]), &d.key[i]);
			CHECK(*s == last + 1);
			*s = (uint32_t)(i + 1);
		}
		d.n--;
	}
	CHECK(t.n == d.n);
	for (uint64_t k = 100; k < 100 + N; k++) {
		uint32_t *s = ha_ht_find(&t, &ix_type, &d, key_hash(k), &k);
		if ((k - 100) % 3 == 0)
			CHECK(*s == 0);
		else
			CHECK(*s && d.key[*s - 1] == k);
	}
	ha_ht_free(&t);
	free(d.key);
}

/* A type no table can be made of: the growth is refused, nothing changes. */
static void test_refused(void)
{
	static const struct ha_ht_type huge = { sizeof(struct kv), (size_t)1 << 62, 2, kv_hash, ha_ht_u64_eq,
		                                ha_ht_u64_used };
	static const struct ha_ht_type odd = { sizeof(struct kv), 12, 2, kv_hash, ha_ht_u64_eq,
		                               ha_ht_u64_used };
	struct ha_hashtab t;
	uint64_t k = 1;
	ha_ht_init(&t);
	CHECK(ha_ht_fit(&t, &huge, NULL) == -1 && t.cap == 0 && t.n == 0);
	CHECK(ha_ht_add(&t, &huge, NULL, 1, ha_ht_find(&t, &huge, NULL, 1, &k)) == NULL);
	CHECK(ha_ht_alloc(&t, &odd) == -1 && t.cap == 0);
	CHECK(put(&t, &kv_type, 1, 2) && get(&t, &kv_type, 1)->val == 2);
	ha_ht_free(&t);
}

int main(void)
{
	test_basic(&kv_type);
	test_basic(&kv_type3);
	test_random(1, 200, 4000);
	test_random(2, 20, 2000);
	const_hash = 1; /* collisions: one chain for every key */
	test_basic(&kv_type);
	test_random(3, 60, 1500);
	test_index();
	const_hash = 0;
	test_index();
	test_refused();
	if (fails)
		return 1;
	printf("hashtab_test: ok\n");
	return 0;
}
