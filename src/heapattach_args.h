/* heapattach_args.h -- heapattach's command line: the options, their
 * defaults and their parser, and the ring split the options ask for
 * (heapattach_args.c).  Every value is checked here, with one line naming
 * the option and the bad value, before anything else happens. */
#ifndef HA_HEAPATTACH_ARGS_H
#define HA_HEAPATTACH_ARGS_H

#include <stdint.h>
#include <sys/types.h>

#include "push.h"

/* --python MODE: what a CPython target's sessions record. */
enum ha_python_mode {
	HA_PYTHON_FRAMES = 0,   /* Python frames; small objects as pymalloc's
	                         * arenas, no wrap (the default: no cost) */
	HA_PYTHON_ALL = 1,      /* Python frames and each small object */
	HA_PYTHON_OFF = 2,      /* native stacks only (--no-python) */
};

/* --trim: none, predict and ask glibc (--trim), only predict (--trim=predict) */
enum ha_trim_mode { HA_TRIM_NONE = 0, HA_TRIM_DO = 1, HA_TRIM_PREDICT = 2 };

struct options {
	pid_t pid;
	double duration_s;      /* 0 = until a signal or the target's exit */
	double timeout_s;       /* to find a safe thread, and for the handshake */
	int verbose;
	const char *agent;      /* --agent */
	uint64_t ring_bytes;    /* all rings' data together */
	uint64_t rings;         /* --rings; 0: as many as ha_args_rings gives */
	uint64_t interval;
	uint64_t stack_bytes;
	int block;
	int no_stack_refs;      /* --no-stack-refs */
	int no_memory_view;     /* --no-memory-view */
	int no_debuginfod;      /* --no-debuginfod */
	uint64_t max_callpaths; /* --max-callpaths (0: no cap) */
	int python;             /* --python MODE: enum ha_python_mode */
	const char *db;         /* -o/--db */
	double snapshot_every_s;
	int quiet;
	uint64_t nice;          /* --nice: the background threads' nice offset */
	int rss;                /* --rss: page-fault sampling too */
	int live;               /* --live: the full-screen view */
	int trim;               /* --trim: enum ha_trim_mode */
	uint64_t rss_period;    /* --rss-period: faults per sample */
	int reach;              /* --reach: a reachability scan at the end... */
	double reach_every_s;   /* ...and every SECS (--reach=SECS; 0: none) */
	struct ha_push_conf push; /* --push and its options; nurls 0: none */
};

/* The defaults of every option, set before ha_parse_args. */
void ha_args_defaults(struct options *o);

/* Parse argv into *o (whose defaults the caller set).  --help and
 * --version print and exit 0; 0, or -1 after one line on stderr (a usage
 * error). */
int ha_parse_args(int argc, char **argv, struct options *o);

/* How many rings o->ring_bytes is split into: --rings, or one per CPU (at
 * least 4, none under 1 MiB); 0, or -1 after one line on stderr (a usage
 * error: a size that is not a power of two, or rings under 64K). */
int ha_args_rings(const struct options *o, uint32_t *rings);

#endif
