/* fp_loop [ITERS] -- a tight floating-point loop whose state lives in
 * registers for its whole run: scalar double (SSE2), packed SSE2, AVX (256-bit
 * ymm, if the CPU has it) and x87 long double accumulators, with MXCSR and the
 * x87 control word set to round toward zero / upward (not the defaults), so a
 * clobbered register, upper ymm half or control word changes the printed
 * result.  The accumulators are sums and rotations (not contractive), so a
 * disturbance is never "healed" by later iterations.
 *
 * Prints "ready pid=N" at the start, then "avx=0|1" and the result
 * "result ..." with %a (exact), then exits 0.  The result depends only on
 * ITERS and the code path (avx), not on timing. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define DEFAULT_ITERS 700000000L

struct result {
	double s[16];
	long double ld;
};

static void set_modes(unsigned *old_mxcsr, unsigned short *old_cw)
{
	unsigned short cw;

	*old_mxcsr = _mm_getcsr();
	_mm_setcsr((*old_mxcsr & ~0x6000u) | 0x6000u);     /* RC = toward zero */
	__asm__ volatile("fnstcw %0" : "=m"(*old_cw));
	cw = (unsigned short)((*old_cw & ~0x0c00u) | 0x0800u); /* RC = upward */
	__asm__ volatile("fldcw %0" : : "m"(cw));
}

static void restore_modes(unsigned mxcsr, unsigned short cw)
{
	_mm_setcsr(mxcsr);
	__asm__ volatile("fldcw %0" : : "m"(cw));
}

__attribute__((target("avx"), noinline))
static void loop_avx(long n, struct result *r)
{
	__m256d x = _mm256_set_pd(4.0, 3.0, 2.0, 1.0);
	const __m256d step = _mm256_set1_pd(4.0);
	const __m256d k = _mm256_set1_pd(1.0 / 3.0e9);
	const __m256d c = _mm256_set1_pd(0.99999999995), s = _mm256_set1_pd(1.0e-5);
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	__m256d ra = _mm256_set_pd(1.0, 0.5, 0.25, 0.125), rb = _mm256_set_pd(0.1, 0.2, 0.3, 0.4);
	__m128d q = _mm_set_pd(1.0, 2.0), qa = _mm_setzero_pd();
	const __m128d qk = _mm_set_pd(1.0 / 7.0, 1.0 / 11.0);
	double d = 0.0, da = 1.0, db = 0.0;
	long double ld = 0.0L;
	long i;

	for (i = 0; i < n; i++) {
		__m256d t;

		s0 = _mm256_add_pd(s0, _mm256_mul_pd(x, k));
		s1 = _mm256_add_pd(s1, _mm256_sqrt_pd(x));
		t = _mm256_sub_pd(_mm256_mul_pd(ra, c), _mm256_mul_pd(rb, s));
		rb = _mm256_add_pd(_mm256_mul_pd(ra, s), _mm256_mul_pd(rb, c));
		ra = t;
		x = _mm256_add_pd(x, step);
		qa = _mm_add_pd(qa, _mm_mul_pd(q, qk));
		q = _mm_add_pd(q, _mm_set1_pd(1.0));
		d += (double)i * 1.0e-9;
		{
			double td = da * 0.99999999995 - db * 1.0e-5;
			db = da * 1.0e-5 + db * 0.99999999995;
			da = td;
		}
		ld += (long double)i * 1.0e-7L;
	}
	_mm256_storeu_pd(&r->s[0], s0);
	_mm256_storeu_pd(&r->s[4], s1);
	_mm256_storeu_pd(&r->s[8], ra);
	_mm256_storeu_pd(&r->s[12], rb);
	r->s[0] += d;
	r->s[1] += da;
	r->s[2] += db;
	_mm_storeu_pd(&r->s[3], _mm_add_pd(_mm_loadu_pd(&r->s[3]), qa));
	r->ld = ld;
}

__attribute__((noinline))
static void loop_sse(long n, struct result *r)
{
	__m128d x = _mm_set_pd(2.0, 1.0);
	const __m128d step = _mm_set1_pd(2.0), k = _mm_set1_pd(1.0 / 3.0e9);
	const __m128d c = _mm_set1_pd(0.99999999995), s = _mm_set1_pd(1.0e-5);
	__m128d s0 = _mm_setzero_pd(), s1 = _mm_setzero_pd();
	__m128d ra = _mm_set_pd(1.0, 0.5), rb = _mm_set_pd(0.1, 0.2);
	double d = 0.0;
	long double ld = 0.0L;
	long i;

	for (i = 0; i < n; i++) {
		__m128d t;

		s0 = _mm_add_pd(s0, _mm_mul_pd(x, k));
		s1 = _mm_add_pd(s1, _mm_sqrt_pd(x));
		t = _mm_sub_pd(_mm_mul_pd(ra, c), _mm_mul_pd(rb, s));
		rb = _mm_add_pd(_mm_mul_pd(ra, s), _mm_mul_pd(rb, c));
		ra = t;
		x = _mm_add_pd(x, step);
		d += (double)i * 1.0e-9;
		ld += (long double)i * 1.0e-7L;
	}
	_mm_storeu_pd(&r->s[0], s0);
	_mm_storeu_pd(&r->s[2], s1);
	_mm_storeu_pd(&r->s[4], ra);
	_mm_storeu_pd(&r->s[6], rb);
	r->s[8] = d;
	r->ld = ld;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : DEFAULT_ITERS;
	int avx;
	struct result r = {{0}, 0};
	unsigned mx;
	unsigned short cw;
	int i;

	if (n <= 0) {
		fprintf(stderr, "usage: fp_loop [ITERS]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	__builtin_cpu_init();
	avx = __builtin_cpu_supports("avx") != 0;
	printf("ready pid=%d\n", (int)getpid());
	set_modes(&mx, &cw);
	if (avx)
		loop_avx(n, &r);
	else
		loop_sse(n, &r);
	restore_modes(mx, cw);
	printf("avx=%d\nresult", avx);
	for (i = 0; i < 16; i++)
		printf(" %a", r.s[i]);
	printf(" %La\n", r.ld);
	return 0;
}
