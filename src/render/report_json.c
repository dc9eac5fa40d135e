/* report_json.c -- the report as one JSON document, for scripts:
 *
 *   { "heapdiff": 1, "mode": "diff" | "live",
 *     "by": "stack" | "function" | "cumulative",
 *     "kind": "heap+mmap" | "heap" | "mmap" | "rss" | "swap",
 *     "objects": "objects" | "pages",
 *     "from": SNAPSHOT | null, "to": SNAPSHOT,
 *     "total": { "live_bytes", "live_objects", "rss_bytes", "rss_anon_bytes",
 *                "swap_bytes", "callstacks", "shown" },
 *     "rows": [ { "stack_id", "kind", "live_bytes", "live_objects",
 *                 "alloc_bytes", "alloc_objects", "merged", "folded",
 *                 "frames": [ { "function", "file", "line", "module",
 *                               "build_id", "rel_pc", "inlined" } ] } ] }
 *
 * "kind" is --kind: heap and mmap by default (rss and swap, where memory
 * is, are never added to them); with rss and swap the "objects" are 4 KiB
 * pages ("objects": "pages").  SNAPSHOT has the kernel's RSS, RssAnon and
 * VmSwap and the page-fault samples (0 where the file has none).  Its
 * "rss_read_time" is null when they were read at the snapshot; a time when
 * its target was gone by then: they are the last read before the exit
 * (schema version 9); "rss_bytes" is null when none was read (RSS 0: the
 * 'exit' snapshot of an older file).  In a diff every value is the change
 * from A to B ("rss_bytes" too: null when either side's is); frames are
 * leaf first; rel_pc is a hex string (JSON numbers lose 64-bit precision in
 * most readers).  --top limits the rows as in text.
 *
 * --by function (or cumulative): "rows" are functions (report_funcs.c),
 * ranked by flat (or cumulative) bytes, and "total" counts "functions":
 *     "rows": [ { "function", "file", "module", "flat_bytes",
 *                 "flat_objects", "cum_bytes", "cum_objects",
 *                 "flat_paths", "cum_paths" } ]
 *
 * --leaks (hd_write_leaks_json):
 *   { "heapdiff": 1, "mode": "leaks", "kind", "db", "session", "snapshots",
 *     "duration_s", "callstacks", "grew", "functions", "unfitted", "approx",
 *     "reach_scan": the snapshot of the session's latest reachability
 *                   scan, or null (none: no reach fields below),
 *     "suspects": [ { "what": "stack", "stack_id", "kind",
 *                     "bytes_per_minute", "trend_bytes", "first_bytes",
 *                     "last_bytes", "max_bytes", "live_objects", "fit",
 *                     "steady", "retained", "folded",
 *                     with a scan that saw the call path:
 *                     "unreachable_bytes", "unreachable_objects",
 *                     "reachable_bytes", "reachable_objects",
 *                     "unknown_bytes", "unknown_objects",
 *                     "held_by": [ { "root", "name", "bytes", "objects",
 *                                    "hops" } ] (reach_write.c),
 *                     "frames" }
 *                 | { "what": "function" | "cumulative", "function",
 *                     "file", "module", "kind", "paths", ... as above,
 *                     "via": [ function, ... ] } ] } */
#define _GNU_SOURCE
#include "render.h"

#include <inttypes.h>

#include "reach_view.h"

void hd_json_snap(FILE *f, const struct hd_snap *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fprintf(f, "{\"db\": ");
	hd_json_str(f, s->src->path);
	fprintf(f, ", \"snapshot\": %" PRId64 ", \"session\": %" PRId64 ", \"time\": %.3f, "
	        "\"rss_bytes\": ", s->id, s->session_id, s->time);
	if (s->rss_state == HD_RSS_UNKNOWN)
		fputs("null", f);
	else
		fprintf(f, "%" PRId64, s->rss);
	fputs(", \"rss_read_time\": ", f);
	if (s->rss_state == HD_RSS_LAST)
		fprintf(f, "%.3f", s->rss_time);
	else
		fputs("null", f);
	fprintf(f, ", \"pid\": %" PRId64 ", \"comm\": ", s->pid);
	hd_json_str(f, s->comm);
	fputs(", \"reason\": ", f);
	hd_json_str(f, s->reason);
	fprintf(f, ", \"samples\": %" PRId64 ", \"drops\": %" PRId64 ", \"unwind_failures\": %" PRId64
	        ", \"sample_interval\": %" PRId64 ", \"rss_anon_bytes\": %" PRId64 ", \"swap_bytes\": %"
	        PRId64 ", \"rss_samples\": %" PRId64 ", \"rss_lost\": %" PRId64 ", \"rss_period\": %"
	        PRId64 "}",
	        s->samples, s->drops, s->unwind_failures, s->interval, s->rss_anon, s->swap,
	        s->rss_samples, s->rss_lost, s->rss_period);
}

static void frame(FILE *f, const struct hd_frame *fr)
{
	fputs("{\"function\": ", f);
	hd_json_str(f, fr->function);
	fputs(", \"file\": ", f);
	hd_json_str(f, fr->file);
	fprintf(f, ", \"line\": %d, \"module\": ", fr->line);
	hd_json_str(f, fr->module);
	fputs(", \"build_id\": ", f);
	hd_json_str(f, fr->build_id);
	fprintf(f, ", \"rel_pc\": \"0x%" PRIx64 "\", \"inlined\": %s}", fr->rel_pc,
	        fr->inlined ? "true" : "false");
}

void hd_json_frames(FILE *f, const struct hd_stack *st)
{
	fputc('[', f);
	for (int k = 0; k < st->n; k++) {
		fputs(k ? ",\n    " : "\n    ", f);
		frame(f, st->f[k]);
	}
	fputc(']', f);
}

void hd_json_kernel(FILE *f, const struct hd_kernel *k)
{
	if (k->known)
		fprintf(f, "\"rss_bytes\": %.0f, \"rss_anon_bytes\": %.0f, \"swap_bytes\": %.0f", k->rss,
		        k->rss_anon, k->swap);
	else
		fputs("\"rss_bytes\": null, \"rss_anon_bytes\": null, \"swap_bytes\": null", f);
}

void hd_write_json(FILE *f, const struct hd_report *r)
{
	int by_fn = r->by != HD_BY_STACK && r->funcs;
	size_t n = by_fn ? r->funcs->n : r->n;
	size_t shown = r->top > 0 && (size_t)r->top < n ? (size_t)r->top : n;
	const struct hd_snap *a = r->a, *b = r->b;
	struct hd_kernel k;
	hd_kernel_change(a, b, &k);

	fprintf(f, "{\"heapdiff\": 1, \"mode\": \"%s\", \"by\": \"%s\", \"kind\": \"%s\", "
	        "\"objects\": \"%s\",\n \"from\": ", a ? "diff" : "live",
	        !by_fn ? "stack" : r->by == HD_BY_CUM ? "cumulative" : "function", hd_kind_name(r->kind),
	        hd_kind_objects(r->kind));
	hd_json_snap(f, a);
	fputs(",\n \"to\": ", f);
	hd_json_snap(f, b);
	fprintf(f, ",\n \"total\": {\"live_bytes\": %.0f, \"live_objects\": %.0f, ", r->total_bytes,
	        r->total_objects);
	hd_json_kernel(f, &k);
	fprintf(f, ", \"%s\": %zu, \"shown\": %zu},\n \"rows\": ", by_fn ? "functions" : "callstacks", n,
	        shown);
	if (by_fn) {
		hd_funcs_json_rows(f, r->funcs, shown, hd_json_str);
		fputs("}\n", f);
		return;
	}
	fputc('[', f);
	for (size_t i = 0; i < shown; i++) {
		const struct hd_row *row = &r->rows[i];
		fprintf(f, "%s\n  {\"stack_id\": %" PRId64 ", \"kind\": \"%s\", \"live_bytes\": %.0f, "
		        "\"live_objects\": %.0f, \"alloc_bytes\": %.0f, \"alloc_objects\": %.0f, "
		        "\"merged\": %d, \"folded\": %d,\n   \"frames\": ",
		        i ? "," : "", row->stack_id, hd_kind_name(row->kind), row->bytes, row->objects,
		        row->alloc_bytes, row->alloc_objects, row->merged, row->folded);
		hd_json_frames(f, &row->st);
		fputc('}', f);
	}
	fputs("\n ]}\n", f);
}

/* ------------------------------------------------------------ functions */

void hd_funcs_json_rows(FILE *f, const struct hd_funcs *fs, size_t n,
                        void (*str)(FILE *, const char *))
{
	char pc[32];
	fputc('[', f);
	for (size_t i = 0; i < n && i < fs->n; i++) {
		const struct hd_func_row *r = &fs->v[i];
		fputs(i ? ",\n  {\"function\": " : "\n  {\"function\": ", f);
		str(f, hd_frame_name(r->fr, pc, sizeof pc));
		fputs(", \"file\": ", f);
		str(f, r->fr->file);
		fputs(", \"module\": ", f);
		str(f, r->fr->module);
		fprintf(f, ", \"flat_bytes\": %.0f, \"flat_objects\": %.0f, \"cum_bytes\": %.0f, "
		        "\"cum_objects\": %.0f, \"flat_paths\": %d, \"cum_paths\": %d}",
		        r->flat_bytes, r->flat_objects, r->cum_bytes, r->cum_objects, r->flat_paths,
		        r->cum_paths);
	}
	fputs("\n ]", f);
}

/* ------------------------------------------------------------ --leaks */

static void leak_stack_row(FILE *f, const struct hd_leak *t, const struct hd_stack *v, int folded,
                           double duration, const struct hd_reach_row *reach, int first)
{
	fprintf(f, "%s\n  {\"what\": \"stack\", \"stack_id\": %" PRId64 ", \"kind\": \"%s\", \"bytes_per_minute\": %.3f, "
	        "\"trend_bytes\": %.0f, \"first_bytes\": %.0f, \"last_bytes\": %.0f, "
	        "\"max_bytes\": %.0f, \"live_objects\": %.0f, \"fit\": %.4f, \"steady\": %.4f, "
	        "\"retained\": %.4f, \"folded\": %d,\n   ",
	        first ? "" : ",", t->stack_id, hd_kind_name(t->kind), t->slope * 60,
	        t->slope * duration, t->first, t->last, t->max, t->last_objects, t->fit, t->steady,
	        t->retained, folded);
	if (reach) {
		hd_json_reach_row(f, reach);
		fputs(",\n   ", f);
	}
	fputs("\"frames\": ", f);
	hd_json_frames(f, v);
	fputc('}', f);
}

static void leak_func_row(FILE *f, const struct hd_leak *t, const struct hd_leak_set *ls, int first)
{
	const struct hd_frame *fr = ls->fn.fr[t->func];
	char pc[32];
	fprintf(f, "%s\n  {\"what\": \"%s\", \"function\": ", first ? "" : ",",
	        t->what == HD_LEAK_FLAT ? "function" : "cumulative");
	hd_json_str(f, hd_frame_name(fr, pc, sizeof pc));
	fputs(", \"file\": ", f);
	hd_json_str(f, fr->file);
	fputs(", \"module\": ", f);
	hd_json_str(f, fr->module);
	fprintf(f, ", \"kind\": \"%s\", \"paths\": %d, \"bytes_per_minute\": %.3f, \"trend_bytes\": %.0f, "
	        "\"first_bytes\": %.0f, \"last_bytes\": %.0f, \"max_bytes\": %.0f, \"live_objects\": %.0f, "
	        "\"fit\": %.4f, \"steady\": %.4f, \"retained\": %.4f,\n   \"via\": [",
	        hd_kind_name(t->kind), t->paths, t->slope * 60, t->slope * ls->duration, t->first, t->last,
	        t->max, t->last_objects, t->fit, t->steady, t->retained);
	for (size_t i = 0; i < t->nvia; i++) {
		if (i)
			fputs(", ", f);
		hd_json_str(f, hd_frame_name(ls->fn.fr[t->via[i]], pc, sizeof pc));
	}
	fputs("]}", f);
}

void hd_write_leaks_json(FILE *f, const struct hd_leak_report *lr)
{
	const struct hd_leak_set *ls = &lr->ls;

	fprintf(f, "{\"heapdiff\": 1, \"mode\": \"leaks\", \"kind\": \"%s\", \"db\": ",
	        hd_kind_name(lr->o->flt->kind));
	hd_json_str(f, lr->path);
	fprintf(f, ", \"session\": %" PRId64 ", \"snapshots\": %zu, \"duration_s\": %.3f, "
	        "\"callstacks\": %zu, \"grew\": %zu, \"functions\": %zu, \"unfitted\": %zu, "
	        "\"approx\": %s, \"reach_scan\": ",
	        lr->session, ls->nsnaps, ls->duration, ls->series, ls->grew, ls->funcs, ls->unfitted,
	        ls->approx ? "true" : "false");
	if (lr->reach_scan)
		fprintf(f, "%" PRId64, lr->reach_scan);
	else
		fputs("null", f);
	fputs(",\n \"suspects\": [", f);
	for (size_t i = 0; i < lr->listed; i++) {
		const struct hd_leak *t = &ls->v[i];
		if (t->what != HD_LEAK_STACK)
			leak_func_row(f, t, ls, i == 0);
		else
			leak_stack_row(f, t, &lr->view[i], lr->folded[i], ls->duration,
			               lr->reach && lr->reach[i].stack_id ? &lr->reach[i] : NULL, i == 0);
	}
	fputs("\n ]}\n", f);
}
