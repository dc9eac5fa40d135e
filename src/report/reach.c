/* reach.c -- a reachability scan read back (reach.h).  Every value is
 * checked as the rest of the report's are (hd_col_real), names cleaned
 * (they come from the target's symbols): the file may be corrupt. */
#define _GNU_SOURCE
#include "reach_view.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#define ROWS_MAX    1000000
#define HOLDERS_MAX 64

static int find_scan(const struct hd_snap *b, struct hd_reach *m)
{
	struct hd_source *s = b->src;
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT s.id, s.time, s.reason, r.pause_ms, r.duration_ms, r.bytes_scanned,"
	               " r.cow_bytes, r.chunks, r.blocks FROM reach_scans r"
	               " JOIN snapshots s ON s.id = r.snapshot_id"
	               " WHERE s.session_id = ?1 AND s.id <= ?2 AND r.error = ''"
	               " ORDER BY s.id DESC LIMIT 1", &q) < 0)
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
		m->pause_ms = hd_col_real(s, q, 3);
		m->duration_ms = hd_col_real(s, q, 4);
		int64_t *v[] = { &m->bytes_scanned, &m->cow_bytes, &m->chunks, &m->blocks };
		for (int k = 0; k < 4; k++)
			*v[k] = sqlite3_column_int64(q, 5 + k);
		rc = s->err->set ? HD_ERR : 1;
	}
	sqlite3_finalize(q);
	return rc;
}

static int load_holders(struct hd_source *s, int64_t scan, struct hd_reach_row *r)
{
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT root, name, bytes, count, hops FROM reach_holders"
	               " WHERE snapshot_id = ?1 AND stack_id = ?2 AND kind = ?3"
	               " ORDER BY bytes DESC, name", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, scan);
	sqlite3_bind_int64(q, 2, r->stack_id);
	sqlite3_bind_int(q, 3, r->kind);
	int rc;
	size_t cap = 0;
	while (r->nholders < HOLDERS_MAX && (rc = hd_step(s, q)) == 1) {
		if (r->nholders == cap)
			r->holders = hd_xrealloc(r->holders, (cap = cap ? cap * 2 : 4) * sizeof *r->holders);
		struct hd_reach_holder *h = &r->holders[r->nholders++];
		h->root = hd_clean_text(sqlite3_column_text(q, 0));
		h->name = hd_clean_text(sqlite3_column_text(q, 1));
		h->bytes = hd_col_real(s, q, 2);
		h->count = hd_col_real(s, q, 3);
		h->hops = sqlite3_column_int64(q, 4);
	}
	if (r->nholders == HOLDERS_MAX)
		rc = 0;
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

static void row_values(struct hd_source *s, sqlite3_stmt *q, int at, struct hd_reach_row *r)
{
	double *v[] = { &r->unreachable_bytes, &r->unreachable_count, &r->reachable_bytes,
	                &r->reachable_count, &r->unknown_bytes, &r->unknown_count };
	for (int k = 0; k < 6; k++)
		*v[k] = hd_col_real(s, q, at + k);
}

static int by_unreachable(const void *a, const void *b)
{
	const struct hd_reach_row *x = a, *y = b;
	if (x->unreachable_bytes != y->unreachable_bytes)
		return x->unreachable_bytes > y->unreachable_bytes ? -1 : 1;
	if (x->reachable_bytes != y->reachable_bytes)
		return x->reachable_bytes > y->reachable_bytes ? -1 : 1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

int hd_reach_row_detail(const struct hd_reach *m, struct hd_reach_row *r)
{
	const struct hd_stack *st;
	if (hd_stack_get(m->src, r->stack_id, &st) < 0 || load_holders(m->src, m->snapshot_id, r) < 0)
		return HD_ERR;
	r->st = hd_fold(st, 0, &r->folded);
	return HD_OK;
}

/* Every row's figures (in the totals); the first `keep` (0: all) in rank
 * kept, the first `detail` of those with their frames and holders. */
static int load_rows(struct hd_source *s, struct hd_reach *m, size_t keep, size_t detail)
{
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT stack_id, kind, unreachable_bytes, unreachable_count,"
	               " reachable_bytes, reachable_count, unknown_bytes, unknown_count"
	               " FROM reach_rows WHERE snapshot_id = ?1", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, m->snapshot_id);
	int rc;
	size_t cap = 0;
	while (m->nrows < ROWS_MAX && (rc = hd_step(s, q)) == 1) {
		if (m->nrows == cap)
			m->rows = hd_xrealloc(m->rows, (cap = cap ? cap * 2 : 64) * sizeof *m->rows);
		struct hd_reach_row *r = memset(&m->rows[m->nrows++], 0, sizeof *m->rows);
		r->stack_id = sqlite3_column_int64(q, 0);
		r->kind = sqlite3_column_int(q, 1);
		row_values(s, q, 2, r);
		m->unreachable += r->unreachable_bytes;
		m->reachable += r->reachable_bytes;
		m->unknown += r->unknown_bytes;
	}
	if (m->nrows == ROWS_MAX)
		rc = 0;
	sqlite3_finalize(q);
	if (rc < 0)
		return HD_ERR;
	if (m->nrows)
		qsort(m->rows, m->nrows, sizeof *m->rows, by_unreachable);
	m->count = m->nrows;
	if (keep && m->nrows > keep)
		m->nrows = keep;
	m->src = s;
	for (; m->detailed < m->nrows && m->detailed < detail; m->detailed++)
		if (hd_reach_row_detail(m, &m->rows[m->detailed]) < 0)
			return HD_ERR;
	return HD_OK;
}

static int has_scans(struct hd_source *s, int *has)
{
	return hd_has_column(s, "reach_scans", "pause_ms", has);
}

static int reach_find(const struct hd_snap *b, size_t keep, size_t detail, struct hd_reach *m)
{
	struct hd_source *s = b->src;
	int has;
	memset(m, 0, sizeof *m);
	m->asked_id = b->id;
	if (has_scans(s, &has) < 0)
		return HD_ERR;
	if (!has)
		return 0;
	int rc = find_scan(b, m);
	if (rc <= 0)
		return rc;
	return load_rows(s, m, keep, detail) < 0 ? HD_ERR : 1;
}

int hd_reach_find(const struct hd_snap *b, size_t detail, struct hd_reach *m)
{
	return reach_find(b, detail, detail ? detail : SIZE_MAX, m);
}

int hd_reach_load(const struct hd_snap *b, size_t top, struct hd_reach *m)
{
	struct hd_source *s = b->src;
	int has;
	if (has_scans(s, &has) < 0)
		return HD_ERR;
	if (!has)
		return hd_fail(s->err, "%s: no reachability scans: the file was written before schema "
		               "version 11", s->path);
	int rc = reach_find(b, top, 0, m);
	if (rc == 0)
		return hd_fail(s->err, "%s: session %" PRId64 " has no reachability scan up to snapshot %"
		               PRId64 " (heapattach --reach, or SIGUSR2 to heapattach, makes one)",
		               s->path, b->session_id, b->id);
	return rc < 0 ? HD_ERR : HD_OK;
}

void hd_reach_row_free(struct hd_reach_row *r)
{
	for (size_t k = 0; k < r->nholders; k++) {
		free(r->holders[k].root);
		free(r->holders[k].name);
	}
	free(r->holders);
	r->holders = NULL;
	r->nholders = 0;
}

void hd_reach_free(struct hd_reach *m)
{
	for (size_t i = 0; i < m->nrows; i++)
		hd_reach_row_free(&m->rows[i]);
	free(m->rows);
	memset(m, 0, sizeof *m);
}

int hd_reach_latest(struct hd_source *s, int64_t session, int64_t *scan_id)
{
	int has;
	*scan_id = 0;
	if (has_scans(s, &has) < 0)
		return HD_ERR;
	if (!has)
		return HD_OK;
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT max(s.id) FROM reach_scans r JOIN snapshots s ON s.id = r.snapshot_id"
	               " WHERE s.session_id = ?1 AND r.error = ''", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, session);
	int rc = hd_step(s, q);
	if (rc == 1)
		*scan_id = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

int hd_reach_row_of(struct hd_source *s, int64_t scan_id, int64_t stack_id, int kind,
                    struct hd_reach_row *row)
{
	memset(row, 0, sizeof *row);
	row->stack_id = stack_id;
	row->kind = kind;
	sqlite3_stmt *q;
	if (hd_prepare(s, "SELECT unreachable_bytes, unreachable_count, reachable_bytes,"
	               " reachable_count, unknown_bytes, unknown_count FROM reach_rows"
	               " WHERE snapshot_id = ?1 AND stack_id = ?2 AND kind = ?3", &q) < 0)
		return HD_ERR;
	sqlite3_bind_int64(q, 1, scan_id);
	sqlite3_bind_int64(q, 2, stack_id);
	sqlite3_bind_int(q, 3, kind);
	int rc = hd_step(s, q);
	if (rc == 1)
		row_values(s, q, 0, row);
	sqlite3_finalize(q);
	if (rc < 0)
		return HD_ERR;
	return rc == 1 && load_holders(s, scan_id, row) < 0 ? HD_ERR : rc;
}
