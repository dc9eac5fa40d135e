/* report_series_test -- the trend fit of heapdiff --leaks (hd_leak_fit,
 * report_series.c; the tests of leaks.c's top comment) on series made here, no database: exact
 * lines up and down, a line with noise, a line that zig-zags (a trend, not
 * steady), a step, a cache emptied again, a flat and an empty series,
 * growth under --min-bytes and under one byte, too few points, snapshots
 * at one time, and NaN or infinite values (no suspect, no crash).  Each
 * case states what must come out; the program prints every mismatch and
 * exits 1 if there is one. */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>

#include "leaks_int.h"
#include "unit.h"

#define MAXN 64

static double ts[MAXN];
static int64_t ids[MAXN];

/* hd_leak_fit of y (objects c, or NULL) at times t (NULL: 0, 1, 2, ...
 * seconds). */
static int fit(const double *t, const double *y, const double *c, size_t n, double min_bytes,
               struct hd_leak *tr)
{
	struct session_snaps ss = { n, ids, ts, 0 };
	for (size_t i = 0; i < n; i++) {
		ids[i] = (int64_t)i + 1;
		ts[i] = t ? t[i] - t[0] : (double)i;
	}
	ss.duration = ts[n - 1] - ts[0];
	*tr = (struct hd_leak){ 0 };
	return hd_leak_fit(y, c, &ss, min_bytes, tr);
}

static int near(double a, double b, double tol)
{
	return fabs(a - b) <= tol;
}

static void test_lines(void)
{
	double y[MAXN], c[MAXN], t[MAXN];
	struct hd_leak tr;

	/* y = 1000 + 50 t at 10 snapshots one second apart. */
	for (int i = 0; i < 10; i++) {
		y[i] = 1000 + 50.0 * i;
		c[i] = 10 + i;
	}
	EXPECT(fit(NULL, y, c, 10, 0, &tr) == 1, "an exact rising line is a suspect");
	EXPECT(near(tr.slope, 50, 1e-9) && near(tr.fit, 1, 1e-12), "exact line: slope %g fit %g, want 50, 1",
	       tr.slope, tr.fit);
	EXPECT(tr.steady == 1 && tr.retained == 1, "exact line: steady %g retained %g, want 1, 1",
	       tr.steady, tr.retained);
	EXPECT(tr.first == 1000 && tr.last == 1450 && tr.max == 1450 && tr.last_objects == 19,
	       "exact line: first %g last %g max %g objects %g", tr.first, tr.last, tr.max,
	       tr.last_objects);
	/* --min-bytes against the fitted growth, 50 * 9 = 450 bytes. */
	EXPECT(fit(NULL, y, c, 10, 450, &tr) == 1, "450 bytes of growth pass --min-bytes 450");
	EXPECT(fit(NULL, y, c, 10, 451, &tr) == 0 && near(tr.slope, 50, 1e-9),
	       "450 bytes of growth fail --min-bytes 451 (slope still measured: %g)", tr.slope);
	EXPECT(fit(NULL, y, NULL, 10, 0, &tr) == 1 && tr.last_objects == 0,
	       "no object counts: last_objects %g, want 0", tr.last_objects);

	/* Uneven times: the slope is per second of the snapshots' times. */
	for (int i = 0; i < 8; i++) {
		t[i] = 100 + i * i * 2.5;
		y[i] = 4096 + 7.0 * (t[i] - 100);
	}
	EXPECT(fit(t, y, NULL, 8, 0, &tr) == 1 && near(tr.slope, 7, 1e-9) && near(tr.fit, 1, 1e-12),
	       "uneven times: slope %g fit %g, want 7, 1", tr.slope, tr.fit);

	/* Falling: no suspect, a negative slope. */
	for (int i = 0; i < 10; i++)
		y[i] = 9000 - 100.0 * i;
	EXPECT(fit(NULL, y, NULL, 10, 0, &tr) == 0 && near(tr.slope, -100, 1e-9) && tr.steady == 0,
	       "a falling line: slope %g steady %g, want -100 and 0", tr.slope, tr.steady);

	/* Growth below one byte over the session is no suspect. */
	for (int i = 0; i < 10; i++)
		y[i] = 1e6 + 0.1 * i;
	EXPECT(fit(NULL, y, NULL, 10, 0, &tr) == 0 && near(tr.slope, 0.1, 1e-6),
	       "0.9 bytes of growth: slope %g, no suspect", tr.slope);
}

static void test_shapes(void)
{
	double y[MAXN];
	struct hd_leak tr;

	/* Rising 100/s with a deterministic wobble of +-30: still a line. */
	static const double wobble[20] = { 12, -30, 5, 27, -8, -21, 30, 0, -14, 19,
	                                   -27, 8, 22, -5, -30, 15, 3, -18, 26, -9 };
	for (int i = 0; i < 20; i++)
		y[i] = 5000 + 100.0 * i + wobble[i];
	EXPECT(fit(NULL, y, NULL, 20, 0, &tr) == 1, "a noisy line is a suspect (fit %g steady %g)", tr.fit,
	       tr.steady);
	EXPECT(near(tr.slope, 100, 3) && tr.fit > 0.99, "noisy line: slope %g fit %g, want about 100, > 0.99",
	       tr.slope, tr.fit);

	/* Up 250, down 50, ...: a good line (fit > 0.8) that falls too
	 * much (steady 2500 / 2950 < 0.9). */
	for (int i = 0; i < 20; i++)
		y[i] = 1000 + 100.0 * i + (i % 2 ? 150 : 0);
	EXPECT(fit(NULL, y, NULL, 20, 0, &tr) == 0, "a zig-zag is no suspect");
	EXPECT(tr.fit >= 0.8 && tr.steady < 0.9 && tr.slope > 0,
	       "zig-zag: fit %g steady %g slope %g, want a fit but not steady", tr.fit, tr.steady, tr.slope);

	/* A step at the middle of 10 snapshots: R^2 = 12.5^2 / (82.5 * 2.5). */
	for (int i = 0; i < 10; i++)
		y[i] = i < 5 ? 1000 : 2000;
	EXPECT(fit(NULL, y, NULL, 10, 0, &tr) == 0 && near(tr.fit, 156.25 / 206.25, 1e-12),
	       "a step: fit %g, want %g, no suspect", tr.fit, 156.25 / 206.25);

	/* A cache that grew and was half emptied: retained 0.5. */
	for (int i = 0; i < 10; i++)
		y[i] = 1000.0 * i;
	y[9] = 4000;
	EXPECT(fit(NULL, y, NULL, 10, 0, &tr) == 0 && near(tr.retained, 0.5, 1e-12) && tr.max == 8000,
	       "a cache emptied: retained %g max %g, no suspect", tr.retained, tr.max);
}

static void test_degenerate(void)
{
	double y[MAXN], t[MAXN];
	struct hd_leak tr;

	/* Flat: no slope, no fit, not steady, nothing divided by zero. */
	for (int i = 0; i < 10; i++)
		y[i] = 777;
	EXPECT(fit(NULL, y, NULL, 10, 0, &tr) == 0 && tr.slope == 0 && tr.fit == 0 && tr.steady == 0 &&
	       tr.retained == 1, "flat: slope %g fit %g steady %g retained %g", tr.slope, tr.fit, tr.steady,
	       tr.retained);
	for (int i = 0; i < 10; i++)
		y[i] = 0;
	EXPECT(fit(NULL, y, NULL, 10, 0, &tr) == 0 && tr.retained == 0 && tr.max == 0,
	       "all zero: retained %g max %g, want 0", tr.retained, tr.max);

	/* One point: no line.  Two points are always a perfect line: the
	 * three-snapshot minimum is hd_leak_find's, not the fit's. */
	y[0] = 123;
	EXPECT(fit(NULL, y, NULL, 1, 0, &tr) == 0 && tr.slope == 0 && tr.fit == 0 && tr.first == 123 &&
	       tr.last == 123, "one point: slope %g fit %g", tr.slope, tr.fit);
	y[0] = 100;
	y[1] = 300;
	EXPECT(fit(NULL, y, NULL, 2, 0, &tr) == 1 && near(tr.slope, 200, 1e-9) && near(tr.fit, 1, 1e-12),
	       "two points: slope %g fit %g, want 200, 1", tr.slope, tr.fit);

	/* Snapshots all at one time: no slope can be measured. */
	for (int i = 0; i < 5; i++) {
		t[i] = 42;
		y[i] = 100.0 * i;
	}
	EXPECT(fit(t, y, NULL, 5, 0, &tr) == 0 && tr.slope == 0 && tr.fit == 0,
	       "one time: slope %g fit %g, want 0, 0", tr.slope, tr.fit);
}

static void test_not_finite(void)
{
	double y[MAXN], t[MAXN];
	struct hd_leak tr;
	const double bad[3] = { NAN, INFINITY, -INFINITY };

	for (int k = 0; k < 3; k++)
		for (int at = 0; at < 10; at += 3) {
			for (int i = 0; i < 10; i++)
				y[i] = 1000 + 50.0 * i;
			y[at] = bad[k];
			EXPECT(fit(NULL, y, NULL, 10, 0, &tr) == 0, "a value %g at snapshot %d: no suspect",
			       bad[k], at);
			for (int i = 0; i < 10; i++) {
				y[i] = 1000 + 50.0 * i;
				t[i] = i;
			}
			t[at] = bad[k];
			EXPECT(fit(t, y, NULL, 10, 0, &tr) == 0, "a time %g at snapshot %d: no suspect", bad[k],
			       at);
		}
}

int main(void)
{
	test_lines();
	test_shapes();
	test_degenerate();
	test_not_finite();
	return UNIT_RESULT("the trend fit: lines, noise, steps, caches, flat, too few points, NaN and inf");
}
