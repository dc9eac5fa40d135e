/*
 * heapdiff_args.c -- heapdiff's command line: its usage, its options and
 * its snapshot operands checked against each other, all before any file
 * is opened (heapdiff.c then opens the databases, resolves the snapshots
 * and reports).
 */
#define _GNU_SOURCE
#include "heapdiff_args.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MEM_OPT(o) ((o)->memory == 2 ? "--reach" : "--memory")

#ifndef HA_VERSION
#define HA_VERSION "0"
#endif

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

void __attribute__((noreturn, format(printf, 1, 2))) hd_usage_error(const char *fmt, ...)
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
		hd_usage_error("bad %s '%s'", what, s);
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
	hd_usage_error("bad --format '%s' (text, folded, json, svg, pprof or html)", s);
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
				hd_usage_error("--by %s and --by %s exclude each other", o->by_view, views[v]);
			o->by = v;
			o->by_view = views[v];
		} else if (strcmp(w, "bytes") == 0 || strcmp(w, "objects") == 0) {
			o->by_objects = w[0] == 'o';
		} else {
			hd_usage_error("bad --by '%s' (stack, function or cumulative; bytes or objects)", w);
		}
	}
	if (strlen(arg) >= sizeof words || n == 0)
		hd_usage_error("bad --by '%s' (stack, function or cumulative; bytes or objects)", arg);
}

static int parse_kind(const char *s)
{
	for (int k = 0; k < HA_KIND_COUNT; k++)
		if (strcmp(s, hd_kind_name(k)) == 0)
			return k;
	hd_usage_error("bad --kind '%s' (heap, mmap, rss or swap)", s);
}

/* Adds the argument of --push, --label or --push-header. */
static void add_arg(struct ha_push_conf *c, const char *opt, const char *s)
{
	char err[256];
	if (ha_push_add(c, opt, s, err, sizeof err) < 0)
		hd_usage_error("%s", err);
}

/* --push and its options, each checked (src/push/push_url.c). */
static void check_push(struct options *o)
{
	char err[512];
	struct ha_push_conf *c = &o->push;
	if (!c->nurls) {
		if (o->push_options)
			hd_usage_error("--app, --label, --push-header, --push-cacert and --push-timeout are "
			            "options of --push, which is not given");
		return;
	}
	if (o->report_opt || o->leaks || o->vs || o->memory)
		hd_usage_error("--push sends each snapshot's whole profile: it writes no report (%s)",
		            o->leaks ? "--leaks" : o->vs ? "--heap-vs-rss" : o->memory ? MEM_OPT(o)
		            : o->report_opt);
	if (ha_push_check_conf(c, err, sizeof err) < 0)
		hd_usage_error("%s", err);
}

void hd_parse_args(int argc, char **argv, struct options *o)
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
				hd_usage_error("bad --push-timeout '%s' (seconds from 0.1 to 3600)", optarg);
			o->push_options = 1;
			break;
		}
		case O_DB: o->db = optarg; break;
		case 'f': o->format = parse_format(optarg); break;
		case 'o':
			if (!*optarg)
				hd_usage_error("empty --output file name");
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
				hd_usage_error("--debug-dir wants an absolute directory without ':', not '%s'",
				            optarg);
			size_t had = o->debug_dirs ? strlen(o->debug_dirs) : 0;
			o->debug_dirs = hd_xrealloc(o->debug_dirs, had + strlen(optarg) + 2);
			(void)sprintf(o->debug_dirs + had, "%s%s", had ? ":" : "", optarg);
			break;
		}
		case O_NO_DEBUGINFOD: o->no_debuginfod = 1; break;
		case 'h': usage(stdout); exit(EXIT_OK);
		case 'V': printf("heapdiff (heapattach) %s\n", HA_VERSION); exit(EXIT_OK);
		case ':': hd_usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				hd_usage_error("unknown option '-%c'", optopt);
			hd_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	check_push(o);
	if (o->leaks && o->peak)
		hd_usage_error("--leaks and --peak exclude each other");
	if (o->leaks && o->format != HD_TEXT && o->format != HD_JSON)
		hd_usage_error("--leaks writes text or json");
	if (o->by_view && (o->leaks || o->vs))
		hd_usage_error("%s: no --by %s", o->leaks ? "--leaks ranks call paths and functions together"
		                                       : "--heap-vs-rss is by function (cumulative) already",
		            o->by_view);
	if (o->by != HD_BY_STACK && (o->format == HD_FOLDED || o->format == HD_SVG))
		hd_usage_error("--by %s: a flame graph (%s) is made of call paths, whose frames it adds up "
		            "itself; use text, json, pprof or html", o->by_view,
		            o->format == HD_FOLDED ? "folded" : "svg");
	if (o->vs) {
		if (o->leaks || o->peak)
			hd_usage_error("--heap-vs-rss and %s exclude each other", o->leaks ? "--leaks" : "--peak");
		if (o->format != HD_TEXT && o->format != HD_JSON)
			hd_usage_error("--heap-vs-rss writes text or json (-f html has its table too)");
		if (o->flt.kind != HD_KIND_ALLOC)
			hd_usage_error("--heap-vs-rss shows every kind side by side: no --kind");
		if (o->by_objects)
			hd_usage_error("--heap-vs-rss ranks by bytes: objects and pages do not compare");
	}

	if (o->memory && (o->leaks || o->peak || o->vs || o->by_view))
		hd_usage_error("%s and %s exclude each other", MEM_OPT(o), o->leaks ? "--leaks" : o->peak
		            ? "--peak" : o->vs ? "--heap-vs-rss" : "--by");
	if (o->by_stack && o->memory != 1)
		hd_usage_error("--by-stack goes with --memory (the call paths pinning the holes)");
	if (o->memory && o->format != HD_TEXT && o->format != HD_JSON)
		hd_usage_error("%s writes text or json", MEM_OPT(o));

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
		hd_usage_error("too many operands (a database and at most two snapshots)");
	if (o->memory && nops > 1)
		hd_usage_error("%s reads one snapshot: DB [S]", MEM_OPT(o));
	if ((o->leaks || o->peak) && nops > 0)
		hd_usage_error("%s takes a database and no snapshot operands", o->leaks ? "--leaks" : "--peak");
	for (int i = 0; i < nops; i++) {
		struct operand *op = &o->op[nops == 1 ? 1 : i];
		const char *arg = argv[optind + i];
		if (!split_operand(arg, op)) {
			if (!valid_spec(arg))
				hd_usage_error("bad snapshot '%s' (an id, 'first', 'last' or 'peak', or FILE:SNAPSHOT)",
				            arg);
			if (!o->db)
				hd_usage_error("no database given for snapshot '%s'", arg);
			op->spec = arg;
		}
	}
	if (!o->db && nops == 0)
		hd_usage_error("no database given");
	if (nops == 0) {
		o->op[0].spec = "first";
		o->op[1].spec = "last";
	}
}
