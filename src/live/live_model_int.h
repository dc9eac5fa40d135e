/* live_model_int.h -- what the model's files share (the rest of the live
 * view sees live_model.h only):
 *
 *   live_model.c   the buckets' values and stacks, the mark, the totals;
 *                  call paths as rows; the status line
 *   live_funcs.c   functions as rows: each stack's functions, interned
 *                  when its text comes, summed over the buckets per call
 *   live_amount.c  what both kinds of rows are made of (below both:
 *                  live_model.c calls live_funcs.c, never the reverse)
 */
#ifndef HA_LIVE_MODEL_INT_H
#define HA_LIVE_MODEL_INT_H

#include "live_model.h"
#include "util.h" /* ha_grow */

struct value {
	int kind;                 /* -1: no such bucket yet */
	double live_bytes, live_count;
};

struct lf_index;

struct ha_live {
	struct ha_live_summary sum;
	double start_unix, mark_unix, last_unix;
	int mark_pending;           /* the next frame is the mark */
	uint64_t last_samples;
	struct value *cur, *mark;   /* index = id */
	struct ha_lmsg_stack **stacks;
	size_t cap;                 /* of cur, mark and stacks */
	struct ha_live_row *rows;
	size_t rows_cap;
	struct lf_index *fx;        /* live_funcs.c's; NULL until a stack comes */
	double hist[4][HA_LIVE_HISTORY]; /* heap, mmap, resident, rss */
	char comm[64];
};

/* live_amount.c */
/* Bucket id's amount if it is of kind (else 0). */
int lm_bucket(const struct ha_live *l, size_t id, int kind, struct ha_live_amount *a);
/* Whether an amount is a row: it has grown, or (by live bytes) is live. */
int lm_shown(const struct ha_live_amount *a, enum ha_live_sort sort);
/* Larger first by sort's key: -1, 0 or 1. */
int lm_cmp(const struct ha_live_amount *x, const struct ha_live_amount *y, enum ha_live_sort sort);
void lm_add(struct ha_live_amount *to, const struct ha_live_amount *a);
/* The frame's function, file or module contains filter (NULL or "": any). */
int lm_text_matches(const struct ha_live_text *f, const char *filter);

/* live_funcs.c */
/* The text of bucket id's stack came (l->stacks[id]): its functions. */
void lf_take_stack(struct ha_live *l, uint32_t id);
void lf_free(struct lf_index *fx);

#endif
