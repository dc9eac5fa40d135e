/* fuzz_py_lines -- libFuzzer harness for CPython's line-table decoders
 * (src/pyframes/py_lines.c): a table is bytes of the target's memory, the
 * co_lnotab or co_linetable of a code object it made.
 *
 * The input: byte 0 picks the format (lnotab, 3.10, 3.11+: its value mod
 * 3), bytes 1-4 are co_firstlineno (little-endian int32), the rest is the
 * table.  Asserted, besides what the sanitizers check:
 *  - ha_py_lines_decode takes it (0);
 *  - its ranges start at 0 and strictly increase, no two adjacent ones on
 *    the same line, the last below the end;
 *  - ha_py_lines_find equals ha_py_addr2line (the port of CPython's scan)
 *    at each range's start and the offsets around it (the first 32 and
 *    last 8 ranges, one in 32 between: each scan costs the table's
 *    length, hence also inputs of at most 1 KiB), at the end, at 16
 *    offsets drawn from the input, and for a negative lasti (both: the
 *    firstlineno);
 *  - a lookup with the record's HA_PY_RUN_END bit set is the caller's job
 *    (py_read.c clears it): not fed here.
 *
 * fuzz-sources: src/pyframes/py_lines.c
 * fuzz-flags: -max_len=1024
 */
#include "fuzz.h"
#include "py_lines.h"
#include "py_offsets.h"

static void same(int fmt, const uint8_t *tab, size_t len, int32_t first,
                 const struct ha_py_lines *l, uint32_t off)
{
	int32_t a = ha_py_addr2line(fmt, tab, len, first, off), f = ha_py_lines_find(l, off);
	FUZZ_CHECK(a == f, "format %d, %zu bytes, offset %u: scan %d, ranges %d", fmt, len, off,
	           a, f);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct ha_py_lines l;
	const uint8_t *tab;
	int32_t first;
	uint32_t h = 2166136261u;
	size_t len;
	int fmt, rc;

	if (n < 5)
		return 0;
	fmt = 1 + d[0] % 3;
	memcpy(&first, d + 1, 4);
	tab = d + 5;
	len = n - 5;
	rc = ha_py_lines_decode(fmt, tab, len, first, &l);
	FUZZ_CHECK(rc == 0, "decode: %d", rc);
	FUZZ_CHECK(l.n == 0 || l.v[0].start == 0, "the first range starts at %u", l.v[0].start);
	for (uint32_t i = 0; i < l.n; i++) {
		uint32_t s = l.v[i].start;
		FUZZ_CHECK(i == 0 || s > l.v[i - 1].start, "range %u does not follow", i);
		FUZZ_CHECK(i == 0 || l.v[i].line != l.v[i - 1].line, "ranges %u, %u on one line", i - 1,
		           i);
		FUZZ_CHECK(s < l.end, "range %u starts at %u, the end is %u", i, s, l.end);
		if (i >= 32 && i + 8 < l.n && i % 32)
			continue;   /* each scan is O(len): the ends and one in 32 between */
		same(fmt, tab, len, first, &l, s);
		same(fmt, tab, len, first, &l, s + 1);
		if (s)
			same(fmt, tab, len, first, &l, s - 1);
	}
	if (l.end < 0x40000000u) {
		same(fmt, tab, len, first, &l, l.end);
		same(fmt, tab, len, first, &l, l.end + 1);
	}
	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 16777619u;
	for (int k = 0; k < 16; k++) {
		h = h * 1103515245u + 12345u;
		same(fmt, tab, len, first, &l, (h >> 8) % (l.end < 0x40000000u ? l.end + 8 : 1u << 20));
	}
	FUZZ_CHECK(ha_py_lines_find(&l, 0x7ffffffeu) == first &&
	           ha_py_addr2line(fmt, tab, len, first, 0x7ffffffeu) == first,
	           "a negative lasti is not the firstlineno");
	ha_py_lines_free(&l);
	return 0;
}
