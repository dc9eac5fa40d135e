/* render_util.c -- what only the writers use: the escapers of the
 * structured formats, counts, times and counter differences as text, and
 * the words for each kind of memory (render.h).  The helpers the model
 * uses too (the map, the buffer, errors, text cleaning, hd_fmt_bytes,
 * hd_kind_matches, hd_kind_what) are src/report/report_util.c. */
#define _GNU_SOURCE
#include "render.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "reach_view.h"
#include "util.h"

/* ------------------------------------------------------------ frames */

const char *hd_frame_label(const struct hd_frame *f, char *buf, size_t len)
{
	char pc[32];
	const char *name = hd_frame_name(f, pc, sizeof pc);
	if (strcmp(f->module, "py") != 0 || !f->file[0]) {
		snprintf(buf, len, "%s", name);
		return buf;
	}
	if (f->line > 0)
		snprintf(buf, len, "%s (%s:%d)", name, ha_base_name(f->file), f->line);
	else
		snprintf(buf, len, "%s (%s)", name, ha_base_name(f->file));
	return buf;
}

/* ------------------------------------------------------------ escapers */

/* Strings reaching the writers went through hd_clean_text: valid UTF-8
 * without control characters. */
void hd_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void hd_json_html_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void hd_xml_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

/* ------------------------------------------------------------ numbers */

int64_t hd_sub_i64(int64_t a, int64_t b)
{
	int64_t d;
	if (__builtin_sub_overflow(a, b, &d))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return d;
}

const char *hd_fmt_count(char *buf, size_t len, double v, int sign)
{
	if (fabs(v) < 0.5)
		v = 0;
	snprintf(buf, len, sign && v != 0 ? "%+.0f" : "%.0f", v);
	return buf;
}

const char *hd_fmt_time(char *buf, size_t len, double t)
{
	struct tm tm;
	/* A time from the file: past time_t (and any calendar) it is a number. */
	time_t tt = fabs(t) < 1e15 ? (time_t)t : 0;
	if (!(fabs(t) < 1e15) || !localtime_r(&tt, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "%.0f", isfinite(t) ? t : 0.0);
	return buf;
}

const char *hd_fmt_time_utc(char *buf, size_t len, double t)
{
	struct tm tm;
	time_t tt = fabs(t) < 1e15 ? (time_t)t : 0;   /* a time from the file, as above */
	if (!(fabs(t) < 1e15) || !gmtime_r(&tt, &tm) ||
	    !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "?");
	return buf;
}

/* ------------------------------------------------------------ the kernel's figures */

const char *hd_fmt_kernel(char *buf, size_t len, const struct hd_kernel *k, double v, int sign,
                          int exact)
{
	if (!k->known) {
		snprintf(buf, len, "unknown (not read: the target was gone)");
		return buf;
	}
	return hd_fmt_bytes(buf, len, v, sign, exact);
}

const char *hd_kernel_note(char *buf, size_t len, const struct hd_kernel *k, int diff)
{
	if (!k->known || !k->last) {
		buf[0] = '\0';
		return buf;
	}
	double age = k->last->time - k->last->rss_time;
	snprintf(buf, len, " (%slast read before the exit, %.1f s earlier)",
	         !diff ? "" : k->last_is_b ? "B: " : "A: ", age > 0 ? age : 0.0);
	return buf;
}

/* ------------------------------------------------------------ kinds */

const char *hd_kind_name(int kind)
{
	switch (kind) {
	case HD_KIND_ALLOC: return "heap+mmap";
	case HA_KIND_HEAP: return "heap";
	case HA_KIND_MMAP: return "mmap";
	case HA_KIND_RSS: return "rss";
	case HA_KIND_SWAP: return "swap";
	default: return "other";
	}
}

int hd_kind_physical(int kind)
{
	return kind == HA_KIND_RSS || kind == HA_KIND_SWAP;
}

const char *hd_kind_title(int kind)
{
	return hd_kind_physical(kind) ? hd_kind_what(kind) : "live heap";
}

const char *hd_kind_objects(int kind)
{
	return hd_kind_physical(kind) ? "pages" : "objects";
}

void hd_text_frame(FILE *f, const struct hd_frame *fr, int indent)
{
	char pc[32];
	fprintf(f, "%*s%s", indent, "", hd_frame_name(fr, pc, sizeof pc));
	if (fr->file[0]) {
		fprintf(f, "  %s", fr->file);
		if (fr->line > 0)
			fprintf(f, ":%d", fr->line);
	}
	if (fr->module[0])
		fprintf(f, "  [%s]", ha_base_name(fr->module));
	if (fr->inlined)
		fputs("  (inlined)", f);
	fputc('\n', f);
}

/* A call path's row of a reachability scan, as fields of a JSON object
 * (heapdiff --reach and --leaks -f json). */
void hd_json_reach_row(FILE *f, const struct hd_reach_row *r)
{
	fprintf(f, "\"unreachable_bytes\": %.0f, \"unreachable_objects\": %.0f, \"reachable_bytes\": "
	        "%.0f, \"reachable_objects\": %.0f, \"unknown_bytes\": %.0f, \"unknown_objects\": %.0f"
	        ", \"held_by\": [", r->unreachable_bytes, r->unreachable_count, r->reachable_bytes,
	        r->reachable_count, r->unknown_bytes, r->unknown_count);
	for (size_t k = 0; k < r->nholders; k++) {
		const struct hd_reach_holder *h = &r->holders[k];
		fputs(k ? ", {\"root\": " : "{\"root\": ", f);
		hd_json_str(f, h->root);
		fputs(", \"name\": ", f);
		hd_json_str(f, h->name);
		fprintf(f, ", \"bytes\": %.0f, \"objects\": %.0f, \"hops\": %" PRId64 "}", h->bytes,
		        h->count, h->hops);
	}
	fputc(']', f);
}
