/*
 * heapdiff.c -- what grew in a heapattach profile: the command line.
 *
 *   heapdiff [options] DB A B         callstacks ranked by growth of live bytes
 *   heapdiff [options] DB B           the live heap at B
 *   heapdiff [options] DB             first -> last of the latest session
 *   heapdiff --by function DB [[A] B] functions: flat and cumulative
 *   heapdiff [options] X.db:A Y.db:B  across two files (before/after a deploy)
 *   heapdiff --leaks DB               leak suspects over a whole session
 *   heapdiff --peak DB                the live heap at its highest point
 *   heapdiff --heap-vs-rss DB [[A] B] per function: heap and mmap against
 *                                     resident and swapped memory
 *   heapdiff --memory [--by-stack] DB [S]  where RssAnon went (memory.c)
 *   heapdiff --reach DB [S]           leaked or held, by call path (reach.c)
 *   heapdiff -f html -o FILE DB [A] B one page: chart, flame graphs, leaks
 *   heapdiff --push URL DB [[A] B]    the snapshots A..B sent to a store (src/push/)
 *
 * heapdiff_args.c parses options and operands; this file opens the
 * databases and resolves the snapshots;
 * report_load.c reads, report_rows.c folds/filters/merges, report_funcs.c
 * adds rows up by function, leaks.c and leak_funcs.c do --leaks,
 * report_series.c --peak, heap_vs_rss.c --heap-vs-rss (src/report, the
 * model); src/render's report_*.c and heap_vs_rss_write.c write them.  Usage errors are found before any file is opened.
 *
 * The report library returns its errors (report.h); this file alone
 * decides what one ends: fatal() writes the line kept in err and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debuginfod_get.h"
#include "late_names.h"
#include "push.h"
#include "render.h"
#include "memory.h"
#include "reach_view.h"
#include "heapdiff_args.h"

/* A debug file fetched for heapdiff: at most this long each, unless
 * DEBUGINFOD_MAXTIME says otherwise. */
#define LATE_TIMEOUT_S 30.0


/* The error of the report library (or of this file) that ends heapdiff:
 * every source is opened with it. */
static struct hd_err err;

/* A database or an output that cannot be read or written: its line after
 * the report so far, exit 1. */
static void __attribute__((noreturn)) fatal(void)
{
	fflush(stdout); /* NOLINT(cert-err33-c): only orders the report before the message */
	fprintf(stderr, "heapdiff: %s\n", err.msg);
	exit(EXIT_ERROR);
}

/* rc of a report library function: HD_ERR ends heapdiff. */
static void check(int rc)
{
	if (rc < 0)
		fatal();
}


/* Names for the frames a session left unnamed (late_names.h), for every
 * database opened; what stays unnamed is told at the exit. */
static struct hd_late *late;

static void tell_late(void)
{
	hd_late_tell(late, stderr);
	hd_late_free(late);
	late = NULL;
}


/* Opens the database of an operand, reusing src[0] when it is the same
 * file (same device and inode, or the same name). */
static struct hd_source *source_for(struct hd_source src[2], int *nsrc, const char *path)
{
	struct stat a, b;
	for (int i = 0; i < *nsrc; i++) {
		if (strcmp(src[i].path, path) == 0)
			return &src[i];
		if (stat(src[i].path, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			return &src[i];
	}
	check(hd_source_open(&src[*nsrc], path, *nsrc, &err));
	src[*nsrc].late = late;
	return &src[(*nsrc)++];
}

static FILE *open_output(const struct options *o)
{
	FILE *f = stdout;
	if (o->output) {
		/* 0600 (a report holds the target's names), and never through a
		 * symbolic link planted in its place. */
		int fd = open(o->output, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0 && errno == ELOOP)
			check(hd_fail(&err, "%s: a symbolic link: refusing to write through it", o->output));
		if (fd < 0 || !(f = fdopen(fd, "w")))
			check(hd_fail(&err, "%s: %s", o->output, strerror(errno)));
	} else if (o->format == HD_PPROF && isatty(STDOUT_FILENO)) {
		hd_usage_error("--format pprof writes gzipped binary data: redirect it or use -o FILE");
	}
	return f;
}

static int close_output(FILE *f, const struct options *o)
{
	int bad = fflush(f) != 0 || ferror(f);
	if (f != stdout && fclose(f) != 0)
		bad = 1;
	if (bad) {
		fprintf(stderr, "heapdiff: writing %s: %s\n", o->output ? o->output : "the output",
		        strerror(errno));
		return EXIT_ERROR;
	}
	return EXIT_OK;
}

/* --heap-vs-rss: refused (exit 1, one line) unless every session read has
 * resident memory. */
static int heap_vs_rss(const struct options *o, struct hd_report *r, const struct hd_snap *b,
                       struct hd_source *src, int nsrc)
{
	const struct hd_snap *side[2] = { r->a, b };
	struct hd_vs vs;
	char why[512];
	FILE *out;
	int rc;

	for (int i = 0; i < 2; i++) {
		int64_t period;
		if (!side[i])
			continue;
		check(hd_session_rss(side[i]->src, side[i]->session_id, &period, why, sizeof why));
		if (!period)
			check(hd_fail(&err, "%s", why));
	}
	r->b = b;
	r->exact_bytes = o->exact_bytes;
	r->top = o->top;
	check(hd_vs_build(r, &o->flt, &vs));
	out = open_output(o);
	if (o->format == HD_JSON)
		hd_write_vs_json(out, r, &vs);
	else
		hd_write_vs_text(out, r, &vs);
	rc = close_output(out, o);
	hd_vs_free(&vs);
	for (int i = 0; i < nsrc; i++)
		hd_source_close(&src[i]);
	return rc;
}

/* --memory: where RssAnon went at b (or the latest snapshot before it that
 * has a breakdown); --reach: its latest reachability scan. */
static int memory_report(const struct options *o, const struct hd_snap *b, struct hd_source *src,
                         int nsrc)
{
	struct hd_memory m;
	struct hd_reach rm;
	int top = o->top > INT_MAX ? INT_MAX : (int)o->top;
	check(o->memory == 2 ? hd_reach_load(b, (size_t)top, &rm) : hd_memory_load(b, o->exact_bytes, &m));
	check(o->memory == 1 && o->by_stack ? hd_memory_load_pins(b->src, &m) : HD_OK);
	FILE *out = open_output(o);
	if (o->memory == 2 && o->format == HD_JSON)
		check(hd_write_reach_json(out, b, &rm, top));
	else if (o->memory == 2)
		check(hd_write_reach_text(out, b, &rm, top, o->exact_bytes));
	else if (o->format == HD_JSON)
		hd_write_memory_json(out, b, &m, top);
	else
		hd_write_memory_text(out, b, &m, top, o->exact_bytes);
	int rc = close_output(out, o);
	if (o->memory == 2)
		hd_reach_free(&rm);
	else
		hd_memory_free(&m);
	for (int i = 0; i < nsrc; i++)
		hd_source_close(&src[i]);
	return rc;
}

/* --push: the snapshots a..b of b's file (b alone without a), the
 * baselines left out (every value zero), sent in id order. */
static int push_snapshots(const struct options *o, const struct hd_snap *a,
                          const struct hd_snap *b, struct hd_source *src, int nsrc)
{
	size_t n;
	int64_t *ids;
	if (a && a->src != b->src)
		hd_usage_error("--push sends the snapshots of one database, not of two");
	check(hd_snapshot_ids(b->src, a ? a->id : b->id, b->id, &ids, &n));
	if (n == 0)
		check(hd_fail(&err, "%s: no snapshot to push from %" PRId64 " to %" PRId64 " (a baseline at "
		              "attach holds nothing and is not sent)", b->src->path, a ? a->id : b->id, b->id));
	const char *path = b->src->path;
	int rc = ha_push_batch(&o->push, path, ids, n) == 0 ? EXIT_OK : EXIT_ERROR;
	free(ids);
	for (int i = 0; i < nsrc; i++)
		hd_source_close(&src[i]);
	return rc;
}

/* A filter that matches nothing would print "no callstack changed": say
 * that it matched nothing instead (one line, exit 1).  1 if it did so. */
static int empty_filter(const struct options *o, struct hd_source *src, int nsrc)
{
	for (int i = 0; i < nsrc && (o->flt.function || o->flt.module); i++) {
		const char *which;
		int64_t functions;
		int can = hd_filter_can_match(&src[i], &o->flt, &which, &functions);
		check(can);
		if (!can) {
			fprintf(stderr, "heapdiff: %s: no frame matches %s '%s' (its call paths hold %"
			        PRId64 " functions: heapdiff --by function lists them)\n", src[i].path,
			        which, strcmp(which, "--module") == 0 ? o->flt.module : o->flt.function,
			        functions);
			for (int j = 0; j < nsrc; j++)
				hd_source_close(&src[j]);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = { .top = 10, .flt = { .kind = HD_KIND_ALLOC } };
	struct hd_source src[2];
	int nsrc = 0, rc;
	struct hd_snap a, b;
	struct hd_report r = { 0 };
	char note[256];
	FILE *out;

	hd_parse_args(argc, argv, &o);
	ha_debuginfod_setup();
	{
		const char *max = getenv("DEBUGINFOD_MAXTIME");
		double t = max ? strtod(max, NULL) : 0;
		late = hd_late_new(o.debug_dirs, !o.no_debuginfod, t > 0 ? t : LATE_TIMEOUT_S);
		free(o.debug_dirs); /* (copied) */
		o.debug_dirs = NULL;
		if (atexit(tell_late) != 0)
			tell_late();
	}
	/* Refused before any work (open_output checks again, harmlessly). */
	if (o.format == HD_PPROF && !o.output && isatty(STDOUT_FILENO))
		hd_usage_error("--format pprof writes gzipped binary data: redirect it or use -o FILE");

	if (o.leaks) {
		struct hd_source *s = source_for(src, &nsrc, o.db);
		int64_t session;
		struct hd_leak_opts lo = { o.format, o.exact_bytes, o.top, &o.flt };
		struct hd_leak_report lr;
		check(hd_session(s, o.session, &session));
		if (empty_filter(&o, src, nsrc))
			return 1;
		out = open_output(&o);
		check(hd_leak_report(s, session, &lo, &lr));
		if (o.format == HD_JSON)
			hd_write_leaks_json(out, &lr);
		else
			hd_write_leaks_text(out, &lr);
		rc = close_output(out, &o);
		hd_leak_report_free(&lr);
		hd_source_close(s);
		return rc;
	}

	if (o.peak) {
		struct hd_source *s = source_for(src, &nsrc, o.db);
		int64_t session, nsnaps = 0, id;
		double live = 0;
		char buf[64], idbuf[32];
		check(hd_session(s, o.session, &session));
		check(hd_peak(s, session, o.flt.kind, &id, &live, &nsnaps));
		snprintf(idbuf, sizeof idbuf, "%" PRId64, id);
		check(hd_resolve(s, idbuf, session, &b));
		if (strcmp(b.reason, "peak") == 0)
			snprintf(note, sizeof note,
			         "peak: snapshot %" PRId64 " holds the highest estimated %s of session %"
			         PRId64 " (%s), kept by heapattach at the moment it was reached",
			         id, hd_kind_what(o.flt.kind),
			         session, hd_fmt_bytes(buf, sizeof buf, live, 0, o.exact_bytes));
		else
			snprintf(note, sizeof note,
			         "peak: snapshot %" PRId64 " has the highest estimated %s of session %"
			         PRId64 " (%s, over %" PRId64 " snapshots)",
			         id, hd_kind_what(o.flt.kind),
			         session, hd_fmt_bytes(buf, sizeof buf, live, 0, o.exact_bytes), nsnaps);
		r.peak_note = note;
	} else {
		for (int i = 0; i < 2; i++) {
			if (!o.op[i].spec)
				continue;
			struct hd_source *s = source_for(src, &nsrc, o.op[i].db ? o.op[i].db : o.db);
			check(hd_resolve(s, o.op[i].spec, o.session, i == 0 ? &a : &b));
		}
		if (o.op[0].spec) {
			r.a = &a;
			r.cross_db = a.src != b.src;
			if (!r.cross_db && a.session_id != b.session_id)
				fprintf(stderr,
				        "heapdiff: warning: snapshots %" PRId64 " and %" PRId64
				        " are in different sessions (%" PRId64 " and %" PRId64
				        "): each value is taken from its own session\n",
				        a.id, b.id, a.session_id, b.session_id);
		}
	}
	if (empty_filter(&o, src, nsrc))
		return 1;
	if (o.push.nurls)
		return push_snapshots(&o, r.a, &b, src, nsrc);
	if (o.vs)
		return heap_vs_rss(&o, &r, &b, src, nsrc);
	if (o.memory)
		return memory_report(&o, &b, src, nsrc);
	/* Only the formats that print it: it costs a scan of the session. */
	if (!o.peak && (o.format == HD_TEXT || o.format == HD_HTML))
		check(hd_fallen_note(&b, o.flt.kind, o.exact_bytes, note, sizeof note, &r.fallen_note));
	r.b = &b;
	/* A pprof profile of one snapshot has its period's allocations, as a
	 * Go heap profile in a profile store (src/render/report_pprof.c). */
	struct hd_snap prev;
	if (o.format == HD_PPROF && !r.a) {
		int found = hd_prev_snapshot(&b, &prev);
		check(found);
		if (found)
			r.alloc_from = &prev;
	}
	r.by_objects = o.by_objects;
	r.exact_bytes = o.exact_bytes;
	r.top = o.top;
	/* The functions: --by function's rows, the text report's top
	 * functions, the page's table (pprof adds its call paths up by
	 * function itself). */
	struct hd_funcs funcs = { 0 };
	r.by = o.by;
	if (o.format == HD_TEXT || o.format == HD_JSON || o.format == HD_HTML)
		r.funcs = &funcs;
	check(hd_build_rows(&r, &o.flt));
	/* (The rows' stacks are loaded: what late naming left unnamed.) */
	char *names_missing = hd_late_missing_text(late);
	r.names_missing = names_missing;

	out = open_output(&o);
	switch (o.format) {
	case HD_TEXT: hd_write_text(out, &r); break;
	case HD_FOLDED: hd_write_folded(out, &r); break;
	case HD_JSON: hd_write_json(out, &r); break;
	case HD_SVG: hd_write_svg(out, &r); break;
	case HD_PPROF: check(hd_write_pprof(out, &r)); break;
	case HD_HTML: check(hd_write_html(out, &r, &o.flt)); break;
	}
	rc = close_output(out, &o);
	hd_free_rows(&r);
	free(names_missing);
	for (int i = 0; i < nsrc; i++)
		hd_source_close(&src[i]);
	return rc;
}
