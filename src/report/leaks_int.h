/* leaks_int.h -- what report_series.c gives leaks.c and leak_funcs.c (the
 * function trends of --leaks): a session's snapshots, the scan of its
 * series, the tests that make a series a suspect; and what leak_funcs.c
 * gives leaks.c.  Private to src/report. */
#ifndef HD_LEAKS_INT_H
#define HD_LEAKS_INT_H

#include "report.h"

struct session_snaps {
	size_t n;
	int64_t *id;
	double *t;                 /* seconds since the first snapshot */
	double duration;
};

/* The snapshots of session in id order (the peak snapshot only with
 * HD_SNAPS_PEAK, those with totals only -- schema version 14 -- only with
 * HD_SNAPS_TOTALS); HD_ERR when it has none. */
#define HD_SNAPS_PEAK 1
#define HD_SNAPS_TOTALS 2
int hd_session_snaps(struct hd_source *s, int64_t session, struct session_snaps *ss, int flags);
void hd_session_snaps_free(struct session_snaps *ss);

/* Calls fn on every (callstack, kind) series of the session whose kind
 * passes the --kind filter kind_filter (or of any kind: ANY_KIND): y[i]
 * and c[i] are the live bytes and objects at snapshot i (carried forward
 * from the latest row, 0 before the first). */
#define ANY_KIND (-2)
/* fn returns HD_OK, or HD_ERR to end the scan (its error kept). */
typedef int (*series_fn)(void *ctx, int64_t stack_id, int kind, const double *y, const double *c,
                          const struct session_snaps *ss);
int hd_scan_series(struct hd_source *s, int64_t session, const struct session_snaps *ss,
                   int kind_filter, series_fn fn, void *ctx);

/* Measures the series y (live objects c, or NULL: 0) into *tr (slope,
 * fit, steady, retained, first, last, max, last_objects); 1 if it is a
 * suspect: the tests of leaks.c's top comment (report_series.c), with --min-bytes
 * min_bytes. */
int hd_leak_fit(const double *y, const double *c, const struct session_snaps *ss, double min_bytes,
                struct hd_leak *tr);

/* The function suspects of the session (leak_funcs.c's top comment),
 * appended to *v (n of them, cap allocated; grown with hd_xrealloc), each
 * with its series when keep; the functions measured and their names go to
 * out (fn, funcs, unfitted, approx).  stacks: the call-path suspects
 * (nstacks of them, already filtered) that explain the paths they are. */
int hd_leak_funcs(struct hd_source *s, int64_t session, const struct session_snaps *ss,
                  const struct hd_filter *flt, int keep, const struct hd_leak *stacks,
                  size_t nstacks, struct hd_leak **v, size_t *n, size_t *cap,
                  struct hd_leak_set *out);

#endif
