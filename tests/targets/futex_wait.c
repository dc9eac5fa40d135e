/* futex_wait [N] -- N (default 4) threads wait in a raw
 * syscall(SYS_futex, &word, FUTEX_WAIT, 0) until the word changes.
 *
 * Prints "ready pid=P" and one "waiter I tid=T" line per waiter (just before
 * it first waits).  The main thread does not block in a system call (so the
 * waiters are the only threads an injector finds blocked in one): it polls
 * stdin with poll(timeout 0) and spins between polls.  At the first line (or
 * EOF) on stdin it stores 42 into the word, FUTEX_WAKEs everybody, prints
 * "main woken=K" and joins the waiters, which each print
 * "waiter I woke value=V eintr=E spurious=S errors=X".
 * Exits 0 if every waiter saw 42 and no wait failed with EINTR (no signal
 * handler is installed: an interrupted futex wait must restart
 * transparently) or another unexpected error. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAXW 64

static int word;           /* futex word: 0 = wait, 42 = go */
static int nwait;
static int ok[MAXW];

static void *waiter(void *arg)
{
	int i = (int)(long)arg;
	long eintr = 0, spurious = 0, errors = 0;
	int v;

	printf("waiter %d tid=%d\n", i, (int)syscall(SYS_gettid));
	while ((v = __atomic_load_n(&word, __ATOMIC_ACQUIRE)) == 0) {
		long r = syscall(SYS_futex, &word, FUTEX_WAIT, 0, NULL, NULL, 0);
		if (r == 0) {
			if (__atomic_load_n(&word, __ATOMIC_ACQUIRE) == 0)
				spurious++;
		} else if (errno == EINTR) {
			eintr++;
		} else if (errno != EAGAIN) {
			fprintf(stderr, "waiter %d: futex: %s (errno %d)\n", i, strerror(errno), errno);
			errors++;
		}
	}
	printf("waiter %d woke value=%d eintr=%ld spurious=%ld errors=%ld\n", i, v, eintr, spurious,
	       errors);
	ok[i] = v == 42 && eintr == 0 && errors == 0;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[MAXW];
	struct pollfd p = {.fd = 0, .events = POLLIN};
	char buf[256];
	long woken;
	int i, all = 1;

	nwait = argc > 1 ? atoi(argv[1]) : 4;
	if (nwait < 1 || nwait > MAXW) {
		fprintf(stderr, "usage: futex_wait [N<=%d]\n", MAXW);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	for (i = 0; i < nwait; i++)
		if (pthread_create(&th[i], NULL, waiter, (void *)(long)i) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	for (;;) {
		int r = poll(&p, 1, 0);
		if (r < 0 && errno != EINTR) {
			perror("poll");
			return 1;
		}
		if (r > 0)
			break;
		for (volatile int k = 0; k < 20000; k++)
			__builtin_ia32_pause();
	}
	if (read(0, buf, sizeof buf) < 0) {
		perror("read");
		return 1;
	}
	__atomic_store_n(&word, 42, __ATOMIC_RELEASE);
	woken = syscall(SYS_futex, &word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	printf("main woken=%ld\n", woken);
	for (i = 0; i < nwait; i++) {
		pthread_join(th[i], NULL);
		all &= ok[i];
	}
	printf("%s\n", all ? "all ok" : "FAILED");
	return all ? 0 : 1;
}
