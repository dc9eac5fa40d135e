/* db_thin.c -- the thinning of a long session's old snapshots (see
 * db_write.h, ha_db_thin; man heapattach-db(5), "Thinning").
 *
 * The rule, by a periodic snapshot's age (the time from it to the
 * session's newest snapshot) in snapshot periods P (--snapshot-every):
 * every one of the last 360 P; older, the snapshots with totals only go
 * (schema version 14: the call paths are written once every 12 P, the
 * totals every P; db_write.h, ha_db_paths_due), those with call paths stay
 * up to 8,640 P old, and older, the first of each 60 P.  At the default
 * 10 s: every snapshot of the last hour, the call paths once every two
 * minutes for a day, then once every ten minutes.  In periods, so that a
 * run at --snapshot-every 0.05 thins as a day at 10 s would (bench/soak).
 * What is written is then what is kept: a day writes 720 snapshots with
 * paths and keeps them all (a removed one cost its rows written, then
 * rewritten by the delete: with one a minute kept twelve hours, a day
 * wrote 5.5 times its file; bench/db_day).  The baseline, the
 * peak, the snapshots a person asked for (SIGUSR1, the live view's s), the
 * end (detach, exit, exec) and the newest are never removed: only reason
 * 'periodic' is (and never one with a reachability scan, nor the newest
 * with paths).
 *
 * Removing snapshot S loses no value of any snapshot kept.  Bucket rows are
 * cumulative and written only when they change (schema.sql), so a row at S
 * is the bucket's value until its next row: it moves to N, the next
 * snapshot with paths, unless N has a row of its own (a later value,
 * kept), and the buckets first seen at S are first seen at N.  Done oldest
 * first, each removal into the snapshot with paths right after it (which
 * may go later, taking the row on again), all in one transaction.  A
 * removed keyframe's successor becomes the keyframe of the snapshots read
 * from it (db_keyframe.c).  A snapshot with totals only has no rows: it
 * just goes. */
#define _GNU_SOURCE
#include "db_int.h"
#include "db_write.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define KEEP_ALL     360.0        /* periods: every snapshot this recent */
#define PATHS_UNTIL  8640.0       /* then those with paths up to this age */
#define COARSE       60.0         /* and one per COARSE periods older */

struct snap {
	int64_t id;
	double time;
	int periodic;
	int paths;
};

static int exec_sql(struct ha_db *db, const char *sql, char *err, size_t errlen)
{
	if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK)
		return sql_fail(db, err, errlen, sql);
	return 0;
}

/* Which snapshots go: keep[i] = 0 for those.  The rule above. */
static void choose(const struct snap *v, size_t n, double period, unsigned char *keep)
{
	double newest = n ? v[n - 1].time : 0;
	double prev_key = -1;
	size_t last_paths = n;
	for (size_t i = 0; i < n; i++)
		if (v[i].paths)
			last_paths = i;
	for (size_t i = 0; i < n; i++) {
		keep[i] = 1;
		double age = (newest - v[i].time) / period;
		if (i + 1 == n || i == last_paths || !v[i].periodic || age <= KEEP_ALL)
			continue;
		if (!v[i].paths) {
			keep[i] = 0;
			continue;
		}
		if (age <= PATHS_UNTIL)
			continue;
		/* The first periodic snapshot with paths of its ten minutes. */
		double key = floor(v[i].time / (COARSE * period));
		if (key == prev_key)
			keep[i] = 0;
		prev_key = key;
	}
}

/* Move S's rows into N, then remove S (see the top of the file); n 0: S
 * has totals only. */
static int merge_into(struct ha_db *db, int64_t session, int64_t s, int64_t n, char *err,
                      size_t errlen)
{
	/* S's rows that N does not change itself */
	static const char move_rows[] =
		"INSERT OR IGNORE INTO buckets (session_id, stack_id, kind, snapshot_id, alloc_count, "
		"alloc_bytes, free_count, free_bytes, live_count, live_bytes) "
		"SELECT session_id, stack_id, kind, ?3, alloc_count, alloc_bytes, free_count, "
		"free_bytes, live_count, live_bytes FROM buckets WHERE session_id = ?1 AND snapshot_id = ?2";
	static const char *const sql[] = {
		move_rows,
		"DELETE FROM buckets WHERE session_id = ?1 AND snapshot_id = ?2",
		"UPDATE session_stacks SET first_snapshot_id = ?3 WHERE session_id = ?1 AND first_snapshot_id = ?2",
		/* S a keyframe: N now holds every bucket, the keyframe of those read from S. */
		"UPDATE snapshots SET base_id = ?3 WHERE session_id = ?1 AND base_id = ?2",
		"DELETE FROM memory_terms WHERE snapshot_id = ?2",
		"DELETE FROM memory_arenas WHERE snapshot_id = ?2",
		"DELETE FROM memory_pinning WHERE snapshot_id = ?2",
		"DELETE FROM snapshots WHERE session_id = ?1 AND id = ?2",
	};
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
		sqlite3_stmt *q;
		if (n == 0 && i < 4)
			continue; /* totals only: no rows, no keys, no keyframe role */
		if (sqlite3_prepare_v2(db->h, sql[i], -1, &q, NULL) != SQLITE_OK)
			return sql_fail(db, err, errlen, "thinning");
		sqlite3_bind_int64(q, 1, session);
		sqlite3_bind_int64(q, 2, s);
		if (sqlite3_bind_parameter_count(q) >= 3)
			sqlite3_bind_int64(q, 3, n);
		int rc = sqlite3_step(q);
		sqlite3_finalize(q);
		if (rc != SQLITE_DONE)
			return sql_fail(db, err, errlen, "thinning");
	}
	return 0;
}

int ha_db_thin(struct ha_db *db, int64_t session_id, double period, int *removed, char *err,
               size_t errlen)
{
	struct snap *v = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *q;
	int rc = -1;
	*removed = 0;
	if (!(period > 0))
		return 0;
	if (ha_db_commit_pending(db, err, errlen) < 0)
		return -1;
	if (sqlite3_prepare_v2(db->h, "SELECT id, time, reason = 'periodic' AND id NOT IN "
	                       "(SELECT snapshot_id FROM reach_scans), paths FROM snapshots "
	                       "WHERE session_id = ?1 ORDER BY id", -1, &q, NULL) != SQLITE_OK)
		return sql_fail(db, err, errlen, "thinning");
	sqlite3_bind_int64(q, 1, session_id);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			struct snap *nv = realloc(v, cap * sizeof *v);
			if (!nv) {
				sqlite3_finalize(q);
				free(v);
				ha_err(err, errlen, "thinning: out of memory");
				return -1;
			}
			v = nv;
		}
		v[n++] = (struct snap){ sqlite3_column_int64(q, 0), sqlite3_column_double(q, 1),
			                sqlite3_column_int(q, 2), sqlite3_column_int(q, 3) };
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE) {
		free(v);
		return sql_fail(db, err, errlen, "thinning");
	}
	unsigned char *keep = malloc(n ? n : 1);
	if (!keep) {
		free(v);
		ha_err(err, errlen, "thinning: out of memory");
		return -1;
	}
	choose(v, n, period, keep);
	db->kf_session = 0; /* the keyframe the writer kept may go (db_keyframe.c) */
	size_t gone = 0;
	for (size_t i = 0; i < n; i++)
		gone += !keep[i];
	rc = 0;
	if (gone) {
		rc = -1;
		if (exec_sql(db, "BEGIN IMMEDIATE", err, errlen) < 0)
			goto out;
		for (size_t i = 0; i + 1 < n; i++) {
			if (keep[i])
				continue;
			size_t j = i + 1; /* the next with paths: choose keeps the last */
			while (v[i].paths && j + 1 < n && !v[j].paths)
				j++;
			if (merge_into(db, session_id, v[i].id, v[i].paths ? v[j].id : 0, err, errlen) < 0) {
				sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
				goto out;
			}
		}
		if (exec_sql(db, "COMMIT", err, errlen) < 0) {
			sqlite3_exec(db->h, "ROLLBACK", NULL, NULL, NULL);
			goto out;
		}
		*removed = (int)gone;
		rc = 0;
	}
out:
	free(keep);
	free(v);
	return rc;
}
