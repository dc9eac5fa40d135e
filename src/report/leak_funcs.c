/* leak_funcs.c -- the function trends of heapdiff --leaks: a helper that
 * keeps what it allocates, called from hundreds of places, holds little
 * on each call path (each is noise, or not sampled at all), but its total
 * grows steadily.  So besides every (callstack, kind) series (leaks.c),
 * every function's series are fitted with the same tests (hd_leak_fit):
 *   flat        the live bytes of the call paths whose leaf (once the
 *               allocator's frames are folded, hd_fold) is the function:
 *               what it allocated.  Measured when at least 2 call paths
 *               end in it (with one, its series is that call path's);
 *   cumulative  of the call paths with the function anywhere on them, each
 *               once (recursion): what it and its callees allocated.
 *               Measured when it is not the leaf of all of them (else it is
 *               its flat series).
 * Only call paths that pass the filters (--module, --function, --kind) are
 * added up.
 *
 * A cumulative trend grows with every leak below it: main's, and that of
 * every caller on the way to the helper.  The reader wants the helper
 * named, not main, so a cumulative suspect is listed only when it says
 * something the narrower suspects do not:
 *   1. the call paths explained so far are the call-path suspects and the
 *      call paths ending in a flat suspect;
 *   2. the cumulative suspects are taken narrowest first (fewest call
 *      paths through them, then the steepest); for each, the series of its
 *      call paths not yet explained (its residual) is fitted: a suspect,
 *      and it is listed with that residual's trend, its call paths
 *      explained from then on; otherwise it is not listed: it is a "via"
 *      function of the suspects that explain its call paths, named on
 *      their line (text) or in their "via" list (json).
 * So the helper is named with "via main, worker, ...", and main is listed
 * itself only when something grows through it that no narrower suspect
 * explains.  The residuals need a second scan of the session (only when
 * there is a cumulative suspect) and the series of the unexplained call
 * paths through a candidate.
 *
 * Memory: a first pass over the session's keys (session_stacks, no
 * series) counts the call paths of each function, so that only the
 * series that are measured are kept: a flat one for a function that ends
 * 2 call paths or more, a cumulative one for a function that is not the
 * leaf of all of its call paths.  Those and the unexplained call paths'
 * series are at most MAX_VALUES values in all: past it, the functions seen
 * later are not fitted (counted: hd_leak_set.unfitted), and if the
 * unexplained call paths do not fit, every cumulative suspect is listed
 * whole (approx).  On the 105,224-stack fixture of issue 39 (192,605
 * functions, 25 snapshots) ~65,000 functions get a series (all of them
 * did, past the cap) and every unexplained call path fits: 30 MB.  The
 * candidates know their call paths (an index each), so narrowing costs
 * the paths through each candidate, not every path for each. */
#define _GNU_SOURCE
#include "leaks_int.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES (8u << 20)   /* 64 MiB of doubles */

struct fn_trend {
	double *flat, *cum;        /* [nsnaps] each; NULL: not measured (one
	                            * call path, or past the cap) */
	double flat_obj, cum_obj;  /* live objects at the last snapshot */
	int flat_paths, cum_paths; /* call paths (pass 0) */
	int flat_suspect;          /* its flat trend is a suspect */
	int cand;                  /* its cumulative trend is a suspect: 1, and
	                            * 2 once listed */
	size_t ci;                 /* then its struct cand: index + 1 */
};

/* A function whose cumulative trend is a suspect: a candidate. */
struct cand {
	size_t fn;
	struct hd_leak fit;        /* that trend */
	size_t *by, nby;           /* the suspects (fn indexes) that explain
	                            * some of its call paths */
	size_t *paths, npaths, cap; /* the unexplained call paths through it
	                            * (indexes into lf.up) */
};

/* An unexplained call path through a cumulative candidate (pass 2). */
struct upath {
	double *y;
	long by;                   /* the listed cumulative suspect that
	                            * explains it (fn index), or -1 */
};

/* A call-path suspect's key, sorted for bsearch. */
struct skey {
	int64_t stack_id;
	int kind;
};

struct lf {
	struct hd_source *s;
	const struct hd_filter *flt;
	const struct session_snaps *ss;
	struct hd_fn_index *fn;
	struct fn_trend *t;        /* [fn->n] */
	struct cand *c;            /* [nc] */
	size_t nc;
	size_t values, unfitted;
	struct skey *stacks;       /* [nstacks], sorted */
	size_t nstacks;
	struct upath *up;
	size_t nup, capup;
	int approx;
};

/* The folded frames of a series, or n = 0 when it fails the filters. */
static int view_of(struct lf *F, int64_t stack_id, struct hd_stack *v)
{
	int folded;
	const struct hd_stack *st;
	if (hd_stack_get(F->s, stack_id, &st) < 0)
		return HD_ERR;
	*v = hd_fold(st, F->flt->all_frames, &folded);
	if (!hd_stack_matches(v, F->flt))
		v->n = 0;
	return HD_OK;
}

static size_t fn_at(struct lf *F, const struct hd_frame *fr)
{
	int fresh;
	size_t i = hd_fn_of(F->fn, fr, &fresh);
	if (!fresh)
		return i;
	F->t = hd_xrealloc(F->t, F->fn->cap * sizeof *F->t);
	memset(&F->t[i], 0, sizeof F->t[i]);
	return i;
}

static void add_to(double *sum, const double *y, size_t n)
{
	for (size_t i = 0; sum && i < n; i++)
		sum[i] += y[i];
}

/* Pass 0: the call paths of each function, from the session's keys. */
static int pass0(struct lf *F, int64_t session)
{
	sqlite3_stmt *q;
	int rc;
	if (hd_prepare(F->s, "SELECT stack_id, kind FROM session_stacks WHERE session_id = ?1"
	                     " ORDER BY stack_id, kind", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, session);
	while ((rc = hd_step(F->s, q)) > 0) {
		struct hd_stack v;
		int64_t kind = sqlite3_column_int64(q, 1);
		if (kind < 0 || kind > 255 || !hd_kind_matches(F->flt->kind, (int)kind))
			continue;
		if ((rc = view_of(F, sqlite3_column_int64(q, 0), &v)) < 0)
			break;
		if (v.n == 0)
			continue;
		size_t leaf = fn_at(F, v.f[0]); /* (may move F->t) */
		F->t[leaf].flat_paths++;
		hd_fn_path(F->fn);
		for (int k = 0; k < v.n; k++) {
			size_t i = fn_at(F, v.f[k]);
			if (hd_fn_once(F->fn, i))
				F->t[i].cum_paths++;
		}
	}
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

/* The series pass 1 fills: those that will be measured, in the order the
 * functions were first seen, while they fit under the cap. */
static void alloc_series(struct lf *F)
{
	size_t n = F->ss->n;
	for (size_t i = 0; i < F->fn->n; i++) {
		struct fn_trend *t = &F->t[i];
		int flat = t->flat_paths >= 2, cum = t->cum_paths > t->flat_paths;
		size_t need = (size_t)(flat + cum) * n;
		if (!need)
			continue;
		if (F->values + need > MAX_VALUES) {
			F->unfitted++;
			continue;
		}
		F->values += need;
		if (flat)
			t->flat = hd_xcalloc(n, sizeof(double));
		if (cum)
			t->cum = hd_xcalloc(n, sizeof(double));
	}
}

/* Pass 1: every series into its functions' sums. */
static int pass1(void *ctx, int64_t stack_id, int kind, const double *y, const double *c,
                 const struct session_snaps *ss)
{
	struct lf *F = ctx;
	struct hd_stack v;
	(void)kind;
	if (view_of(F, stack_id, &v) < 0)
		return HD_ERR;
	if (v.n == 0)
		return HD_OK;
	size_t li = fn_at(F, v.f[0]); /* (may move F->t) */
	struct fn_trend *leaf = &F->t[li];
	add_to(leaf->flat, y, ss->n);
	leaf->flat_obj += c[ss->n - 1];
	hd_fn_path(F->fn);
	for (int k = 0; k < v.n; k++) {
		size_t i = fn_at(F, v.f[k]);
		if (!hd_fn_once(F->fn, i))
			continue;
		add_to(F->t[i].cum, y, ss->n);
		F->t[i].cum_obj += c[ss->n - 1];
	}
	return HD_OK;
}

static void explained_by(struct cand *c, size_t s)
{
	for (size_t i = 0; i < c->nby; i++)
		if (c->by[i] == s)
			return;
	c->by = hd_xrealloc(c->by, (c->nby + 1) * sizeof *c->by);
	c->by[c->nby++] = s;
}

static int cmp_skey(const void *pa, const void *pb)
{
	const struct skey *a = pa, *b = pb;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return (a->kind > b->kind) - (a->kind < b->kind);
}

static int stack_suspect(const struct lf *F, int64_t stack_id, int kind)
{
	struct skey k = { stack_id, kind };
	return F->nstacks && bsearch(&k, F->stacks, F->nstacks, sizeof k, cmp_skey) != NULL;
}

/* Pass 2: the call paths through a candidate: explained ones name their
 * flat suspect on the candidates; the others are kept for step 2. */
static int pass2(void *ctx, int64_t stack_id, int kind, const double *y, const double *c,
                 const struct session_snaps *ss)
{
	struct lf *F = ctx;
	struct hd_stack v;
	size_t cand[HD_MAX_FRAMES], ncand = 0;
	(void)c;
	if (view_of(F, stack_id, &v) < 0)
		return HD_ERR;
	if (v.n == 0)
		return HD_OK;
	hd_fn_path(F->fn);
	for (int k = 0; k < v.n; k++) {
		/* (A function not seen in pass 1: the file changed between
		 * the scans; it is no candidate.) */
		size_t i = fn_at(F, v.f[k]);
		if (F->t[i].cand && hd_fn_once(F->fn, i) && ncand < HD_MAX_FRAMES)
			cand[ncand++] = F->t[i].ci - 1;
	}
	if (ncand == 0)
		return HD_OK;
	size_t leaf = fn_at(F, v.f[0]);
	if (F->t[leaf].flat_suspect) {
		for (size_t k = 0; k < ncand; k++)
			explained_by(&F->c[cand[k]], leaf);
		return HD_OK;
	}
	if (stack_suspect(F, stack_id, kind))
		return HD_OK;
	if (F->approx || F->values + ss->n > MAX_VALUES) {
		F->approx = 1;
		return HD_OK;
	}
	if (F->nup == F->capup) {
		F->capup = F->capup ? F->capup * 2 : 64;
		F->up = hd_xrealloc(F->up, F->capup * sizeof *F->up);
	}
	struct upath *u = &F->up[F->nup];
	u->y = hd_xmalloc(ss->n * sizeof *u->y);
	memcpy(u->y, y, ss->n * sizeof *y);
	u->by = -1;
	for (size_t k = 0; k < ncand; k++) {
		struct cand *cd = &F->c[cand[k]];
		if (cd->npaths == cd->cap) {
			cd->cap = cd->cap ? cd->cap * 2 : 16;
			cd->paths = hd_xrealloc(cd->paths, cd->cap * sizeof *cd->paths);
		}
		cd->paths[cd->npaths++] = F->nup;
	}
	F->nup++;
	F->values += ss->n;
	return HD_OK;
}

static void push(struct hd_leak **v, size_t *n, size_t *cap, const struct hd_leak *tr)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = hd_xrealloc(*v, *cap * sizeof **v);
	}
	(*v)[(*n)++] = *tr;
}

static double *copy_series(const double *y, size_t n, int keep)
{
	if (!keep)
		return NULL;
	double *c = hd_xmalloc(n * sizeof *c);
	memcpy(c, y, n * sizeof *c);
	return c;
}

static const struct lf *g_order;   /* cmp_narrow's functions */

/* Narrowest first: fewest call paths, then the steepest, then first seen. */
static int cmp_narrow(const void *pa, const void *pb)
{
	const struct cand *x = &g_order->c[*(const size_t *)pa], *y = &g_order->c[*(const size_t *)pb];
	int px = g_order->t[x->fn].cum_paths, py = g_order->t[y->fn].cum_paths;
	if (px != py)
		return px < py ? -1 : 1;
	if (x->fit.slope != y->fit.slope)
		return x->fit.slope > y->fit.slope ? -1 : 1;
	return x->fn < y->fn ? -1 : 1;
}

/* Step 2: the candidates narrowest first, each listed on its residual or
 * left as a via function. */
static void narrow(struct lf *F, int keep, struct hd_leak **v, size_t *n, size_t *cap)
{
	size_t ns = F->ss->n;
	size_t *order = hd_xmalloc((F->nc + 1) * sizeof *order);
	double *res = hd_xmalloc(ns * sizeof *res);
	for (size_t i = 0; i < F->nc; i++)
		order[i] = i;
	g_order = F;
	qsort(order, F->nc, sizeof *order, cmp_narrow);
	for (size_t o = 0; o < F->nc; o++) {
		struct cand *cd = &F->c[order[o]];
		size_t g = cd->fn;
		struct fn_trend *t = &F->t[g];
		struct hd_leak tr = { .what = HD_LEAK_CUM, .func = g, .kind = F->flt->kind };
		int paths = 0;
		memset(res, 0, ns * sizeof *res);
		for (size_t p = 0; p < cd->npaths; p++) {
			const struct upath *u = &F->up[cd->paths[p]];
			if (u->by >= 0) {
				explained_by(cd, (size_t)u->by);
			} else {
				add_to(res, u->y, ns);
				paths++;
			}
		}
		if (F->approx) {
			/* Too many paths kept: the whole trend, unnarrowed. */
			tr = cd->fit;
			tr.what = HD_LEAK_CUM;
			tr.func = g;
			tr.kind = F->flt->kind;
			tr.paths = t->cum_paths;
			tr.last_objects = t->cum_obj;
			tr.series = copy_series(t->cum, ns, keep);
			push(v, n, cap, &tr);
			continue;
		}
		if (paths == 0 || !hd_leak_fit(res, NULL, F->ss, F->flt->min_bytes, &tr))
			continue; /* a via function */
		tr.paths = paths;
		tr.last_objects = t->cum_obj;
		tr.series = copy_series(res, ns, keep);
		push(v, n, cap, &tr);
		t->cand = 2; /* listed */
		for (size_t p = 0; p < cd->npaths; p++)
			if (F->up[cd->paths[p]].by < 0)
				F->up[cd->paths[p]].by = (long)g;
	}
	free(res);
	free(order);
}

static const struct lf *g_via;   /* cmp_via's functions */

/* The widest via function first: by the growth of its cumulative trend. */
static int cmp_via(const void *pa, const void *pb)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	double ga = g_via->c[g_via->t[a].ci - 1].fit.slope, gb = g_via->c[g_via->t[b].ci - 1].fit.slope;
	if (ga != gb)
		return ga > gb ? -1 : 1;
	return a < b ? -1 : 1;
}

/* Each function suspect's via list: the candidates not listed that it
 * explains some call paths of. */
static void via_lists(struct lf *F, struct hd_leak *v, size_t from, size_t n)
{
	g_via = F;
	for (size_t i = from; i < n; i++) {
		struct hd_leak *L = &v[i];
		for (size_t c = 0; c < F->nc; c++) {
			const struct cand *cd = &F->c[c];
			if (F->t[cd->fn].cand != 1)
				continue;
			for (size_t k = 0; k < cd->nby; k++) {
				if (cd->by[k] != L->func)
					continue;
				L->via = hd_xrealloc(L->via, (L->nvia + 1) * sizeof *L->via);
				L->via[L->nvia++] = cd->fn;
				break;
			}
		}
		if (L->nvia)
			qsort(L->via, L->nvia, sizeof *L->via, cmp_via);
	}
}

/* Step 1: the flat suspects, and the cumulative candidates. */
static void step1(struct lf *F, int keep, struct hd_leak **v, size_t *n, size_t *cap)
{
	const struct session_snaps *ss = F->ss;
	for (size_t i = 0; i < F->fn->n; i++) {
		struct fn_trend *t = &F->t[i];
		struct hd_leak tr = { .what = HD_LEAK_FLAT, .func = i, .kind = F->flt->kind };
		if (t->flat && hd_leak_fit(t->flat, NULL, ss, F->flt->min_bytes, &tr)) {
			tr.paths = t->flat_paths;
			tr.last_objects = t->flat_obj;
			tr.series = copy_series(t->flat, ss->n, keep);
			push(v, n, cap, &tr);
			t->flat_suspect = 1;
		}
		struct hd_leak fit = { 0 };
		if (t->cum && hd_leak_fit(t->cum, NULL, ss, F->flt->min_bytes, &fit)) {
			F->c = hd_xrealloc(F->c, (F->nc + 1) * sizeof *F->c);
			F->c[F->nc++] = (struct cand){ .fn = i, .fit = fit };
			t->cand = 1;
			t->ci = F->nc;
		}
	}
}

int hd_leak_funcs(struct hd_source *s, int64_t session, const struct session_snaps *ss,
                  const struct hd_filter *flt, int keep, const struct hd_leak *stacks,
                  size_t nstacks, struct hd_leak **v, size_t *n, size_t *cap,
                  struct hd_leak_set *out)
{
	struct lf F = { .s = s, .flt = flt, .ss = ss, .fn = &out->fn };
	size_t from = *n;
	int rc = pass0(&F, session);

	(void)stacks; /* (the first nstacks of *v) */

	if (rc < 0)
		goto out;
	alloc_series(&F);
	if ((rc = hd_scan_series(s, session, ss, flt->kind, pass1, &F)) < 0)
		goto out;
	step1(&F, keep, v, n, cap);
	if (F.nc) {
		/* The call-path suspects were handed in as the first nstacks
		 * of *v, which step 1 may have moved. */
		F.stacks = hd_xmalloc((nstacks + 1) * sizeof *F.stacks);
		for (size_t i = 0; i < nstacks; i++)
			F.stacks[i] = (struct skey){ (*v)[i].stack_id, (*v)[i].kind };
		F.nstacks = nstacks;
		if (nstacks)
			qsort(F.stacks, nstacks, sizeof *F.stacks, cmp_skey);
		if ((rc = hd_scan_series(s, session, ss, flt->kind, pass2, &F)) < 0)
			goto out;
		narrow(&F, keep, v, n, cap);
	}
	via_lists(&F, *v, from, *n);

out:
	out->funcs = F.fn->n;
	out->unfitted = F.unfitted;
	out->approx = F.approx;
	for (size_t i = 0; i < F.fn->n; i++) {
		free(F.t[i].flat);
		free(F.t[i].cum);
	}
	free(F.t);
	for (size_t i = 0; i < F.nc; i++) {
		free(F.c[i].by);
		free(F.c[i].paths);
	}
	free(F.c);
	free(F.stacks);
	for (size_t p = 0; p < F.nup; p++)
		free(F.up[p].y);
	free(F.up);
	return rc;
}
