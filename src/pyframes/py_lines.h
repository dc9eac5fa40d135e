/* py_lines.h -- CPython's line tables: which source line an instruction
 * offset is on, with the answer CPython's own PyCode_Addr2Line gives
 * (what frame.f_lineno and tracebacks show), for each format:
 *
 *   HA_PY_LINES_LNOTAB (3.8, 3.9): co_lnotab, pairs (address delta, signed
 *       line delta); past the last entry the last line goes on.
 *   HA_PY_LINES_310: co_linetable (PEP 626), pairs (unsigned byte delta,
 *       signed line delta, -128: no line); zero-length entries add their
 *       line delta to the next; past the end: no line.
 *   HA_PY_LINES_311 (3.11, 3.12, 3.13): the location table
 *       (Objects/locations.md): entries of 1-8 code units whose first byte
 *       has bit 7 set, the line delta by the entry's code (a signed varint
 *       for the long and no-column forms, 0-2 for the one-line forms, 0
 *       for the short forms and for 15, no line); past the end: no line.
 *
 * Offsets are bytes from the start of the code; lines are CPython's: -1 is
 * no line (None in Python), and an offset CPython would take as negative
 * (bit 30 set: the agent's f_lasti of -1 or prev_instr one unit before
 * the code, a frame that has not started) is the code's firstlineno.
 *
 * A table is the target's bytes, hence untrusted: a table longer than
 * HA_PY_LINETABLE_MAX is refused, an entry that runs past the end ends the
 * table there (where CPython would read on), lines wrap as 32-bit
 * numbers.  ha_py_addr2line is a straight port of CPython's scan (one
 * lookup walks the table); ha_py_lines_decode turns a table into sorted
 * ranges once, for ha_py_lines_find to look up in O(log n): the cache of
 * py_read.c keeps the ranges.  Both give the same answers for every table
 * and offset (py_lines_test.c, tests/fuzz/fuzz_py_lines.c). */
#ifndef HA_PY_LINES_H
#define HA_PY_LINES_H

#include <stddef.h>
#include <stdint.h>

#define HA_PY_LINETABLE_MAX (1u << 20)

/* Is lasti (bytes, HA_PY_RUN_END cleared) one CPython takes as negative? */
#define HA_PY_LASTI_NEGATIVE(lasti) (((lasti) & 0x40000000u) != 0)

struct ha_py_line_range {
	uint32_t start;          /* byte offset where the range starts */
	int32_t line;            /* -1: no line */
};

struct ha_py_lines {
	struct ha_py_line_range *v;  /* by start, the first at 0; NULL if n == 0 */
	uint32_t n;
	uint32_t end;            /* where the last range ends (UINT32_MAX: never) */
	int32_t firstlineno;     /* the line of a negative lasti */
};

/* CPython's PyCode_Addr2Line(code, addr) for a table of format fmt (enum
 * ha_py_lines_fmt, py_offsets.h) of len bytes; -1 for an unknown format. */
int32_t ha_py_addr2line(int fmt, const uint8_t *tab, size_t len, int32_t firstlineno,
                        uint32_t addr);

/* The table's ranges into out (adjacent ranges of one line merged).
 * 0, -EINVAL (unknown format), -E2BIG (longer than HA_PY_LINETABLE_MAX)
 * or -ENOMEM (out is then empty). */
int ha_py_lines_decode(int fmt, const uint8_t *tab, size_t len, int32_t firstlineno,
                       struct ha_py_lines *out);

/* The line of offset lasti, as ha_py_addr2line gives it. */
int32_t ha_py_lines_find(const struct ha_py_lines *l, uint32_t lasti);

/* Bytes held by l (the cache's accounting). */
size_t ha_py_lines_bytes(const struct ha_py_lines *l);

void ha_py_lines_free(struct ha_py_lines *l);

#endif
