/* plugin_host -- a C program (no libstdc++ of its own) that loads plugins
 * with dlopen on command and calls them at once:
 *   load PATH N SIZE   dlopen(PATH, RTLD_NOW), then its plugin_leak(N, SIZE)
 *                      in the same breath (no time for a periodic pass)
 *   quit               exit 0
 * Each command is acknowledged with "done CMD".  Prints "ready pid=N". */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char line[512], path[400];
	unsigned long n, size;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "load %399s %lu %lu", path, &n, &size) == 3) {
			void *h = dlopen(path, RTLD_NOW);
			if (!h) {
				printf("dlopen failed: %s\n", dlerror());
				continue;
			}
			void (*leak)(unsigned long, unsigned long) =
				(void (*)(unsigned long, unsigned long))dlsym(h, "plugin_leak");
			if (!leak) {
				printf("no plugin_leak\n");
				continue;
			}
			leak(n, size);
			printf("done %s\n", line);
		} else if (strcmp(line, "quit") == 0) {
			printf("done quit\n");
			return 0;
		}
	}
	return 0;
}
