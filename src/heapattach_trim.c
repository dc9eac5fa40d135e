/*
 * heapattach_trim.c -- heapattach --trim (issue 41): what the allocator
 * holds free given back, and by how much RssAnon drops.
 *
 * glibc: first the prediction, read from the attacher without touching the
 * target (src/rss/mem_view.c: glibc's arenas walked, their free chunks'
 * whole resident pages and the main arena's top, what malloc_trim(0) gives
 * back; the pinned free bytes, beside live blocks, stay).  --trim=predict
 * stops there.  --trim then attaches (no profile is recorded), has the
 * agent call the target's own malloc_trim(0) on its thread (HA_MSG_TRIM;
 * glibc locks each arena while it walks it: the target's allocations wait
 * meanwhile, which is the time printed), reads RssAnon again, prints
 * predicted against measured, and detaches.
 *
 * jemalloc, tcmalloc, mimalloc (another allocator's library mapped): their
 * free memory is known only to them, so both --trim and --trim=predict
 * attach and ask the agent for the allocator's figures (ALLOC_STATS, its
 * stats functions called on the agent's thread: nothing is freed or
 * purged by that); the prediction is the trimmable term (jemalloc's dirty
 * and muzzy pages, tcmalloc's page heap free bytes; mimalloc counts none:
 * no prediction); --trim=predict detaches there, --trim has the agent
 * call the allocator's own trim (jemalloc's arena.4096.purge, tcmalloc's
 * ReleaseFreeMemory, mimalloc's mi_collect(true)).
 *
 * --live's t key does the same on the session it records (cmd_trim_now),
 * its line shown in the view.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "heapattach_int.h"
#include "mem_view.h"
#include "session.h"
#include "target.h"
#include "util.h"

/* Open the session (its socket in the target's /tmp, the ring), then
 * attach: only when the target is to be asked something. */
static int attach(const struct options *o, const struct ha_target *t, struct ha_session *s,
                  double t_start, double t_checked)
{
	static const struct cmd_python no_python;
	struct db_open_job no_db = { .done = 1 };
	uint32_t rings = 1;
	char err[512];
	if (ha_args_rings(o, &rings) ||
	    ha_session_open(s, t->pid, t->uid, t->gid, t->same_root, o->ring_bytes / rings, rings, err,
	                    sizeof err)) {
		fprintf(stderr, "heapattach: %s\n", err);
		return EXIT_REFUSED;
	}
	return cmd_attach(o, t, s, &no_python, &no_db, t_start, t_checked);
}

static const char *mib(char *buf, size_t len, double bytes)
{
	snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
	return buf;
}

/* What the agent's trim call was, by the kind TRIMMED says. */
static const char *trim_call(int kind)
{
	switch (kind) {
	case HA_ALLOC_JEMALLOC: return "jemalloc's arena.4096.purge";
	case HA_ALLOC_TCMALLOC: return "tcmalloc's ReleaseFreeMemory()";
	case HA_ALLOC_MIMALLOC: return "mimalloc's mi_collect(true)";
	default: return "malloc_trim(0)";
	}
}

/* The view now, with the allocator's figures asked of the agent when the
 * session is up (s not NULL).  0 or -1. */
static int view_now(pid_t pid, struct ha_session *s, int timeout_ms, struct ha_mem_view *v)
{
	static struct ha_mem_alloc a;
	char err[256];
	int have = s && cmd_alloc_read(s, timeout_ms, &a, err, sizeof err) == 0 &&
	           a.kind != HA_ALLOC_NONE;
	return ha_mem_view_read(pid, NULL, NULL, have ? &a : NULL, v);
}

/* The trim on a session that is up, and its line into msg: predicted,
 * asked, measured.  0, or -1 when nothing was asked. */
static int trim_session(pid_t pid, struct ha_session *s, int timeout_ms, char *msg, size_t len)
{
	struct ha_mem_view v;
	char b[6][32], err[256];
	if (view_now(pid, s, timeout_ms, &v) != 0) {
		snprintf(msg, len, "cannot read the target's memory");
		return -1;
	}
	int glibc = strcmp(v.allocator, "glibc") == 0, other = v.alloc_kind != HA_ALLOC_NONE;
	int predicts = v.alloc_kind != HA_ALLOC_MIMALLOC;
	double predicted = (double)v.terms[HA_MT_FREE_TRIMMABLE], before = (double)v.rss_anon;
	if (!glibc && !other)
		snprintf(msg, len, "no allocator whose figures or trim the agent knows (allocator "
		         "%.80s): not asked", v.allocator);
	ha_mem_view_free(&v);
	if (!glibc && !other)
		return -1;
	int result = 0, kind = 0;
	uint64_t ns = 0;
	if (ha_session_trim(s, timeout_ms, &result, &ns, &kind, err, sizeof err) != 0) {
		snprintf(msg, len, "%.200s", err);
		return -1;
	}
	if (result < 0) {
		snprintf(msg, len, "the target has no %s", trim_call(kind));
		return -1;
	}
	if (view_now(pid, s, timeout_ms, &v) != 0) {
		snprintf(msg, len, "%s ran %.1f ms; the target's memory cannot be read", trim_call(kind),
		         (double)ns / 1e6);
		return -1;
	}
	double measured = before - (double)v.rss_anon;
	char pred[96];
	if (predicts)
		snprintf(pred, sizeof pred, "predicted %s, %+.0f%%", mib(b[3], sizeof b[3], predicted),
		         predicted > 0 ? 100.0 * (measured - predicted) / predicted : 0.0);
	else
		snprintf(pred, sizeof pred, "no prediction: mimalloc counts no free bytes");
	snprintf(msg, len, "%s ran %.1f ms: RssAnon %s -> %s, gave back %s (%s); trimmable now %s, "
	         "pinned %s", trim_call(kind), (double)ns / 1e6, mib(b[0], sizeof b[0], before),
	         mib(b[1], sizeof b[1], (double)v.rss_anon), mib(b[2], sizeof b[2], measured), pred,
	         mib(b[4], sizeof b[4], (double)v.terms[HA_MT_FREE_TRIMMABLE]),
	         mib(b[5], sizeof b[5], (double)v.terms[HA_MT_FREE_PINNED]));
	ha_mem_view_free(&v);
	return 0;
}

void cmd_trim_now(pid_t pid, struct ha_session *s, int timeout_ms, char *msg, size_t len)
{
	char line[512];
	trim_session(pid, s, timeout_ms, line, sizeof line);
	snprintf(msg, len, "trim: %s", line);
}

/* Another allocator's figures, read through the agent: its prediction,
 * printed; --trim=predict detaches there. */
static int trim_other(const struct options *o, const struct ha_target *t, struct ha_session *s,
                      double t_start, double t_checked)
{
	int status = attach(o, t, s, t_start, t_checked);
	if (status)
		return status;
	struct ha_mem_view v;
	char b1[32], b2[32], b3[32], line[512];
	int timeout_ms = (int)(o->timeout_s * 1e3);
	if (view_now(t->pid, s, timeout_ms, &v) != 0) {
		fprintf(stderr, "heapattach: cannot read the memory of %d (%s)\n", (int)t->pid, t->comm);
		(void)cmd_detach(o, t, s, STOP_DURATION, 0);
		return EXIT_FAILED;
	}
	int kind = v.alloc_kind;
	const char *name = ha_mem_alloc_name(kind);
	if (!name)
		fprintf(stderr, "heapattach: %d (%s): the agent read no allocator's figures (allocator "
		        "%s)\n", (int)t->pid, t->comm, v.allocator);
	else if (kind == HA_ALLOC_MIMALLOC)
		fprintf(stderr, "heapattach: %d (%s): RssAnon %s; allocator %s: no prediction of what "
		        "%s gives back\n", (int)t->pid, t->comm, mib(b1, sizeof b1, (double)v.rss_anon),
		        v.allocator, trim_call(kind));
	else
		fprintf(stderr, "heapattach: %d (%s): RssAnon %s; %s would give back %s (%s free, "
		        "resident); %s free beside live blocks stays (pinned)\n", (int)t->pid, t->comm,
		        mib(b1, sizeof b1, (double)v.rss_anon), trim_call(kind),
		        mib(b2, sizeof b2, (double)v.terms[HA_MT_FREE_TRIMMABLE]),
		        kind == HA_ALLOC_JEMALLOC ? "dirty and muzzy pages" : "the page heap's",
		        mib(b3, sizeof b3, (double)v.terms[HA_MT_FREE_PINNED]));
	ha_mem_view_free(&v);
	if (!name || o->trim == HA_TRIM_PREDICT) {
		status = cmd_detach(o, t, s, STOP_DURATION, 0);
		return !name && o->trim != HA_TRIM_PREDICT ? EXIT_REFUSED : status;
	}
	if (trim_session(t->pid, s, timeout_ms, line, sizeof line) != 0) {
		fprintf(stderr, "heapattach: trim in %d failed: %s\n", (int)t->pid, line);
		(void)cmd_detach(o, t, s, STOP_DURATION, 0);
		return EXIT_FAILED;
	}
	fprintf(stderr, "heapattach: %s in %d (%s)\n", line, (int)t->pid, t->comm);
	return cmd_detach(o, t, s, STOP_DURATION, 0);
}

int cmd_trim(const struct options *o, const struct ha_target *t, struct ha_session *s,
             double t_start, double t_checked)
{
	struct ha_mem_view before;
	char b1[32], b2[32], b3[32], line[512];
	if (ha_mem_view_read(t->pid, NULL, NULL, NULL, &before) != 0) {
		fprintf(stderr, "heapattach: cannot read the memory of %d (%s)\n", (int)t->pid, t->comm);
		return EXIT_REFUSED;
	}
	int glibc = strcmp(before.allocator, "glibc") == 0;
	int other = !glibc && (strncmp(before.allocator, "jemalloc", 8) == 0 ||
	                       strncmp(before.allocator, "tcmalloc", 8) == 0 ||
	                       strncmp(before.allocator, "mimalloc", 8) == 0);
	double predicted = (double)before.terms[HA_MT_FREE_TRIMMABLE];
	if (glibc)
		fprintf(stderr, "heapattach: %d (%s): RssAnon %s; malloc_trim(0) would give back %s "
		        "(whole free pages and the main arena's top, in %zu arenas); %s free beside "
		        "live blocks stays (pinned)\n", (int)t->pid, t->comm,
		        mib(b1, sizeof b1, (double)before.rss_anon), mib(b2, sizeof b2, predicted),
		        before.narenas, mib(b3, sizeof b3, (double)before.terms[HA_MT_FREE_PINNED]));
	else if (!other)
		fprintf(stderr, "heapattach: %d (%s): RssAnon %s; no glibc arenas found and no other "
		        "allocator known (allocator %s): --trim asks glibc's malloc_trim, jemalloc, "
		        "tcmalloc or mimalloc only\n", (int)t->pid, t->comm,
		        mib(b1, sizeof b1, (double)before.rss_anon), before.allocator);
	ha_mem_view_free(&before);
	if (other)
		return trim_other(o, t, s, t_start, t_checked);
	if (!glibc)
		return o->trim == HA_TRIM_PREDICT ? 0 : EXIT_REFUSED;
	if (o->trim == HA_TRIM_PREDICT)
		return 0;

	int status = attach(o, t, s, t_start, t_checked);
	if (status)
		return status;
	if (trim_session(t->pid, s, (int)(o->timeout_s * 1e3), line, sizeof line) != 0) {
		fprintf(stderr, "heapattach: trim in %d failed: %s\n", (int)t->pid, line);
		(void)cmd_detach(o, t, s, STOP_DURATION, 0);
		return EXIT_FAILED;
	}
	fprintf(stderr, "heapattach: %s in %d (%s)\n", line, (int)t->pid, t->comm);
	return cmd_detach(o, t, s, STOP_DURATION, 0);
}
