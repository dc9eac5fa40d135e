/* db_hostile.h -- the structured mode of tests/fuzz/fuzz_db.c: turn fuzzer
 * bytes into SQL edits of a valid heapattach database, so that what
 * heapdiff meets is a well-formed SQLite file holding hostile values, not
 * mostly pages SQLite itself refuses.
 *
 * The database is the seed with its NOT NULL constraints taken out of the
 * schema (db_relax: a hostile file can have any schema that passes
 * heapdiff's checks of meta and application_id), so that any column can
 * hold NULL.  Then each op (db_apply) is
 *   OP COLUMN ROW VALUE...
 * (one byte each, VALUE with its operands): OP % 6 is
 *   0, 1  UPDATE the column of the ROW-th row of its table to VALUE;
 *   2     INSERT a copy of that row with the column set to VALUE (a new
 *         id where the table has one): dangling references, duplicates;
 *   3     DELETE that row: references to nothing;
 *   4     give the ROW-th stack (VALUE % 2048 + 1) frames, all the frame
 *         of the COLUMN-th stack_frames row: deep and recursive stacks;
 *   5     VALUE % 512 more snapshots of the ROW-th snapshot's session:
 *         long series for --leaks.
 * COLUMN indexes the columns of every table heapdiff reads (hd_cols);
 * VALUE (db_bind) is NULL, an integer or real at the edges (0, -1,
 * INT64_MAX and MIN, 2^53 + 1, 1e308, -DBL_MAX, +-inf, the smallest
 * subnormal...), a string with markup, quotes, backslashes, newlines,
 * control characters, ESC and C1 sequences, invalid or overlong UTF-8,
 * surrogates, a folded-format separator or a format string, a long one,
 * a blob, text that SQLite turns into a number, or raw bytes of the input
 * (a length byte, then that many bytes).  There are no parent ids in the
 * schema to make a cycle of: stacks are rows of stack_frames by position,
 * and what comes nearest (one frame repeated 2048 deep, positions that
 * repeat or skip, a frame or module that does not exist) is what ops 0-4
 * make.  SQL errors (a UNIQUE key, a missing row) are ignored: the op then
 * changes nothing. */
#ifndef HA_DB_HOSTILE_H
#define HA_DB_HOSTILE_H

#include <float.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A table heapdiff reads: its key columns ("rowid" if it has one), its
 * INTEGER PRIMARY KEY (or NULL) and every column (for a copy). */
struct hd_table {
	const char *name, *key, *id, *cols;
};
enum { T_SESSIONS, T_SNAPSHOTS, T_MODULES, T_FRAMES, T_STACKS, T_SF, T_BUCKETS, T_SS, T_KINDS, T_META };
static const struct hd_table hd_tables[] = {
	[T_SESSIONS] = { "sessions", "rowid", "id",
	                 "id, pid, comm, exe, sample_interval, start_time, end_time, rss_period" },
	[T_SNAPSHOTS] = { "snapshots", "rowid", "id",
	                  "id, session_id, time, rss_bytes, samples, drops, unwind_failures, reason, "
	                  "sample_interval, rss_anon_bytes, swap_bytes, rss_samples, rss_lost" },
	[T_MODULES] = { "modules", "rowid", "id", "id, path, build_id" },
	[T_FRAMES] = { "frames", "rowid", "id", "id, module_id, rel_pc, function, file, line, inlined" },
	[T_STACKS] = { "stacks", "rowid", "id", "id, hash, depth" },
	[T_SF] = { "stack_frames", "stack_id, pos", NULL, "stack_id, pos, frame_id" },
	[T_BUCKETS] = { "buckets", "session_id, stack_id, kind, snapshot_id", NULL,
	                "session_id, stack_id, kind, snapshot_id, alloc_count, alloc_bytes, "
	                "free_count, free_bytes, live_count, live_bytes" },
	[T_SS] = { "session_stacks", "session_id, stack_id, kind", NULL,
	           "session_id, stack_id, kind, first_snapshot_id" },
	[T_KINDS] = { "kinds", "rowid", "id", "id, name" },
	[T_META] = { "meta", "key", NULL, "key, value" },
};

struct hd_col {
	int table;
	const char *column;
};
static const struct hd_col hd_cols[] = {
	{ T_SESSIONS, "id" }, { T_SESSIONS, "pid" }, { T_SESSIONS, "comm" }, { T_SESSIONS, "exe" },
	{ T_SESSIONS, "sample_interval" }, { T_SESSIONS, "start_time" }, { T_SESSIONS, "end_time" },
	{ T_SESSIONS, "rss_period" },
	{ T_SNAPSHOTS, "id" }, { T_SNAPSHOTS, "session_id" }, { T_SNAPSHOTS, "time" },
	{ T_SNAPSHOTS, "rss_bytes" }, { T_SNAPSHOTS, "samples" }, { T_SNAPSHOTS, "drops" },
	{ T_SNAPSHOTS, "unwind_failures" }, { T_SNAPSHOTS, "reason" },
	{ T_SNAPSHOTS, "sample_interval" }, { T_SNAPSHOTS, "rss_anon_bytes" },
	{ T_SNAPSHOTS, "swap_bytes" }, { T_SNAPSHOTS, "rss_samples" }, { T_SNAPSHOTS, "rss_lost" },
	{ T_MODULES, "id" }, { T_MODULES, "path" }, { T_MODULES, "build_id" },
	{ T_FRAMES, "id" }, { T_FRAMES, "module_id" }, { T_FRAMES, "rel_pc" },
	{ T_FRAMES, "function" }, { T_FRAMES, "file" }, { T_FRAMES, "line" }, { T_FRAMES, "inlined" },
	{ T_STACKS, "id" }, { T_STACKS, "depth" },
	{ T_SF, "stack_id" }, { T_SF, "pos" }, { T_SF, "frame_id" },
	{ T_BUCKETS, "session_id" }, { T_BUCKETS, "stack_id" }, { T_BUCKETS, "kind" },
	{ T_BUCKETS, "snapshot_id" }, { T_BUCKETS, "alloc_count" }, { T_BUCKETS, "alloc_bytes" },
	{ T_BUCKETS, "free_count" }, { T_BUCKETS, "free_bytes" }, { T_BUCKETS, "live_count" },
	{ T_BUCKETS, "live_bytes" },
	{ T_SS, "session_id" }, { T_SS, "stack_id" }, { T_SS, "kind" }, { T_SS, "first_snapshot_id" },
	{ T_KINDS, "id" }, { T_KINDS, "name" },
	{ T_META, "value" },
};
#define HD_NCOLS (sizeof hd_cols / sizeof hd_cols[0])

static const char *const hostile_text[] = {
	"<script>alert(1)</script>", "</script><script>alert(2)</script>",
	"<img src=x onerror=alert(3)>", "</title><b>bold</b>", "<!-- -->", "]]><x/>",
	"\"double\" 'single' `back`", "back\\slash\\", "line\nbreak\r\nend", "tab\there",
	"\x1b[31mred\x1b[0m", "\x1b]0;title\x07", ("\xc2\x9b" "2J C1 CSI"), "\x7f del",
	"\xff\xfe\xfd invalid", "\xed\xa0\x80 surrogate", "\xf4\x90\x80\x80 past U+10FFFF",
	"\xc0\xaf overlong", "\xe2\x80\xa8 U+2028 \xe2\x80\xa9", "\xef\xbf\xbe U+FFFE",
	"&amp; &lt; &#0; &#x110000; &", "a;b;c frame;separators", "%s%n%x%p", "", " ",
	"{\"json\": [1, 2]}", "\\u0000 \\\" \\/", "trailing \\", "naïve ünïcødé ✓ 日本",
	"1e999", "-1e999", "9223372036854775808", "-9223372036854775809", "0x10", " 12 ",
	"NaN", "inf", "peak", "first", "heap", "rss",
};

/* Bind the value the input spells at *p (advancing it) as parameter i. */
static void db_bind(sqlite3_stmt *q, int i, const uint8_t **p, const uint8_t *end)
{
	static const int64_t ints[] = {
		0, -1, 1, 2, INT64_MAX, INT64_MIN, INT64_MIN + 1, INT32_MAX, (int64_t)INT32_MAX + 1,
		INT32_MIN, (1LL << 53) + 1, -(1LL << 53) - 1, 4096, 1LL << 40, 1LL << 62,
	};
	static const double reals[] = {
		1e308, -1e308, DBL_MAX, -DBL_MAX, 5e-324, -0.0, 0.5, -0.5, 1e19, -1e19, 9.3e18,
		-9.3e18, 1e15, 1e300, 4503599627370497.0, 1.5e-10,
	};
	unsigned v = *p < end ? *(*p)++ : 0;
	unsigned nint = sizeof ints / sizeof ints[0], nreal = sizeof reals / sizeof reals[0];
	unsigned ntext = sizeof hostile_text / sizeof hostile_text[0];
	unsigned kinds = 1 + nint + nreal + 2 + ntext + 5;
	v %= kinds;
	if (v == 0) {
		sqlite3_bind_null(q, i);
		return;
	}
	v -= 1;
	if (v < nint) {
		sqlite3_bind_int64(q, i, ints[v]);
		return;
	}
	v -= nint;
	if (v < nreal) {
		sqlite3_bind_double(q, i, reals[v]);
		return;
	}
	v -= nreal;
	if (v < 2) {
		sqlite3_bind_double(q, i, v ? -INFINITY : INFINITY);
		return;
	}
	v -= 2;
	if (v < ntext) {
		sqlite3_bind_text(q, i, hostile_text[v], -1, SQLITE_STATIC);
		return;
	}
	v -= ntext;
	switch (v) {
	case 0: { /* a small integer of the input: an id that may or may not exist */
		int64_t k = *p < end ? (int8_t) * (*p)++ : 0;
		sqlite3_bind_int64(q, i, k);
		return;
	}
	case 1: { /* a raw string of the input */
		size_t n = *p < end ? *(*p)++ : 0;
		if (n > (size_t)(end - *p))
			n = (size_t)(end - *p);
		sqlite3_bind_text(q, i, (const char *)*p, (int)n, SQLITE_TRANSIENT);
		*p += n;
		return;
	}
	case 2: { /* a blob with a NUL in it */
		static const uint8_t blob[] = { 'a', 0, 0xff, '<', 0x1b };
		sqlite3_bind_blob(q, i, blob, sizeof blob, SQLITE_STATIC);
		return;
	}
	case 3: { /* a long string: past HD_MAX_TEXT */
		static char big[6000];
		if (!big[0])
			memset(big, 'W', sizeof big - 1);
		sqlite3_bind_text(q, i, big, -1, SQLITE_STATIC);
		return;
	}
	default: { /* 8 raw bytes of the input as an integer */
		int64_t k = 0;
		size_t n = (size_t)(end - *p) < 8 ? (size_t)(end - *p) : 8;
		memcpy(&k, *p, n);
		*p += n;
		sqlite3_bind_int64(q, i, k);
		return;
	}
	}
}

static void db_exec(sqlite3 *h, const char *sql)
{
	sqlite3_exec(h, sql, NULL, NULL, NULL);
}

/* Take the NOT NULL constraints out of the schema (see the top). */
static void db_relax(sqlite3 *h)
{
	db_exec(h, "PRAGMA writable_schema = ON");
	db_exec(h, "UPDATE sqlite_schema SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'");
	db_exec(h, "PRAGMA writable_schema = OFF");
}

/* Prepare sql (printf-style), or NULL. */
static sqlite3_stmt *db_prep(sqlite3 *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static sqlite3_stmt *db_prep(sqlite3 *h, const char *fmt, ...)
{
	char sql[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sql, sizeof sql, fmt, ap);
	va_end(ap);
	sqlite3_stmt *q = NULL;
	if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) != SQLITE_OK) {
		sqlite3_finalize(q);
		return NULL;
	}
	return q;
}

static void db_run(sqlite3_stmt *q)
{
	if (!q)
		return;
	while (sqlite3_step(q) == SQLITE_ROW)
		;
	sqlite3_finalize(q);
}

/* Apply the ops of [p, end) to h (see the top). */
static void db_apply(sqlite3 *h, const uint8_t *p, const uint8_t *end)
{
	db_exec(h, "BEGIN");
	for (int ops = 0; end - p >= 3 && ops < 64; ops++) {
		unsigned op = p[0] % 6, ci = p[1] % HD_NCOLS, row = p[2];
		const struct hd_col *col = &hd_cols[ci];
		const struct hd_table *t = &hd_tables[col->table];
		p += 3;
		sqlite3_stmt *q = NULL;
		/* the row: its key columns equal those of the ROW-th row */
		char where[256];
		snprintf(where, sizeof where, "(%s) = (SELECT %s FROM %s LIMIT 1 OFFSET %u)", t->key,
		         t->key, t->name, row);
		switch (op) {
		case 0:
		case 1:
			q = db_prep(h, "UPDATE %s SET %s = ?1 WHERE %s", t->name, col->column, where);
			break;
		case 2: {
			/* the copy: every column as it is but this one, and the id
			 * left to SQLite */
			char sel[512];
			size_t k = 0;
			const char *s = t->cols;
			sel[0] = '\0';
			while (*s && k < sizeof sel - 64) {
				size_t len = strcspn(s, ",");
				char name[64];
				snprintf(name, sizeof name, "%.*s", (int)len, s);
				const char *nm = name[0] == ' ' ? name + 1 : name;
				k += (size_t)snprintf(sel + k, sizeof sel - k, "%s%s", k ? ", " : "",
				                      strcmp(nm, col->column) == 0 ? "?1"
				                      : t->id && strcmp(nm, t->id) == 0 ? "NULL" : nm);
				s += len;
				if (*s == ',')
					s++;
			}
			q = db_prep(h, "INSERT OR IGNORE INTO %s (%s) SELECT %s FROM %s LIMIT 1 OFFSET %u",
			            t->name, t->cols, sel, t->name, row);
			break;
		}
		case 3:
			q = db_prep(h, "DELETE FROM %s WHERE %s", t->name, where);
			break;
		case 4: {
			unsigned n = p < end ? (unsigned)*p++ * 8 % 2048 + 1 : 1;
			q = db_prep(h, "INSERT OR REPLACE INTO stack_frames (stack_id, pos, frame_id) "
			            "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < %u) "
			            "SELECT (SELECT id FROM stacks LIMIT 1 OFFSET %u), i, "
			            "(SELECT frame_id FROM stack_frames LIMIT 1 OFFSET %u) FROM k", n, row, ci);
			db_run(q);
			q = db_prep(h, "UPDATE stacks SET depth = %u WHERE id = (SELECT id FROM stacks LIMIT 1 "
			            "OFFSET %u)", n, row);
			db_run(q);
			continue;
		}
		case 5: {
			unsigned n = p < end ? *p++ % 512 : 0;
			q = db_prep(h, "INSERT INTO snapshots (session_id, time, rss_bytes, samples, drops, "
			            "unwind_failures, reason, sample_interval) "
			            "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < %u) "
			            "SELECT s.session_id, s.time + k.i, s.rss_bytes + k.i, s.samples, s.drops, "
			            "s.unwind_failures, 'periodic', s.sample_interval FROM k, "
			            "(SELECT * FROM snapshots LIMIT 1 OFFSET %u) s", n, row);
			db_run(q);
			continue;
		}
		}
		if (q)
			db_bind(q, 1, &p, end);
		db_run(q);
	}
	db_exec(h, "COMMIT");
}

#endif
