/* interval_test.c -- unit test of interval.c, the adaptive sampling
 * interval's decisions, on made-up drop counts, fills and times. */
#include <stdint.h>

#include "interval.h"
#include "unit.h"

#define RING (1u << 20)
#define MAX (1ull << 30)

int main(void)
{
	struct ha_interval iv;
	ha_interval_init(&iv, 4096, MAX, 7, 1000.0);
	EXPECT(iv.now == 4096, "starts at the configured interval, not %llu", (unsigned long long)iv.now);

	/* No drops, a calm ring, at the configured interval: nothing moves. */
	EXPECT(ha_interval_next(&iv, 7, 0, RING, 5000.0) == 0, "calm at the configured interval stays");

	/* New drops, but within the raise gap of the start: not yet. */
	EXPECT(ha_interval_next(&iv, 9, RING, RING, 1000.0 + HA_INTERVAL_RAISE_GAP_MS - 1) == 0,
	       "no doubling within %d ms of the last change", HA_INTERVAL_RAISE_GAP_MS);
	/* After the gap: doubled, and the drops seen so far are remembered. */
	EXPECT(ha_interval_next(&iv, 9, RING, RING, 1100.0) == 8192, "drops double the interval");
	EXPECT(iv.now == 8192 && iv.seen_drops == 9, "state after a raise: %llu, %llu",
	       (unsigned long long)iv.now, (unsigned long long)iv.seen_drops);
	/* The same drops again: not a reason to raise (and the ring is full:
	 * not a reason to lower). */
	EXPECT(ha_interval_next(&iv, 9, RING / 2, RING, 2000.0) == 0, "old drops and a full ring: stays");
	/* More drops, once per gap. */
	EXPECT(ha_interval_next(&iv, 12, RING, RING, 2030.0) == 16384, "more drops: doubled again");
	EXPECT(ha_interval_next(&iv, 15, RING, RING, 2040.0) == 0, "...not twice within the gap");

	/* Calm: halved once per HA_INTERVAL_LOWER_AFTER_MS, only below 1/16 full. */
	EXPECT(ha_interval_next(&iv, 15, RING / 8, RING, 4000.0) == 32768, "new drops raise it");
	uint64_t top = iv.now;
	double t = 4000.0; /* when it was raised */
	EXPECT(ha_interval_next(&iv, iv.seen_drops, RING / 16, RING, t + 10000) == 0,
	       "a ring 1/16 full is not calm");
	ha_interval_init(&iv, 4096, MAX, iv.seen_drops, t);
	iv.now = top;
	EXPECT(ha_interval_next(&iv, iv.seen_drops, 0, RING, t + HA_INTERVAL_LOWER_AFTER_MS - 1) == 0,
	       "no halving within %d ms of the last change", HA_INTERVAL_LOWER_AFTER_MS);
	uint64_t v = ha_interval_next(&iv, iv.seen_drops, 0, RING, t + HA_INTERVAL_LOWER_AFTER_MS);
	EXPECT(v == top / 2, "calm halves it: %llu from %llu", (unsigned long long)v,
	       (unsigned long long)top);
	t += HA_INTERVAL_LOWER_AFTER_MS;
	EXPECT(ha_interval_next(&iv, iv.seen_drops, 0, RING, t + HA_INTERVAL_LOWER_AFTER_MS - 1) == 0,
	       "one halving per %d ms", HA_INTERVAL_LOWER_AFTER_MS);
	/* ...down to the configured one, never below. */
	for (int i = 0; i < 20; i++)
		ha_interval_next(&iv, iv.seen_drops, 0, RING, t + (i + 2) * 1000.0);
	EXPECT(iv.now == 4096, "back to the configured interval, not %llu", (unsigned long long)iv.now);

	/* Never above the maximum, even from an odd value near it. */
	ha_interval_init(&iv, MAX - 1, MAX, 0, 0);
	EXPECT(ha_interval_next(&iv, 1, RING, RING, 100.0) == MAX, "capped at the maximum");
	EXPECT(ha_interval_next(&iv, 2, RING, RING, 200.0) == 0, "at the maximum: stays");

	/* A drop counter that went backwards (a new ring's) counts as new drops. */
	ha_interval_init(&iv, 4096, MAX, 100, 0);
	EXPECT(ha_interval_next(&iv, 3, RING, RING, 100.0) == 8192, "a changed drop count raises");
	return UNIT_RESULT("the adaptive interval's decisions");
}
