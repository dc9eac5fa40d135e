/* db_keyframe.c -- which snapshot a new one is read from (snapshots.base_id;
 * schema.sql, version 12; man heapattach-db(5), "Storage").
 *
 * A snapshot stores the buckets that changed since the previous one; the
 * value of a bucket at S is its latest row in the snapshots base_id .. S.
 * A keyframe (base_id = its own id) holds a row for every bucket of the
 * session.  After the writer has put a snapshot's rows in (db_write.c, in
 * the snapshot's transaction), ha_db_keyframe decides:
 *   - the session's first snapshot, or one whose rows hold every bucket of
 *     the session (a busy program changes them all): a keyframe as it is;
 *   - one after which the rows since the keyframe would reach twice the
 *     session's buckets: made a keyframe by copying in the latest row of
 *     every bucket it has none of (so reading any snapshot reads at most
 *     about three times the buckets: the keyframe, then at most twice);
 *   - else read from the keyframe of the snapshot before it.
 * A snapshot with totals only (schema version 14) is none of these: it
 * has no rows and no base_id, and the writer does not call this for it.
 * The keyframe, the rows since and the session's buckets are kept in the
 * handle between snapshots (db_int.h, kf_*) and read again from the file
 * when the session changes or thinning (which may remove the keyframe)
 * ran. */
#define _GNU_SOURCE
#include "db_int.h"
#include "db_write.h"

#include <inttypes.h>

/* One integer from sql with up to three bound integers; 0 if no row. */
static int one_int(struct ha_db *db, const char *sql, int64_t a, int64_t b, int64_t c,
                   int64_t *out, char *err, size_t errlen)
{
	sqlite3_stmt *q;
	*out = 0;
	if (sqlite3_prepare_v2(db->h, sql, -1, &q, NULL) != SQLITE_OK)
		return sql_fail(db, err, errlen, "choosing the keyframe");
	int n = sqlite3_bind_parameter_count(q);
	if (n >= 1)
		sqlite3_bind_int64(q, 1, a);
	if (n >= 2)
		sqlite3_bind_int64(q, 2, b);
	if (n >= 3)
		sqlite3_bind_int64(q, 3, c);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(q, 0);
		rc = sqlite3_step(q);
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return sql_fail(db, err, errlen, "choosing the keyframe");
	return 0;
}

/* What the handle keeps, read from the file: the keyframe of the snapshot
 * before sid (0: none, sid is the session's first), the rows after it
 * and before sid, the session's buckets (sid's new ones included). */
static int load(struct ha_db *db, int64_t session, int64_t sid, char *err, size_t errlen)
{
	int64_t base, rows, keys;
	if (one_int(db, "SELECT base_id FROM snapshots WHERE session_id = ?1 AND id < ?2"
	                " AND base_id IS NOT NULL ORDER BY id DESC LIMIT 1", session, sid, 0, &base, err, errlen) < 0 ||
	    one_int(db, "SELECT count(*) FROM buckets WHERE session_id = ?1 AND snapshot_id > ?2"
	                " AND snapshot_id < ?3", session, base, sid, &rows, err, errlen) < 0 ||
	    one_int(db, "SELECT count(*) FROM session_stacks WHERE session_id = ?1", session, 0, 0,
	            &keys, err, errlen) < 0)
		return -1;
	db->kf_session = session;
	db->kf_base = base;
	db->kf_rows = (uint64_t)rows;
	db->kf_keys = (uint64_t)keys;
	return 0;
}

int ha_db_keyframe(struct ha_db *db, int64_t session, int64_t sid, uint64_t new_keys, char *err,
                   size_t errlen)
{
	int64_t rows, dummy;
	if (db->kf_session != session) {
		if (load(db, session, sid, err, errlen) < 0)
			goto fail;
	} else {
		db->kf_keys += new_keys;
	}
	if (one_int(db, "SELECT count(*) FROM buckets WHERE session_id = ?1 AND snapshot_id = ?2",
	            session, sid, 0, &rows, err, errlen) < 0)
		goto fail;
	if (db->kf_base <= 0 || (uint64_t)rows >= db->kf_keys) {
		db->kf_base = sid;
		db->kf_rows = 0;
	} else if (db->kf_rows + (uint64_t)rows >= 2 * db->kf_keys) {
		/* The latest row before sid of every bucket sid has none of
		 * (max(): SQLite takes the other columns from its row). */
		sqlite3_stmt *q;
		if (sqlite3_prepare_v2(db->h,
			"INSERT OR IGNORE INTO buckets (session_id, snapshot_id, stack_id, kind, alloc_count,"
			" alloc_bytes, free_count, free_bytes, live_count, live_bytes)"
			" SELECT ?1, ?3, stack_id, kind, alloc_count, alloc_bytes, free_count, free_bytes,"
			" live_count, live_bytes FROM (SELECT stack_id, kind, max(snapshot_id), alloc_count,"
			" alloc_bytes, free_count, free_bytes, live_count, live_bytes FROM buckets"
			" WHERE session_id = ?1 AND snapshot_id >= ?2 AND snapshot_id < ?3"
			" GROUP BY stack_id, kind)", -1, &q, NULL) != SQLITE_OK) {
			sql_fail(db, err, errlen, "writing a keyframe");
			goto fail;
		}
		sqlite3_bind_int64(q, 1, session);
		sqlite3_bind_int64(q, 2, db->kf_base);
		sqlite3_bind_int64(q, 3, sid);
		int rc = sqlite3_step(q);
		sqlite3_finalize(q);
		if (rc != SQLITE_DONE) {
			sql_fail(db, err, errlen, "writing a keyframe");
			goto fail;
		}
		db->kf_base = sid;
		db->kf_rows = 0;
	} else {
		db->kf_rows += (uint64_t)rows;
	}
	if (one_int(db, "UPDATE snapshots SET base_id = ?2 WHERE id = ?1", sid, db->kf_base, 0,
	            &dummy, err, errlen) < 0)
		goto fail;
	return 0;
fail:
	db->kf_session = 0;
	return -1;
}
