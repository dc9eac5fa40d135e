/* fork_floor.c -- the kernel's floor under a reachability scan's pause
 * (bench/reach_pause): what the raw clone alone costs a process with GIB
 * GiB of touched private anonymous memory in 4 KiB pages, as a target's
 * heap is.  Most of a scan's pause on a big heap is this copy of the page
 * tables, which no code of ours runs in.
 *
 *   bench/fork_floor GIB [ROUNDS]
 *
 * Three cases, ROUNDS (default 3) clones each after the first: "first"
 * (every page still the process's alone: the clone also write-protects
 * each), "untouched" (nothing written since the last clone: the pages
 * are already write-protected), "rewritten" (every page written since the
 * last clone, as a busy target's heap is).  Prints the time the clone
 * syscall took in the parent, in ms, and per GiB. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void touch(unsigned char *p, size_t len, unsigned char v)
{
	for (size_t i = 0; i < len; i += 4096)
		p[i] = v;
}

/* One raw clone (exit signal SIGCHLD, the child exits at once): its time
 * in the parent, ms. */
static double one_clone(void)
{
	double t0 = now_ms();
	long pid = syscall(SYS_clone, (unsigned long)SIGCHLD, 0L, 0L, 0L, 0L);
	if (pid == 0)
		_exit(0);
	double t = now_ms() - t0;
	if (pid < 0) {
		perror("fork_floor: clone");
		exit(1);
	}
	waitpid((pid_t)pid, NULL, 0);
	return t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	double gib = argc > 1 ? atof(argv[1]) : 0;
	int rounds = argc > 2 ? atoi(argv[2]) : 3;
	if (gib <= 0 || rounds < 1 || rounds > 100) {
		fprintf(stderr, "usage: fork_floor GIB [ROUNDS]\n");
		return 2;
	}
	size_t len = (size_t)(gib * 1073741824.0) & ~(size_t)4095;
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("fork_floor: mmap");
		return 1;
	}
	(void)madvise(p, len, MADV_NOHUGEPAGE); /* 4 KiB pages, as malloc's heap has */
	touch(p, len, 1);
	double first = one_clone();
	double *un = calloc((size_t)rounds, sizeof *un), *re = calloc((size_t)rounds, sizeof *re);
	if (!un || !re)
		return 1;
	for (int i = 0; i < rounds; i++)
		un[i] = one_clone();
	for (int i = 0; i < rounds; i++) {
		touch(p, len, (unsigned char)(i + 2));
		re[i] = one_clone();
	}
	qsort(un, (size_t)rounds, sizeof *un, cmp);
	qsort(re, (size_t)rounds, sizeof *re, cmp);
	printf("clone of %.2f GiB: first %.1f ms (%.1f ms/GiB), untouched median %.1f ms "
	       "(%.1f ms/GiB), rewritten median %.1f ms (%.1f ms/GiB)\n", gib, first, first / gib,
	       un[rounds / 2], un[rounds / 2] / gib, re[rounds / 2], re[rounds / 2] / gib);
	return 0;
}
