/* live_model.h -- what a live view shows, kept from the live feed
 * (src/record/live_feed.h): the latest value of every bucket, the text of
 * every stack, the values at the mark (growth is counted from there; the
 * mark starts at the attach, where everything is zero), and the history of
 * the totals for the sparklines.  Owned by one thread (the main thread of
 * heapattach); no locking.
 *
 * Rows are call paths (one bucket: a stack and a kind) ranked by growth
 * since the mark, live bytes, or rate; a filter keeps the rows with a frame
 * whose function, file or module contains the filter text (case
 * insensitive).  Or rows are functions (live_funcs.c), as pprof ranks them:
 * flat, what the function allocated itself (the stack's leaf once the
 * allocator's frames are folded away), and cumulative, what was allocated
 * with it anywhere on the stack (once a stack, recursion or not). */
#ifndef HA_LIVE_MODEL_H
#define HA_LIVE_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "live_feed.h"

struct ha_live;

#define HA_LIVE_HISTORY 600         /* totals kept for the sparklines (one a frame) */

/* The kinds a view cycles through: heap and mmap together, each alone,
 * resident (when the session has --rss). */
enum { HA_LIVE_ALLOC = -1 };        /* heap + mmap (the default) */

enum ha_live_sort { HA_LIVE_BY_GROWTH, HA_LIVE_BY_LIVE, HA_LIVE_BY_RATE };

/* What a row (or a caller of a function) counts. */
struct ha_live_amount {
	double growth_bytes, growth_objects; /* since the mark */
	double live_bytes, live_objects;     /* now */
	double rate_per_min;                 /* growth_bytes per minute since the mark */
};

struct ha_live_row {
	uint32_t id;
	int kind;
	struct ha_live_amount v;
	const struct ha_lmsg_stack *stack;   /* NULL: not symbolized yet */
};

/* The header's numbers. */
struct ha_live_summary {
	pid_t pid;
	const char *comm;
	double since_attach_s, since_mark_s;
	int rss_on;
	double heap, mmap, resident;         /* estimated live bytes by kind now */
	uint64_t rss_bytes, rss_anon_bytes;  /* the kernel's */
	int rss_last;                        /* the target gone: the last read
	                                      * (0 bytes: none was), rss_age_s
	                                      * before the frame */
	double rss_age_s;
	double mem_rss_anon;                 /* the last snapshot's breakdown (0: none) */
	double mem_terms[HA_MT_COUNT];
	double samples_per_s;                /* over the last frame interval */
	uint64_t samples, drops, interval;
	size_t frames;                       /* frames taken so far */
	/* History, oldest first, n_history entries: one per frame. */
	size_t n_history;
	const double *hist_heap, *hist_mmap, *hist_resident, *hist_rss;
};

struct ha_live *ha_live_new(pid_t pid, const char *comm, double start_unix);
void ha_live_free(struct ha_live *l);

/* Take a feed message (a frame or a stack); frees it. */
void ha_live_take(struct ha_live *l, struct ha_qmsg *m);

/* Growth is counted from now on: from the next frame (until it comes,
 * every row's growth is zero). */
void ha_live_mark(struct ha_live *l);

/* The rows of kind (HA_KIND_* or HA_LIVE_ALLOC) that pass filter (NULL or
 * "": all) and have grown, or are live (HA_LIVE_BY_LIVE), sorted; *rows is
 * owned by the model and valid until the next call.  Returns the count. */
size_t ha_live_rows(struct ha_live *l, int kind, enum ha_live_sort sort, const char *filter,
                    const struct ha_live_row **rows);

/* The frame of st that allocated: the first one that is not the
 * allocator's own (alloc_frame.h), or the last frame when all are; 0 when
 * st has none. */
int ha_live_leaf(const struct ha_lmsg_stack *st);

/* A function: its flat and cumulative amounts over the call paths of a
 * kind (every bucket of the kind counts, grown or not). */
struct ha_live_fn {
	uint32_t id;                         /* the function's, while the model lives */
	const struct ha_live_text *name;     /* function, module, the file of its first frame seen (line 0) */
	struct ha_live_amount flat, cum;
	uint32_t paths;                      /* the call paths through it that ha_live_rows would show */
};

/* The functions of kind on the symbolized stacks whose function, file or
 * module contains filter (NULL or "": all), that have grown (by live
 * bytes: are live) flat or cumulatively, sorted by the flat amount of
 * sort, then the cumulative one; *rows is owned by the model and valid
 * until the next call.  Returns the count. */
size_t ha_live_functions(struct ha_live *l, int kind, enum ha_live_sort sort, const char *filter,
                         const struct ha_live_fn **rows);

/* Who calls function fn: over the call paths of kind through it, the
 * nearest other function above its leaf-most frame (NULL name: fn is the
 * outermost), each with the amount of those paths, sorted as
 * ha_live_functions sorts; owned by the model, valid until the next call. */
struct ha_live_caller {
	const struct ha_live_text *name;
	struct ha_live_amount v;
	uint32_t paths;                      /* as ha_live_fn's */
};
size_t ha_live_callers(struct ha_live *l, uint32_t fn, int kind, enum ha_live_sort sort,
                       const struct ha_live_caller **rows);

const struct ha_live_summary *ha_live_summary(const struct ha_live *l);

/* The status line of heapattach without --live: the estimated live heap
 * since attach and the top growing leaf function ("" before the first
 * frame). */
void ha_live_status(struct ha_live *l, char *buf, size_t len);

#endif
