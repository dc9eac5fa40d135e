/* inject_log.c -- the injector's progress lines and its test hooks.
 *
 * Contract: every file of the injector logs and passes its test points
 * through here, and this file calls none of them back: it sits below
 * them all (so no helper calls into the file that drives it, inject.c).
 * inj_log writes one line on stderr when o->verbose and nothing
 * otherwise; the test hooks do nothing unless the environment asks
 * (HEAPATTACH_TEST_DIE_AT or HEAPATTACH_TEST_STOP_AT, read once by
 * inj_test_hooks_read). */
#define _GNU_SOURCE
#include "inject_int.h"
#include "util.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void inj_log(const struct injection *j, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!j->o->verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	ha_clean_line(line); /* module paths of the target */
	/* one write per line; the time since ha_inject_start, and the CPU
	 * time of this thread (on a busy machine, what it has used decides
	 * how soon the scheduler lets it run again) */
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	fprintf(stderr, "heapattach: [%.3f, cpu %.3f] %s\n", ha_now_ms() - j->t0,
	        cpu.tv_sec * 1e3 + cpu.tv_nsec / 1e6, line);
}

void inj_test_hooks_read(struct injection *j)
{
	const char *die = getenv("HEAPATTACH_TEST_DIE_AT");

	if (!die || !*die) {
		die = getenv("HEAPATTACH_TEST_STOP_AT");
		j->stop_only = die && *die;
	}
	if (die && *die) {
		const char *colon = strchr(die, ':');
		size_t len = colon ? (size_t)(colon - die) : strlen(die);
		if (len < sizeof j->die_at) {
			memcpy(j->die_at, die, len);
			j->die_after = colon ? (int)strtol(colon + 1, NULL, 10) : 1;
		}
	}
}

int inj_test_die_at(struct injection *j, const char *point)
{
	if (!j->die_at[0] || strcmp(j->die_at, point) != 0 || --j->die_after > 0)
		return 0;
	if (j->stop_only) {
		inj_log(j, "HEAPATTACH_TEST_STOP_AT=%s: stopping", point);
		/* To this thread: it takes the stop on its way out of the
		 * call, here.  Sent to the process, the signal may go to the
		 * main thread, and this one would run on (its ptrace requests
		 * with it) until the main thread gets a CPU to stop them all. */
		pthread_kill(pthread_self(), SIGSTOP);
		inj_log(j, "HEAPATTACH_TEST_STOP_AT=%s: continued", point);
		j->die_after = INT_MAX;     /* once */
		return 0;
	}
	inj_log(j, "HEAPATTACH_TEST_DIE_AT=%s: dying", point);
	kill(getpid(), SIGKILL);
	for (;;)
		pause();
}

int inj_test_die_in(struct injection *j, const char *kind, const char *what)
{
	char point[64];

	if (!j->die_at[0])
		return 0;           /* the common case: no formatting */
	snprintf(point, sizeof point, "%s@%s", kind, what);
	return inj_test_die_at(j, point);
}
