/* memory.c -- a snapshot's memory breakdown read back (memory.h).  Every
 * value is checked as the rest of the report's are (hd_col_real): the file
 * may be corrupt. */
#define _GNU_SOURCE
#include "memory.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#define ARENAS_MAX 100000
#define PINS_MAX 1000000
#define MiB (1024.0 * 1024.0)

static int find_snapshot(const struct hd_snap *b, struct hd_memory *m)
{
	struct hd_source *s = b->src;
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT id, time, reason, memory_rss_anon_bytes, memory_allocator"
	               " FROM snapshots WHERE session_id = ?1 AND id <= ?2"
	               " AND memory_rss_anon_bytes IS NOT NULL ORDER BY id DESC LIMIT 1", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, b->session_id);
	sqlite3_bind_int64(q, 2, b->id);
	int rc = hd_step(s, q);
	if (rc == 1) {
		m->snapshot_id = sqlite3_column_int64(q, 0);
		m->time = hd_col_real(s, q, 1);
		char *reason = hd_clean_text(sqlite3_column_text(q, 2));
		snprintf(m->reason, sizeof m->reason, "%s", reason);
		free(reason);
		m->rss_anon = hd_col_real(s, q, 3);
		m->allocator = hd_clean_text(sqlite3_column_text(q, 4));
		rc = s->err->set ? HD_ERR : 1;
	}
	sqlite3_finalize(q);
	if (rc == 0)
		return hd_fail(s->err, "%s: session %" PRId64 " has no memory breakdown up to snapshot %"
		               PRId64 " (heapattach could not read the target then)", s->path,
		               b->session_id, b->id);
	return rc < 0 ? HD_ERR : HD_OK;
}

static int load_terms(struct hd_source *s, struct hd_memory *m)
{
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT term, bytes FROM memory_terms WHERE snapshot_id = ?1", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, m->snapshot_id);
	int rc;
	while ((rc = hd_step(s, q)) == 1) {
		int t = ha_mem_term_of((const char *)sqlite3_column_text(q, 0));
		double v = hd_col_real(s, q, 1);
		if (t >= 0)
			m->terms[t] = v;
	}
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

static int load_arenas(struct hd_source *s, struct hd_memory *m)
{
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT arena, is_main, heaps, complete, address, system_bytes,"
	               " in_use_bytes, free_bytes, top_bytes, resident_bytes, trimmable_bytes,"
	               " pinned_bytes FROM memory_arenas WHERE snapshot_id = ?1 ORDER BY arena", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, m->snapshot_id);
	int rc;
	size_t cap = 0;
	while (m->narenas < ARENAS_MAX && (rc = hd_step(s, q)) == 1) {
		if (m->narenas == cap)
			m->arenas = hd_xrealloc(m->arenas, (cap = cap ? cap * 2 : 16) * sizeof *m->arenas);
		struct hd_arena *a = &m->arenas[m->narenas++];
		a->arena = sqlite3_column_int64(q, 0);
		a->is_main = sqlite3_column_int64(q, 1) != 0;
		a->heaps = sqlite3_column_int64(q, 2);
		a->complete = sqlite3_column_int64(q, 3) != 0;
		double *v[] = { &a->address, &a->system, &a->in_use, &a->free, &a->top,
		                &a->resident, &a->trimmable, &a->pinned };
		for (int k = 0; k < 8; k++)
			*v[k] = hd_col_real(s, q, 4 + k);
	}
	if (m->narenas == ARENAS_MAX)
		rc = 0;
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

static int load_cpus(struct hd_source *s, struct hd_memory *m)
{
	int has;
	if (hd_has_column(s, "snapshots", "memory_cpus_online", &has) < 0)
		return HD_ERR;
	sqlite3_stmt *q;
	if (!has || hd_prepare(s, "SELECT memory_cpus_online, memory_cpus_allowed, memory_cpu_quota"
	                       " FROM snapshots WHERE id = ?1", &q) < 0)
		return has ? HD_ERR : HD_OK;
	sqlite3_bind_int64(q, 1, m->snapshot_id);
	int rc = hd_step(s, q);
	if (rc == 1) {
		double *v[] = { &m->cpus_online, &m->cpus_allowed, &m->cpu_quota };
		for (int k = 0; k < 3; k++)
			*v[k] = sqlite3_column_type(q, k) == SQLITE_NULL ? 0 : hd_col_real(s, q, k);
	}
	sqlite3_finalize(q);
	return rc < 0 || s->err->set ? HD_ERR : HD_OK;
}

/* The CPUs the target may use, in words, and MALLOC_ARENA_MAX for them
 * (at least 2); "" and 2 when unknown. */
static int cpus_words(const struct hd_memory *m, char *buf, size_t len)
{
	double use = m->cpus_allowed;
	if (m->cpu_quota > 0 && (use <= 0 || m->cpu_quota < use))
		use = m->cpu_quota;
	buf[0] = '\0';
	if (use <= 0 || m->cpus_online <= 0)
		return 2;
	int n = (int)use + ((double)(int)use < use); /* rounded up */
	snprintf(buf, len, " -- the host has %.0f online CPUs, it may use %.4g (%s)", m->cpus_online,
	         use, m->cpu_quota > 0 && m->cpu_quota <= use ? "its cgroup's CPU quota" : "its affinity");
	return n > 2 ? n : 2;
}

/* A hint only where the numbers support it. */
static void make_hint(struct hd_memory *m, int exact)
{
	double thread_free = 0, rss = m->rss_anon > 0 ? m->rss_anon : 1;
	size_t threads = 0;
	char b1[64], b2[64];
	/* glibc's thread arenas (jemalloc's are rows of the table too) */
	int glibc = strncmp(m->allocator, "glibc", 5) == 0;
	for (size_t i = 0; glibc && i < m->narenas; i++)
		if (!m->arenas[i].is_main) {
			threads++;
			thread_free += m->arenas[i].free + m->arenas[i].top;
		}
	double trim = m->terms[HA_MT_FREE_TRIMMABLE], pinned = m->terms[HA_MT_FREE_PINNED];
	char cpus[160];
	int cap = cpus_words(m, cpus, sizeof cpus);
	if (threads >= 4 && thread_free >= 64 * MiB && thread_free >= 0.2 * rss)
		snprintf(m->hint, sizeof m->hint,
		         "%zu thread arenas hold %s free (%.0f%% of RssAnon): MALLOC_ARENA_MAX=%d in the "
		         "service's environment caps the arenas (glibc makes up to 8 per CPU of the "
		         "host, not of the process's affinity or its container's CPU quota%s)", threads, hd_fmt_bytes(b1, sizeof b1, thread_free, 0, exact),
		         100 * thread_free / rss, cap, cpus);
	else if (trim >= 64 * MiB && trim >= 0.2 * rss)
		snprintf(m->hint, sizeof m->hint,
		         "%s of RssAnon (%.0f%%) is free in whole pages the allocator keeps: "
		         "%s in the process gives it back (heapattach --trim)",
		         hd_fmt_bytes(b1, sizeof b1, trim, 0, exact), 100 * trim / rss,
		         !strncmp(m->allocator, "jemalloc", 8)   ? "a purge of every arena"
		         : !strncmp(m->allocator, "tcmalloc", 8) ? "ReleaseFreeMemory()"
		                                                 : "malloc_trim(0)");
	else if (pinned >= 64 * MiB && pinned >= 0.2 * rss)
		snprintf(m->hint, sizeof m->hint,
		         "%s of RssAnon (%.0f%%) is free bytes on pages that also hold live blocks "
		         "(fragmentation): no trim gives it back; %s live beside it",
		         hd_fmt_bytes(b1, sizeof b1, pinned, 0, exact), 100 * pinned / rss,
		         hd_fmt_bytes(b2, sizeof b2, m->terms[HA_MT_LIVE_SAMPLED] +
		                      m->terms[HA_MT_LIVE_BEFORE], 0, exact));
}

int hd_memory_load(const struct hd_snap *b, int exact, struct hd_memory *m)
{
	struct hd_source *s = b->src;
	int has;
	memset(m, 0, sizeof *m);
	m->asked_id = b->id;
	if (hd_has_column(s, "snapshots", "memory_rss_anon_bytes", &has) < 0)
		return HD_ERR;
	if (!has)
		return hd_fail(s->err, "%s: no memory breakdown: the file was written before schema "
		               "version 10", s->path);
	if (find_snapshot(b, m) < 0 || load_terms(s, m) < 0 || load_arenas(s, m) < 0 ||
	    load_cpus(s, m) < 0)
		return HD_ERR;
	make_hint(m, exact);
	return HD_OK;
}

static int by_pinned(const void *a, const void *b)
{
	const struct hd_pin_row *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

int hd_memory_load_pins(struct hd_source *s, struct hd_memory *m)
{
	int has, rc;
	if (hd_has_column(s, "memory_pinning", "pinned_bytes", &has) < 0)
		return HD_ERR;
	if (!has)
		return hd_fail(s->err, "%s: no pinned bytes by call path: the file was written before "
		               "schema version 13", s->path);
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT stack_id, pinned_bytes, blocks FROM memory_pinning"
	               " WHERE snapshot_id = ?1", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, m->snapshot_id);
	m->by_stack = 1;
	size_t cap = 0;
	while (m->npins < PINS_MAX && (rc = hd_step(s, q)) == 1) {
		if (m->npins == cap)
			m->pins = hd_xrealloc(m->pins, (cap = cap ? cap * 2 : 64) * sizeof *m->pins);
		struct hd_pin_row *r = memset(&m->pins[m->npins++], 0, sizeof *m->pins);
		r->stack_id = sqlite3_column_int64(q, 0);
		r->bytes = hd_col_real(s, q, 1);
		r->blocks = hd_col_real(s, q, 2);
		m->pins_charged += r->bytes;
	}
	if (m->npins == PINS_MAX)
		rc = 0;
	sqlite3_finalize(q);
	if (rc < 0)
		return HD_ERR;
	if (m->npins)
		qsort(m->pins, m->npins, sizeof *m->pins, by_pinned);
	for (size_t i = 0; i < m->npins; i++) {
		const struct hd_stack *st;
		if (hd_stack_get(s, m->pins[i].stack_id, &st) < 0)
			return HD_ERR;
		m->pins[i].st = hd_fold(st, 0, &m->pins[i].folded);
	}
	return HD_OK;
}

void hd_memory_free(struct hd_memory *m)
{
	free(m->allocator);
	free(m->arenas);
	free(m->pins);
	memset(m, 0, sizeof *m);
}

int hd_memory_series(struct hd_source *s, int64_t session, double **rows, size_t *n)
{
	int has, rc;
	sqlite3_stmt *q;
	size_t cap = 0;
	*rows = NULL;
	*n = 0;
	if (hd_has_column(s, "snapshots", "memory_rss_anon_bytes", &has) < 0)
		return HD_ERR;
	if (!has)
		return HD_OK;
	if (hd_prepare(s, "SELECT s.id, s.time, s.memory_rss_anon_bytes, m.term, m.bytes"
	               " FROM snapshots s JOIN memory_terms m ON m.snapshot_id = s.id"
	               " WHERE s.session_id = ?1 AND s.memory_rss_anon_bytes IS NOT NULL"
	               " ORDER BY s.time, s.id", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, session);
	int64_t last = -1;
	while ((rc = hd_step(s, q)) == 1 && *n < 100000) {
		int64_t id = sqlite3_column_int64(q, 0);
		if (id != last) {
			if (*n == cap)
				*rows = hd_xrealloc(*rows, (cap = cap ? cap * 2 : 64) * HD_MEM_COLS * sizeof **rows);
			double *r = *rows + *n * HD_MEM_COLS;
			memset(r, 0, HD_MEM_COLS * sizeof *r);
			r[0] = hd_col_real(s, q, 1);
			r[1] = hd_col_real(s, q, 2);
			(*n)++;
			last = id;
		}
		int t = ha_mem_term_of((const char *)sqlite3_column_text(q, 3));
		if (t >= 0)
			(*rows)[(*n - 1) * HD_MEM_COLS + 2 + t] = hd_col_real(s, q, 4);
	}
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}
