/* liveset_check -- the live sampled set and its free filter (agent/liveset.h,
 * compiled from agent/liveset.c alone), for every stride of allocation
 * addresses from 16 B to 1 MiB: powers of two and odd strides (48, 1008,
 * 4112, ...).
 *
 * For each stride a heap of HEAP_BLOCKS blocks at that stride is laid out
 * (addresses only: the set never dereferences them) from a glibc-like base,
 * and SAMPLED of them, picked at random, are inserted, as the sampler does.
 * Checked:
 *   - no inserted address is ever reported absent (ha_ls_maybe and
 *     ha_ls_contains both say yes), before and after removing the others;
 *   - ha_ls_contains is exact: no block that was not inserted is in the set;
 *   - the false-positive rate of the filter over the blocks not sampled
 *     (what a free of an unsampled block pays for with a look at the set)
 *     stays below FP_MAX, and the blocks the set could not take (a full
 *     bucket) stay below FULL_MAX;
 *   - after every block is removed, the filter is all zero again.
 * A concurrent part: THREADS threads insert, look up and remove disjoint
 * addresses in shared buckets at once; none of them ever sees its own
 * inserted block reported absent, and everything is empty at the end.
 *
 * Why the bounds: SAMPLED = 2000 live samples is a 1 GiB heap at the
 * default 512 KiB interval.  Blocks closer than 64 bytes share a granule,
 * so with stride s a sampled block drags 64/s neighbours with it; spread
 * over a segment's 16384 buckets that is a false-positive rate of about
 * 1 - exp(-2000/16384) ~ 11.5% where the heap fits in one 64 MiB segment,
 * less where it spans several.  A stride the hash spreads badly crowds the
 * samples into fewer buckets: fewer bits set (fewer false positives) but
 * fuller buckets.  Measured (printed by this program, see the log of
 * t_liveset): 10.6-11.1% for strides up to 256 B, 15.9% at worst (1008 B,
 * malloc(1000)), 1-6% for the larger strides; no sample found its bucket
 * full.  FP_MAX = 30% is about twice the worst; FULL_MAX = 1%. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "liveset.h"

#define HEAP_BLOCKS 200000u
#define SAMPLED 2000u
#define FP_MAX 0.30
#define FULL_MAX 0.01
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
	for (unsigned i = 0; i < HA_LS_FILTER_WORDS; i++)
		if ((uint32_t)ha_ls_filter[i])
			return 0;
	return 1;
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
	double worst_fp = 0, worst_full = 0;
	printf("%-8s %-16s %8s %8s\n", "stride", "base", "fp%", "full%");
	for (int i = 0; i < ns; i++) {
		for (int b = 0; b < 2; b++) {
			double fp, full;
			errors += check_stride(bases[b], strides[i], &fp, &full);
			printf("%-8llu %-16llx %8.2f %8.3f\n", (unsigned long long)strides[i],
			       (unsigned long long)bases[b], 100 * fp, 100 * full);
			if (fp > worst_fp)
				worst_fp = fp;
			if (full > worst_full)
				worst_full = full;
			if (fp > FP_MAX) {
				errors++;
				fprintf(stderr, "stride %llu: false positives %.2f%% > %.0f%%\n",
				        (unsigned long long)strides[i], 100 * fp, 100 * FP_MAX);
			}
			if (full > FULL_MAX) {
				errors++;
				fprintf(stderr, "stride %llu: %.2f%% of the samples found their bucket full > %.0f%%\n",
				        (unsigned long long)strides[i], 100 * full, 100 * FULL_MAX);
			}
		}
	}
	printf("worst: false positives %.2f%%, full buckets %.3f%% (bounds %.0f%%, %.0f%%)\n",
	       100 * worst_fp, 100 * worst_full, 100 * FP_MAX, 100 * FULL_MAX);

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
		if (ha_ls_bucket_used((uint32_t)b)) {
			errors++;
			fprintf(stderr, "concurrent: bucket %zu not empty at the end\n", b);
			break;
		}
	printf("concurrent: %u threads x %u x 4 insert/look-up/remove\n", THREADS, PER_THREAD);
	if (errors) {
		fprintf(stderr, "liveset_check: %d errors\n", errors);
		return 1;
	}
	printf("liveset_check: ok\n");
	return 0;
}
