/* live_model.c -- TEMPORARY: the simplest model that implements
 * live_model.h, for developing and testing the view (live_view.c) before
 * the real one lands.  Buckets and stacks are arrays indexed by the local
 * id; every call of ha_live_rows filters and sorts them all. */
#define _GNU_SOURCE
#include "live_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bucket {
	int seen, kind;
	double live_b, live_c;
	double mark_b, mark_c;
	struct ha_lmsg_stack *stack;
};

struct ha_live {
	struct ha_live_summary sum;
	char *comm;
	double start, last_time, mark_time;
	uint64_t last_samples;
	struct bucket *b;
	size_t nb;
	struct ha_live_row *rows;
	double hist[4][HA_LIVE_HISTORY];
};

struct ha_live *ha_live_new(pid_t pid, const char *comm, double start_unix)
{
	struct ha_live *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->comm = strdup(comm ? comm : "");
	l->start = l->last_time = l->mark_time = start_unix;
	l->sum.pid = pid;
	l->sum.comm = l->comm;
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
	for (size_t i = 0; i < l->nb; i++)
		free(l->b[i].stack);
	free(l->b);
	free(l->rows);
	free(l->comm);
	free(l);
}

static struct bucket *bucket(struct ha_live *l, uint32_t id)
{
	if (id >= l->nb) {
		size_t n = l->nb ? l->nb : 256;
		while (n <= id)
			n *= 2;
		struct bucket *nb = realloc(l->b, n * sizeof *nb);
		struct ha_live_row *nr = realloc(l->rows, n * sizeof *nr);
		if (nb)
			l->b = nb;
		if (nr)
			l->rows = nr;
		if (!nb || !nr)
			return NULL;
		memset(l->b + l->nb, 0, (n - l->nb) * sizeof *l->b);
		l->nb = n;
	}
	return &l->b[id];
}

static void take_frame(struct ha_live *l, const struct ha_lmsg_frame *f)
{
	struct ha_live_summary *s = &l->sum;
	for (size_t i = 0; i < f->n; i++) {
		struct bucket *b = bucket(l, f->rows[i].id);
		if (!b)
			continue;
		b->seen = 1;
		b->kind = f->rows[i].kind;
		b->live_b = f->rows[i].live_bytes;
		b->live_c = f->rows[i].live_count;
	}
	double dt = f->time - l->last_time;
	s->samples_per_s = dt > 0 && f->samples >= l->last_samples ? (f->samples - l->last_samples) / dt : 0;
	l->last_samples = f->samples;
	l->last_time = f->time;
	s->since_attach_s = f->time - l->start;
	s->since_mark_s = f->time - l->mark_time;
	s->rss_on = f->rss_on;
	s->heap = f->kind_bytes[HA_KIND_HEAP];
	s->mmap = f->kind_bytes[HA_KIND_MMAP];
	s->resident = f->kind_bytes[HA_KIND_RSS];
	s->rss_bytes = f->rss_bytes;
	s->rss_anon_bytes = f->rss_anon_bytes;
	s->samples = f->samples;
	s->drops = f->drops;
	s->interval = f->interval;
	s->frames++;
	double v[4] = { s->heap, s->mmap, s->resident, (double)f->rss_bytes };
	if (s->n_history == HA_LIVE_HISTORY) {
		for (int k = 0; k < 4; k++)
			memmove(l->hist[k], l->hist[k] + 1, (HA_LIVE_HISTORY - 1) * sizeof(double));
		s->n_history--;
	}
	for (int k = 0; k < 4; k++)
		l->hist[k][s->n_history] = v[k];
	s->n_history++;
}

void ha_live_take(struct ha_live *l, struct ha_qmsg *m)
{
	if (m->type == HA_LMSG_FRAME) {
		take_frame(l, (struct ha_lmsg_frame *)m);
	} else if (m->type == HA_LMSG_STACK) {
		struct ha_lmsg_stack *st = (struct ha_lmsg_stack *)m;
		struct bucket *b = bucket(l, st->id);
		if (b && !b->stack) {
			b->stack = st;
			return;
		}
	}
	free(m);
}

void ha_live_mark(struct ha_live *l)
{
	for (size_t i = 0; i < l->nb; i++) {
		l->b[i].mark_b = l->b[i].live_b;
		l->b[i].mark_c = l->b[i].live_c;
	}
	l->mark_time = l->last_time;
	l->sum.since_mark_s = 0;
}

static int matches(const struct ha_lmsg_stack *st, const char *filter)
{
	if (!st)
		return 0;
	for (int i = 0; i < st->n; i++)
		if (strcasestr(st->f[i].function, filter) || strcasestr(st->f[i].file, filter) ||
		    strcasestr(st->f[i].module, filter))
			return 1;
	return 0;
}

static enum ha_live_sort sort_by;

static int cmp(const void *pa, const void *pb)
{
	const struct ha_live_row *a = pa, *b = pb;
	double x = sort_by == HA_LIVE_BY_LIVE ? a->live_bytes : a->growth_bytes;
	double y = sort_by == HA_LIVE_BY_LIVE ? b->live_bytes : b->growth_bytes;
	if (x != y)
		return x < y ? 1 : -1;
	return a->id < b->id ? -1 : a->id > b->id;
}

size_t ha_live_rows(struct ha_live *l, int kind, enum ha_live_sort sort, const char *filter,
                    const struct ha_live_row **rows)
{
	size_t n = 0;
	double mins = l->sum.since_mark_s / 60;
	for (size_t i = 0; i < l->nb; i++) {
		const struct bucket *b = &l->b[i];
		if (!b->seen)
			continue;
		if (kind == HA_LIVE_ALLOC ? b->kind != HA_KIND_HEAP && b->kind != HA_KIND_MMAP : b->kind != kind)
			continue;
		double g = b->live_b - b->mark_b;
		if (sort == HA_LIVE_BY_LIVE ? b->live_b <= 0 : g <= 0)
			continue;
		if (filter && *filter && !matches(b->stack, filter))
			continue;
		l->rows[n++] = (struct ha_live_row){
			.id = (uint32_t)i,
			.kind = b->kind,
			.growth_bytes = g,
			.growth_objects = b->live_c - b->mark_c,
			.live_bytes = b->live_b,
			.live_objects = b->live_c,
			.rate_per_min = mins > 0 ? g / mins : 0,
			.stack = b->stack,
		};
	}
	sort_by = sort;
	if (n)
		qsort(l->rows, n, sizeof *l->rows, cmp);
	*rows = l->rows;
	return n;
}

const struct ha_live_summary *ha_live_summary(const struct ha_live *l)
{
	return &l->sum;
}

void ha_live_status(struct ha_live *l, char *buf, size_t len)
{
	const struct ha_live_row *r;
	if (!l->sum.frames) {
		snprintf(buf, len, "%s", "");
		return;
	}
	size_t n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &r);
	snprintf(buf, len, "live heap %.0f B, top: %s", l->sum.heap + l->sum.mmap,
	         n && r[0].stack && r[0].stack->n ? r[0].stack->f[0].function : "-");
}
