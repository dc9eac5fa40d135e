/* peak_test -- the peak's decisions (src/record/peak.c, peak.h) on a real
 * book: a copy at the first total, none for a rise of 1% or less, at most
 * one per HA_PEAK_GAP_NS of record time unless it is cheap (at most
 * HA_PEAK_CHEAP buckets changed), a record time before the last copy's;
 * a snapshot above the copy raising the bar; and whether the copy is
 * written at the end: clearly above every snapshot and the final total,
 * by more than 1% and more than HA_PEAK_NOISE sampling intervals.  Each
 * case states what must come out; the program prints every mismatch and
 * exits 1 if there is one. */
#define _GNU_SOURCE
#include <stdlib.h>

#include "peak.h"
#include "unit.h"

#define MS 1000000ull

static uint64_t next_addr = 0x10000;

/* Books a live block of size bytes (weight 1) in bucket stack; returns its
 * address. */
static uint64_t grow(struct ha_book *b, uint32_t stack, uint64_t size)
{
	uint64_t a = next_addr;
	next_addr += 64;
	ha_book_alloc(b, stack, a, size, 1);
	return a;
}

static uint32_t new_stack(struct ha_book *b, uint64_t pc)
{
	int is_new;
	return ha_book_bucket(b, &pc, 1, HA_KIND_HEAP, &is_new);
}

static void test_copies(void)
{
	struct ha_book *b = ha_book_new();
	struct ha_peak p = { 0 };
	uint32_t s = new_stack(b, 0x401000);
	uint64_t t = 1000 * MS;

	EXPECT(ha_peak_after_records(&p, b, t) == 0, "an empty book is no peak");
	grow(b, s, 1000);
	EXPECT(ha_peak_after_records(&p, b, t) == 1, "the first total is a copy");
	EXPECT(p.high == 1000 && p.copy_total == 1000 && p.copy_ns == t,
	       "after the first copy: high %g copy %g at %llu", p.high, p.copy_total,
	       (unsigned long long)p.copy_ns);
	EXPECT(ha_book_peak_dirty(b) == 0, "the copy must be kept in the book (%zu dirty)",
	       ha_book_peak_dirty(b));
	EXPECT(ha_peak_after_records(&p, b, t + 200 * MS) == 0, "the same total again is no copy");

	/* 1% more is not a new high; just over it is, even 1 ms later (one
	 * bucket changed: cheap). */
	grow(b, s, 10);
	EXPECT(ha_peak_after_records(&p, b, t + 200 * MS) == 0, "1010 is not 1%% above 1000");
	grow(b, s, 1);
	EXPECT(ha_peak_after_records(&p, b, t + MS) == 1, "1011 is a cheap copy within the gap");
	EXPECT(p.copy_total == 1011 && p.high == 1011, "copy %g high %g, want 1011", p.copy_total, p.high);

	/* A fall and a rise back below the high: no copy. */
	uint64_t big = grow(b, s, 500);
	EXPECT(ha_peak_after_records(&p, b, t + 100 * MS) == 1, "1511 is a new high");
	ha_book_release(b, big);
	grow(b, s, 400);
	EXPECT(ha_peak_after_records(&p, b, t + 400 * MS) == 0, "1411 after 1511 is no new high");
	EXPECT(p.copy_total == 1511, "the copy stays at 1511, not %g", p.copy_total);
	ha_book_free(b);
}

/* Dirties n new buckets with a block of size bytes each. */
static void spread(struct ha_book *b, int n, uint64_t size)
{
	static uint64_t pc = 0x600000;
	for (int i = 0; i < n; i++)
		grow(b, new_stack(b, pc++), size);
}

static void test_gap(void)
{
	struct ha_book *b = ha_book_new();
	struct ha_peak p = { 0 };
	uint64_t t = 5000 * MS;

	spread(b, 10, 100);
	EXPECT(ha_peak_after_records(&p, b, t) == 1, "first copy");
	/* More than HA_PEAK_CHEAP buckets changed: not within the gap. */
	spread(b, HA_PEAK_CHEAP + 1, 100);
	EXPECT(ha_book_peak_dirty(b) == HA_PEAK_CHEAP + 1, "%zu dirty, want %d", ha_book_peak_dirty(b),
	       HA_PEAK_CHEAP + 1);
	EXPECT(ha_peak_after_records(&p, b, t + HA_PEAK_GAP_NS - 1) == 0,
	       "a dear copy 1 ns short of the gap must wait");
	EXPECT(p.copy_total == 1000, "the copy stays at 1000, not %g", p.copy_total);
	EXPECT(ha_peak_after_records(&p, b, t + HA_PEAK_GAP_NS) == 1, "a dear copy once the gap is over");
	EXPECT(ha_book_peak_dirty(b) == 0, "%zu dirty after the copy", ha_book_peak_dirty(b));

	/* Exactly HA_PEAK_CHEAP changed is still cheap. */
	t += HA_PEAK_GAP_NS;
	spread(b, HA_PEAK_CHEAP, 100);
	EXPECT(ha_peak_after_records(&p, b, t + MS) == 1, "%d buckets changed is cheap", HA_PEAK_CHEAP);

	/* A record time before the last copy's (the target's clock) does
	 * not hold a dear copy back. */
	t += MS;
	spread(b, HA_PEAK_CHEAP + 1, 100);
	EXPECT(ha_peak_after_records(&p, b, t - 10 * MS) == 1, "a time going backwards: a copy");
	EXPECT(p.copy_ns == t - 10 * MS, "the copy's time is its records' (%llu)",
	       (unsigned long long)p.copy_ns);
	ha_book_free(b);
}

static void test_snapshots(void)
{
	struct ha_book *b = ha_book_new();
	struct ha_peak p = { 0 };
	uint32_t s = new_stack(b, 0x402000);
	uint64_t t = 1000 * MS;

	/* A snapshot that sees the total first is the peak itself: it raises
	 * the bar, and no copy follows for that total. */
	grow(b, s, 5000);
	ha_peak_at_snapshot(&p, b);
	EXPECT(p.snap_max == 5000 && p.high == 5000, "after a snapshot: snap_max %g high %g", p.snap_max,
	       p.high);
	EXPECT(ha_peak_after_records(&p, b, t) == 0, "the total of a snapshot is no new copy");
	EXPECT(ha_peak_pending(&p, b) == 0, "no copy: nothing to write");

	/* A copy at 10000 between snapshots at 5000; the book falls back. */
	uint64_t big = grow(b, s, 5000);
	EXPECT(ha_peak_after_records(&p, b, t + MS) == 1, "10000 is a copy");
	ha_book_release(b, big);
	ha_peak_at_snapshot(&p, b);
	EXPECT(p.high == 10000 && p.snap_max == 5000, "a lower snapshot: high %g snap_max %g", p.high,
	       p.snap_max);
	p.info.sample_interval = 100;
	EXPECT(ha_peak_pending(&p, b) == 1, "10000 over snapshots of 5000 at interval 100: written");
	/* The same copy is sampling noise at a large interval: 5000 is less
	 * than HA_PEAK_NOISE intervals. */
	p.info.sample_interval = 1250;
	EXPECT(ha_peak_pending(&p, b) == 0, "a 5000 rise is noise at interval 1250");
	p.info.sample_interval = 1249;
	EXPECT(ha_peak_pending(&p, b) == 1, "a 5000 rise is more than 4 intervals of 1249");
	p.info.sample_interval = 10;

	/* The final total (the book now) counts as a snapshot. */
	uint64_t back = grow(b, s, 4950);
	EXPECT(ha_peak_pending(&p, b) == 0, "9950 now is within 1%% of the 10000 copy");
	ha_book_release(b, back);
	grow(b, s, 4850);
	EXPECT(ha_peak_pending(&p, b) == 1, "9850 now: the copy is more than 1%% and 4 intervals above");
	ha_peak_at_snapshot(&p, b);
	EXPECT(p.snap_max == 9850 && p.high == 10000, "snap_max %g high %g", p.snap_max, p.high);
	grow(b, s, 200);
	ha_peak_at_snapshot(&p, b);
	EXPECT(p.high == 10050 && ha_peak_pending(&p, b) == 0,
	       "a snapshot above the copy is the peak: high %g, pending %d", p.high, ha_peak_pending(&p, b));
	EXPECT(ha_peak_after_records(&p, b, t + 2 * MS) == 0,
	       "10050 after a snapshot of 10050 is no new copy");
	ha_book_free(b);
}

int main(void)
{
	test_copies();
	test_gap();
	test_snapshots();
	return UNIT_RESULT("peak: copies, the gap and cheap copies, snapshots, the written peak");
}
