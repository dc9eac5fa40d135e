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
 * This file only parses options and operands and resolves the snapshots;
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
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
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

/* A debug file fetched for heapdiff: at most this long each, unless
 * DEBUGINFOD_MAXTIME says otherwise. */
#define LATE_TIMEOUT_S 30.0
#define MEM_OPT(o) ((o)->memory == 2 ? "--reach" : "--memory")

#ifndef HA_VERSION
#define HA_VERSION "0"
#endif

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

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

/* A snapshot operand: [DB:]SPEC. */
struct operand {
	const char *db;          /* NULL: the database operand */
	const char *spec;        /* "first", "last" or an id */
};

struct options {
	const char *db;
	struct operand op[2];    /* A, B; op[0].spec NULL = single mode */
	long top;                /* 0 = all */
	int by_objects;
	int by;                  /* HD_BY_STACK, HD_BY_FUNCTION, HD_BY_CUM */
	const char *by_view;     /* the --by that chose it, or NULL */
	int64_t session;         /* 0 = latest session with snapshots */
	int exact_bytes;
	enum hd_format format;
	const char *output;
	int leaks, peak, vs, memory, by_stack; /* memory: 1 --memory, 2 --reach (one snapshot's) */
	struct hd_filter flt;
	struct ha_push_conf push;  /* --push and its options; nurls 0: none */
	int push_options;          /* one of its options was given */
	const char *report_opt;    /* an option of a report (refused with --push) */
	char *debug_dirs;          /* --debug-dir's, ':'-joined */
	int no_debuginfod;
};

/* Names for the frames a session left unnamed (late_names.h), for every
 * database opened; what stays unnamed is told at the exit. */
static struct hd_late *late;

static void tell_late(void)
{
	hd_late_tell(late, stderr);
	hd_late_free(late);
	late = NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: heapdiff [options] DB [[A] B]\n"
	        "       heapdiff [options] DB1:A DB2:B\n"
	        "       heapdiff --leaks [options] DB\n"
	        "       heapdiff --peak [options] DB\n"
	        "       heapdiff --heap-vs-rss [options] DB [[A] B]\n"
	        "       heapdiff --memory [--by-stack] [options] DB [S]\n"
	        "       heapdiff --reach [options] DB [S]\n"
	        "What grew in a heapattach profile between snapshots A and B: the callstacks\n"
	        "ranked by growth of live bytes, then the estimated live-heap growth against\n"
	        "the RSS change.  With only B, the live heap at B.  With neither, A = first\n"
	        "and B = last: what grew since the attach.  A and B are snapshot ids or\n"
	        "'first' (the baseline at attach), 'last' and 'peak' (the highest live heap)\n"
	        "of the latest session, or of --session N; FILE:A takes A from another\n"
	        "database.\n"
	        "\n"
	        "      --db FILE         the profile database (instead of the first operand)\n"
	        "  -f, --format FMT      text (default), folded (flamegraph.pl), json, svg\n"
	        "                        (interactive flame graph), pprof (gzipped\n"
	        "                        profile.proto for go tool pprof) or html (one\n"
	        "                        self-contained page: memory over time, flame\n"
	        "                        graphs, top call paths, leak suspects)\n"
	        "  -o, --output FILE     write the report to FILE instead of standard output\n"
	        "      --leaks           leak suspects: callstacks and functions whose live\n"
	        "                        bytes grow steadily over all snapshots of the\n"
	        "                        session\n"
	        "      --peak            the live heap at the snapshot where it was highest\n"
	        "      --heap-vs-rss     per function (every call path through it), the\n"
	        "                        change of heap and mmap, of resident and of\n"
	        "                        swapped memory side by side (heapattach --rss):\n"
	        "                        allocated but untouched, touched and kept, or\n"
	        "                        resident but freed; text or json\n"
	        "      --memory          where the target's RssAnon went at snapshot S (default\n"
	        "                        last): live heap (sampled, from before attach), the\n"
	        "                        allocator's free memory (trimmable, pinned), its\n"
	        "                        overhead, mmapped chunks, thread stacks, the\n"
	        "                        profiler, other anonymous memory and what is\n"
	        "                        unexplained; glibc's arenas; text or json\n"
	        "      --by-stack        with --memory: the call paths whose live blocks pin\n"
	        "                        the free bytes on their pages (allocator_free_pinned)\n"
	        "      --reach           leaked or held at snapshot S (default last; its scan by\n"
	        "                        heapattach --reach): per call path the live heap that\n"
	        "                        nothing points to any more, what is reachable and\n"
	        "                        who holds it; text or json\n"
	        "  -n, --top N           show the N first callstacks (default 10; 0 = all)\n"
	        "      --by WHAT[,WHAT]  what a row is: stack (a call path, the default),\n"
	        "                        function (ranked by flat: what it allocated itself)\n"
	        "                        or cumulative (what it and its callees allocated);\n"
	        "                        and what ranks: bytes (default) or objects\n"
	        "                        (repeatable; text, json, pprof, html)\n"
	        "      --session N       'first' and 'last' mean those of session N\n"
	        "      --module SUBSTR   only callstacks with a frame in a matching module\n"
	        "      --function SUBSTR only callstacks with a frame of a matching function\n"
	        "                        (or a Python frame of a matching file: cache.py)\n"
	        "      --kind KIND       only that kind of memory: heap or mmap (what the\n"
	        "                        program allocated; both by default), rss or swap\n"
	        "                        (where it is: resident or swapped out, by the call\n"
	        "                        path that touched it first; heapattach --rss); rss\n"
	        "                        and swap are never added to heap and mmap\n"
	        "      --min-bytes N     leave out callstacks that changed by less than N bytes\n"
	        "      --all-frames      keep the allocator's and C++ runtime's frames\n"
	        "                        (folded by default)\n"
	        "      --bytes           exact byte counts instead of KiB/MiB/GiB\n"
	        "      --debug-dir DIR   name the frames the session could not with the debug\n"
	        "                        files in DIR (a .build-id tree, or NAME.debug beside\n"
	        "                        a module's name); may be repeated.  Also looked in:\n"
	        "                        HEAPATTACH_DEBUG_DIR, /usr/lib/debug, and the servers\n"
	        "                        of DEBUGINFOD_URLS\n"
	        "      --no-debuginfod   do not ask DEBUGINFOD_URLS' servers (their cache is\n"
	        "                        still read)\n"
	        "      --push URL        instead of a report, send the snapshots from A to B\n"
	        "                        (DB alone: first to last; DB B: B only; with --peak:\n"
	        "                        the peak) as pprof heap profiles to the Pyroscope (or\n"
	        "                        Alloy) at URL, as heapattach --push does; repeatable\n"
	        "      --app NAME        the application name of the pushed profiles (default:\n"
	        "                        the session's comm)\n"
	        "      --label NAME=VALUE  a label of the pushed profiles, besides hostname,\n"
	        "                        pid, comm and kind (a label of one of those names\n"
	        "                        replaces it); repeatable\n"
	        "      --push-header 'NAME: VALUE'  a header of every push request (e.g.\n"
	        "                        X-Scope-OrgID: TENANT); repeatable; credentials come\n"
	        "                        from $HEAPATTACH_PUSH_TOKEN, or $HEAPATTACH_PUSH_USER\n"
	        "                        and $HEAPATTACH_PUSH_PASSWORD\n"
	        "      --push-cacert FILE  verify https receivers with the CA certificates in\n"
	        "                        FILE instead of the system's\n"
	        "      --push-timeout SECS  longest one push request may take (default 10)\n"
	        "  -h, --help            print this help\n"
	        "  -V, --version         print the version\n"
	        "\n"
	        "Exit status: 0 ok; 1 the database or a snapshot cannot be read (missing,\n"
	        "not a heapattach database, corrupt, other schema version, no such\n"
	        "snapshot) or the output cannot be written, or a receiver did not accept\n"
	        "a profile (--push); 2 usage error.\n");
}

static void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...)
{
	va_list ap;
	fputs("heapdiff: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'heapdiff --help'.\n", stderr);
	exit(EXIT_USAGE);
}

static long parse_long(const char *s, const char *what, long min)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < min)
		usage_error("bad %s '%s'", what, s);
	return v;
}

/* Is spec a valid snapshot: 'first', 'last', 'peak' or a positive id? */
static int valid_spec(const char *spec)
{
	char *end;
	if (strcmp(spec, "first") == 0 || strcmp(spec, "last") == 0 || strcmp(spec, "peak") == 0)
		return 1;
	errno = 0;
	long long v = strtoll(spec, &end, 10);
	return *spec >= '0' && *spec <= '9' && *end == '\0' && errno == 0 && v > 0;
}

/* Splits "FILE:SPEC" (1) or leaves a plain operand (0).  A name that
 * exists as a file is a file, even with a colon in it. */
static int split_operand(const char *arg, struct operand *op)
{
	const char *c = strrchr(arg, ':');
	struct stat st;
	if (!c || c == arg || !valid_spec(c + 1) || stat(arg, &st) == 0)
		return 0;
	char *db = hd_xmalloc((size_t)(c - arg) + 1);
	memcpy(db, arg, (size_t)(c - arg));
	db[c - arg] = '\0';
	op->db = db;
	op->spec = c + 1;
	return 1;
}

static enum hd_format parse_format(const char *s)
{
	static const char *const names[] = { "text", "folded", "json", "svg", "pprof", "html" };
	for (int i = 0; i < 6; i++)
		if (strcmp(s, names[i]) == 0)
			return (enum hd_format)i;
	usage_error("bad --format '%s' (text, folded, json, svg, pprof or html)", s);
}

/* --by: a comma-separated list of views (stack, function, cumulative) and
 * rankings (bytes, objects), one of each at most over all --by. */
static void parse_by(struct options *o, const char *arg)
{
	static const char *const views[] = { "stack", "function", "cumulative" };
	static char words[256];
	int n = 0;
	snprintf(words, sizeof words, "%s", arg);
	for (char *save = NULL, *w = strtok_r(words, ",", &save); w; w = strtok_r(NULL, ",", &save), n++) {
		int v = -1;
		for (int i = 0; i < 3; i++)
			if (strcmp(w, views[i]) == 0)
				v = i;
		if (v >= 0) {
			if (o->by_view && o->by != v)
				usage_error("--by %s and --by %s exclude each other", o->by_view, views[v]);
			o->by = v;
			o->by_view = views[v];
		} else if (strcmp(w, "bytes") == 0 || strcmp(w, "objects") == 0) {
			o->by_objects = w[0] == 'o';
		} else {
			usage_error("bad --by '%s' (stack, function or cumulative; bytes or objects)", w);
		}
	}
	if (strlen(arg) >= sizeof words || n == 0)
		usage_error("bad --by '%s' (stack, function or cumulative; bytes or objects)", arg);
}

static int parse_kind(const char *s)
{
	for (int k = 0; k < HA_KIND_COUNT; k++)
		if (strcmp(s, hd_kind_name(k)) == 0)
			return k;
	usage_error("bad --kind '%s' (heap, mmap, rss or swap)", s);
}

/* Adds the argument of --push, --label or --push-header. */
static void add_arg(struct ha_push_conf *c, const char *opt, const char *s)
{
	char err[256];
	if (ha_push_add(c, opt, s, err, sizeof err) < 0)
		usage_error("%s", err);
}

/* --push and its options, each checked (src/push/push_url.c). */
static void check_push(struct options *o)
{
	char err[512];
	struct ha_push_conf *c = &o->push;
	if (!c->nurls) {
		if (o->push_options)
			usage_error("--app, --label, --push-header, --push-cacert and --push-timeout are "
			            "options of --push, which is not given");
		return;
	}
	if (o->report_opt || o->leaks || o->vs || o->memory)
		usage_error("--push sends each snapshot's whole profile: it writes no report (%s)",
		            o->leaks ? "--leaks" : o->vs ? "--heap-vs-rss" : o->memory ? MEM_OPT(o)
		            : o->report_opt);
	if (ha_push_check_conf(c, err, sizeof err) < 0)
		usage_error("%s", err);
}

static void parse_args(int argc, char **argv, struct options *o)
{
	enum { O_DB = 256, O_BY, O_SESSION, O_BYTES, O_LEAKS, O_PEAK, O_VS, O_MODULE, O_FUNCTION,
	       O_KIND, O_MIN_BYTES, O_ALL_FRAMES, O_PUSH, O_APP, O_LABEL, O_PUSH_HEADER,
	       O_PUSH_CACERT, O_PUSH_TIMEOUT, O_DEBUG_DIR, O_NO_DEBUGINFOD, O_MEMORY, O_REACH, O_BY_STACK };
	static const struct option opts[] = {
		{ "db", required_argument, NULL, O_DB },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "leaks", no_argument, NULL, O_LEAKS },
		{ "peak", no_argument, NULL, O_PEAK },
		{ "heap-vs-rss", no_argument, NULL, O_VS },
		{ "memory", no_argument, NULL, O_MEMORY },
		{ "reach", no_argument, NULL, O_REACH },
		{ "by-stack", no_argument, NULL, O_BY_STACK },
		{ "top", required_argument, NULL, 'n' },
		{ "by", required_argument, NULL, O_BY },
		{ "session", required_argument, NULL, O_SESSION },
		{ "module", required_argument, NULL, O_MODULE },
		{ "function", required_argument, NULL, O_FUNCTION },
		{ "kind", required_argument, NULL, O_KIND },
		{ "min-bytes", required_argument, NULL, O_MIN_BYTES },
		{ "all-frames", no_argument, NULL, O_ALL_FRAMES },
		{ "bytes", no_argument, NULL, O_BYTES },
		{ "push", required_argument, NULL, O_PUSH },
		{ "app", required_argument, NULL, O_APP },
		{ "label", required_argument, NULL, O_LABEL },
		{ "push-header", required_argument, NULL, O_PUSH_HEADER },
		{ "push-cacert", required_argument, NULL, O_PUSH_CACERT },
		{ "push-timeout", required_argument, NULL, O_PUSH_TIMEOUT },
		{ "debug-dir", required_argument, NULL, O_DEBUG_DIR },
		{ "no-debuginfod", no_argument, NULL, O_NO_DEBUGINFOD },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, nops;

	opterr = 0; /* our own messages, with our name */
	o->push.timeout_s = HA_PUSH_TIMEOUT_DEFAULT;
	int li = -1;
	static char opt_name[40];
	while ((c = getopt_long(argc, argv, ":f:o:n:hV", opts, &li)) != -1) {
		/* What makes a report, which --push does not write. */
		if (c == 'f' || c == 'o' || c == 'n' || (c >= O_BY && c <= O_ALL_FRAMES && c != O_SESSION && c != O_PEAK)) {
			if (c >= O_BY)
				snprintf(opt_name, sizeof opt_name, "--%s", opts[li].name);
			else
				snprintf(opt_name, sizeof opt_name, "-%c", c);
			o->report_opt = opt_name;
		}
		li = -1;
		switch (c) {
		case O_PUSH: add_arg(&o->push, "--push", optarg); break;
		case O_APP: o->push.app = optarg; o->push_options = 1; break;
		case O_LABEL: add_arg(&o->push, "--label", optarg); o->push_options = 1; break;
		case O_PUSH_HEADER:
			add_arg(&o->push, "--push-header", optarg);
			o->push_options = 1;
			break;
		case O_PUSH_CACERT: o->push.cacert = optarg; o->push_options = 1; break;
		case O_PUSH_TIMEOUT: {
			char *end;
			errno = 0;
			o->push.timeout_s = strtod(optarg, &end);
			if (!*optarg || *end || errno || !(o->push.timeout_s >= 0.1 && o->push.timeout_s <= 3600))
				usage_error("bad --push-timeout '%s' (seconds from 0.1 to 3600)", optarg);
			o->push_options = 1;
			break;
		}
		case O_DB: o->db = optarg; break;
		case 'f': o->format = parse_format(optarg); break;
		case 'o':
			if (!*optarg)
				usage_error("empty --output file name");
			o->output = optarg;
			break;
		case O_LEAKS: o->leaks = 1; break;
		case O_PEAK: o->peak = 1; break;
		case O_VS: o->vs = 1; break;
		case O_MEMORY: o->memory = 1; break;
		case O_REACH: o->memory = 2; break;
		case O_BY_STACK: o->by_stack = 1; break;
		case 'n': o->top = parse_long(optarg, "--top", 0); break;
		case O_BY: parse_by(o, optarg); break;
		case O_SESSION: o->session = parse_long(optarg, "--session", 1); break;
		case O_MODULE: o->flt.module = optarg; break;
		case O_FUNCTION: o->flt.function = optarg; break;
		case O_KIND: o->flt.kind = parse_kind(optarg); break;
		case O_MIN_BYTES: o->flt.min_bytes = (double)parse_long(optarg, "--min-bytes", 0); break;
		case O_ALL_FRAMES: o->flt.all_frames = 1; break;
		case O_BYTES: o->exact_bytes = 1; break;
		case O_DEBUG_DIR: {
			if (optarg[0] != '/' || strchr(optarg, ':'))
				usage_error("--debug-dir wants an absolute directory without ':', not '%s'",
				            optarg);
			size_t had = o->debug_dirs ? strlen(o->debug_dirs) : 0;
			o->debug_dirs = hd_xrealloc(o->debug_dirs, had + strlen(optarg) + 2);
			(void)sprintf(o->debug_dirs + had, "%s%s", had ? ":" : "", optarg);
			break;
		}
		case O_NO_DEBUGINFOD: o->no_debuginfod = 1; break;
		case 'h': usage(stdout); exit(EXIT_OK);
		case 'V': printf("heapdiff (heapattach) %s\n", HA_VERSION); exit(EXIT_OK);
		case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				usage_error("unknown option '-%c'", optopt);
			usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	check_push(o);
	if (o->leaks && o->peak)
		usage_error("--leaks and --peak exclude each other");
	if (o->leaks && o->format != HD_TEXT && o->format != HD_JSON)
		usage_error("--leaks writes text or json");
	if (o->by_view && (o->leaks || o->vs))
		usage_error("%s: no --by %s", o->leaks ? "--leaks ranks call paths and functions together"
		                                       : "--heap-vs-rss is by function (cumulative) already",
		            o->by_view);
	if (o->by != HD_BY_STACK && (o->format == HD_FOLDED || o->format == HD_SVG))
		usage_error("--by %s: a flame graph (%s) is made of call paths, whose frames it adds up "
		            "itself; use text, json, pprof or html", o->by_view,
		            o->format == HD_FOLDED ? "folded" : "svg");
	if (o->vs) {
		if (o->leaks || o->peak)
			usage_error("--heap-vs-rss and %s exclude each other", o->leaks ? "--leaks" : "--peak");
		if (o->format != HD_TEXT && o->format != HD_JSON)
			usage_error("--heap-vs-rss writes text or json (-f html has its table too)");
		if (o->flt.kind != HD_KIND_ALLOC)
			usage_error("--heap-vs-rss shows every kind side by side: no --kind");
		if (o->by_objects)
			usage_error("--heap-vs-rss ranks by bytes: objects and pages do not compare");
	}

	if (o->memory && (o->leaks || o->peak || o->vs || o->by_view))
		usage_error("%s and %s exclude each other", MEM_OPT(o), o->leaks ? "--leaks" : o->peak
		            ? "--peak" : o->vs ? "--heap-vs-rss" : "--by");
	if (o->by_stack && o->memory != 1)
		usage_error("--by-stack goes with --memory (the call paths pinning the holes)");
	if (o->memory && o->format != HD_TEXT && o->format != HD_JSON)
		usage_error("%s writes text or json", MEM_OPT(o));

	/* The database operand, unless --db or the first operand is FILE:SPEC. */
	if (!o->db && optind < argc) {
		struct operand tmp;
		if (!split_operand(argv[optind], &tmp))
			o->db = argv[optind++];
		else
			free((char *)tmp.db);
	}
	nops = argc - optind;
	if (nops > 2)
		usage_error("too many operands (a database and at most two snapshots)");
	if (o->memory && nops > 1)
		usage_error("%s reads one snapshot: DB [S]", MEM_OPT(o));
	if ((o->leaks || o->peak) && nops > 0)
		usage_error("%s takes a database and no snapshot operands", o->leaks ? "--leaks" : "--peak");
	for (int i = 0; i < nops; i++) {
		struct operand *op = &o->op[nops == 1 ? 1 : i];
		const char *arg = argv[optind + i];
		if (!split_operand(arg, op)) {
			if (!valid_spec(arg))
				usage_error("bad snapshot '%s' (an id, 'first', 'last' or 'peak', or FILE:SNAPSHOT)",
				            arg);
			if (!o->db)
				usage_error("no database given for snapshot '%s'", arg);
			op->spec = arg;
		}
	}
	if (!o->db && nops == 0)
		usage_error("no database given");
	if (nops == 0) {
		o->op[0].spec = "first";
		o->op[1].spec = "last";
	}
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
		usage_error("--format pprof writes gzipped binary data: redirect it or use -o FILE");
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
	check(o->memory == 2 ? hd_reach_load(b, &rm) : hd_memory_load(b, o->exact_bytes, &m));
	check(o->memory == 1 && o->by_stack ? hd_memory_load_pins(b->src, &m) : HD_OK);
	FILE *out = open_output(o);
	if (o->memory == 2 && o->format == HD_JSON)
		hd_write_reach_json(out, b, &rm, top);
	else if (o->memory == 2)
		hd_write_reach_text(out, b, &rm, top, o->exact_bytes);
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
		usage_error("--push sends the snapshots of one database, not of two");
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

	parse_args(argc, argv, &o);
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
		usage_error("--format pprof writes gzipped binary data: redirect it or use -o FILE");

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
