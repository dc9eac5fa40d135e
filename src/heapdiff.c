/*
 * heapdiff.c -- what grew between two snapshots of a heapattach database.
 *
 *   heapdiff [options] DB A B     callstacks ranked by growth of live bytes
 *   heapdiff [options] DB B       the live heap at B
 *   heapdiff [options] DB         first -> last of the latest session
 *
 * The value of a bucket (callstack, kind) at snapshot S is its latest row at
 * or before S in the session of S (schema/schema.sql); the query below is
 * the one of the growth view, with parameters.  Everything is read in one
 * read transaction, so a heapattach writing the file meanwhile (WAL) is
 * neither disturbed nor seen half-way.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db.h"

#ifndef HA_VERSION
#define HA_VERSION "0"
#endif

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

struct options {
	const char *db;
	const char *spec[2];     /* A, B as given; spec[0] NULL = single mode */
	long top;                /* 0 = all */
	int by_objects;
	int64_t session;         /* 0 = latest session with snapshots */
	int exact_bytes;
};

struct snap {
	int64_t id, session_id;
	double time;
	int64_t rss, samples, drops, unwind_failures;
	char reason[32];
	int64_t pid;
	char comm[64];
};

struct row {
	int64_t stack_id;
	int kind;
	double bytes, objects;   /* growth, or the live values in single mode */
};

static const char *prog = "heapdiff";
static const char *dbpath;
static sqlite3 *H;
static struct ha_db *DB;

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: heapdiff [options] DB [[A] B]\n"
	        "       heapdiff [options] --db DB [[A] B]\n"
	        "What grew in a heapattach profile between snapshots A and B: the callstacks\n"
	        "ranked by growth of live bytes, then the estimated live-heap growth against\n"
	        "the RSS change.  With only B, the live heap at B.  With neither, A = first\n"
	        "and B = last.  A and B are snapshot ids or 'first' and 'last' (of the latest\n"
	        "session, or of --session N).\n"
	        "\n"
	        "      --db FILE         the profile database (instead of the first operand)\n"
	        "  -n, --top N           show the N first callstacks (default 10; 0 = all)\n"
	        "      --by bytes|objects  rank by live bytes (default) or live objects\n"
	        "      --session N       'first' and 'last' mean those of session N\n"
	        "      --bytes           exact byte counts instead of KiB/MiB/GiB\n"
	        "  -h, --help            print this help\n"
	        "  -V, --version         print the version\n"
	        "\n"
	        "Exit status: 0 ok; 1 the database or a snapshot cannot be read (missing,\n"
	        "not a heapattach database, corrupt, other schema version, no such\n"
	        "snapshot); 2 usage error.\n");
}

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	exit(EXIT_USAGE);
}

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (DB)
		ha_db_close(DB);
	exit(EXIT_ERROR);
}

static void __attribute__((noreturn)) sql_fail(void)
{
	int code = sqlite3_errcode(H);
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		fail("%s: corrupt database: %s", dbpath, sqlite3_errmsg(H));
	fail("%s: %s", dbpath, sqlite3_errmsg(H));
}

static sqlite3_stmt *prepare(const char *sql)
{
	sqlite3_stmt *s;
	if (sqlite3_prepare_v2(H, sql, -1, &s, NULL) != SQLITE_OK)
		sql_fail();
	return s;
}

/* Steps s; 1 = a row, 0 = done; fails on errors. */
static int step(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	sql_fail();
}

/* One integer from a query with up to two integer parameters; *v untouched
 * and 0 returned if no row or a NULL. */
static int query_i64(const char *sql, int64_t *v, int np, int64_t p1, int64_t p2)
{
	sqlite3_stmt *s = prepare(sql);
	int got = 0;
	if (np > 0)
		sqlite3_bind_int64(s, 1, p1);
	if (np > 1)
		sqlite3_bind_int64(s, 2, p2);
	if (step(s) && sqlite3_column_type(s, 0) != SQLITE_NULL) {
		*v = sqlite3_column_int64(s, 0);
		got = 1;
	}
	sqlite3_finalize(s);
	return got;
}

/* ------------------------------------------------------------ formatting */

/* Bytes as "1.23 MiB" (or exact with --bytes); sign: "+" on growth. */
static const char *fmt_bytes(char *buf, size_t len, double v, int sign, int exact)
{
	const char *units[] = { "KiB", "MiB", "GiB", "TiB" };
	double a = fabs(v);
	const char *s = v < 0 ? "-" : sign && v > 0 ? "+" : "";
	if (a < 0.5)
		a = 0, s = "";
	if (exact || a < 1024) {
		snprintf(buf, len, exact ? "%s%.0f" : "%s%.0f B", s, a);
		return buf;
	}
	int u = -1;
	while (a >= 1024 && u < 3) {
		a /= 1024;
		u++;
	}
	snprintf(buf, len, a < 10 ? "%s%.2f %s" : a < 100 ? "%s%.1f %s" : "%s%.0f %s", s, a, units[u]);
	return buf;
}

static const char *fmt_count(char *buf, size_t len, double v, int sign)
{
	if (fabs(v) < 0.5)
		v = 0;
	snprintf(buf, len, sign && v != 0 ? "%+.0f" : "%.0f", v);
	return buf;
}

static const char *fmt_time(char *buf, size_t len, double t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!localtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "%.0f", t);
	return buf;
}

static const char *basename_of(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* ------------------------------------------------------------ snapshots */

static void snapshot_range(int64_t *lo, int64_t *hi, int64_t *n)
{
	sqlite3_stmt *s = prepare("SELECT min(id), max(id), count(*) FROM snapshots");
	step(s);
	*lo = sqlite3_column_int64(s, 0);
	*hi = sqlite3_column_int64(s, 1);
	*n = sqlite3_column_int64(s, 2);
	sqlite3_finalize(s);
}

static int load_snap(int64_t id, struct snap *out)
{
	sqlite3_stmt *s = prepare(
		"SELECT s.id, s.session_id, s.time, s.rss_bytes, s.samples, s.drops, s.unwind_failures,"
		"       s.reason, e.pid, e.comm"
		"  FROM snapshots s LEFT JOIN sessions e ON e.id = s.session_id WHERE s.id = ?1");
	int got = 0;
	sqlite3_bind_int64(s, 1, id);
	if (step(s)) {
		memset(out, 0, sizeof *out);
		out->id = sqlite3_column_int64(s, 0);
		out->session_id = sqlite3_column_int64(s, 1);
		out->time = sqlite3_column_double(s, 2);
		out->rss = sqlite3_column_int64(s, 3);
		out->samples = sqlite3_column_int64(s, 4);
		out->drops = sqlite3_column_int64(s, 5);
		out->unwind_failures = sqlite3_column_int64(s, 6);
		snprintf(out->reason, sizeof out->reason, "%s",
		         sqlite3_column_text(s, 7) ? (const char *)sqlite3_column_text(s, 7) : "");
		out->pid = sqlite3_column_int64(s, 8);
		snprintf(out->comm, sizeof out->comm, "%s",
		         sqlite3_column_text(s, 9) ? (const char *)sqlite3_column_text(s, 9) : "");
		got = 1;
	}
	sqlite3_finalize(s);
	return got;
}

/* Is spec a valid snapshot operand?  (Checked before the DB is opened, so
 * that usage errors come first.) */
static int valid_spec(const char *spec)
{
	char *end;
	if (strcmp(spec, "first") == 0 || strcmp(spec, "last") == 0)
		return 1;
	errno = 0;
	long long v = strtoll(spec, &end, 10);
	return *spec >= '0' && *spec <= '9' && *end == '\0' && errno == 0 && v > 0;
}

static void resolve(const char *spec, int64_t session, struct snap *out)
{
	int64_t id = 0, lo, hi, n;
	if (strcmp(spec, "first") == 0 || strcmp(spec, "last") == 0) {
		const char *sql = spec[0] == 'f'
			? "SELECT min(id) FROM snapshots WHERE session_id = ?1"
			: "SELECT max(id) FROM snapshots WHERE session_id = ?1";
		if (!query_i64(sql, &id, 1, session, 0))
			fail("%s: session %" PRId64 " has no snapshots", dbpath, session);
	} else {
		id = strtoll(spec, NULL, 10);
	}
	if (!load_snap(id, out)) {
		snapshot_range(&lo, &hi, &n);
		fail("%s: no snapshot %" PRId64 " in DB (snapshots %" PRId64 "..%" PRId64 ")", dbpath, id,
		     lo, hi);
	}
}

/* ------------------------------------------------------------ rows */

/* The value of every bucket at a and at b (a = NULL: nothing), as the
 * growth view computes it: keys are the buckets existing at either
 * snapshot, each value the latest row at or before the snapshot in its
 * session. */
static struct row *load_rows(const struct snap *a, const struct snap *b, size_t *nrows)
{
	sqlite3_stmt *s = prepare(
		"WITH k (stack_id, kind) AS ("
		"  SELECT stack_id, kind FROM session_stacks"
		"   WHERE session_id = ?1 AND first_snapshot_id <= ?2"
		"  UNION"
		"  SELECT stack_id, kind FROM session_stacks"
		"   WHERE session_id = ?3 AND first_snapshot_id <= ?4)"
		"SELECT k.stack_id, k.kind, va.live_bytes, va.live_count, vb.live_bytes, vb.live_count"
		"  FROM k"
		"  LEFT JOIN buckets va ON va.session_id = ?1 AND va.stack_id = k.stack_id"
		"       AND va.kind = k.kind"
		"       AND va.snapshot_id = (SELECT max(x.snapshot_id) FROM buckets x"
		"                              WHERE x.session_id = ?1 AND x.stack_id = k.stack_id"
		"                                AND x.kind = k.kind AND x.snapshot_id <= ?2)"
		"  LEFT JOIN buckets vb ON vb.session_id = ?3 AND vb.stack_id = k.stack_id"
		"       AND vb.kind = k.kind"
		"       AND vb.snapshot_id = (SELECT max(x.snapshot_id) FROM buckets x"
		"                              WHERE x.session_id = ?3 AND x.stack_id = k.stack_id"
		"                                AND x.kind = k.kind AND x.snapshot_id <= ?4)");
	struct row *rows = NULL;
	size_t n = 0, cap = 0;

	sqlite3_bind_int64(s, 1, a ? a->session_id : 0);
	sqlite3_bind_int64(s, 2, a ? a->id : 0);
	sqlite3_bind_int64(s, 3, b->session_id);
	sqlite3_bind_int64(s, 4, b->id);
	while (step(s)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct row *r = realloc(rows, cap * sizeof *r);
			if (!r)
				fail("out of memory");
			rows = r;
		}
		double ab = sqlite3_column_double(s, 2), ao = sqlite3_column_double(s, 3);
		double bb = sqlite3_column_double(s, 4), bo = sqlite3_column_double(s, 5);
		rows[n++] = (struct row){ sqlite3_column_int64(s, 0), sqlite3_column_int(s, 1),
		                          bb - ab, bo - ao };
	}
	sqlite3_finalize(s);
	*nrows = n;
	return rows;
}

static int g_by_objects;

static int cmp_rows(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	double ka = g_by_objects ? a->objects : a->bytes, kb = g_by_objects ? b->objects : b->bytes;
	double sa = g_by_objects ? a->bytes : a->objects, sb = g_by_objects ? b->bytes : b->objects;
	if (ka != kb)
		return ka > kb ? -1 : 1;
	if (sa != sb)
		return sa > sb ? -1 : 1;
	if (a->stack_id != b->stack_id)
		return a->stack_id < b->stack_id ? -1 : 1;
	return a->kind - b->kind;
}

static void print_stack(sqlite3_stmt *fq, int64_t stack_id, int indent)
{
	int n = 0;
	sqlite3_reset(fq);
	sqlite3_bind_int64(fq, 1, stack_id);
	while (step(fq)) {
		const char *fn = (const char *)sqlite3_column_text(fq, 0);
		const char *file = (const char *)sqlite3_column_text(fq, 1);
		int line = sqlite3_column_int(fq, 2), inl = sqlite3_column_int(fq, 3);
		uint64_t pc = (uint64_t)sqlite3_column_int64(fq, 4);
		const char *mod = (const char *)sqlite3_column_text(fq, 5);
		printf("%*s", indent, "");
		if (fn && *fn)
			fputs(fn, stdout);
		else
			printf("0x%" PRIx64, pc);
		if (file && *file) {
			printf("  %s", file);
			if (line > 0)
				printf(":%d", line);
		}
		if (mod && *mod)
			printf("  [%s]", basename_of(mod));
		if (inl)
			fputs("  (inlined)", stdout);
		putchar('\n');
		n++;
	}
	if (n == 0)
		printf("%*s(no frames)\n", indent, "");
}

static void print_snap_line(const char *label, const struct snap *s)
{
	char t[64];
	printf("%s snapshot %" PRId64 ": %s, session %" PRId64 " (pid %" PRId64 " %s), %s\n", label,
	       s->id, fmt_time(t, sizeof t, s->time), s->session_id, s->pid,
	       s->comm[0] ? s->comm : "?", s->reason[0] ? s->reason : "-");
}

static const char *const kind_names[] = { "heap", "mmap" };

static void report(const struct options *o, const struct snap *a, const struct snap *b)
{
	size_t n = 0, shown = 0, changed = 0;
	struct row *rows = load_rows(a, b, &n);
	double total_bytes = 0;
	char b1[64], b2[64];

	/* Keep the rows that changed (diff) or are live (single). */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		total_bytes += rows[i].bytes;
		if (fabs(rows[i].bytes) >= 0.5 || fabs(rows[i].objects) >= 0.5)
			rows[k++] = rows[i];
	}
	changed = k;
	g_by_objects = o->by_objects;
	qsort(rows, k, sizeof *rows, cmp_rows);
	shown = o->top > 0 && (size_t)o->top < k ? (size_t)o->top : k;

	if (a) {
		print_snap_line("from", a);
		print_snap_line("  to", b);
		if (a->session_id == b->session_id) {
			/* The counters are cumulative: from the earlier snapshot
			 * to the later one, whichever is A. */
			const struct snap *e = a->id < b->id ? a : b, *l = a->id < b->id ? b : a;
			printf("samples: %" PRId64 " taken, %" PRId64 " dropped, %" PRId64 " not unwound\n",
			       l->samples - e->samples, l->drops - e->drops,
			       l->unwind_failures - e->unwind_failures);
			if (l->drops > e->drops)
				printf("note: samples were dropped (ring full): the estimates are low\n");
		}
	} else {
		print_snap_line("live heap at", b);
		printf("samples: %" PRId64 " taken, %" PRId64 " dropped, %" PRId64 " not unwound\n",
		       b->samples, b->drops, b->unwind_failures);
		if (b->drops > 0)
			printf("note: samples were dropped (ring full): the estimates are low\n");
	}
	putchar('\n');

	if (k == 0) {
		printf(a ? "no callstack changed\n" : "no live allocations\n");
	} else {
		printf("%14s %12s  %s\n", a ? "BYTES" : "LIVE BYTES", a ? "OBJECTS" : "LIVE OBJECTS",
		       "STACK (leaf first)");
		sqlite3_stmt *fq = prepare(
			"SELECT f.function, f.file, f.line, f.inlined, f.rel_pc, m.path"
			"  FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id"
			"  JOIN modules m ON m.id = f.module_id"
			" WHERE sf.stack_id = ?1 ORDER BY sf.pos");
		for (size_t i = 0; i < shown; i++) {
			const struct row *r = &rows[i];
			printf("%14s %12s  stack %" PRId64, fmt_bytes(b1, sizeof b1, r->bytes, !!a, o->exact_bytes),
			       fmt_count(b2, sizeof b2, r->objects, !!a), r->stack_id);
			if (r->kind != HA_KIND_HEAP)
				printf(" (%s)", r->kind >= 0 && r->kind < 2 ? kind_names[r->kind] : "?");
			putchar('\n');
			print_stack(fq, r->stack_id, 14 + 1 + 12 + 4);
		}
		sqlite3_finalize(fq);
		if (shown < k)
			printf("%14s %12s  ... %zu more callstack%s (--top 0 shows all)\n", "", "", k - shown,
			       k - shown == 1 ? "" : "s");
	}
	putchar('\n');
	if (a) {
		printf("total: live heap %s (estimated; %zu callstacks changed, %zu shown); RSS %s; %.1f s\n",
		       fmt_bytes(b1, sizeof b1, total_bytes, 1, o->exact_bytes), changed, shown,
		       fmt_bytes(b2, sizeof b2, (double)b->rss - (double)a->rss, 1, o->exact_bytes),
		       b->time - a->time);
	} else {
		printf("total: live heap %s (estimated; %zu callstacks, %zu shown); RSS %s\n",
		       fmt_bytes(b1, sizeof b1, total_bytes, 0, o->exact_bytes), changed, shown,
		       fmt_bytes(b2, sizeof b2, (double)b->rss, 0, o->exact_bytes));
	}
	free(rows);
}

/* ------------------------------------------------------------ main */

static long parse_long(const char *s, const char *what, long min)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < min)
		usage_error("bad %s '%s'", what, s);
	return v;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "top", required_argument, NULL, 'n' },
		{ "by", required_argument, NULL, 'b' },
		{ "session", required_argument, NULL, 's' },
		{ "bytes", no_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct options o = { .top = 10 };
	char err[512];
	int c, nops;
	struct snap a, b;

	opterr = 0; /* our own messages, with our name */
	while ((c = getopt_long(argc, argv, ":n:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o.db = optarg; break;
		case 'n': o.top = parse_long(optarg, "--top", 0); break;
		case 'b':
			if (strcmp(optarg, "bytes") == 0)
				o.by_objects = 0;
			else if (strcmp(optarg, "objects") == 0)
				o.by_objects = 1;
			else
				usage_error("bad --by '%s' (bytes or objects)", optarg);
			break;
		case 's': o.session = parse_long(optarg, "--session", 1); break;
		case 'B': o.exact_bytes = 1; break;
		case 'h': usage(stdout); return EXIT_OK;
		case 'V': printf("heapdiff (heapattach) %s\n", HA_VERSION); return EXIT_OK;
		case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				usage_error("unknown option '-%c'", optopt);
			usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!o.db) {
		if (optind >= argc)
			usage_error("no database given");
		o.db = argv[optind++];
	}
	nops = argc - optind;
	if (nops > 2)
		usage_error("too many operands (a database and at most two snapshots)");
	for (int i = 0; i < nops; i++)
		if (!valid_spec(argv[optind + i]))
			usage_error("bad snapshot '%s' (an id, 'first' or 'last')", argv[optind + i]);
	if (nops == 0) {
		o.spec[0] = "first";
		o.spec[1] = "last";
	} else if (nops == 1) {
		o.spec[1] = argv[optind];
	} else {
		o.spec[0] = argv[optind];
		o.spec[1] = argv[optind + 1];
	}

	dbpath = o.db;
	if (ha_db_open_readonly(o.db, &DB, err, sizeof err) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return EXIT_ERROR;
	}
	H = ha_db_handle(DB);
	/* One read transaction: a consistent view while heapattach writes. */
	if (sqlite3_exec(H, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		sql_fail();

	int64_t lo, hi, nsnap, session = o.session;
	snapshot_range(&lo, &hi, &nsnap);
	if (nsnap == 0)
		fail("%s: no snapshots in DB", dbpath);
	if (session) {
		int64_t x, slo = 0, shi = 0;
		if (!query_i64("SELECT id FROM sessions WHERE id = ?1", &x, 1, session, 0)) {
			query_i64("SELECT min(id) FROM sessions", &slo, 0, 0, 0);
			query_i64("SELECT max(id) FROM sessions", &shi, 0, 0, 0);
			fail("%s: no session %" PRId64 " in DB (sessions %" PRId64 "..%" PRId64 ")", dbpath,
			     session, slo, shi);
		}
	} else {
		query_i64("SELECT max(session_id) FROM snapshots", &session, 0, 0, 0);
	}

	if (o.spec[0])
		resolve(o.spec[0], session, &a);
	resolve(o.spec[1], session, &b);
	if (o.spec[0] && a.session_id != b.session_id)
		fprintf(stderr,
		        "%s: warning: snapshots %" PRId64 " and %" PRId64 " are in different sessions (%" PRId64
		        " and %" PRId64 "): each value is taken from its own session\n",
		        prog, a.id, b.id, a.session_id, b.session_id);

	report(&o, o.spec[0] ? &a : NULL, &b);
	sqlite3_exec(H, "COMMIT", NULL, NULL, NULL);
	ha_db_close(DB);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: writing the output: %s\n", prog, strerror(errno));
		return EXIT_ERROR;
	}
	return EXIT_OK;
}
