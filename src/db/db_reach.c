/* db_reach.c -- a reachability scan written beside its snapshot (schema
 * version 10): the scan's figures in reach_scans, per callstack and kind
 * the live estimate split into unreachable, reachable and unknown in
 * reach_rows, and the holders of the reachable part in reach_holders.  One
 * transaction, after the snapshot's own: a crash between the two loses the
 * scan, never the snapshot.  Names come from the target (symbols): stored
 * as given, cleaned of control bytes by the scan. */
#include "db_int.h"
#include "db_write.h"

static int step_done(struct ha_db *db, sqlite3_stmt *st, char *err, size_t errlen,
                     const char *what)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc != SQLITE_DONE)
		return sql_fail(db, err, errlen, what);
	return 0;
}

static int write_rows(struct ha_db *db, int64_t snap, const struct ha_db_reach *r, char *err,
                      size_t errlen)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db->h, "INSERT OR REPLACE INTO reach_rows VALUES (?1, ?2, ?3, ?4, ?5, "
	                              "?6, ?7, ?8, ?9)", -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, errlen, "reach_rows");
	int rc = 0;
	for (size_t i = 0; i < r->nrows && rc == 0; i++) {
		const struct ha_db_reach_row *w = &r->rows[i];
		sqlite3_bind_int64(st, 1, snap);
		sqlite3_bind_int64(st, 2, w->stack_id);
		sqlite3_bind_int(st, 3, w->kind);
		sqlite3_bind_double(st, 4, w->unreachable_bytes);
		sqlite3_bind_double(st, 5, w->unreachable_count);
		sqlite3_bind_double(st, 6, w->reachable_bytes);
		sqlite3_bind_double(st, 7, w->reachable_count);
		sqlite3_bind_double(st, 8, w->unknown_bytes);
		sqlite3_bind_double(st, 9, w->unknown_count);
		rc = step_done(db, st, err, errlen, "reach_rows");
	}
	sqlite3_finalize(st);
	return rc;
}

static int write_holders(struct ha_db *db, int64_t snap, const struct ha_db_reach *r, char *err,
                         size_t errlen)
{
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db->h, "INSERT INTO reach_holders VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
	                              "ON CONFLICT DO UPDATE SET bytes = bytes + excluded.bytes, "
	                              "count = count + excluded.count, "
	                              "hops = min(hops, excluded.hops)",
	                       -1, &st, NULL) != SQLITE_OK)
		return sql_fail(db, err, errlen, "reach_holders");
	int rc = 0;
	for (size_t i = 0; i < r->nholders && rc == 0; i++) {
		const struct ha_db_reach_holder *h = &r->holders[i];
		sqlite3_bind_int64(st, 1, snap);
		sqlite3_bind_int64(st, 2, h->stack_id);
		sqlite3_bind_int(st, 3, h->kind);
		sqlite3_bind_text(st, 4, h->root, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 5, h->name, -1, SQLITE_STATIC);
		sqlite3_bind_double(st, 6, h->bytes);
		sqlite3_bind_double(st, 7, h->count);
		sqlite3_bind_int(st, 8, h->hops);
		rc = step_done(db, st, err, errlen, "reach_holders");
	}
	sqlite3_finalize(st);
	return rc;
}

int ha_db_reach(struct ha_db *db, int64_t snapshot_id, const struct ha_db_reach *r, char *err,
                size_t errlen)
{
	if (db->readonly || !sqlite3_get_autocommit(db->h)) {
		ha_err(err, errlen, "%s: cannot write a scan now", db->path);
		return -1;
	}
	if (exec(db, "BEGIN IMMEDIATE", err, errlen) < 0)
		return -1;
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(db->h, "INSERT OR REPLACE INTO reach_scans VALUES (?1, ?2, ?3, ?4, ?5, "
	                              "?6, ?7, ?8)", -1, &st, NULL) != SQLITE_OK) {
		sql_fail(db, err, errlen, "reach_scans");
		goto fail;
	}
	sqlite3_bind_int64(st, 1, snapshot_id);
	sqlite3_bind_double(st, 2, r->pause_ms);
	sqlite3_bind_double(st, 3, r->duration_ms);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)r->bytes_scanned);
	sqlite3_bind_int64(st, 5, (sqlite3_int64)r->cow_bytes);
	sqlite3_bind_int64(st, 6, (sqlite3_int64)r->chunks);
	sqlite3_bind_int64(st, 7, (sqlite3_int64)r->blocks);
	sqlite3_bind_text(st, 8, r->error, -1, SQLITE_STATIC);
	int rc = step_done(db, st, err, errlen, "reach_scans");
	sqlite3_finalize(st);
	if (rc != 0 || write_rows(db, snapshot_id, r, err, errlen) != 0 ||
	    write_holders(db, snapshot_id, r, err, errlen) != 0)
		goto fail;
	if (exec(db, "COMMIT", err, errlen) < 0)
		goto fail;
	return 0;
fail:
	rollback(db);
	return -1;
}
