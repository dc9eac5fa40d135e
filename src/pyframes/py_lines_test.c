/* py_lines_test.c -- the line-table decoders of py_lines.c on tables made
 * by hand, one set per format, each offset's line worked out from
 * CPython's rules (py_lines.h): lnotab's entries at one address adding
 * up, big line and address jumps split over entries; 3.10's zero-length
 * entries and its -128 (no line); every code of the 3.11 location table
 * (short, one-line 0-2, no-columns and long with signed varints, none).
 * Then ha_py_lines_decode + ha_py_lines_find against ha_py_addr2line
 * (the port of CPython's scan) on random tables of every format, every
 * offset: the cache's answers are the port's. */
#include "py_lines.h"
#include "py_offsets.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#define NEG 0x7ffffffeu   /* an f_lasti of -1 as the agent records it */

/* Both ways of looking up, for every offset in [0, upto): want[off / step]. */
static void check(const char *what, int fmt, const uint8_t *tab, size_t len, int32_t first,
                  const int32_t *want, uint32_t upto, uint32_t step)
{
	struct ha_py_lines l;

	EXPECT(ha_py_lines_decode(fmt, tab, len, first, &l) == 0, "%s: decode", what);
	for (uint32_t off = 0; off < upto; off++) {
		int32_t w = want[off / step], a = ha_py_addr2line(fmt, tab, len, first, off),
		        f = ha_py_lines_find(&l, off);
		EXPECT(a == w, "%s: addr2line(%u) = %d, want %d", what, off, a, w);
		EXPECT(f == w, "%s: find(%u) = %d, want %d", what, off, f, w);
	}
	EXPECT(ha_py_addr2line(fmt, tab, len, first, NEG) == first, "%s: negative lasti", what);
	EXPECT(ha_py_lines_find(&l, NEG) == first, "%s: negative lasti (find)", what);
	ha_py_lines_free(&l);
}

static void lnotab(void)
{
	/* 0-5: 10; 6-13: 11; 14-17: 14 (two entries at 14: +1, +2); 18-: 11 */
	static const uint8_t t1[] = { 6, 1, 8, 1, 0, 2, 4, 0xfd };
	int32_t w1[40];
	for (int i = 0; i < 40; i++)
		w1[i] = i < 6 ? 10 : i < 14 ? 11 : i < 18 ? 14 : 11;
	check("lnotab", HA_PY_LINES_LNOTAB, t1, sizeof t1, 10, w1, 40, 1);

	/* a jump of 300 lines at 4: (0,127) (0,127) (4,46) */
	static const uint8_t t2[] = { 0, 127, 0, 127, 4, 46 };
	int32_t w2[10];
	for (int i = 0; i < 10; i++)
		w2[i] = i < 4 ? 255 : 301;
	check("lnotab line jump", HA_PY_LINES_LNOTAB, t2, sizeof t2, 1, w2, 10, 1);

	/* 300 bytes on one line: (255,0) (45,1); a line back (0,-128 -> -128) */
	static const uint8_t t3[] = { 255, 0, 45, 1, 2, 0x80 };
	int32_t w3[310];
	for (int i = 0; i < 310; i++)
		w3[i] = i < 300 ? 500 : i < 302 ? 501 : 501 - 128;
	check("lnotab address jump", HA_PY_LINES_LNOTAB, t3, sizeof t3, 500, w3, 310, 1);

	/* empty, and an odd byte left over: firstlineno everywhere */
	int32_t w4[8] = { 7, 7, 7, 7, 7, 7, 7, 7 };
	check("lnotab empty", HA_PY_LINES_LNOTAB, t3, 0, 7, w4, 8, 1);
	check("lnotab odd byte", HA_PY_LINES_LNOTAB, t3, 1, 7, w4, 8, 1);
}

static void pep626(void)
{
	/* [0,4) 6; [4,10) 7; a zero-length +3, then [10,12) no line;
	 * [12,20) 8; past 20 no line */
	static const uint8_t t1[] = { 4, 1, 6, 1, 0, 3, 2, 0x80, 8, 0xfe };
	int32_t w[24];
	for (int i = 0; i < 24; i++)
		w[i] = i < 4 ? 6 : i < 10 ? 7 : i < 12 ? -1 : i < 20 ? 8 : -1;
	check("3.10", HA_PY_LINES_310, t1, sizeof t1, 5, w, 24, 1);

	/* a jump of 300 lines: (0,127) (0,127) (6,46); 600 bytes: (254,0)x2 (92,1) */
	static const uint8_t t2[] = { 0, 127, 0, 127, 6, 46, 254, 0, 254, 0, 92, 1 };
	int32_t w2[620];
	for (int i = 0; i < 620; i++)
		w2[i] = i < 514 ? 301 : i < 606 ? 302 : -1;
	check("3.10 jumps", HA_PY_LINES_310, t2, sizeof t2, 1, w2, 620, 1);

	/* zero-length entries at the end, an odd byte: they make no range */
	static const uint8_t t3[] = { 4, 1, 0, 5, 0 };
	int32_t w3[8] = { 3, 3, 3, 3, -1, -1, -1, -1 };
	check("3.10 cut", HA_PY_LINES_310, t3, sizeof t3, 2, w3, 8, 1);
	int32_t w4[4] = { -1, -1, -1, -1 };
	check("3.10 empty", HA_PY_LINES_310, t3, 0, 2, w4, 4, 1);
}

static void locations(void)
{
	/* firstlineno 20; code units of 2 bytes:
	 * ONE_LINE1, 1 unit:        [0,2)   21
	 * SHORT0, 3 units:          [2,8)   21
	 * NONE, 2 units:            [8,12)  no line
	 * NO_COLUMNS -30, 8 units:  [12,28) -9
	 * LONG +300, 1 unit:        [28,30) 291
	 * ONE_LINE2, 4 units:       [30,38) 293
	 * ONE_LINE0, 1 unit:        [38,40) 293
	 * SHORT9, 1 unit:           [40,42) 293 */
	static const uint8_t t[] = {
		0x80 | 11 << 3 | 0, 5, 10,
		0x80 | 0 << 3 | 2, 0x05,
		0x80 | 15 << 3 | 1,
		0x80 | 13 << 3 | 7, 61,
		0x80 | 14 << 3 | 0, 88, 9, 0, 1, 1,
		0x80 | 12 << 3 | 3, 1, 2,
		0x80 | 10 << 3 | 0, 3, 4,
		0x80 | 9 << 3 | 0, 0x11,
	};
	int32_t w[24];
	for (int i = 0; i < 24; i++)
		w[i] = i < 1 ? 21 : i < 4 ? 21 : i < 6 ? -1 : i < 14 ? -9 : i < 15 ? 291 :
		       i < 21 ? 293 : -1;
	check("3.11", HA_PY_LINES_311, t, sizeof t, 20, w, 48, 2);

	/* a varint cut short by the end of the table: its bytes read as 0 */
	static const uint8_t cut[] = { 0x80 | 13 << 3 | 0, 64 | 2 };
	int32_t w2[3] = { 21, -1, -1 };
	check("3.11 cut varint", HA_PY_LINES_311, cut, sizeof cut, 20, w2, 6, 2);
}

/* Random tables of every format: the decoded ranges answer as the scan. */
static void random_tables(void)
{
	uint8_t tab[64];
	unsigned seed = 12345;
	int bad = 0;

	for (int round = 0; round < 3000 && bad < 5; round++) {
		int fmt = 1 + round % 3;
		size_t len = (size_t)(rand_r(&seed) % (int)sizeof tab);
		int32_t first = rand_r(&seed) % 2000 - 1000;
		struct ha_py_lines l;
		for (size_t i = 0; i < len; i++)
			tab[i] = (uint8_t)rand_r(&seed);
		if (round % 2)   /* mostly small deltas, as real tables have */
			for (size_t i = 0; i < len; i++)
				tab[i] = fmt == HA_PY_LINES_311 ? tab[i] : tab[i] % 8;
		if (ha_py_lines_decode(fmt, tab, len, first, &l) != 0) {
			EXPECT(0, "random: decode failed");
			continue;
		}
		for (uint32_t off = 0; off < 64u * 255u + 16u; off++) {
			int32_t a = ha_py_addr2line(fmt, tab, len, first, off),
			        f = ha_py_lines_find(&l, off);
			if (a != f) {
				EXPECT(a == f, "random (format %d, %zu bytes, round %d): offset %u: "
				       "scan %d, ranges %d", fmt, len, round, off, a, f);
				bad++;
				break;
			}
		}
		ha_py_lines_free(&l);
	}
}

int main(void)
{
	struct ha_py_lines l;
	uint8_t big[16] = { 0 };

	lnotab();
	pep626();
	locations();
	random_tables();
	EXPECT(ha_py_lines_decode(9, big, sizeof big, 1, &l) < 0, "an unknown format is refused");
	EXPECT(ha_py_addr2line(9, big, sizeof big, 1, 0) == -1, "an unknown format has no line");
	EXPECT(ha_py_lines_decode(HA_PY_LINES_311, big, HA_PY_LINETABLE_MAX + 1u, 1, &l) < 0,
	       "a table over HA_PY_LINETABLE_MAX is refused");
	return UNIT_RESULT("line tables: lnotab, 3.10, 3.11+; ranges equal the scan");
}
