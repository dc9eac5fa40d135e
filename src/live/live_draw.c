/* live_draw.c -- the live view's screen (see live_view.h and
 * live_view_int.h), top to bottom: the target and the time since attach;
 * the estimated live heap and mmap, the kernel's RSS and (with --rss) the
 * attributed resident memory, each with a sparkline of the session; the
 * sampling (samples/s, drops, interval, RssAnon); the sort, kind, mark and
 * filter in force; the column heads and the rows of ha_live_rows, one call
 * path a line, the expanded one's stack below it; the bottom line: the
 * filter prompt, a message, or the key hints.  The help is a box over it.
 *
 * Every draw blanks the screen and writes it all again; ncurses sends the
 * terminal only what changed.  Only the visible rows are formatted: a
 * refresh costs the model's filter and sort plus a screenful.
 *
 * The selection stays on the first row until a key moves it; from then on
 * it follows its call path through the re-sorts, and when that path leaves
 * the list it stays at the same position.  The expanded row is remembered
 * by its call path too. */
#define _GNU_SOURCE
#include "live_view_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_name(int kind)
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
	lv_putf(v, y, x, v->w - x, S_DIM, "  (%s samples, %zu frames)", a, s->frames);
	y++;

	ha_fmt_age(a, sizeof a, s->since_mark_s);
	x = lv_putf(v, y, 0, v->w, S_NORMAL, "sort ");
	x += lv_put(v, y, x, v->w - x, S_BOLD, sort_name(v->sort));
	x += lv_put(v, y, x, v->w - x, S_NORMAL, "  kind ");
	x += lv_put(v, y, x, v->w - x, S_BOLD, kind_name(v->kind));
	x += lv_putf(v, y, x, v->w - x, S_NORMAL, "  since %s %s ago  %zu row%s", v->marked ? "mark" : "attach",
	          a, nrows, nrows == 1 ? "" : "s");
	if (v->filter[0]) {
		x += lv_put(v, y, x, v->w - x, S_NORMAL, "  filter ");
		lv_put(v, y, x, v->w - x, S_BOLD, v->filter);
	}
	return y + 1;
}

/* The columns before a row's text; on a narrow screen the text keeps
 * TEXT_MIN columns, dropping the rate, the objects, the kind in that order
 * (the rate not while it is the sort). */
enum { COL_GROWTH, COL_OBJ, COL_RATE, COL_LIVE, COL_KIND, NCOL };
static const struct {
	const char *head;
	int w;
} col_def[NCOL] = { { "GROWTH", 10 }, { "OBJECTS", 8 }, { "RATE/MIN", 10 }, { "LIVE", 10 }, { "KIND", 4 } };
#define TEXT_MIN 30

static int columns_width(unsigned m)
{
	int w = 0;
	for (int c = 0; c < NCOL; c++)
		if (m & 1u << c)
			w += col_def[c].w + 1;
	return w;
}

static unsigned shown_columns(const struct ha_view *v)
{
	static const int drop[] = { COL_RATE, COL_OBJ, COL_KIND };
	unsigned m = 1u << COL_GROWTH | 1u << COL_OBJ | 1u << COL_RATE | 1u << COL_LIVE;
	if (v->kind == HA_LIVE_ALLOC)
		m |= 1u << COL_KIND;
	for (int i = 0; i < 3 && v->w - columns_width(m) < TEXT_MIN; i++)
		if (drop[i] != COL_RATE || v->sort != HA_LIVE_BY_RATE)
			m &= ~(1u << drop[i]);
	return m;
}

static void draw_columns(struct ha_view *v, int y)
{
	unsigned m = shown_columns(v);
	int sorted = v->sort == HA_LIVE_BY_LIVE ? COL_LIVE : v->sort == HA_LIVE_BY_RATE ? COL_RATE : COL_GROWTH;
	int x = 0;
	for (int c = 0; c < NCOL; c++) {
		if (!(m & 1u << c))
			continue;
		lv_putf(v, y, x, col_def[c].w, c == sorted ? S_BOLD : S_DIM, c == COL_KIND ? "%-*s" : "%*s",
		     col_def[c].w, col_def[c].head);
		x += col_def[c].w + 1;
	}
	lv_put(v, y, x, v->w - x, S_DIM, "FUNCTION (leaf)  FILE:LINE");
}

/* "file:line" (the base name) or "[module]", for a row's leaf. */
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

static void draw_row(struct ha_view *v, int y, const struct ha_live_row *r, int selected)
{
	char cell[NCOL][32], loc[600];
	int style[NCOL] = { S_NORMAL, S_NORMAL, S_NORMAL, S_NORMAL, S_DIM };
	int up = r->growth_bytes > 0 ? S_UP : r->growth_bytes < 0 ? S_DOWN : S_NORMAL;
	unsigned m = shown_columns(v);
	ha_fmt_bytes(cell[COL_GROWTH], sizeof cell[0], r->growth_bytes, 1);
	ha_fmt_count(cell[COL_OBJ], sizeof cell[0], r->growth_objects, 1);
	ha_fmt_bytes(cell[COL_RATE], sizeof cell[0], r->rate_per_min, 1);
	ha_fmt_bytes(cell[COL_LIVE], sizeof cell[0], r->live_bytes, 0);
	snprintf(cell[COL_KIND], sizeof cell[0], "%s", r->kind == HA_KIND_RSS ? "rss" : kind_name(r->kind));
	style[COL_GROWTH] = style[COL_RATE] = up;

	v->sel_style = selected ? S_SEL : 0;
	if (selected)
		lv_blank(v, y, 0, v->w);
	int x = 0;
	for (int c = 0; c < NCOL; c++) {
		if (!(m & 1u << c))
			continue;
		lv_putf(v, y, x, col_def[c].w, style[c], c == COL_KIND ? "%-*s" : "%*s", col_def[c].w, cell[c]);
		x += col_def[c].w + 1;
	}
	if (!v->curses && selected) /* no reverse video: a mark instead */
		lv_put(v, y, 0, 1, S_NORMAL, ">");
	int rest = v->w - x;
	if (!r->stack || r->stack->n <= 0) {
		lv_put(v, y, x, rest, S_DIM, r->stack ? "(no frames)" : "(symbolizing...)");
	} else {
		const struct ha_live_text *f = &r->stack->f[0];
		where(f, 0, loc, sizeof loc);
		int lw = (int)strlen(loc), fw = rest - (lw ? lw + 2 : 0);
		if (fw < rest * 2 / 3)
			fw = rest * 2 / 3;
		int c = lv_put(v, y, x, fw, S_BOLD, *f->function ? f->function : "??");
		if (lw)
			lv_put(v, y, x + c + 2, rest - c - 2, S_DIM, loc);
	}
	v->sel_style = 0;
}

/* The lines an expanded stack takes below its row (at most max). */
static int stack_lines(const struct ha_live_row *r, int max)
{
	int n = r->stack && r->stack->n > 0 ? r->stack->n : 1;
	return n < max ? n : max;
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

/* Keep the selection on screen: its row and, when expanded, its stack. */
static void scroll_to(struct ha_view *v, const struct ha_live_row *rows, size_t n, size_t open_i)
{
	if (n == 0) {
		v->top = 0;
		return;
	}
	if (v->top >= n)
		v->top = n - 1;
	if (v->sel_i < v->top)
		v->top = v->sel_i;
	int need = 1 + (v->sel_i == open_i ? stack_lines(&rows[open_i], v->body_h - 1) : 0);
	for (;;) {
		int used = 0;
		for (size_t i = v->top; i < v->sel_i; i++)
			used += 1 + (i == open_i ? stack_lines(&rows[i], v->body_h - 1) : 0);
		if (used + need <= v->body_h || v->top == v->sel_i)
			break;
		v->top++;
	}
	/* No blank lines at the end while rows above could fill them. */
	while (v->top > 0) {
		int used = 0;
		for (size_t i = v->top - 1; i < n && used <= v->body_h; i++)
			used += 1 + (i == open_i ? stack_lines(&rows[i], v->body_h - 1) : 0);
		if (used > v->body_h)
			break;
		v->top--;
	}
}

/* Remember the rows' order for the keys, and where the selection went;
 * returns the index of the expanded row ((size_t)-1: not in the list). */
static size_t take_rows(struct ha_view *v, const struct ha_live_row *rows, size_t n)
{
	if (n > v->cap_order) {
		struct ident *o = realloc(v->order, n * sizeof *o);
		if (o) {
			v->order = o;
			v->cap_order = n;
		}
	}
	v->n_order = n <= v->cap_order ? n : v->cap_order;
	size_t open_i = (size_t)-1, sel_i = (size_t)-1;
	for (size_t i = 0; i < v->n_order; i++) {
		v->order[i] = (struct ident){ rows[i].id, rows[i].kind };
		if (v->follow && rows[i].id == v->sel.id && rows[i].kind == v->sel.kind)
			sel_i = i;
		if (v->have_open && rows[i].id == v->open.id && rows[i].kind == v->open.kind)
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
	const struct ha_live_row *rows;
	if (v->stale) {
		/* Not in one call: the order arguments are evaluated in is not
		 * defined, and rows is set by ha_live_rows. */
		size_t n = ha_live_rows(l, v->kind, v->sort, v->filter, &rows);
		take_rows(v, rows, n);
	}
}

static void draw_body(struct ha_view *v, const struct ha_live_summary *s,
                      const struct ha_live_row *rows, size_t n, int y0)
{
	size_t open_i = take_rows(v, rows, n);
	n = v->n_order;
	draw_columns(v, y0);
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
	scroll_to(v, rows, n, open_i);
	for (size_t i = v->top; i < n && y < v->h - 1; i++) {
		draw_row(v, y++, &rows[i], i == v->sel_i);
		if (i == open_i) {
			int nlines = stack_lines(&rows[i], v->h - 1 - y);
			draw_stack(v, y, nlines, &rows[i]);
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
	"k        next kind: heap+mmap, heap, mmap, resident (--rss)",
	"m        mark: count growth from now on",
	"s        take a snapshot now (written to the database)",
	"/        filter: function, file or module contains the text",
	"         (Enter applies, Escape clears)",
	"Escape   clear the filter",
	"Up Down  move the selection (also Ctrl-P Ctrl-N, and j down)",
	"PgUp PgDn Home End  by a page, to the first or last row",
	"Enter    expand or fold the selected row's whole stack (or space)",
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
	else
		lv_put(v, y, 0, v->w, S_DIM,
		    "q quit  g/l/r sort  k kind  m mark  s snapshot  / filter  Enter stack  ? help");
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
		const struct ha_live_row *rows;
		size_t n = ha_live_rows(l, v->kind, v->sort, v->filter, &rows);
		int y = draw_header(v, s, n);
		draw_body(v, s, rows, n, y);
		lv_draw_bottom(v);
		if (v->help)
			draw_help(v);
	}
	lv_end(v);
}
