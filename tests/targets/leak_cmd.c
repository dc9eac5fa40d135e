/* leak_cmd -- a target driven by commands on stdin, for exact profiles:
 *   leak N SIZE   allocate N blocks of SIZE bytes in leak_here() and keep them
 *   churn N       N malloc/free pairs of mixed sizes in churn_here()
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
