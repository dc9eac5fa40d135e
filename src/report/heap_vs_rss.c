/* heap_vs_rss.c -- the rows of heapdiff --heap-vs-rss: per function, what the program
 * allocated next to where that memory is, so that memory allocated but
 * never touched (heap >> resident), touched and kept (heap ~ resident) and
 * resident but no longer on the heap (resident >> heap: freed into the
 * allocator's free lists, or not from malloc) tell themselves apart.
 *
 * The two come from different call paths: an allocation's leaf is the
 * caller of malloc, a page's first touch is the code that wrote it (memset
 * called from the same function, say).  So they are paired by function:
 * each function's row sums, inclusively, every (folded) call path through
 * it, each call path once however often the function is on it (recursion),
 * in three columns that are never added up:
 *   heap+mmap  live bytes of kinds heap and mmap (what was allocated);
 *   resident   live bytes of kind rss (resident now, by first touch);
 *   swapped    live bytes of kind swap (swapped out now).
 * A function is its name (or 0xPC) and module file name, as rows across
 * two files are (report_rows.c).  With A, each value is the change from A
 * to B.  Rows are ranked by their largest value (by magnitude).  A row also
 * counts the call paths of each column through the function at B (those
 * whose memory was freed by then too): a function with resident memory and
 * no allocation path only touches memory allocated elsewhere (memset),
 * one with an allocation path and no heap left freed it.
 *
 * hd_vs_build makes the rows (the functions' index of report_funcs.c);
 * src/render/heap_vs_rss_write.c writes them as text or JSON and
 * report_html.c puts them in a table of the page. */
#define _GNU_SOURCE
#include "report.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct build {
	struct hd_vs *vs;
	struct hd_fn_index fn;     /* the functions (report_funcs.c): row i is
	                            * function i until the rows are ranked */
};

static int column_of(int kind)
{
	if (hd_kind_matches(HD_KIND_ALLOC, kind))
		return HD_VS_ALLOC;
	return kind == HA_KIND_RSS ? HD_VS_RSS : kind == HA_KIND_SWAP ? HD_VS_SWAP : -1;
}

static size_t row_of(struct build *B, const struct hd_frame *fr)
{
	char pc[32];
	int fresh;
	struct hd_vs *vs = B->vs;
	size_t i = hd_fn_of(&B->fn, fr, &fresh);
	if (fresh) {
		vs->v = hd_xrealloc(vs->v, B->fn.cap * sizeof *vs->v);
		vs->v[i] = (struct hd_vs_row){ .function = hd_xstrdup(hd_frame_name(fr, pc, sizeof pc)),
		                               .file = hd_xstrdup(fr->file),
		                               .module = hd_xstrdup(fr->module) };
		vs->n = B->fn.n;
	}
	return i;
}

static int add_side(struct build *B, const struct hd_snap *snap, double sign,
                    const struct hd_filter *flt)
{
	size_t n;
	struct hd_value *v;
	int rc = HD_OK;

	if (hd_values_at(snap, &v, &n) < 0)
		return HD_ERR;
	for (size_t i = 0; i < n; i++) {
		int folded, col = column_of(v[i].kind);
		const struct hd_stack *st;
		if (col < 0)
			continue;
		if ((rc = hd_stack_get(snap->src, v[i].stack_id, &st)) < 0)
			break;
		struct hd_stack view = hd_fold(st, flt->all_frames, &folded);
		if (!hd_stack_matches(&view, flt))
			continue;
		double bytes = sign * v[i].live_bytes;
		B->vs->total[col] += bytes;
		hd_fn_path(&B->fn);
		for (int k = 0; k < view.n; k++) {
			size_t r = row_of(B, view.f[k]);
			if (!hd_fn_once(&B->fn, r))
				continue; /* the function again on this path */
			B->vs->v[r].bytes[col] += bytes;
			if (sign > 0)
				B->vs->v[r].paths[col]++;
		}
	}
	free(v);
	return rc;
}

/* The largest of a row's values by magnitude. */
static double row_max(const struct hd_vs_row *r)
{
	double m = 0;
	for (int c = 0; c < HD_VS_N; c++)
		if (fabs(r->bytes[c]) > m)
			m = fabs(r->bytes[c]);
	return m;
}

static int cmp_vs(const void *pa, const void *pb)
{
	const struct hd_vs_row *a = pa, *b = pb;
	double ma = row_max(a), mb = row_max(b), sa = 0, sb = 0;
	int c;
	if (ma != mb)
		return ma > mb ? -1 : 1;
	for (c = 0; c < HD_VS_N; c++) {
		sa += fabs(a->bytes[c]);
		sb += fabs(b->bytes[c]);
	}
	if (sa != sb)
		return sa > sb ? -1 : 1;
	if ((c = strcmp(a->function, b->function)) != 0)
		return c;
	return strcmp(a->module, b->module);
}

static void free_row(struct hd_vs_row *r)
{
	free(r->function);
	free(r->file);
	free(r->module);
}

int hd_vs_build(const struct hd_report *r, const struct hd_filter *flt, struct hd_vs *vs)
{
	struct build B = { .vs = vs };
	size_t k = 0;

	memset(vs, 0, sizeof *vs);
	if (add_side(&B, r->b, 1, flt) < 0 || (r->a && add_side(&B, r->a, -1, flt) < 0)) {
		hd_fn_free(&B.fn);
		hd_vs_free(vs);
		return HD_ERR;
	}
	vs->nall = vs->n;
	/* What changed (or holds anything), by at least --min-bytes. */
	for (size_t i = 0; i < vs->n; i++) {
		double m = row_max(&vs->v[i]);
		if (m >= 0.5 && m >= flt->min_bytes)
			vs->v[k++] = vs->v[i];
		else
			free_row(&vs->v[i]);
	}
	vs->n = k;
	if (vs->n)
		qsort(vs->v, vs->n, sizeof *vs->v, cmp_vs);
	hd_fn_free(&B.fn);
	return HD_OK;
}

void hd_vs_free(struct hd_vs *vs)
{
	for (size_t i = 0; i < vs->n; i++)
		free_row(&vs->v[i]);
	free(vs->v);
	memset(vs, 0, sizeof *vs);
}
