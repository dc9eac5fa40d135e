/* db_thin_check.c -- the thinning of a long session's snapshots
 * (src/db/db_thin.c) on a synthetic session, checked: t_db_thin.sh.
 *
 *   db_thin_check DB
 *       writes DB (see thin() below), thins it, checks it; prints
 *       "thinned R of N snapshots: K kept, values equal", or one line on
 *       stderr and exit 1. */
#define _GNU_SOURCE
#include "db_int.h"
#include "db_write.h"
#include "db_rows.h"
#include "db.h"

#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T0 1700000000.0
#define N(a) (sizeof(a) / sizeof(a)[0])
static char err[512];

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("db_thin_check: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

#define CHECK(call)                                                          \
	do {                                                                 \
		if ((call) != 0)                                             \
			die("%s", err);                                      \
	} while (0)


/* As the collector writes it: a periodic snapshot with totals only but
 * once every HA_DB_PATHS_EVERY (db_write.h), its rows then those of the
 * next with paths (cumulative values: the latest). */
static void snapshot(struct ha_db *db, int64_t session, double t, uint64_t rss, uint64_t samples,
                     uint64_t drops, uint64_t unwf, const char *reason,
                     const struct ha_db_bucket *b, size_t n)
{
	static double first, last_paths;
	struct ha_db_snapshot s = snap_info(t, rss, samples, drops, unwf, reason);
	int64_t id;
	if (!first)
		first = last_paths = t;
	s.totals_only = strcmp(reason, "periodic") == 0 && !ha_db_paths_due(t - first, t - last_paths, 10.0);
	s.has_live = 1;
	for (size_t i = 0; i < n; i++)
		s.live_bytes[HA_KIND_HEAP] += b[i].live_bytes;
	if (!s.totals_only)
		last_paths = t;
	CHECK(ha_db_snapshot(db, session, &s, b, s.totals_only ? 0 : n, &id, err, sizeof err));
}

/* A session of 25 hours at 10 s (an 'attach' baseline, 9,000
 * periodic snapshots, the call paths once every two minutes and the totals
 * between, a 'signal' one at 2:46, a 'peak' one at 5:33 holding every
 * bucket, a 'detach' at the end): leak_steady grows 1000 bytes a snapshot,
 * churn changes every snapshot without growing, late_once is first seen at
 * snapshot 204 (0:34, to be thinned) and never changes again, pool_init at
 * the baseline only.  Then ha_db_thin, checked here: every value of
 * bucket_at at a snapshot kept is what it was; nothing but periodic
 * snapshots went; every one of the last 360 periods is kept; none with
 * totals only older than that; every one with paths up to 8,640 periods
 * old, and no two older share ten minutes; a second thinning removes
 * nothing.  Prints "thinned R of N snapshots: K kept, P with paths, values
 * equal". */

struct val {
	int64_t snap, stack;
	double live, alloc;
};

static size_t read_values(struct ha_db *db, struct val **out)
{
	sqlite3_stmt *q;
	size_t n = 0, cap = 0;
	*out = NULL;
	if (sqlite3_prepare_v2(db->h, "SELECT snapshot_id, stack_id, live_bytes, alloc_bytes FROM bucket_at "
	                       "ORDER BY snapshot_id, stack_id", -1, &q, NULL) != SQLITE_OK)
		die("bucket_at: %s", sqlite3_errmsg(db->h));
	while (sqlite3_step(q) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			*out = realloc(*out, cap * sizeof **out);
			if (!*out)
				die("out of memory");
		}
		(*out)[n++] = (struct val){ sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
			                    sqlite3_column_double(q, 2), sqlite3_column_double(q, 3) };
	}
	sqlite3_finalize(q);
	return n;
}

static void thin(const char *path)
{
	static const char *APP = "/opt/app/bin/app", *APP_BID = "00112233445566778899aabbccddeeff00112233";
	struct ha_db_frame leak[] = { { APP, APP_BID, 0x2100, "leak_steady", "/src/app/app.c", 21, 0 },
		                      { APP, APP_BID, 0x2900, "main", "/src/app/app.c", 90, 0 } };
	struct ha_db_frame churn[] = { { APP, APP_BID, 0x2200, "churn", "/src/app/app.c", 31, 0 },
		                       { APP, APP_BID, 0x2910, "main", "/src/app/app.c", 91, 0 } };
	struct ha_db_frame late[] = { { APP, APP_BID, 0x2300, "late_once", "/src/app/app.c", 41, 0 },
		                      { APP, APP_BID, 0x2920, "main", "/src/app/app.c", 92, 0 } };
	struct ha_db_frame pool[] = { { APP, APP_BID, 0x2400, "pool_init", "/src/app/app.c", 10, 0 },
		                      { APP, APP_BID, 0x2930, "main", "/src/app/app.c", 93, 0 } };
	enum { PERIODIC = 9000 };
	struct ha_db *db;
	struct ha_db_session sess = SESSION(6161, "app", APP, 524288, T0 - 1);
	int64_t sid, l, c, lt, p;
	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	CHECK(ha_db_stack(db, leak, N(leak), &l, err, sizeof err));
	CHECK(ha_db_stack(db, churn, N(churn), &c, err, sizeof err));
	CHECK(ha_db_stack(db, late, N(late), &lt, err, sizeof err));
	CHECK(ha_db_stack(db, pool, N(pool), &p, err, sizeof err));
	/* (Not every snapshot synced: thousands of them.) */
	sqlite3_exec(db->h, "PRAGMA synchronous = OFF", NULL, NULL, NULL);
	struct ha_db_bucket b[4];
	b[0] = bucket(p, HA_KIND_HEAP, 500000, 10, 0, 0);
	snapshot(db, sid, T0, 20000000, 0, 0, 0, "attach", b, 1);
	for (int i = 1; i <= PERIODIC + 3; i++) {
		size_t n = 0;
		const char *reason = i == 1000 ? "signal" : i == 2000 ? "peak" : i == PERIODIC + 3 ? "detach" : "periodic";
		double t = T0 + 10.0 * i;
		b[n++] = bucket(l, HA_KIND_HEAP, 1000.0 * i, i, 0, 0);
		b[n++] = bucket(c, HA_KIND_HEAP, 4000.0 * i, 4 * i, 4000.0 * i - (i % 2) * 4000, 4 * i - (i % 2) * 4);
		if (i == 204 || i == 2000)
			b[n++] = bucket(lt, HA_KIND_HEAP, 7000, 7, 0, 0);
		if (i == 2000)
			b[n++] = bucket(p, HA_KIND_HEAP, 500000, 10, 0, 0);
		snapshot(db, sid, t, 20000000 + 1000 * (uint64_t)i, 100 * (uint64_t)i, 0, 0, reason, b, n);
	}
	struct val *before, *after;
	size_t nb = read_values(db, &before);
	sqlite3_stmt *q;
	int64_t total = 0, kept = 0;
	if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM snapshots", -1, &q, NULL) != SQLITE_OK ||
	    sqlite3_step(q) != SQLITE_ROW)
		die("count");
	total = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	int removed, again;
	CHECK(ha_db_thin(db, sid, 10.0, &removed, err, sizeof err));
	CHECK(ha_db_thin(db, sid, 10.0, &again, err, sizeof err));
	if (again)
		die("a second thinning removed %d more", again);
	size_t na = read_values(db, &after);
	/* Every row after is the row before of the same (snapshot, stack). */
	size_t j = 0;
	for (size_t i = 0; i < na; i++) {
		while (j < nb && (before[j].snap < after[i].snap ||
		                  (before[j].snap == after[i].snap && before[j].stack < after[i].stack)))
			j++;
		if (j == nb || before[j].snap != after[i].snap || before[j].stack != after[i].stack ||
		    before[j].live != after[i].live || before[j].alloc != after[i].alloc)
			die("snapshot %lld stack %lld: %.0f live after the thinning, not what it was",
			    (long long)after[i].snap, (long long)after[i].stack, after[i].live);
	}
	/* And every row before of a kept snapshot is still there. */
	if (sqlite3_prepare_v2(db->h, "SELECT id, time, reason, paths FROM snapshots ORDER BY id", -1, &q,
	                       NULL) != SQLITE_OK)
		die("snapshots");
	double newest = T0 + 10.0 * (PERIODIC + 3), prev_key = -1;
	int64_t prev_id = 0, expect_rows = 0, with_paths = 0, young_paths = 0;
	int signal = 0, peak = 0, attach = 0, detach = 0;
	while (sqlite3_step(q) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(q, 0);
		double t = sqlite3_column_double(q, 1), age = (newest - t) / 10.0;
		const char *r = (const char *)sqlite3_column_text(q, 2);
		int paths = sqlite3_column_int(q, 3);
		kept++;
		with_paths += paths;
		if (strcmp(r, "periodic") == 0 && age > 360 && !paths)
			die("snapshot %lld, %.0f periods old, with totals only, kept", (long long)id, age);
		young_paths += strcmp(r, "periodic") == 0 && paths && age > 360 && age <= 8640;
		signal += strcmp(r, "signal") == 0;
		peak += strcmp(r, "peak") == 0;
		attach += strcmp(r, "attach") == 0;
		detach += strcmp(r, "detach") == 0;
		for (size_t i = 0; i < nb; i++)
			expect_rows += before[i].snap == id;
		if (strcmp(r, "periodic") == 0 && age > 8640) {
			double key = floor(t / 600);
			if (key == prev_key)
				die("snapshots %lld and %lld kept in the same ten minutes", (long long)prev_id,
				    (long long)id);
			prev_key = key;
			prev_id = id;
		}
	}
	sqlite3_finalize(q);
	if ((size_t)expect_rows != na)
		die("%zu values after the thinning, %lld before at the snapshots kept", na, (long long)expect_rows);
	if (!signal || !peak || !attach || !detach)
		die("a snapshot not periodic was thinned (signal %d peak %d attach %d detach %d)", signal, peak, attach, detach);
	/* The last 360 periods: 361 periodic snapshots and the detach. */
	if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM snapshots WHERE time >= ?1", -1, &q, NULL) != SQLITE_OK)
		die("recent");
	sqlite3_bind_double(q, 1, newest - 3600);
	if (sqlite3_step(q) != SQLITE_ROW || sqlite3_column_int64(q, 0) != 361)
		die("%lld snapshots in the last hour, not 361", (long long)sqlite3_column_int64(q, 0));
	sqlite3_finalize(q);
	/* one every two minutes from 360 to 8,640 periods old: 690 */
	if (young_paths < 685 || young_paths > 691)
		die("%lld periodic snapshots with paths kept between 1 and 24 hours old, not 690",
		    (long long)young_paths);
	if (removed != total - kept || kept > 1200)
		die("removed %d, %lld of %lld kept", removed, (long long)kept, (long long)total);
	printf("thinned %d of %lld snapshots: %lld kept, %lld with paths, values equal\n", removed,
	       (long long)total, (long long)kept, (long long)with_paths);
	free(before);
	free(after);
	CHECK(ha_db_end_session(db, sid, newest + 1, err, sizeof err));
	ha_db_close(db);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: db_thin_check DB\n");
		return 2;
	}
	thin(argv[1]);
	return 0;
}
