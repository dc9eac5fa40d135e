/* size_classes -- allocates known totals in four size classes, each from its
 * own function, freeing every block at once, so that estimated allocation
 * totals can be checked against the truth.  "go" on stdin starts one round
 * and prints "done TOTAL" (bytes per class); "quit" ends. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOTAL (128ul << 20) /* per class and round */

#define CLASS(name, size)                                                   \
	__attribute__((noinline)) static void name(void)                    \
	{                                                                   \
		for (unsigned long i = 0; i < TOTAL / (size); i++) {        \
			volatile char *p = malloc(size);                    \
			if (!p)                                             \
				abort();                                    \
			p[0] = 1;                                           \
			free((void *)p);                                    \
		}                                                           \
	}
CLASS(alloc_32b, 32)
CLASS(alloc_1k, 1024)
CLASS(alloc_32k, 32 << 10)
CLASS(alloc_1m, 1 << 20)

int main(void)
{
	char line[64];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (strncmp(line, "go", 2) == 0) {
			alloc_32b();
			alloc_1k();
			alloc_32k();
			alloc_1m();
			printf("done %lu\n", TOTAL);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	return 0;
}
