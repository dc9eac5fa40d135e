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

/* ln(x) for x in [2^-53, 1] (a normal number), without libm (the agent
 * needs no library but libc): fdlibm's e_log.c, its one general case --
 * x = 2^k (1+f) with sqrt(2)/2 <= 1+f < sqrt(2), s = f/(2+f),
 * ln(1+f) = f - (f*f/2 - s*(f*f/2 + R(s*s))), R a minimax polynomial --
 * which is within one unit in the last place of the exact logarithm
 * (countdown_test checks it against libm's over the whole range drawn). */
__attribute__((unused)) static double ha_log(double x)
{
	static const double ln2_hi = 6.93147180369123816490e-01, /* 0x3fe62e42fee00000 */
		ln2_lo = 1.90821492927058770002e-10,              /* 0x3dea39ef35793c76 */
		Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01,
		Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01,
		Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
		Lg7 = 1.479819860511658591e-01;
	union { double d; uint64_t u; } v = { .d = x };
	uint32_t hx = (uint32_t)(v.u >> 32);
	int k = (int)(hx >> 20) - 1023;
	hx &= 0x000fffff;
	uint32_t i = (hx + 0x95f64) & 0x100000; /* 1+f >= sqrt(2): halve it */
	v.u = (uint64_t)(hx | (i ^ 0x3ff00000)) << 32 | (v.u & 0xffffffffu);
	k += (int)(i >> 20);
	double f = v.d - 1.0, s = f / (2.0 + f), z = s * s, w = z * z;
	double r = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7))) + w * (Lg2 + w * (Lg4 + w * Lg6));
	double hfsq = 0.5 * f * f, dk = (double)k;
	return dk * ln2_hi - ((hfsq - (s * (hfsq + r) + dk * ln2_lo)) - f);
}

/* The exponential draw of ha_countdown_draw, out of line: the compiler made
 * that split itself when the logarithm was libm's (a call); with ha_log
 * inlined here it would not, and ha_countdown_draw's test of interval <= 1
 * (every allocation, -i 1) would cost the sampler a call. */
__attribute__((unused, noinline)) static int64_t ha_countdown_exp(uint64_t interval)
{
	/* u in (0, 1]: 53 random bits, never 0. */
	double u = (double)((ha_rng_next(&ha_ts.rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double d = -ha_log(u) * (double)interval;
	return d > 9e18 ? INT64_MAX / 2 : (int64_t)d;
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
	return ha_countdown_exp(interval);
}

#endif /* HA_AGENT_COUNTDOWN_H */
