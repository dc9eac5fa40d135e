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

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ totals */

struct totals_ctx {
	double *by_kind[HA_KIND_COUNT], *objects; /* [n] each */
};

static void add_by_kind(void *ctx, int64_t stack_id, int kind, const double *y, const double *c,
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
}

struct hd_snap_total *hd_snap_totals(struct hd_source *s, int64_t session, size_t *nout)
{
	struct session_snaps ss;
	struct totals_ctx p = { 0 };
	struct hd_snap_total *v;
	sqlite3_stmt *q;
	size_t i = 0;

	hd_session_snaps(s, session, &ss, 1);
	for (int k = 0; k < HA_KIND_COUNT; k++)
		p.by_kind[k] = hd_xcalloc(ss.n, sizeof *p.by_kind[k]);
	p.objects = hd_xcalloc(ss.n, sizeof *p.objects);
	v = hd_xcalloc(ss.n, sizeof *v);
	hd_scan_series(s, session, &ss, ANY_KIND, add_by_kind, &p);

	/* snapshots.sample_interval came with schema version 3, RssAnon and
	 * VmSwap with version 5. */
#define TOTALS_SQL(cols) \
	"SELECT id, time, reason, rss_bytes, samples, drops, " cols \
	"  FROM snapshots WHERE session_id = ?1 ORDER BY id"
	q = hd_prepare(s, s->has_rss ? TOTALS_SQL("sample_interval, rss_anon_bytes, swap_bytes")
	                  : hd_has_column(s, "snapshots", "sample_interval")
	                  ? TOTALS_SQL("sample_interval, 0, 0") : TOTALS_SQL("0, 0, 0"));
#undef TOTALS_SQL
	sqlite3_bind_int64(q, 1, session);
	while (hd_step(s, q) && i < ss.n) {
		struct hd_snap_total *t = &v[i];
		char *reason = hd_clean_text(sqlite3_column_text(q, 2));
		t->id = sqlite3_column_int64(q, 0);
		if (t->id != ss.id[i])
			hd_die("%s: the snapshots of session %" PRId64 " changed while read", s->path, session);
		t->time = hd_col_real(s, q, 1);
		snprintf(t->reason, sizeof t->reason, "%s", reason);
		free(reason);
		t->rss = sqlite3_column_int64(q, 3);
		t->samples = sqlite3_column_int64(q, 4);
		t->drops = sqlite3_column_int64(q, 5);
		t->interval = sqlite3_column_int64(q, 6);
		t->rss_anon = sqlite3_column_int64(q, 7);
		t->swap = sqlite3_column_int64(q, 8);
		t->heap = p.by_kind[HA_KIND_HEAP][i];
		t->mmap = p.by_kind[HA_KIND_MMAP][i];
		t->resident = p.by_kind[HA_KIND_RSS][i];
		t->swapped = p.by_kind[HA_KIND_SWAP][i];
		t->objects = p.objects[i];
		i++;
	}
	sqlite3_finalize(q);
	for (int k = 0; k < HA_KIND_COUNT; k++)
		free(p.by_kind[k]);
	free(p.objects);
	*nout = i;
	hd_session_snaps_free(&ss);
	return v;
}

/* ------------------------------------------------------------ leaks */

struct leak_ctx {
	struct hd_leak *t;
	size_t n, cap;
	int keep;                  /* copy each suspect's series */
	size_t series, grew;       /* all series; non-suspects with last > first */
	double min_bytes;
};

static void measure(void *ctx, int64_t stack_id, int kind, const double *y, const double *c,
                    const struct session_snaps *ss)
{
	struct leak_ctx *L = ctx;
	size_t n = ss->n;
	struct hd_leak tr = { .stack_id = stack_id, .kind = kind };

	L->series++;
	if (!hd_leak_fit(y, c, ss, L->min_bytes, &tr)) {
		if (tr.last > tr.first)
			L->grew++;
		return;
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

void hd_leak_find(struct hd_source *s, int64_t session, const struct hd_filter *flt,
                  size_t keep_series, struct hd_leak_set *out)
{
	struct session_snaps ss;
	struct leak_ctx L = { .min_bytes = flt->min_bytes, .keep = keep_series > 0 };
	size_t k = 0;

	memset(out, 0, sizeof *out);
	hd_session_snaps(s, session, &ss, 0);
	out->nsnaps = ss.n;
	out->snap_id = ss.id;
	out->t = ss.t;
	out->duration = ss.duration;
	if (ss.n < 3)
		return;
	hd_scan_series(s, session, &ss, flt->kind, measure, &L);
	/* The filters apply to the displayed (folded) frames. */
	for (size_t i = 0; i < L.n; i++) {
		int folded;
		const struct hd_stack *st = hd_stack_get(s, L.t[i].stack_id);
		struct hd_stack v = hd_fold(st, flt->all_frames, &folded);
		if (hd_stack_matches(&v, flt))
			L.t[k++] = L.t[i];
		else
			free(L.t[i].series);
	}
	L.n = k;
	/* The functions' suspects, ranked with the call paths. */
	hd_leak_funcs(s, session, &ss, flt, L.keep, L.t, L.n, &L.t, &L.n, &L.cap, out);
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

void hd_leak_report(struct hd_source *s, int64_t session, const struct hd_leak_opts *o,
                    struct hd_leak_report *out)
{
	struct hd_leak_set *ls = &out->ls;

	memset(out, 0, sizeof *out);
	out->o = o;
	out->path = s->path;
	out->session = session;
	hd_leak_find(s, session, o->flt, 0, ls);
	if (ls->nsnaps < 3)
		hd_die("%s: --leaks needs at least 3 snapshots in session %" PRId64 " (it has %zu)", s->path,
		       session, ls->nsnaps);
	if (o->format != HD_JSON) {
		/* The text's header names the session (json does not). */
		sqlite3_stmt *q = hd_prepare(s, "SELECT pid, comm, start_time FROM sessions WHERE id = ?1");
		sqlite3_bind_int64(q, 1, session);
		if (hd_step(s, q)) {
			out->pid = sqlite3_column_int64(q, 0);
			out->comm = hd_clean_text(sqlite3_column_text(q, 1));
			out->start = hd_col_real(s, q, 2);
		}
		sqlite3_finalize(q);
	}
	out->listed = o->top > 0 && ls->n > (size_t)o->top ? (size_t)o->top : ls->n;
	out->view = hd_xcalloc(out->listed, sizeof *out->view);
	out->folded = hd_xcalloc(out->listed, sizeof *out->folded);
	for (size_t i = 0; i < out->listed; i++)
		if (ls->v[i].what == HD_LEAK_STACK)
			out->view[i] = hd_fold(hd_stack_get(s, ls->v[i].stack_id), o->flt->all_frames,
			                       &out->folded[i]);
}

void hd_leak_report_free(struct hd_leak_report *lr)
{
	hd_leak_free(&lr->ls);
	free(lr->comm);
	free(lr->view);
	free(lr->folded);
	memset(lr, 0, sizeof *lr);
}

/* hd_fallen_note (report.h): heapdiff's note under a last snapshot that
 * holds less than half of the session's peak (everything the session was
 * attached for may be gone by then: an interpreter frees it all at exit). */
const char *hd_fallen_note(const struct hd_snap *b, int kind, int exact, char *buf, size_t len)
{
	char p1[64], p2[64];
	struct hd_snap l;
	int64_t nsnaps;
	double peak, now;
	hd_resolve(b->src, "last", b->session_id, &l);
	if (l.id != b->id)
		return NULL;
	int64_t id = hd_peak(b->src, b->session_id, kind, &peak, &nsnaps);
	if (id == b->id || !(peak > 2 * (now = hd_live_total(b, kind))))
		return NULL;
	snprintf(buf, len, "note: the estimated %s peaked at %s (snapshot %" PRId64 ") and is %s "
	         "at snapshot %" PRId64 ": heapdiff --peak shows the peak",
	         hd_kind_what(kind),
	         hd_fmt_bytes(p1, sizeof p1, peak, 0, exact), id, hd_fmt_bytes(p2, sizeof p2, now, 0, exact),
	         b->id);
	return buf;
}
