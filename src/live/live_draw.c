/* live_draw.c -- the live view's screen (see live_view.h and
 * live_view_int.h), top to bottom: the target and the time since attach;
 * the estimated live heap and mmap, the kernel's RSS and (with --rss) the
 * attributed resident memory, each with a sparkline of the session; the
 * sampling (samples/s, drops, interval, RssAnon); the sort, kind, mark and
 * filter in force; the column heads and the rows (live_rows.c: call paths,
 * or functions with f), the expanded one's stack or callers below it; the
 * bottom line: the filter prompt, a message, or the key hints.  The help is
 * a box over it.
 *
 * Every draw blanks the screen and writes it all again; ncurses sends the
 * terminal only what changed.  Only the visible rows are formatted: a
 * refresh costs the model's filter and sort (and an expanded function's
 * callers) plus a screenful.
 *
 * The selection stays on the first row until a key moves it; from then on
 * it follows its call path (or function) through the re-sorts, and when
 * that row leaves the list it stays at the same position.  The expanded
 * row is remembered the same way. */
#define _GNU_SOURCE
#include "live_view_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *sort_name(enum ha_live_sort s)
{
	return s == HA_LIVE_BY_LIVE ? "live bytes" : s == HA_LIVE_BY_RATE ? "rate" : "growth";
}

static int draw_gauge(struct ha_view *v, int y, int x, int w, const char *label, double val,
                      const double *hist, size_t n)
{
	char num[32], spark[MAX_W * 4];
	ha_fmt_bytes(num, sizeof num, val, 0);
	int c = lv_put(v, y, x, 9, S_BOLD, label);
	c += lv_putf(v, y, x + 9, 10, S_NORMAL, "%9s ", num);
	ha_sparkline(hist, n, w - 19, v->utf8, spark, sizeof spark);
	lv_put(v, y, x + 19, w - 19, S_SPARK, spark);
	return c;
}

/* One line: the last snapshot's breakdown of RssAnon (heapdiff --memory). */
static int draw_memory(struct ha_view *v, int y, const struct ha_live_summary *s)
{
	char t[5][24];
	const double *m = s->mem_terms;
	double x[5] = { s->mem_rss_anon, m[HA_MT_LIVE_SAMPLED] + m[HA_MT_LIVE_BEFORE],
	                m[HA_MT_FREE_TRIMMABLE], m[HA_MT_FREE_PINNED],
	                m[HA_MT_UNEXPLAINED] };
	for (int i = 0; i < 5; i++)
		ha_fmt_bytes(t[i], sizeof t[i], x[i], 0);
	lv_putf(v, y, 0, v->w, S_NORMAL, "RssAnon %s: live heap %s  free trimmable %s  pinned %s  "
	        "unexplained %s", t[0], t[1], t[2], t[3], t[4]);
	return y + 1;
}

/* The header's lines; returns the first row below them. */
static int draw_header(struct ha_view *v, const struct ha_live_summary *s, size_t nrows)
{
	char a[32], b[32], c[32];
	int y = 0, x;

	ha_fmt_age(a, sizeof a, s->since_attach_s);
	x = lv_put(v, y, 0, v->w, S_HEAD, "heapattach --live");
	x += lv_putf(v, y, x, v->w - x, S_NORMAL, "  pid %d ", (int)s->pid);
	x += lv_put(v, y, x, v->w - x > 24 ? 16 : v->w - x, S_BOLD, s->comm ? s->comm : "");
	x += lv_putf(v, y, x, v->w - x, S_NORMAL, "  attached %s", a);
	if (v->w - x > 16)
		lv_put(v, y, v->w - 14, 14, S_DIM, "? help  q quit");
	y++;

	/* Two gauges a line when there is room, else one. */
	struct { const char *label; double val; const double *hist; } g[4] = {
		{ "heap", s->heap, s->hist_heap },
		{ "mmap", s->mmap, s->hist_mmap },
		{ "RSS", (double)s->rss_bytes, s->hist_rss },
		{ "resident", s->resident, s->hist_resident },
	};
	int ng = s->rss_on ? 4 : 3, per = v->w >= 80 ? 2 : 1, gw = (v->w - (per - 1) * 2) / per;
	for (int i = 0; i < ng; i++) {
		int col = i % per;
		draw_gauge(v, y, col * (gw + 2), gw, g[i].label, g[i].val, g[i].hist, s->n_history);
		if (col == per - 1 || i == ng - 1)
			y++;
	}

	ha_fmt_count(a, sizeof a, s->samples_per_s, 0);
	ha_fmt_count(b, sizeof b, (double)s->drops, 0);
	ha_fmt_bytes(c, sizeof c, (double)s->interval, 0);
	x = lv_putf(v, y, 0, v->w, S_NORMAL, "samples %s/s  drops %s  interval %s", a, b, c);
	if (s->rss_on) {
		ha_fmt_bytes(a, sizeof a, (double)s->rss_anon_bytes, 0);
		x += lv_putf(v, y, x, v->w - x, S_NORMAL, "  RssAnon %s", a);
	}
	ha_fmt_count(a, sizeof a, (double)s->samples, 0);
	x += lv_putf(v, y, x, v->w - x, S_DIM, "  (%s samples, %zu frames)", a, s->frames);
	y++;
	if (s->rss_last) { /* the target is gone: its RSS is the last read */
		ha_fmt_bytes(a, sizeof a, (double)s->rss_bytes, 0);
		ha_fmt_age(b, sizeof b, s->rss_age_s);
		if (s->rss_bytes)
			lv_putf(v, y, 0, v->w, S_BOLD, "RSS %s (last read, target gone; read %s before)", a, b);
		else
			lv_put(v, y, 0, v->w, S_BOLD, "RSS unknown (target gone before it was read)");
		y++;
	}
	if (s->mem_rss_anon > 0) /* where RssAnon went at the last snapshot */
		y = draw_memory(v, y, s);

	ha_fmt_age(a, sizeof a, s->since_mark_s);
	x = lv_putf(v, y, 0, v->w, S_NORMAL, "sort ");
	x += lv_put(v, y, x, v->w - x, S_BOLD, sort_name(v->sort));
	x += lv_put(v, y, x, v->w - x, S_NORMAL, "  kind ");
	x += lv_put(v, y, x, v->w - x, S_BOLD, lv_kind_name(v->kind));
	x += lv_putf(v, y, x, v->w - x, S_NORMAL, "  since %s %s ago  %zu %s%s", v->marked ? "mark" : "attach",
	          a, nrows, v->funcs ? "function" : "row", nrows == 1 ? "" : "s");
	if (v->filter[0]) {
		x += lv_put(v, y, x, v->w - x, S_NORMAL, "  filter ");
		lv_put(v, y, x, v->w - x, S_BOLD, v->filter);
	}
	return y + 1;
}

/* Keep the selection on screen: its row and, when it is the expanded
 * one, the open_n lines below it. */
static void scroll_to(struct ha_view *v, size_t n, size_t open_i, int open_n)
{
	if (n == 0) {
		v->top = 0;
		return;
	}
	if (open_n > v->body_h - 1)
		open_n = v->body_h - 1;
	if (v->top >= n)
		v->top = n - 1;
	if (v->sel_i < v->top)
		v->top = v->sel_i;
	int need = 1 + (v->sel_i == open_i ? open_n : 0);
	for (;;) {
		int used = 0;
		for (size_t i = v->top; i < v->sel_i; i++)
			used += 1 + (i == open_i ? open_n : 0);
		if (used + need <= v->body_h || v->top == v->sel_i)
			break;
		v->top++;
	}
	/* No blank lines at the end while rows above could fill them. */
	while (v->top > 0) {
		int used = 0;
		for (size_t i = v->top - 1; i < n && used <= v->body_h; i++)
			used += 1 + (i == open_i ? open_n : 0);
		if (used > v->body_h)
			break;
		v->top--;
	}
}

/* Remember the rows' order for the keys, and where the selection went;
 * returns the index of the expanded row ((size_t)-1: not in the list). */
static size_t take_rows(struct ha_view *v, const struct lv_rows *rows)
{
	if (rows->n > v->cap_order) {
		struct ident *o = realloc(v->order, rows->n * sizeof *o);
		if (o) {
			v->order = o;
			v->cap_order = rows->n;
		}
	}
	v->n_order = rows->n <= v->cap_order ? rows->n : v->cap_order;
	size_t open_i = (size_t)-1, sel_i = (size_t)-1;
	for (size_t i = 0; i < v->n_order; i++) {
		struct ident r = v->order[i] = lv_row_ident(v, rows, i);
		if (v->follow && r.id == v->sel.id && r.kind == v->sel.kind)
			sel_i = i;
		if (v->have_open && r.id == v->open.id && r.kind == v->open.kind)
			open_i = i;
	}
	if (!v->follow)
		v->sel_i = 0;
	else if (sel_i != (size_t)-1)
		v->sel_i = sel_i;
	if (v->n_order && v->sel_i >= v->n_order)
		v->sel_i = v->n_order - 1;
	if (v->n_order)
		v->sel = v->order[v->sel_i];
	v->stale = 0;
	return open_i;
}

void lv_fresh_rows(struct ha_view *v, struct ha_live *l)
{
	struct lv_rows rows;
	if (v->stale) {
		lv_get_rows(v, l, &rows);
		take_rows(v, &rows);
	}
}

static void draw_body(struct ha_view *v, struct ha_live *l, const struct ha_live_summary *s,
                      struct lv_rows *rows, int y0)
{
	size_t open_i = take_rows(v, rows), n = v->n_order;
	lv_draw_columns(v, y0);
	int y = y0 + 1;
	v->body_h = v->h - 1 - y;
	if (n == 0) {
		const char *why = s->frames == 0 ? "waiting for the first values..."
		                  : v->filter[0] ? "no row matches the filter (Escape clears it)"
		                  : v->sort == HA_LIVE_BY_LIVE ? "nothing live of this kind"
		                                               : "nothing has grown since the mark";
		lv_put(v, y + 1, 2, v->w - 2, S_DIM, why);
		return;
	}
	int open_n = open_i < n ? lv_open_lines(v, l, rows, open_i) : 0;
	scroll_to(v, n, open_i, open_n);
	for (size_t i = v->top; i < n && y < v->h - 1; i++) {
		lv_draw_row(v, y++, rows, i, i == v->sel_i);
		if (i == open_i) {
			int nlines = open_n < v->h - 1 - y ? open_n : v->h - 1 - y;
			lv_draw_open(v, y, nlines, rows, i);
			y += nlines;
		}
	}
}

static const char *help_text[] = {
	"heapattach --live: keys",
	"",
	"g        sort by growth since the mark (attach at first)",
	"l        sort by live bytes",
	"r        sort by rate: growth per minute since the mark",
	"c        next kind: heap+mmap, heap, mmap, resident (--rss)",
	"m        mark: count growth from now on",
	"f        functions, not call paths (f again: back): flat, what",
	"         each allocated itself; cum, with it anywhere on the stack",
	"s        take a snapshot now (written to the database)",
	"/        filter: function, file or module contains the text",
	"         (Enter applies, Escape clears)",
	"t        malloc_trim(0) now: RssAnon's drop, predicted and measured",
	"Up Down  move the selection (also k j, and Ctrl-P Ctrl-N)",
	"PgUp PgDn Home End  by a page, to the first or last row",
	"Enter    expand or fold the selected row (or space): a call path's",
	"         whole stack, a function's callers",
	"?        this help",
	"q        detach, as SIGINT does (Ctrl-C too, at any time)",
	"",
	"press any key",
};

static void draw_help(struct ha_view *v)
{
	int n = (int)(sizeof help_text / sizeof *help_text), bw = 70, bh = n + 2;
	if (bw > v->w)
		bw = v->w;
	if (bh > v->h - 1)
		bh = v->h - 1;
	int x0 = (v->w - bw) / 2, y0 = (v->h - 1 - bh) / 2;
	lv_box(v, y0, x0, bh, bw);
	for (int i = 0; i < n && i < bh - 2; i++)
		lv_put(v, y0 + 1 + i, x0 + 2, bw - 4, i == 0 ? S_BOLD : S_NORMAL, help_text[i]);
}

/* The keys, for call paths and for functions: [funcs][room for all]. */
static const char *const hints[2][2] = {
	{ "q quit  g/l/r sort  c kind  f functions  m mark  / filter  Enter stack  ? help",
	  "q quit  g/l/r sort  c kind  f functions  m mark  s snapshot  / filter  Enter stack  ? help" },
	{ "q quit  g/l/r sort  c kind  f paths  m mark  / filter  Enter callers  ? help",
	  "q quit  g/l/r sort  c kind  f paths  m mark  s snapshot  / filter  Enter callers  ? help" },
};

/* The bottom line: the prompt, a message, or the keys. */
void lv_draw_bottom(struct ha_view *v)
{
	int y = v->h - 1;
	lv_blank(v, y, 0, v->w);
	if (v->prompt) {
		int x = lv_put(v, y, 0, v->w, S_BOLD, "filter: ");
		x += lv_put(v, y, x, v->w - x, S_NORMAL, v->edit);
		lv_cursor(v, y, x);
		return;
	}
	lv_cursor(v, -1, 0);
	if (v->msg[0] && lv_now_ms() - v->msg_ms < MSG_MS)
		lv_put(v, y, 0, v->w, S_MSG, v->msg);
	else /* s is left out where it would not fit */
		lv_put(v, y, 0, v->w, S_DIM, hints[v->funcs][v->w > (int)strlen(hints[v->funcs][1])]);
}

void lv_draw(struct ha_view *v, struct ha_live *l)
{
	lv_begin(v);
	if (v->h < MIN_H || v->w < MIN_W) {
		lv_put(v, 0, 0, v->w, S_BOLD, "terminal too small");
		lv_putf(v, 1, 0, v->w, S_NORMAL, "%dx%d, needs %dx%d", v->w, v->h, MIN_W, MIN_H);
		lv_draw_bottom(v);
	} else {
		const struct ha_live_summary *s = ha_live_summary(l);
		struct lv_rows rows;
		lv_get_rows(v, l, &rows);
		int y = draw_header(v, s, rows.n);
		draw_body(v, l, s, &rows, y);
		lv_draw_bottom(v);
		if (v->help)
			draw_help(v);
	}
	lv_end(v);
}
