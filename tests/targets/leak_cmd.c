/* leak_cmd -- a target driven by commands on stdin, for exact profiles:
 *   leak N SIZE   allocate N blocks of SIZE bytes in leak_here() and keep them
 *   churn N       N malloc/free pairs of mixed sizes in churn_here()
 *   paths N SIZE  keep N, 2N, 3N and 4N blocks of SIZE bytes allocated in
 *                 path_a() .. path_d(), interleaved: four call paths of the
 *                 same shape (the same stack length at malloc), which only
 *                 their return addresses tell apart (t_stack_refs)
 *   quit          exit 0
 * Each command is acknowledged with "done CMD" once finished.  Prints
 * "ready pid=N" first. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void **kept;
static size_t nkept, capkept;

__attribute__((noinline)) static void leak_here(size_t n, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		char *p = malloc(size);
		if (!p)
			abort();
		p[0] = (char)i; /* touch it, as a program would */
		if (nkept == capkept) {
			capkept = capkept ? capkept * 2 : 1024;
			kept = realloc(kept, capkept * sizeof *kept);
			if (!kept)
				abort();
		}
		kept[nkept++] = p;
	}
}

static void keep(char *p)
{
	if (!p)
		abort();
	if (nkept == capkept) {
		capkept = capkept ? capkept * 2 : 1024;
		kept = realloc(kept, capkept * sizeof *kept);
		if (!kept)
			abort();
	}
	kept[nkept++] = p;
}

/* One block each; the stores differ so that the compiler keeps four
 * functions (identical ones would be folded into one). */
__attribute__((noinline)) static void path_a(size_t size)
{
	char *p = malloc(size);
	keep(p);
	p[0] = 'a';
}
__attribute__((noinline)) static void path_b(size_t size)
{
	char *p = malloc(size);
	keep(p);
	p[0] = 'b';
}
__attribute__((noinline)) static void path_c(size_t size)
{
	char *p = malloc(size);
	keep(p);
	p[0] = 'c';
}
__attribute__((noinline)) static void path_d(size_t size)
{
	char *p = malloc(size);
	keep(p);
	p[0] = 'd';
}

__attribute__((noinline)) static void paths_here(size_t n, size_t size)
{
	/* Room for every block first: no growth of kept inside the paths. */
	if (capkept < nkept + 10 * n) {
		capkept = nkept + 10 * n;
		kept = realloc(kept, capkept * sizeof *kept);
		if (!kept)
			abort();
	}
	for (size_t j = 0; j < 4 * n; j++) {
		if (j < n)
			path_a(size);
		if (j < 2 * n)
			path_b(size);
		if (j < 3 * n)
			path_c(size);
		path_d(size);
	}
}

__attribute__((noinline)) static unsigned churn_here(size_t n)
{
	unsigned sum = 0;
	for (size_t i = 0; i < n; i++) {
		size_t sz = 8 + (i * 7919) % 4000;
		unsigned char *p = malloc(sz);
		if (!p)
			abort();
		p[sz - 1] = (unsigned char)i;
		sum += p[sz - 1];
		free(p);
	}
	return sum;
}

int main(void)
{
	char line[256];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		unsigned long a = 0, b = 0;
		if (sscanf(line, "leak %lu %lu", &a, &b) == 2) {
			leak_here(a, b);
			printf("done leak %lu %lu\n", a, b);
		} else if (sscanf(line, "paths %lu %lu", &a, &b) == 2) {
			paths_here(a, b);
			printf("done paths %lu %lu\n", a, b);
		} else if (sscanf(line, "churn %lu", &a) == 1) {
			unsigned s = churn_here(a);
			printf("done churn %lu (%u)\n", a, s);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	printf("kept %zu blocks\n", nkept);
	return 0;
}
