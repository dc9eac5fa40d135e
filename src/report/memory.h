/* memory.h -- where RssAnon went at a snapshot (heapdiff --memory, issue
 * 41): the terms and glibc's arenas the attacher recorded (schema version
 * 10: memory_terms, memory_arenas), a hint when the numbers support one,
 * and with --by-stack the call paths whose sampled blocks pin the holes
 * (version 13: memory_pinning). */
#ifndef HD_MEMORY_H
#define HD_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "mem_terms.h"
#include "report.h"

struct hd_arena {
	int64_t arena, is_main, heaps, complete;
	double address, system, in_use, free, top, resident, trimmable, pinned;
};

/* The pinned bytes charged to one call path's sampled blocks. */
struct hd_pin_row {
	int64_t stack_id;
	double bytes, blocks;
	struct hd_stack st;           /* the displayed frames (a view, hd_fold) */
	int folded;
};

struct hd_memory {
	int64_t snapshot_id, asked_id; /* the snapshot read; the one asked for */
	double time;
	char reason[32];
	char *allocator;              /* cleaned text */
	double rss_anon;
	double terms[HA_MT_COUNT];    /* enum ha_mem_term */
	size_t narenas;
	struct hd_arena *arenas;
	double cpus_online, cpus_allowed, cpu_quota; /* 0: unknown, none (version 13) */
	char hint[640];               /* "" when the numbers support none */
	struct hd_pin_row *pins;      /* hd_memory_load_pins: most bytes first */
	size_t npins;
	double pins_charged;          /* their sum */
	int by_stack;                 /* they were loaded */
};

/* The breakdown of snapshot b, or of the latest one of its session before
 * it that has one (the last snapshot of a target that exited has none).
 * HD_OK, or HD_ERR with the reason (a file before version 10, a session
 * without any). */
int hd_memory_load(const struct hd_snap *b, int exact, struct hd_memory *m);
void hd_memory_free(struct hd_memory *m);
/* After hd_memory_load: the call paths pinning the holes at m's snapshot
 * (memory_pinning).  HD_OK, or HD_ERR (a file before version 13). */
int hd_memory_load_pins(struct hd_source *s, struct hd_memory *m);

/* The breakdowns of a whole session, in time order, for the page's chart:
 * *rows gets n rows of HD_MEM_COLS values: time, RssAnon, then the terms
 * (enum ha_mem_term).  None (n 0) in a file before version 10.  HD_OK or
 * HD_ERR.  *rows is malloc'ed. */
#define HD_MEM_COLS (2 + HA_MT_COUNT)
int hd_memory_series(struct hd_source *s, int64_t session, double **rows, size_t *n);

#endif
