/*
 * heapdiff_args.h -- heapdiff's options and snapshot operands, parsed by
 * heapdiff_args.c before any file is opened: a usage error is one line
 * and exit 2.
 */
#ifndef HEAPDIFF_ARGS_H
#define HEAPDIFF_ARGS_H

#include <stdint.h>
#include <stdio.h>

#include "push.h"
#include "render.h"

enum { EXIT_OK = 0, EXIT_ERROR = 1, EXIT_USAGE = 2 };

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

/* argv into o, or a usage error (exit 2). */
void hd_parse_args(int argc, char **argv, struct options *o);

/* A usage error found after parsing (an output that cannot take a
 * format, a --push of two databases): its line and exit 2. */
void __attribute__((noreturn, format(printf, 1, 2))) hd_usage_error(const char *fmt, ...);

#endif
