/* report_text.c -- the default output: the top functions (flat, with
 * cumulative beside: report_funcs.c), then an aligned table of call paths,
 * each row followed by its symbolized stack (leaf first), then a total
 * line; --by function: the table of functions instead of both.  Tests and
 * scripts parse it (see tests/profile_lib.sh): keep the layout stable (no
 * line of the functions' table is indented 20 columns or more, as a
 * stack's frames are).
 *
 * --leaks in text (hd_write_leaks_text): a header naming the session, the
 * suspects ranked by growth, each with its frames or its function (and
 * the functions it is via), then the counts and notes. */
#define _GNU_SOURCE
#include "render.h"

#include <inttypes.h>
#include "reach_view.h"
#include <math.h>
#include <string.h>

#define INDENT (14 + 1 + 12 + 4)

static void print_frames(FILE *f, const struct hd_row *r)
{
	const struct hd_stack *st = &r->st;
	char pc[32];
	for (int i = 0; i < st->n; i++)
		hd_text_frame(f, st->f[i], INDENT);
	if (st->n == 0)
		fprintf(f, "%*s(no frames: not unwound, or not named)\n", INDENT, "");
	if (r->folded > 0) {
		/* Say what was folded, below the frames (scripts read the
		 * first frame line as the leaf). */
		const struct hd_frame *const *fr = st->f - r->folded;
		fprintf(f, "%*s(allocator frames folded:", INDENT, "");
		for (int i = r->folded - 1; i >= 0; i--)
			fprintf(f, " %s", hd_frame_name(fr[i], pc, sizeof pc));
		fputs("; --all-frames shows them)\n", f);
	}
	if (r->merged > 1)
		fprintf(f, "%*s(%d callstacks merged once folded)\n", INDENT, "", r->merged);
}

static void print_snap_line(FILE *f, const char *label, const struct hd_snap *s, int cross)
{
	char t[64];
	fprintf(f, "%s snapshot %" PRId64 ": %s, session %" PRId64 " (pid %" PRId64 " %s), %s", label,
	        s->id, hd_fmt_time(t, sizeof t, s->time), s->session_id, s->pid,
	        s->comm[0] ? s->comm : "?", s->reason[0] ? s->reason : "-");
	if (cross)
		fprintf(f, ", %s", s->src->path);
	fputc('\n', f);
}

/* The page-fault samples behind rss and swap, from e to l (e NULL: since
 * the attach). */
static void print_fault_line(FILE *f, const struct hd_snap *e, const struct hd_snap *l)
{
	int64_t taken = hd_sub_i64(l->rss_samples, e ? e->rss_samples : 0);
	int64_t lost = hd_sub_i64(l->rss_lost, e ? e->rss_lost : 0);
	fprintf(f, "page faults: %" PRId64 " sampled (1 in %" PRId64 "), %" PRId64 " lost\n", taken,
	        l->rss_period, lost);
	if (lost > 0)
		fprintf(f, "note: page-fault samples were lost (ring full): the estimates are low\n");
}

/* The kernel's view next to the total of a physical kind: "; RssAnon +X"
 * (rss) or "; VmSwap +X" (swap); "" otherwise. */
static const char *kernel_part(char *buf, size_t len, const struct hd_report *r,
                               const struct hd_kernel *k)
{
	char v[64];
	if (!hd_kind_physical(r->kind))
		return "";
	snprintf(buf, len, "; %s %s", r->kind == HA_KIND_RSS ? "RssAnon" : "VmSwap",
	         hd_fmt_kernel(v, sizeof v, k, r->kind == HA_KIND_RSS ? k->rss_anon : k->swap, !!r->a,
	                       r->exact_bytes));
	return buf;
}

/* The samples counts of a header, and what they mean for the rows. */
static void print_samples(FILE *f, int64_t samples, int64_t drops, int64_t not_unwound)
{
	fprintf(f, "samples: %" PRId64 " taken, %" PRId64 " dropped, %" PRId64 " not unwound\n",
	        samples, drops, not_unwound);
	if (drops > 0)
		fprintf(f, "note: samples were dropped (ring full): the estimates are low\n");
	if (not_unwound > 0)
		fprintf(f, "note: %" PRId64 " %s not unwound: %s call paths end in "
		        "\"(stack not unwound past here)\" after the allocating call, or show no frames\n",
		        not_unwound, not_unwound == 1 ? "sample was" : "samples were",
		        not_unwound == 1 ? "its" : "their");
}

void hd_text_header(FILE *f, const struct hd_report *r, const char *at, int faults)
{
	const struct hd_snap *a = r->a, *b = r->b;

	if (r->peak_note)
		fprintf(f, "%s\n", r->peak_note);
	if (a) {
		print_snap_line(f, "from", a, r->cross_db);
		print_snap_line(f, "  to", b, r->cross_db);
		if (!r->cross_db && a->session_id == b->session_id) {
			/* The counters are cumulative: from the earlier snapshot
			 * to the later one, whichever is A. */
			const struct hd_snap *e = a->id < b->id ? a : b, *l = a->id < b->id ? b : a;
			print_samples(f, hd_sub_i64(l->samples, e->samples), hd_sub_i64(l->drops, e->drops),
			              hd_sub_i64(l->unwind_failures, e->unwind_failures));
			if (faults)
				print_fault_line(f, e, l);
		}
	} else {
		char label[64];
		snprintf(label, sizeof label, "%s at", at);
		print_snap_line(f, label, b, 0);
		print_samples(f, b->samples, b->drops, b->unwind_failures);
		if (faults)
			print_fault_line(f, NULL, b);
	}
	if (r->fallen_note)
		fprintf(f, "%s\n", r->fallen_note);
	for (const char *m = r->names_missing; m && *m;) {
		size_t n = strcspn(m, "\n");
		fprintf(f, "note: no names for frames of %.*s: heapdiff's last lines on standard error "
		        "say how to get them\n", (int)n, m);
		m += n + (m[n] == '\n');
	}
	fputc('\n', f);
}

/* The functions' table: all of --by function, or the first HD_TOP_FUNCS
 * under the header of the call paths' report (n). */
void hd_func_text_name(FILE *f, const struct hd_frame *fr)
{
	char pc[32];
	fputs(hd_frame_name(fr, pc, sizeof pc), f);
	if (fr->file[0])
		fprintf(f, "  %s", fr->file);
	if (fr->module[0])
		fprintf(f, "  [%s]", ha_base_name(fr->module));
}

static void print_funcs(FILE *f, const struct hd_report *r, size_t n, int summary)
{
	const struct hd_funcs *fs = r->funcs;
	int sign = r->a != NULL, cum = r->by == HD_BY_CUM;
	char b1[64], b2[64], b3[64];

	if (summary)
		fprintf(f, "top functions (flat: allocated in it; cum: in it or in what it called; "
		        "--by function lists all)\n");
	fprintf(f, "%14s %12s %14s %6s  %s\n", "FLAT", hd_kind_physical(r->kind) ? "PAGES" : "OBJECTS",
	        "CUM", "PATHS", summary ? "FUNCTION" : cum ? "FUNCTION (by cum)" : "FUNCTION (by flat)");
	for (size_t i = 0; i < n; i++) {
		const struct hd_func_row *row = &fs->v[i];
		fprintf(f, "%14s %12s %14s %6d  ", hd_fmt_bytes(b1, sizeof b1, row->flat_bytes, sign, r->exact_bytes),
		        hd_fmt_count(b2, sizeof b2, row->flat_objects, sign),
		        hd_fmt_bytes(b3, sizeof b3, row->cum_bytes, sign, r->exact_bytes), row->cum_paths);
		hd_func_text_name(f, row->fr);
		fputc('\n', f);
	}
	if (n < fs->n)
		fprintf(f, "%14s %12s %14s %6s  ... %zu more function%s (%s)\n", "", "", "", "", fs->n - n,
		        fs->n - n == 1 ? "" : "s", summary ? "--by function" : "--top 0 shows all");
}

/* The call paths' table: the rows and their stacks. */
static void print_paths(FILE *f, const struct hd_report *r, size_t shown)
{
	int physical = hd_kind_physical(r->kind);
	char b1[64], b2[64];
	const char *live = r->kind == HA_KIND_RSS ? "RESIDENT" : r->kind == HA_KIND_SWAP ? "SWAPPED"
	                                                                                 : "LIVE BYTES";
	fprintf(f, "%14s %12s  %s\n", r->a ? "BYTES" : live,
	        physical ? "PAGES" : r->a ? "OBJECTS" : "LIVE OBJECTS", "STACK (leaf first)");
	for (size_t i = 0; i < shown; i++) {
		const struct hd_row *row = &r->rows[i];
		fprintf(f, "%14s %12s  stack %" PRId64,
		        hd_fmt_bytes(b1, sizeof b1, row->bytes, !!r->a, r->exact_bytes),
		        hd_fmt_count(b2, sizeof b2, row->objects, !!r->a), row->stack_id);
		if (row->kind != 0)
			fprintf(f, " (%s)", hd_kind_name(row->kind));
		fputc('\n', f);
		print_frames(f, row);
	}
	if (shown < r->n)
		fprintf(f, "%14s %12s  ... %zu more callstack%s (--top 0 shows all)\n", "", "",
		        r->n - shown, r->n - shown == 1 ? "" : "s");
}

void hd_write_text(FILE *f, const struct hd_report *r)
{
	const struct hd_snap *a = r->a, *b = r->b;
	int by_fn = r->by != HD_BY_STACK && r->funcs;
	size_t n = by_fn ? r->funcs->n : r->n;
	size_t shown = r->top > 0 && (size_t)r->top < n ? (size_t)r->top : n;
	int physical = hd_kind_physical(r->kind);
	const char *what = by_fn ? "function" : "callstack";
	char b1[64], b2[64], k[128], note[96];
	struct hd_kernel kc;

	hd_text_header(f, r, hd_kind_title(r->kind), physical);
	if (n == 0 && (a || !physical)) {
		fprintf(f, a ? "no %s changed\n" : "no live allocations\n", what);
	} else if (n == 0) {
		fprintf(f, "no %s\n", hd_kind_what(r->kind));
	} else if (by_fn) {
		print_funcs(f, r, shown, 0);
	} else {
		/* The first screen names a helper that leaks over many call
		 * paths, each of them too small to be on it. */
		if (r->funcs && r->funcs->n) {
			print_funcs(f, r, r->funcs->n < HD_TOP_FUNCS ? r->funcs->n : HD_TOP_FUNCS, 1);
			fputc('\n', f);
		}
		print_paths(f, r, shown);
	}
	fputc('\n', f);
	/* The RSS of a target gone at B is the last read (said so), or
	 * unknown: never a drop to 0. */
	hd_kernel_change(a, b, &kc);
	hd_fmt_kernel(b2, sizeof b2, &kc, kc.rss, !!a, r->exact_bytes);
	hd_kernel_note(note, sizeof note, &kc, !!a);
	if (a) {
		fprintf(f, "total: %s %s (estimated; %zu %ss changed, %zu shown)%s; RSS %s%s; %.1f s\n",
		        hd_kind_title(r->kind), hd_fmt_bytes(b1, sizeof b1, r->total_bytes, 1, r->exact_bytes),
		        n, what, shown, kernel_part(k, sizeof k, r, &kc), b2, note, b->time - a->time);
	} else {
		fprintf(f, "total: %s %s (estimated; %zu %ss, %zu shown)%s; RSS %s%s\n",
		        hd_kind_title(r->kind), hd_fmt_bytes(b1, sizeof b1, r->total_bytes, 0, r->exact_bytes),
		        n, what, shown, kernel_part(k, sizeof k, r, &kc), b2, note);
	}
}

/* ------------------------------------------------------------ --leaks */

#define LEAK_INDENT 53

static void leak_stack_row(FILE *f, const struct hd_leak *t, const struct hd_stack *v, int folded,
                           int exact, double duration)
{
	char b1[64], b2[64], b3[64], rate[80];
	snprintf(rate, sizeof rate, "%s/min", hd_fmt_bytes(b1, sizeof b1, t->slope * 60, 1, exact));
	fprintf(f, "%18s %12s %12s %5.2f  stack %" PRId64, rate,
	        hd_fmt_bytes(b2, sizeof b2, t->slope * duration, 1, exact),
	        hd_fmt_bytes(b3, sizeof b3, t->last, 0, exact), t->fit, t->stack_id);
	if (t->kind != 0)
		fprintf(f, " (%s)", hd_kind_name(t->kind));
	fputc('\n', f);
	for (int i = 0; i < v->n; i++)
		hd_text_frame(f, v->f[i], LEAK_INDENT);
	if (folded)
		fprintf(f, "%*s(%d allocator frames folded; --all-frames shows them)\n", LEAK_INDENT, "",
		        folded);
}

/* What the session's latest reachability scan found of a suspect. */
static void leak_reach(FILE *f, const struct hd_reach_row *r, int64_t scan, int exact)
{
	char b1[64], b2[64];
	fprintf(f, "%*sat the scan of snapshot %" PRId64 ": %s unreachable", LEAK_INDENT, "", scan,
	        hd_fmt_bytes(b1, sizeof b1, r->unreachable_bytes, 0, exact));
	if (r->reachable_bytes <= 0) {
		fputs(r->unreachable_bytes > 0 ? " (a leak: nothing points to it)\n" : "\n", f);
		return;
	}
	fprintf(f, ", %s reachable", hd_fmt_bytes(b2, sizeof b2, r->reachable_bytes, 0, exact));
	if (r->nholders)
		fprintf(f, ", held by %s %s", r->holders[0].root, r->holders[0].name);
	fputs(r->unreachable_bytes > 0 ? "\n" : " (growth, not a leak)\n", f);
}

/* The via functions of a function suspect, the widest first. */
#define VIA_NAMED 4
static void leak_via(FILE *f, const struct hd_leak *t, const struct hd_leak_set *ls)
{
	char pc[32];
	if (!t->nvia)
		return;
	fprintf(f, "%*svia", LEAK_INDENT, "");
	for (size_t i = 0; i < t->nvia && i < VIA_NAMED; i++)
		fprintf(f, "%s %s", i ? "," : "", hd_frame_name(ls->fn.fr[t->via[i]], pc, sizeof pc));
	if (t->nvia > VIA_NAMED)
		fprintf(f, " and %zu more", t->nvia - VIA_NAMED);
	fputs(" (the callers whose cumulative growth this explains)\n", f);
}

static void leak_func_row(FILE *f, const struct hd_leak *t, int exact, const struct hd_leak_set *ls)
{
	char b1[64], b2[64], b3[64], rate[80];
	snprintf(rate, sizeof rate, "%s/min", hd_fmt_bytes(b1, sizeof b1, t->slope * 60, 1, exact));
	fprintf(f, "%18s %12s %12s %5.2f  %s (%s, %d call path%s)\n", rate,
	        hd_fmt_bytes(b2, sizeof b2, t->slope * ls->duration, 1, exact),
	        hd_fmt_bytes(b3, sizeof b3, t->last, 0, exact), t->fit,
	        t->what == HD_LEAK_FLAT ? "function" : "cumulative",
	        t->what == HD_LEAK_FLAT ? "allocated in it" : "in it or its callees, explained by no other suspect",
	        t->paths, t->paths == 1 ? "" : "s");
	fprintf(f, "%*s", LEAK_INDENT, "");
	hd_func_text_name(f, ls->fn.fr[t->func]);
	fputc('\n', f);
	leak_via(f, t, ls);
}

void hd_write_leaks_text(FILE *f, const struct hd_leak_report *lr)
{
	const struct hd_leak_set *ls = &lr->ls;
	int kind = lr->o->flt->kind, physical = hd_kind_physical(kind), exact = lr->o->exact_bytes;
	size_t shown = ls->n;
	char t0[64];

	fprintf(f, "leak suspects%s%s%s of session %" PRId64 " (pid %" PRId64 " %s, attached %s): "
	        "%zu snapshots over %.1f %s, %zu callstacks, %zu functions\n\n",
	        physical ? " (" : "", physical ? hd_kind_what(kind) : "", physical ? ")" : "",
	        lr->session, lr->pid, lr->comm && *lr->comm ? lr->comm : "?",
	        hd_fmt_time(t0, sizeof t0, lr->start), ls->nsnaps,
	        ls->duration < 120 ? ls->duration : ls->duration / 60, ls->duration < 120 ? "s" : "min",
	        ls->series, ls->funcs);
	for (size_t i = 0; i < lr->listed; i++) {
		const struct hd_leak *t = &ls->v[i];
		if (i == 0)
			fprintf(f, "%18s %12s %12s %5s  %s\n", "GROWTH", "TREND", "LIVE NOW", "FIT",
			        "SUSPECT (a call path, leaf first, or a function)");
		if (t->what != HD_LEAK_STACK)
			leak_func_row(f, t, exact, ls);
		else
		{
			leak_stack_row(f, t, &lr->view[i], lr->folded[i], exact, ls->duration);
			if (lr->reach && lr->reach[i].stack_id)
				leak_reach(f, &lr->reach[i], lr->reach_scan, exact);
		}
	}
	if (shown == 0)
		fprintf(f, "no leak suspects: no callstack's or function's %s grew steadily\n",
		        physical ? hd_kind_what(kind) : "live bytes");
	else if (lr->listed < shown)
		fprintf(f, "%18s ... %zu more suspect%s (--top 0 shows all)\n", "", shown - lr->listed,
		        shown - lr->listed == 1 ? "" : "s");
	fprintf(f, "\n%zu suspect%s; %zu other callstack%s grew from the first snapshot to the last "
	        "without a steady trend\n",
	        shown, shown == 1 ? "" : "s", ls->grew, ls->grew == 1 ? "" : "s");
	if (ls->unfitted)
		fprintf(f, "note: %zu functions seen last were not fitted (more functions x snapshots "
		        "than heapdiff keeps in memory)\n", ls->unfitted);
	if (ls->approx)
		fprintf(f, "note: too many call paths to narrow the cumulative suspects: each is listed "
		        "with its whole trend\n");
}
