/* report_rows.c -- from bucket values to report rows: fold the allocator's
 * frames, apply the filters, merge the two sides (A and B) and sort;
 * with r->funcs, add every row that matches the filters to the functions
 * too (report_funcs.c: --by function, the text report's top functions).
 *
 * Rows are keyed by their displayed frames and kind, not by stack id:
 * folding can make two stored callstacks one (the same caller through
 * malloc and through calloc), and two databases number their callstacks
 * independently.  Within one database a frame is its id; across two, a
 * frame is its function (or offset) and module file name, so that a rebuilt
 * binary (other build-id, other offsets) still matches. */
#define _GNU_SOURCE
#include "report.h"
#include "alloc_frame.h"
#include "late_names.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <sqlite3.h>
#include <string.h>

/* ------------------------------------------------------------ folding */

struct hd_stack hd_fold(const struct hd_stack *st, int all, int *folded)
{
	struct hd_stack v = *st;
	int k = 0;
	if (!all)
		while (k < st->n - 1 && ha_fold_frame(st->f[k]->function, st->f[k]->module, st->f[k + 1]->function))
			k++;
	v.f = st->f ? st->f + k : NULL;
	v.n = st->n - k;
	*folded = k;
	return v;
}

int hd_stack_matches(const struct hd_stack *st, const struct hd_filter *flt)
{
	int mod = !flt->module, fn = !flt->function;
	for (int i = 0; i < st->n && !(mod && fn); i++) {
		if (!mod && strstr(st->f[i]->module, flt->module))
			mod = 1;
		/* A Python frame matches by its file too (--function cache.py). */
		if (!fn && (strstr(st->f[i]->function, flt->function) ||
		            (strcmp(st->f[i]->module, HA_PY_MODULE) == 0 &&
		             strstr(st->f[i]->file, flt->function))))
			fn = 1;
	}
	return mod && fn;
}

/* The number of rows sql gives with text as ?1. */
static int count_matching(struct hd_source *s, const char *sql, const char *text, int64_t *n)
{
	sqlite3_stmt *q;
	int rc;
	*n = 0;
	if (hd_prepare(s, sql, &q) < 0)
		return HD_ERR;
	sqlite3_bind_text(q, 1, text, -1, SQLITE_STATIC);
	rc = hd_step(s, q);
	if (rc > 0)
		*n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

/* *n: 1 when a frame the session left unnamed gets a name now (its
 * inline chain's, late_names.h) holding function, else 0.  The names are
 * the ones the rows will show (hd_late_name keeps them), so a --function
 * that only a late name matches is not refused, and a typo still is. */
static int late_names_match(struct hd_source *s, const char *function, int64_t *n)
{
	sqlite3_stmt *q;
	struct ha_sym_frame chain[32];
	int rc = 0;
	*n = 0;
	if (hd_prepare(s, "SELECT m.path, m.build_id, f.rel_pc FROM frames f "
	                  "JOIN modules m ON m.id = f.module_id "
	                  "WHERE f.function = '' AND m.build_id <> '' AND m.path <> '" HA_PY_MODULE "'",
	               &q) < 0)
		return HD_ERR;
	while (!*n && (rc = hd_step(s, q)) > 0) {
		const char *path = (const char *)sqlite3_column_text(q, 0);
		const char *build_id = (const char *)sqlite3_column_text(q, 1);
		int k = hd_late_name(s->late, path ? path : "", build_id ? build_id : "",
		                     (uint64_t)sqlite3_column_int64(q, 2), 1, chain, 32);
		for (int j = 0; j < k && !*n; j++)
			if (chain[j].function && strstr(chain[j].function, function))
				*n = 1;
	}
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

int hd_filter_can_match(struct hd_source *s, const struct hd_filter *flt, const char **which,
                        int64_t *functions)
{
	int64_t n = 1;
	*which = NULL;
	/* instr: a case-sensitive substring, as strstr in hd_stack_matches. */
	if (flt->function &&
	    count_matching(s, "SELECT count(*) FROM frames f JOIN modules m ON m.id = f.module_id "
	                      "WHERE instr(f.function, ?1) > 0 "
	                      "OR (m.path = '" HA_PY_MODULE "' AND instr(f.file, ?1) > 0)",
	                   flt->function, &n) < 0)
		return HD_ERR;
	/* Frames the session left unnamed may be named now (late_names.h):
	 * the names they get count too. */
	if (n == 0 && s->late && late_names_match(s, flt->function, &n) < 0)
		return HD_ERR;
	if (n == 0)
		*which = "--function";
	if (!*which && flt->module &&
	    count_matching(s, "SELECT count(*) FROM modules WHERE instr(path, ?1) > 0", flt->module,
	                   &n) < 0)
		return HD_ERR;
	if (!*which && n == 0)
		*which = "--module";
	if (!*which)
		return 1;
	if (count_matching(s, "SELECT count(DISTINCT function) FROM frames WHERE function <> ?1", "",
	                   functions) < 0)
		return HD_ERR;
	return 0;
}

/* ------------------------------------------------------------ merging */

static void row_key(struct hd_buf *k, const struct hd_stack *v, int kind, int symbolic)
{
	char pc[32];
	k->n = 0;
	hd_buf_printf(k, "%d", kind);
	for (int i = 0; i < v->n; i++) {
		const struct hd_frame *f = v->f[i];
		if (symbolic)
			hd_buf_printf(k, "\x1f%s\x1e%s\x1e%d", hd_frame_name(f, pc, sizeof pc),
			              ha_base_name(f->module), f->inlined);
		else
			hd_buf_printf(k, "\x1f%" PRId64, f->id);
	}
	hd_buf_addc(k, 0);
}

/* Adds sign times the values at snap to the rows of m (with alloc_only,
 * the alloc_* values only). */
static int add_side(struct hd_map *m, const struct hd_snap *snap, double sign, int alloc_only,
                    int symbolic, const struct hd_filter *flt)
{
	size_t n;
	struct hd_value *v;
	struct hd_buf key = { 0 };
	int rc = HD_OK;

	if (hd_values_at(snap, &v, &n) < 0)
		return HD_ERR;
	for (size_t i = 0; i < n; i++) {
		int folded;
		const struct hd_stack *st;
		if (!hd_kind_matches(flt->kind, v[i].kind))
			continue;
		if ((rc = hd_stack_get(snap->src, v[i].stack_id, &st)) < 0)
			break;
		struct hd_stack view = hd_fold(st, flt->all_frames, &folded);
		if (!hd_stack_matches(&view, flt))
			continue;
		row_key(&key, &view, v[i].kind, symbolic);
		struct hd_row *r = hd_map_get(m, (char *)key.p);
		if (!r) {
			r = hd_xmalloc(sizeof *r);
			*r = (struct hd_row){ .st = view, .stack_id = st->id, .merged = 1,
			                      .folded = folded, .kind = v[i].kind };
			hd_map_put(m, (char *)key.p, r);
		} else if (sign > 0 && r->stack_id != st->id) {
			/* Two stored callstacks of B folded into one row. */
			r->merged++;
			if (st->id < r->stack_id) {
				r->stack_id = st->id;
				r->st = view;
				r->folded = folded;
			}
		}
		if (!alloc_only) {
			r->bytes += sign * v[i].live_bytes;
			r->objects += sign * v[i].live_count;
		}
		r->alloc_bytes += sign * v[i].alloc_bytes;
		r->alloc_objects += sign * v[i].alloc_count;
	}
	hd_buf_free(&key);
	free(v);
	return rc;
}

/* Per thread: heapattach's push threads build reports side by side. */
static _Thread_local int g_by_objects;

static int cmp_rows(const void *pa, const void *pb)
{
	const struct hd_row *a = pa, *b = pb;
	double ka = g_by_objects ? a->objects : a->bytes, kb = g_by_objects ? b->objects : b->bytes;
	double sa = g_by_objects ? a->bytes : a->objects, sb = g_by_objects ? b->bytes : b->objects;
	if (ka != kb)
		return ka > kb ? -1 : 1;
	if (sa != sb)
		return sa > sb ? -1 : 1;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return a->kind - b->kind;
}

struct collect {
	struct hd_report *r;
	const struct hd_filter *flt;
	size_t cap;
};
static _Thread_local struct collect *g_collect;

static void collect_row(void *p)
{
	struct hd_row *row = p;
	struct hd_report *r = g_collect->r;
	r->nall++;
	r->total_bytes += row->bytes;
	r->total_objects += row->objects;
	if (r->funcs)
		hd_funcs_add(r->funcs, row);
	int changed = fabs(row->bytes) >= 0.5 || fabs(row->objects) >= 0.5 ||
	              (r->alloc_from && (fabs(row->alloc_bytes) >= 0.5 || fabs(row->alloc_objects) >= 0.5));
	if (changed && fabs(row->bytes) >= g_collect->flt->min_bytes) {
		if (r->n == g_collect->cap) {
			g_collect->cap = g_collect->cap ? g_collect->cap * 2 : 256;
			r->rows = hd_xrealloc(r->rows, g_collect->cap * sizeof *r->rows);
		}
		r->rows[r->n++] = *row;
	}
	free(row);
}

int hd_build_rows(struct hd_report *r, const struct hd_filter *flt)
{
	struct hd_map *m = hd_map_new();
	struct collect c = { r, flt, 0 };
	/* Frame ids are comparable only within one file. */
	int symbolic = r->a && r->a->src != r->b->src;

	r->rows = NULL;
	r->kind = flt->kind;
	r->n = r->nall = 0;
	r->total_bytes = r->total_objects = 0;
	if (add_side(m, r->b, 1, 0, symbolic, flt) < 0 ||
	    (r->a && add_side(m, r->a, -1, 0, symbolic, flt) < 0) ||
	    (!r->a && r->alloc_from && add_side(m, r->alloc_from, -1, 1, symbolic, flt) < 0)) {
		hd_map_free(m, free);
		return HD_ERR;
	}
	g_collect = &c;
	hd_map_free(m, collect_row);
	g_collect = NULL;
	g_by_objects = r->by_objects;
	if (r->n)
		qsort(r->rows, r->n, sizeof *r->rows, cmp_rows);
	if (r->funcs)
		hd_funcs_finish(r->funcs, flt->min_bytes, r->by == HD_BY_CUM ? HD_BY_CUM : HD_BY_FUNCTION,
		                r->by_objects);
	return HD_OK;
}

void hd_free_rows(struct hd_report *r)
{
	free(r->rows);
	r->rows = NULL;
	r->n = 0;
	if (r->funcs)
		hd_funcs_free(r->funcs);
}
