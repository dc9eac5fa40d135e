/* report_series.c -- a session's series, what --leaks, --peak, the page's
 * chart and "peak" as a snapshot operand all measure: the session's
 * snapshots, one ordered scan of its buckets that hands every (callstack,
 * kind) series to a callback, the fit that makes a series a leak suspect,
 * and the peak.
 *
 * One scan of a session's buckets ordered by (stack, kind, snapshot) gives
 * every series in turn; each is handed on and dropped before the next
 * (memory: one series, not the whole matrix).  Before schema version 12
 * that order was the primary key's; since, the buckets are laid out by
 * snapshot and SQLite sorts them (its sorter spills to a temporary file
 * past its cache, so memory stays bounded); a keyframe's rows repeat
 * values already known, which the series takes as they are.
 *
 * It calls only report_util.c: report_load.c (hd_resolve's "peak"),
 * leaks.c and leak_funcs.c call it, never the reverse. */
#define _GNU_SOURCE
#include "leaks_int.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#define FIT_MIN 0.8
#define STEADY_MIN 0.9
#define RETAINED_MIN 0.9

/* ------------------------------------------------------------ snapshots */

/* The snapshots of session in id order; without the peak snapshot unless
 * flags has HD_SNAPS_PEAK: it is out of time order (schema.sql), no point
 * of a trend (its rows are then skipped as rows of no point of the series,
 * and the last snapshot writes every bucket they hold again); without
 * those that hold totals only (schema version 14: no call paths) unless
 * flags has HD_SNAPS_TOTALS. */
int hd_session_snaps(struct hd_source *s, int64_t session, struct session_snaps *ss, int flags)
{
	sqlite3_stmt *q;
	size_t cap = 0;
	double t0 = 0;
	int rc;
	char sql[200];
	memset(ss, 0, sizeof *ss);
	snprintf(sql, sizeof sql, "SELECT id, time FROM snapshots WHERE session_id = ?1%s%s ORDER BY id",
	         flags & HD_SNAPS_PEAK ? "" : " AND reason <> 'peak'",
	         flags & HD_SNAPS_TOTALS || !s->has_paths ? "" : " AND paths = 1");
	if (hd_prepare(s, sql, &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, session);
	while ((rc = hd_step(s, q)) > 0) {
		if (ss->n == cap) {
			cap = cap ? cap * 2 : 64;
			ss->id = hd_xrealloc(ss->id, cap * sizeof *ss->id);
			ss->t = hd_xrealloc(ss->t, cap * sizeof *ss->t);
		}
		double t = hd_col_real(s, q, 1);
		if (ss->n == 0)
			t0 = t;
		ss->id[ss->n] = sqlite3_column_int64(q, 0);
		ss->t[ss->n] = t - t0;
		ss->n++;
	}
	sqlite3_finalize(q);
	if (rc >= 0 && ss->n == 0)
		rc = hd_fail(s->err, "%s: session %" PRId64 " has no snapshots", s->path, session);
	if (rc < 0) {
		hd_session_snaps_free(ss);
		return HD_ERR;
	}
	ss->duration = ss->t[ss->n - 1] - ss->t[0];
	return HD_OK;
}

void hd_session_snaps_free(struct session_snaps *ss)
{
	free(ss->id);
	free(ss->t);
	memset(ss, 0, sizeof *ss);
}

/* Index of snapshot id in the session, or -1 (a corrupt row). */
static long snap_index(const struct session_snaps *ss, int64_t id)
{
	size_t lo = 0, hi = ss->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ss->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ss->n && ss->id[lo] == id ? (long)lo : -1;
}

int hd_scan_series(struct hd_source *s, int64_t session, const struct session_snaps *ss,
                   int kind_filter, series_fn fn, void *ctx)
{
	sqlite3_stmt *q;
	double *y, *c;
	int64_t cur_stack = 0;
	int cur_kind = -1, have = 0, rc = HD_OK;
	long last_i = -1;
	double last_y = 0, last_c = 0;

	/* Fill from the last row up to (excluding) index end. */
#define FILL_TO(end)                                                   \
	do {                                                           \
		for (long j_ = last_i < 0 ? 0 : last_i; j_ < (long)(end); j_++) { \
			y[j_] = last_i < 0 ? 0 : last_y;                   \
			c[j_] = last_i < 0 ? 0 : last_c;                   \
		}                                                      \
	} while (0)

	if (hd_prepare(s,
		"SELECT stack_id, kind, snapshot_id, live_bytes, live_count FROM buckets"
		" WHERE session_id = ?1 ORDER BY stack_id, kind, snapshot_id", &q) < 0)
		return HD_ERR;
	y = hd_xmalloc(ss->n * sizeof *y);
	c = hd_xmalloc(ss->n * sizeof *c);
	sqlite3_bind_int64(q, 1, session);
	for (;;) {
		int row = hd_step(s, q);
		if (row < 0) {
			rc = HD_ERR;
			break;
		}
		int64_t sid = row ? sqlite3_column_int64(q, 0) : 0;
		int64_t kind = row ? sqlite3_column_int64(q, 1) : 0;
		if (have && (!row || sid != cur_stack || kind != cur_kind)) {
			FILL_TO(ss->n);
			if (kind_filter == ANY_KIND || hd_kind_matches(kind_filter, cur_kind))
				rc = fn(ctx, cur_stack, cur_kind, y, c, ss);
			have = 0;
		}
		if (!row || rc < 0)
			break;
		if (kind < 0 || kind > 255) {
			rc = hd_fail(s->err, "%s: corrupt database: bucket kind %" PRId64, s->path, kind);
			break;
		}
		long i = snap_index(ss, sqlite3_column_int64(q, 2));
		if (i < 0)
			continue; /* a row of a snapshot not in the session: corrupt, skipped */
		if (!have) {
			have = 1;
			cur_stack = sid;
			cur_kind = (int)kind;
			last_i = -1;
		}
		FILL_TO(i);
		last_i = i;
		last_y = hd_col_real(s, q, 3);
		last_c = hd_col_real(s, q, 4);
		y[i] = last_y;
		c[i] = last_c;
	}
#undef FILL_TO
	sqlite3_finalize(q);
	free(y);
	free(c);
	return rc;
}

/* ------------------------------------------------------------ fit */

/* The tests of leaks.c's top comment. */
int hd_leak_fit(const double *y, const double *c, const struct session_snaps *ss, double min_bytes,
                struct hd_leak *tr)
{
	size_t n = ss->n;
	double mt = 0, my = 0, sxx = 0, sxy = 0, syy = 0, up = 0, moved = 0, max = y[0];

	for (size_t i = 0; i < n; i++) {
		mt += ss->t[i];
		my += y[i];
		if (y[i] > max)
			max = y[i];
		if (i > 0) {
			double d = y[i] - y[i - 1];
			up += d > 0 ? d : 0;
			moved += fabs(d);
		}
	}
	mt /= (double)n;
	my /= (double)n;
	for (size_t i = 0; i < n; i++) {
		sxx += (ss->t[i] - mt) * (ss->t[i] - mt);
		sxy += (ss->t[i] - mt) * (y[i] - my);
		syy += (y[i] - my) * (y[i] - my);
	}
	tr->slope = sxx > 0 ? sxy / sxx : 0;
	tr->fit = sxx > 0 && syy > 0 ? sxy * sxy / (sxx * syy) : 0;
	tr->steady = moved > 0 ? up / moved : 0;
	tr->retained = max > 0 ? y[n - 1] / max : 0;
	tr->first = y[0];
	tr->last = y[n - 1];
	tr->max = max;
	tr->last_objects = c ? c[n - 1] : 0;
	double growth = tr->slope * ss->duration;
	return tr->slope > 0 && tr->fit >= FIT_MIN && tr->steady >= STEADY_MIN &&
	       tr->retained >= RETAINED_MIN && growth >= 1 && growth >= min_bytes;
}

/* ------------------------------------------------------------ peak */

struct peak_ctx {
	double *total;             /* [n] */
};

static int add_total(void *ctx, int64_t stack_id, int kind, const double *y, const double *c,
                     const struct session_snaps *ss)
{
	struct peak_ctx *p = ctx;
	(void)stack_id, (void)kind, (void)c;
	for (size_t i = 0; i < ss->n; i++)
		p->total[i] += y[i];
	return HD_OK;
}

int hd_peak(struct hd_source *s, int64_t session, int kind, int64_t *id, double *live,
            int64_t *nsnaps)
{
	struct session_snaps ss;
	struct peak_ctx p = { 0 };
	size_t best = 0;
	int64_t marked = 0;
	int got;

	/* The session's snapshot of reason 'peak' (none: 0). */
	if ((kind == HD_KIND_ALLOC &&
	     hd_query_i64(s, "SELECT max(id) FROM snapshots WHERE session_id = ?1 AND reason = 'peak'",
	                  &marked, &got, 1, session, 0) < 0) ||
	    hd_session_snaps(s, session, &ss, HD_SNAPS_PEAK) < 0)
		return HD_ERR;
	p.total = hd_xcalloc(ss.n, sizeof *p.total);
	if (hd_scan_series(s, session, &ss, kind, add_total, &p) < 0) {
		free(p.total);
		hd_session_snaps_free(&ss);
		return HD_ERR;
	}
	for (size_t i = 1; i < ss.n; i++)
		if (p.total[i] > p.total[best])
			best = i;
	/* The attacher's own peak snapshot is the peak, whatever the
	 * estimates of the periodic ones say. */
	if (marked) {
		long i = snap_index(&ss, marked);
		if (i >= 0)
			best = (size_t)i;
	}
	*id = ss.id[best];
	*live = p.total[best];
	*nsnaps = (int64_t)ss.n;
	free(p.total);
	hd_session_snaps_free(&ss);
	return HD_OK;
}
