/* live_amount.c -- what both kinds of rows of the live model (call paths
 * in live_model.c, functions in live_funcs.c) are made of: a bucket's
 * amount since the mark, how amounts add and compare, the text filter,
 * the leaf a stack is shown from, growing arrays.  Below both files, so
 * neither calls back into the other (live_model_int.h). */
#define _GNU_SOURCE
#include "live_model_int.h"
#include "alloc_frame.h"

#include <stdlib.h>
#include <string.h>

static int kind_matches(int want, int kind)
{
	return want == HA_LIVE_ALLOC ? kind == HA_KIND_HEAP || kind == HA_KIND_MMAP : kind == want;
}

int lm_bucket(const struct ha_live *l, size_t id, int kind, struct ha_live_amount *a)
{
	const struct value *c = &l->cur[id], *m = &l->mark[id];
	if (c->kind < 0 || !kind_matches(kind, c->kind))
		return 0;
	double minutes = l->sum.since_mark_s / 60;
	a->growth_bytes = c->live_bytes - (m->kind >= 0 ? m->live_bytes : 0);
	a->growth_objects = c->live_count - (m->kind >= 0 ? m->live_count : 0);
	a->live_bytes = c->live_bytes;
	a->live_objects = c->live_count;
	a->rate_per_min = minutes > 0 ? a->growth_bytes / minutes : 0;
	return 1;
}

int lm_shown(const struct ha_live_amount *a, enum ha_live_sort sort)
{
	return sort == HA_LIVE_BY_LIVE ? a->live_bytes > 0 : a->growth_bytes != 0;
}

int lm_cmp(const struct ha_live_amount *x, const struct ha_live_amount *y, enum ha_live_sort sort)
{
	/* Rate is growth over the same time for every row: the same order. */
	double vx = sort == HA_LIVE_BY_LIVE ? x->live_bytes : x->growth_bytes;
	double vy = sort == HA_LIVE_BY_LIVE ? y->live_bytes : y->growth_bytes;
	return vx > vy ? -1 : vx < vy;
}

void lm_add(struct ha_live_amount *to, const struct ha_live_amount *a)
{
	to->growth_bytes += a->growth_bytes;
	to->growth_objects += a->growth_objects;
	to->live_bytes += a->live_bytes;
	to->live_objects += a->live_objects;
	to->rate_per_min += a->rate_per_min;
}

int lm_text_matches(const struct ha_live_text *f, const char *filter)
{
	return !filter || !filter[0] || strcasestr(f->function, filter) || strcasestr(f->file, filter) ||
	       strcasestr(f->module, filter);
}

int ha_live_leaf(const struct ha_lmsg_stack *st)
{
	int k = 0;
	while (k < st->n - 1 && ha_fold_frame(st->f[k].function, st->f[k].module, st->f[k + 1].function))
		k++;
	return k;
}
