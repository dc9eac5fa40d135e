/* leaks.c -- heapdiff --leaks: measures over every snapshot of a session,
 * not just two (the scan of a session's series, the fit and the peak are
 * report_series.c's).
 *
 * A leak suspect is a series of live bytes y(t) over the session's
 * snapshots (0 before its first row) that grows steadily:
 *   slope    least-squares slope of y against time > 0 (the growth rate);
 *   fit      R^2 of that line >= 0.8 (a trend, not a step or noise);
 *   steady   increases / (increases + decreases) >= 0.9 (it rarely falls);
 *   retained last / max >= 0.9 (it did not fall back: a cache that grows
 *            and is then emptied is not a leak);
 *   and the fitted growth over the session (slope * duration) >= --min-bytes
 *   and >= 1 byte.
 * Suspects are ranked by slope.  The leak_suspects view of schema.sql
 * computes the same.
 *
 * The series leave out the snapshot of reason 'peak' (written at the end
 * of a session, just before the final one, with the time of the peak):
 * the final snapshot rewrites every bucket it has a row for, so without
 * it the session reads as if it had never been taken.  The peak itself
 * (hd_peak) and the chart's totals (hd_snap_totals) do count it.
 *
 * Functions are fitted too, flat and cumulative, and ranked with the call
 * paths (leak_funcs.c: a helper whose call paths are each noise, and the
 * rule that names it before its callers).
 *
 * hd_leak_find measures; hd_leak_report gathers what --leaks shows, which
 * report_text.c and report_json.c write (hd_write_leaks_text, _json);
 * report_html.c calls hd_leak_find for its table of suspects. */
#define _GNU_SOURCE
#include "leaks_int.h"
#include "reach_view.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ totals */

struct totals_ctx {
	double *by_kind[HA_KIND_COUNT], *objects; /* [n] each */
};

static int add_by_kind(void *ctx, int64_t stack_id, int kind, const double *y, const double *c,
                       const struct session_snaps *ss)
{
	struct totals_ctx *p = ctx;
	double *t = kind >= 0 && kind < HA_KIND_COUNT ? p->by_kind[kind] : NULL;
	int alloc = hd_kind_matches(HD_KIND_ALLOC, kind);
	(void)stack_id;
	for (size_t i = 0; t && i < ss->n; i++) {
		t[i] += y[i];
		if (alloc)
			p->objects[i] += c[i];
	}
	return HD_OK;
}

int hd_snap_totals(struct hd_source *s, int64_t session, struct hd_snap_total **out, size_t *nout)
{
	struct session_snaps ss;
	struct totals_ctx p = { 0 };
	struct hd_snap_total *v;
	sqlite3_stmt *q = NULL;
	size_t i = 0;
	int rc, has_interval = 0;

	*out = NULL;
	*nout = 0;
	if (hd_session_snaps(s, session, &ss, HD_SNAPS_PEAK | HD_SNAPS_TOTALS) < 0)
		return HD_ERR;
	for (int k = 0; k < HA_KIND_COUNT; k++)
		p.by_kind[k] = hd_xcalloc(ss.n, sizeof *p.by_kind[k]);
	p.objects = hd_xcalloc(ss.n, sizeof *p.objects);
	v = hd_xcalloc(ss.n, sizeof *v);
	rc = hd_scan_series(s, session, &ss, ANY_KIND, add_by_kind, &p);

	/* snapshots.sample_interval came with schema version 3, RssAnon and
	 * VmSwap with version 5, rss_read_time with 9. */
	/* A snapshot with totals only (schema version 14, paths 0) has no
	 * rows: its totals are its columns. */
	char sql[400];
	if (rc >= 0 && !s->has_rss)
		rc = hd_has_column(s, "snapshots", "sample_interval", &has_interval);
	snprintf(sql, sizeof sql, "SELECT id, time, reason, rss_bytes, samples, drops, %s, %s%s"
	         "  FROM snapshots WHERE session_id = ?1 ORDER BY id",
	         s->has_rss ? "sample_interval, rss_anon_bytes, swap_bytes"
	         : has_interval ? "sample_interval, 0, 0" : "0, 0, 0",
	         s->has_rss && s->has_rss_time ? "rss_read_time" : "NULL",
	         s->has_paths ? ", paths, live_heap_bytes, live_mmap_bytes, live_rss_bytes,"
	                        " live_swap_bytes, live_count" : "");
	if (rc >= 0)
		rc = hd_prepare(s, sql, &q);
	if (q)
		sqlite3_bind_int64(q, 1, session);
	while (q && (rc = hd_step(s, q)) > 0 && i < ss.n) {
		struct hd_snap_total *t = &v[i];
		char *reason;
		t->id = sqlite3_column_int64(q, 0);
		if (t->id != ss.id[i]) {
			rc = hd_fail(s->err, "%s: the snapshots of session %" PRId64 " changed while read",
			             s->path, session);
			break;
		}
		reason = hd_clean_text(sqlite3_column_text(q, 2));
		t->time = hd_col_real(s, q, 1);
		snprintf(t->reason, sizeof t->reason, "%s", reason);
		free(reason);
		t->rss = sqlite3_column_int64(q, 3);
		t->samples = sqlite3_column_int64(q, 4);
		t->drops = sqlite3_column_int64(q, 5);
		t->interval = sqlite3_column_int64(q, 6);
		t->rss_anon = sqlite3_column_int64(q, 7);
		t->swap = sqlite3_column_int64(q, 8);
		int null = sqlite3_column_type(q, 9) == SQLITE_NULL;
		t->rss_time = null ? t->time : hd_col_real(s, q, 9);
		t->rss_state = hd_rss_state_of(t->rss, null, t->rss_time);
		t->heap = p.by_kind[HA_KIND_HEAP][i];
		t->mmap = p.by_kind[HA_KIND_MMAP][i];
		t->resident = p.by_kind[HA_KIND_RSS][i];
		t->swapped = p.by_kind[HA_KIND_SWAP][i];
		t->objects = p.objects[i];
		t->paths = !s->has_paths || sqlite3_column_int(q, 10);
		if (!t->paths && sqlite3_column_type(q, 11) != SQLITE_NULL) {
			t->heap = hd_col_real(s, q, 11);
			t->mmap = hd_col_real(s, q, 12);
			t->resident = hd_col_real(s, q, 13);
			t->swapped = hd_col_real(s, q, 14);
			t->objects = hd_col_real(s, q, 15);
		}
		i++;
	}
	sqlite3_finalize(q);
	for (int k = 0; k < HA_KIND_COUNT; k++)
		free(p.by_kind[k]);
	free(p.objects);
	hd_session_snaps_free(&ss);
	if (rc < 0) {
		free(v);
		return HD_ERR;
	}
	*out = v;
	*nout = i;
	return HD_OK;
}

/* ------------------------------------------------------------ leaks */

struct leak_ctx {
	struct hd_leak *t;
	size_t n, cap;
	int keep;                  /* copy each suspect's series */
	size_t series, grew;       /* all series; non-suspects with last > first */
	double min_bytes;
};

static int measure(void *ctx, int64_t stack_id, int kind, const double *y, const double *c,
                   const struct session_snaps *ss)
{
	struct leak_ctx *L = ctx;
	size_t n = ss->n;
	struct hd_leak tr = { .stack_id = stack_id, .kind = kind };

	L->series++;
	if (!hd_leak_fit(y, c, ss, L->min_bytes, &tr)) {
		if (tr.last > tr.first)
			L->grew++;
		return HD_OK;
	}
	if (L->n == L->cap) {
		L->cap = L->cap ? L->cap * 2 : 64;
		L->t = hd_xrealloc(L->t, L->cap * sizeof *L->t);
	}
	if (L->keep) {
		tr.series = hd_xmalloc(n * sizeof *tr.series);
		memcpy(tr.series, y, n * sizeof *y);
	}
	L->t[L->n++] = tr;
	return HD_OK;
}

static int cmp_trend(const void *pa, const void *pb)
{
	const struct hd_leak *a = pa, *b = pb;
	if (a->slope != b->slope)
		return a->slope > b->slope ? -1 : 1;
	if (a->what != b->what)
		return a->what - b->what;
	if (a->func != b->func)
		return a->func < b->func ? -1 : 1;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return a->kind - b->kind;
}

int hd_leak_find(struct hd_source *s, int64_t session, const struct hd_filter *flt,
                 size_t keep_series, struct hd_leak_set *out)
{
	struct session_snaps ss;
	struct leak_ctx L = { .min_bytes = flt->min_bytes, .keep = keep_series > 0 };
	size_t k = 0;

	memset(out, 0, sizeof *out);
	if (hd_session_snaps(s, session, &ss, 0) < 0)
		return HD_ERR;
	out->nsnaps = ss.n;
	out->snap_id = ss.id;
	out->t = ss.t;
	out->duration = ss.duration;
	if (ss.n < 3)
		return HD_OK;
	if (hd_scan_series(s, session, &ss, flt->kind, measure, &L) < 0)
		goto fail;
	/* The filters apply to the displayed (folded) frames. */
	for (size_t i = 0; i < L.n; i++) {
		int folded;
		const struct hd_stack *st;
		if (hd_stack_get(s, L.t[i].stack_id, &st) < 0) {
			for (size_t j = i; j < L.n; j++)
				free(L.t[j].series);
			L.n = k;
			goto fail;
		}
		struct hd_stack v = hd_fold(st, flt->all_frames, &folded);
		if (hd_stack_matches(&v, flt))
			L.t[k++] = L.t[i];
		else
			free(L.t[i].series);
	}
	L.n = k;
	/* The functions' suspects, ranked with the call paths. */
	if (hd_leak_funcs(s, session, &ss, flt, L.keep, L.t, L.n, &L.t, &L.n, &L.cap, out) < 0)
		goto fail;
	if (L.n)
		qsort(L.t, L.n, sizeof *L.t, cmp_trend);
	for (size_t i = keep_series; i < L.n; i++) {
		free(L.t[i].series);
		L.t[i].series = NULL;
	}
	out->v = L.t;
	out->n = L.n;
	out->series = L.series;
	out->grew = L.grew;
	return HD_OK;

fail:
	/* What was found so far is the set's to free. */
	out->v = L.t;
	out->n = L.n;
	hd_leak_free(out);
	return HD_ERR;
}

void hd_leak_free(struct hd_leak_set *ls)
{
	for (size_t i = 0; i < ls->n; i++) {
		free(ls->v[i].series);
		free(ls->v[i].via);
	}
	free(ls->v);
	free(ls->snap_id);
	free(ls->t);
	hd_fn_free(&ls->fn);
	memset(ls, 0, sizeof *ls);
}

int hd_leak_report(struct hd_source *s, int64_t session, const struct hd_leak_opts *o,
                   struct hd_leak_report *out)
{
	struct hd_leak_set *ls = &out->ls;

	memset(out, 0, sizeof *out);
	out->o = o;
	out->path = s->path;
	out->session = session;
	if (hd_leak_find(s, session, o->flt, 0, ls) < 0)
		return HD_ERR;
	if (ls->nsnaps < 3) {
		hd_fail(s->err, "%s: --leaks needs at least 3 snapshots in session %" PRId64 " (it has %zu)",
		        s->path, session, ls->nsnaps);
		goto fail;
	}
	if (o->format != HD_JSON) {
		/* The text's header names the session (json does not). */
		sqlite3_stmt *q;
		int rc;
		if (hd_prepare(s, "SELECT pid, comm, start_time FROM sessions WHERE id = ?1", &q) < 0)
			goto fail;
		sqlite3_bind_int64(q, 1, session);
		rc = hd_step(s, q);
		if (rc > 0) {
			out->pid = sqlite3_column_int64(q, 0);
			out->comm = hd_clean_text(sqlite3_column_text(q, 1));
			out->start = hd_col_real(s, q, 2);
		}
		sqlite3_finalize(q);
		if (rc < 0 || s->err->set) /* (a bad start_time: hd_col_real) */
			goto fail;
	}
	out->listed = o->top > 0 && ls->n > (size_t)o->top ? (size_t)o->top : ls->n;
	out->view = hd_xcalloc(out->listed, sizeof *out->view);
	out->folded = hd_xcalloc(out->listed, sizeof *out->folded);
	for (size_t i = 0; i < out->listed; i++) {
		const struct hd_stack *st;
		if (ls->v[i].what != HD_LEAK_STACK)
			continue;
		if (hd_stack_get(s, ls->v[i].stack_id, &st) < 0)
			goto fail;
		out->view[i] = hd_fold(st, o->flt->all_frames, &out->folded[i]);
	}
	/* With a reachability scan in the session: what its latest found of
	 * each call-path suspect (unreachable: a leak; else who holds it). */
	if (hd_reach_latest(s, session, &out->reach_scan) < 0)
		goto fail;
	if (out->reach_scan) {
		out->reach = hd_xcalloc(out->listed ? out->listed : 1, sizeof *out->reach);
		for (size_t i = 0; i < out->listed; i++) {
			if (ls->v[i].what != HD_LEAK_STACK)
				continue;
			int rc = hd_reach_row_of(s, out->reach_scan, ls->v[i].stack_id, ls->v[i].kind,
			                         &out->reach[i]);
			if (rc < 0)
				goto fail;
			if (rc == 0)
				out->reach[i].stack_id = 0;
		}
	}
	return HD_OK;

fail:
	hd_leak_report_free(out);
	return HD_ERR;
}

void hd_leak_report_free(struct hd_leak_report *lr)
{
	hd_leak_free(&lr->ls);
	free(lr->comm);
	free(lr->view);
	free(lr->folded);
	for (size_t i = 0; lr->reach && i < lr->listed; i++)
		hd_reach_row_free(&lr->reach[i]);
	free(lr->reach);
	memset(lr, 0, sizeof *lr);
}

/* hd_fallen_note (report.h): heapdiff's note under a last snapshot that
 * holds less than half of the session's peak (everything the session was
 * attached for may be gone by then: an interpreter frees it all at exit). */
int hd_fallen_note(const struct hd_snap *b, int kind, int exact, char *buf, size_t len,
                   const char **note)
{
	char p1[64], p2[64];
	struct hd_snap l;
	int64_t id, nsnaps;
	double peak, now;
	*note = NULL;
	if (hd_resolve(b->src, "last", b->session_id, &l) < 0)
		return HD_ERR;
	if (l.id != b->id)
		return HD_OK;
	if (hd_peak(b->src, b->session_id, kind, &id, &peak, &nsnaps) < 0)
		return HD_ERR;
	if (id == b->id)
		return HD_OK;
	if (hd_live_total(b, kind, &now) < 0)
		return HD_ERR;
	if (!(peak > 2 * now))
		return HD_OK;
	snprintf(buf, len, "note: the estimated %s peaked at %s (snapshot %" PRId64 ") and is %s "
	         "at snapshot %" PRId64 ": heapdiff --peak shows the peak",
	         hd_kind_what(kind),
	         hd_fmt_bytes(p1, sizeof p1, peak, 0, exact), id, hd_fmt_bytes(p2, sizeof p2, now, 0, exact),
	         b->id);
	*note = buf;
	return HD_OK;
}
