/* live_rows.c -- the rows of the live view's body (see live_view_int.h),
 * in either mode: a call path a line (its amounts, its leaf function and
 * file:line), expanded to its whole stack; or a function a line (its flat
 * and cumulative amounts, the call paths through it, its name and file),
 * expanded to its callers, each with its share of the function's
 * cumulative amount.  live_draw.c lays them out, scrolls and selects.
 *
 * The columns come from a table per mode; on a narrow screen the text
 * keeps TEXT_MIN columns, the table's droppable columns going first, never
 * the one the rows are sorted by. */
#define _GNU_SOURCE
#include "live_view_int.h"

#include <stdio.h>
#include <string.h>

const char *lv_kind_name(int kind)
{
	switch (kind) {
	case HA_LIVE_ALLOC: return "heap+mmap";
	case HA_KIND_HEAP: return "heap";
	case HA_KIND_MMAP: return "mmap";
	case HA_KIND_RSS: return "resident";
	case HA_KIND_SWAP: return "swap";
	}
	return "?";
}

/* ------------------------------------------------------------ columns */

#define TEXT_MIN 30
#define MAX_COL 8

struct col {
	const char *head;
	int w, left;
};

enum { P_GROWTH, P_OBJ, P_RATE, P_LIVE, P_KIND, P_NCOL };
static const struct col path_cols[P_NCOL] = {
	{ "GROWTH", 10, 0 }, { "OBJECTS", 8, 0 }, { "RATE/MIN", 10, 0 }, { "LIVE", 10, 0 }, { "KIND", 4, 1 },
};
/* Each flat amount with the cumulative one beside it. */
enum { F_GROWTH, F_GROWTH_CUM, F_RATE, F_RATE_CUM, F_LIVE, F_LIVE_CUM, F_PATHS, F_NCOL };
static const struct col fn_cols[F_NCOL] = {
	{ "GROWTH", 10, 0 }, { "CUM", 9, 0 }, { "RATE/MIN", 10, 0 }, { "CUM", 9, 0 },
	{ "LIVE", 10, 0 }, { "CUM", 9, 0 }, { "PATHS", 5, 0 },
};

struct layout {
	const struct col *def;
	int n, sorted;
	unsigned shown;
};

static int columns_width(const struct layout *lay)
{
	int w = 0;
	for (int c = 0; c < lay->n; c++)
		if (lay->shown & 1u << c)
			w += lay->def[c].w + 1;
	return w;
}

static struct layout layout_of(const struct ha_view *v)
{
	/* What goes first when the text would get less than TEXT_MIN. */
	static const unsigned path_drop[] = { 1u << P_RATE, 1u << P_OBJ, 1u << P_KIND, 0 };
	static const unsigned fn_drop[] = { 1u << F_RATE | 1u << F_RATE_CUM,
		                            1u << F_GROWTH | 1u << F_GROWTH_CUM, 1u << F_PATHS, 0 };
	struct layout lay;
	const unsigned *drop;
	if (v->funcs) {
		lay = (struct layout){ fn_cols, F_NCOL, v->sort == HA_LIVE_BY_LIVE ? F_LIVE
		                                         : v->sort == HA_LIVE_BY_RATE ? F_RATE : F_GROWTH,
		                       (1u << F_NCOL) - 1 };
		drop = fn_drop;
	} else {
		lay = (struct layout){ path_cols, P_NCOL, v->sort == HA_LIVE_BY_LIVE ? P_LIVE
		                                            : v->sort == HA_LIVE_BY_RATE ? P_RATE : P_GROWTH,
		                       (1u << P_NCOL) - 1 };
		if (v->kind != HA_LIVE_ALLOC)
			lay.shown &= ~(1u << P_KIND);
		drop = path_drop;
	}
	for (int i = 0; drop[i] && v->w - columns_width(&lay) < TEXT_MIN; i++)
		if (!(drop[i] & 1u << lay.sorted))
			lay.shown &= ~drop[i];
	return lay;
}

/* The cells of a row in its columns; returns the column after them. */
static int put_cells(struct ha_view *v, int y, const struct layout *lay, char cell[][32], const int *style)
{
	int x = 0;
	for (int c = 0; c < lay->n; c++) {
		if (!(lay->shown & 1u << c))
			continue;
		lv_putf(v, y, x, lay->def[c].w, style[c], lay->def[c].left ? "%-*s" : "%*s", lay->def[c].w,
		        cell[c]);
		x += lay->def[c].w + 1;
	}
	return x;
}

void lv_draw_columns(struct ha_view *v, int y)
{
	struct layout lay = layout_of(v);
	char head[MAX_COL][32];
	int style[MAX_COL];
	for (int c = 0; c < lay.n; c++) {
		snprintf(head[c], sizeof head[c], "%s", lay.def[c].head);
		style[c] = c == lay.sorted ? S_BOLD : S_DIM;
	}
	int x = put_cells(v, y, &lay, head, style);
	lv_put(v, y, x, v->w - x, S_DIM, v->funcs ? "FUNCTION  FILE" : "FUNCTION (leaf)  FILE:LINE");
}

/* ------------------------------------------------------------ names */

/* "file:line" (the base name) or "[module]", for a row's function. */
static void where(const struct ha_live_text *f, int full, char *out, size_t len)
{
	const char *file = f->file, *mod = f->module, *s;
	if (!full && (s = strrchr(file, '/')) != NULL)
		file = s + 1;
	if (!full && (s = strrchr(mod, '/')) != NULL)
		mod = s + 1;
	if (*file && f->line > 0)
		snprintf(out, len, "%s:%d", file, f->line);
	else if (*file)
		snprintf(out, len, "%s", file);
	else if (*mod)
		snprintf(out, len, "[%s]", mod);
	else
		out[0] = 0;
}

/* A function's name, bold, and where it is, dim, from column x on. */
static void put_name(struct ha_view *v, int y, int x, const struct ha_live_text *f)
{
	char loc[600];
	int rest = v->w - x;
	where(f, 0, loc, sizeof loc);
	int lw = (int)strlen(loc), fw = rest - (lw ? lw + 2 : 0);
	if (fw < rest * 2 / 3)
		fw = rest * 2 / 3;
	int c = lv_put(v, y, x, fw, S_BOLD, *f->function ? f->function : "??");
	if (lw)
		lv_put(v, y, x + c + 2, rest - c - 2, S_DIM, loc);
}

/* ------------------------------------------------------------ rows */

static int up_down(double growth)
{
	return growth > 0 ? S_UP : growth < 0 ? S_DOWN : S_NORMAL;
}

static void draw_path(struct ha_view *v, int y, const struct ha_live_row *r)
{
	char cell[P_NCOL][32];
	int style[P_NCOL] = { up_down(r->v.growth_bytes), S_NORMAL, up_down(r->v.growth_bytes), S_NORMAL,
		              S_DIM };
	struct layout lay = layout_of(v);
	ha_fmt_bytes(cell[P_GROWTH], sizeof cell[0], r->v.growth_bytes, 1);
	ha_fmt_count(cell[P_OBJ], sizeof cell[0], r->v.growth_objects, 1);
	ha_fmt_bytes(cell[P_RATE], sizeof cell[0], r->v.rate_per_min, 1);
	ha_fmt_bytes(cell[P_LIVE], sizeof cell[0], r->v.live_bytes, 0);
	snprintf(cell[P_KIND], sizeof cell[0], "%s", r->kind == HA_KIND_RSS ? "rss" : lv_kind_name(r->kind));
	int x = put_cells(v, y, &lay, cell, style);
	if (!r->stack || r->stack->n <= 0)
		lv_put(v, y, x, v->w - x, S_DIM, r->stack ? "(no frames)" : "(symbolizing...)");
	else
		put_name(v, y, x, &r->stack->f[ha_live_leaf(r->stack)]);
}

static void draw_fn(struct ha_view *v, int y, const struct ha_live_fn *r)
{
	char cell[F_NCOL][32];
	int style[F_NCOL] = { up_down(r->flat.growth_bytes), S_NORMAL, up_down(r->flat.growth_bytes),
		              S_NORMAL, S_NORMAL, S_NORMAL, S_DIM };
	struct layout lay = layout_of(v);
	ha_fmt_bytes(cell[F_GROWTH], sizeof cell[0], r->flat.growth_bytes, 1);
	ha_fmt_bytes(cell[F_GROWTH_CUM], sizeof cell[0], r->cum.growth_bytes, 1);
	ha_fmt_bytes(cell[F_RATE], sizeof cell[0], r->flat.rate_per_min, 1);
	ha_fmt_bytes(cell[F_RATE_CUM], sizeof cell[0], r->cum.rate_per_min, 1);
	ha_fmt_bytes(cell[F_LIVE], sizeof cell[0], r->flat.live_bytes, 0);
	ha_fmt_bytes(cell[F_LIVE_CUM], sizeof cell[0], r->cum.live_bytes, 0);
	ha_fmt_count(cell[F_PATHS], sizeof cell[0], r->paths, 0);
	put_name(v, y, put_cells(v, y, &lay, cell, style), r->name);
}

void lv_draw_row(struct ha_view *v, int y, const struct lv_rows *r, size_t i, int selected)
{
	v->sel_style = selected ? S_SEL : 0;
	if (selected)
		lv_blank(v, y, 0, v->w);
	if (v->funcs)
		draw_fn(v, y, &r->fn[i]);
	else
		draw_path(v, y, &r->path[i]);
	if (!v->curses && selected) /* no reverse video: a mark instead */
		lv_put(v, y, 0, 1, S_NORMAL, ">");
	v->sel_style = 0;
}

struct ident lv_row_ident(const struct ha_view *v, const struct lv_rows *r, size_t i)
{
	return v->funcs ? (struct ident){ r->fn[i].id, v->kind } : (struct ident){ r->path[i].id, r->path[i].kind };
}

void lv_get_rows(struct ha_view *v, struct ha_live *l, struct lv_rows *r)
{
	*r = (struct lv_rows){ 0 };
	if (v->funcs)
		r->n = ha_live_functions(l, v->kind, v->sort, v->filter, &r->fn);
	else
		r->n = ha_live_rows(l, v->kind, v->sort, v->filter, &r->path);
}

/* ------------------------------------------------------------ expanded */

int lv_open_lines(struct ha_view *v, struct ha_live *l, struct lv_rows *r, size_t i)
{
	if (!v->funcs)
		return r->path[i].stack && r->path[i].stack->n > 0 ? r->path[i].stack->n : 1;
	r->n_callers = ha_live_callers(l, r->fn[i].id, v->kind, v->sort, &r->callers);
	return r->n_callers ? (int)r->n_callers : 1;
}

static void draw_stack(struct ha_view *v, int y, int nlines, const struct ha_live_row *r)
{
	char loc[1200];
	if (!r->stack || r->stack->n <= 0) {
		lv_put(v, y, 4, v->w - 4, S_DIM, r->stack ? "(no frames)" : "(symbolizing...)");
		return;
	}
	for (int i = 0; i < nlines; i++) {
		const struct ha_live_text *f = &r->stack->f[i];
		if (i == nlines - 1 && nlines < r->stack->n) {
			lv_putf(v, y + i, 4, v->w - 4, S_DIM, "... %d more frames", r->stack->n - i);
			break;
		}
		int x = 4;
		x += lv_putf(v, y + i, x, v->w - x, S_DIM, "#%-3d", i);
		if (f->inlined)
			x += lv_put(v, y + i, x, v->w - x, S_DIM, "(inlined) ");
		x += lv_put(v, y + i, x, v->w - x, S_NORMAL, *f->function ? f->function : "??");
		where(f, 1, loc, sizeof loc);
		if (*f->file && *f->module) {
			size_t k = strlen(loc);
			const char *m = strrchr(f->module, '/');
			snprintf(loc + k, sizeof loc - k, "  [%s]", m ? m + 1 : f->module);
		}
		if (*loc)
			lv_put(v, y + i, x + 2, v->w - x - 2, S_DIM, loc);
	}
}

/* The amount the rows are sorted by. */
static double key(const struct ha_live_amount *a, enum ha_live_sort s)
{
	return s == HA_LIVE_BY_LIVE ? a->live_bytes : s == HA_LIVE_BY_RATE ? a->rate_per_min : a->growth_bytes;
}

/* "   33%  +1.52 MiB    55 paths  <- parse_header  parse.c" */
static void draw_callers(struct ha_view *v, int y, int nlines, const struct lv_rows *r, size_t fi)
{
	double total = key(&r->fn[fi].cum, v->sort);
	char pct[16], val[32], paths[32];
	if (r->n_callers == 0) {
		lv_put(v, y, 4, v->w - 4, S_DIM, "(no caller to show)");
		return;
	}
	for (int i = 0; i < nlines; i++) {
		const struct ha_live_caller *c = &r->callers[i];
		if (i == nlines - 1 && (size_t)nlines < r->n_callers) {
			lv_putf(v, y + i, 4, v->w - 4, S_DIM, "... %zu more callers", r->n_callers - i);
			break;
		}
		double k = key(&c->v, v->sort);
		pct[0] = 0;
		if (total != 0)
			snprintf(pct, sizeof pct, "%.0f%%", k / total * 100);
		ha_fmt_bytes(val, sizeof val, k, v->sort != HA_LIVE_BY_LIVE);
		ha_fmt_count(paths, sizeof paths, c->paths, 0);
		int x = 4;
		x += lv_putf(v, y + i, x, v->w - x, S_DIM, "%5s ", pct);
		x += lv_putf(v, y + i, x, v->w - x, v->sort == HA_LIVE_BY_LIVE ? S_NORMAL : up_down(k), "%10s ", val);
		x += lv_putf(v, y + i, x, v->w - x, S_DIM, "%6s path%s  <- ", paths, c->paths == 1 ? " " : "s");
		if (c->name)
			put_name(v, y + i, x, c->name);
		else
			lv_put(v, y + i, x, v->w - x, S_DIM, "(the outermost frame)");
	}
}

void lv_draw_open(struct ha_view *v, int y, int nlines, const struct lv_rows *r, size_t i)
{
	if (v->funcs)
		draw_callers(v, y, nlines, r, i);
	else
		draw_stack(v, y, nlines, &r->path[i]);
}
