/* static_target -- statically linked; prints "ready pid=N", blocks reading
 * one line from stdin, prints "got LINE" and exits 0. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char line[4096];

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	if (!fgets(line, sizeof line, stdin)) {
		printf("eof\n");
		return 1;
	}
	line[strcspn(line, "\n")] = 0;
	printf("got %s\n", line);
	return 0;
}
