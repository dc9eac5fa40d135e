/* report_check -- heapdiff's report layer without a database: the text
 * cleaning every name goes through, allocator-frame folding, the filters,
 * and every output format written from rows built in memory, with names a
 * hostile target could choose (markup, quotes, the folded format's ';',
 * invalid UTF-8, control characters).
 *
 *   report_check DIR     checks what C can check itself and writes
 *                        DIR/report.{txt,folded,json,svg,pb.gz} for
 *                        tests/t_report_unit.sh to parse with real parsers.
 *
 * Prints every mismatch; exits 1 if there is one. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_frame.h"
#include "render.h"
#include "unit.h"

/* The name a hostile target gives its function, as stored in the file. */
static const char HOSTILE[] = "evil<script>alert(\"x\")</script>&'a;b' \xff\xfe\x01tab\there";
/* ...and what every writer must receive: valid UTF-8, no control
 * characters (each bad byte one '?'). */
static const char CLEANED[] = "evil<script>alert(\"x\")</script>&'a;b' ???tab?here";

static struct hd_frame frame(const char *fn, const char *file, int line, const char *module)
{
	struct hd_frame f = { 0 };
	f.function = hd_clean_text((const unsigned char *)fn);
	f.file = hd_clean_text((const unsigned char *)file);
	f.module = hd_clean_text((const unsigned char *)module);
	f.build_id = hd_clean_text((const unsigned char *)"");
	f.line = line;
	f.rel_pc = 0x1234;
	return f;
}

static void free_frames(struct hd_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		/* (A source's frames point into its pool; these were made
		 * here, one malloc each.) */
		free((char *)f[i].function);
		free((char *)f[i].file);
		free((char *)f[i].module);
		free((char *)f[i].build_id);
	}
}

static void check_clean(void)
{
	char *c = hd_clean_text((const unsigned char *)HOSTILE);
	EXPECT(strcmp(c, CLEANED) == 0, "hd_clean_text: '%s'", c);
	free(c);
	/* Overlong forms, surrogates and code points past U+10FFFF are
	 * invalid; a valid multi-byte sequence is kept whole. */
	c = hd_clean_text((const unsigned char *)"\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xc3\xa9");
	EXPECT(strcmp(c, "??|???|????|\xc3\xa9") == 0, "hd_clean_text invalid UTF-8: '%s'", c);
	free(c);
	c = hd_clean_text(NULL);
	EXPECT(strcmp(c, "") == 0, "hd_clean_text(NULL): '%s'", c);
	free(c);
}

static void check_fold(void)
{
	struct hd_frame f[] = {
		frame("malloc", "", 0, "/lib/x86_64-linux-gnu/libc.so.6"),
		frame("operator new(unsigned long)", "", 0, "/usr/lib/libstdc++.so.6"),
		frame("std::vector<int, std::allocator<int> >::_M_allocate(unsigned long)", "v.h", 1, "/app"),
		frame("std::vector<int, std::allocator<int> >::push_back(int const&)", "v.h", 2, "/app"),
		frame("handle", "app.c", 10, "/app"),
		frame("main", "app.c", 20, "/app"),
	};
	const struct hd_frame *fp[] = { &f[0], &f[1], &f[2], &f[3], &f[4], &f[5] };
	struct hd_stack st = { 1, 6, fp };
	int folded;
	struct hd_stack v = hd_fold(&st, 0, &folded);
	EXPECT(folded == 3 && v.n == 3 && strncmp(v.f[0]->function, "std::vector", 11) == 0 &&
	       strstr(v.f[0]->function, "push_back"), "fold: %d folded, leaf '%s'", folded,
	       v.n ? v.f[0]->function : "");
	v = hd_fold(&st, 1, &folded);
	EXPECT(folded == 0 && v.n == 6, "--all-frames folds %d", folded);
	/* A stack of allocator frames only keeps its outermost one. */
	struct hd_stack only = { 2, 2, fp };
	v = hd_fold(&only, 0, &folded);
	EXPECT(v.n == 1 && folded == 1, "fold of allocator frames only: %d left", v.n);
	/* A sample not unwound: its leaf (strdup, the program's call into
	 * libc) is all that is known, and is kept before the marker. */
	struct hd_frame nu[] = {
		frame("strdup", "", 0, "/lib/x86_64-linux-gnu/libc.so.6"),
		frame(HA_NOT_UNWOUND_FUNCTION, "", 0, ""),
	};
	const struct hd_frame *nup[] = { &nu[0], &nu[1] };
	struct hd_stack nst = { 3, 2, nup };
	v = hd_fold(&nst, 0, &folded);
	EXPECT(folded == 0 && v.n == 2 && strcmp(v.f[0]->function, "strdup") == 0,
	       "fold before the not-unwound frame: %d folded, leaf '%s'", folded,
	       v.n ? v.f[0]->function : "");
	free_frames(nu, sizeof nu / sizeof nu[0]);
	struct hd_filter flt = { .kind = -1, .module = "/app", .function = "handle" };
	EXPECT(hd_stack_matches(&st, &flt), "filter module+function: no match");
	flt.function = "nothere";
	EXPECT(!hd_stack_matches(&st, &flt), "filter function 'nothere' matches");
	flt.function = NULL;
	flt.module = "libc.so";
	EXPECT(hd_stack_matches(&st, &flt), "filter module libc.so: no match");
	free_frames(f, sizeof f / sizeof f[0]);
}

/* The one writer here that can fail (zlib), its error in the source's. */
static void write_pprof(FILE *f, const struct hd_report *r)
{
	EXPECT(hd_write_pprof(f, r) == HD_OK, "pprof: %s", r->b->src->err->msg);
}

static void write_all(const char *dir, const struct hd_report *r)
{
	static const struct {
		const char *ext;
		void (*fn)(FILE *, const struct hd_report *);
	} w[] = { { "txt", hd_write_text }, { "folded", hd_write_folded }, { "json", hd_write_json },
		  { "svg", hd_write_svg }, { "pb.gz", write_pprof } };
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/report.%s", dir, w[i].ext);
		FILE *f = fopen(path, "w");
		if (!f) {
			perror(path);
			exit(2);
		}
		w[i].fn(f, r);
		EXPECT(fclose(f) == 0, "writing %s", path);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: report_check DIR\n");
		return 2;
	}
	check_clean();
	check_fold();

	/* A diff of two rows: one that grew under the hostile name, one that
	 * shrank, in the mmap kind. */
	struct hd_frame grew[] = { frame(HOSTILE, "<file>&\"q\".c", 7, "/opt/<mod>/a'b.so"),
		                   frame("main", "main.c", 3, "/opt/app") };
	struct hd_frame shrank[] = { frame("cache_fill", "cache.c", 9, "/opt/app"),
		                     frame("main", "main.c", 4, "/opt/app") };
	struct hd_err err = { 0 };
	struct hd_source src = { .path = "/tmp/<db>&.db", .err = &err };
	struct hd_snap a = { .src = &src, .id = 1, .session_id = 1, .time = 1700000000, .rss = 1000,
		             .interval = 524288, .pid = 42 };
	struct hd_snap b = a;
	b.id = 5;
	b.time += 60;
	b.rss = 5000;
	snprintf(a.reason, sizeof a.reason, "attach");
	snprintf(b.reason, sizeof b.reason, "detach");
	snprintf(a.comm, sizeof a.comm, "srv</title>");
	snprintf(b.comm, sizeof b.comm, "srv</title>");
	const struct hd_frame *grewp[] = { &grew[0], &grew[1] }, *shrankp[] = { &shrank[0], &shrank[1] };
	struct hd_row rows[] = {
		{ .st = { 10, 2, grewp }, .stack_id = 10, .merged = 1, .kind = 0, .bytes = 3000000,
		  .objects = 300, .alloc_bytes = 4000000, .alloc_objects = 400 },
		{ .st = { 11, 2, shrankp }, .stack_id = 11, .merged = 1, .kind = 1, .bytes = -500000,
		  .objects = -50, .alloc_bytes = 0, .alloc_objects = 0 },
	};
	struct hd_report r = { .a = &a, .b = &b, .rows = rows, .n = 2, .nall = 2,
		               .total_bytes = 2500000, .total_objects = 250, .top = 10 };
	write_all(argv[1], &r);
	free_frames(grew, 2);
	free_frames(shrank, 2);

	return UNIT_RESULT("cleaning, folding, filters; reports written to %s", argv[1]);
}
