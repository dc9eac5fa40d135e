/* report_folded.c -- collapsed stacks, the input of flamegraph.pl and of
 * most flame-graph viewers: one line per callstack, frames root first
 * separated by ';', then a space and the value (bytes).
 *
 * A line's value must be positive, so a diff lists what grew (live bytes
 * gained from A to B) and leaves out what shrank; the svg, json and text
 * formats show both.  Inlined frames get flamegraph.pl's "_[i]" suffix;
 * memory other than the heap gets a root frame naming its kind; a Python
 * frame is "function (file.py:LINE)" (hd_frame_label). */
#define _GNU_SOURCE
#include "render.h"

#include <math.h>

static void put_name(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' ? ',' : *s, f);
}

void hd_write_folded(FILE *f, const struct hd_report *r)
{
	char label[HD_LABEL_MAX];
	for (size_t i = 0; i < r->n; i++) {
		const struct hd_row *row = &r->rows[i];
		double v = floor(row->bytes + 0.5);
		int first = 1;
		if (v < 1)
			continue;
		if (row->kind != 0) {
			fprintf(f, "[%s]", hd_kind_name(row->kind));
			first = 0;
		}
		for (int k = row->st.n - 1; k >= 0; k--) {
			const struct hd_frame *fr = row->st.f[k];
			if (!first)
				fputc(';', f);
			first = 0;
			put_name(f, hd_frame_label(fr, label, sizeof label));
			if (fr->inlined)
				fputs("_[i]", f);
		}
		if (first)
			fputs("[no frames]", f);
		fprintf(f, " %.0f\n", v);
	}
}
