/* py_lines_check.c -- src/pyframes' reader (ha_py_code_resolve) on the
 * code objects of a live CPython, against what that CPython says.
 *
 *   py_lines_check PID FACTS
 *
 * PID runs tests/py_lines_target.py, whose output is in FACTS: for each
 * code object its address, name pointer, firstlineno, names and file, then
 * the line of each code unit by Python's own iteration ("lines") and by
 * PyCode_Addr2Line ("addr", with one offset past the end and -2).  For
 * every offset the reader's line must equal both (the agent's record of
 * an f_lasti of -1 is 0x7ffffffe, marked HA_PY_RUN_END or not: the
 * code's firstlineno), and so must ha_py_addr2line (the port of CPython's
 * scan) on the table read from the target; its name the qualname (3.11+)
 * or co_name, its file co_filename; a second pass must come from the
 * cache (no code object read again).  Each code object is looked up by
 * the ident the reader computes of it (ha_py_code_ident), which must be
 * what ha_py_ident_add makes of its name and file when they are ASCII;
 * under another ident it is gone.
 * Prints a summary line and exits 0, or each mismatch and exits 1. */
#define _GNU_SOURCE
#include "py_detect.h"
#include "py_lines.h"
#include "py_read.h"
#include "unit.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct code {
	uint64_t addr, ident;
	int32_t first;
	char fname[1024], qual[1024], file[4096];
	char *lines, *addr2line;     /* "OFF:LINE ..." */
};

static void unhex(const char *h, char *out, size_t max)
{
	size_t n = 0;
	if (strcmp(h, "-") != 0)
		for (; h[0] && h[1] && n + 1 < max; h += 2)
			if (sscanf(h, "%2hhx", (unsigned char *)&out[n]) == 1)
				n++;
	out[n] = '\0';
}

static pid_t pid;
static struct ha_py_target t;
static uint8_t tab[HA_PY_LINETABLE_MAX];

/* Every "OFF:LINE" of list: the reader's line for OFF must be LINE, and
 * so must the port of CPython's scan on the table tab of len bytes. */
static long check_list(struct ha_py_reader *r, const struct code *c, const char *what,
                       const char *list, int mark, long len)
{
	const char *p = list;
	long n = 0;
	int off, line, used, bad = 0;

	while (sscanf(p, "%d:%d%n", &off, &line, &used) == 2) {
		struct ha_py_loc loc;
		uint32_t lasti = off < 0 ? 0x7fffffffu & (uint32_t)off : (uint32_t)off;
		int rc = ha_py_code_resolve(r, c->addr, c->ident, c->first,
		                            lasti | (mark ? HA_PY_RUN_END : 0), &loc);
		int32_t scan = len >= 0 ? ha_py_addr2line(t.off.line_format, tab, (size_t)len, c->first,
		                                          lasti) : -2;
		p += used;
		n++;
		if (rc != HA_PY_CODE_OK || loc.line != line || scan != line) {
			EXPECT(0, "%s (%s, line %d): %s offset %d: line %d (status %d; scan %d), Python %d",
			       c->qual, c->file, c->first, what, off, loc.line, rc, scan, line);
			if (++bad > 5)
				break;
		}
	}
	return n;
}

/* s's part of an ident, if it is ASCII (its bytes its characters): 0, or
 * -1 if it is not. */
static int ascii_ident(const char *s, uint64_t *h)
{
	size_t n = strlen(s), t = n < HA_PY_IDENT_TAIL ? n : HA_PY_IDENT_TAIL;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return -1;
	*h = ha_py_ident_add(*h, (const uint8_t *)s + n - t, (uint32_t)t, (int64_t)n, 1);
	return 0;
}

/* c's ident as the reader computes it, checked against its name and file
 * when ASCII, and against another ident (gone). */
static void check_ident(struct ha_py_reader *r, struct code *c)
{
	uint64_t h = HA_PY_IDENT_SEED;
	struct ha_py_loc loc;
	EXPECT(ha_py_code_ident(r, c->addr, &c->ident) == 0, "%s: no ident", c->qual);
	if (ascii_ident(t.minor >= 11 ? c->qual : c->fname, &h) == 0 && ascii_ident(c->file, &h) == 0)
		EXPECT(h == c->ident, "%s (%s): ident %#llx, its characters give %#llx", c->qual,
		       c->file, (unsigned long long)c->ident, (unsigned long long)h);
	EXPECT(ha_py_code_resolve(r, c->addr, c->ident ^ 1, c->first, 0, &loc) == HA_PY_CODE_GONE,
	       "%s: found under another ident", c->qual);
}

int main(int argc, char **argv)
{
	static char line[4 << 20];
	struct ha_maps maps = { 0 };
	struct ha_py_reader *r;
	struct code *codes = NULL;
	size_t ncodes = 0, cap = 0;
	uint64_t reads, hits, reads1;
	long offsets = 0;
	char err[512];
	FILE *facts;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PID FACTS\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	pid = (pid_t)atoi(argv[1]);
	facts = fopen(argv[2], "r");
	if (!facts || ha_maps_read(pid, &maps) < 0) {
		fprintf(stderr, "cannot read %s or the maps of %d\n", argv[2], (int)pid);
		return 1;
	}
	rc = ha_py_detect(pid, &maps, &t, err, sizeof err);
	ha_maps_free(&maps);
	if (rc != 0) {
		printf("MISMATCH: ha_py_detect: %d: %s\n", rc, err);
		fclose(facts);
		return 1;
	}
	r = ha_py_reader_new(pid, &t);
	if (!r) {
		printf("MISMATCH: no reader\n");
		fclose(facts);
		return 1;
	}
	while (fgets(line, sizeof line, facts)) {
		char a[32], b[32], f[32], n[2100], q[2100], fl[8200];
		struct code *c;
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "code %31s %31s %31s %2099s %2099s %8199s", a, b, f, n, q, fl) == 6) {
			c = ha_grow(codes, &cap, ncodes + 1, sizeof *codes, 64);
			if (!c)
				return 1;
			codes = c;
			c = &codes[ncodes++];
			memset(c, 0, sizeof *c);
			c->addr = strtoull(a, NULL, 10);
			c->first = atoi(f);
			unhex(n, c->fname, sizeof c->fname);
			unhex(q, c->qual, sizeof c->qual);
			unhex(fl, c->file, sizeof c->file);
			check_ident(r, c);
		} else if (ncodes && strncmp(line, "lines ", 6) == 0) {
			codes[ncodes - 1].lines = strdup(line + 6);
		} else if (ncodes && strncmp(line, "addr ", 5) == 0) {
			codes[ncodes - 1].addr2line = strdup(line + 5);
		}
	}
	fclose(facts);
	EXPECT(ncodes >= 20, "only %zu code objects in the facts", ncodes);
	for (int pass = 0; pass < 2; pass++) {
		ha_py_reader_stats(r, &reads1, &hits);
		for (size_t i = 0; i < ncodes; i++) {
			const struct code *c = &codes[i];
			struct ha_py_loc loc;
			rc = ha_py_code_resolve(r, c->addr, c->ident, c->first, 0, &loc);
			EXPECT(rc == HA_PY_CODE_OK, "%s: status %d", c->qual, rc);
			if (rc != HA_PY_CODE_OK)
				continue;
			EXPECT(strcmp(loc.func, t.minor >= 11 ? c->qual : c->fname) == 0,
			       "name %s, not %s", loc.func, t.minor >= 11 ? c->qual : c->fname);
			EXPECT(strcmp(loc.file, c->file) == 0, "file %s, not %s", loc.file, c->file);
			EXPECT(loc.firstlineno == c->first, "%s: firstlineno %d", c->qual, loc.firstlineno);
			EXPECT(c->lines && c->addr2line, "%s: no lines in the facts", c->qual);
			uint64_t tp = 0;
			long len = -1;
			if (ha_remote_read(pid, c->addr + t.off.code_linetable, &tp, sizeof tp) == 0)
				len = ha_py_read_bytes(r, tp, tab, sizeof tab);
			EXPECT(len >= 0, "%s: its line table is unreadable", c->qual);
			if (c->lines && c->addr2line) {
				offsets += check_list(r, c, "lines", c->lines, pass, len);
				offsets += check_list(r, c, "addr2line", c->addr2line, pass, len);
			}
		}
		ha_py_reader_stats(r, &reads, &hits);
		if (pass == 1)
			EXPECT(reads == reads1, "the second pass read %llu code objects again",
			       (unsigned long long)(reads - reads1));
	}
	printf("CPython %d.%d: %zu code objects, %ld offsets checked, %llu reads, %llu cache hits\n",
	       t.major, t.minor, ncodes, offsets, (unsigned long long)reads, (unsigned long long)hits);
	for (size_t i = 0; i < ncodes; i++) {
		free(codes[i].lines);
		free(codes[i].addr2line);
	}
	free(codes);
	ha_py_reader_free(r);
	return UNIT_RESULT("lines, names and files of every code object");
}
