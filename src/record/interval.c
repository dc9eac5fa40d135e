/* interval.c -- the adaptive sampling interval (see interval.h). */
#include "interval.h"

void ha_interval_init(struct ha_interval *iv, uint64_t configured, uint64_t max, uint64_t drops,
                      double now_ms)
{
	iv->configured = iv->now = configured;
	iv->max = max;
	iv->seen_drops = drops;
	iv->changed_ms = now_ms;
}

static uint64_t change(struct ha_interval *iv, uint64_t v, double now_ms)
{
	iv->now = v;
	iv->changed_ms = now_ms;
	return v;
}

uint64_t ha_interval_next(struct ha_interval *iv, uint64_t drops, uint64_t fill, uint64_t ring_size,
                          double now_ms)
{
	double since = now_ms - iv->changed_ms;
	if (drops != iv->seen_drops) {
		/* New drops: double, unless it did a moment ago (the drops
		 * then are still those of the old interval's samples). */
		if (since < HA_INTERVAL_RAISE_GAP_MS || iv->now >= iv->max)
			return 0;
		iv->seen_drops = drops;
		return change(iv, iv->now < iv->max / 2 ? iv->now * 2 : iv->max, now_ms);
	}
	if (iv->now > iv->configured && fill < ring_size / 16 && since >= HA_INTERVAL_LOWER_AFTER_MS)
		return change(iv, iv->now / 2 > iv->configured ? iv->now / 2 : iv->configured, now_ms);
	return 0;
}
