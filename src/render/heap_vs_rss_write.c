/* heap_vs_rss_write.c -- heapdiff --heap-vs-rss as text or JSON: the rows
 * hd_vs_build (src/report/heap_vs_rss.c, which says what a row sums) made,
 * ranked, then the totals beside the kernel's own counters (RssAnon,
 * VmSwap, VmRSS).  hd_vs_json_rows also writes the page's table
 * (report_html.c).  The JSON:
 *
 *   { "heapdiff": 1, "mode": "heap-vs-rss", "diff": true | false,
 *     "from": SNAPSHOT | null, "to": SNAPSHOT,  (as report_json.c)
 *     "total": { "heap_mmap_bytes", "resident_bytes", "swapped_bytes",
 *                "rss_bytes", "rss_anon_bytes", "swap_bytes" (null when
 *                unknown, as report_json.c), "functions", "shown" },
 *     "functions": [ { "function", "file", "module", "heap_mmap_bytes",
 *                      "resident_bytes", "swapped_bytes",
 *                      "paths": [heap+mmap, resident, swapped] } ] } */
#define _GNU_SOURCE
#include "render.h"

#include <stdio.h>

static const char *const col_title[HD_VS_N] = { "heap+mmap", "resident", "swapped" };
static const char *const col_json[HD_VS_N] = { "heap_mmap_bytes", "resident_bytes", "swapped_bytes" };

static size_t shown_of(const struct hd_report *r, const struct hd_vs *vs)
{
	return r->top > 0 && (size_t)r->top < vs->n ? (size_t)r->top : vs->n;
}


void hd_write_vs_text(FILE *f, const struct hd_report *r, const struct hd_vs *vs)
{
	size_t shown = shown_of(r, vs);
	int sign = r->a != NULL;
	char b[HD_VS_N][64], kb[3][64], note[96];
	struct hd_kernel k;

	fprintf(f, "heap and mmap against resident and swapped memory by function (inclusive: every call "
	        "path through it, once)\n");
	hd_text_header(f, r, "functions", 1);
	if (vs->n == 0) {
		fprintf(f, r->a ? "no function changed\n" : "no live memory\n");
	} else {
		fprintf(f, "%14s %12s %12s  %s\n", "HEAP+MMAP", "RESIDENT", "SWAPPED", "FUNCTION");
		for (size_t i = 0; i < shown; i++) {
			const struct hd_vs_row *row = &vs->v[i];
			for (int c = 0; c < HD_VS_N; c++)
				hd_fmt_bytes(b[c], sizeof b[c], row->bytes[c], sign, r->exact_bytes);
			fprintf(f, "%14s %12s %12s  %s", b[0], b[1], b[2], row->function);
			if (row->file[0])
				fprintf(f, "  %s", row->file);
			if (row->module[0])
				fprintf(f, "  [%s]", ha_base_name(row->module));
			fputc('\n', f);
		}
		if (shown < vs->n)
			fprintf(f, "%14s %12s %12s  ... %zu more function%s (--top 0 shows all)\n", "", "", "",
			        vs->n - shown, vs->n - shown == 1 ? "" : "s");
	}
	fputs("\ntotal:", f);
	for (int c = 0; c < HD_VS_N; c++)
		fprintf(f, "%s %s %s", c ? "," : "", col_title[c],
		        hd_fmt_bytes(b[c], sizeof b[c], vs->total[c], sign, r->exact_bytes));
	/* The kernel's view from A to B (or at B); a gone target's is the
	 * last read, or unknown (hd_kernel_change). */
	hd_kernel_change(r->a, r->b, &k);
	hd_fmt_kernel(kb[0], sizeof kb[0], &k, k.rss_anon, sign, r->exact_bytes);
	hd_fmt_kernel(kb[1], sizeof kb[1], &k, k.swap, sign, r->exact_bytes);
	hd_fmt_kernel(kb[2], sizeof kb[2], &k, k.rss, sign, r->exact_bytes);
	fprintf(f, " (estimated; %zu functions%s, %zu shown); RssAnon %s; VmSwap %s; RSS %s%s", vs->n,
	        r->a ? " changed" : "", shown, kb[0], kb[1], kb[2],
	        hd_kernel_note(note, sizeof note, &k, sign));
	if (r->a)
		fprintf(f, "; %.1f s", r->b->time - r->a->time);
	fputc('\n', f);
}

void hd_write_vs_json(FILE *f, const struct hd_report *r, const struct hd_vs *vs)
{
	size_t shown = shown_of(r, vs);
	struct hd_kernel k;

	hd_kernel_change(r->a, r->b, &k);
	fprintf(f, "{\"heapdiff\": 1, \"mode\": \"heap-vs-rss\", \"diff\": %s,\n \"from\": ",
	        r->a ? "true" : "false");
	hd_json_snap(f, r->a);
	fputs(",\n \"to\": ", f);
	hd_json_snap(f, r->b);
	fputs(",\n \"total\": {", f);
	for (int c = 0; c < HD_VS_N; c++)
		fprintf(f, "\"%s\": %.0f, ", col_json[c], vs->total[c]);
	hd_json_kernel(f, &k);
	fprintf(f, ", \"functions\": %zu, \"shown\": %zu},\n \"functions\": ", vs->n, shown);
	hd_vs_json_rows(f, vs, shown, hd_json_str);
	fputs("}\n", f);
}

void hd_vs_json_rows(FILE *f, const struct hd_vs *vs, size_t n, void (*str)(FILE *, const char *))
{
	fputc('[', f);
	for (size_t i = 0; i < n && i < vs->n; i++) {
		const struct hd_vs_row *row = &vs->v[i];
		fputs(i ? ",\n  {\"function\": " : "\n  {\"function\": ", f);
		str(f, row->function);
		fputs(", \"file\": ", f);
		str(f, row->file);
		fputs(", \"module\": ", f);
		str(f, row->module);
		for (int c = 0; c < HD_VS_N; c++)
			fprintf(f, ", \"%s\": %.0f", col_json[c], row->bytes[c]);
		fprintf(f, ", \"paths\": [%d, %d, %d]}", row->paths[0], row->paths[1], row->paths[2]);
	}
	fputs("\n ]", f);
}
