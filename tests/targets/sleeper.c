/* sleeper SECS [clock] -- prints "ready pid=N", sleeps SECS (decimal allowed)
 * in one raw nanosleep system call (syscall 35) or, with "clock", one raw
 * clock_nanosleep(CLOCK_MONOTONIC) (syscall 230); measures the time with
 * CLOCK_MONOTONIC and prints "slept_ms=X".  Exits 1 if the call failed
 * (EINTR included: no handler is installed, so an interruption must restart
 * transparently) or if it slept less than asked. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	struct timespec req, rem = {0, 0};
	double secs, t0, ms;
	int use_clock;
	long r;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "clock") != 0)) {
		fprintf(stderr, "usage: sleeper SECS [clock]\n");
		return 2;
	}
	secs = strtod(argv[1], NULL);
	use_clock = argc == 3;
	req.tv_sec = (time_t)secs;
	req.tv_nsec = (long)((secs - (double)req.tv_sec) * 1e9);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	t0 = now_ms();
	if (use_clock)
		r = syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &req, &rem);
	else
		r = syscall(SYS_nanosleep, &req, &rem);
	ms = now_ms() - t0;
	if (r != 0) {
		printf("sleep failed: %s (errno %d) after %.1f ms\n", strerror(errno), errno, ms);
		return 1;
	}
	printf("slept_ms=%.1f\n", ms);
	if (ms < secs * 1e3) {
		printf("slept too short: %.1f < %.1f ms\n", ms, secs * 1e3);
		return 1;
	}
	return 0;
}
