/* report_funcs.c -- functions across call paths: the index that says which
 * frames are one function (shared by --by function, --heap-vs-rss and the
 * function trends of --leaks), and the function rows of a report.
 *
 * A leak spread over many call paths (a helper that keeps what it
 * allocates, called from hundreds of places) holds little on each path:
 * ranked by call path it is noise, ranked by function it is first.  So a
 * report also adds its rows up by function, as pprof's top does:
 *   flat        the rows whose leaf (once the allocator's frames are
 *               folded away, hd_fold) is the function: what it allocated;
 *   cumulative  the rows with the function anywhere on them, each row once
 *               however often the function is on it (recursion): what it
 *               and everything it called allocated.
 * Rows are added as hd_build_rows makes them (every row that matches the
 * filters, before --min-bytes, which then applies to the functions), so
 * the function rows are of the same folding, filters, kinds and sides
 * (A -> B or at B) as the call paths. */
#define _GNU_SOURCE
#include "report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the index */

size_t hd_fn_of(struct hd_fn_index *x, const struct hd_frame *fr, int *fresh)
{
	char pc[32];
	if (!x->map)
		x->map = hd_map_new();
	x->key.n = 0;
	hd_buf_printf(&x->key, "%s\x1f%s", hd_frame_name(fr, pc, sizeof pc), ha_base_name(fr->module));
	hd_buf_addc(&x->key, 0);
	size_t i = hd_map_index(x->map, (char *)x->key.p, x->n, fresh);
	if (!*fresh)
		return i;
	if (x->n == x->cap) {
		x->cap = x->cap ? x->cap * 2 : 256;
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
		x->fr = hd_xrealloc(x->fr, x->cap * sizeof *x->fr);
		x->seen = hd_xrealloc(x->seen, x->cap * sizeof *x->seen);
	}
	x->fr[x->n] = fr;
	x->seen[x->n] = 0;
	return x->n++;
}

void hd_fn_path(struct hd_fn_index *x)
{
	x->stamp++;
}

int hd_fn_once(struct hd_fn_index *x, size_t i)
{
	if (x->seen[i] == x->stamp)
		return 0;
	x->seen[i] = x->stamp;
	return 1;
}

void hd_fn_free(struct hd_fn_index *x)
{
	hd_map_free(x->map, NULL);
	hd_buf_free(&x->key);
	free(x->fr);
	free(x->seen);
	memset(x, 0, sizeof *x);
}

/* ------------------------------------------------------------ rows */

static struct hd_func_row *row_at(struct hd_funcs *fs, const struct hd_frame *fr)
{
	int fresh;
	size_t i = hd_fn_of(&fs->idx, fr, &fresh);
	if (fresh) {
		fs->v = hd_xrealloc(fs->v, fs->idx.cap * sizeof *fs->v);
		fs->v[i] = (struct hd_func_row){ .fr = fs->idx.fr[i] };
	}
	return &fs->v[i];
}

void hd_funcs_add(struct hd_funcs *fs, const struct hd_row *row)
{
	const struct hd_stack *st = &row->st;
	int changed = fabs(row->bytes) >= 0.5 || fabs(row->objects) >= 0.5;
	if (st->n == 0)
		return;
	struct hd_func_row *leaf = row_at(fs, st->f[0]);
	leaf->flat_bytes += row->bytes;
	leaf->flat_objects += row->objects;
	leaf->flat_paths += changed;
	hd_fn_path(&fs->idx);
	for (int k = 0; k < st->n; k++) {
		struct hd_func_row *fr = row_at(fs, st->f[k]);
		if (!hd_fn_once(&fs->idx, (size_t)(fr - fs->v)))
			continue;
		fr->cum_bytes += row->bytes;
		fr->cum_objects += row->objects;
		fr->cum_paths += changed;
	}
	fs->n = fs->nall = fs->idx.n;
}

/* Per thread: heapattach's push threads build reports side by side. */
static _Thread_local int g_by, g_by_objects;

static double key_of(const struct hd_func_row *r, int cum, int objects)
{
	return cum ? (objects ? r->cum_objects : r->cum_bytes) : (objects ? r->flat_objects : r->flat_bytes);
}

static int cmp_funcs(const void *pa, const void *pb)
{
	const struct hd_func_row *a = pa, *b = pb;
	int cum = g_by == HD_BY_CUM;
	double ka, kb;
	char p1[32], p2[32];
	/* The ranking value, then the other of flat and cumulative, then the
	 * other of bytes and objects. */
	for (int i = 0; i < 3; i++) {
		int c = i == 1 ? !cum : cum, o = i == 2 ? !g_by_objects : g_by_objects;
		ka = key_of(a, c, o);
		kb = key_of(b, c, o);
		if (ka != kb)
			return ka > kb ? -1 : 1;
	}
	int d = strcmp(hd_frame_name(a->fr, p1, sizeof p1), hd_frame_name(b->fr, p2, sizeof p2));
	return d ? d : strcmp(a->fr->module, b->fr->module);
}

void hd_funcs_finish(struct hd_funcs *fs, double min_bytes, int by, int by_objects)
{
	size_t k = 0;
	for (size_t i = 0; i < fs->n; i++) {
		const struct hd_func_row *r = &fs->v[i];
		double m = fmax(fabs(r->flat_bytes), fabs(r->cum_bytes));
		double o = fmax(fabs(r->flat_objects), fabs(r->cum_objects));
		if ((m >= 0.5 || o >= 0.5) && m >= min_bytes)
			fs->v[k++] = *r;
	}
	fs->n = k;
	g_by = by;
	g_by_objects = by_objects;
	if (fs->n)
		qsort(fs->v, fs->n, sizeof *fs->v, cmp_funcs);
}

void hd_funcs_free(struct hd_funcs *fs)
{
	hd_fn_free(&fs->idx);
	free(fs->v);
	memset(fs, 0, sizeof *fs);
}
