/* report_html.c -- heapdiff --format html: one self-contained page (no
 * network, no other file: it opens from file:// and as a mail attachment).
 *
 * The page is data plus a script.  This file writes the data as one JSON
 * document inside <script type="application/json" id="hd-data">, and the
 * script (report_html.js) and style sheet (report_html.css) of this folder,
 * compiled in as hd_html_js and hd_html_css (Makefile.am), build the page
 * from it in the browser: the chart of memory over the session, the flame
 * graphs, the tables.  The JSON:
 *
 *   { "heapdiff": 1, "db", "target": { "comm", "pid", "exe" },
 *     "kind": --kind ("heap+mmap" by default), "what": its name in a
 *     title ("live heap", "resident memory"...), "objects": what its
 *     counts count ("objects", "pages"),
 *     "session": { "id", "start", "end" (null: not detached cleanly),
 *                  "interval", "samples", "drops", "unwind_failures",
 *                  "rss_period" (0: no --rss), "rss": 1 when it has
 *                  resident memory (hd_session_rss), else 0 },
 *     "snaps": [ [id, time, reason, rss, heap, mmap, samples, drops,
 *                 interval, resident, swapped, rss_anon, vmswap,
 *                 rss_read_time, paths], ... ]
 *                                       every snapshot of B's session, in
 *                                       id order, 'peak' included
 *                                       (resident, swapped: kinds rss and
 *                                       swap; rss_anon, vmswap: the
 *                                       kernel's, 0 when not recorded;
 *                                       rss, rss_anon, vmswap null when
 *                                       not read, the target gone;
 *                                       rss_read_time null, or the time
 *                                       of the last read before its exit
 *                                       when they are that: report_json.c;
 *                                       paths 0: totals only, no call
 *                                       paths, schema version 14)
 *     "a", "b": { "id", "time", "live" (heap and mmap), "resident",
 *                 "rss", "rss_anon", "rss_read_time" (as in "snaps"),
 *                 "reason", "db" } (a: null),
 *     "peak": { "id", "time", "live", "reason" }  (of --kind),
 *     "note": the session peaked far above B (heapdiff.c), or null,
 *     "frames": [ [function, file, line, module, inlined], ... ],
 *     "views": [ { "key": "diff" | "peak" | "b", "title", "diff": 0|1,
 *                  "from", "to", "dt", "total", "objects",
 *                  "paths": the call paths of the view, "rest": those of
 *                  them not written whole (view_json: past the 5,000 that
 *                  changed or hold most),
 *                  "rows": [ [kind, bytes, objects, [frame, ...]] ] and,
 *                  for the rest, [kind, bytes, objects, [frame, ...],
 *                  paths]: that many call paths summed under those
 *                  outermost frames } ],
 *     "leaks": { "nsnaps", "duration", "callstacks", "grew", "t": [...],
 *                "suspects": [ { "what": "stack" | "function" |
 *                                "cumulative" (leaks.c, leak_funcs.c),
 *                                "stack", "kind", "rate", "growth",
 *                                "live", "objects", "fit", "folded",
 *                                "paths" (of a function),
 *                                "frames": [...] (a function's: its own),
 *                                "via": [frame, ...] (the functions whose
 *                                cumulative growth a function's is),
 *                                "series": [...],
 *                                "reach": null, or a call path's figures
 *                                at the session's latest reachability
 *                                scan (REACH below) } ],
 *                "scan": that scan's snapshot, or null },
 *     "reach": null, or the latest reachability scan up to B:
 *              { "snapshot", "time", "reason", "pause_ms", "duration_ms",
 *                "bytes_scanned", "cow_bytes", "chunks", "blocks",
 *                "unreachable", "reachable", "unknown" (bytes, all call
 *                paths), "count" (call paths),
 *                "rows": [ [kind, REACH, [frame, ...], folded] ] }
 *              the first 200 call paths, most unreachable bytes first;
 *              REACH: unreachable bytes, objects, reachable bytes,
 *              objects, unknown bytes, [[root, name, bytes, objects,
 *              hops], ...] (the holders of the reachable part),
 *     "memory": { "terms": [name, ...], "rows": [ [time, rss_anon,
 *                 term, ...], ... ] }  where RssAnon went at each
 *                                       snapshot of B's session that has
 *                                       a breakdown (memory.h; rows []
 *                                       before schema version 10)
 *     "functions": [ { "function", "file", "module", "heap_mmap_bytes",
 *                      "resident_bytes", "swapped_bytes", "paths" }, ... ]
 *                                       heap_vs_rss.c's rows of A -> B (or
 *                                       at B), when the session has
 *                                       resident memory; else []
 *     "top_functions": [ { "function", "file", "module", "flat_bytes",
 *                          "flat_objects", "cum_bytes", "cum_objects",
 *                          "flat_paths", "cum_paths" }, ... ]
 *                                       the functions of A -> B (or at B),
 *                                       by flat (report_funcs.c), the
 *                                       first 200
 *     "top": N }
 *
 * Frames are interned by content (a row's frames are indexes into
 * "frames", leaf first), so 4096 call paths through the same few hundred functions stay
 * small.  Every name comes from the profiled process and is untrusted: it
 * went through hd_clean_text (valid UTF-8, no control characters) when
 * loaded, and hd_json_html_str writes '<', '>' and '&' as \u003c, \u003e,
 * \u0026, so that no name can end the <script> element; the script puts
 * names into the page as text (textContent), never as markup.  The few
 * strings outside the JSON (the <title>) are XML-escaped.
 *
 * Everything the page shows from the database is read first (struct
 * page): an error (a corrupt file) returns before any of it is written. */
#define _GNU_SOURCE
#include "render.h"
#include "memory.h"
#include "reach_view.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

extern const char hd_html_js[];
extern const char hd_html_css[];

/* Suspects shown with their series (the table lists at most these). */
#define LEAKS_SHOWN 50
/* Call paths of a reachability scan shown (the others in its totals). */
#define REACH_SHOWN 200

struct frames {
	struct hd_map *index;      /* displayed content -> index + 1 */
	struct hd_buf key;
	const struct hd_frame **v;
	size_t n, cap;
};

/* Frames are interned by what the page shows of them (two databases number
 * theirs independently; two stacks may hold the same frame). */
static size_t frame_index(struct frames *fs, const struct hd_frame *f)
{
	char pc[32];
	fs->key.n = 0;
	hd_buf_printf(&fs->key, "%s\x1f%s\x1f%d\x1f%s\x1f%d", hd_frame_name(f, pc, sizeof pc), f->file,
	              f->line, f->module, f->inlined);
	hd_buf_addc(&fs->key, 0);
	int fresh;
	size_t i = hd_map_index(fs->index, (char *)fs->key.p, fs->n, &fresh);
	if (!fresh)
		return i;
	if (fs->n == fs->cap) {
		fs->cap = fs->cap ? fs->cap * 2 : 256;
		/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
		fs->v = hd_xrealloc(fs->v, fs->cap * sizeof *fs->v);
	}
	fs->v[fs->n] = f;
	return fs->n++;
}

static void frame_list(FILE *f, struct frames *fs, const struct hd_stack *st)
{
	fputc('[', f);
	for (int k = 0; k < st->n; k++)
		fprintf(f, k ? ",%zu" : "%zu", frame_index(fs, st->f[k]));
	fputc(']', f);
}

/* What the page shows that is read from the database, read before a byte
 * of it is written (hd_write_html: an error writes no half page), in the
 * order the page shows it. */
struct page {
	int64_t rss_period;        /* B's session's --rss period (0: none) */
	struct hd_snap peak;
	double peak_live;
	struct hd_report rp, rb;   /* the rows at the peak, at B (with an A) */
	int64_t pid, interval, samples, drops, unwf;  /* the session */
	char *comm, *exe;
	double start, end;
	int has_end;
	struct hd_snap_total *totals;
	size_t ntotals;
	double live[2], resident[2]; /* of A and B */
	struct hd_leak_set ls;
	struct hd_stack view[LEAKS_SHOWN]; /* a listed call-path suspect's */
	int folded[LEAKS_SHOWN];
	int has_vs;                /* --heap-vs-rss's rows in vs */
	struct hd_vs vs;
	double *mem;               /* the session's breakdowns of RssAnon (memory.h) */
	size_t nmem;
	int has_reach;             /* the latest reachability scan up to B in reach */
	struct hd_reach reach;
	int64_t leak_scan;         /* the session's latest scan (0: none), and a */
	struct hd_reach_row leak_reach[LEAKS_SHOWN]; /* listed call-path suspect's
	                            * row of it (stack_id 0: none) */
};

static void snap_json(FILE *f, const struct hd_snap *s, double live, double resident)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"id\": %" PRId64 ", \"session\": %" PRId64 ", \"time\": %.3f, \"live\": %.0f, "
	        "\"resident\": %.0f, ", s->id, s->session_id, s->time, live, resident);
	if (s->rss_state == HD_RSS_UNKNOWN)
		fputs("\"rss\": null, \"rss_anon\": null", f);
	else
		fprintf(f, "\"rss\": %" PRId64 ", \"rss_anon\": %" PRId64, s->rss, s->rss_anon);
	if (s->rss_state == HD_RSS_LAST)
		fprintf(f, ", \"rss_read_time\": %.3f, \"reason\": ", s->rss_time);
	else
		fputs(", \"rss_read_time\": null, \"reason\": ", f);
	hd_json_html_str(f, s->reason);
	fputs(", \"db\": ", f);
	hd_json_html_str(f, s->src->path);
	fputc('}', f);
}

/* A view's rows: the HTML_PATHS call paths that changed most (held most)
 * whole; the rest summed by their outermost frames, HTML_REST_DEPTH of them
 * or fewer, so that at most HTML_REST_GROUPS such rows are written.  The
 * flame graph shows each under its callers as "(N other call paths)",
 * the totals still add up, and a day's 100,000 call paths make a page of
 * a few MB (issue 39: 34.8 MB before, most of it frames nobody can see). */
#define HTML_PATHS 5000
#define HTML_REST_DEPTH 8
#define HTML_REST_GROUPS 1000

struct rest_group {
	const struct hd_row *row;  /* its first row: kind and frames */
	int depth;                 /* its outermost frames kept */
	double bytes, objects;
	size_t paths;
};

static double row_rank(const struct hd_report *r, const struct hd_row *row)
{
	return fabs(r->by_objects ? row->objects : row->bytes);
}

static int cmp_rank(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a < b) - (a > b);
}

/* The rank a row needs to be written whole: the HTML_PATHS-th largest. */
static double whole_from(const struct hd_report *r)
{
	if (r->n <= HTML_PATHS)
		return 0;
	double *k = hd_xmalloc(r->n * sizeof *k), t;
	for (size_t i = 0; i < r->n; i++)
		k[i] = row_rank(r, &r->rows[i]);
	qsort(k, r->n, sizeof *k, cmp_rank);
	t = k[HTML_PATHS - 1];
	free(k);
	return t;
}

/* The rows below the cut summed by their outermost depth frames (and
 * kind), depth as large as keeps them to HTML_REST_GROUPS rows; *ng of
 * them, malloc'ed. */
static struct rest_group *rest_groups(const struct hd_report *r, const char *whole, size_t *ng)
{
	struct hd_buf key = { 0 };
	struct rest_group *g = NULL;
	for (int depth = HTML_REST_DEPTH; depth >= 0; depth--) {
		struct hd_map *m = hd_map_new();
		size_t n = 0;
		free(g);
		g = hd_xmalloc((HTML_REST_GROUPS + 1) * sizeof *g);
		for (size_t i = 0; i < r->n && n <= HTML_REST_GROUPS; i++) {
			const struct hd_row *row = &r->rows[i];
			if (whole[i])
				continue;
			int d = row->st.n < depth ? row->st.n : depth;
			key.n = 0;
			hd_buf_printf(&key, "%d", row->kind);
			for (int k = row->st.n - d; k < row->st.n; k++)
				hd_buf_printf(&key, "\x1f%p", (const void *)row->st.f[k]);
			hd_buf_addc(&key, 0);
			int fresh;
			size_t x = hd_map_index(m, (char *)key.p, n, &fresh);
			if (fresh)
				g[n++] = (struct rest_group){ .row = row, .depth = d };
			if (x < HTML_REST_GROUPS) {
				g[x].bytes += row->bytes;
				g[x].objects += row->objects;
				g[x].paths++;
			}
		}
		hd_map_free(m, NULL);
		if (n <= HTML_REST_GROUPS || depth == 0) {
			*ng = n;
			hd_buf_free(&key);
			return g;
		}
	}
	hd_buf_free(&key); /* (not reached: depth 0 makes one group a kind) */
	*ng = 0;
	return g;
}

static void view_json(FILE *f, struct frames *fs, const char *key, const char *title,
                      const struct hd_report *r, int first)
{
	double cut = whole_from(r);
	char *whole = hd_xmalloc(r->n + 1);
	size_t nwhole = 0, ng = 0, k = 0;
	for (size_t i = 0; i < r->n; i++) {
		whole[i] = (char)(r->n <= HTML_PATHS || row_rank(r, &r->rows[i]) > cut);
		nwhole += (size_t)whole[i];
	}
	/* Ties at the cut: the first of them, in the rows' order. */
	for (size_t i = 0; i < r->n && nwhole < HTML_PATHS; i++)
		if (!whole[i] && row_rank(r, &r->rows[i]) >= cut) {
			whole[i] = 1;
			nwhole++;
		}
	fprintf(f, "%s\n  {\"key\": \"%s\", \"title\": ", first ? "" : ",", key);
	hd_json_html_str(f, title);
	fprintf(f, ", \"diff\": %d, \"from\": ", r->a != NULL);
	if (r->a)
		fprintf(f, "%" PRId64, r->a->id);
	else
		fputs("null", f);
	fprintf(f, ", \"to\": %" PRId64 ", \"dt\": %.3f, \"total\": %.0f, \"objects\": %.0f,"
	        " \"paths\": %zu, \"rest\": %zu, \"rows\": [", r->b->id,
	        r->a ? r->b->time - r->a->time : 0.0, r->total_bytes, r->total_objects, r->n,
	        r->n - nwhole);
	for (size_t i = 0; i < r->n; i++) {
		const struct hd_row *row = &r->rows[i];
		if (!whole[i])
			continue;
		fprintf(f, "%s\n   [%d, %.0f, %.0f, ", k++ ? "," : "", row->kind, row->bytes, row->objects);
		frame_list(f, fs, &row->st);
		fputc(']', f);
	}
	struct rest_group *g = nwhole < r->n ? rest_groups(r, whole, &ng) : NULL;
	for (size_t i = 0; i < ng; i++) {
		struct hd_stack outer = g[i].row->st;
		outer.f += outer.n - g[i].depth;
		outer.n = g[i].depth;
		fprintf(f, "%s\n   [%d, %.0f, %.0f, ", k++ ? "," : "", g[i].row->kind, g[i].bytes,
		        g[i].objects);
		frame_list(f, fs, &outer);
		fprintf(f, ", %zu]", g[i].paths);
	}
	fputs("]}", f);
	free(g);
	free(whole);
}

static int session_read(struct page *pg, struct hd_source *s, int64_t session)
{
	sqlite3_stmt *q, *c;
	int rc;

	if (hd_prepare(s, "SELECT pid, comm, exe, sample_interval, start_time, end_time FROM sessions"
	                  " WHERE id = ?1", &q) < 0)
		return HD_ERR;
	if (hd_prepare(s, "SELECT samples, drops, unwind_failures FROM snapshots WHERE session_id = ?1"
	                  " ORDER BY id DESC LIMIT 1", &c) < 0) {
		sqlite3_finalize(q);
		return HD_ERR;
	}
	sqlite3_bind_int64(q, 1, session);
	rc = hd_step(s, q);
	if (rc > 0) {
		pg->pid = sqlite3_column_int64(q, 0);
		pg->comm = hd_clean_text(sqlite3_column_text(q, 1));
		pg->exe = hd_clean_text(sqlite3_column_text(q, 2));
		pg->interval = sqlite3_column_int64(q, 3);
		pg->start = sqlite3_column_double(q, 4);
		pg->has_end = sqlite3_column_type(q, 5) != SQLITE_NULL;
		pg->end = sqlite3_column_double(q, 5);
	}
	sqlite3_finalize(q);
	if (rc >= 0) {
		sqlite3_bind_int64(c, 1, session);
		rc = hd_step(s, c);
		if (rc > 0) {
			pg->samples = sqlite3_column_int64(c, 0);
			pg->drops = sqlite3_column_int64(c, 1);
			pg->unwf = sqlite3_column_int64(c, 2);
		}
	}
	sqlite3_finalize(c);
	if (!isfinite(pg->start))
		pg->start = 0;
	if (!isfinite(pg->end))
		pg->has_end = 0;
	return rc < 0 ? HD_ERR : HD_OK;
}

static void session_json(FILE *f, const struct page *pg, int64_t session)
{
	fputs(",\n \"target\": {\"comm\": ", f);
	hd_json_html_str(f, pg->comm ? pg->comm : "");
	fprintf(f, ", \"pid\": %" PRId64 ", \"exe\": ", pg->pid);
	hd_json_html_str(f, pg->exe ? pg->exe : "");
	fprintf(f, "},\n \"session\": {\"id\": %" PRId64 ", \"start\": %.3f, \"end\": ", session, pg->start);
	if (pg->has_end)
		fprintf(f, "%.3f", pg->end);
	else
		fputs("null", f);
	fprintf(f, ", \"interval\": %" PRId64 ", \"samples\": %" PRId64 ", \"drops\": %" PRId64
	        ", \"unwind_failures\": %" PRId64 ", \"rss_period\": %" PRId64 ", \"rss\": %d}", pg->interval,
	        pg->samples, pg->drops, pg->unwf, pg->rss_period, pg->rss_period > 0);
}

static void snaps_json(FILE *f, const struct page *pg)
{
	const struct hd_snap_total *t = pg->totals;
	fputs(",\n \"snaps\": [", f);
	for (size_t i = 0; i < pg->ntotals; i++) {
		fprintf(f, "%s\n  [%" PRId64 ", %.3f, ", i ? "," : "", t[i].id, t[i].time);
		hd_json_html_str(f, t[i].reason);
		fputs(", ", f);
		if (t[i].rss_state == HD_RSS_UNKNOWN)
			fputs("null", f);
		else
			fprintf(f, "%" PRId64, t[i].rss);
		fprintf(f, ", %.0f, %.0f, %" PRId64 ", %" PRId64 ", %" PRId64 ", %.0f, %.0f, ", t[i].heap,
		        t[i].mmap, t[i].samples, t[i].drops, t[i].interval, t[i].resident, t[i].swapped);
		if (t[i].rss_state == HD_RSS_UNKNOWN)
			fputs("null, null", f);
		else
			fprintf(f, "%" PRId64 ", %" PRId64, t[i].rss_anon, t[i].swap);
		if (t[i].rss_state == HD_RSS_LAST)
			fprintf(f, ", %.3f", t[i].rss_time);
		else
			fputs(", null", f);
		fprintf(f, ", %d]", t[i].paths);
	}
	fputs("]", f);
}

/* The scan up to B, and what the session's latest found of each call-path
 * suspect listed (as heapdiff --leaks says it). */
static int reach_read(struct page *pg, const struct hd_snap *b)
{
	struct hd_source *s = b->src;
	if ((pg->has_reach = hd_reach_find(b, REACH_SHOWN, &pg->reach)) < 0 ||
	    hd_reach_latest(s, b->session_id, &pg->leak_scan) < 0)
		return HD_ERR;
	for (size_t i = 0; pg->leak_scan && i < pg->ls.n && i < LEAKS_SHOWN; i++) {
		const struct hd_leak *L = &pg->ls.v[i];
		if (L->what != HD_LEAK_STACK)
			continue;
		int rc = hd_reach_row_of(s, pg->leak_scan, L->stack_id, L->kind, &pg->leak_reach[i]);
		if (rc < 0)
			return HD_ERR;
		if (rc == 0)
			pg->leak_reach[i].stack_id = 0;
	}
	return HD_OK;
}

/* [unreachable bytes, objects, reachable bytes, objects, unknown bytes,
 *  [[root, name, bytes, objects, hops], ...]] */
static void reach_figures(FILE *f, const struct hd_reach_row *r)
{
	fprintf(f, "[%.0f, %.0f, %.0f, %.0f, %.0f, [", r->unreachable_bytes, r->unreachable_count,
	        r->reachable_bytes, r->reachable_count, r->unknown_bytes);
	for (size_t k = 0; k < r->nholders; k++) {
		const struct hd_reach_holder *h = &r->holders[k];
		fputs(k ? ", [" : "[", f);
		hd_json_html_str(f, h->root);
		fputs(", ", f);
		hd_json_html_str(f, h->name);
		fprintf(f, ", %.0f, %.0f, %" PRId64 "]", h->bytes, h->count, h->hops);
	}
	fputs("]]", f);
}

static void reach_json(FILE *f, struct frames *fs, const struct page *pg)
{
	const struct hd_reach *m = &pg->reach;
	fputs(",\n \"reach\": ", f);
	if (!pg->has_reach) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"snapshot\": %" PRId64 ", \"time\": %.3f, \"reason\": ", m->snapshot_id, m->time);
	hd_json_html_str(f, m->reason);
	fprintf(f, ", \"pause_ms\": %.3f, \"duration_ms\": %.3f, \"bytes_scanned\": %" PRId64
	        ", \"cow_bytes\": %" PRId64 ", \"chunks\": %" PRId64 ", \"blocks\": %" PRId64
	        ", \"unreachable\": %.0f, \"reachable\": %.0f, \"unknown\": %.0f, \"count\": %zu"
	        ", \"rows\": [", m->pause_ms, m->duration_ms, m->bytes_scanned, m->cow_bytes, m->chunks,
	        m->blocks, m->unreachable, m->reachable, m->unknown, m->count);
	for (size_t i = 0; i < m->nrows; i++) {
		const struct hd_reach_row *r = &m->rows[i];
		fprintf(f, "%s\n  [%d, ", i ? "," : "", r->kind);
		reach_figures(f, r);
		fputs(", ", f);
		frame_list(f, fs, &r->st);
		fprintf(f, ", %d]", r->folded);
	}
	fputs("]}", f);
}

/* The first LEAKS_SHOWN suspects' frames, read (a call path's). */
static int leaks_read(struct page *pg, struct hd_source *s, int64_t session,
                      const struct hd_filter *flt)
{
	const struct hd_leak_set *ls = &pg->ls;
	if (hd_leak_find(s, session, flt, LEAKS_SHOWN, &pg->ls) < 0)
		return HD_ERR;
	for (size_t i = 0; i < ls->n && i < LEAKS_SHOWN; i++) {
		const struct hd_stack *st;
		if (ls->v[i].what != HD_LEAK_STACK)
			continue;
		if (hd_stack_get(s, ls->v[i].stack_id, &st) < 0)
			return HD_ERR;
		pg->view[i] = hd_fold(st, flt->all_frames, &pg->folded[i]);
	}
	return HD_OK;
}

static void leaks_json(FILE *f, struct frames *fs, const struct page *pg)
{
	const struct hd_leak_set *ls = &pg->ls;
	fprintf(f, ",\n \"leaks\": {\"nsnaps\": %zu, \"duration\": %.3f, \"callstacks\": %zu, "
	        "\"grew\": %zu, \"count\": %zu, \"t\": [", ls->nsnaps, ls->duration, ls->series, ls->grew,
	        ls->n);
	for (size_t i = 0; i < ls->nsnaps; i++)
		fprintf(f, i ? ", %.3f" : "%.3f", ls->t[i]);
	fputs("], \"scan\": ", f);
	if (pg->leak_scan)
		fprintf(f, "%" PRId64, pg->leak_scan);
	else
		fputs("null", f);
	fputs(", \"suspects\": [", f);
	for (size_t i = 0; i < ls->n && i < LEAKS_SHOWN; i++) {
		const struct hd_leak *L = &ls->v[i];
		fprintf(f, "%s\n  {\"what\": \"%s\", \"stack\": %" PRId64 ", \"kind\": %d, \"rate\": %.3f, "
		        "\"growth\": %.0f, \"live\": %.0f, \"objects\": %.0f, \"fit\": %.4f, \"folded\": %d, "
		        "\"paths\": %d, \"frames\": ",
		        i ? "," : "", L->what == HD_LEAK_STACK ? "stack" : L->what == HD_LEAK_FLAT ? "function"
		                                                                              : "cumulative",
		        L->stack_id, L->what == HD_LEAK_STACK ? L->kind : 0, L->slope * 60,
		        L->slope * ls->duration, L->last, L->last_objects, L->fit, pg->folded[i], L->paths);
		if (L->what == HD_LEAK_STACK) {
			frame_list(f, fs, &pg->view[i]);
		} else {
			/* A function: its frame, then those it is via. */
			fprintf(f, "[%zu]", frame_index(fs, ls->fn.fr[L->func]));
		}
		fputs(", \"via\": [", f);
		for (size_t k = 0; k < L->nvia; k++)
			fprintf(f, k ? ",%zu" : "%zu", frame_index(fs, ls->fn.fr[L->via[k]]));
		fputs("], \"series\": [", f);
		for (size_t k = 0; L->series && k < ls->nsnaps; k++)
			fprintf(f, k ? ",%.0f" : "%.0f", L->series[k]);
		fputs("], \"reach\": ", f);
		if (pg->leak_reach[i].stack_id)
			reach_figures(f, &pg->leak_reach[i]);
		else
			fputs("null", f);
		fputs("}", f);
	}
	fputs("]}", f);
}

/* The functions of r (report_funcs.c), the first TOP_FUNCS of them. */
#define TOP_FUNCS 200
static void top_functions_json(FILE *f, const struct hd_report *r)
{
	fputs(",\n \"top_functions\": ", f);
	if (!r->funcs) {
		fputs("[]", f);
		return;
	}
	hd_funcs_json_rows(f, r->funcs, TOP_FUNCS, hd_json_html_str);
}

/* --heap-vs-rss's rows of r (heap_vs_rss.c), when the sessions have
 * resident memory. */
static int functions_read(struct page *pg, const struct hd_report *r, const struct hd_filter *flt)
{
	int64_t a_period = 1;
	if (!pg->rss_period)
		return HD_OK;
	if (r->a && hd_session_rss(r->a->src, r->a->session_id, &a_period, NULL, 0) < 0)
		return HD_ERR;
	if (!a_period)
		return HD_OK;
	if (hd_vs_build(r, flt, &pg->vs) < 0)
		return HD_ERR;
	pg->has_vs = 1;
	return HD_OK;
}

static void functions_json(FILE *f, const struct page *pg)
{
	fputs(",\n \"functions\": ", f);
	if (!pg->has_vs) {
		fputs("[]", f);
		return;
	}
	hd_vs_json_rows(f, &pg->vs, pg->vs.n, hd_json_html_str);
}

static void frames_json(FILE *f, const struct frames *fs)
{
	char pc[32];
	fputs(",\n \"frames\": [", f);
	for (size_t i = 0; i < fs->n; i++) {
		const struct hd_frame *fr = fs->v[i];
		fputs(i ? ",\n  [" : "\n  [", f);
		hd_json_html_str(f, hd_frame_name(fr, pc, sizeof pc));
		fputs(", ", f);
		hd_json_html_str(f, fr->file);
		fprintf(f, ", %d, ", fr->line);
		hd_json_html_str(f, fr->module);
		fprintf(f, ", %d]", fr->inlined);
	}
	fputs("]", f);
}

static void page_free(struct page *pg)
{
	hd_free_rows(&pg->rp);
	hd_free_rows(&pg->rb);
	free(pg->comm);
	free(pg->exe);
	free(pg->totals);
	free(pg->mem);
	hd_leak_free(&pg->ls);
	hd_reach_free(&pg->reach);
	for (size_t i = 0; i < LEAKS_SHOWN; i++)
		hd_reach_row_free(&pg->leak_reach[i]);
	if (pg->has_vs)
		hd_vs_free(&pg->vs);
}

static int page_read(struct page *pg, const struct hd_report *r, const struct hd_filter *flt)
{
	struct hd_source *s = r->b->src;
	int64_t session = r->b->session_id, nsnaps = 0, peak_id;
	const struct hd_snap *side[2] = { r->a, r->b };
	char idbuf[32];

	/* The peak of rss or swap is their own; of heap or mmap, the peak of
	 * both that heapattach keeps. */
	if (hd_session_rss(s, session, &pg->rss_period, NULL, 0) < 0 ||
	    hd_peak(s, session, hd_kind_physical(flt->kind) ? flt->kind : HD_KIND_ALLOC, &peak_id,
	            &pg->peak_live, &nsnaps) < 0)
		return HD_ERR;
	snprintf(idbuf, sizeof idbuf, "%" PRId64, peak_id);
	if (hd_resolve(s, idbuf, session, &pg->peak) < 0)
		return HD_ERR;
	/* The suspects before the other views' rows: what --leaks holds
	 * while it measures is not added to them (issue 39's memory). */
	if (leaks_read(pg, s, session, flt) < 0)
		return HD_ERR;
	pg->rp.b = &pg->peak;
	pg->rp.by_objects = pg->rb.by_objects = r->by_objects;
	if (hd_build_rows(&pg->rp, flt) < 0)
		return HD_ERR;
	if (r->a) {
		pg->rb.b = r->b;
		if (hd_build_rows(&pg->rb, flt) < 0)
			return HD_ERR;
	}
	if (session_read(pg, s, session) < 0 || hd_snap_totals(s, session, &pg->totals, &pg->ntotals) < 0)
		return HD_ERR;
	for (int i = 0; i < 2; i++)
		if (side[i] && (hd_live_total(side[i], HD_KIND_ALLOC, &pg->live[i]) < 0 ||
		                hd_live_total(side[i], HA_KIND_RSS, &pg->resident[i]) < 0))
			return HD_ERR;
	if (hd_memory_series(s, session, &pg->mem, &pg->nmem) < 0 || reach_read(pg, r->b) < 0)
		return HD_ERR;
	return functions_read(pg, r, flt);
}

int hd_write_html(FILE *f, const struct hd_report *r, const struct hd_filter *flt)
{
	struct hd_source *s = r->b->src;
	int64_t session = r->b->session_id;
	struct page *pg = hd_xcalloc(1, sizeof *pg);
	struct frames fs = { NULL, { 0 }, NULL, 0, 0 };
	char title[128], what[64], b1[64];
	int nviews = 0;

	if (page_read(pg, r, flt) < 0) {
		page_free(pg);
		free(pg);
		return HD_ERR;
	}
	fs.index = hd_map_new();
	snprintf(what, sizeof what, "%s", hd_kind_title(flt->kind));
	what[0] = (char)(what[0] - 'a' + 'A');

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"color-scheme\" content=\"light dark\">\n<title>heapdiff: ", f);
	hd_xml_str(f, r->b->comm[0] ? r->b->comm : "?");
	fprintf(f, " (pid %" PRId64 ")</title>\n<style>\n", r->b->pid);
	fputs(hd_html_css, f);
	/* Script errors land in #hd-errors (and data-errors), so that a
	 * headless browser's DOM dump shows them; installed before anything
	 * else runs. */
	fputs("</style>\n</head>\n<body>\n<pre id=\"hd-errors\" hidden></pre>\n<script>\n"
	      "window.addEventListener('error', function (e) {\n"
	      "  var p = document.getElementById('hd-errors'), m = (e.message || 'error') +\n"
	      "    (e.lineno ? ' (line ' + e.lineno + ':' + e.colno + ')' : '');\n"
	      "  p.hidden = false; p.textContent += m + '\\n';\n"
	      "  document.documentElement.setAttribute('data-errors', p.textContent);\n"
	      "});\n</script>\n"
	      "<noscript>This report is drawn by JavaScript; enable it to see the page.</noscript>\n"
	      "<div id=\"hd-app\"></div>\n"
	      "<script type=\"application/json\" id=\"hd-data\">\n", f);

	fputs("{\"heapdiff\": 1, \"db\": ", f);
	hd_json_html_str(f, s->path);
	fprintf(f, ", \"kind\": \"%s\", \"what\": \"%s\", \"objects\": \"%s\"", hd_kind_name(flt->kind),
	        hd_kind_title(flt->kind), hd_kind_objects(flt->kind));
	session_json(f, pg, session);
	snaps_json(f, pg);
	fputs(",\n \"a\": ", f);
	snap_json(f, r->a, pg->live[0], pg->resident[0]);
	fputs(",\n \"b\": ", f);
	snap_json(f, r->b, pg->live[1], pg->resident[1]);
	fprintf(f, ",\n \"peak\": {\"id\": %" PRId64 ", \"time\": %.3f, \"live\": %.0f, \"reason\": ",
	        pg->peak.id, pg->peak.time, pg->peak_live);
	hd_json_html_str(f, pg->peak.reason);
	fputs("},\n \"note\": ", f);
	if (r->fallen_note)
		hd_json_html_str(f, r->fallen_note);
	else
		fputs("null", f);
	fputs(",\n \"names_missing\": ", f);
	if (r->names_missing)
		hd_json_html_str(f, r->names_missing);
	else
		fputs("null", f);
	fprintf(f, ",\n \"top\": %ld, \"by_objects\": %d,\n \"views\": [", r->top, r->by_objects);
	if (r->a) {
		snprintf(title, sizeof title, "%s%srowth from snapshot %" PRId64 " to %" PRId64 " (%s)",
		         hd_kind_physical(flt->kind) ? what : "", hd_kind_physical(flt->kind) ? " g" : "G",
		         r->a->id, r->b->id, hd_fmt_bytes(b1, sizeof b1, r->total_bytes, 1, 0));
		view_json(f, &fs, "diff", title, r, nviews++ == 0);
	}
	snprintf(title, sizeof title, "%s at the peak, snapshot %" PRId64 " (%s)", what, pg->peak.id,
	         hd_fmt_bytes(b1, sizeof b1, pg->rp.total_bytes, 0, 0));
	view_json(f, &fs, "peak", title, &pg->rp, nviews++ == 0);
	snprintf(title, sizeof title, "%s at snapshot %" PRId64 " (%s)", what, r->b->id,
	         hd_fmt_bytes(b1, sizeof b1, r->a ? pg->rb.total_bytes : r->total_bytes, 0, 0));
	view_json(f, &fs, "b", title, r->a ? &pg->rb : r, nviews++ == 0);
	fputs("]", f);
	leaks_json(f, &fs, pg);
	reach_json(f, &fs, pg);
	fputs(",\n \"memory\": {\"terms\": [", f);
	for (int t = 0; t < HA_MT_COUNT; t++)
		fprintf(f, t ? ", \"%s\"" : "\"%s\"", ha_mem_term_name(t));
	fputs("], \"rows\": [", f);
	for (size_t i = 0; i < pg->nmem; i++) {
		const double *row = pg->mem + i * HD_MEM_COLS;
		fprintf(f, "%s[%.3f", i ? "," : "", row[0]);
		for (int k = 1; k < HD_MEM_COLS; k++)
			fprintf(f, ",%.0f", row[k]);
		fputc(']', f);
	}
	fputs("]}", f);
	functions_json(f, pg);
	top_functions_json(f, r);
	frames_json(f, &fs);
	fputs("}\n</script>\n<script>\n", f);
	fputs(hd_html_js, f);
	fputs("</script>\n</body>\n</html>\n", f);

	page_free(pg);
	free(pg);
	hd_map_free(fs.index, NULL);
	hd_buf_free(&fs.key);
	free(fs.v);
	return HD_OK;
}
