/* reach_write.c -- heapdiff --reach written: text (per call path LIVE,
 * UNREACHABLE, REACHABLE, HELD BY, its frames) and json ({"reach":
 * {...}}, rows with unreachable_bytes, unreachable_objects,
 * reachable_bytes, reachable_objects, held_by: [{root, name, bytes,
 * objects, hops}]).  Every name is printed cleaned (report side) and
 * escaped for JSON here.  Rows come without their frames and holders
 * (hd_reach_load): each row's are loaded as it is written and freed
 * after, so that a scan of 100,000 call paths is written in the memory of
 * its figures and one row's holders. */
#include "render.h"

#include <inttypes.h>
#include <stdio.h>

#include "reach_view.h"

#define INDENT 14

static void text_holders(FILE *f, const struct hd_reach_row *r, int exact)
{
	char v[64];
	if (!r->nholders) {
		fputs(r->reachable_bytes > 0 ? "?" : "-", f);
		return;
	}
	for (size_t k = 0; k < r->nholders && k < 3; k++) {
		const struct hd_reach_holder *h = &r->holders[k];
		fprintf(f, "%s%s %s (%s", k ? "; " : "", h->root, h->name,
		        hd_fmt_bytes(v, sizeof v, h->bytes, 0, exact));
		if (h->hops > 0)
			fprintf(f, ", %" PRId64 " hop%s", h->hops, h->hops == 1 ? "" : "s");
		fputc(')', f);
	}
	if (r->nholders > 3)
		fprintf(f, "; %zu more", r->nholders - 3);
}

/* Row i's frames and holders, loaded if they are not (1: free them after). */
static int row_detail(struct hd_reach *m, size_t i, int *loaded)
{
	*loaded = i >= m->detailed;
	return *loaded ? hd_reach_row_detail(m, &m->rows[i]) : HD_OK;
}

int hd_write_reach_text(FILE *f, const struct hd_snap *b, struct hd_reach *m, int top, int exact)
{
	char t[64], v[4][64];
	fprintf(f, "reachability at snapshot %" PRId64 " (%s, %s) of pid %" PRId64 " (%s)\n",
	        m->snapshot_id, m->reason, hd_fmt_time_utc(t, sizeof t, m->time), b->pid, b->comm);
	if (m->snapshot_id != m->asked_id)
		fprintf(f, "(snapshot %" PRId64 " has no scan: the latest one before it)\n", m->asked_id);
	fprintf(f, "scan: %" PRId64 " sampled blocks, %" PRId64 " allocator blocks; the target paused "
	        "%.2f ms; %.0f ms, %s read; the copy cost %s\n\n", m->blocks, m->chunks, m->pause_ms,
	        m->duration_ms, hd_fmt_bytes(v[0], sizeof v[0], (double)m->bytes_scanned, 0, exact),
	        hd_fmt_bytes(v[1], sizeof v[1], (double)m->cow_bytes, 0, exact));
	fprintf(f, "%14s %14s %14s  %s\n", "LIVE", "UNREACHABLE", "REACHABLE", "HELD BY");
	size_t n = top > 0 && (size_t)top < m->nrows ? (size_t)top : m->nrows;
	for (size_t i = 0; i < n; i++) {
		struct hd_reach_row *r = &m->rows[i];
		int loaded;
		if (row_detail(m, i, &loaded) < 0)
			return HD_ERR;
		double live = r->unreachable_bytes + r->reachable_bytes + r->unknown_bytes;
		fprintf(f, "%14s %14s %14s  ", hd_fmt_bytes(v[0], sizeof v[0], live, 0, exact),
		        hd_fmt_bytes(v[1], sizeof v[1], r->unreachable_bytes, 0, exact),
		        hd_fmt_bytes(v[2], sizeof v[2], r->reachable_bytes, 0, exact));
		text_holders(f, r, exact);
		fprintf(f, "\n%*sstack %" PRId64 "%s\n", INDENT, "", r->stack_id,
		        r->unreachable_bytes > 0 && r->reachable_bytes <= 0 ? "  (leaked: nothing points "
		                                                              "to it)" : "");
		for (int k = 0; k < r->st.n; k++)
			hd_text_frame(f, r->st.f[k], INDENT);
		if (loaded)
			hd_reach_row_free(r);
	}
	double all = m->unreachable + m->reachable + m->unknown;
	fprintf(f, "total: unreachable %s (%.0f%% of the sampled live heap), reachable %s, unknown %s;"
	        " %zu call paths, %zu shown\n", hd_fmt_bytes(v[0], sizeof v[0], m->unreachable, 0, exact),
	        all > 0 ? 100 * m->unreachable / all : 0.0,
	        hd_fmt_bytes(v[1], sizeof v[1], m->reachable, 0, exact),
	        hd_fmt_bytes(v[2], sizeof v[2], m->unknown, 0, exact), m->count, n);
	return HD_OK;
}

int hd_write_reach_json(FILE *f, const struct hd_snap *b, struct hd_reach *m, int top)
{
	fprintf(f, "{\"reach\": {\"snapshot\": %" PRId64 ", \"asked\": %" PRId64 ", \"time\": %.3f"
	        ", \"reason\": ", m->snapshot_id, m->asked_id, m->time);
	hd_json_str(f, m->reason);
	fprintf(f, ", \"pid\": %" PRId64 ", \"comm\": ", b->pid);
	hd_json_str(f, b->comm);
	fprintf(f, ", \"scan\": {\"pause_ms\": %.3f, \"duration_ms\": %.3f, \"bytes_scanned\": %" PRId64
	        ", \"cow_bytes\": %" PRId64 ", \"chunks\": %" PRId64 ", \"blocks\": %" PRId64 "}"
	        ", \"unreachable_bytes\": %.0f, \"reachable_bytes\": %.0f, \"unknown_bytes\": %.0f"
	        ", \"rows\": [", m->pause_ms, m->duration_ms, m->bytes_scanned, m->cow_bytes, m->chunks,
	        m->blocks, m->unreachable, m->reachable, m->unknown);
	size_t n = top > 0 && (size_t)top < m->nrows ? (size_t)top : m->nrows;
	for (size_t i = 0; i < n; i++) {
		struct hd_reach_row *r = &m->rows[i];
		int loaded;
		if (row_detail(m, i, &loaded) < 0)
			return HD_ERR;
		fprintf(f, "%s\n  {\"stack_id\": %" PRId64 ", \"kind\": \"%s\", \"live_bytes\": %.0f, ",
		        i ? "," : "", r->stack_id, hd_kind_name(r->kind),
		        r->unreachable_bytes + r->reachable_bytes + r->unknown_bytes);
		hd_json_reach_row(f, r);
		fputs(", \"frames\": ", f);
		hd_json_frames(f, &r->st);
		fputc('}', f);
		if (loaded)
			hd_reach_row_free(r);
	}
	fputs("]}}\n", f);
	return HD_OK;
}
