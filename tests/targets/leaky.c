/* leaky -- the demo's patient: a "service" that leaks 4 KiB per request in
 * one function (remember_request) while the rest of its allocations are
 * freed again (handle_request).  Runs until killed or for argv[1] requests.
 * Prints "ready PID" once it runs, and the leaked total when it ends. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>

struct entry {
	struct entry *next;
	char payload[4096 - sizeof(struct entry *)];
};

static struct entry *history;
static size_t leaked_bytes;
static volatile sig_atomic_t stop;

static void on_term(int sig) { (void)sig; stop = 1; }

__attribute__((noinline)) static void remember_request(unsigned n)
{
	struct entry *e = malloc(sizeof *e); /* never freed: the leak */
	if (!e)
		abort();
	memset(e->payload, (int)(n & 0xff), sizeof e->payload);
	e->next = history;
	history = e;
	leaked_bytes += sizeof *e;
}

__attribute__((noinline)) static unsigned handle_request(unsigned n)
{
	unsigned sum = 0;
	for (int i = 0; i < 64; i++) {
		size_t sz = 16 + (size_t)((n * 131 + (unsigned)i * 17) % 2048);
		unsigned char *buf = malloc(sz);
		if (!buf)
			abort();
		memset(buf, i, sz);
		sum += buf[sz - 1];
		free(buf);
	}
	return sum;
}

int main(int argc, char **argv)
{
	unsigned long limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	unsigned sum = 0;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (unsigned long n = 0; !stop && (!limit || n < limit); n++) {
		sum += handle_request((unsigned)n);
		remember_request((unsigned)n);
		/* about 1000 requests per second: 4 MB/s of leak */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	printf("leaked %zu bytes in remember_request (checksum %u)\n", leaked_bytes, sum);
	return 0;
}
