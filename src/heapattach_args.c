/* heapattach_args.c -- heapattach's command line (see heapattach_args.h). */
#define _GNU_SOURCE
#include "heapattach_args.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ha_proto.h"
#include "ha_ring_map.h"
#include "intern.h"
#include "util.h"

#ifndef HA_VERSION
#define HA_VERSION "0"
#endif
/* Rings by address when --rings does not say (ha_proto.h, section 4): one
 * per CPU that can write at once, at least MIN_RINGS (threads whose arenas
 * fall in one ring share it: more rings, fewer of them), none under
 * MIN_RING_BYTES (a thread writes into the ring of its arena alone).
 * doc/design.md, "Rings by address". */
#define MIN_RINGS 4
#define MIN_RING_BYTES (1u << 20)
/* Without --ring-size, the rings' size in all: the 8 MiB of the one ring
 * before.  Smaller rings are faster (their lines stay in the caches: at
 * 512K, 2 MiB rings measured 0.879 of the unhooked speed and 8 MiB ones
 * 0.840), larger ones drop less when the attacher is kept off the CPU (at
 * 64K on two busy threads, 2 MiB rings dropped samples in most runs,
 * 8 MiB ones in none).  doc/design.md, "Rings by address". */
#define DEFAULT_RINGS_BYTES (8u << 20)

void ha_args_defaults(struct options *o)
{
	*o = (struct options){ .timeout_s = 5, .ring_bytes = DEFAULT_RINGS_BYTES,
	                       .interval = 512u << 10, .stack_bytes = 64u << 10,
	                       .snapshot_every_s = 10, .rss_period = 251,
	                       .nice = HA_BACKGROUND_NICE,
	                       .max_callpaths = HA_MAX_CALLPATHS_DEFAULT };
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: heapattach [options] PID\n"
	        "Attach to a running process, profile its heap, detach; the process goes on.\n"
	        "\n"
	        "  -o, --db FILE         the profile database (default heapattach-COMM-PID.db;\n"
	        "                        an existing one gets a new session appended)\n"
	        "  -i, --interval BYTES  mean bytes between samples (default 512K; 1 = every\n"
	        "                        allocation; doubled while the ring overflows)\n"
	        "  -d, --duration SECS   detach after SECS seconds (default: until Ctrl-C,\n"
	        "                        SIGTERM or the target's exit)\n"
	        "  -s, --snapshot-every SECS  snapshot period (default 10; 0: none): one at\n"
	        "                        attach, dense at first (1, 2, 3, 5, 7 s...) while\n"
	        "                        shorter than SECS, then every SECS; SIGUSR1 to\n"
	        "                        heapattach takes one at once; the last one at detach,\n"
	        "                        and the peak of the live heap if no snapshot holds it\n"
	        "      --trim[=predict]  no profile: predict what malloc_trim(0) would give back\n"
	        "                        (the free whole pages glibc holds), ask the agent to\n"
	        "                        call it on its own thread, print the RssAnon drop\n"
	        "                        predicted and measured, detach; =predict only reads\n"
	        "                        (each arena is locked while malloc_trim walks it)\n"
	        "      --live            a full-screen view of what is growing, refreshed every\n"
	        "                        second (keys: ? in the view); needs a terminal\n"
	        "      --rss             also resident memory by first-touch call path: sample\n"
	        "                        the target's page faults (perf events; heapdiff --kind\n"
	        "                        rss); where perf events are not allowed, one line says\n"
	        "                        why and the heap profile goes on without\n"
	        "      --rss-period N    with --rss, sample every Nth page fault of each thread\n"
	        "                        (default 251; 1 = every fault; implies --rss)\n"
	        "      --reach[=SECS]    tell leaked from held: a reachability scan of the\n"
	        "                        target before it detaches, and every SECS if given\n"
	        "                        (SIGUSR2 to heapattach scans at once, with or\n"
	        "                        without it): its threads stopped a few ms, a frozen\n"
	        "                        copy marked from its roots (glibc's malloc only)\n"
	        "      --stack-bytes BYTES  cap of the stack copied per sample (default 64K)\n"
	        "      --block           when the ring is full, make the target wait instead of\n"
	        "                        dropping samples (drops are counted either way)\n"
	        "      --no-stack-refs   copy every sampled stack; by default a stack the\n"
	        "                        attacher has unwound before is named, not copied\n"
	        "      --no-memory-view  no breakdown of RssAnon at snapshots (the allocator's\n"
	        "                        arenas walked, smaps and pagemap read: ms per 100 MiB\n"
	        "                        of heap, on heapattach's thread; heapdiff --memory\n"
	        "                        then has none)\n"
	        "      --max-callpaths N  distinct call paths kept (default 50000; 0: no cap);\n"
	        "                        past it, new ones are counted under one path per\n"
	        "                        module of their leaf\n"
	        "      --no-debuginfod   do not fetch the debug files of modules without one\n"
	        "                        from DEBUGINFOD_URLS' servers (by default a thread\n"
	        "                        of its own does, 30 s at most each, when it is set)\n"
	        "      --python MODE     on a CPython target: frames (the default: Python\n"
	        "                        frames, function  file.py:LINE, in every stack; small\n"
	        "                        objects seen as pymalloc's arenas), all (each small\n"
	        "                        object too, through a wrap of CPython's allocators:\n"
	        "                        3-9%% on allocation-heavy code), or off\n"
	        "      --no-python       the same as --python off: native stacks only\n"
	        "  -q, --quiet           no status line\n"
	        "  -v, --verbose         progress and timings on stderr\n"
	        "      --agent PATH      the agent shared object to inject (default:\n"
	        "                        $HEAPATTACH_AGENT, else the build tree's when run from\n"
	        "                        it, else the installed one)\n"
	        "      --timeout SECS    time allowed to reach a safe point in the target and\n"
	        "                        for the agent to answer (default 5)\n"
	        "      --ring-size BYTES size of the shared rings in all (power of two, default\n"
	        "                        8 MiB; more drops fewer samples at small intervals)\n"
	        "      --rings N         split it into N rings by address (1, 2, 4, 8 or 16;\n"
	        "                        default one per CPU, at least 4, none under 1 MiB)\n"
	        "      --nice N          run the threads that read the ring and write the\n"
	        "                        database N nice levels below heapattach (default 10;\n"
	        "                        0: compete with the target for the CPUs as equals)\n"
	        "      --push URL        also send each snapshot, and the peak, as a pprof heap\n"
	        "                        profile to the Pyroscope (or Alloy) at URL: POST\n"
	        "                        URL/ingest; repeatable; never blocks the target, the\n"
	        "                        session or the database (a bounded queue per URL)\n"
	        "      --app NAME        the application name of the pushed profiles (default:\n"
	        "                        the target's comm)\n"
	        "      --label NAME=VALUE  a label of the pushed profiles, besides hostname,\n"
	        "                        pid, comm and kind; repeatable\n"
	        "      --push-header 'NAME: VALUE'  a header of every push request (e.g.\n"
	        "                        X-Scope-OrgID: TENANT); repeatable; credentials come\n"
	        "                        from $HEAPATTACH_PUSH_TOKEN, or $HEAPATTACH_PUSH_USER\n"
	        "                        and $HEAPATTACH_PUSH_PASSWORD, never from here\n"
	        "      --push-cacert FILE  verify https receivers with the CA certificates in\n"
	        "                        FILE instead of the system's\n"
	        "      --push-timeout SECS  longest a push request may take, and at the end the\n"
	        "                        longest heapattach waits for what is queued (default 10)\n"
	        "  -h, --help            this help\n"
	        "  -V, --version         print the version\n"
	        "\n"
	        "Exit status: 0 detached cleanly, 1 refused (the target was not touched),\n"
	        "2 usage error, 3 failed after injection (the agent restores itself),\n"
	        "130 interrupted (Ctrl-C; SIGTERM: 143) before the attach began, nothing done.\n");
}

static int parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}

/* Adds the argument of --push, --label or --push-header; -1 after one line. */
static int push_arg(struct ha_push_conf *c, const char *opt, const char *s)
{
	char err[256];
	if (ha_push_add(c, opt, s, err, sizeof err) == 0)
		return 0;
	fprintf(stderr, "heapattach: %s\n", err);
	return -1;
}

/* The options of --push, each checked; those that make sense only with
 * --push refused without it.  0 or -1 after one line. */
static int check_push(struct ha_push_conf *c, int any_push_option)
{
	char err[512];
	if (!c->nurls) {
		if (any_push_option) {
			fprintf(stderr, "heapattach: --app, --label, --push-header, --push-cacert and "
			        "--push-timeout are options of --push, which is not given\n");
			return -1;
		}
		return 0;
	}
	if (ha_push_check_conf(c, err, sizeof err) == 0)
		return 0;
	fprintf(stderr, "heapattach: %s\n", err);
	return -1;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *s == '-')
		return -1;
	int shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	}
	if (*end || (shift && v > (ULLONG_MAX >> shift)))
		return -1;
	v <<= shift;
	*out = v;
	return 0;
}

int ha_parse_args(int argc, char **argv, struct options *o)
{
	enum { OPT_AGENT = 256, OPT_TIMEOUT, OPT_RING, OPT_STACK, OPT_BLOCK, OPT_NO_SREFS, OPT_NO_DEBUGINFOD, OPT_MAX_CALLPATHS, OPT_NO_PYTHON, OPT_PYTHON, OPT_NICE, OPT_RSS, OPT_RSS_PERIOD, OPT_LIVE,
	       OPT_PUSH, OPT_APP, OPT_LABEL, OPT_PUSH_HEADER, OPT_PUSH_CACERT, OPT_PUSH_TIMEOUT, OPT_RINGS, OPT_REACH, OPT_TRIM, OPT_NO_MEMVIEW };
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'o' },
		{ "interval", required_argument, NULL, 'i' },
		{ "snapshot-every", required_argument, NULL, 's' },
		{ "stack-bytes", required_argument, NULL, OPT_STACK },
		{ "block", no_argument, NULL, OPT_BLOCK },
		{ "no-stack-refs", no_argument, NULL, OPT_NO_SREFS },
		{ "no-memory-view", no_argument, NULL, OPT_NO_MEMVIEW },
		{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
		{ "max-callpaths", required_argument, NULL, OPT_MAX_CALLPATHS },
		{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
		{ "python", required_argument, NULL, OPT_PYTHON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "duration", required_argument, NULL, 'd' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "agent", required_argument, NULL, OPT_AGENT },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "ring-size", required_argument, NULL, OPT_RING },
		{ "rings", required_argument, NULL, OPT_RINGS },
		{ "nice", required_argument, NULL, OPT_NICE },
		{ "rss", no_argument, NULL, OPT_RSS },
		{ "live", no_argument, NULL, OPT_LIVE },
		{ "trim", optional_argument, NULL, OPT_TRIM },
		{ "rss-period", required_argument, NULL, OPT_RSS_PERIOD },
		{ "reach", optional_argument, NULL, OPT_REACH },
		{ "push", required_argument, NULL, OPT_PUSH },
		{ "app", required_argument, NULL, OPT_APP },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "push-header", required_argument, NULL, OPT_PUSH_HEADER },
		{ "push-cacert", required_argument, NULL, OPT_PUSH_CACERT },
		{ "push-timeout", required_argument, NULL, OPT_PUSH_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, push_options = 0;
	struct ha_push_conf *pc = &o->push;
	if (!pc->timeout_s)
		pc->timeout_s = HA_PUSH_TIMEOUT_DEFAULT;
	while ((c = getopt_long(argc, argv, "o:i:s:d:qvhV", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_PUSH:
			if (push_arg(pc, "--push", optarg))
				return -1;
			break;
		case OPT_APP:
			pc->app = optarg;
			push_options = 1;
			break;
		case OPT_LABEL:
			if (push_arg(pc, "--label", optarg))
				return -1;
			push_options = 1;
			break;
		case OPT_PUSH_HEADER:
			if (push_arg(pc, "--push-header", optarg))
				return -1;
			push_options = 1;
			break;
		case OPT_PUSH_CACERT:
			pc->cacert = optarg;
			push_options = 1;
			break;
		case OPT_PUSH_TIMEOUT:
			if (parse_double(optarg, &pc->timeout_s) || pc->timeout_s < 0.1 ||
			    pc->timeout_s > 3600) {
				fprintf(stderr, "heapattach: --push-timeout wants seconds from 0.1 to 3600, "
				        "not '%s'\n", optarg);
				return -1;
			}
			push_options = 1;
			break;
		case 'o':
			o->db = optarg;
			break;
		case OPT_REACH:
			o->reach = 1;
			if (optarg && (parse_double(optarg, &o->reach_every_s) || o->reach_every_s < 0.05)) {
				fprintf(stderr, "heapattach: --reach wants seconds (>= 0.05) between scans, "
				        "or nothing, not '%s'\n", optarg);
				return -1;
			}
			break;
		case 'i':
			if (parse_u64(optarg, &o->interval) || o->interval == 0 ||
			    o->interval > HA_INTERVAL_MAX) {
				fprintf(stderr, "heapattach: --interval wants a number of bytes from 1 to "
				        "1T, not '%s'\n", optarg);
				return -1;
			}
			break;
		case 's':
			if (parse_double(optarg, &o->snapshot_every_s) ||
			    (o->snapshot_every_s < 0.05 && o->snapshot_every_s != 0)) {
				fprintf(stderr, "heapattach: --snapshot-every wants seconds (>= 0.05, or 0 "
				        "for none), not '%s'\n", optarg);
				return -1;
			}
			break;
		case OPT_STACK:
			if (parse_u64(optarg, &o->stack_bytes) || o->stack_bytes < 256 ||
			    o->stack_bytes > (8u << 20)) {
				fprintf(stderr, "heapattach: --stack-bytes wants 256 to 8M, not '%s'\n",
				        optarg);
				return -1;
			}
			break;
		case OPT_BLOCK:
			o->block = 1;
			break;
		case OPT_NO_SREFS:
			o->no_stack_refs = 1;
			break;
		case OPT_NO_MEMVIEW:
			o->no_memory_view = 1;
			break;
		case OPT_NO_DEBUGINFOD:
			o->no_debuginfod = 1;
			break;
		case OPT_MAX_CALLPATHS: {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || v > 100000000ull) {
				fprintf(stderr, "heapattach: --max-callpaths wants a count from 0 (no cap) "
				        "to 100000000, not '%s'\n", optarg);
				return -1;
			}
			o->max_callpaths = v;
			break;
		}
		case OPT_NO_PYTHON:
			o->python = HA_PYTHON_OFF;
			break;
		case OPT_PYTHON:
			if (strcmp(optarg, "all") == 0) {
				o->python = HA_PYTHON_ALL;
			} else if (strcmp(optarg, "frames") == 0) {
				o->python = HA_PYTHON_FRAMES;
			} else if (strcmp(optarg, "off") == 0) {
				o->python = HA_PYTHON_OFF;
			} else {
				fprintf(stderr, "heapattach: --python wants all, frames or off, not "
				        "'%s'\n", optarg);
				return -1;
			}
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'd':
			if (parse_double(optarg, &o->duration_s) || o->duration_s <= 0) {
				fprintf(stderr, "heapattach: --duration wants a positive number of "
				        "seconds, not '%s'\n", optarg);
				return -1;
			}
			break;
		case 'v':
			o->verbose++;
			break;
		case OPT_AGENT:
			o->agent = optarg;
			break;
		case OPT_TIMEOUT:
			if (parse_double(optarg, &o->timeout_s) || o->timeout_s <= 0) {
				fprintf(stderr, "heapattach: --timeout wants a positive number of seconds, not '%s'\n", optarg);
				return -1;
			}
			break;
		case OPT_RING:
			if (parse_u64(optarg, &o->ring_bytes)) {
				fprintf(stderr, "heapattach: --ring-size wants a size in bytes, not '%s'\n", optarg);
				return -1;
			}
			break;
		case OPT_RINGS:
			if (parse_u64(optarg, &o->rings) || !ha_rings_ok(o->rings)) {
				fprintf(stderr, "heapattach: --rings wants 1, 2, 4, 8 or 16, not '%s'\n", optarg);
				return -1;
			}
			break;
		case OPT_NICE:
			if (parse_u64(optarg, &o->nice) || o->nice > 39) {
				fprintf(stderr, "heapattach: --nice wants a number from 0 to 39, not '%s'\n", optarg);
				return -1;
			}
			break;
		case OPT_RSS:
			o->rss = 1;
			break;
		case OPT_LIVE:
			o->live = 1;
			break;
		case OPT_TRIM:
			if (optarg && strcmp(optarg, "predict") != 0) {
				fprintf(stderr, "heapattach: --trim takes no value but 'predict' (--trim=predict), "
				        "not '%s'\n", optarg);
				return -1;
			}
			o->trim = optarg ? HA_TRIM_PREDICT : HA_TRIM_DO;
			break;
		case OPT_RSS_PERIOD:
			if (parse_u64(optarg, &o->rss_period) || o->rss_period < 1 ||
			    o->rss_period > (1u << 30)) {
				fprintf(stderr, "heapattach: --rss-period wants a number of page faults from 1 "
				        "to 1G, not '%s'\n", optarg);
				return -1;
			}
			o->rss = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("heapattach %s (protocol %u)\n", HA_VERSION, HA_PROTO_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "heapattach: expected exactly one PID (try --help)\n");
		return -1;
	}
	if (check_push(pc, push_options))
		return -1;
	char *end;
	errno = 0;
	long pid = strtol(argv[optind], &end, 10);
	if (errno || end == argv[optind] || *end || pid <= 0 || pid > INT32_MAX) {
		fprintf(stderr, "heapattach: '%s' is not a process id\n", argv[optind]);
		return -1;
	}
	o->pid = (pid_t)pid;
	return 0;
}

int ha_args_rings(const struct options *o, uint32_t *rings_out)
{
	if (!ha_ring_size_ok(o->ring_bytes)) {
		fprintf(stderr, "heapattach: --ring-size must be a power of two between 64K and 1G\n");
		return -1;
	}
	/* --rings as asked for while each ring keeps 64 KiB; without it, one
	 * per CPU, at least MIN_RINGS, none under MIN_RING_BYTES. */
	uint32_t rings = (uint32_t)o->rings;
	if (!rings) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		for (rings = MIN_RINGS; rings < HA_RINGS_MAX && rings < cpus; rings *= 2)
			;
		while (rings > 1 && o->ring_bytes / rings < MIN_RING_BYTES)
			rings /= 2;
	}
	if (!ha_ring_size_ok(o->ring_bytes / rings)) {
		fprintf(stderr, "heapattach: --ring-size %llu cannot be split into %u rings of at least "
		        "64K\n", (unsigned long long)o->ring_bytes, (unsigned)rings);
		return -1;
	}
	*rings_out = rings;
	return 0;
}
