/* db_open.c -- opening the profile database (schema/schema.sql, compiled
 * into ha_schema_sql[] by the Makefile): checking, creating, upgrading,
 * closing.  heapdiff links this and no more; writing is db_write.c.
 *
 * Opening: an existing non-empty file is first checked through a read-only
 * connection (a read-only connection never writes the main file, not even a
 * checkpoint on close), so a refused file is left exactly as it was.  A new
 * or empty file gets the schema in one transaction.
 *
 * Files beside it: the writer keeps the file in WAL mode while it writes
 * and puts it back to a rollback journal when it closes (db_write.c), so a
 * finished database is one file and a read-only reader makes nothing
 * beside it; during a session the writer's -wal and -shm are there already.
 * A file left in WAL mode without them (by an older heapattach, or a
 * writer whose switch back found a reader) makes SQLite create an empty
 * -wal and a -shm for our read-only connection, which cannot remove them
 * at close.  The last connection of ours to close removes them
 * (tidy_beside) when that is safe: see there. */
#define _GNU_SOURCE
#include "db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char ha_schema_sql[];

/* PRAGMA application_id of a heapattach database: 0x48656170, "Heap". */
#define HA_DB_APPLICATION_ID 1214603632
#define HA_DB_BUSY_TIMEOUT_MS 10000

/* ------------------------------------------------------------ open */

enum check_result { CHECK_OK, CHECK_EMPTY, CHECK_OLD };

/* One value of a query on a connection that is being checked.  Returns the
 * SQLite result code; *out gets a malloc'ed copy of the text (NULL if no
 * row). */
static int query_text(sqlite3 *h, const char *sql, char **out)
{
	sqlite3_stmt *s;
	int rc = sqlite3_prepare_v2(h, sql, -1, &s, NULL);
	*out = NULL;
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(s, 0);
		*out = strdup(t ? (const char *)t : "");
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc;
}

static int refuse_sqlite(sqlite3 *h, const char *path, char *err, size_t errlen)
{
	int code = sqlite3_errcode(h);
	if (code == SQLITE_NOTADB)
		ha_err(err, errlen, "%s: not a heapattach database: %s", path, sqlite3_errmsg(h));
	else if (code == SQLITE_CORRUPT)
		ha_err(err, errlen, "%s: corrupt database: %s", path, sqlite3_errmsg(h));
	else if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN)
		ha_err(err, errlen, "%s: cannot read: %s (SQLite needs to create or write %s-shm)", path,
		       sqlite3_errmsg(h), path);
	else
		ha_err(err, errlen, "%s: cannot read: %s", path, sqlite3_errmsg(h));
	return -1;
}

/* Is the database behind h a heapattach database of our version?  Only
 * reads. */
static int check_schema(sqlite3 *h, const char *path, enum check_result *res, char *err,
                        size_t errlen)
{
	char *v = NULL;
	long appid, nobj;

	if (query_text(h, "PRAGMA application_id", &v) != SQLITE_OK)
		return refuse_sqlite(h, path, err, errlen);
	appid = v ? strtol(v, NULL, 10) : 0;
	free(v);
	if (query_text(h, "SELECT count(*) FROM sqlite_master", &v) != SQLITE_OK)
		return refuse_sqlite(h, path, err, errlen);
	nobj = v ? strtol(v, NULL, 10) : 0;
	free(v);
	if (nobj == 0 && (appid == 0 || appid == HA_DB_APPLICATION_ID)) {
		*res = CHECK_EMPTY;
		return 0;
	}
	if (query_text(h, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'", &v)
	    != SQLITE_OK)
		return refuse_sqlite(h, path, err, errlen);
	if (!v) {
		if (appid != 0 && appid != HA_DB_APPLICATION_ID)
			ha_err(err, errlen, "%s: not a heapattach database (no meta table; application_id 0x%08lx)",
			       path, (unsigned long)appid & 0xffffffffUL);
		else
			ha_err(err, errlen, "%s: not a heapattach database (no meta table)", path);
		return -1;
	}
	free(v);
	if (query_text(h, "SELECT value FROM meta WHERE key = 'format'", &v) != SQLITE_OK) {
		if (sqlite3_errcode(h) == SQLITE_CORRUPT || sqlite3_errcode(h) == SQLITE_NOTADB)
			return refuse_sqlite(h, path, err, errlen);
		ha_err(err, errlen, "%s: not a heapattach database (meta table: %s)", path,
		       sqlite3_errmsg(h));
		return -1;
	}
	if (!v || strcmp(v, "heapattach") != 0) {
		if (v)
			ha_err(err, errlen, "%s: not a heapattach database (meta format '%s')", path, v);
		else
			ha_err(err, errlen, "%s: not a heapattach database (no format in meta table)", path);
		free(v);
		return -1;
	}
	free(v);
	if (appid != 0 && appid != HA_DB_APPLICATION_ID) {
		ha_err(err, errlen, "%s: not a heapattach database (application_id 0x%08lx)", path,
		       (unsigned long)appid & 0xffffffffUL);
		return -1;
	}
	if (query_text(h, "SELECT value FROM meta WHERE key = 'schema_version'", &v) != SQLITE_OK)
		return refuse_sqlite(h, path, err, errlen);
	if (!v) {
		ha_err(err, errlen, "%s: damaged heapattach database (no schema_version in meta table)", path);
		return -1;
	}
	char *end;
	long ver = strtol(v, &end, 10);
	if (*v == '\0' || *end != '\0' || ver < HA_DB_SCHEMA_VERSION_MIN || ver > HA_DB_SCHEMA_VERSION) {
		ha_err(err, errlen, "%s: database schema version %s, this heapattach reads %d to %d", path,
		       v, HA_DB_SCHEMA_VERSION_MIN, HA_DB_SCHEMA_VERSION);
		free(v);
		return -1;
	}
	free(v);
	*res = ver == HA_DB_SCHEMA_VERSION ? CHECK_OK : CHECK_OLD;
	return 0;
}

static sqlite3 *open_conn(const char *path, int flags, char *err, size_t errlen)
{
	sqlite3 *h = NULL;
	int rc = sqlite3_open_v2(path, &h, flags, NULL);
	if (rc != SQLITE_OK) {
		ha_err(err, errlen, "%s: cannot open: %s", path, h ? sqlite3_errmsg(h) : sqlite3_errstr(rc));
		sqlite3_close(h);
		return NULL;
	}
	sqlite3_extended_result_codes(h, 0);
	sqlite3_busy_timeout(h, HA_DB_BUSY_TIMEOUT_MS);
	return h;
}

/* Read-only and immutable (no locks, no -wal/-shm), for a database whose
 * directory we cannot write and that has no -wal file; NULL otherwise. */
static sqlite3 *open_immutable(const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *wal = NULL, *uri;
	size_t n = strlen(path), k = 0;
	sqlite3 *h;

	if (asprintf(&wal, "%s-wal", path) < 0)
		return NULL;
	if (stat(wal, &st) == 0 || errno != ENOENT) {
		free(wal);
		return NULL; /* keep the first error */
	}
	free(wal);
	uri = malloc(5 + 3 * n + sizeof "?immutable=1");
	if (!uri)
		return NULL;
	k = (size_t)sprintf(uri, "file:");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("/._-~", c))
			uri[k++] = (char)c;
		else
			k += (size_t)sprintf(uri + k, "%%%02X", c);
	}
	strcpy(uri + k, "?immutable=1");
	h = open_conn(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err, errlen);
	free(uri);
	return h;
}

/* ------------------------------------------------------------ files beside */

/* SQLite's lock bytes on a database file (its file format, section 'The
 * Lock-Byte Page'; os_unix.c): PENDING_BYTE, RESERVED_BYTE, then the 510
 * bytes of the SHARED range.  A connection holds a read lock in the SHARED
 * range for as long as it has the file open in WAL mode, and takes one
 * before it looks for, opens or creates -wal and -shm. */
#define SQLITE_LOCK_FIRST 0x40000000L
#define SQLITE_LOCK_BYTES 512

/* The connections open in this process (every handle, read-only or not),
 * and the databases whose -wal and -shm one of our connections made: tidied once none is open, since closing any descriptor of a file
 * drops every POSIX lock this process holds on it, SQLite's included. */
static pthread_mutex_t beside_lock = PTHREAD_MUTEX_INITIALIZER;
static int open_conns;
static char *made_beside[8];
static int n_made_beside;

static int beside_name(char *buf, size_t len, const char *path, const char *suffix)
{
	return snprintf(buf, len, "%s%s", path, suffix) < (int)len ? 0 : -1;
}

/* Neither -wal nor -shm beside path (their absence is what makes them ours
 * when they are there after a read-only open). */
static int nothing_beside(const char *path)
{
	char p[4096];
	struct stat st;
	return beside_name(p, sizeof p, path, "-wal") == 0 && lstat(p, &st) != 0 && errno == ENOENT &&
	       beside_name(p, sizeof p, path, "-shm") == 0 && lstat(p, &st) != 0 && errno == ENOENT;
}

/* Remove the -wal and -shm our connection made beside a WAL file,
 * as SQLite itself does when the last connection closes (which a read-only
 * one cannot): with the EXCLUSIVE lock held, so that no other connection
 * has the file open nor can open it meanwhile (one that tries waits on its
 * busy handler, then creates them anew), and only an empty -wal (no
 * transaction in it; one with frames, written by a writer that came and
 * went while we read, is left for SQLite to checkpoint).  The database
 * itself is opened for writing only because a write lock needs it: nothing
 * is written.  Not allowed to open it so (another user's file), or any
 * other connection there: both are left, harmless.  Under beside_lock, with
 * no connection of ours open. */
static void tidy_beside(const char *path)
{
	char wal[4096], shm[4096];
	struct stat st;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = SQLITE_LOCK_FIRST,
	                    .l_len = SQLITE_LOCK_BYTES };
	int fd;

	if (beside_name(wal, sizeof wal, path, "-wal") < 0 || beside_name(shm, sizeof shm, path, "-shm") < 0)
		return;
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (fcntl(fd, F_SETLK, &fl) == 0 && lstat(wal, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size == 0 && lstat(shm, &st) == 0 && S_ISREG(st.st_mode)) {
		(void)unlink(wal);
		(void)unlink(shm);
	}
	close(fd); /* releases the lock */
}

/* A connection of ours opens. */
static void conn_opened(void)
{
	pthread_mutex_lock(&beside_lock);
	open_conns++;
	pthread_mutex_unlock(&beside_lock);
}

/* A connection of ours closed (beside: the path whose -wal and -shm it
 * made, or NULL); the last one tidies. */
static void conn_closed(const char *beside)
{
	pthread_mutex_lock(&beside_lock);
	open_conns--;
	if (beside) {
		int dup = 0;
		for (int i = 0; i < n_made_beside; i++)
			dup |= strcmp(made_beside[i], beside) == 0;
		/* (More databases than that in one run: the rest left.) */
		if (!dup && n_made_beside < (int)(sizeof made_beside / sizeof made_beside[0]) &&
		    (made_beside[n_made_beside] = strdup(beside)) != NULL)
			n_made_beside++;
	}
	if (open_conns == 0) {
		for (int i = 0; i < n_made_beside; i++) {
			tidy_beside(made_beside[i]);
			free(made_beside[i]);
		}
		n_made_beside = 0;
	}
	pthread_mutex_unlock(&beside_lock);
}

static void db_free(struct ha_db *db)
{
	if (!db)
		return;
	if (db->close_writer)
		db->close_writer(db);
	if (db->h)
		sqlite3_close(db->h);
	free(db->path);
	free(db);
}

/* Upgrade a file of an older known version in place: run the parts of the
 * schema added since (each starts with "-- Schema version N additions."),
 * in one transaction that first re-reads the version (another writer may
 * have upgraded it meanwhile).  Versions only ever add views and columns
 * (with defaults), so the data already recorded is untouched. */
static int upgrade(struct ha_db *db, char *err, size_t errlen)
{
	char *v = NULL, marker[64], set[96];
	long ver;

	if (exec(db, "BEGIN IMMEDIATE", err, errlen) < 0)
		return -1;
	if (query_text(db->h, "SELECT value FROM meta WHERE key = 'schema_version'", &v) != SQLITE_OK ||
	    !v) {
		free(v);
		sql_fail(db, err, errlen, "reading the schema version");
		rollback(db);
		return -1;
	}
	ver = strtol(v, NULL, 10);
	free(v);
	for (long n = ver + 1; n <= HA_DB_SCHEMA_VERSION; n++) {
		snprintf(marker, sizeof marker, "-- Schema version %ld additions.", n);
		const char *part = strstr(ha_schema_sql, marker);
		if (!part) {
			ha_err(err, errlen, "%s: cannot upgrade from schema version %ld (no '%s' in the schema)",
			       db->path, ver, marker);
			rollback(db);
			return -1;
		}
		/* The part ends where the next version's begins. */
		snprintf(marker, sizeof marker, "-- Schema version %ld additions.", n + 1);
		const char *end = strstr(part, marker);
		char *sql = end ? strndup(part, (size_t)(end - part)) : strdup(part);
		if (!sql) {
			ha_err(err, errlen, "%s: out of memory", db->path);
			rollback(db);
			return -1;
		}
		int rc = sqlite3_exec(db->h, sql, NULL, NULL, NULL);
		free(sql);
		if (rc != SQLITE_OK) {
			sql_fail(db, err, errlen, "upgrading the schema");
			rollback(db);
			return -1;
		}
	}
	snprintf(set, sizeof set, "UPDATE meta SET value = '%d' WHERE key = 'schema_version'",
	         HA_DB_SCHEMA_VERSION);
	if (ver < HA_DB_SCHEMA_VERSION && exec(db, set, err, errlen) < 0) {
		rollback(db);
		return -1;
	}
	if (exec(db, "COMMIT", err, errlen) < 0) {
		rollback(db);
		return -1;
	}
	return 0;
}

int ha_db_path_check(const char *path, char *err, size_t errlen)
{
	static const char *const suffix[] = { "", "-wal", "-shm" };
	char p[4096];
	struct stat st;
	for (int i = 0; i < 3; i++) {
		if (snprintf(p, sizeof p, "%s%s", path, suffix[i]) >= (int)sizeof p) {
			ha_err(err, errlen, "%s: file name too long", path);
			return -1;
		}
		if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
			ha_err(err, errlen, "%s: a symbolic link: refusing to write through it", p);
			return -1;
		}
	}
	return 0;
}

/* Writing: no link at the names (ha_db_path_check), and a new file created
 * here, 0600 and exclusively (SQLite gives its -wal and -shm the mode of
 * the database file): a profile holds names and sizes from the target's
 * memory, for its owner only, as perf.data.  0, or -1 with err. */
static int writable_path(const char *path, int exists, char *err, size_t errlen)
{
	if (ha_db_path_check(path, err, errlen) < 0)
		return -1;
	if (exists)
		return 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ha_err(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

static int open_file(const char *path, int readonly, struct ha_db **out, char *err, size_t errlen)
{
	struct stat st;
	enum check_result res = CHECK_EMPTY;
	int exists;
	struct ha_db *db;
	sqlite3 *h;

	*out = NULL;
	if (!path || !*path) {
		ha_err(err, errlen, "empty database file name");
		return -1;
	}
	exists = stat(path, &st) == 0;
	if (!exists && (errno != ENOENT || readonly)) {
		ha_err(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (exists && S_ISDIR(st.st_mode)) {
		ha_err(err, errlen, "%s: %s", path, strerror(EISDIR));
		return -1;
	}
	/* Another user's file (a 0600 database of root's): the system's word
	 * for it, not SQLite's "unable to open database file". */
	if (exists && access(path, readonly ? R_OK : R_OK | W_OK) != 0) {
		ha_err(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (!readonly && writable_path(path, exists, err, errlen) < 0)
		return -1;
	if (exists && st.st_size == 0 && readonly) {
		ha_err(err, errlen, "%s: not a heapattach database (empty file)", path);
		return -1;
	}
	if (exists && st.st_size > 0) {
		/* Check through a read-only connection: it never writes the
		 * main file, so a refused file stays byte-identical. */
		h = open_conn(path, SQLITE_OPEN_READONLY, err, errlen);
		if (!h)
			return -1;
		if (check_schema(h, path, &res, err, errlen) < 0) {
			int code = sqlite3_errcode(h);
			sqlite3_close(h);
			/* A WAL database in a directory we cannot write: SQLite
			 * cannot create the -shm file.  Without a -wal file no
			 * writer is active (a writer keeps one), so the file
			 * can be read as immutable. */
			if (!readonly || (code != SQLITE_READONLY && code != SQLITE_CANTOPEN) ||
			    !(h = open_immutable(path, err, errlen)))
				return -1;
			if (check_schema(h, path, &res, err, errlen) < 0) {
				sqlite3_close(h);
				return -1;
			}
		}
		if (res == CHECK_EMPTY && readonly) {
			ha_err(err, errlen, "%s: not a heapattach database (empty database)", path);
			sqlite3_close(h);
			return -1;
		}
		if (readonly) {
			db = calloc(1, sizeof *db);
			if (!db || !(db->path = strdup(path))) {
				free(db);
				sqlite3_close(h);
				ha_err(err, errlen, "%s: out of memory", path);
				return -1;
			}
			db->h = h;
			db->readonly = 1;
			*out = db;
			return 0;
		}
		sqlite3_close(h);
	}

	db = calloc(1, sizeof *db);
	if (!db || !(db->path = strdup(path))) {
		free(db);
		ha_err(err, errlen, "%s: out of memory", path);
		return -1;
	}
	db->h = open_conn(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err, errlen);
	if (!db->h)
		goto fail;
	/* temp_store: statement journals in memory.  On disk, SQLite made a
	 * file in /var/tmp for every transaction that interned a stack and
	 * wrote ~20 pages to it: 80,000 system calls for 4096 new stacks.
	 * secure_delete off (distributions build SQLite with it on): thinning
	 * frees the pages of the snapshots it removes, and with it on each
	 * freed page was zeroed, written to the WAL and checkpointed, a
	 * removed snapshot written twice more for nothing (bench/db_day: 14%
	 * of all a session wrote; heapattach-db(5), "Storage").  The rows
	 * removed may so stay in the file's free pages until reused. */
	if (exec(db, "PRAGMA synchronous = NORMAL", err, errlen) < 0 ||
	    exec(db, "PRAGMA foreign_keys = ON", err, errlen) < 0 ||
	    exec(db, "PRAGMA temp_store = MEMORY", err, errlen) < 0 ||
	    exec(db, "PRAGMA secure_delete = OFF", err, errlen) < 0)
		goto fail;
	if (res == CHECK_EMPTY) {
		/* Nothing is written before this transaction has checked that
		 * the file is still empty (another program may have created it
		 * meanwhile): a file refused here is left as it was. */
		char *v = NULL;
		if (exec(db, "BEGIN IMMEDIATE", err, errlen) < 0)
			goto fail;
		/* Another writer may have created it meanwhile. */
		if (query_text(db->h, "SELECT count(*) FROM sqlite_master", &v) != SQLITE_OK) {
			refuse_sqlite(db->h, path, err, errlen);
			rollback(db);
			goto fail;
		}
		if (v && strcmp(v, "0") == 0) {
			if (sqlite3_exec(db->h, ha_schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
				sql_fail(db, err, errlen, "creating the schema");
				free(v);
				rollback(db);
				goto fail;
			}
		} else if (check_schema(db->h, path, &res, err, errlen) < 0) {
			free(v);
			rollback(db);
			goto fail;
		}
		free(v);
		if (exec(db, "COMMIT", err, errlen) < 0) {
			rollback(db);
			goto fail;
		}
	}
	/* WAL: readers never block the writer, a crash loses at most the
	 * transaction in progress.  (journal_mode cannot change inside a
	 * transaction, hence after the schema; it is persistent, but the
	 * writer's close puts a finished file back to a rollback journal:
	 * db_write.c's leave_wal.)  Where WAL is impossible
	 * (no shared memory on the file system) the rollback journal stays:
	 * still transactional and crash-safe, with readers blocking the writer
	 * for a moment. */
	if (exec(db, "PRAGMA journal_mode = WAL", err, errlen) < 0)
		goto fail;
	if (res == CHECK_OLD && upgrade(db, err, errlen) < 0)
		goto fail;
	*out = db;
	return 0;
fail:
	db_free(db);
	return -1;
}

int db_open_file(const char *path, int readonly, struct ha_db **out, char *err, size_t errlen)
{
	/* Whether -wal and -shm are there before: if not, and they are after
	 * (a read-only read of a WAL file, also one refused by the check),
	 * they are ours to tidy when the last connection closes. */
	int absent = path && *path && nothing_beside(path);
	conn_opened();
	if (open_file(path, readonly, out, err, errlen) < 0) {
		conn_closed(absent ? path : NULL);
		return -1;
	}
	(*out)->beside_absent = absent;
	return 0;
}

int ha_db_open_readonly(const char *path, struct ha_db **out, char *err, size_t errlen)
{
	return db_open_file(path, 1, out, err, errlen);
}

void ha_db_close(struct ha_db *db)
{
	char *path;
	int beside;
	if (!db)
		return;
	path = db->path;
	beside = db->beside_absent;
	db->path = NULL;
	db_free(db);
	conn_closed(beside ? path : NULL);
	free(path);
}

struct sqlite3 *ha_db_handle(struct ha_db *db)
{
	return db ? db->h : NULL;
}
