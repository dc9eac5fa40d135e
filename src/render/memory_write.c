/* memory_write.c -- heapdiff --memory written: text (the terms, their
 * share of RssAnon, the arenas, the hint; with --by-stack the call paths
 * pinning the holes, each with its frames) and json ({"memory": {...}},
 * with --by-stack "pinning": {...}). */
#include "render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "memory.h"

#define INDENT 14

/* jemalloc's arenas are stored in the arena table's columns (heaps its
 * threads, system active+dirty+muzzy, in_use allocated, free dirty, top
 * muzzy: src/rss/mem_alloc.h) and shown under their own names. */
static int jemalloc(const struct hd_memory *m)
{
	return strncmp(m->allocator, "jemalloc", 8) == 0;
}

static void text_je_arenas(FILE *f, const struct hd_memory *m, int exact)
{
	char w[6][32];
	fprintf(f, "\n  %-5s %7s %12s %12s %12s %12s %12s\n", "ARENA", "THREADS", "HELD", "ALLOCATED",
	        "PINNED", "DIRTY", "MUZZY");
	for (size_t i = 0; i < m->narenas; i++) {
		const struct hd_arena *a = &m->arenas[i];
		double x[] = { a->system, a->in_use, a->pinned, a->free, a->top };
		for (int k = 0; k < 5; k++)
			hd_fmt_bytes(w[k], sizeof w[k], x[k], 0, exact);
		fprintf(f, "  %-5" PRId64 " %7" PRId64 " %12s %12s %12s %12s %12s\n", a->arena, a->heaps,
		        w[0], w[1], w[2], w[3], w[4]);
	}
	fputs("  (held: active, dirty and muzzy pages; pinned: active minus allocated; dirty and "
	      "muzzy: what a purge gives back)\n", f);
}

static size_t shown(const struct hd_memory *m, int top)
{
	return top > 0 && (size_t)top < m->npins ? (size_t)top : m->npins;
}

/* The call paths whose sampled blocks pin the holes, most first. */
static void text_pins(FILE *f, const struct hd_memory *m, int top, int exact)
{
	char v[3][64];
	double pinned = m->terms[HA_MT_FREE_PINNED];
	fprintf(f, "\npinned holes by call path: %s free on pages that hold blocks in use; %s charged "
	        "to the sampled blocks on those pages, by call path; %s to none (blocks from before "
	        "attach, headers of free chunks, the estimate's error)\n\n",
	        hd_fmt_bytes(v[0], sizeof v[0], pinned, 0, exact),
	        hd_fmt_bytes(v[1], sizeof v[1], m->pins_charged, 0, exact),
	        hd_fmt_bytes(v[2], sizeof v[2], pinned - m->pins_charged, 0, exact));
	fprintf(f, "%14s %7s %12s\n", "PINNED", "SHARE", "BLOCKS");
	size_t n = shown(m, top);
	for (size_t i = 0; i < n; i++) {
		const struct hd_pin_row *r = &m->pins[i];
		fprintf(f, "%14s %6.1f%% %12.0f\n%*sstack %" PRId64 "\n",
		        hd_fmt_bytes(v[0], sizeof v[0], r->bytes, 0, exact),
		        pinned > 0 ? 100 * r->bytes / pinned : 0.0, r->blocks, INDENT, "", r->stack_id);
		for (int k = 0; k < r->st.n; k++)
			hd_text_frame(f, r->st.f[k], INDENT);
	}
	fprintf(f, "%zu call paths pin holes, %zu shown\n", m->npins, n);
}

void hd_write_memory_text(FILE *f, const struct hd_snap *b, const struct hd_memory *m, int top,
                          int exact)
{
	char t[64], v[64], w[8][32];
	fprintf(f, "memory at snapshot %" PRId64 " (%s, %s) of pid %" PRId64 " (%s): RssAnon %s, "
	        "allocator %s\n", m->snapshot_id, m->reason, hd_fmt_time_utc(t, sizeof t, m->time), b->pid,
	        b->comm, hd_fmt_bytes(v, sizeof v, m->rss_anon, 0, exact), m->allocator);
	if (m->snapshot_id != m->asked_id)
		fprintf(f, "(snapshot %" PRId64 " has none: the target could not be read then; the "
		        "latest one before it)\n", m->asked_id);
	fprintf(f, "\n  %-26s %14s %7s\n", "TERM", "BYTES", "SHARE");
	for (int i = 0; i < HA_MT_COUNT; i++)
		fprintf(f, "  %-26s %14s %6.1f%%\n", ha_mem_term_name(i),
		        hd_fmt_bytes(v, sizeof v, m->terms[i], 0, exact),
		        m->rss_anon > 0 ? 100.0 * m->terms[i] / m->rss_anon : 0.0);
	if (m->narenas && jemalloc(m)) {
		text_je_arenas(f, m, exact);
	} else if (m->narenas) {
		fprintf(f, "\n  %-5s %-4s %5s %12s %12s %12s %12s %12s %12s %12s\n", "ARENA", "MAIN",
		        "HEAPS", "SYSTEM", "IN USE", "FREE", "TOP", "RESIDENT", "TRIMMABLE", "PINNED");
		for (size_t i = 0; i < m->narenas; i++) {
			const struct hd_arena *a = &m->arenas[i];
			double x[] = { a->system, a->in_use, a->free, a->top, a->resident, a->trimmable,
			               a->pinned };
			for (int k = 0; k < 7; k++)
				hd_fmt_bytes(w[k], sizeof w[k], x[k], 0, exact);
			fprintf(f, "  %-5" PRId64 " %-4s %5" PRId64 " %12s %12s %12s %12s %12s %12s %12s%s\n",
			        a->arena, a->is_main ? "yes" : "", a->heaps, w[0], w[1], w[2], w[3], w[4],
			        w[5], w[6], a->complete ? "" : "  (walk stopped early)");
		}
	}
	if (m->hint[0])
		fprintf(f, "\nhint: %s\n", m->hint);
	if (m->by_stack)
		text_pins(f, m, top, exact);
}

void hd_write_memory_json(FILE *f, const struct hd_snap *b, const struct hd_memory *m, int top)
{
	fprintf(f, "{\"memory\": {\"snapshot\": %" PRId64 ", \"asked\": %" PRId64
	        ", \"time\": %.3f, \"reason\": ", m->snapshot_id, m->asked_id, m->time);
	hd_json_str(f, m->reason);
	fprintf(f, ", \"pid\": %" PRId64 ", \"comm\": ", b->pid);
	hd_json_str(f, b->comm);
	fputs(", \"allocator\": ", f);
	hd_json_str(f, m->allocator);
	fprintf(f, ", \"rss_anon_bytes\": %.0f, \"terms\": {", m->rss_anon);
	for (int i = 0; i < HA_MT_COUNT; i++)
		fprintf(f, "%s\"%s\": %.0f", i ? ", " : "", ha_mem_term_name(i), m->terms[i]);
	fputs("}, \"arenas\": [", f);
	for (size_t i = 0; i < m->narenas && jemalloc(m); i++) {
		const struct hd_arena *a = &m->arenas[i];
		fprintf(f, "%s{\"arena\": %" PRId64 ", \"threads\": %" PRId64 ", \"held_bytes\": %.0f"
		        ", \"allocated_bytes\": %.0f, \"pinned_bytes\": %.0f, \"dirty_bytes\": %.0f"
		        ", \"muzzy_bytes\": %.0f, \"trimmable_bytes\": %.0f}", i ? ", " : "", a->arena,
		        a->heaps, a->system, a->in_use, a->pinned, a->free, a->top, a->trimmable);
	}
	for (size_t i = 0; i < m->narenas && !jemalloc(m); i++) {
		const struct hd_arena *a = &m->arenas[i];
		fprintf(f, "%s{\"arena\": %" PRId64 ", \"main\": %s, \"heaps\": %" PRId64
		        ", \"system_bytes\": %.0f, \"in_use_bytes\": %.0f, \"free_bytes\": %.0f"
		        ", \"top_bytes\": %.0f, \"resident_bytes\": %.0f, \"trimmable_bytes\": %.0f"
		        ", \"pinned_bytes\": %.0f, \"complete\": %s}", i ? ", " : "", a->arena,
		        a->is_main ? "true" : "false", a->heaps, a->system, a->in_use, a->free, a->top,
		        a->resident, a->trimmable, a->pinned, a->complete ? "true" : "false");
	}
	fputs("], \"cpus\": ", f);
	if (m->cpus_online > 0 || m->cpus_allowed > 0)
		fprintf(f, "{\"online\": %.0f, \"allowed\": %.0f, \"quota\": %.4g}", m->cpus_online,
		        m->cpus_allowed, m->cpu_quota);
	else
		fputs("null", f);
	fputs(", \"hint\": ", f);
	if (m->hint[0])
		hd_json_str(f, m->hint);
	else
		fputs("null", f);
	if (m->by_stack) {
		fprintf(f, ", \"pinning\": {\"pinned_bytes\": %.0f, \"charged_bytes\": %.0f"
		        ", \"uncharged_bytes\": %.0f, \"call_paths\": %zu, \"stacks\": [",
		        m->terms[HA_MT_FREE_PINNED], m->pins_charged,
		        m->terms[HA_MT_FREE_PINNED] - m->pins_charged, m->npins);
		for (size_t i = 0, n = shown(m, top); i < n; i++) {
			const struct hd_pin_row *r = &m->pins[i];
			fprintf(f, "%s\n  {\"stack_id\": %" PRId64 ", \"pinned_bytes\": %.0f"
			        ", \"blocks\": %.0f, \"frames\": ", i ? "," : "", r->stack_id, r->bytes,
			        r->blocks);
			hd_json_frames(f, &r->st);
			fputc('}', f);
		}
		fputs("]}", f);
	}
	fputs("}}\n", f);
}
