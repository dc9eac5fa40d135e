/* malloc_bench -- a malloc-heavy workload with N threads: each does
 * malloc(random 16..1024 bytes) + write + free in a tight loop, keeping a
 * small working set of live blocks so frees are not all immediate.
 *
 *   malloc_bench THREADS SECONDS [wait]
 *
 * With "wait", it prints "ready PID" and waits for a line on stdin before
 * measuring (so a profiler can attach first).  Prints one line:
 *   ops_per_sec=N threads=T seconds=S cpu_seconds=C
 * where an op is one malloc + one free.
 *
 * MALLOC_BENCH_LEVELS=L (0..6, default 0) makes every malloc go through L
 * levels of 8 different functions chosen by the random number: 8^L distinct
 * call paths (a profile with many callstacks: bench/storage). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#define WORKING_SET 64

static volatile int stop;
static double seconds;
static int levels;

/* 8 functions per level: code picks one per level, so each code below 8^L
 * is its own call path.  The empty asm after the call keeps each frame (no
 * tail call). */
typedef void *(*via_fn)(int level, unsigned code, size_t sz);
static const via_fn vias[8];
#define VIA(i)                                                                  \
	__attribute__((noinline)) static void *via##i(int level, unsigned code, size_t sz) \
	{                                                                         \
		void *p = level == 0 ? malloc(sz) : vias[code % 8](level - 1, code / 8, sz); \
		__asm__ volatile("" ::: "memory");                                    \
		return p;                                                             \
	}
VIA(0) VIA(1) VIA(2) VIA(3) VIA(4) VIA(5) VIA(6) VIA(7)
static const via_fn vias[8] = { via0, via1, via2, via3, via4, via5, via6, via7 };

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *worker(void *arg)
{
	uint64_t *ops = arg, n = 0, x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL | 1;
	void *slot[WORKING_SET] = { 0 };
	while (!stop) {
		for (int k = 0; k < 1024; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			unsigned i = (unsigned)(x % WORKING_SET);
			free(slot[i]);
			size_t sz = 16 + (size_t)((x >> 20) % 1009);
			char *p = levels ? vias[0](levels, (unsigned)(x >> 32), sz) : malloc(sz);
			if (!p)
				abort();
			p[0] = (char)k;
			p[sz - 1] = (char)k;
			slot[i] = p;
		}
		n += 1024;
	}
	for (int i = 0; i < WORKING_SET; i++)
		free(slot[i]);
	*ops = n;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	seconds = argc > 2 ? atof(argv[2]) : 3;
	const char *lv = getenv("MALLOC_BENCH_LEVELS");
	levels = lv ? atoi(lv) : 0;
	if (levels < 0 || levels > 6) {
		fprintf(stderr, "malloc_bench: MALLOC_BENCH_LEVELS wants 0 to 6\n");
		return 2;
	}
	if (threads < 1 || threads > 256 || seconds <= 0) {
		fprintf(stderr, "usage: malloc_bench THREADS SECONDS [wait]\n");
		return 2;
	}
	if (argc > 3 && strcmp(argv[3], "wait") == 0) {
		char line[64];
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			return 1;
	}
	pthread_t th[256];
	uint64_t ops[256] = { 0 };
	double t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, &ops[i]);
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	nanosleep(&ts, NULL);
	stop = 1;
	uint64_t total = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += ops[i];
	}
	double el = now() - t0;
	/* CPU time of the whole process over the run: cost per op that other
	 * load on the machine does not blur (bench/run's cost ratio). */
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	             ru.ru_stime.tv_usec / 1e6;
	printf("ops_per_sec=%.0f threads=%d seconds=%.2f cpu_seconds=%.3f\n", total / el, threads, el,
	       cpu);
	return 0;
}
