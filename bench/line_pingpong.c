/* line_pingpong -- what one cache line costs to move between two CPUs of
 * this machine, right now: two threads pinned to CPUs A and B take turns
 * incrementing a counter on one line (each waits for the other's value),
 * and the time per hand-over is printed as "line_handover_ns=N cpus=A,B".
 *
 * Why bench/run measures it: every shared line of the sampling path (the
 * ring's prod, the record lines the attacher reads) costs one of these,
 * and on a virtual machine the host may place the two vCPUs on one core's
 * siblings, one die, or two dies, from one minute to the next (measured
 * here: 40 to 200 ns).  The in-process A/B figures move with it; the
 * probe says which kind of minute a round ran in.
 *
 *   line_pingpong [ROUNDS [CPU_A CPU_B]]   (default 200000 0 1)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static struct {
	_Alignas(64) volatile uint64_t turn;
} line;
static uint64_t rounds;

struct side {
	int cpu;
	uint64_t parity;
};

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *play(void *arg)
{
	struct side *s = arg;
	if (pin(s->cpu) != 0) {
		fprintf(stderr, "line_pingpong: cannot run on CPU %d\n", s->cpu);
		exit(1);
	}
	/* Side 0 moves even values on, side 1 odd ones. */
	for (uint64_t v = s->parity; v < 2 * rounds; v += 2) {
		while (__atomic_load_n(&line.turn, __ATOMIC_ACQUIRE) != v)
			__builtin_ia32_pause();
		__atomic_store_n(&line.turn, v + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
	int a = argc > 3 ? atoi(argv[2]) : 0, b = argc > 3 ? atoi(argv[3]) : 1;
	if (rounds < 1 || rounds > 100000000) {
		fprintf(stderr, "line_pingpong: ROUNDS wants 1 to 100000000\n");
		return 1;
	}
	struct side sa = { a, 0 }, sb = { b, 1 };
	pthread_t ta, tb;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pthread_create(&ta, NULL, play, &sa) || pthread_create(&tb, NULL, play, &sb)) {
		fprintf(stderr, "line_pingpong: pthread_create failed\n");
		return 1;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("line_handover_ns=%.0f cpus=%d,%d\n", ns / (2.0 * (double)rounds), a, b);
	return 0;
}
