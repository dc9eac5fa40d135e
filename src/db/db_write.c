/* db_write.c -- writing the profile database (the attacher's writer
 * thread): sessions, interned callstacks, batches, snapshots.  Opening is
 * db_open.c's; ha_db_open adds the statements and caches of writing.
 *
 * Writing: the file is in WAL mode with synchronous=NORMAL, so interning a
 * new callstack is a cheap transaction of its own; a snapshot is one
 * transaction committed with synchronous=FULL, which also makes everything
 * committed before it durable.  A kill -9 at any moment loses at most the
 * transaction in progress.  At close the file goes back to a rollback
 * journal (leave_wal), so that a finished database is a single file.
 *
 * Interning: modules and frames by INSERT OR IGNORE on their UNIQUE keys and
 * a lookup; callstacks by a 64-bit content hash (stacks.hash, verified
 * against the stored frames on a hit, with linear probing on a collision)
 * and an in-memory cache keyed by a 128-bit content hash, so a callstack
 * already seen costs no SQL at all. */
#define _GNU_SOURCE
#include "db_write.h"
#include "db_int.h"
#include "db_memory.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HA_DB_HASH_PROBES 16

/* What a slot of either cache (hashtab.h) begins with. */
struct cached {
	uint64_t h;               /* the hash the slot was added with */
	int64_t id;               /* 0 = empty slot */
};

struct stack_slot {           /* a slot of db->stacks */
	struct cached c;          /* c.h: the first half of the 128-bit content hash */
	uint64_t b;               /* its second half */
};

struct module_slot {          /* a slot of db->modules */
	struct cached c;
	char *path, *build_id;
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_INS_MODULE] = "INSERT OR IGNORE INTO modules (path, build_id) VALUES (?1, ?2)",
	[ST_SEL_MODULE] = "SELECT id FROM modules WHERE path = ?1 AND build_id = ?2",
	[ST_INS_FRAME] = "INSERT OR IGNORE INTO frames (module_id, rel_pc, function, file, line, inlined)"
	                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	[ST_SEL_FRAME] = "SELECT id FROM frames WHERE module_id = ?1 AND rel_pc = ?2 AND function = ?3"
	                 " AND file = ?4 AND line = ?5 AND inlined = ?6",
	[ST_INS_STACK] = "INSERT OR IGNORE INTO stacks (hash, depth) VALUES (?1, ?2)",
	[ST_SEL_STACK] = "SELECT id, depth FROM stacks WHERE hash = ?1",
	[ST_SEL_STACK_FRAMES] = "SELECT frame_id FROM stack_frames WHERE stack_id = ?1 ORDER BY pos",
	[ST_INS_STACK_FRAME] = "INSERT INTO stack_frames (stack_id, pos, frame_id) VALUES (?1, ?2, ?3)",
	[ST_INS_SESSION] = "INSERT INTO sessions (pid, comm, exe, sample_interval, start_time,"
	                   " rss_period, hostname) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	[ST_END_SESSION] = "UPDATE sessions SET end_time = ?2 WHERE id = ?1",
	[ST_SESSION_PYTHON] = "UPDATE sessions SET python = ?2 WHERE id = ?1",
	[ST_INS_SNAPSHOT] = "INSERT INTO snapshots (session_id, time, rss_bytes, samples, drops,"
	                    " unwind_failures, reason, sample_interval, rss_anon_bytes, swap_bytes,"
	                    " rss_samples, rss_lost, frames, fp_frames, rss_read_time, paths,"
	                    " live_heap_bytes, live_mmap_bytes, live_rss_bytes, live_swap_bytes, live_count)"
	                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
	                    " ?16, ?17, ?18, ?19, ?20, ?21)",
	[ST_INS_BUCKET] = "INSERT INTO buckets (session_id, stack_id, kind, snapshot_id,"
	                  " alloc_count, alloc_bytes, free_count, free_bytes, live_count, live_bytes)"
	                  " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
	                  /* Two buckets of one snapshot with the same callstack
	                   * (two callers' stacks that symbolize the same) are
	                   * one bucket: their cumulative values add up. */
	                  " ON CONFLICT DO UPDATE SET"
	                  " alloc_count = alloc_count + excluded.alloc_count,"
	                  " alloc_bytes = alloc_bytes + excluded.alloc_bytes,"
	                  " free_count = free_count + excluded.free_count,"
	                  " free_bytes = free_bytes + excluded.free_bytes,"
	                  " live_count = live_count + excluded.live_count,"
	                  " live_bytes = live_bytes + excluded.live_bytes",
	[ST_INS_SESSION_STACK] = "INSERT OR IGNORE INTO session_stacks"
	                         " (session_id, stack_id, kind, first_snapshot_id) VALUES (?1, ?2, ?3, ?4)",
};

/* ------------------------------------------------------------ hashing */

struct h128 {
	uint64_t a, b;
};

static void hash_bytes(struct h128 *h, const void *p, size_t n)
{
	const unsigned char *c = p;
	for (size_t i = 0; i < n; i++) {
		h->a = (h->a ^ c[i]) * 0x100000001b3ULL;                 /* FNV-1a */
		h->b = ((h->b ^ c[i]) * 0x9e3779b97f4a7c15ULL);
		h->b = (h->b << 23) | (h->b >> 41);
	}
}

static void hash_str(struct h128 *h, const char *s)
{
	if (!s)
		s = "";
	hash_bytes(h, s, strlen(s) + 1); /* the NUL separates fields */
}

static void hash_u64(struct h128 *h, uint64_t v)
{
	hash_bytes(h, &v, sizeof v);
}

static struct h128 hash_stack(const struct ha_db_frame *f, int n)
{
	struct h128 h = { 0xcbf29ce484222325ULL, 0x6a09e667f3bcc909ULL };
	hash_u64(&h, (uint64_t)n);
	for (int i = 0; i < n; i++) {
		hash_str(&h, f[i].module);
		hash_str(&h, f[i].build_id);
		hash_u64(&h, f[i].rel_pc);
		hash_str(&h, f[i].function);
		hash_str(&h, f[i].file);
		hash_u64(&h, (uint64_t)(int64_t)f[i].line);
		hash_u64(&h, f[i].inlined ? 1 : 0);
	}
	h.a = ha_mix64(h.a);
	h.b = ha_mix64(h.b ^ h.a);
	return h;
}

/* ------------------------------------------------------------ caches */

/* Either cache's slot: its hash, and whether it is filled. */
static uint64_t cached_hash(const void *ctx, const void *slot)
{
	(void)ctx;
	return ((const struct cached *)slot)->h;
}

static int cached_used(const void *slot)
{
	return ((const struct cached *)slot)->id != 0;
}

static inline int stack_slot_eq(const void *ctx, const void *slot, const void *key)
{
	const struct stack_slot *s = slot;
	const struct h128 *k = key;
	(void)ctx;
	return s->c.h == k->a && s->b == k->b;
}

static const struct ha_ht_type stack_slot_type = {
	.size = sizeof(struct stack_slot), .first_cap = 1024, .hash = cached_hash,
	.eq = stack_slot_eq, .used = cached_used,
};

static int64_t stack_cache_get(struct ha_db *db, struct h128 k)
{
	return ((struct cached *)ha_ht_find(&db->stacks, &stack_slot_type, NULL, k.a, &k))->id;
}

static void stack_cache_put(struct ha_db *db, struct h128 k, int64_t id)
{
	if (ha_ht_fit(&db->stacks, &stack_slot_type, NULL) < 0)
		return; /* a cache: running without it is fine */
	struct stack_slot *s = ha_ht_find(&db->stacks, &stack_slot_type, NULL, k.a, &k);
	if (s->c.id)
		return;
	s = ha_ht_add(&db->stacks, &stack_slot_type, NULL, k.a, s);
	*s = (struct stack_slot){ { k.a, id }, k.b };
}

static uint64_t module_key(const char *path, const char *build_id)
{
	struct h128 h = { 0xcbf29ce484222325ULL, 0 };
	hash_str(&h, path);
	hash_str(&h, build_id);
	return ha_mix64(h.a);
}

struct module_lookup {
	uint64_t h;
	const char *path, *build_id;
};

static inline int module_slot_eq(const void *ctx, const void *slot, const void *key)
{
	const struct module_slot *s = slot;
	const struct module_lookup *k = key;
	(void)ctx;
	return s->c.h == k->h && strcmp(s->path, k->path) == 0 &&
	       strcmp(s->build_id, k->build_id) == 0;
}

static const struct ha_ht_type module_slot_type = {
	.size = sizeof(struct module_slot), .first_cap = 64, .hash = cached_hash,
	.eq = module_slot_eq, .used = cached_used,
};

static int64_t module_cache_get(struct ha_db *db, uint64_t h, const char *path, const char *bid)
{
	struct module_lookup k = { h, path, bid };
	return ((struct cached *)ha_ht_find(&db->modules, &module_slot_type, NULL, h, &k))->id;
}

static void module_cache_clear(struct ha_db *db)
{
	struct module_slot *s = db->modules.slots;
	for (size_t i = 0; i < db->modules.cap; i++) {
		free(s[i].path);
		free(s[i].build_id);
	}
	ha_ht_free(&db->modules);
}

static void stack_cache_clear(struct ha_db *db)
{
	ha_ht_free(&db->stacks);
}

static void module_cache_put(struct ha_db *db, uint64_t h, const char *path, const char *bid,
                             int64_t id)
{
	if (ha_ht_fit(&db->modules, &module_slot_type, NULL) < 0)
		return;
	struct module_slot m = { { h, id }, strdup(path), strdup(bid) };
	if (!m.path || !m.build_id) {
		free(m.path);
		free(m.build_id);
		return;
	}
	*(struct module_slot *)ha_ht_add_new(&db->modules, &module_slot_type, NULL, h) = m;
}

/* ------------------------------------------------------------ helpers */

static sqlite3_stmt *stmt(struct ha_db *db, int which)
{
	sqlite3_stmt *s = db->st[which];
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return s;
}

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
	sqlite3_bind_text(s, i, t ? t : "", -1, SQLITE_STATIC);
}

/* SQLite integers are signed: a count past INT64_MAX is stored as that. */
static void bind_u64(sqlite3_stmt *s, int i, uint64_t v)
{
	sqlite3_bind_int64(s, i, v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

/* Step a statement expected to finish without rows. */
static int step_done(struct ha_db *db, sqlite3_stmt *s, char *err, size_t errlen, const char *what)
{
	int rc = sqlite3_step(s);
	if (rc != SQLITE_DONE) {
		sql_fail(db, err, errlen, what);
		sqlite3_reset(s);
		return -1;
	}
	sqlite3_reset(s);
	return 0;
}

/* Step a statement expected to give one integer; *v = 0 if no row. */
static int step_int(struct ha_db *db, sqlite3_stmt *s, int64_t *v, char *err, size_t errlen,
                    const char *what)
{
	int rc = sqlite3_step(s);
	*v = 0;
	if (rc == SQLITE_ROW) {
		*v = sqlite3_column_int64(s, 0);
		rc = sqlite3_step(s);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return sql_fail(db, err, errlen, what);
	return 0;
}

/* ------------------------------------------------------------ open, close */

/* The session is over: the file goes back to a rollback journal, so that a
 * finished database is one file a read-only reader leaves as it found it
 * (a reader of a WAL file makes its -wal and -shm, and cannot remove them).
 * The switch checkpoints the WAL into the file and removes -wal and -shm.
 * Best effort: it needs the file to itself, and while another connection
 * has it open (heapdiff reading, a second heapattach writing) it fails at
 * once (no busy wait) and the file stays in WAL mode, harmlessly; the last
 * writer to close switches it.  The next writer switches it back to WAL
 * (db_open_file). */
static void leave_wal(struct ha_db *db)
{
	sqlite3_busy_timeout(db->h, 0);
	(void)sqlite3_exec(db->h, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
}

static void close_writer(struct ha_db *db)
{
	char err[200];
	rollback(db);
	(void)ha_db_commit_pending(db, err, sizeof err); /* best effort */
	free(db->pending);
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(db->st[i]);
	leave_wal(db);
	module_cache_clear(db);
	stack_cache_clear(db);
	free(db->frame_ids);
}

int ha_db_open(const char *path, struct ha_db **out, char *err, size_t errlen)
{
	struct ha_db *db;

	if (db_open_file(path, 0, out, err, errlen) < 0)
		return -1;
	db = *out;
	db->close_writer = close_writer;
	for (int i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(db->h, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &db->st[i],
		                       NULL) != SQLITE_OK) {
			sql_fail(db, err, errlen, "preparing statements");
			ha_db_close(db);
			*out = NULL;
			return -1;
		}
	}
	return 0;
}

static int check_writable(struct ha_db *db, char *err, size_t errlen)
{
	if (!db) {
		ha_err(err, errlen, "database not open");
		return -1;
	}
	if (db->readonly) {
		ha_err(err, errlen, "%s: opened read-only", db->path);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ sessions */

int ha_db_begin_session(struct ha_db *db, const struct ha_db_session *s, int64_t *session_id,
                        char *err, size_t errlen)
{
	sqlite3_stmt *q;
	if (check_writable(db, err, errlen) < 0)
		return -1;
	q = stmt(db, ST_INS_SESSION);
	sqlite3_bind_int64(q, 1, s->pid);
	bind_text(q, 2, s->comm);
	bind_text(q, 3, s->exe);
	sqlite3_bind_int64(q, 4, (int64_t)s->interval);
	sqlite3_bind_double(q, 5, s->start_time);
	bind_u64(q, 6, s->rss_period);
	bind_text(q, 7, s->hostname);
	if (step_done(db, q, err, errlen, "recording the session") < 0)
		return -1;
	*session_id = sqlite3_last_insert_rowid(db->h);
	return 0;
}

int ha_db_session_python(struct ha_db *db, int64_t session_id, const char *python, char *err,
                         size_t errlen)
{
	sqlite3_stmt *q;
	if (check_writable(db, err, errlen) < 0)
		return -1;
	q = stmt(db, ST_SESSION_PYTHON);
	sqlite3_bind_int64(q, 1, session_id);
	sqlite3_bind_text(q, 2, python, -1, SQLITE_TRANSIENT);
	return step_done(db, q, err, errlen, "recording the session's Python") < 0 ? -1 : 0;
}

int ha_db_end_session(struct ha_db *db, int64_t session_id, double end_time, char *err,
                      size_t errlen)
{
	sqlite3_stmt *q;
	if (check_writable(db, err, errlen) < 0)
		return -1;
	if (ha_db_commit_pending(db, err, errlen) < 0)
		return -1;
	q = stmt(db, ST_END_SESSION);
	sqlite3_bind_int64(q, 1, session_id);
	sqlite3_bind_double(q, 2, end_time);
	if (step_done(db, q, err, errlen, "ending the session") < 0)
		return -1;
	if (sqlite3_changes(db->h) != 1) {
		ha_err(err, errlen, "%s: no session %lld", db->path, (long long)session_id);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ stacks */

static int intern_module(struct ha_db *db, const char *path, const char *bid, int64_t *id,
                         char *err, size_t errlen)
{
	uint64_t h;
	sqlite3_stmt *q;
	if (!path)
		path = "";
	if (!bid)
		bid = "";
	h = module_key(path, bid);
	if ((*id = module_cache_get(db, h, path, bid)))
		return 0;
	q = stmt(db, ST_INS_MODULE);
	bind_text(q, 1, path);
	bind_text(q, 2, bid);
	if (step_done(db, q, err, errlen, "interning a module") < 0)
		return -1;
	q = stmt(db, ST_SEL_MODULE);
	bind_text(q, 1, path);
	bind_text(q, 2, bid);
	if (step_int(db, q, id, err, errlen, "looking up a module") < 0)
		return -1;
	if (*id <= 0) {
		ha_err(err, errlen, "%s: module '%s' not found after insert", db->path, path);
		return -1;
	}
	module_cache_put(db, h, path, bid, *id);
	return 0;
}

static void bind_frame(sqlite3_stmt *q, int64_t module_id, const struct ha_db_frame *f)
{
	sqlite3_bind_int64(q, 1, module_id);
	sqlite3_bind_int64(q, 2, (int64_t)f->rel_pc);
	bind_text(q, 3, f->function);
	bind_text(q, 4, f->file);
	sqlite3_bind_int(q, 5, f->line > 0 ? f->line : 0);
	sqlite3_bind_int(q, 6, f->inlined ? 1 : 0);
}

static int intern_frame(struct ha_db *db, const struct ha_db_frame *f, int64_t *id, char *err,
                        size_t errlen)
{
	int64_t mid;
	sqlite3_stmt *q;
	if (intern_module(db, f->module, f->build_id, &mid, err, errlen) < 0)
		return -1;
	q = stmt(db, ST_INS_FRAME);
	bind_frame(q, mid, f);
	if (step_done(db, q, err, errlen, "interning a frame") < 0)
		return -1;
	q = stmt(db, ST_SEL_FRAME);
	bind_frame(q, mid, f);
	if (step_int(db, q, id, err, errlen, "looking up a frame") < 0)
		return -1;
	if (*id <= 0) {
		ha_err(err, errlen, "%s: frame not found after insert", db->path);
		return -1;
	}
	return 0;
}

/* Does stored stack sid have exactly the frames fid[0..n)? */
static int stack_matches(struct ha_db *db, int64_t sid, const int64_t *fid, int n, int *match,
                         char *err, size_t errlen)
{
	sqlite3_stmt *q = stmt(db, ST_SEL_STACK_FRAMES);
	int i = 0, rc;
	sqlite3_bind_int64(q, 1, sid);
	*match = 1;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (i >= n || sqlite3_column_int64(q, 0) != fid[i])
			*match = 0;
		i++;
	}
	sqlite3_reset(q);
	if (rc != SQLITE_DONE)
		return sql_fail(db, err, errlen, "reading a stack");
	if (i != n)
		*match = 0;
	return 0;
}

static int intern_stack(struct ha_db *db, const struct ha_db_frame *frames, int n, uint64_t hash,
                        int64_t *stack_id, char *err, size_t errlen)
{
	sqlite3_stmt *q;
	if ((size_t)n > db->frame_ids_cap) {
		size_t ncap = (size_t)n + 64;
		int64_t *p = realloc(db->frame_ids, ncap * sizeof *p);
		if (!p) {
			ha_err(err, errlen, "%s: out of memory", db->path);
			return -1;
		}
		db->frame_ids = p;
		db->frame_ids_cap = ncap;
	}
	for (int i = 0; i < n; i++)
		if (intern_frame(db, &frames[i], &db->frame_ids[i], err, errlen) < 0)
			return -1;
	/* Linear probing on the 64-bit hash: a hit is verified against the
	 * stored frames, so a collision can never merge two stacks. */
	for (uint64_t probe = 0; probe < HA_DB_HASH_PROBES; probe++) {
		int64_t key = (int64_t)(hash + probe), sid;
		int match;
		q = stmt(db, ST_INS_STACK);
		sqlite3_bind_int64(q, 1, key);
		sqlite3_bind_int(q, 2, n);
		if (step_done(db, q, err, errlen, "interning a stack") < 0)
			return -1;
		if (sqlite3_changes(db->h) == 1) {
			sid = sqlite3_last_insert_rowid(db->h);
			for (int i = 0; i < n; i++) {
				q = stmt(db, ST_INS_STACK_FRAME);
				sqlite3_bind_int64(q, 1, sid);
				sqlite3_bind_int(q, 2, i);
				sqlite3_bind_int64(q, 3, db->frame_ids[i]);
				if (step_done(db, q, err, errlen, "storing a stack") < 0)
					return -1;
			}
			*stack_id = sid;
			return 0;
		}
		q = stmt(db, ST_SEL_STACK);
		sqlite3_bind_int64(q, 1, key);
		if (step_int(db, q, &sid, err, errlen, "looking up a stack") < 0)
			return -1;
		if (sid <= 0) {
			ha_err(err, errlen, "%s: stack not found after insert", db->path);
			return -1;
		}
		if (stack_matches(db, sid, db->frame_ids, n, &match, err, errlen) < 0)
			return -1;
		if (match) {
			*stack_id = sid;
			return 0;
		}
	}
	ha_err(err, errlen, "%s: too many callstack hash collisions", db->path);
	return -1;
}

int ha_db_stack(struct ha_db *db, const struct ha_db_frame *frames, int n, int64_t *stack_id,
                char *err, size_t errlen)
{
	struct h128 h;
	int64_t id;
	int own_tx;

	if (check_writable(db, err, errlen) < 0)
		return -1;
	if (n < 0 || (n > 0 && !frames)) {
		ha_err(err, errlen, "invalid callstack (%d frames)", n);
		return -1;
	}
	h = hash_stack(frames, n);
	if ((id = stack_cache_get(db, h))) {
		*stack_id = id;
		return 0;
	}
	/* In a caller's transaction (ha_db_batch_begin) a savepoint keeps a
	 * failed stack from taking the batch's other stacks with it. */
	own_tx = sqlite3_get_autocommit(db->h);
	if (exec(db, own_tx ? "BEGIN IMMEDIATE" : "SAVEPOINT ha_stack", err, errlen) < 0)
		return -1;
	if (intern_stack(db, frames, n, h.a, &id, err, errlen) < 0)
		goto fail;
	if (exec(db, own_tx ? "COMMIT" : "RELEASE ha_stack", err, errlen) < 0)
		goto fail;
	stack_cache_put(db, h, id);
	*stack_id = id;
	return 0;
fail:
	if (own_tx) {
		rollback(db);
	} else {
		sqlite3_exec(db->h, "ROLLBACK TO ha_stack", NULL, NULL, NULL);
		sqlite3_exec(db->h, "RELEASE ha_stack", NULL, NULL, NULL);
	}
	/* Module ids cached meanwhile may be gone. */
	module_cache_clear(db);
	return -1;
}

int ha_db_batch_begin(struct ha_db *db, char *err, size_t errlen)
{
	if (check_writable(db, err, errlen) < 0)
		return -1;
	return exec(db, "BEGIN IMMEDIATE", err, errlen) < 0 ? -1 : 0;
}

int ha_db_batch_commit(struct ha_db *db, char *err, size_t errlen)
{
	if (exec(db, "COMMIT", err, errlen) == 0)
		return 0;
	rollback(db);
	/* Every id handed out in the batch is gone with it. */
	module_cache_clear(db);
	stack_cache_clear(db);
	return -1;
}

/* ------------------------------------------------------------ snapshots */

static int write_snapshot(struct ha_db *db, int64_t session_id, const struct ha_db_snapshot *s,
                          const struct ha_db_bucket *b, size_t n, int64_t *snapshot_id,
                          char *err, size_t errlen)
{
	sqlite3_stmt *q = stmt(db, ST_INS_SNAPSHOT);
	int64_t sid;

	sqlite3_bind_int64(q, 1, session_id);
	sqlite3_bind_double(q, 2, s->time);
	sqlite3_bind_int64(q, 3, (int64_t)s->rss_bytes);
	sqlite3_bind_int64(q, 4, (int64_t)s->samples);
	sqlite3_bind_int64(q, 5, (int64_t)s->drops);
	sqlite3_bind_int64(q, 6, (int64_t)s->unwind_failures);
	bind_text(q, 7, s->reason);
	bind_u64(q, 8, s->sample_interval);
	bind_u64(q, 9, s->rss_anon_bytes);
	bind_u64(q, 10, s->swap_bytes);
	bind_u64(q, 11, s->rss_samples);
	bind_u64(q, 12, s->rss_lost);
	bind_u64(q, 13, s->frames);
	bind_u64(q, 14, s->fp_frames);
	/* NULL: the figures are of the snapshot's time (db_write.h). */
	if (s->rss_last)
		sqlite3_bind_double(q, 15, s->rss_time);
	else
		sqlite3_bind_null(q, 15);
	sqlite3_bind_int(q, 16, !s->totals_only);
	for (int k = 0; k < HA_KIND_COUNT; k++) {
		if (s->has_live && isfinite(s->live_bytes[k]))
			sqlite3_bind_double(q, 17 + k, round(s->live_bytes[k]));
		else
			sqlite3_bind_null(q, 17 + k);
	}
	if (s->has_live && isfinite(s->live_count))
		sqlite3_bind_double(q, 21, round(s->live_count));
	else
		sqlite3_bind_null(q, 21);
	if (step_done(db, q, err, errlen, "writing a snapshot") < 0)
		return -1;
	sid = sqlite3_last_insert_rowid(db->h);
	if (s->totals_only) {
		/* no rows, no base_id: its values per call path are unknown */
		*snapshot_id = sid;
		return 0;
	}
	if (s->memory && db_write_memory(db, sid, s->memory, err, errlen) < 0)
		return -1;
	uint64_t new_keys = 0;
	for (size_t i = 0; i < n; i++) {
		const struct ha_db_bucket *x = &b[i];
		double v[6] = { x->alloc_count, x->alloc_bytes, x->free_count,
		                x->free_bytes, x->live_count, x->live_bytes };
		for (int j = 0; j < 6; j++) {
			if (!isfinite(v[j])) {
				ha_err(err, errlen, "%s: bucket of stack %lld has a non-finite value",
				       db->path, (long long)x->stack_id);
				return -1;
			}
		}
		/* Values of 1024 and more are stored rounded (an error below
		 * 0.05%): SQLite writes a REAL with no fraction as an integer of
		 * 1 to 6 bytes instead of 8 -- about a third of each row. */
		for (int j = 0; j < 6; j++)
			if (fabs(v[j]) >= 1024.0)
				v[j] = round(v[j]);
		q = stmt(db, ST_INS_BUCKET);
		sqlite3_bind_int64(q, 1, session_id);
		sqlite3_bind_int64(q, 2, x->stack_id);
		sqlite3_bind_int(q, 3, x->kind);
		sqlite3_bind_int64(q, 4, sid);
		for (int j = 0; j < 6; j++)
			sqlite3_bind_double(q, 5 + j, v[j]);
		if (step_done(db, q, err, errlen, "writing a bucket") < 0)
			return -1;
		q = stmt(db, ST_INS_SESSION_STACK);
		sqlite3_bind_int64(q, 1, session_id);
		sqlite3_bind_int64(q, 2, x->stack_id);
		sqlite3_bind_int(q, 3, x->kind);
		sqlite3_bind_int64(q, 4, sid);
		if (step_done(db, q, err, errlen, "writing a bucket key") < 0)
			return -1;
		new_keys += sqlite3_changes(db->h) > 0;
	}
	if (ha_db_keyframe(db, session_id, sid, new_keys, err, errlen) < 0)
		return -1;
	*snapshot_id = sid;
	return 0;
}

/* A totals-only snapshot kept for the next commit (db_int.h). */
struct ha_db_pending {
	int64_t session_id;
	struct ha_db_snapshot s;
	char reason[16];
};

#define PENDING_MAX 64 /* written on their own past this many */

/* The kept snapshots' rows, in the transaction open. */
static int write_pending(struct ha_db *db, char *err, size_t errlen)
{
	int64_t sid;
	for (size_t i = 0; i < db->npending; i++)
		if (write_snapshot(db, db->pending[i].session_id, &db->pending[i].s, NULL, 0, &sid, err,
		                   errlen) < 0)
			return -1;
	return 0;
}

int ha_db_commit_pending(struct ha_db *db, char *err, size_t errlen)
{
	if (!db->npending)
		return 0;
	if (exec(db, "BEGIN IMMEDIATE", err, errlen) < 0)
		return -1;
	if (write_pending(db, err, errlen) < 0 || exec(db, "COMMIT", err, errlen) < 0) {
		rollback(db);
		return -1;
	}
	db->npending = 0;
	return 0;
}

/* Keep totals-only snapshot s for the next commit. */
static int keep_pending(struct ha_db *db, int64_t session_id, const struct ha_db_snapshot *s,
                        char *err, size_t errlen)
{
	if (db->npending == PENDING_MAX && ha_db_commit_pending(db, err, errlen) < 0)
		return -1;
	if (!db->pending) {
		db->pending = calloc(PENDING_MAX, sizeof *db->pending);
		if (!db->pending) {
			ha_err(err, errlen, "%s: out of memory", db->path);
			return -1;
		}
	}
	struct ha_db_pending *p = &db->pending[db->npending++];
	p->session_id = session_id;
	p->s = *s;
	p->s.memory = NULL;
	snprintf(p->reason, sizeof p->reason, "%s", s->reason ? s->reason : "");
	p->s.reason = p->reason;
	return 0;
}

int ha_db_snapshot(struct ha_db *db, int64_t session_id, const struct ha_db_snapshot *s,
                   const struct ha_db_bucket *buckets, size_t n, int64_t *snapshot_id,
                   char *err, size_t errlen)
{
	int64_t sid;
	if (check_writable(db, err, errlen) < 0)
		return -1;
	if (s->totals_only && n > 0) {
		ha_err(err, errlen, "invalid snapshot (totals only, with %zu buckets)", n);
		return -1;
	}
	if (s->totals_only) {
		*snapshot_id = 0;
		return keep_pending(db, session_id, s, err, errlen);
	}
	if (!sqlite3_get_autocommit(db->h)) {
		ha_err(err, errlen, "%s: snapshot inside an open transaction", db->path);
		return -1;
	}
	if (n > 0 && !buckets) {
		ha_err(err, errlen, "invalid snapshot (no buckets)");
		return -1;
	}
	/* The commit of a snapshot is synced (and with it everything
	 * committed before); the many small stack transactions are not. */
	if (exec(db, "PRAGMA synchronous = FULL", err, errlen) < 0)
		return -1;
	if (exec(db, "BEGIN IMMEDIATE", err, errlen) < 0)
		goto fail;
	if (write_pending(db, err, errlen) < 0 ||
	    write_snapshot(db, session_id, s, buckets, n, &sid, err, errlen) < 0)
		goto fail;
	if (exec(db, "COMMIT", err, errlen) < 0)
		goto fail;
	db->npending = 0;
	sqlite3_exec(db->h, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	*snapshot_id = sid;
	return 0;
fail:
	rollback(db);
	db->kf_session = 0; /* what it kept of the keyframe went with it */
	sqlite3_exec(db->h, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL);
	return -1;
}
