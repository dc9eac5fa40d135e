/* liveset_test -- the live sampled set and its free filter (agent/liveset.h,
 * compiled from agent/liveset.c alone), for every stride of allocation
 * addresses from 16 B to 1 MiB: powers of two and odd strides (48, 1008,
 * 4112, ...).
 *
 * The set, densely sampled: for each stride a heap of HEAP_BLOCKS blocks
 * at that stride is laid out (addresses only: the set never dereferences
 * them) from a glibc-like base, and SAMPLED of them, picked at random, are
 * inserted.  Checked:
 *   - no inserted address is ever reported absent (ha_ls_maybe and
 *     ha_ls_contains both say yes), before and after removing the others;
 *   - ha_ls_contains is exact: no block that was not inserted is in the set;
 *   - the blocks the set could not take (a full bucket) stay below
 *     FULL_MAX (SAMPLED = 2000 is a 1 GiB heap's samples at the default
 *     interval, here crowded into at most 200,000 blocks);
 *   - after every block is removed, the filter is all zero again.
 * The filter's false positives at that density are printed, not bounded:
 * 2000 samples among 200,000 blocks is an interval of a few KiB, at which
 * most pages hold a sampled block.
 *
 * The filter, sampled as at an interval: a 64 MiB heap (a glibc arena) of
 * blocks at the stride, each sampled with probability 1 - exp(-stride /
 * interval), as the countdown does.  A free of an unsampled block is a
 * false positive when a sampled one starts on its page: about 1 - exp(-4096
 * / interval) of them where blocks are smaller than a page (0.8% at 512
 * KiB, 6.1% at 64 KiB), none where each block has pages of its own.
 * Bounded by FP_MAX_512K and FP_MAX_64K (about twice that).  Measured:
 * 0.4-0.9% and 2.9-6.3% for strides under a page, 0 above.  The hashed
 * filter this one replaced (a bit per bucket of the set), on the same
 * heaps: 0.3-1.1% and 2.7-7.8% under a page, and up to 5.4% and 37% above
 * (stride 8208: the hash crowded the blocks into a few buckets' bits).
 *
 * A saturated count: more than 255 samples on one page stay counted (a
 * false positive, never a false negative) until the set is cleared.
 *
 * A concurrent part: THREADS threads insert, look up and remove disjoint
 * addresses in shared buckets and pages at once; none of them ever sees
 * its own inserted block reported absent, and everything is empty at the
 * end. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liveset.h"

#define HEAP_BLOCKS 200000u
#define SAMPLED 2000u
#define FULL_MAX 0.01
#define DENSITY_HEAP (64u << 20)
#define FP_MAX_512K 0.016
#define FP_MAX_64K 0.12
#define THREADS 4
#define PER_THREAD 20000u

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545F4914F6CDD1DULL;
}

static int filter_empty(void)
{
	for (unsigned i = 0; i < HA_LS_PAGE_SLOTS; i++)
		if (ha_ls_filter[i])
			return 0;
	return 1;
}

/* Does bucket b hold an entry?  Its ways (the agent no longer asks: the
 * filter counts per page). */
static int bucket_used(uint32_t b)
{
	const uint64_t *way = ha_ls_table + (size_t)b * HA_LS_WAYS;
	for (int i = HA_LS_FIRST_WAY; i < HA_LS_WAYS; i++)
		if (__atomic_load_n(&way[i], __ATOMIC_SEQ_CST))
			return 1;
	return 0;
}

static unsigned char sampled[HEAP_BLOCKS];
static unsigned char tracked[HEAP_BLOCKS];

/* One stride from one base.  Returns the number of failures. */
static int check_stride(uint64_t base, uint64_t stride, double *fp_out, double *full_out)
{
	int errors = 0;
	memset(sampled, 0, sizeof sampled);
	memset(tracked, 0, sizeof tracked);
	unsigned n = 0, full = 0;
	while (n < SAMPLED) {
		unsigned i = (unsigned)(next_rand() % HEAP_BLOCKS);
		if (sampled[i])
			continue;
		sampled[i] = 1;
		n++;
		const void *p = (const void *)(uintptr_t)(base + i * stride);
		if (ha_ls_insert(p))
			tracked[i] = 1;
		else
			full++;
	}
	unsigned long fp = 0, unsampled = 0;
	for (unsigned i = 0; i < HEAP_BLOCKS; i++) {
		const void *p = (const void *)(uintptr_t)(base + i * stride);
		int maybe = ha_ls_maybe(p), in = ha_ls_contains(p);
		if (tracked[i]) {
			if (!maybe || !in) {
				if (errors++ < 5)
					fprintf(stderr, "stride %llu: inserted %p reported absent (filter %d, set %d)\n",
					        (unsigned long long)stride, p, maybe, in);
			}
		} else {
			if (in) {
				if (errors++ < 5)
					fprintf(stderr, "stride %llu: %p never inserted but in the set\n",
					        (unsigned long long)stride, p);
			}
			if (!sampled[i]) {
				unsampled++;
				fp += maybe;
			}
		}
	}
	/* Remove every other tracked block, check the rest, then remove all. */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < HEAP_BLOCKS; i++) {
			if (!tracked[i] || (pass == 0 && (i & 1)))
				continue;
			const void *p = (const void *)(uintptr_t)(base + i * stride);
			if (!ha_ls_remove(p)) {
				if (errors++ < 5)
					fprintf(stderr, "stride %llu: remove %p failed\n", (unsigned long long)stride, p);
			}
			tracked[i] = 0;
		}
		for (unsigned i = 0; i < HEAP_BLOCKS; i++) {
			const void *p = (const void *)(uintptr_t)(base + i * stride);
			if (tracked[i] && (!ha_ls_maybe(p) || !ha_ls_contains(p))) {
				if (errors++ < 5)
					fprintf(stderr, "stride %llu: %p absent after removing others\n",
					        (unsigned long long)stride, p);
			}
			if (!tracked[i] && ha_ls_contains(p)) {
				if (errors++ < 5)
					fprintf(stderr, "stride %llu: %p still in the set\n", (unsigned long long)stride, p);
			}
		}
	}
	if (!filter_empty()) {
		errors++;
		fprintf(stderr, "stride %llu: filter not empty after removing everything\n",
		        (unsigned long long)stride);
	}
	*fp_out = unsampled ? (double)fp / (double)unsampled : 0;
	*full_out = (double)full / SAMPLED;
	return errors;
}

/* The filter at the density of an interval: see the top.  Returns the
 * number of failures; *fp_out the false-positive rate over the blocks not
 * sampled. */
static unsigned char dense_tracked[DENSITY_HEAP / 16];
static int check_density(uint64_t base, uint64_t stride, double interval, double *fp_out)
{
	int errors = 0;
	uint64_t blocks = DENSITY_HEAP / stride;
	double p_sample = -expm1(-(double)stride / interval);
	memset(dense_tracked, 0, sizeof dense_tracked);
	for (uint64_t i = 0; i < blocks; i++)
		if ((double)(next_rand() >> 11) * (1.0 / 9007199254740992.0) < p_sample &&
		    ha_ls_insert((const void *)(uintptr_t)(base + i * stride)))
			dense_tracked[i] = 1;
	unsigned long fp = 0, unsampled = 0;
	for (uint64_t i = 0; i < blocks; i++) {
		const void *p = (const void *)(uintptr_t)(base + i * stride);
		int maybe = ha_ls_maybe(p);
		if (dense_tracked[i]) {
			if (!maybe && errors++ < 5)
				fprintf(stderr, "stride %llu: inserted %p reported absent\n",
				        (unsigned long long)stride, p);
		} else {
			unsampled++;
			fp += maybe;
		}
	}
	for (uint64_t i = 0; i < blocks; i++)
		if (dense_tracked[i] && !ha_ls_remove((const void *)(uintptr_t)(base + i * stride)) &&
		    errors++ < 5)
			fprintf(stderr, "stride %llu: remove failed\n", (unsigned long long)stride);
	if (!filter_empty()) {
		errors++;
		fprintf(stderr, "stride %llu: filter not empty after the density check\n",
		        (unsigned long long)stride);
	}
	*fp_out = unsampled ? (double)fp / (double)unsampled : 0;
	return errors;
}

/* More live samples on one page than a count holds: all stay found. */
static int check_saturation(void)
{
	int errors = 0;
	const uint64_t page = 0x7f1c54200000ull;
	enum { N = 256 }; /* every 16-byte block of the page */
	int in[N];
	for (int i = 0; i < N; i++)
		in[i] = ha_ls_insert((const void *)(uintptr_t)(page + (uintptr_t)16 * (unsigned)i));
	for (int i = 0; i < N - 1; i++)
		if (in[i] && !ha_ls_remove((const void *)(uintptr_t)(page + (uintptr_t)16 * (unsigned)i)))
			errors++;
	if (in[N - 1] && !ha_ls_maybe((const void *)(uintptr_t)(page + (uintptr_t)16 * (N - 1)))) {
		errors++;
		fprintf(stderr, "saturation: the last live block of a full page reported absent\n");
	}
	if (in[N - 1])
		ha_ls_remove((const void *)(uintptr_t)(page + (uintptr_t)16 * (N - 1)));
	ha_ls_clear();
	if (!filter_empty()) {
		errors++;
		fprintf(stderr, "saturation: filter not empty after ha_ls_clear\n");
	}
	printf("saturation: %d blocks on one page, the last one found after the others left\n", N);
	return errors;
}

struct thr {
	unsigned id;
	int errors;
};

static void *worker(void *arg)
{
	struct thr *t = arg;
	/* Addresses of all threads interleave at 16 bytes: they share granules
	 * and so buckets, and every bucket sees concurrent inserts, removes
	 * and clears. */
	uint64_t base = 0x7f3a00000000ull;
	for (int round = 0; round < 4; round++) {
		for (unsigned i = 0; i < PER_THREAD; i++) {
			const void *p = (const void *)(uintptr_t)(base + ((uint64_t)i * THREADS + t->id) * 16);
			if (!ha_ls_insert(p))
				continue; /* a full bucket: allowed, it is not tracked */
			if (!ha_ls_maybe(p) || !ha_ls_contains(p))
				t->errors++;
			if (!ha_ls_remove(p))
				t->errors++;
		}
	}
	return NULL;
}

int main(void)
{
	if (ha_ls_setup() != 0) {
		fprintf(stderr, "ha_ls_setup failed\n");
		return 1;
	}
	uint64_t strides[64];
	int ns = 0;
	for (uint64_t s = 16; s <= (1u << 20); s <<= 1)
		strides[ns++] = s;
	const uint64_t odd[] = { 24, 48, 80, 112, 272, 1008, 4112, 8208, 65552, 131088 };
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
		strides[ns++] = odd[i];
	/* The main arena right after a PIE's data, and a thread arena (64 MiB
	 * aligned heap, header skipped). */
	const uint64_t bases[] = { 0x55d0c8a2b2a0ull, 0x7f1c54000b40ull };
	int errors = 0;
	double worst_fp = 0, worst_full = 0, worst_512k = 0, worst_64k = 0;
	printf("%-8s %-16s %8s %8s %8s %8s\n", "stride", "base", "dense", "full%", "fp512K%", "fp64K%");
	for (int i = 0; i < ns; i++) {
		for (int b = 0; b < 2; b++) {
			double fp, full, fp512, fp64;
			errors += check_stride(bases[b], strides[i], &fp, &full);
			errors += check_density(bases[b], strides[i], 512.0 * 1024, &fp512);
			errors += check_density(bases[b], strides[i], 64.0 * 1024, &fp64);
			printf("%-8llu %-16llx %8.2f %8.3f %8.2f %8.2f\n", (unsigned long long)strides[i],
			       (unsigned long long)bases[b], 100 * fp, 100 * full, 100 * fp512, 100 * fp64);
			if (fp > worst_fp)
				worst_fp = fp;
			if (full > worst_full)
				worst_full = full;
			if (fp512 > worst_512k)
				worst_512k = fp512;
			if (fp64 > worst_64k)
				worst_64k = fp64;
			if (fp512 > FP_MAX_512K || fp64 > FP_MAX_64K) {
				errors++;
				fprintf(stderr, "stride %llu: false positives %.2f%% at 512K (bound %.1f%%), %.2f%% at 64K (bound %.1f%%)\n",
				        (unsigned long long)strides[i], 100 * fp512, 100 * FP_MAX_512K,
				        100 * fp64, 100 * FP_MAX_64K);
			}
			if (full > FULL_MAX) {
				errors++;
				fprintf(stderr, "stride %llu: %.2f%% of the samples found their bucket full > %.0f%%\n",
				        (unsigned long long)strides[i], 100 * full, 100 * FULL_MAX);
			}
		}
	}
	printf("worst: false positives %.2f%% at 512K, %.2f%% at 64K (bounds %.1f%%, %.1f%%), "
	       "%.2f%% dense; full buckets %.3f%% (bound %.0f%%)\n",
	       100 * worst_512k, 100 * worst_64k, 100 * FP_MAX_512K, 100 * FP_MAX_64K, 100 * worst_fp,
	       100 * worst_full, 100 * FULL_MAX);
	errors += check_saturation();

	pthread_t th[THREADS];
	struct thr args[THREADS];
	for (unsigned i = 0; i < THREADS; i++) {
		args[i] = (struct thr){ i, 0 };
		pthread_create(&th[i], NULL, worker, &args[i]);
	}
	for (unsigned i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		errors += args[i].errors;
	}
	if (!filter_empty()) {
		errors++;
		fprintf(stderr, "concurrent: filter not empty at the end\n");
	}
	for (size_t b = 0; b < ((size_t)1 << HA_LS_BUCKET_BITS); b++)
		if (bucket_used((uint32_t)b)) {
			errors++;
			fprintf(stderr, "concurrent: bucket %zu not empty at the end\n", b);
			break;
		}
	printf("concurrent: %d threads x %u x 4 insert/look-up/remove\n", THREADS, PER_THREAD);
	if (errors) {
		fprintf(stderr, "liveset_test: %d errors\n", errors);
		return 1;
	}
	printf("liveset_test: ok\n");
	return 0;
}
