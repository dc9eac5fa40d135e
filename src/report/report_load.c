/* report_load.c -- what heapdiff reads from a database: snapshots, the
 * values of the buckets at a snapshot (callstacks: stack_cache.c).
 *
 * The value of a bucket (callstack, kind) at snapshot S is its latest row at
 * or before S in the session of S (schema/schema.sql).  Each source is read
 * in one read transaction, so a heapattach writing the file meanwhile (WAL)
 * is neither disturbed nor seen half-way.  The file may be corrupt: every
 * value read is checked (types, ranges, finite numbers) before use. */
#define _GNU_SOURCE
#include "report.h"
#include "db.h"
#include "strpool.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static void col_str(sqlite3_stmt *q, int i, char *buf, size_t len)
{
	char *t = hd_clean_text(sqlite3_column_text(q, i));
	snprintf(buf, len, "%s", t);
	free(t);
}

/* ------------------------------------------------------------ sources */

int hd_source_open(struct hd_source *s, const char *path, int index, struct hd_err *err)
{
	char why[512];
	int has_anon, has_period = 0;
	/* Blocks of 256 KiB and up always mmapped, never kept in the heap
	 * after a free: a day's profile builds and frees arrays of tens of
	 * MB one after another (rows, series, function sums), which glibc's
	 * rising threshold would otherwise leave resident (issue 39). */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	memset(s, 0, sizeof *s);
	s->path = path;
	s->index = index;
	s->err = err;
	if (ha_db_open_readonly(path, &s->db, why, sizeof why) < 0) {
		s->db = NULL;
		return hd_fail(err, "%s", why);
	}
	s->h = ha_db_handle(s->db);
	s->names = hd_xmalloc(sizeof *s->names);
	memset(s->names, 0, sizeof *s->names);
	/* One read transaction: a consistent view while heapattach writes. */
	if (sqlite3_exec(s->h, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return hd_sql_fail(s);
	if (hd_has_column(s, "snapshots", "rss_anon_bytes", &has_anon) < 0 ||
	    (has_anon && hd_has_column(s, "sessions", "rss_period", &has_period) < 0) ||
	    hd_has_column(s, "sessions", "hostname", &s->has_host) < 0 ||
	    hd_has_column(s, "snapshots", "rss_read_time", &s->has_rss_time) < 0 ||
	    hd_has_column(s, "snapshots", "base_id", &s->has_base) < 0 ||
	    hd_has_column(s, "snapshots", "paths", &s->has_paths) < 0)
		return HD_ERR;
	s->has_rss = has_anon && has_period;
	return HD_OK;
}

int hd_has_column(struct hd_source *s, const char *table, const char *column, int *has)
{
	sqlite3_stmt *q;
	int rc;
	*has = 0;
	if (hd_prepare(s, "SELECT count(*) FROM pragma_table_info(?1) WHERE name = ?2", &q) < 0)
		return HD_ERR;
	sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, column, -1, SQLITE_STATIC);
	rc = hd_step(s, q);
	if (rc > 0)
		*has = sqlite3_column_int64(q, 0) > 0;
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

void hd_source_close(struct hd_source *s)
{
	if (!s->db)
		return;
	sqlite3_finalize(s->stack_q);
	s->stack_q = NULL;
	sqlite3_exec(s->h, "COMMIT", NULL, NULL, NULL);
	ha_db_close(s->db);
	hd_stacks_free(s->stacks);
	s->stacks = NULL;
	ha_strpool_free(s->names);
	free(s->names);
	s->names = NULL;
	s->db = NULL;
}

/* ------------------------------------------------------------ snapshots */

static int snapshot_range(struct hd_source *s, int64_t *lo, int64_t *hi, int64_t *n)
{
	sqlite3_stmt *q;
	int rc;
	*lo = *hi = *n = 0;
	if (hd_prepare(s, "SELECT min(id), max(id), count(*) FROM snapshots", &q) < 0)
		return HD_ERR;
	rc = hd_step(s, q);
	if (rc > 0) {
		*lo = sqlite3_column_int64(q, 0);
		*hi = sqlite3_column_int64(q, 1);
		*n = sqlite3_column_int64(q, 2);
	}
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

int hd_session(struct hd_source *s, int64_t session, int64_t *out)
{
	int64_t lo, hi, n, x;
	int got;
	if (snapshot_range(s, &lo, &hi, &n) < 0)
		return HD_ERR;
	if (n == 0)
		return hd_fail(s->err, "%s: no snapshots in DB", s->path);
	if (session) {
		int64_t slo = 0, shi = 0;
		if (hd_query_i64(s, "SELECT id FROM sessions WHERE id = ?1", &x, &got, 1, session, 0) < 0)
			return HD_ERR;
		if (!got) {
			if (hd_query_i64(s, "SELECT min(id) FROM sessions", &slo, &got, 0, 0, 0) < 0 ||
			    hd_query_i64(s, "SELECT max(id) FROM sessions", &shi, &got, 0, 0, 0) < 0)
				return HD_ERR;
			return hd_fail(s->err, "%s: no session %" PRId64 " in DB (sessions %" PRId64 "..%" PRId64 ")",
			               s->path, session, slo, shi);
		}
		*out = session;
		return HD_OK;
	}
	if (hd_query_i64(s, "SELECT max(session_id) FROM snapshots", out, &got, 0, 0, 0) < 0)
		return HD_ERR;
	if (!got)
		return hd_fail(s->err, "%s: no snapshots in DB", s->path);
	return HD_OK;
}

enum hd_rss_state hd_rss_state_of(int64_t rss, int read_null, double read_time)
{
	/* A live process is never wholly out of RAM: an RSS of 0 is one that
	 * was not read (before version 9, what a gone target read as). */
	if (rss <= 0 || (!read_null && !(read_time > 0)))
		return HD_RSS_UNKNOWN;
	return read_null ? HD_RSS_READ : HD_RSS_LAST;
}

void hd_kernel_change(const struct hd_snap *a, const struct hd_snap *b, struct hd_kernel *k)
{
	memset(k, 0, sizeof *k);
	k->known = b->rss_state != HD_RSS_UNKNOWN && (!a || a->rss_state != HD_RSS_UNKNOWN);
	k->last = b->rss_state == HD_RSS_LAST ? b : a && a->rss_state == HD_RSS_LAST ? a : NULL;
	k->last_is_b = k->last == b;
	if (!k->known)
		return;
	k->rss = (double)b->rss - (a ? (double)a->rss : 0);
	k->rss_anon = (double)b->rss_anon - (a ? (double)a->rss_anon : 0);
	k->swap = (double)b->swap - (a ? (double)a->swap : 0);
}

/* Snapshot id of s into *out: 1, 0 (no such snapshot) or HD_ERR. */
static int load_snap(struct hd_source *s, int64_t id, struct hd_snap *out)
{
#define SNAP_SQL(rss, host, rt)                                                                \
	"SELECT s.id, s.session_id, s.time, s.rss_bytes, s.samples, s.drops, s.unwind_failures," \
	"       s.reason, e.pid, e.comm, e.sample_interval, " rss ", " host ", " rt                \
	"  FROM snapshots s LEFT JOIN sessions e ON e.id = s.session_id WHERE s.id = ?1"
#define RSS_COLS "s.rss_anon_bytes, s.swap_bytes, s.rss_samples, s.rss_lost, e.rss_period"
#define NO_RSS "0, 0, 0, 0, 0"
	/* The --rss columns came with schema version 5, the host with 6, the
	 * time of the RSS with 9 (every older file has the host). */
	static const char *const sql[2][3] = {
		{ SNAP_SQL(NO_RSS, "''", "NULL"), SNAP_SQL(NO_RSS, "e.hostname", "NULL"),
		  SNAP_SQL(NO_RSS, "e.hostname", "s.rss_read_time") },
		{ SNAP_SQL(RSS_COLS, "''", "NULL"), SNAP_SQL(RSS_COLS, "e.hostname", "NULL"),
		  SNAP_SQL(RSS_COLS, "e.hostname", "s.rss_read_time") },
	};
	sqlite3_stmt *q;
#undef NO_RSS
#undef RSS_COLS
#undef SNAP_SQL
	int rc;
	if (hd_prepare(s, sql[s->has_rss != 0][s->has_host ? 1 + (s->has_rss_time != 0) : 0], &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, id);
	rc = hd_step(s, q);
	if (rc > 0) {
		memset(out, 0, sizeof *out);
		out->src = s;
		out->id = sqlite3_column_int64(q, 0);
		out->session_id = sqlite3_column_int64(q, 1);
		out->time = hd_col_real(s, q, 2);
		out->rss = sqlite3_column_int64(q, 3);
		out->samples = sqlite3_column_int64(q, 4);
		out->drops = sqlite3_column_int64(q, 5);
		out->unwind_failures = sqlite3_column_int64(q, 6);
		col_str(q, 7, out->reason, sizeof out->reason);
		out->pid = sqlite3_column_int64(q, 8);
		col_str(q, 9, out->comm, sizeof out->comm);
		out->interval = sqlite3_column_int64(q, 10);
		out->rss_anon = sqlite3_column_int64(q, 11);
		out->swap = sqlite3_column_int64(q, 12);
		out->rss_samples = sqlite3_column_int64(q, 13);
		out->rss_lost = sqlite3_column_int64(q, 14);
		out->rss_period = sqlite3_column_int64(q, 15);
		col_str(q, 16, out->host, sizeof out->host);
		int null = sqlite3_column_type(q, 17) == SQLITE_NULL;
		out->rss_time = null ? out->time : hd_col_real(s, q, 17);
		out->rss_state = hd_rss_state_of(out->rss, null, out->rss_time);
		if (s->err->set) /* a bad time (hd_col_real) */
			rc = HD_ERR;
	}
	sqlite3_finalize(q);
	return rc;
}

/* A snapshot with totals only (schema version 14) has no call paths to
 * show: refused, naming the nearest that have them. */
static int hd_check_paths(struct hd_source *s, const struct hd_snap *x)
{
	int64_t paths = 1, before = 0, after = 0;
	int got;
	if (hd_query_i64(s, "SELECT paths FROM snapshots WHERE id = ?1", &paths, &got, 1, x->id, 0) < 0)
		return HD_ERR;
	if (paths)
		return HD_OK;
	if (hd_query_i64(s, "SELECT max(id) FROM snapshots WHERE session_id = ?1 AND id < ?2"
	                    " AND paths = 1", &before, &got, 2, x->session_id, x->id) < 0 ||
	    hd_query_i64(s, "SELECT min(id) FROM snapshots WHERE session_id = ?1 AND id > ?2"
	                    " AND paths = 1", &after, &got, 2, x->session_id, x->id) < 0)
		return HD_ERR;
	char near[96] = "";
	if (before && after)
		snprintf(near, sizeof near, ": the nearest with call paths are %" PRId64 " and %" PRId64,
		         before, after);
	else if (before || after)
		snprintf(near, sizeof near, ": the nearest with call paths is %" PRId64,
		         before ? before : after);
	return hd_fail(s->err, "%s: snapshot %" PRId64 " holds the session's totals only, no call "
	               "paths (heapattach writes them once every %d periodic snapshots; "
	               "heapattach-db(5), \"Cadence\")%s", s->path, x->id, HA_DB_PATHS_EVERY, near);
}

int hd_resolve(struct hd_source *s, const char *spec, int64_t session, struct hd_snap *out)
{
	int64_t id = 0, lo, hi, n;
	int got;
	if (hd_session(s, session, &session) < 0)
		return HD_ERR;
	if (strcmp(spec, "peak") == 0) {
		/* The peak snapshot heapattach kept, or else the highest
		 * (of heap and mmap: the allocation view). */
		double live;
		if (hd_peak(s, session, HD_KIND_ALLOC, &id, &live, &n) < 0)
			return HD_ERR;
	} else if (strcmp(spec, "first") == 0 || strcmp(spec, "last") == 0) {
		/* the last with call paths (schema version 14) */
		const char *sql = spec[0] == 'f'
			? "SELECT min(id) FROM snapshots WHERE session_id = ?1"
			: s->has_paths ? "SELECT max(id) FROM snapshots WHERE session_id = ?1 AND paths = 1"
			: "SELECT max(id) FROM snapshots WHERE session_id = ?1";
		if (hd_query_i64(s, sql, &id, &got, 1, session, 0) < 0)
			return HD_ERR;
		if (!got)
			return hd_fail(s->err, "%s: session %" PRId64 " has no snapshots", s->path, session);
	} else {
		errno = 0;
		id = strtoll(spec, NULL, 10);
	}
	got = load_snap(s, id, out);
	if (got < 0)
		return HD_ERR;
	if (!got) {
		if (snapshot_range(s, &lo, &hi, &n) < 0)
			return HD_ERR;
		return hd_fail(s->err, "%s: no snapshot %" PRId64 " in DB (snapshots %" PRId64 "..%" PRId64 ")",
		               s->path, id, lo, hi);
	}
	return s->has_paths ? hd_check_paths(s, out) : HD_OK;
}

int hd_prev_snapshot(const struct hd_snap *b, struct hd_snap *out)
{
	struct hd_source *s = b->src;
	sqlite3_stmt *q;
	int64_t id = 0;
	int rc;
#define PREV_SQL(paths)                                                                         \
	"SELECT id FROM snapshots WHERE session_id = ?1 AND id <> ?2 AND reason <> 'peak'" paths \
	"   AND (time < ?3 OR (time = ?3 AND id < ?2)) ORDER BY time DESC, id DESC LIMIT 1"
	if (hd_prepare(s, s->has_paths ? PREV_SQL(" AND paths = 1") : PREV_SQL(""), &q) < 0)
		return HD_ERR;
#undef PREV_SQL
	sqlite3_bind_int64(q, 1, b->session_id);
	sqlite3_bind_int64(q, 2, b->id);
	sqlite3_bind_double(q, 3, b->time);
	rc = hd_step(s, q);
	if (rc > 0)
		id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	if (rc < 0)
		return HD_ERR;
	return id > 0 ? load_snap(s, id, out) : 0;
}

int hd_snapshot_ids(struct hd_source *s, int64_t lo, int64_t hi, int64_t **ids, size_t *nout)
{
	sqlite3_stmt *q;
	int64_t *v = NULL;
	size_t n = 0, cap = 0;
	int rc;
	*ids = NULL;
	*nout = 0;
	if (hd_prepare(s, s->has_paths ? "SELECT id FROM snapshots WHERE id BETWEEN ?1 AND ?2"
	                                 "   AND reason <> 'attach' AND paths = 1 ORDER BY id"
	                               : "SELECT id FROM snapshots WHERE id BETWEEN ?1 AND ?2"
	                                 "   AND reason <> 'attach' ORDER BY id", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, lo);
	sqlite3_bind_int64(q, 2, hi);
	while ((rc = hd_step(s, q)) > 0) {
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			v = hd_xrealloc(v, cap * sizeof *v);
		}
		v[n++] = sqlite3_column_int64(q, 0);
	}
	sqlite3_finalize(q);
	if (rc < 0) {
		free(v);
		return HD_ERR;
	}
	*ids = v;
	*nout = n;
	return HD_OK;
}

/* ------------------------------------------------------------ values */

int hd_values_at(const struct hd_snap *snap, struct hd_value **out, size_t *nout)
{
	struct hd_source *s = snap->src;
	sqlite3_stmt *q;
	struct hd_value *v = NULL;
	size_t n = 0, cap = 0;
	int rc;

	*out = NULL;
	*nout = 0;
	/* Version 12: the latest row of each bucket from the snapshot's
	 * keyframe on (max(): SQLite takes the other columns from its row);
	 * before, one seek per bucket in its own range of the key. */
	if (hd_prepare(s, s->has_base ?
		"SELECT stack_id, kind, alloc_count, alloc_bytes, live_count, live_bytes,"
		"       max(snapshot_id)"
		"  FROM buckets WHERE session_id = ?1 AND snapshot_id <= ?2"
		"   AND snapshot_id >= (SELECT base_id FROM snapshots WHERE id = ?2)"
		" GROUP BY stack_id, kind" :
		"SELECT k.stack_id, k.kind, b.alloc_count, b.alloc_bytes, b.live_count, b.live_bytes"
		"  FROM session_stacks k"
		"  JOIN buckets b ON b.session_id = ?1 AND b.stack_id = k.stack_id AND b.kind = k.kind"
		"   AND b.snapshot_id = (SELECT max(x.snapshot_id) FROM buckets x"
		"                         WHERE x.session_id = ?1 AND x.stack_id = k.stack_id"
		"                           AND x.kind = k.kind AND x.snapshot_id <= ?2)"
		" WHERE k.session_id = ?1 AND k.first_snapshot_id <= ?2", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, snap->session_id);
	sqlite3_bind_int64(q, 2, snap->id);
	while ((rc = hd_step(s, q)) > 0) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			v = hd_xrealloc(v, cap * sizeof *v);
		}
		int64_t kind = sqlite3_column_int64(q, 1);
		if (kind < 0 || kind > 255) {
			rc = hd_fail(s->err, "%s: corrupt database: bucket kind %" PRId64, s->path, kind);
			break;
		}
		v[n++] = (struct hd_value){
			.stack_id = sqlite3_column_int64(q, 0), .kind = (int)kind,
			.alloc_count = hd_col_real(s, q, 2), .alloc_bytes = hd_col_real(s, q, 3),
			.live_count = hd_col_real(s, q, 4), .live_bytes = hd_col_real(s, q, 5),
		};
	}
	sqlite3_finalize(q);
	if (rc < 0) {
		free(v);
		return HD_ERR;
	}
	*out = v;
	*nout = n;
	return HD_OK;
}

int hd_live_total(const struct hd_snap *snap, int kind, double *total)
{
	size_t n;
	struct hd_value *v;
	*total = 0;
	if (hd_values_at(snap, &v, &n) < 0)
		return HD_ERR;
	for (size_t i = 0; i < n; i++)
		if (hd_kind_matches(kind, v[i].kind))
			*total += v[i].live_bytes;
	free(v);
	return HD_OK;
}

int hd_session_rss(struct hd_source *s, int64_t session, int64_t *out, char *why, size_t len)
{
	sqlite3_stmt *q;
	int64_t period = 0, rows = 0;
	int rc;
	*out = 0;
	if (!s->has_rss) {
		snprintf(why, len, "%s: no resident memory: the file was written before heapattach --rss "
		         "(schema version 4 or older)", s->path);
		return HD_OK;
	}
	if (hd_prepare(s, "SELECT rss_period, EXISTS (SELECT 1 FROM session_stacks"
	                  " WHERE session_id = ?1 AND kind = ?2) FROM sessions WHERE id = ?1", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, session);
	sqlite3_bind_int(q, 2, HA_KIND_RSS);
	rc = hd_step(s, q);
	if (rc > 0) {
		period = sqlite3_column_int64(q, 0);
		rows = sqlite3_column_int64(q, 1);
	}
	sqlite3_finalize(q);
	if (rc < 0)
		return HD_ERR;
	if (period <= 0)
		snprintf(why, len, "%s: no resident memory: session %" PRId64 " was recorded without "
		         "heapattach --rss", s->path, session);
	else if (!rows)
		snprintf(why, len, "%s: no resident memory: session %" PRId64 " (heapattach --rss) has "
		         "no page attributed to a call path", s->path, session);
	*out = period > 0 && rows ? period : 0;
	return HD_OK;
}
