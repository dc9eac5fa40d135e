/* blocked_read -- prints "ready pid=N", then reads stdin with raw read()
 * calls until EOF and writes exactly the bytes it received to stdout.
 * A read() that fails (EINTR included: with no signal handler installed an
 * interrupted read must restart transparently) is reported on stderr and
 * makes it exit 1.  The number of read() calls goes to stderr. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	long calls = 0;

	if (!buf)
		return 1;
	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				return 1;
			buf = nb;
			cap *= 2;
		}
		n = read(0, buf + len, cap - len);
		calls++;
		if (n < 0) {
			fprintf(stderr, "blocked_read: read: %s (errno %d)\n", strerror(errno), errno);
			return 1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0)
		return 1;
	fprintf(stderr, "blocked_read: %zu bytes in %ld read calls\n", len, calls);
	free(buf);
	return 0;
}
