/* db_rows.h -- the rows the database tests' writers (db_fill.c,
 * db_thin_check.c) spell their sessions with. */
#ifndef HA_TEST_DB_ROWS_H
#define HA_TEST_DB_ROWS_H

#include <stdint.h>

#include "db_write.h"

/* A bucket's cumulative values from what was allocated and freed. */
static inline struct ha_db_bucket bucket(int64_t stack_id, int kind, double alloc_b,
                                         double alloc_n, double free_b, double free_n)
{
	struct ha_db_bucket b = {
		.stack_id = stack_id, .kind = kind,
		.alloc_count = alloc_n, .alloc_bytes = alloc_b,
		.free_count = free_n, .free_bytes = free_b,
		.live_count = alloc_n - free_n, .live_bytes = alloc_b - free_b,
	};
	return b;
}

/* A snapshot's line of the snapshots table (no --rss columns). */
static inline struct ha_db_snapshot snap_info(double t, uint64_t rss, uint64_t samples,
                                              uint64_t drops, uint64_t unwf, const char *reason)
{
	struct ha_db_snapshot s = { .time = t, .rss_bytes = rss, .samples = samples, .drops = drops,
	                            .unwind_failures = unwf, .reason = reason,
	                            .sample_interval = 512u << 10 };
	return s;
}

#define SESSION(p, c, e, iv, t) { .pid = (p), .comm = (c), .exe = (e), .interval = (iv), .start_time = (t) }

#endif
