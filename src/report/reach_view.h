/* reach_view.h -- a reachability scan read back (heapdiff --reach, issue 40):
 * the scan's figures (schema version 11: reach_scans) and, per call path,
 * its live estimate split into unreachable, reachable and unknown
 * (reach_rows) with the holders of the reachable part (reach_holders). */
#ifndef HD_REACH_VIEW_H
#define HD_REACH_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

struct hd_reach_holder {
	char *root, *name;          /* cleaned text */
	double bytes, count;
	int64_t hops;
};

struct hd_reach_row {
	int64_t stack_id;
	int kind;
	double unreachable_bytes, unreachable_count;
	double reachable_bytes, reachable_count;
	double unknown_bytes, unknown_count;
	struct hd_stack st;         /* the displayed frames (a view, hd_fold) */
	int folded;
	struct hd_reach_holder *holders; /* most bytes first */
	size_t nholders;
};

struct hd_reach {
	int64_t snapshot_id, asked_id; /* the scan's snapshot; the one asked for */
	double time;
	char reason[32];
	double pause_ms, duration_ms;
	int64_t bytes_scanned, cow_bytes, chunks, blocks;
	struct hd_reach_row *rows;  /* most unreachable bytes first, then reachable */
	size_t nrows;               /* rows kept */
	size_t detailed;            /* rows [0, detailed) have their frames and holders; the
	                             * others get them from hd_reach_row_detail, one at a time */
	struct hd_source *src;
	size_t count;               /* rows of the scan (in the totals) */
	double unreachable, reachable, unknown; /* totals, bytes */
};

/* The latest scan that ran at or before snapshot b in its session, its
 * first `top` rows (0: all) kept with their figures only (detailed 0): the
 * writer loads each row's frames and holders as it writes it
 * (hd_reach_row_detail) and frees them after (hd_reach_row_free), so that
 * memory holds one row's holders, not every row's (a day's scan: 100,000
 * call paths, up to 64 holders each).  HD_OK, or HD_ERR with the reason (a
 * file before version 11, a session without a scan). */
int hd_reach_load(const struct hd_snap *b, size_t top, struct hd_reach *m);
/* Row r of m: its frames (a view into the source's stack cache) and
 * holders loaded.  HD_OK or HD_ERR. */
int hd_reach_row_detail(const struct hd_reach *m, struct hd_reach_row *r);
/* The same, quietly: 1 found, 0 none (no scan, a file before version 11),
 * HD_ERR; only the first `detail` rows (0: all) kept. */
int hd_reach_find(const struct hd_snap *b, size_t detail, struct hd_reach *m);
void hd_reach_free(struct hd_reach *m);
void hd_reach_row_free(struct hd_reach_row *r); /* its holders */

/* For --leaks: the latest scan of session (0 if none, or a file before
 * version 11), then per stack its row of that scan (NULL if none). */
int hd_reach_latest(struct hd_source *s, int64_t session, int64_t *scan_id);
int hd_reach_row_of(struct hd_source *s, int64_t scan_id, int64_t stack_id, int kind,
                    struct hd_reach_row *row);

#endif
