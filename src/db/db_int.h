/* db_int.h -- what the files of src/db share: the handle and the SQL
 * helpers of both.  db_open.c opens, checks, creates, upgrades and closes
 * (all that heapdiff links); db_write.c writes (the attacher's writer
 * thread), and its part of the handle is freed through close_writer, so
 * that closing a read-only handle links none of it. */
#ifndef HA_DB_INT_H
#define HA_DB_INT_H

#include "db.h"
#include "hashtab.h"
#include "util.h"

#include <sqlite3.h>

/* The writer's prepared statements (db_write.c: stmt_sql). */
enum {
	ST_INS_MODULE, ST_SEL_MODULE, ST_INS_FRAME, ST_SEL_FRAME,
	ST_INS_STACK, ST_SEL_STACK, ST_SEL_STACK_FRAMES, ST_INS_STACK_FRAME,
	ST_INS_SESSION, ST_END_SESSION, ST_SESSION_PYTHON, ST_INS_SNAPSHOT, ST_INS_BUCKET,
	ST_INS_SESSION_STACK, ST_COUNT
};

struct ha_db {
	sqlite3 *h;
	char *path;
	int readonly;
	int beside_absent;         /* no -wal nor -shm before it opened (db_open.c) */
	/* the rest is db_write.c's, set up by ha_db_open */
	void (*close_writer)(struct ha_db *db);   /* frees it; NULL: read-only */
	sqlite3_stmt *st[ST_COUNT];
	struct ha_hashtab stacks;  /* callstack ids by content hash (db_write.c) */
	struct ha_hashtab modules; /* module ids by path and build id */
	int64_t *frame_ids;       /* scratch for ha_db_stack */
	size_t frame_ids_cap;
	/* The keyframe the next snapshot of kf_session is read from
	 * (db_write.c, write_keyframe); kf_session 0: to be read again from
	 * the file (ha_db_thin may have moved it). */
	int64_t kf_session, kf_base;
	uint64_t kf_rows;          /* rows written after the keyframe */
	uint64_t kf_keys;          /* buckets of the session (session_stacks) */
	/* Totals-only snapshots not yet written (db_write.c, ha_db_snapshot). */
	struct ha_db_pending *pending;
	size_t npending;
};

/* Write the totals-only snapshots kept, in a transaction of their own
 * (db_write.c); 0 when there are none. */
int ha_db_commit_pending(struct ha_db *db, char *err, size_t errlen);

/* Open (readonly 0: create, upgrade) with every check; db_open.c. */
int db_open_file(const char *path, int readonly, struct ha_db **out, char *err, size_t errlen);

/* After a snapshot's rows went in (its transaction still open): is it a
 * keyframe, made one, or read from the one before (db_keyframe.c);
 * new_keys: the buckets it was the first row of.  Sets its base_id. */
int ha_db_keyframe(struct ha_db *db, int64_t session, int64_t sid, uint64_t new_keys, char *err,
                   size_t errlen);

static inline int sql_fail(struct ha_db *db, char *err, size_t errlen, const char *what)
{
	ha_err(err, errlen, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
	return -1;
}

static inline int exec(struct ha_db *db, const char *sql, char *err, size_t errlen)
{
	if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sql_fail(db, err, errlen, sql);
	return 0;
}

static inline void rollback(struct ha_db *db)
{
	if (!sqlite3_get_autocommit(db->h))
		sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
}

#endif
