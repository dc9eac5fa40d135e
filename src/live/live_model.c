/* live_model.c -- what a live view shows (see live_model.h).
 *
 * Everything is indexed by the collector's local bucket id, which is dense
 * (1, 2, 3...): the latest values, the values at the mark and the stack
 * texts are arrays grown as ids appear.  A frame replaces every value at
 * once (its values are cumulative), so nothing is summed here but the rows
 * of one call to ha_live_rows.  10,000 buckets cost a few hundred
 * microseconds per frame and per ranking (bench figure in the closing note
 * of issue 15).  Functions as rows are live_funcs.c's, on the same values
 * (live_model_int.h). */
#define _GNU_SOURCE
#include "live_model_int.h"
#include "live_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct ha_live *ha_live_new(pid_t pid, const char *comm, double start_unix)
{
	struct ha_live *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	snprintf(l->comm, sizeof l->comm, "%s", comm ? comm : "");
	l->sum.pid = pid;
	l->sum.comm = l->comm;
	l->start_unix = l->mark_unix = l->last_unix = start_unix;
	l->sum.hist_heap = l->hist[0];
	l->sum.hist_mmap = l->hist[1];
	l->sum.hist_resident = l->hist[2];
	l->sum.hist_rss = l->hist[3];
	return l;
}

void ha_live_free(struct ha_live *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->cap; i++)
		free(l->stacks[i]);
	free(l->stacks);
	free(l->cur);
	free(l->mark);
	free(l->rows);
	lf_free(l->fx);
	free(l);
}

/* Room for id; 0, or -1 when out of memory. */
static int reserve(struct ha_live *l, uint32_t id)
{
	if (id < l->cap)
		return 0;
	size_t cap = l->cap ? l->cap : 1024;
	while (cap <= id)
		cap *= 2;
	struct value *c = realloc(l->cur, cap * sizeof *c);
	if (c)
		l->cur = c;
	struct value *m = realloc(l->mark, cap * sizeof *m);
	if (m)
		l->mark = m;
	/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
	struct ha_lmsg_stack **s = realloc(l->stacks, cap * sizeof *s);
	if (s)
		l->stacks = s;
	if (!c || !m || !s)
		return -1;
	for (size_t i = l->cap; i < cap; i++) {
		l->cur[i] = (struct value){ .kind = -1 };
		l->mark[i] = (struct value){ .kind = -1 };
		l->stacks[i] = NULL;
	}
	l->cap = cap;
	return 0;
}

static void push_history(struct ha_live *l, const double v[4])
{
	if (l->sum.n_history == HA_LIVE_HISTORY) {
		for (int k = 0; k < 4; k++)
			memmove(l->hist[k], l->hist[k] + 1, (HA_LIVE_HISTORY - 1) * sizeof l->hist[k][0]);
		l->sum.n_history--;
	}
	for (int k = 0; k < 4; k++)
		l->hist[k][l->sum.n_history] = v[k];
	l->sum.n_history++;
}

static void take_frame(struct ha_live *l, const struct ha_lmsg_frame *f)
{
	struct ha_live_summary *s = &l->sum;
	for (size_t i = 0; i < f->n; i++) {
		const struct ha_live_bucket *b = &f->rows[i];
		if (b->id == 0 || reserve(l, b->id) != 0)
			continue;
		l->cur[b->id] = (struct value){ b->kind, b->live_bytes, b->live_count };
	}
	if (l->mark_pending) {
		/* The mark is the first frame after the key: growth counts from
		 * there, not from a frame up to a second older. */
		l->mark_pending = 0;
		for (size_t i = 0; i < f->n; i++)
			if (f->rows[i].id && reserve(l, f->rows[i].id) == 0)
				l->mark[f->rows[i].id] = (struct value){ f->rows[i].kind,
				                                         f->rows[i].live_bytes,
				                                         f->rows[i].live_count };
		l->mark_unix = f->time;
	}
	double dt = f->time - l->last_unix;
	s->samples_per_s = dt > 0 && f->samples >= l->last_samples
	                           ? (double)(f->samples - l->last_samples) / dt : 0;
	l->last_unix = f->time;
	l->last_samples = f->samples;
	s->since_attach_s = f->time - l->start_unix;
	s->since_mark_s = f->time - l->mark_unix;
	s->rss_on = f->rss_on;
	s->heap = f->kind_bytes[HA_KIND_HEAP];
	s->mmap = f->kind_bytes[HA_KIND_MMAP];
	s->resident = f->kind_bytes[HA_KIND_RSS];
	/* A gone target's RSS is the last read, never 0 (nothing read yet:
	 * the history keeps its last point, not a drop). */
	s->rss_last = f->rss_last;
	s->rss_age_s = f->rss_last && f->rss_time > 0 ? f->time - f->rss_time : 0;
	if (!f->rss_last || f->rss_bytes) {
		s->rss_bytes = f->rss_bytes;
		s->rss_anon_bytes = f->rss_anon_bytes;
	}
	s->mem_rss_anon = f->mem_rss_anon;
	memcpy(s->mem_terms, f->mem_terms, sizeof s->mem_terms);
	s->samples = f->samples;
	s->drops = f->drops;
	s->interval = f->interval;
	s->frames++;
	double h[4] = { s->heap, s->mmap, s->resident, (double)s->rss_bytes };
	push_history(l, h);
}

void ha_live_take(struct ha_live *l, struct ha_qmsg *m)
{
	if (m->type == HA_LMSG_FRAME) {
		take_frame(l, (const struct ha_lmsg_frame *)m);
	} else if (m->type == HA_LMSG_STACK) {
		struct ha_lmsg_stack *st = (struct ha_lmsg_stack *)m;
		if (st->id && reserve(l, st->id) == 0) {
			free(l->stacks[st->id]);
			l->stacks[st->id] = st;
			lf_take_stack(l, st->id);
			return;
		}
	}
	free(m);
}

/* The values of now are the mark; until the next frame comes, growth shows
 * as zero. */
static void mark_now(struct ha_live *l)
{
	if (l->cap)
		memcpy(l->mark, l->cur, l->cap * sizeof *l->mark);
	l->mark_unix = l->last_unix;
	l->sum.since_mark_s = 0;
}

void ha_live_mark(struct ha_live *l)
{
	mark_now(l);
	l->mark_pending = 1;
}

static int stack_matches(const struct ha_lmsg_stack *st, const char *filter)
{
	if (!filter || !filter[0])
		return 1;
	if (!st)
		return 0;
	for (int i = 0; i < st->n; i++)
		if (lm_text_matches(&st->f[i], filter))
			return 1;
	return 0;
}

static int by_key(const void *a, const void *b, void *sort)
{
	const struct ha_live_row *x = a, *y = b;
	int c = lm_cmp(&x->v, &y->v, *(enum ha_live_sort *)sort);
	return c ? c : x->id < y->id ? -1 : x->id > y->id;
}

size_t ha_live_rows(struct ha_live *l, int kind, enum ha_live_sort sort, const char *filter,
                    const struct ha_live_row **rows)
{
	size_t n = 0;
	struct ha_live_amount a;
	for (size_t id = 1; id < l->cap; id++) {
		if (!lm_bucket(l, id, kind, &a) || !lm_shown(&a, sort) || !stack_matches(l->stacks[id], filter))
			continue;
		struct ha_live_row *r = ha_grow(l->rows, &l->rows_cap, n + 1, sizeof *r, 256);
		if (!r)
			break;
		l->rows = r;
		l->rows[n++] = (struct ha_live_row){
			.id = (uint32_t)id, .kind = l->cur[id].kind, .v = a, .stack = l->stacks[id],
		};
	}
	if (n > 1)
		qsort_r(l->rows, n, sizeof *l->rows, by_key, &sort);
	*rows = l->rows;
	return n;
}

const struct ha_live_summary *ha_live_summary(const struct ha_live *l)
{
	return &l->sum;
}

/* bytes as "+1.2 MiB" (sign always). */
static void human(double v, char *buf, size_t len)
{
	const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double a = v < 0 ? -v : v;
	int u = 0;
	while (a >= 1024 && u < 4) {
		a /= 1024;
		u++;
	}
	snprintf(buf, len, "%s%.*f %s", v < 0 ? "-" : "+", u ? 1 : 0, a, unit[u]);
}

void ha_live_status(struct ha_live *l, char *buf, size_t len)
{
	buf[0] = '\0';
	if (!l->sum.frames)
		return;
	/* Growth since attach: where the mark starts, and the status line
	 * never moves it. */
	char grown[32];
	human(l->sum.heap + l->sum.mmap, grown, sizeof grown);
	const struct ha_live_row *rows;
	size_t n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &rows);
	const struct ha_lmsg_stack *st = n && rows[0].v.growth_bytes > 0 ? rows[0].stack : NULL;
	const char *top = st && st->n ? st->f[ha_live_leaf(st)].function : NULL;
	snprintf(buf, len, "live heap %s since attach%s%s", grown, top ? ", top: " : "",
	         top ? top : "");
	/* The name comes from the target: no control character (C0, DEL or
	 * C1: U+009B is CSI to some terminals) nor invalid UTF-8 reaches the
	 * terminal. */
	char *w = buf;
	for (const char *p = buf; *p;) {
		uint32_t cp;
		int n = ha_utf8_decode((const unsigned char *)p, &cp);
		if (cp == HA_UTF8_BAD || cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
			*w++ = '?';
		} else {
			memmove(w, p, (size_t)n);
			w += n;
		}
		p += n;
	}
	*w = '\0';
}
