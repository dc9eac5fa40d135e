/* live_funcs.c -- functions as rows of the live view (ha_live_functions,
 * ha_live_callers in live_model.h), as pprof ranks them: flat, what a
 * function allocated itself -- a stack's leaf once the allocator's frames
 * are folded away (ha_live_leaf) -- and cumulative, what was allocated
 * while it was anywhere on the stack, once a stack however often it recurs.
 * The helper that keeps what it allocates, called from hundreds of call
 * paths each too small to rank, tops the flat list.
 *
 * A function is its name and module (its file: the first one seen).  The
 * frames of a stack are interned once, when its text comes: the bucket
 * keeps the ids of its functions, leaf first, and of its distinct ones.  A
 * call then adds every bucket's amount to its leaf's flat sum and to the
 * cumulative sums of its distinct functions: no string is hashed or
 * compared per call, and the cost is the buckets times their distinct
 * functions (live_model_test.c prints it for 100,000 buckets).  The
 * filter applies to a function's own name, file and module, as the call
 * paths' applies to each of their frames.  A bucket whose stack is not
 * symbolized yet is in no function. */
#define _GNU_SOURCE
#include "live_model_int.h"
#include "hashtab.h"

#include <stdlib.h>
#include <string.h>

struct fn {
	struct ha_live_text t;       /* line 0; the strings follow in the same block */
	uint64_t hash;
	uint32_t seen;               /* == stamp: the stack being interned has it already */
};

/* A bucket's functions: fid[0 .. n-1] its frames' (folded), leaf first;
 * fid[n .. n+n_uniq-1] the distinct ones. */
struct path_fns {
	uint32_t *fid;
	int n, n_uniq;
};

/* One function's sums in a call (as a caller: cum only). */
struct sums {
	struct ha_live_amount flat, cum;
	uint32_t paths;
};

struct lf_index {
	struct fn **fn;
	size_t n_fn, cap_fn;
	struct ha_hashtab slot;      /* a function's index + 1 by name and module (fn_type) */
	uint32_t stamp;
	struct path_fns *path;       /* index = bucket id */
	size_t cap_path;
	struct sums *sum;            /* n_fn + 1: the last is "no caller" */
	size_t cap_sum;
	struct ha_live_fn *rows;
	size_t cap_rows;
	struct ha_live_caller *callers;
	size_t cap_callers;
};

static uint64_t fnv(uint64_t h, const char *s)
{
	do
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	while (*s++);
	return h;
}

struct fn_key {
	uint64_t hash;
	const struct ha_live_text *t;
};

static uint64_t fn_hash(const void *ctx, const void *slot)
{
	const struct lf_index *fx = ctx;
	return fx->fn[*(const uint32_t *)slot - 1]->hash;
}

static inline int fn_eq(const void *ctx, const void *slot, const void *key)
{
	const struct lf_index *fx = ctx;
	const struct fn *e = fx->fn[*(const uint32_t *)slot - 1];
	const struct fn_key *k = key;
	return e->hash == k->hash && strcmp(e->t.function, k->t->function) == 0 &&
	       strcmp(e->t.module, k->t->module) == 0;
}

static const struct ha_ht_type fn_type = {
	.size = sizeof(uint32_t), .first_cap = 1024, .hash = fn_hash, .eq = fn_eq,
};

/* The index of f's function, added if new; UINT32_MAX when out of memory. */
static uint32_t intern(struct lf_index *fx, const struct ha_live_text *f)
{
	struct fn_key k = { fnv(fnv(0xcbf29ce484222325ULL, f->function), f->module), f };
	uint64_t h = k.hash;
	if (ha_ht_fit(&fx->slot, &fn_type, fx) < 0)
		return UINT32_MAX;
	uint32_t *slot = ha_ht_find(&fx->slot, &fn_type, fx, h, &k);
	if (*slot)
		return *slot - 1;
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	struct fn **v = ha_grow(fx->fn, &fx->cap_fn, fx->n_fn + 1, sizeof *v, 256);
	if (!v)
		return UINT32_MAX;
	fx->fn = v;
	size_t lf = strlen(f->function) + 1, lm = strlen(f->module) + 1, ll = strlen(f->file) + 1;
	struct fn *e = malloc(sizeof *e + lf + lm + ll);
	if (!e)
		return UINT32_MAX;
	char *p = (char *)(e + 1);
	e->t = (struct ha_live_text){ .function = memcpy(p, f->function, lf),
	                              .module = memcpy(p + lf, f->module, lm),
	                              .file = memcpy(p + lf + lm, f->file, ll) };
	e->hash = h;
	e->seen = 0;
	fx->fn[fx->n_fn] = e;
	slot = ha_ht_add(&fx->slot, &fn_type, fx, h, slot); /* room made above */
	*slot = (uint32_t)++fx->n_fn;
	return (uint32_t)fx->n_fn - 1;
}

void lf_take_stack(struct ha_live *l, uint32_t id)
{
	const struct ha_lmsg_stack *st = l->stacks[id];
	struct lf_index *fx = l->fx;
	if (!fx && !(fx = l->fx = calloc(1, sizeof *fx)))
		return;
	size_t old = fx->cap_path;
	struct path_fns *pv = ha_grow(fx->path, &fx->cap_path, (size_t)id + 1, sizeof *pv, 256);
	if (!pv)
		return;
	memset(pv + old, 0, (fx->cap_path - old) * sizeof *pv);
	fx->path = pv;
	struct path_fns *p = &pv[id];
	free(p->fid);
	*p = (struct path_fns){ 0 };
	int k = ha_live_leaf(st), n = st->n - k, u = 0;
	uint32_t *fid = n > 0 ? malloc(2 * (size_t)n * sizeof *fid) : NULL;
	if (!fid)
		return;
	if (++fx->stamp == 0) { /* wrapped: no function may look seen */
		for (size_t i = 0; i < fx->n_fn; i++)
			fx->fn[i]->seen = 0;
		fx->stamp = 1;
	}
	for (int i = 0; i < n; i++) {
		uint32_t f = intern(fx, &st->f[k + i]);
		if (f == UINT32_MAX) {
			free(fid);
			return;
		}
		fid[i] = f;
		if (fx->fn[f]->seen != fx->stamp) { /* recursion: counted once */
			fx->fn[f]->seen = fx->stamp;
			fid[n + u++] = f;
		}
	}
	*p = (struct path_fns){ fid, n, u };
}

void lf_free(struct lf_index *fx)
{
	if (!fx)
		return;
	for (size_t i = 0; i < fx->n_fn; i++)
		free(fx->fn[i]);
	for (size_t i = 0; i < fx->cap_path; i++)
		free(fx->path[i].fid);
	free(fx->fn);
	ha_ht_free(&fx->slot);
	free(fx->path);
	free(fx->sum);
	free(fx->rows);
	free(fx->callers);
	free(fx);
}

/* The sums of every function, and of "no caller", zero; NULL when out of
 * memory. */
static struct sums *zero_sums(struct lf_index *fx)
{
	struct sums *s = ha_grow(fx->sum, &fx->cap_sum, fx->n_fn + 1, sizeof *s, 256);
	if (!s)
		return NULL;
	fx->sum = s;
	memset(s, 0, (fx->n_fn + 1) * sizeof *s);
	return s;
}

/* Bucket id's functions, when it is of kind and counts something. */
static const struct path_fns *bucket(const struct ha_live *l, size_t id, int kind,
                                     struct ha_live_amount *a)
{
	const struct path_fns *p = &l->fx->path[id];
	if (!p->n || !lm_bucket(l, id, kind, a))
		return NULL;
	return a->growth_bytes || a->growth_objects || a->live_bytes || a->live_objects ? p : NULL;
}

static int by_flat(const void *a, const void *b, void *sort)
{
	const struct ha_live_fn *x = a, *y = b;
	int c = lm_cmp(&x->flat, &y->flat, *(enum ha_live_sort *)sort);
	if (!c)
		c = lm_cmp(&x->cum, &y->cum, *(enum ha_live_sort *)sort);
	return c ? c : x->id < y->id ? -1 : x->id > y->id;
}

size_t ha_live_functions(struct ha_live *l, int kind, enum ha_live_sort sort, const char *filter,
                         const struct ha_live_fn **rows)
{
	struct lf_index *fx = l->fx;
	struct sums *s;
	struct ha_live_amount a;
	size_t n = 0;
	*rows = NULL;
	if (!fx || !(s = zero_sums(fx)))
		return 0;
	for (size_t id = 1; id < l->cap && id < fx->cap_path; id++) {
		const struct path_fns *p = bucket(l, id, kind, &a);
		if (!p)
			continue;
		int shown = lm_shown(&a, sort);
		lm_add(&s[p->fid[0]].flat, &a);
		for (int i = 0; i < p->n_uniq; i++) {
			struct sums *c = &s[p->fid[p->n + i]];
			lm_add(&c->cum, &a);
			c->paths += shown;
		}
	}
	for (size_t f = 0; f < fx->n_fn; f++) {
		if ((!lm_shown(&s[f].flat, sort) && !lm_shown(&s[f].cum, sort)) ||
		    !lm_text_matches(&fx->fn[f]->t, filter))
			continue;
		struct ha_live_fn *r = ha_grow(fx->rows, &fx->cap_rows, n + 1, sizeof *r, 256);
		if (!r)
			break;
		fx->rows = r;
		r[n++] = (struct ha_live_fn){ (uint32_t)f, &fx->fn[f]->t, s[f].flat, s[f].cum, s[f].paths };
	}
	if (n > 1)
		qsort_r(fx->rows, n, sizeof *fx->rows, by_flat, &sort);
	*rows = fx->rows;
	return n;
}

static int by_amount(const void *a, const void *b, void *sort)
{
	const struct ha_live_caller *x = a, *y = b;
	int c = lm_cmp(&x->v, &y->v, *(enum ha_live_sort *)sort);
	if (c || !x->name || !y->name)
		return c ? c : !x->name - !y->name; /* no caller last */
	return strcmp(x->name->function, y->name->function);
}

size_t ha_live_callers(struct ha_live *l, uint32_t fn, int kind, enum ha_live_sort sort,
                       const struct ha_live_caller **rows)
{
	struct lf_index *fx = l->fx;
	struct sums *s;
	struct ha_live_amount a;
	size_t n = 0;
	*rows = NULL;
	if (!fx || fn >= fx->n_fn || !(s = zero_sums(fx)))
		return 0;
	for (size_t id = 1; id < l->cap && id < fx->cap_path; id++) {
		const struct path_fns *p = &fx->path[id];
		int i = 0;
		while (i < p->n && p->fid[i] != fn)
			i++;
		if (i == p->n || !bucket(l, id, kind, &a))
			continue;
		while (i < p->n && p->fid[i] == fn) /* direct recursion: the caller is another */
			i++;
		struct sums *c = &s[i < p->n ? p->fid[i] : fx->n_fn];
		lm_add(&c->cum, &a);
		c->paths += lm_shown(&a, sort);
	}
	for (size_t f = 0; f <= fx->n_fn; f++) {
		if (!lm_shown(&s[f].cum, sort))
			continue;
		struct ha_live_caller *r = ha_grow(fx->callers, &fx->cap_callers, n + 1, sizeof *r, 256);
		if (!r)
			break;
		fx->callers = r;
		r[n++] = (struct ha_live_caller){ f < fx->n_fn ? &fx->fn[f]->t : NULL, s[f].cum, s[f].paths };
	}
	if (n > 1)
		qsort_r(fx->callers, n, sizeof *fx->callers, by_amount, &sort);
	*rows = fx->callers;
	return n;
}
