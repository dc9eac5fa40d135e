/* report.h -- heapdiff's in-memory model of a report.
 *
 * heapdiff.c parses the command line and resolves snapshots; report_load.c
 * reads values and callstacks from one or two databases (every value
 * bounds-checked: the file may be corrupt); report_rows.c folds allocator
 * frames, applies the filters and merges the two sides into rows;
 * report_funcs.c adds rows up by function; report_series.c scans a
 * session's series (the peak, the fit of a trend), with which leaks.c (and
 * leak_funcs.c, for functions) finds leak suspects over all snapshots of a
 * session; heap_vs_rss.c pairs the heap with resident memory by function.
 * The writers of every format are src/render (render.h), which includes
 * this header; nothing here includes theirs.  Nothing here writes a
 * database. */
#ifndef HA_REPORT_H
#define HA_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "db.h"     /* enum ha_mem_kind */
#include "util.h"   /* ha_base_name */

struct sqlite3;
struct sqlite3_stmt;
struct ha_db;

/* Caps that keep a corrupt or hostile file from making us allocate without
 * bound; a real profile is far below them. */
#define HD_MAX_FRAMES 1024        /* frames of one callstack kept */
#define HD_MAX_TEXT 4096          /* bytes of one text value kept */

enum hd_format { HD_TEXT, HD_FOLDED, HD_JSON, HD_SVG, HD_PPROF, HD_HTML };

/* ------------------------------------------------------------ sources */

/* One open database.  Stacks are loaded once per source and cached. */
struct hd_source {
	const char *path;
	struct hd_err *err;        /* where its errors go (hd_source_open) */
	struct ha_db *db;
	struct sqlite3 *h;
	struct hd_stacks *stacks;  /* the callstacks read (stack_cache.c) */
	struct ha_strpool *names;  /* the frames' strings, each once (a day's
	                            * profile repeats the same few hundred
	                            * thousand times) */
	int index;                 /* 0 or 1: which operand opened it */
	int has_rss;               /* the --rss columns of schema version 5 */
	int has_host;              /* sessions.hostname, schema version 6 */
	int has_rss_time;          /* snapshots.rss_read_time, schema version 9 */
	struct sqlite3_stmt *stack_q; /* hd_stack_get's query, prepared once
	                            * (a day's profile reads 100,000 stacks) */
	int has_base;              /* snapshots.base_id: buckets by snapshot with
	                            * keyframes, schema version 12 */
	int has_paths;             /* snapshots.paths: some snapshots hold totals
	                            * only (schema version 14) */
	struct hd_late *late;      /* names for frames the session left unnamed
	                            * (late_names.h); NULL: none sought */
};

/* How the kernel's figures of a snapshot (its RSS, RssAnon and VmSwap)
 * are known (snapshots.rss_read_time, schema version 9). */
enum hd_rss_state {
	HD_RSS_READ,               /* read at the snapshot */
	HD_RSS_LAST,               /* the target was gone: the last read before
	                            * its exit, at rss_time */
	HD_RSS_UNKNOWN             /* none read (RSS 0: the 'exit' snapshot of
	                            * a file before version 9): no figure to
	                            * subtract, never a drop to 0 */
};
/* The state of figures whose RSS is rss, read_null the type of
 * rss_read_time (1: NULL or no such column), read_time its value. */
enum hd_rss_state hd_rss_state_of(int64_t rss, int read_null, double read_time);

struct hd_snap {
	struct hd_source *src;
	int64_t id, session_id;
	double time;
	int64_t rss, samples, drops, unwind_failures;
	int rss_state;             /* enum hd_rss_state of rss, rss_anon, swap */
	double rss_time;           /* when they were read (HD_RSS_LAST) */
	int64_t interval;          /* the session's sampling interval, bytes */
	int64_t rss_anon, swap;    /* the kernel's RssAnon and VmSwap (0: unknown) */
	int64_t rss_samples, rss_lost; /* page-fault samples, cumulative */
	int64_t rss_period;        /* the session's --rss period (0: no --rss) */
	char reason[32];
	int64_t pid;
	char comm[64];
	char host[256];            /* the session's host ('' if unknown) */
};

struct hd_frame {
	int64_t id;                /* frames.id in its database */
	const char *function, *file, *module, *build_id; /* the source's names */
	uint64_t rel_pc;
	int line, inlined;
};

struct hd_stack {
	int64_t id;                /* stacks.id in its database */
	int n;
	const struct hd_frame *const *f; /* leaf first; a frame is kept once by
	                            * its source and shared by every stack
	                            * through it (stack_cache.c) */
};

/* The value of one bucket at one snapshot (cumulative, estimated). */
struct hd_value {
	int64_t stack_id;
	int kind;
	double alloc_count, alloc_bytes, live_count, live_bytes;
};

/* One row of a report: a (folded) callstack and kind with its change from A
 * to B (or its value at B when there is no A). */
struct hd_row {
	struct hd_stack st;           /* the displayed frames (folded): a view
	                               * into a cached stack, not owned */
	int64_t stack_id;             /* smallest id merged into the row */
	int merged;                   /* number of stored callstacks merged */
	int folded;                   /* allocator frames folded away */
	int kind;
	double bytes, objects;        /* live bytes / objects */
	double alloc_bytes, alloc_objects;
};

/* --by: a row is a call path (the default), or a function ranked by
 * what it allocated itself (flat) or by what it and everything it called
 * allocated (cumulative). */
enum { HD_BY_STACK, HD_BY_FUNCTION, HD_BY_CUM };

/* --kind: one enum ha_mem_kind (db.h), or HD_KIND_ALLOC, heap and mmap
 * together: what the program allocated.  rss and swap say where memory is;
 * they count the same memory as heap and mmap again and are never added to
 * them, so the default (HD_KIND_ALLOC) never includes them. */
#define HD_KIND_ALLOC (-1)

/* Filters and folding (report_rows.c). */
struct hd_filter {
	const char *module;        /* substring of a module path, or NULL */
	const char *function;      /* substring of a function name, or NULL */
	int kind;                  /* an enum ha_mem_kind, or HD_KIND_ALLOC */
	double min_bytes;          /* rows with |bytes| below are left out */
	int all_frames;            /* keep allocator and C++ runtime frames */
};

struct hd_report {
	const struct hd_snap *a;   /* NULL: the live heap at b */
	const struct hd_snap *b;
	const struct hd_snap *alloc_from; /* with a NULL: the alloc_* values over
	                            * alloc_from -> b (the period of b), not
	                            * since the session began (pprof of one
	                            * snapshot); rows that only allocated and
	                            * freed in it are kept */
	struct hd_row *rows;       /* changed (or live) rows, sorted */
	size_t n;
	size_t nall;               /* rows matching the filters, changed or not */
	double total_bytes;        /* over every row matching the filters */
	double total_objects;
	int by_objects, exact_bytes;
	int by;                    /* --by stack (HD_BY_STACK, the default),
	                            * function or cumulative: what a row is */
	struct hd_funcs *funcs;    /* NULL, or the functions hd_build_rows adds
	                            * every row matching the filters to
	                            * (report_funcs.c) */
	int kind;                  /* the --kind of the rows (hd_build_rows) */
	long top;                  /* 0 = all */
	int cross_db;              /* a and b are in different files */
	const char *peak_note;     /* a line printed first, or NULL */
	const char *names_missing; /* modules whose frames have no names, a
	                            * "PATH (build-id ID)" a line (late_names.h);
	                            * NULL: none */
	const char *fallen_note;   /* the session peaked far above b: a line
	                            * printed after the header, or NULL */
};

/* ------------------------------------------------------------ util */

/* A string-keyed hash map (open addressing); keys are copied. */
struct hd_map;
struct ha_strpool;
struct hd_map *hd_map_new(void);
void *hd_map_get(struct hd_map *m, const char *key);
void hd_map_put(struct hd_map *m, const char *key, void *val);
/* An index by key: the one kept in m for key, or for a new key next, kept
 * for it from now on (*fresh set).  Values of m are index + 1. */
size_t hd_map_index(struct hd_map *m, const char *key, size_t next, int *fresh);
/* Calls fn on every value, then frees the map (fn may be NULL). */
void hd_map_free(struct hd_map *m, void (*fn)(void *));

/* A growable byte buffer. */
struct hd_buf {
	unsigned char *p;
	size_t n, cap;
};
void hd_buf_add(struct hd_buf *b, const void *p, size_t n);
void hd_buf_addc(struct hd_buf *b, int c);
void hd_buf_printf(struct hd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hd_buf_free(struct hd_buf *b);

void *hd_xmalloc(size_t n);
void *hd_xcalloc(size_t n, size_t size);
void *hd_xrealloc(void *p, size_t n);
char *hd_xstrdup(const char *s);
/* The handler itself, for an allocation made elsewhere (hashtab.h). */
void hd_out_of_memory(void) __attribute__((noreturn));

/* ------------------------------------------------------------ errors */

/* Errors are returned, as SQLite returns them: every function of this
 * library that can fail (a database that cannot be read, a corrupt value,
 * a failed compression) returns HD_ERR, and the one line that says why
 * (cleaned as hd_clean_text cleans a name: it may quote the file) is kept
 * in the struct hd_err its source was opened with (hd_source_open); what
 * it built on the way is freed.  The first error is kept, later ones are
 * dropped.  Nothing here prints the line or exits: heapdiff's main does
 * ("heapdiff: LINE", exit 1), heapattach's push gives up one profile.
 *
 * Out of memory is the one exception (Redis's zmalloc split): hd_xmalloc
 * and the others that allocate never return NULL; one handler
 * (report_util.c) writes "PROGRAM: out of memory" and exits 1. */
#define HD_OK 0
#define HD_ERR (-1)
struct hd_err {
	int set;                   /* an error is kept */
	char msg[8192];
};
/* Keeps the error (unless one is kept already); returns HD_ERR. */
int hd_fail(struct hd_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s's SQLite error, "PATH: corrupt database: ..." for a corrupt file. */
int hd_sql_fail(struct hd_source *s);
/* Prepares sql on s into *q; HD_OK or HD_ERR. */
int hd_prepare(struct hd_source *s, const char *sql, struct sqlite3_stmt **q);
/* Steps q: 1 = a row, 0 = done, HD_ERR (also when a column read since the
 * last step was bad: hd_col_real). */
int hd_step(struct hd_source *s, struct sqlite3_stmt *q);
/* One integer from sql with np (0 to 2) parameters p1, p2 into *v: *got
 * 0 when there is no row or it is NULL. */
int hd_query_i64(struct hd_source *s, const char *sql, int64_t *v, int *got, int np, int64_t p1,
                 int64_t p2);
/* Column i of q as a REAL that must be a finite number (NULL: 0).  A
 * corrupt file may hold text, blobs or NaN there: the error is kept and 0
 * returned; the next hd_step returns HD_ERR (a caller that steps no more
 * checks s->err->set).  A value beyond +-HD_MAX_VALUE is taken as that: no
 * memory (bytes, objects, pages) or clock reaches it, and sums of such
 * values stay finite. */
double hd_col_real(struct hd_source *s, struct sqlite3_stmt *q, int i);
#define HD_MAX_VALUE 18446744073709551616.0 /* 2^64 */

/* Text of a DB value made safe to print: valid UTF-8 (bad bytes become '?'),
 * no control characters, at most HD_MAX_TEXT bytes.  malloc'ed. */
char *hd_clean_text(const unsigned char *s);

/* "1.23 MiB" (or the exact number with exact); sign: "+" on growth. */
const char *hd_fmt_bytes(char *buf, size_t len, double v, int sign, int exact);
/* The name a frame shows: its function, or 0xPC when unknown. */
const char *hd_frame_name(const struct hd_frame *f, char *buf, size_t len);
/* Does a bucket of kind pass the --kind filter? */
int hd_kind_matches(int filter, int kind);
/* The memory of --kind in a sentence: "the estimated %s" ("live memory",
 * "live heap", "live mmap memory", "resident memory", "swapped memory"). */
const char *hd_kind_what(int kind);

/* ------------------------------------------------------------ loading */

/* Open read-only (the checks of db.c); its errors go to err.  s can be
 * closed after a failed open. */
int hd_source_open(struct hd_source *s, const char *path, int index, struct hd_err *err);
void hd_source_close(struct hd_source *s);
/* Is spec ("first", "last", "peak" or an id) a snapshot of s?  session 0 = the
 * latest session with snapshots.  HD_ERR with the reason if not. */
int hd_resolve(struct hd_source *s, const char *spec, int64_t session, struct hd_snap *out);
/* The total of the live bytes at snap of the buckets that pass the --kind
 * filter kind, in *total. */
int hd_live_total(const struct hd_snap *snap, int kind, double *total);
/* Has table of s the column (*has)?  (Older schema versions lack some.) */
int hd_has_column(struct hd_source *s, const char *table, const char *column, int *has);
/* *period: the --rss period of session when it has resident-memory data
 * (kind rss rows, sessions.rss_period > 0); else 0, with why it has none
 * in why (a buffer of len bytes; len 0: not said). */
int hd_session_rss(struct hd_source *s, int64_t session, int64_t *period, char *why, size_t len);
/* The snapshot before b in its session, by time (a peak snapshot is
 * never one; b's own period starts there): 1 and *out, 0 if b is the
 * first, or HD_ERR. */
int hd_prev_snapshot(const struct hd_snap *b, struct hd_snap *out);
/* The ids of the snapshots of s from id lo to hi, the baselines at attach
 * (reason 'attach') left out; *n of them, malloc'ed, in *ids. */
int hd_snapshot_ids(struct hd_source *s, int64_t lo, int64_t hi, int64_t **ids, size_t *n);
/* *out: the latest session of s with snapshots, or session checked. */
int hd_session(struct hd_source *s, int64_t session, int64_t *out);
/* Every bucket of snap's session at snap; *n rows, malloc'ed, in *v. */
int hd_values_at(const struct hd_snap *snap, struct hd_value **v, size_t *n);
/* A callstack of s (cached), in *st; a stack without frames has n = 0
 * (stack_cache.c). */
int hd_stack_get(struct hd_source *s, int64_t id, const struct hd_stack **st);
struct hd_stacks;
void hd_stacks_free(struct hd_stacks *c);

/* ------------------------------------------------------------ rows */

/* The rows of A -> B (a NULL: the live heap at b), folded, filtered and
 * merged; fills r->rows, n, nall, totals, sorted by r->by_objects. */
int hd_build_rows(struct hd_report *r, const struct hd_filter *flt);
/* The rows (and the functions of r->funcs). */
void hd_free_rows(struct hd_report *r);
/* The frames of st as displayed (a view into st): the allocator and C++
 * runtime frames at the leaf end folded away unless all; *folded gets
 * their number. */
struct hd_stack hd_fold(const struct hd_stack *st, int all, int *folded);
/* Does st pass the module/function filters? */
int hd_stack_matches(const struct hd_stack *st, const struct hd_filter *flt);
/* Could any callstack of s pass them: does a frame of s match --function
 * (by its function, or a Python frame by its file) and a module match
 * --module?  1 yes (or no such filter), 0 no: then *which names the
 * filter that matches nothing ("--function" or "--module") and
 * *functions the distinct functions s holds, for the user's one line;
 * HD_ERR on a database error. */
int hd_filter_can_match(struct hd_source *s, const struct hd_filter *flt, const char **which,
                        int64_t *functions);

/* ------------------------------------------------------------ functions */

/* report_funcs.c: functions across call paths.  A function is its name
 * (or 0xPC when unknown) and module file name, as report_rows.c keys a
 * frame across two files.  hd_fn_of gives each function an index, in the
 * order first seen (*fresh 1 then: the caller grows its arrays to cap);
 * hd_fn_path starts a call path, on which hd_fn_once is 1 for a function
 * the first time only (recursion counts once). */
struct hd_fn_index {
	struct hd_map *map;        /* name \x1f module file name -> index + 1 */
	struct hd_buf key;
	const struct hd_frame **fr; /* [n]: the first frame seen of each (a view
	                            * into a cached stack: valid while its
	                            * source is open) */
	uint64_t *seen;            /* [n]: the path it was last counted on */
	uint64_t stamp;
	size_t n, cap;
};
size_t hd_fn_of(struct hd_fn_index *x, const struct hd_frame *fr, int *fresh);
void hd_fn_path(struct hd_fn_index *x);
int hd_fn_once(struct hd_fn_index *x, size_t i);
void hd_fn_free(struct hd_fn_index *x);

/* One function's row: what it allocated itself (flat: it is the leaf once
 * the allocator's frames are folded) and what it and its callees
 * allocated (cumulative: every row through it, once), A -> B or at B. */
struct hd_func_row {
	const struct hd_frame *fr; /* its name, file and module (hd_fn_index) */
	double flat_bytes, flat_objects;
	double cum_bytes, cum_objects;
	int flat_paths, cum_paths; /* rows (call paths) that changed (or hold
	                            * anything, at B) with it as leaf / on them */
};
struct hd_funcs {
	struct hd_fn_index idx;
	struct hd_func_row *v;     /* after hd_funcs_finish: rows whose flat or
	                            * cumulative value is at least --min-bytes
	                            * (and 0.5), ranked by flat (HD_BY_CUM:
	                            * cumulative) bytes, or objects */
	size_t n;
	size_t nall;               /* functions on the rows */
};
/* Adds a row (its displayed frames, kind, values) to the functions. */
void hd_funcs_add(struct hd_funcs *fs, const struct hd_row *row);
/* Keeps and ranks the rows (by: HD_BY_FUNCTION or HD_BY_CUM). */
void hd_funcs_finish(struct hd_funcs *fs, double min_bytes, int by, int by_objects);
void hd_funcs_free(struct hd_funcs *fs);

/* ------------------------------------------------------------ heap vs rss */

/* --heap-vs-rss (heap_vs_rss.c): per function, inclusive (every folded
 * call path through it, each once), the live bytes of heap and mmap, of
 * rss and of swap side by side (never added up): A -> B, or at B. */
enum { HD_VS_ALLOC, HD_VS_RSS, HD_VS_SWAP, HD_VS_N };
struct hd_vs_row {
	char *function, *file, *module;
	double bytes[HD_VS_N];
	int paths[HD_VS_N];        /* call paths through it at B (of any value) */
};
struct hd_vs {
	struct hd_vs_row *v;       /* rows that changed (held, at B) at least
	                            * --min-bytes in a column, ranked */
	size_t n;
	size_t nall;               /* functions on the call paths that match */
	double total[HD_VS_N];     /* over the call paths that match, each once */
};
/* The rows of r->a -> r->b (r->a NULL: at r->b) under flt's module,
 * function, min-bytes and folding; flt->kind does not apply. */
int hd_vs_build(const struct hd_report *r, const struct hd_filter *flt, struct hd_vs *vs);
void hd_vs_free(struct hd_vs *vs);

/* ------------------------------------------------------------ leaks */

struct hd_leak_opts {
	enum hd_format format;
	int exact_bytes;
	long top;
	const struct hd_filter *flt;
};

/* One leak suspect: the trend of a (callstack, kind) series, or of a
 * function's (leak_funcs.c). */
enum { HD_LEAK_STACK, HD_LEAK_FLAT, HD_LEAK_CUM };
struct hd_leak {
	int what;                  /* HD_LEAK_STACK, _FLAT (what the function
	                            * allocated), _CUM (in it or its callees,
	                            * what no narrower suspect explains) */
	int64_t stack_id;          /* stack: its callstack */
	int kind;                  /* stack: its kind */
	size_t func;               /* flat, cum: the function (hd_leak_set.fn) */
	int paths;                 /* flat, cum: the call paths it adds up */
	size_t *via, nvia;         /* flat, cum: the functions whose cumulative
	                            * trend it explains (fn indexes, by growth) */
	double slope;              /* bytes per second */
	double fit, steady, retained;
	double first, last, max, last_objects;
	double *series;            /* live bytes at each snapshot of the set,
	                            * or NULL (past keep_series) */
};
/* The suspects of a session, call paths and functions together, ranked
 * by slope; call paths whose (folded) stack fails the filters left out,
 * and their memory from the functions' sums. */
struct hd_leak_set {
	struct hd_leak *v;
	size_t n;
	size_t series, grew;       /* all series; non-suspects with last > first */
	size_t nsnaps;             /* snapshots measured (reason 'peak' left out) */
	int64_t *snap_id;          /* [nsnaps], ascending */
	double *t;                 /* [nsnaps], seconds since the first */
	double duration;
	struct hd_fn_index fn;     /* the functions measured (their names) */
	size_t funcs;              /* functions on the call paths measured */
	size_t unfitted;           /* of them, past the memory cap: not fitted */
	int approx;                /* cumulative suspects not narrowed (too many
	                            * call paths to keep): each listed whole */
};
/* Finds the suspects (none measured when nsnaps < 3); the first
 * keep_series of them keep their series. */
int hd_leak_find(struct hd_source *s, int64_t session, const struct hd_filter *flt,
                 size_t keep_series, struct hd_leak_set *out);
void hd_leak_free(struct hd_leak_set *ls);

struct hd_reach_row;

/* --leaks: what its report shows, gathered by hd_leak_report (leaks.c),
 * written by hd_write_leaks_text or _json (src/render/render.h). */
struct hd_leak_report {
	const struct hd_leak_opts *o;
	const char *path;          /* the database */
	int64_t session;
	int64_t pid;               /* the session's pid, comm (NULL: unknown) */
	char *comm;                /* and start: read for the text's header */
	double start;
	struct hd_leak_set ls;
	size_t listed;             /* the suspects listed: the first --top */
	struct hd_stack *view;     /* [listed]: a call-path suspect's displayed
	                            * frames (a view into its cached stack) */
	int *folded;               /* [listed]: its allocator frames folded */
	int64_t reach_scan;        /* the session's latest reachability scan (0: none) */
	struct hd_reach_row *reach; /* [listed]: a call-path suspect's row of that
	                             * scan (reach.h; stack_id 0: none), or NULL */
};
/* The suspects of session, at least 3 snapshots measured. */
int hd_leak_report(struct hd_source *s, int64_t session, const struct hd_leak_opts *o,
                   struct hd_leak_report *out);
void hd_leak_report_free(struct hd_leak_report *lr);

/* report_series.c: the snapshot of session with the highest estimated
 * live memory of the --kind filter kind (with HD_KIND_ALLOC the snapshot of reason 'peak'
 * when there is one: the attacher keeps the peak of heap and mmap); *live
 * gets that estimate, *nsnaps the snapshots measured. */
int hd_peak(struct hd_source *s, int64_t session, int kind, int64_t *id, double *live,
            int64_t *nsnaps);

/* The kernel's figures from a to b (a NULL: at b), as every view shows
 * them: known only when both sides are (never a change to or from an
 * unknown 0); last is the side whose figures are the last read before its
 * target exited (b's first), or NULL (report_load.c). */
struct hd_kernel {
	int known;
	double rss, rss_anon, swap;
	const struct hd_snap *last;
	int last_is_b;
};
void hd_kernel_change(const struct hd_snap *a, const struct hd_snap *b, struct hd_kernel *k);

/* When b is the last snapshot of its session and holds less than half of
 * the session's peak, the one note line that says so, in buf (the text
 * report's header), in *note; else NULL. */
int hd_fallen_note(const struct hd_snap *b, int kind, int exact, char *buf, size_t len,
                   const char **note);

/* Every snapshot of a session (reason 'peak' included), in id order, with
 * the estimated live bytes by kind (for the chart of the HTML page,
 * src/render/report_html.c). */
struct hd_snap_total {
	int64_t id;
	double time;
	char reason[32];
	int64_t rss, samples, drops;
	int64_t interval;          /* snapshots.sample_interval, 0 if unknown */
	int64_t rss_anon, swap;    /* the kernel's RssAnon and VmSwap, 0 if unknown */
	int rss_state;             /* enum hd_rss_state of rss, rss_anon, swap */
	double rss_time;           /* when they were read (HD_RSS_LAST) */
	double heap, mmap;         /* kinds heap and mmap */
	double objects;            /* of heap and mmap */
	double resident, swapped;  /* kinds rss and swap (never part of the above) */
	int paths;                 /* 0: totals only, no call paths (schema
	                            * version 14): the values are its columns */
};
int hd_snap_totals(struct hd_source *s, int64_t session, struct hd_snap_total **v, size_t *n);

#endif
