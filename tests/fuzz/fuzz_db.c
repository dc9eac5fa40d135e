/* fuzz_db -- libFuzzer harness for heapdiff reading a database: the file
 * is the profiled side's (its names come from the target's binaries) or
 * simply corrupt, and every report heapdiff writes from it must be well
 * formed, or heapdiff must stop with one clear line.
 *
 * Input: OPTIONS (5 bytes: the session, --kind, by objects / all frames /
 * exact bytes / --top / --by stack, function or cumulative, --min-bytes,
 * the two snapshots and, in the top 5 bits of the last, the report), then
 * one of two modes:
 *  - a whole SQLite file ("SQLite format 3" first): byte-level corruption;
 *    the seed is corpus/db/seed.db, written by tests/db_fill (--rss, then
 *    --series, then --attacher: three sessions, every kind, a peak
 *    snapshot, a series for --leaks) through the attacher's own database
 *    code.  A file with no OPTIONS before it (seed.db itself) has them
 *    all zero;
 *  - anything else: hostile SQL edits of that seed (db_hostile.h), made
 *    in memory (SQLite's memdb: sqlite3_deserialize, sqlite3_serialize).
 * The file goes to a private directory (under /dev/shm when there is
 * one) and heapdiff's code runs on it in-process, through the functions
 * heapdiff.c's main calls: hd_source_open, hd_resolve, hd_build_rows and
 * the writer of ONE report (the input's choice; libFuzzer covers them all
 * over a run, each execution is about 15 times cheaper than all of them):
 * A -> B in text, folded, json, svg, pprof or html (text, json, pprof and
 * html by the input's --by: call paths, functions flat or cumulative; the
 * text report by call paths has the top functions too); the live heap at B in
 * text, json, svg or pprof; --peak (json); --leaks (text or json);
 * --heap-vs-rss (text or json) when B's session has resident memory.  At
 * its start the harness runs the seed through every one of them (none may
 * fail).  Each report is written to memory.  A report the library stops
 * with HD_ERR (report.h) is a clean stop: its line is checked, what it
 * built was freed on the way out.
 *
 * Asserted, besides what the sanitizers check:
 *  - an error line is one line of printable text (check_text: no control
 *    or C1 character, valid UTF-8);
 *  - text reports (text, --leaks, --heap-vs-rss) pass check_text; folded
 *    passes check_folded; json is valid JSON (check_json: no NaN or inf
 *    either); svg is well-formed XML (check_xml); pprof is a profile Go's
 *    pprof reads (check_pprof); html passes check_html, its hd-data JSON
 *    is valid, and its tags are exactly those of the page of the seed (no
 *    name adds or ends an element);
 *  - each report is written within a few seconds (the 10 s of
 *    tests/fuzz/run catches a report that never ends).
 * Leaks are checked (LeakSanitizer): a report stopped by an error frees
 * what it built, as one that ends.
 *
 * fuzz-sources: src/report/report_util.c src/report/report_load.c src/report/report_rows.c
 * fuzz-sources: src/report/stack_cache.c
 * fuzz-sources: src/report/leaks.c src/report/leak_funcs.c src/report/heap_vs_rss.c
 * fuzz-sources: src/report/report_funcs.c src/report/report_series.c
 * fuzz-sources: src/render/render_util.c src/render/report_text.c src/render/report_folded.c
 * fuzz-sources: src/render/report_json.c src/render/report_svg.c src/render/report_pprof.c
 * fuzz-sources: src/render/report_html.c src/render/heap_vs_rss_write.c src/db/db_open.c
 * fuzz-sources: src/common/util.c src/common/alloc_frame.c src/common/hashtab.c src/common/arena.c
 * fuzz-sources: src/report/late_names.c src/symbolize/debugfind.c src/symbolize/debuginfod_get.c
 * fuzz-sources: src/symbolize/build_id.c src/report/reach.c src/report/memory.c src/common/mem_terms.c
 * fuzz-sources: src/symbolize/debugcache.c src/symbolize/symbolize_file.c
 * fuzz-sources: src/symbolize/symbolize_name.c src/symbolize/dwarf_names.c src/symbolize/strpool.c
 * fuzz-generated: src/render/report_html_assets.c src/db/schema_sql.c
 * fuzz-libs: -lsqlite3 -lz -ldw -lelf -ldebuginfod -lstdc++
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "check_json.h"
#include "check_markup.h"
#include "check_pprof.h"
#include "check_text.h"
#include "db_hostile.h"
#include "render.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SEED "corpus/db/seed.db"

static char dir[64], dbpath[128];
static uint8_t *base;             /* the seed, relaxed (db_hostile.h) */
static size_t nbase;
static char clean_tags[4096];     /* the tags of the seed's html page */

/* SQLite allocates much: no fill of each new block, a smaller
 * quarantine. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "max_malloc_fill_size=0:quarantine_size_mb=64";
}

/* ------------------------------------------------------------ files */

static uint8_t *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	FUZZ_CHECK(f != NULL, "cannot open %s", path);
	uint8_t *b = NULL;
	size_t cap = 0;
	*n = 0;
	for (;;) {
		if (*n == cap && !(b = realloc(b, cap = cap ? cap * 2 : 65536)))
			abort();
		size_t k = fread(b + *n, 1, cap - *n, f);
		if (k == 0)
			break;
		*n += k;
	}
	fclose(f);
	return b;
}

/* The database file: exactly these bytes, no -wal or -shm left over. */
static void write_db(const uint8_t *d, size_t n)
{
	char side[160];
	for (int i = 0; i < 2; i++) {
		snprintf(side, sizeof side, "%s%s", dbpath, i ? "-shm" : "-wal");
		unlink(side);
	}
	int fd = open(dbpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0 && write(fd, d, n) == (ssize_t)n && close(fd) == 0, "cannot write %s",
	           dbpath);
}

/* The directories of harnesses that died in the middle of an input. */
static void remove_stale(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *de;
	char path[4200], side[4300];
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		int pid;
		if (sscanf(de->d_name, "fuzz_db.%d.", &pid) != 1 || pid == getpid() ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof path, "%s/%s", parent, de->d_name);
		for (int i = 0; i < 3; i++) {
			snprintf(side, sizeof side, "%s/profile.db%s", path, i == 0 ? "" : i == 1 ? "-wal" : "-shm");
			unlink(side);
		}
		rmdir(path);
	}
	closedir(d);
}

static void cleanup(void)
{
	char side[160];
	for (int i = 0; i < 3; i++) {
		snprintf(side, sizeof side, "%s%s", dbpath, i == 0 ? "" : i == 1 ? "-wal" : "-shm");
		unlink(side);
	}
	rmdir(dir);
}

/* ------------------------------------------------------------ errors */

static struct hd_err err;          /* every source's (hd_source_open) */
static int dies;

/* A report stopped with its error: the line checked (it goes to a
 * terminal), and cleared for the next. */
static void died(void)
{
	size_t at;
	FUZZ_CHECK(err.set, "HD_ERR without an error line");
	const char *why = check_text(err.msg, strlen(err.msg), 1, &at);
	FUZZ_CHECK(!why, "error line: %s at byte %zu: heapdiff: %s", why, at, err.msg);
	FUZZ_CHECK(err.msg[0], "an empty error line");
	dies++;
	memset(&err, 0, sizeof err);
}

/* ------------------------------------------------------------ checks */

enum out { O_TEXT, O_FOLDED, O_JSON, O_SVG, O_PPROF, O_HTML };

static void check(enum out kind, const char *what, const char *s, size_t n)
{
	size_t at = 0;
	const char *why = NULL;
	char tags[sizeof clean_tags];
	switch (kind) {
	case O_TEXT: why = check_text(s, n, 0, &at); break;
	case O_FOLDED: why = check_folded(s, n, &at); break;
	case O_JSON: why = check_json(s, n, &at); break;
	case O_SVG: why = check_xml(s, n, &at); break;
	case O_PPROF: why = check_pprof(s, n); break;
	case O_HTML:
		why = check_html(s, n, tags, sizeof tags, &at);
		if (!why && clean_tags[0] && strcmp(tags, clean_tags) != 0) {
			fprintf(stderr, "tags: %s\nclean page's: %s\n", tags, clean_tags);
			why = "not the tags of the clean page";
		}
		if (!why && !clean_tags[0])
			snprintf(clean_tags, sizeof clean_tags, "%s", tags);
		break;
	}
	if (!why)
		return;
	size_t from = at > 80 ? at - 80 : 0, to = at + 80 < n ? at + 80 : n;
	fprintf(stderr, "%s: %s at byte %zu of %zu; around it:\n%.*s\n", what, why, at, n,
	        (int)(to - from), s + from);
	FUZZ_CHECK(0, "%s: %s", what, why);
}

/* ------------------------------------------------------------ reports */

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The reports, one per execution (the input's choice: libFuzzer covers
 * them all over a run), or all of them (ALL_REPORTS). */
enum { NREPORTS = 15, ALL_REPORTS = -1 };

struct opts {
	int64_t session;
	struct hd_filter flt;
	int by_objects, exact;
	int by;                      /* --by stack, function or cumulative */
	long top;
	const char *spec[2];
	int which;                   /* the report: 0..NREPORTS - 1 */
};

static const char *const out_name[] = { "text", "folded", "json", "svg", "pprof", "html" };

/* One writer into memory, checked; an error in it is a clean stop. */
static void write_one(enum out kind, const char *what, struct hd_report *r,
                      const struct hd_filter *flt, const struct hd_vs *vs, struct hd_source *s,
                      int64_t session, const struct opts *o)
{
	char *buf = NULL;
	size_t n = 0;
	int rc = HD_OK;
	FILE *f = open_memstream(&buf, &n);
	if (!f)
		abort();
	double t0 = cpu_s();
	if (vs) {
		kind == O_JSON ? hd_write_vs_json(f, r, vs) : hd_write_vs_text(f, r, vs);
	} else if (!r) {
		struct hd_leak_opts lo = { kind == O_JSON ? HD_JSON : HD_TEXT, o->exact, o->top, flt };
		struct hd_leak_report lr;
		rc = hd_leak_report(s, session, &lo, &lr);
		if (rc == HD_OK) {
			kind == O_JSON ? hd_write_leaks_json(f, &lr) : hd_write_leaks_text(f, &lr);
			hd_leak_report_free(&lr);
		}
	} else {
		switch (kind) {
		case O_TEXT: hd_write_text(f, r); break;
		case O_FOLDED: hd_write_folded(f, r); break;
		case O_JSON: hd_write_json(f, r); break;
		case O_SVG: hd_write_svg(f, r); break;
		case O_PPROF: rc = hd_write_pprof(f, r); break;
		case O_HTML: rc = hd_write_html(f, r, flt); break;
		}
	}
	fclose(f);
	if (rc == HD_OK) {
		char label[64];
		snprintf(label, sizeof label, "%s, %s", what, out_name[kind]);
		FUZZ_CHECK(cpu_s() - t0 < 5, "%s: %.1f s of CPU", label, cpu_s() - t0);
		check(kind, label, buf, n);
	} else {
		died();
	}
	free(buf);
}

/* A -> B (A NULL: the live heap at b) in the formats of mask. */
static void diff_reports(const struct opts *o, int live, unsigned mask)
{
	struct hd_source src;
	struct hd_snap a, b;
	struct hd_report r = { 0 };
	struct hd_funcs funcs = { 0 };
	char note[256];
	int rc = hd_source_open(&src, dbpath, 0, &err);
	if (rc == HD_OK && !live)
		rc = hd_resolve(&src, o->spec[0], o->session, &a);
	if (rc == HD_OK)
		rc = hd_resolve(&src, o->spec[1], o->session, &b);
	r.a = live ? NULL : &a;
	if (rc == HD_OK && (mask & (1u << O_TEXT | 1u << O_HTML)))
		rc = hd_fallen_note(&b, o->flt.kind, o->exact, note, sizeof note, &r.fallen_note);
	r.b = &b;
	r.by_objects = o->by_objects;
	r.exact_bytes = o->exact;
	r.top = o->top;
	/* As heapdiff.c: the functions for text, json and html; --by
	 * function refused for folded and svg. */
	r.by = mask & (1u << O_FOLDED | 1u << O_SVG) ? HD_BY_STACK : o->by;
	r.funcs = &funcs;
	if (rc == HD_OK)
		rc = hd_build_rows(&r, &o->flt);
	if (rc == HD_OK) {
		for (int k = O_TEXT; k <= O_HTML; k++)
			if (mask & (1u << k))
				write_one((enum out)k, live ? "live" : "diff", &r, &o->flt, NULL, &src, 0, o);
		hd_free_rows(&r);
	} else {
		died();
	}
	hd_source_close(&src);
}

/* --leaks (text, json), --peak (json) and --heap-vs-rss (text, json): the
 * reports of mask (OR_*). */
enum { OR_LEAKS_TEXT = 1, OR_LEAKS_JSON = 2, OR_PEAK = 4, OR_VS_TEXT = 8, OR_VS_JSON = 16 };
static void other_reports(const struct opts *o, unsigned mask)
{
	struct hd_source src;
	struct hd_snap b;
	struct hd_report r = { 0 };
	struct hd_vs vs;
	int64_t session, nsnaps, id, period = 0;
	double live;
	char idbuf[32];
	int rc = hd_source_open(&src, dbpath, 0, &err);
	if (rc == HD_OK)
		rc = hd_session(&src, o->session, &session);
	if (rc < 0)
		goto out;
	if (mask & OR_LEAKS_TEXT)
		write_one(O_TEXT, "leaks", NULL, &o->flt, NULL, &src, session, o);
	if (mask & OR_LEAKS_JSON)
		write_one(O_JSON, "leaks", NULL, &o->flt, NULL, &src, session, o);
	if (!(mask & (OR_PEAK | OR_VS_TEXT | OR_VS_JSON)))
		goto out;
	rc = hd_peak(&src, session, o->flt.kind, &id, &live, &nsnaps);
	snprintf(idbuf, sizeof idbuf, "%" PRId64, rc == HD_OK ? id : 0);
	if (rc == HD_OK)
		rc = hd_resolve(&src, idbuf, session, &b);
	r.b = &b;
	r.peak_note = "peak: a note";
	r.by_objects = o->by_objects;
	r.top = o->top;
	if (rc == HD_OK)
		rc = hd_build_rows(&r, &o->flt);
	if (rc < 0)
		goto out;
	if (mask & OR_PEAK)
		write_one(O_JSON, "peak", &r, &o->flt, NULL, &src, 0, o);
	hd_free_rows(&r);
	if (!(mask & (OR_VS_TEXT | OR_VS_JSON)))
		goto out;
	if ((rc = hd_session_rss(&src, b.session_id, &period, NULL, 0)) < 0 || !period)
		goto out;
	struct hd_filter vf = o->flt;
	vf.kind = HD_KIND_ALLOC;
	memset(&r, 0, sizeof r);
	r.b = &b;
	r.top = o->top;
	r.exact_bytes = o->exact;
	if ((rc = hd_vs_build(&r, &vf, &vs)) < 0)
		goto out;
	if (mask & OR_VS_TEXT)
		write_one(O_TEXT, "heap-vs-rss", &r, &vf, &vs, &src, 0, o);
	if (mask & OR_VS_JSON)
		write_one(O_JSON, "heap-vs-rss", &r, &vf, &vs, &src, 0, o);
	hd_vs_free(&vs);
out:
	if (rc < 0)
		died();
	hd_source_close(&src);
}

/* which: 0-5 A -> B in text, folded, json, svg, pprof, html; 6-9 the live
 * heap at B in text, json, svg, pprof; 10, 11 --leaks in text, json; 12
 * --peak in json; 13, 14 --heap-vs-rss in text, json. */
static void reports(const struct opts *o, int which)
{
	static const enum out live[] = { O_TEXT, O_JSON, O_SVG, O_PPROF };
	if (which == ALL_REPORTS) {
		struct opts f = *o;
		diff_reports(o, 0, 0x3f);
		diff_reports(o, 1, 1u << O_TEXT | 1u << O_JSON | 1u << O_SVG | 1u << O_PPROF);
		other_reports(o, 0x1f);
		for (f.by = HD_BY_FUNCTION; f.by <= HD_BY_CUM; f.by++)
			diff_reports(&f, 0, 1u << O_TEXT | 1u << O_JSON | 1u << O_PPROF | 1u << O_HTML);
	} else if (which < 6) {
		diff_reports(o, 0, 1u << which);
	} else if (which < 10) {
		diff_reports(o, 1, 1u << live[which - 6]);
	} else {
		other_reports(o, 1u << (which - 10));
	}
}

/* ------------------------------------------------------------ input */

static void parse_opts(const uint8_t *d, struct opts *o)
{
	static const int kinds[] = { HD_KIND_ALLOC, HA_KIND_HEAP, HA_KIND_MMAP, HA_KIND_RSS, HA_KIND_SWAP };
	static const long tops[] = { 10, 0, 1, 3 };
	static const double mins[] = { 0, 1, 1000, 1e6 };
	static const char *const specs[][2] = {
		{ "first", "last" }, { "last", "first" }, { "peak", "last" }, { "1", "23" },
		{ "first", "peak" }, { "5", "14" }, { "15", "4" }, { "last", "last" },
	};
	memset(o, 0, sizeof *o);
	o->session = d[0] % 5;           /* 0: the latest; 4: none such */
	o->flt.kind = kinds[d[1] % 5];
	o->by_objects = d[2] & 1;
	o->flt.all_frames = (d[2] >> 1) & 1;
	o->exact = (d[2] >> 2) & 1;
	o->top = tops[(d[2] >> 3) & 3];
	o->by = (d[2] >> 5) % 3;
	o->flt.min_bytes = mins[d[3] % 4];
	o->spec[0] = specs[d[4] % 8][0];
	o->spec[1] = specs[d[4] % 8][1];
	o->which = (d[4] >> 3) % NREPORTS;
}

/* A database image (n bytes at img) in memory, SQLite's memdb: edited
 * there, no file, no journal. */
static sqlite3 *mem_open(const uint8_t *img, size_t n)
{
	sqlite3 *h;
	unsigned char *p = sqlite3_malloc64(n);
	FUZZ_CHECK(p && sqlite3_open(":memory:", &h) == SQLITE_OK, "cannot open a memdb");
	memcpy(p, img, n);
	p[18] = p[19] = 1;  /* the file format versions: memdb has no WAL */
	FUZZ_CHECK(sqlite3_deserialize(h, "main", p, (sqlite3_int64)n, (sqlite3_int64)n,
	                               SQLITE_DESERIALIZE_FREEONCLOSE |
	                               SQLITE_DESERIALIZE_RESIZEABLE) == SQLITE_OK,
	           "sqlite3_deserialize: %s", sqlite3_errmsg(h));
	return h;
}

/* The image of h, back in WAL mode as heapattach writes its files, then h
 * closed; the caller frees it with sqlite3_free. */
static uint8_t *mem_close(sqlite3 *h, size_t *n)
{
	sqlite3_int64 sz;
	unsigned char *p = sqlite3_serialize(h, "main", &sz, 0);
	FUZZ_CHECK(p && sz >= 100, "sqlite3_serialize: %s", sqlite3_errmsg(h));
	p[18] = p[19] = 2;
	sqlite3_close(h);
	*n = (size_t)sz;
	return p;
}

/* The seed, its NOT NULL constraints relaxed (db_hostile.h), in base. */
static void make_base(const char *seed)
{
	size_t n;
	uint8_t *b = read_all(seed, &n);
	sqlite3 *h = mem_open(b, n);
	free(b);
	db_relax(h);
	base = mem_close(h, &nbase);
}

static void setup(void)
{
	char here[4096], seed[4200];
	snprintf(here, sizeof here, "%s", __FILE__);
	snprintf(seed, sizeof seed, "%s/" SEED, dirname(here));
	struct stat st;
	const char *parent = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
	remove_stale(parent);
	snprintf(dir, sizeof dir, "%s/fuzz_db.%d.XXXXXX", parent, (int)getpid());
	FUZZ_CHECK(mkdtemp(dir) != NULL, "cannot make %s", dir);
	snprintf(dbpath, sizeof dbpath, "%s/profile.db", dir);
	atexit(cleanup);
	make_base(seed);
	/* The clean page's tags, and the seed through every report (which
	 * must not die). */
	struct opts o;
	uint8_t zero[5] = { 0 };
	parse_opts(zero, &o);
	write_db(base, nbase);
	dies = 0;
	reports(&o, ALL_REPORTS);
	FUZZ_CHECK(dies == 0 && clean_tags[0], "the seed did not go through every report");
	cleanup();
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (!base)
		setup();
	if (n < 5)
		return 0;
	/* The directory only lives while an input runs: libFuzzer's end
	 * (and a crash's) skips atexit. */
	FUZZ_CHECK(mkdir(dir, 0700) == 0, "cannot make %s", dir);
	struct opts o;
	static const char magic[16] = "SQLite format 3";
	if (n >= 16 && memcmp(d, magic, 16) == 0) {
		uint8_t zero[5] = { 0 };
		parse_opts(zero, &o);
		write_db(d, n);
	} else if (n >= 5 + 16 && memcmp(d + 5, magic, 16) == 0) {
		parse_opts(d, &o);
		write_db(d + 5, n - 5);
	} else {
		parse_opts(d, &o);
		sqlite3 *h = mem_open(base, nbase);
		db_apply(h, d + 5, d + n);
		size_t ni;
		uint8_t *img = mem_close(h, &ni);
		write_db(img, ni);
		sqlite3_free(img);
	}
	reports(&o, o.which);
	cleanup();
	return 0;
}
