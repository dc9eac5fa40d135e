/* forker -- prints "ready pid=N"; for every line read from stdin (round R =
 * 1, 2, ...) it forks:
 *   the child mallocs, writes, frees, checks whether its GOT slot of malloc
 *   is patched, prints "round R child ok" (clean GOT, exit 0) or
 *   "round R child hooked" (exit 3);
 *   the parent prints "round R parent hooked=0|1" (its own GOT, right after
 *   the fork), waits for the child and prints "round R child exit=S"
 *   (S = exit status, or "signal=N").
 * A line "vfork" instead makes it vfork: the child blocks in read() on stdin
 * (the parent's only thread cannot be stopped meanwhile: it waits for the
 * child to exec or exit) and _exits at the next line; the parent then prints
 * "vfork child exit=S".
 * At EOF it prints "bye" and exits 0.
 *
 * "hooked": in a PIE, taking malloc's address loads it from the GOT
 * (GLOB_DAT), so comparing it with dlsym(RTLD_DEFAULT, "malloc") tells
 * whether that slot currently points somewhere else. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int got_hooked(void)
{
	void *(*volatile m)(size_t) = malloc;
	void *real = dlsym(RTLD_DEFAULT, "malloc");
	return (void *)m != real;
}

static int child(int round)
{
	int i, bad = 0;

	for (i = 0; i < 1000; i++) {
		size_t n = 16 + (size_t)(i * 37 % 5000);
		unsigned char *p = malloc(n);
		if (!p)
			return 4;
		memset(p, i & 0xff, n);
		__asm__ volatile("" : : "r"(p) : "memory"); /* keep malloc/free */
		if (p[0] != (i & 0xff) || p[n - 1] != (i & 0xff))
			bad = 1;
		free(p);
	}
	if (bad) {
		printf("round %d child memory mismatch\n", round);
		return 5;
	}
	if (got_hooked()) {
		printf("round %d child hooked\n", round);
		return 3;
	}
	printf("round %d child ok\n", round);
	return 0;
}

/* vfork; the child waits for one more line on stdin, then _exits. */
__attribute__((noinline)) static int vfork_round(void)
{
	pid_t c;
	int st;

	printf("vforking\n");
	fflush(stdout);
	c = vfork();
	if (c < 0) {
		perror("vfork");
		return -1;
	}
	if (c == 0) {
		char b[256];
		ssize_t n = read(0, b, sizeof b);
		_exit(n > 0 ? 0 : 1);
	}
	if (waitpid(c, &st, 0) != c) {
		perror("waitpid");
		return -1;
	}
	printf("vfork child exit=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}

int main(void)
{
	char line[256];
	int round = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		pid_t c;
		int st;

		if (strcmp(line, "vfork\n") == 0) {
			if (vfork_round() != 0)
				return 1;
			continue;
		}
		round++;
		fflush(stdout);
		c = fork();
		if (c < 0) {
			perror("fork");
			return 1;
		}
		if (c == 0) {
			int rc = child(round);
			fflush(stdout);
			exit(rc);
		}
		printf("round %d parent hooked=%d\n", round, got_hooked());
		if (waitpid(c, &st, 0) != c) {
			perror("waitpid");
			return 1;
		}
		if (WIFEXITED(st))
			printf("round %d child exit=%d\n", round, WEXITSTATUS(st));
		else
			printf("round %d child exit=signal=%d\n", round, WTERMSIG(st));
	}
	printf("bye\n");
	return 0;
}
