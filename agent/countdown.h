/*
 * countdown.h -- the Poisson countdown's random draws: header only, on
 * the per-thread state of tls.h and nothing else, so that the sampler
 * compiles them exactly as when they were its own and a unit test
 * (agent/countdown_test.c) can draw millions without the rest of the
 * agent.
 *
 * Each thread counts down a number of bytes drawn from an exponential
 * distribution of mean `interval`; the allocation that makes it negative is
 * sampled.  An allocation of size S is then taken with probability
 * 1 - exp(-S/interval), which the attacher undoes with the weight
 * 1 / (1 - exp(-S/interval)) (Go, tcmalloc, jemalloc do the same).
 */
#ifndef HA_AGENT_COUNTDOWN_H
#define HA_AGENT_COUNTDOWN_H

#include <math.h>
#include <stdint.h>

#include "tls.h"

/* Plain static functions, not "inline": the sampler's inlining of them
 * (the draw partly inlined into ha_sample_alloc, its slow part out of
 * line) is the compiler's choice for a static function, as it was when
 * they were defined in sampler.c; "inline" would change it.  Unused where
 * only included. */

/* xorshift64*: *s must not be 0. */
__attribute__((unused)) static uint64_t ha_rng_next(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Bytes until the next sample: exponential with mean interval, drawn from
 * this thread's generator (ha_ts.rng, never 0); 0 (every allocation of at
 * least one byte) for an interval of 0 or 1.  The interval is recorded in
 * ha_ts.interval, for the samples the countdown takes. */
__attribute__((unused)) static int64_t ha_countdown_draw(uint64_t interval)
{
	ha_ts.interval = interval;
	if (interval <= 1)
		return 0; /* every allocation of at least one byte */
	/* u in (0, 1]: 53 random bits, never 0. */
	double u = (double)((ha_rng_next(&ha_ts.rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double d = -log(u) * (double)interval;
	return d > 9e18 ? INT64_MAX / 2 : (int64_t)d;
}

#endif /* HA_AGENT_COUNTDOWN_H */
