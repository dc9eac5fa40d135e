/* render.h -- heapdiff's output formats, written from the model of
 * src/report (report.h): one report_<format>.c per format (text, folded,
 * JSON, SVG, pprof, HTML), --leaks as text or JSON, --heap-vs-rss as text
 * or JSON (heap_vs_rss_write.c), and the helpers only writers use
 * (render_util.c).  This folder includes report.h, never the reverse: the
 * model knows nothing of how it is written.
 *
 * A writer only reads what the model built: the rows (hd_build_rows), the
 * leak suspects (hd_leak_report), the heap-vs-rss rows (hd_vs_build).  The
 * writers that return int (pprof, HTML: compression, and the page's own
 * reads of the session) fail as report.h says: HD_ERR, the line in the
 * source's struct hd_err, nothing printed. */
#ifndef HA_RENDER_H
#define HA_RENDER_H

#include <stdint.h>
#include <stdio.h>

#include "report.h"

/* ------------------------------------------------------------ helpers */

/* Escapers for the structured formats (render_util.c).  The strings
 * reaching them went through hd_clean_text. */
void hd_json_str(FILE *f, const char *s);
/* JSON for a <script> element of an HTML page: also '<', '>' and '&' as
 * \u003c, \u003e, \u0026, so that no name can close the element. */
void hd_json_html_str(FILE *f, const char *s);
void hd_xml_str(FILE *f, const char *s);

/* a - b, held at INT64_MIN or INT64_MAX where it would overflow: the
 * difference of two counters read from the file (any values). */
int64_t hd_sub_i64(int64_t a, int64_t b);

/* As hd_fmt_bytes (report.h): a count ("+" on growth with sign), a time
 * (local, "%Y-%m-%d %H:%M:%S"; past any calendar, the number). */
const char *hd_fmt_count(char *buf, size_t len, double v, int sign);
const char *hd_fmt_time(char *buf, size_t len, double t);
/* The same in UTC ("%Y-%m-%d %H:%M:%S UTC"; "?" past any calendar): the
 * scan's and the memory breakdown's headers. */
const char *hd_fmt_time_utc(char *buf, size_t len, double t);

/* The kernel's figure v of k (hd_kernel_change) as hd_fmt_bytes writes
 * it, or "unknown (...)" when it is not known. */
const char *hd_fmt_kernel(char *buf, size_t len, const struct hd_kernel *k, double v, int sign,
                          int exact);
/* What a text line adds after the figures of k: "" or, when a side's are
 * the last read before its target exited, " (B: last read before the
 * exit, 0.4 s earlier)" ("B: " or "A: " with diff). */
const char *hd_kernel_note(char *buf, size_t len, const struct hd_kernel *k, int diff);

/* A kind's name ("heap", "mmap", "rss", "swap"; HD_KIND_ALLOC
 * "heap+mmap"). */
const char *hd_kind_name(int kind);
/* Is kind one of where memory is (rss, swap), not of what was allocated? */
int hd_kind_physical(int kind);
/* The memory of --kind in a title or a total line: "live heap" for heap,
 * mmap and both, "resident memory", "swapped memory" (hd_kind_what, in a
 * sentence, is report.h's). */
const char *hd_kind_title(int kind);
/* What a bucket's counts count: "objects" (allocations) or "pages" (4 KiB,
 * rss and swap). */
const char *hd_kind_objects(int kind);

/* A frame's name in a flame graph (svg, folded): its function
 * (hd_frame_name), and for a Python frame (module "py") its file's base
 * name and line too, "make_blob (cache.py:13)", as Python's profilers
 * show them: Python's names repeat from file to file (<module>,
 * <genexpr>, __init__ before 3.11), and a graph merges frames by name.
 * In buf (HD_LABEL_MAX bytes), or the function's name itself. */
#define HD_LABEL_MAX (2 * HD_MAX_TEXT + 48)
const char *hd_frame_label(const struct hd_frame *f, char *buf, size_t len);

/* ------------------------------------------------------------ writers */

void hd_write_text(FILE *f, const struct hd_report *r);
/* The lines above the text table: the notes, the snapshots (A and B, or
 * "AT at" B), the sample counters (with faults, the page-fault samples'),
 * then a blank line (shared with --heap-vs-rss). */
void hd_text_header(FILE *f, const struct hd_report *r, const char *at, int faults);
void hd_write_folded(FILE *f, const struct hd_report *r);
void hd_write_json(FILE *f, const struct hd_report *r);
/* A snapshot as a JSON object, or null (shared with --heap-vs-rss). */
void hd_json_snap(FILE *f, const struct hd_snap *s);
/* "rss_bytes": X, "rss_anon_bytes": Y, "swap_bytes": Z of k (null each
 * when unknown): the members of a "total" (shared with --heap-vs-rss). */
void hd_json_kernel(FILE *f, const struct hd_kernel *k);
/* The frames of st as a JSON array. */
void hd_json_frames(FILE *f, const struct hd_stack *st);
/* One frame on a line of its own, indented: "name  file:line  [module]
 * (inlined)" (every text view's call paths: diff, --leaks, --reach,
 * --memory --by-stack). */
void hd_text_frame(FILE *f, const struct hd_frame *fr, int indent);
/* --leaks (struct hd_leak_report, report.h: leaks.c gathers it). */
void hd_write_leaks_text(FILE *f, const struct hd_leak_report *lr);
void hd_write_leaks_json(FILE *f, const struct hd_leak_report *lr);
void hd_write_svg(FILE *f, const struct hd_report *r);
int hd_write_pprof(FILE *f, const struct hd_report *r);
/* The same gzipped profile appended to out (heapattach --push). */
int hd_pprof_encode(const struct hd_report *r, struct hd_buf *out);
/* One self-contained HTML page (report_html.c): r is A -> B (or the live
 * heap at B); the page adds the session's chart, the live heap at the peak
 * and at B, and the leak suspects. */
int hd_write_html(FILE *f, const struct hd_report *r, const struct hd_filter *flt);

/* ------------------------------------------------------------ functions */

/* The first n function rows (struct hd_funcs, report_funcs.c) as a JSON
 * array of objects (function, file, module, flat_bytes, flat_objects,
 * cum_bytes, cum_objects, flat_paths, cum_paths), names through str
 * (hd_json_str, or hd_json_html_str) (report_json.c). */
void hd_funcs_json_rows(FILE *f, const struct hd_funcs *fs, size_t n,
                        void (*str)(FILE *, const char *));
/* The function part of a text line: "name  file  [module]"
 * (report_text.c). */
void hd_func_text_name(FILE *f, const struct hd_frame *fr);
/* Functions shown by default under the text report's header. */
#define HD_TOP_FUNCS 6

/* ------------------------------------------------------------ heap vs rss */

/* --heap-vs-rss's rows (struct hd_vs, hd_vs_build) as text or JSON
 * (heap_vs_rss_write.c). */
struct hd_reach;
struct hd_reach_row;
/* heapdiff --reach (reach_write.c); top 0: every row.  A row without its
 * frames and holders (past m->detailed) gets them as it is written and
 * loses them after.  HD_OK, or HD_ERR (the file could not be read). */
int hd_write_reach_text(FILE *f, const struct hd_snap *b, struct hd_reach *m, int top, int exact);
int hd_write_reach_json(FILE *f, const struct hd_snap *b, struct hd_reach *m, int top);
/* A row's reach fields, "unreachable_bytes": ... "held_by": [...] (--leaks too). */
void hd_json_reach_row(FILE *f, const struct hd_reach_row *r);
void hd_write_vs_text(FILE *f, const struct hd_report *r, const struct hd_vs *vs);
void hd_write_vs_json(FILE *f, const struct hd_report *r, const struct hd_vs *vs);
/* heapdiff --memory (memory_write.c): the breakdown of m, read at b. */
struct hd_memory;
/* With --by-stack (m->by_stack) also the top call paths pinning the holes
 * (0: all). */
void hd_write_memory_text(FILE *f, const struct hd_snap *b, const struct hd_memory *m, int top,
                          int exact);
void hd_write_memory_json(FILE *f, const struct hd_snap *b, const struct hd_memory *m, int top);
/* The first n rows as a JSON array of objects, names through str
 * (hd_json_str, or hd_json_html_str for a page). */
void hd_vs_json_rows(FILE *f, const struct hd_vs *vs, size_t n, void (*str)(FILE *, const char *));

#endif
