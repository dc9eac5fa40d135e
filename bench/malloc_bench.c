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
 * call paths (a profile with many callstacks: bench/storage).
 *
 * MALLOC_BENCH_AB=1 makes every thread alternate, every 65536 ops, between
 * calling malloc/free through the program's PLT (where heapattach's hooks
 * sit once attached) and calling libc's functions directly (pointers taken
 * with dlsym before any attach), and adds the time per op of each to the
 * output line: the hooks' cost per op measured within one run, on the same
 * threads at the same moments, so that drift of the machine's speed cancels
 * out.  (The attacher's own CPU slows both phases alike: it is not in this
 * ratio, only in ops_per_sec.) */
#define _GNU_SOURCE
#include <dlfcn.h>
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
static int ab_mode;
static void *(*volatile direct_malloc)(size_t);
static void (*volatile direct_free)(void *);

struct worker_result {
	uint64_t ops;
	uint64_t ab_ops[2];   /* [0] through the PLT, [1] direct */
	double ab_seconds[2];
};

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
	struct worker_result *res = arg;
	uint64_t n = 0, x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ULL | 1;
	void *slot[WORKING_SET] = { 0 };
	void *(*do_malloc)(size_t) = malloc;
	void (*do_free)(void *) = free;
	int direct = 0;
	double phase_start = ab_mode ? now() : 0;
	while (!stop) {
		for (int k = 0; k < 1024; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			unsigned i = (unsigned)(x % WORKING_SET);
			do_free(slot[i]);
			size_t sz = 16 + (size_t)((x >> 20) % 1009);
			char *p = levels ? vias[0](levels, (unsigned)(x >> 32), sz) : do_malloc(sz);
			if (!p)
				abort();
			p[0] = (char)k;
			p[sz - 1] = (char)k;
			slot[i] = p;
		}
		n += 1024;
		if (ab_mode && n % 65536 == 0) {
			/* End of a phase: its blocks go back the way they came. */
			for (int i = 0; i < WORKING_SET; i++) {
				do_free(slot[i]);
				slot[i] = NULL;
			}
			double t = now();
			res->ab_seconds[direct] += t - phase_start;
			res->ab_ops[direct] += 65536;
			phase_start = t;
			direct = !direct;
			do_malloc = direct ? direct_malloc : malloc;
			do_free = direct ? direct_free : free;
		}
	}
	for (int i = 0; i < WORKING_SET; i++)
		do_free(slot[i]);
	res->ops = n;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 2;
	seconds = argc > 2 ? atof(argv[2]) : 3;
	const char *lv = getenv("MALLOC_BENCH_LEVELS");
	levels = lv ? atoi(lv) : 0;
	const char *ab = getenv("MALLOC_BENCH_AB");
	ab_mode = ab && atoi(ab) > 0;
	if (ab_mode) {
		direct_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
		direct_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
		if (!direct_malloc || !direct_free || levels) {
			fprintf(stderr, "malloc_bench: MALLOC_BENCH_AB needs libc's malloc and free, and no levels\n");
			return 2;
		}
	}
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
	static struct worker_result res[256];
	double t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, &res[i]);
	struct timespec ts = { (time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9) };
	nanosleep(&ts, NULL);
	stop = 1;
	uint64_t total = 0, ab_ops[2] = { 0 };
	double ab_seconds[2] = { 0 };
	for (int i = 0; i < threads; i++) {
		pthread_join(th[i], NULL);
		total += res[i].ops;
		for (int d = 0; d < 2; d++) {
			ab_ops[d] += res[i].ab_ops[d];
			ab_seconds[d] += res[i].ab_seconds[d];
		}
	}
	double el = now() - t0;
	/* CPU time of the whole process over the run: cost per op that other
	 * load on the machine does not blur (bench/run's cost ratio). */
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	             ru.ru_stime.tv_usec / 1e6;
	printf("ops_per_sec=%.0f threads=%d seconds=%.2f cpu_seconds=%.3f", total / el, threads, el,
	       cpu);
	if (ab_mode && ab_ops[0] && ab_ops[1])
		printf(" plt_ns_per_op=%.3f direct_ns_per_op=%.3f", ab_seconds[0] * 1e9 / ab_ops[0],
		       ab_seconds[1] * 1e9 / ab_ops[1]);
	printf("\n");
	return 0;
}
