/* countdown_test -- the Poisson countdown's draws (agent/countdown.h, on
 * the per-thread state of agent/tls.c; nothing else of the agent).
 *
 * For the intervals 4096 and 512 KiB, NDRAWS draws from each of a few
 * seeds: the sample mean must lie within 4 standard errors of the interval
 * (the standard deviation of an exponential is its mean, so the standard
 * error is interval / sqrt(n); |z| > 4 happens by chance with probability
 * 6e-5), and the Kolmogorov-Smirnov statistic against the exponential
 * distribution of that mean must stay below the 1% critical value
 * 1.628 / sqrt(n).  The draws are whole bytes (truncated): the largest
 * difference that makes to the distribution function is 1/interval, well
 * below the critical value for these intervals.  Interval 1 means "every
 * allocation": every draw must be 0 (an allocation of one byte or more
 * then runs the countdown out).  The logarithm of the draws is the
 * agent's own (no libm in the agent): against libm's, within one unit in
 * the last place for the draws' own u and for u in every binade of
 * [2^-53, 1], the ends and the halving point sqrt(2)/2 included.
 * Deterministic: the seeds are fixed. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "countdown.h"

#define NDRAWS 200000

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int64_t draws[NDRAWS];

static int check(uint64_t interval, uint64_t seed)
{
	ha_ts.rng = seed;
	double sum = 0;
	for (int i = 0; i < NDRAWS; i++) {
		draws[i] = ha_countdown_draw(interval);
		if (draws[i] < 0) {
			fprintf(stderr, "interval %llu: negative draw %lld\n", (unsigned long long)interval,
			        (long long)draws[i]);
			return 1;
		}
		if (ha_ts.interval != interval) {
			fprintf(stderr, "interval %llu: ha_ts.interval not recorded\n", (unsigned long long)interval);
			return 1;
		}
		sum += (double)draws[i];
	}
	if (interval <= 1) {
		for (int i = 0; i < NDRAWS; i++)
			if (draws[i] != 0) {
				fprintf(stderr, "interval 1: draw %lld, not 0\n", (long long)draws[i]);
				return 1;
			}
		printf("interval %-7llu seed %016llx: all %d draws 0 (every allocation sampled)\n",
		       (unsigned long long)interval, (unsigned long long)seed, NDRAWS);
		return 0;
	}
	double mean = sum / NDRAWS;
	double se = (double)interval / sqrt((double)NDRAWS);
	double z = (mean - (double)interval) / se;
	qsort(draws, NDRAWS, sizeof draws[0], cmp_i64);
	double d = 0;
	for (int i = 0; i < NDRAWS; i++) {
		double f = 1 - exp(-(double)draws[i] / (double)interval);
		double lo = f - (double)i / NDRAWS, hi = (double)(i + 1) / NDRAWS - f;
		if (lo > d)
			d = lo;
		if (hi > d)
			d = hi;
	}
	double crit = 1.628 / sqrt((double)NDRAWS);
	printf("interval %-7llu seed %016llx: mean %.1f (z %+.2f), KS D %.5f (1%% critical %.5f)\n",
	       (unsigned long long)interval, (unsigned long long)seed, mean, z, d, crit);
	int bad = 0;
	if (fabs(z) > 4) {
		fprintf(stderr, "interval %llu: mean %.1f is %.1f standard errors off\n",
		        (unsigned long long)interval, mean, z);
		bad = 1;
	}
	if (d >= crit) {
		fprintf(stderr, "interval %llu: KS statistic %.5f >= %.5f: not exponential\n",
		        (unsigned long long)interval, d, crit);
		bad = 1;
	}
	return bad;
}

/* ha_log(x) against log(x): at most one unit in the last place apart. */
static int log_close(double x)
{
	double want = log(x), got = ha_log(x);
	if (got == want || nextafter(want, -INFINITY) == got || nextafter(want, INFINITY) == got)
		return 1;
	fprintf(stderr, "ha_log(%a) = %a, libm's log = %a\n", x, got, want);
	return 0;
}

static int check_log(void)
{
	uint64_t rng = 0x2545F4914F6CDD1DULL;
	int bad = 0;
	if (!log_close(1.0) || !log_close(0x1p-53) || !log_close(0.5) || !log_close(M_SQRT1_2) ||
	    !log_close(nextafter(M_SQRT1_2, 0.0)) || !log_close(nextafter(M_SQRT1_2, 1.0)) ||
	    !log_close(nextafter(1.0, 0.0)))
		bad = 1;
	for (int i = 0; i < 2000000 && !bad; i++) {
		/* as the draw makes it: 53 random bits + 1, times 2^-53 */
		double u = (double)((ha_rng_next(&rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
		/* and the same mantissa in a binade of its own, down to 2^-53 */
		double v = ldexp(frexp(u, &(int){ 0 }), -(int)(ha_rng_next(&rng) % 53));
		if (!log_close(u) || !log_close(v))
			bad = 1;
	}
	if (bad)
		fprintf(stderr, "countdown_test: ha_log is not libm's log within one ulp\n");
	return bad;
}

int main(void)
{
	const uint64_t intervals[] = { 1, 4096, (uint64_t)512 * 1024 };
	const uint64_t seeds[] = { 0x853c49e6748fea9bull, 0x9E3779B97F4A7C15ull, 12345 };
	int bad = check_log();
	for (size_t i = 0; i < sizeof intervals / sizeof intervals[0]; i++)
		for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++)
			bad |= check(intervals[i], seeds[s]);
	if (bad) {
		fprintf(stderr, "countdown_test: FAILED\n");
		return 1;
	}
	printf("countdown_test: ok\n");
	return 0;
}
