/* interval.h -- the adaptive sampling interval: when to raise it, when to
 * lower it again.
 *
 * Drops mean the target writes samples faster than the collector reads
 * them: rather than lose samples for as long as that lasts (and bias the
 * profile towards whatever ran while the ring had room), the interval the
 * agent's threads draw their countdowns with is doubled, at most once per
 * HA_INTERVAL_RAISE_GAP_MS.  Once the rings stay below 1/16 full with no
 * new drops, it is halved every HA_INTERVAL_LOWER_AFTER_MS until it is the
 * configured one again.  The estimates stay unbiased: every sample carries
 * the interval it was drawn with, and is weighted with it.
 *
 * Only the decision lives here (a pure function of the counters it is
 * given and the time); the collector applies it (the ring header, the
 * stats, the line on stderr). */
#ifndef HA_INTERVAL_H
#define HA_INTERVAL_H

#include <stdint.h>

#define HA_INTERVAL_RAISE_GAP_MS 50     /* at most one doubling per 50 ms */
#define HA_INTERVAL_LOWER_AFTER_MS 500  /* ...and one halving per 500 ms of calm rings */

struct ha_interval {
	uint64_t configured;    /* what the user asked for: never below it */
	uint64_t max;           /* never above it (HA_INTERVAL_MAX) */
	uint64_t now;           /* in effect */
	uint64_t seen_drops;    /* the rings' drops when it was last raised */
	double changed_ms;      /* when it last changed */
};

/* Start at the configured interval, drops the rings' drop count now. */
void ha_interval_init(struct ha_interval *iv, uint64_t configured, uint64_t max, uint64_t drops,
                      double now_ms);

/* After a drain: drops the rings' drop count, fill the fullest ring's
 * unconsumed bytes of ring_size.  Returns the new interval (iv->now
 * becomes it), or 0 when it stays. */
uint64_t ha_interval_next(struct ha_interval *iv, uint64_t drops, uint64_t fill, uint64_t ring_size,
                          double now_ms);

#endif
