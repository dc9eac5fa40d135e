/*
 * heapattach_alloc.c -- another allocator's figures (jemalloc, tcmalloc,
 * mimalloc) at each snapshot: the collector thread asks the agent
 * (ALLOC_ASK; the agent calls the allocator's stats functions on its own
 * thread, agent/alloc_stats.c) and hands the checked figures to the memory
 * view (src/rss/mem_alloc.h), which maps them onto RssAnon's terms.
 *
 * The session's socket is shared with the main thread (trim, detach), one
 * exchange at a time (session.h, io_mu).  An answer that does not come
 * within ASK_MS is dropped when it comes late; the agent of a glibc
 * target answers NONE (glibc's arenas are read from outside): then, or
 * after FAILS_MAX failures in a row, the session asks no more.  The final
 * snapshot is taken after the detach, when the agent is gone: the main
 * thread asks once just before it (cmd_alloc_last), and that answer, if
 * recent, stands for it.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "heapattach_int.h"
#include "mem_alloc.h"
#include "session.h"
#include "util.h"

#define ASK_MS 1000
#define FAILS_MAX 3
#define LAST_VALID_MS 5000.0

int cmd_alloc_read(struct ha_session *s, int timeout_ms, struct ha_mem_alloc *out, char *err,
                   size_t errlen)
{
	static __thread struct ha_msg parts[HA_ALLOC_PARTS_MAX];
	size_t n = 0;
	if (ha_session_alloc_stats(s, timeout_ms, parts, &n, err, errlen) != 0)
		return -1;
	char why[96];
	if (ha_mem_alloc_take(out, parts, n, why, sizeof why) != 0) {
		snprintf(err, errlen, "the allocator's figures from the agent refused: %s", why);
		return -1;
	}
	return 0;
}

void cmd_alloc_init(struct cmd_alloc *a, struct ha_session *s, int verbose)
{
	memset(a, 0, sizeof *a);
	a->s = s;
	a->verbose = verbose;
	pthread_mutex_init(&a->mu, NULL);
}

/* Ask now; keep the answer as the last one.  0 with *out, or -1. */
static int ask(struct cmd_alloc *a, struct ha_mem_alloc *out)
{
	char err[256];
	if (__atomic_load_n(&a->off, __ATOMIC_RELAXED))
		return -1;
	if (cmd_alloc_read(a->s, ASK_MS, out, err, sizeof err) != 0) {
		if (++a->fails >= FAILS_MAX) {
			__atomic_store_n(&a->off, 1, __ATOMIC_RELAXED);
			if (a->verbose)
				fprintf(stderr, "heapattach: the allocator's figures: %s; not asked again\n",
				        err);
		}
		return -1;
	}
	a->fails = 0;
	if (out->kind == HA_ALLOC_NONE) {
		__atomic_store_n(&a->off, 1, __ATOMIC_RELAXED);
		return -1;
	}
	pthread_mutex_lock(&a->mu);
	a->last = *out;
	a->t_last = ha_now_ms();
	pthread_mutex_unlock(&a->mu);
	return 0;
}

int cmd_alloc_hook(void *ctx, struct ha_mem_alloc *out)
{
	struct cmd_alloc *a = ctx;
	if (!__atomic_load_n(&a->detached, __ATOMIC_ACQUIRE))
		return ask(a, out);
	int r = -1;
	pthread_mutex_lock(&a->mu);
	if (a->t_last > 0 && ha_now_ms() - a->t_last <= LAST_VALID_MS) {
		*out = a->last;
		r = 0;
	}
	pthread_mutex_unlock(&a->mu);
	return r;
}

void cmd_alloc_last(struct cmd_alloc *a)
{
	static struct ha_mem_alloc out;
	if (!__atomic_load_n(&a->detached, __ATOMIC_ACQUIRE)) {
		a->fails = 0;
		(void)ask(a, &out);
	}
	__atomic_store_n(&a->detached, 1, __ATOMIC_RELEASE);
}
