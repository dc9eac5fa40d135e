/*
 * heapattach_trim.c -- heapattach --trim (issue 41): what glibc holds free
 * given back, and by how much RssAnon drops.
 *
 * First the prediction, read from the attacher without touching the target
 * (src/rss/mem_view.c: glibc's arenas walked, their free chunks' whole
 * resident pages and the main arena's top, what malloc_trim(0) gives back;
 * the pinned free bytes, beside live blocks, stay).  --trim=predict stops
 * there.  --trim then attaches (no profile is recorded), has the agent call
 * the target's own malloc_trim(0) on its thread (HA_MSG_TRIM; glibc locks
 * each arena while it walks it: the target's allocations wait meanwhile,
 * which is the time printed), reads RssAnon again, prints predicted against
 * measured, and detaches.  --live's t key does the same on the session it
 * records (cmd_trim_now), its line shown in the view.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "heapattach_int.h"
#include "mem_view.h"
#include "session.h"
#include "target.h"
#include "util.h"

static const char *mib(char *buf, size_t len, double bytes)
{
	snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
	return buf;
}

void cmd_trim_now(pid_t pid, struct ha_session *s, int timeout_ms, char *msg, size_t len)
{
	struct ha_mem_view v;
	char b[4][32], err[256];
	if (ha_mem_view_read(pid, NULL, NULL, &v) != 0) {
		snprintf(msg, len, "trim: cannot read the target's memory");
		return;
	}
	int glibc = strcmp(v.allocator, "glibc") == 0;
	double predicted = (double)v.terms[HA_MT_FREE_TRIMMABLE], before = (double)v.rss_anon;
	if (!glibc)
		snprintf(msg, len, "trim: no glibc arenas (allocator %.40s): not asked", v.allocator);
	ha_mem_view_free(&v);
	if (!glibc)
		return;
	int result = 0;
	uint64_t ns = 0;
	if (ha_session_trim(s, timeout_ms, &result, &ns, err, sizeof err) != 0) {
		snprintf(msg, len, "trim: %.200s", err);
		return;
	}
	if (result < 0) {
		snprintf(msg, len, "trim: the target has no malloc_trim");
		return;
	}
	if (ha_mem_view_read(pid, NULL, NULL, &v) != 0) {
		snprintf(msg, len, "trim: malloc_trim(0) ran %.1f ms; the target's memory cannot be read",
		         (double)ns / 1e6);
		return;
	}
	double measured = before - (double)v.rss_anon;
	snprintf(msg, len, "trim: malloc_trim(0) ran %.1f ms: RssAnon %s -> %s, gave back %s "
	         "(predicted %s, %+.0f%%)", (double)ns / 1e6, mib(b[0], sizeof b[0], before),
	         mib(b[1], sizeof b[1], (double)v.rss_anon), mib(b[2], sizeof b[2], measured),
	         mib(b[3], sizeof b[3], predicted),
	         predicted > 0 ? 100.0 * (measured - predicted) / predicted : 0.0);
	ha_mem_view_free(&v);
}

int cmd_trim(const struct options *o, const struct ha_target *t, struct ha_session *s,
             double t_start, double t_checked)
{
	struct ha_mem_view before, after;
	char b1[32], b2[32], b3[32], err[512];
	if (ha_mem_view_read(t->pid, NULL, NULL, &before) != 0) {
		fprintf(stderr, "heapattach: cannot read the memory of %d (%s)\n", (int)t->pid, t->comm);
		return EXIT_REFUSED;
	}
	double predicted = (double)before.terms[HA_MT_FREE_TRIMMABLE];
	fprintf(stderr, "heapattach: %d (%s): RssAnon %s; malloc_trim(0) would give back %s "
	        "(whole free pages and the main arena's top, in %zu arenas); %s free beside live "
	        "blocks stays (pinned)\n", (int)t->pid, t->comm, mib(b1, sizeof b1, (double)before.rss_anon),
	        mib(b2, sizeof b2, predicted), before.narenas,
	        mib(b3, sizeof b3, (double)before.terms[HA_MT_FREE_PINNED]));
	int glibc = strcmp(before.allocator, "glibc") == 0;
	uint64_t rss_before = before.rss_anon;
	if (!glibc)
		fprintf(stderr, "heapattach: no glibc arenas found in %d (allocator %s): --trim asks "
		        "glibc's malloc_trim only\n", (int)t->pid, before.allocator);
	ha_mem_view_free(&before);
	if (!glibc)
		return o->trim == HA_TRIM_PREDICT ? 0 : EXIT_REFUSED;
	if (o->trim == HA_TRIM_PREDICT)
		return 0;

	static const struct cmd_python no_python;
	struct db_open_job no_db = { .done = 1 };
	int status = cmd_attach(o, t, s, &no_python, &no_db, t_start, t_checked);
	if (status)
		return status;
	int result = 0;
	uint64_t ns = 0;
	if (ha_session_trim(s, (int)(o->timeout_s * 1e3), &result, &ns, err, sizeof err) != 0) {
		fprintf(stderr, "heapattach: malloc_trim in %d failed: %s\n", (int)t->pid, err);
		(void)cmd_detach(o, t, s, STOP_DURATION, 0);
		return EXIT_FAILED;
	}
	if (result < 0) {
		fprintf(stderr, "heapattach: %d (%s) has no malloc_trim\n", (int)t->pid, t->comm);
	} else if (ha_mem_view_read(t->pid, NULL, NULL, &after) == 0) {
		double measured = (double)rss_before - (double)after.rss_anon;
		fprintf(stderr, "heapattach: malloc_trim(0) ran %.1f ms in %d (%s): RssAnon %s -> %s, "
		        "gave back %s (predicted %s, %+.0f%%); pinned now %s\n", (double)ns / 1e6,
		        (int)t->pid, t->comm, mib(b1, sizeof b1, (double)rss_before),
		        mib(b2, sizeof b2, (double)after.rss_anon), mib(b3, sizeof b3, measured),
		        mib(err, 32, predicted),
		        predicted > 0 ? 100.0 * (measured - predicted) / predicted : 0.0,
		        mib(err + 32, 32, (double)after.terms[HA_MT_FREE_PINNED]));
		ha_mem_view_free(&after);
	}
	return cmd_detach(o, t, s, STOP_DURATION, 0);
}
