/* peak.h -- the session's true peak: when the collector keeps a copy of
 * the buckets, and what the peak snapshot says.
 *
 * The peak of a session is the moment its estimated live total -- heap and
 * mmap together, everything the program holds through the calls the agent
 * sees -- was highest.  One total, not one per kind: the two kinds are
 * parts of one footprint, and the moment that matters (the one that runs a
 * machine out of memory) is that of their sum.
 *
 * The collector follows the total as it books the records (in ring order,
 * so the answer does not depend on when the attacher reads them: it looks
 * before each free that follows samples, where a high is, and at the end of
 * each batch) and, each time it reaches a new high more than 1% above the
 * copy kept, makes a new copy of the buckets (ha_book_keep_peak: only those
 * changed since the previous copy).  Copies are at most one per
 * HA_PEAK_GAP_NS of the records' own time, unless the copy is cheap (few
 * buckets changed since the last one).  A snapshot whose total is above the
 * kept one is the peak itself: nothing more is needed for it.  At the end
 * of the session, after the ring is drained, the copy is written as a
 * snapshot with reason "peak" only if it is clearly higher than every
 * snapshot of the session, the final one included: by more than 1% and by
 * more than HA_PEAK_NOISE sampling intervals.  (A sampled block stands for
 * about an interval's worth of bytes, so the estimated total moves by that
 * much as sampled blocks come and go: a service that only grows would
 * otherwise get a "peak" made of the blocks that happened to be live at one
 * moment.)  Owned by the collector thread. */
#ifndef HA_PEAK_H
#define HA_PEAK_H

#include <stddef.h>
#include <stdint.h>

#include "book.h"

#define HA_PEAK_RISE 1.01             /* a new high: 1% above the kept one */
#define HA_PEAK_GAP_NS 50000000ull    /* at most one copy per 50 ms of records... */
#define HA_PEAK_CHEAP 256             /* ...unless it copies this few buckets */
#define HA_PEAK_NOISE 4               /* intervals a peak must beat the snapshots by */

struct ha_peak {
	double high;           /* the highest total seen, at a copy or a snapshot */
	double copy_total;     /* the total of the book's peak copy (0: none) */
	double snap_max;       /* the highest total of a snapshot */
	uint64_t copy_ns;      /* record time of the last copy (CLOCK_MONOTONIC) */
	struct ha_db_snapshot info; /* the counters as of the copy, for its
	                             * snapshot (filled by the caller) */
};

/* After booking records up to record time now_ns: a new copy if the total
 * is a new high.  Returns 1 if a copy was made (the caller then fills
 * p->info). */
int ha_peak_after_records(struct ha_peak *p, struct ha_book *b, uint64_t now_ns);

/* At a snapshot, with the book's current total. */
void ha_peak_at_snapshot(struct ha_peak *p, const struct ha_book *b);

/* Is the peak copy clearly higher than every snapshot and than the book
 * now (the final snapshot), to be written? */
int ha_peak_pending(const struct ha_peak *p, const struct ha_book *b);

#endif
