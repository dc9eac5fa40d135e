/* py_lines.c -- the three line-table formats of CPython 3.8-3.13 (see
 * py_lines.h): a port of each version's PyCode_Addr2Line, and the same
 * walk turned into sorted ranges.
 *
 * 3.8/3.9's PyCode_Addr2Line is one loop over the pairs, ported as it is;
 * its ranges: one at each address an entry reaches, its line the sum of
 * the line deltas of every entry up to it.  For 3.10 and 3.11+ one walker
 * per format yields the table's ranges in order, each [start, end) with
 * its line, exactly as CPython's PyLineTable_NextAddressRange forms them
 * (Objects/codeobject.c of each version); ha_py_addr2line walks until the
 * range holding the address (CPython's _PyCode_CheckLineNumber from a
 * fresh range), ha_py_lines_decode keeps them all.  The semantics are
 * CPython's, checked against the real interpreters by
 * tests/t_py_lines.sh.
 *
 * Where CPython trusts its table (asserts, reads past the end of a
 * malformed one), the walker stops at the end: an entry missing its second
 * byte, a 3.10 run of zero-length entries at the end, a varint cut short
 * (its missing bytes read as 0).  Arithmetic is unsigned (a hostile table
 * makes lines wrap, never undefined behaviour); offsets stay below 2^32
 * since a table is at most HA_PY_LINETABLE_MAX bytes and an entry covers at
 * most 255 bytes (3.8-3.10) or 16 (3.11+). */
#include "py_lines.h"
#include "py_offsets.h"

#include <errno.h>
#include <stdlib.h>

struct walk {
	const uint8_t *tab;
	size_t len, p;       /* the next entry at tab[p] */
	int fmt;
	uint64_t start, end; /* the range last given: [start, end) */
	uint32_t computed;   /* CPython's computed_line (wrapping) */
	int32_t line;        /* the range's line, -1 for none */
};

static void walk_init(struct walk *w, int fmt, const uint8_t *tab, size_t len,
                      int32_t firstlineno)
{
	w->tab = tab;
	w->len = len;
	w->p = 0;
	w->fmt = fmt;
	w->start = w->end = 0;
	w->computed = (uint32_t)firstlineno;
	w->line = firstlineno;
}

/* 3.11's scan_varint: 6 bits a byte, bit 6 says another follows; a byte
 * past the end reads as 0 (ends it); bits past 32 are dropped. */
static uint32_t varint(const uint8_t *tab, size_t len, size_t p)
{
	uint32_t b = p < len ? tab[p] : 0, val = b & 63;
	unsigned shift = 0;

	while (b & 64) {
		p++;
		b = p < len ? tab[p] : 0;
		shift += 6;
		if (shift < 32)
			val |= (b & 63) << shift;
	}
	return val;
}

/* 3.11's get_line_delta of the entry at tab[p]. */
static uint32_t delta311(const uint8_t *tab, size_t len, size_t p)
{
	unsigned code = (tab[p] >> 3) & 15;

	switch (code) {
	case 13:   /* PY_CODE_LOCATION_INFO_NO_COLUMNS */
	case 14: { /* PY_CODE_LOCATION_INFO_LONG */
		uint32_t u = varint(tab, len, p + 1);
		return (u & 1) ? 0u - (u >> 1) : u >> 1;
	}
	case 11: return 1; /* ONE_LINE1 */
	case 12: return 2; /* ONE_LINE2 */
	default: return 0; /* NONE (15), ONE_LINE0 (10), the short forms */
	}
}

/* The next range of a 3.10 or 3.11+ table into w; 0 at its end. */
static int walk_next(struct walk *w)
{
	const uint8_t *t = w->tab;

	switch (w->fmt) {
	case HA_PY_LINES_310:
		/* PyLineTable_NextAddressRange: advance, and again while the
		 * range is empty (their line deltas add up). */
		w->start = w->end;
		do {
			int8_t ld;
			if (w->p + 1 >= w->len)
				return 0;
			w->end += t[w->p];
			ld = (int8_t)t[w->p + 1];
			w->p += 2;
			if (ld == -128) {
				w->line = -1;
			} else {
				w->computed += (uint32_t)(int32_t)ld;
				w->line = (int32_t)w->computed;
			}
		} while (w->start == w->end);
		return 1;
	case HA_PY_LINES_311:
		if (w->p >= w->len)
			return 0;
		w->computed += delta311(t, w->len, w->p);
		w->line = (t[w->p] >> 3) == 0x1f ? -1 : (int32_t)w->computed;
		w->start = w->end;
		w->end += (uint64_t)((t[w->p] & 7u) + 1) * 2;
		do
			w->p++;
		while (w->p < w->len && !(t[w->p] & 128));
		return 1;
	}
	return 0;
}

int32_t ha_py_addr2line(int fmt, const uint8_t *tab, size_t len, int32_t firstlineno,
                        uint32_t addr)
{
	struct walk w;

	if (fmt != HA_PY_LINES_LNOTAB && fmt != HA_PY_LINES_310 && fmt != HA_PY_LINES_311)
		return -1;
	if (HA_PY_LASTI_NEGATIVE(addr))
		return firstlineno;
	if (fmt == HA_PY_LINES_LNOTAB) {
		/* PyCode_Addr2Line of 3.8/3.9, as it is */
		uint32_t line = (uint32_t)firstlineno;
		uint64_t a = 0;
		for (size_t i = 0; i + 1 < len; i += 2) {
			a += tab[i];
			if (a > addr)
				break;
			line += (uint32_t)(int32_t)(int8_t)tab[i + 1];
		}
		return (int32_t)line;
	}
	walk_init(&w, fmt, tab, len, firstlineno);
	while (w.end <= addr)
		if (!walk_next(&w))
			return -1;
	return w.line;
}

/* Append [start, ...) of line to out, or merge it into the last range. */
static int push(struct ha_py_lines *out, uint32_t *cap, uint32_t start, int32_t line)
{
	if (out->n && out->v[out->n - 1].line == line)
		return 0;
	if (out->n && out->v[out->n - 1].start == start) {
		out->v[out->n - 1].line = line;
		/* an lnotab entry that changes the line back merges again */
		if (out->n > 1 && out->v[out->n - 2].line == line)
			out->n--;
		return 0;
	}
	if (out->n == *cap) {
		uint32_t c = *cap ? *cap * 2 : 16;
		struct ha_py_line_range *v = realloc(out->v, (size_t)c * sizeof *v);
		if (!v)
			return -ENOMEM;
		out->v = v;
		*cap = c;
	}
	out->v[out->n].start = start;
	out->v[out->n].line = line;
	out->n++;
	return 0;
}

int ha_py_lines_decode(int fmt, const uint8_t *tab, size_t len, int32_t firstlineno,
                       struct ha_py_lines *out)
{
	uint32_t cap = 0;
	int rc = 0;

	out->v = NULL;
	out->n = 0;
	out->end = 0;
	out->firstlineno = firstlineno;
	if (fmt != HA_PY_LINES_LNOTAB && fmt != HA_PY_LINES_310 && fmt != HA_PY_LINES_311)
		return -EINVAL;
	if (len > HA_PY_LINETABLE_MAX)
		return -E2BIG;
	if (fmt == HA_PY_LINES_LNOTAB) {
		uint32_t line = (uint32_t)firstlineno, addr = 0;
		rc = push(out, &cap, 0, firstlineno);
		for (size_t i = 0; rc == 0 && i + 1 < len; i += 2) {
			addr += tab[i];
			line += (uint32_t)(int32_t)(int8_t)tab[i + 1];
			rc = push(out, &cap, addr, (int32_t)line);
		}
		out->end = UINT32_MAX;
	} else {
		struct walk w;
		walk_init(&w, fmt, tab, len, firstlineno);
		while (rc == 0 && walk_next(&w))
			rc = push(out, &cap, (uint32_t)w.start, w.line);
		out->end = (uint32_t)w.end;
	}
	if (rc < 0)
		ha_py_lines_free(out);
	return rc;
}

int32_t ha_py_lines_find(const struct ha_py_lines *l, uint32_t lasti)
{
	uint32_t lo = 0, hi = l->n;

	if (HA_PY_LASTI_NEGATIVE(lasti))
		return l->firstlineno;
	if (lasti >= l->end || l->n == 0)
		return -1;
	while (lo < hi) {   /* the first range starting after lasti */
		uint32_t mid = lo + (hi - lo) / 2;
		if (l->v[mid].start <= lasti)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? l->v[lo - 1].line : -1;
}

size_t ha_py_lines_bytes(const struct ha_py_lines *l)
{
	return sizeof *l + (size_t)l->n * sizeof *l->v;
}

void ha_py_lines_free(struct ha_py_lines *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
	l->end = 0;
}
