/* fuzz_py_read -- libFuzzer harness for the reader of CPython objects
 * (src/pyframes/py_read.c): a code object, its names, file name and line
 * table as a hostile target could lay them out in its memory.  The
 * "target" is this process: the objects are made in a buffer here (of
 * zeros past the input, so that no read leaves it) and read back through
 * process_vm_readv, as the attacher reads a target.
 *
 * The input: byte 0 picks the version's offsets (3.8-3.13: its value mod
 * 6), bytes 1-4 the lasti looked up, the rest is the memory, at whose
 * start the code object lies.  In that memory every aligned 8-byte word
 * whose top byte is 0xaa becomes a pointer into it (the low 16 bits an
 * offset), and the words 0xbb01, 0xbb02, 0xbb03 become the addresses of
 * the code, str and bytes types: so the fuzzer can make objects point at
 * each other and have the right types.  Asserted, besides what the
 * sanitizers check:
 *  - the status is OK, gone or unreadable; the name and file are valid
 *    UTF-8 of at most 4 bytes a character of HA_PY_STR_MAX; gone and
 *    unreadable give "?" and no line;
 *  - when OK with a readable line table, the line is ha_py_addr2line's on
 *    that table; asked again (from the cache), the same answer;
 *  - the code is looked up by the ident ha_py_code_ident gives of it
 *    (else by the first 8 bytes of the input); under another one it is
 *    gone;
 *  - every pointer word read as a str gives valid UTF-8 or nothing.
 *
 * fuzz-sources: src/pyframes/py_read.c src/pyframes/py_lines.c
 * fuzz-sources: src/pyframes/py_offsets.c src/common/hashtab.c src/common/util.c
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "py_lines.h"
#include "py_read.h"

#include <unistd.h>

static uint64_t types[3][8];
static uint8_t table[HA_PY_LINETABLE_MAX];
/* The memory: the input at its start, zeros after it, so far that what
 * the objects point at (at most 64 KiB in) and read (a line table of
 * HA_PY_LINETABLE_MAX, a name of 4 * HA_PY_STR_MAX bytes) stays inside:
 * the same bytes whenever read. */
#define ARENA (HA_PY_LINETABLE_MAX + (128u << 10))
static uint8_t arena[ARENA] __attribute__((aligned(4096)));
static size_t dirty;   /* arena[dirty..] is all zero */

static void check_str(const char *s, const char *what)
{
	size_t n = strlen(s);
	FUZZ_CHECK(n <= 4 * HA_PY_STR_MAX, "%s: %zu bytes", what, n);
	FUZZ_CHECK(fuzz_valid_utf8((const unsigned char *)s, n), "%s: not UTF-8", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	const struct ha_py_offsets *o;
	struct ha_py_target t;
	struct ha_py_reader *r;
	struct ha_py_loc loc, again;
	uint64_t base, ident, tab;
	uint8_t *mem;
	uint32_t lasti;
	int32_t first;
	size_t len;
	int rc;

	if (n < 5 + 256)
		return 0;
	memset(&t, 0, sizeof t);
	o = ha_py_offsets_table(3, 8 + d[0] % 6);
	FUZZ_CHECK(o, "no table entry");
	t.off = *o;
	t.code_type = (uint64_t)(uintptr_t)types[0];
	t.unicode_type = (uint64_t)(uintptr_t)types[1];
	t.bytes_type = (uint64_t)(uintptr_t)types[2];
	memcpy(&lasti, d + 1, 4);
	len = n - 5;
	if (len > 64u << 10)
		return 0;
	mem = arena;
	memcpy(mem, d + 5, len);
	if (dirty > len)
		memset(mem + len, 0, dirty - len);
	dirty = len;
	base = (uint64_t)(uintptr_t)mem;
	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, mem + i, 8);
		if (w >> 56 == 0xaa)
			w = base + (w & 0xffff);
		else if (w >= 0xbb01 && w <= 0xbb03)
			w = (uint64_t)(uintptr_t)types[w - 0xbb01];
		memcpy(mem + i, &w, 8);
	}
	r = ha_py_reader_new(getpid(), &t);
	FUZZ_CHECK(r, "the table's offsets refused");
	if (ha_py_code_ident(r, base, &ident) != 0)
		memcpy(&ident, d + 5, 8);
	memcpy(&first, mem + o->code_firstlineno, 4);
	rc = ha_py_code_resolve(r, base, ident, first, lasti, &loc);
	FUZZ_CHECK(rc == HA_PY_CODE_OK || rc == HA_PY_CODE_GONE || rc == HA_PY_CODE_UNREADABLE,
	           "status %d", rc);
	check_str(loc.func, "func");
	check_str(loc.file, "file");
	if (rc != HA_PY_CODE_OK) {
		FUZZ_CHECK(loc.line == -1 && strcmp(loc.func, "?") == 0, "not OK, yet named");
	} else {
		long tl;
		memcpy(&tab, mem + o->code_linetable, 8);
		tl = ha_py_read_bytes(r, tab, table, sizeof table);
		if (tl >= 0) {
			int32_t want = ha_py_addr2line(o->line_format, table, (size_t)tl, first,
			                               lasti & ~HA_PY_RUN_END);
			FUZZ_CHECK(loc.line == want, "line %d, the scan says %d", loc.line, want);
		}
		rc = ha_py_code_resolve(r, base, ident, first, lasti, &again);
		FUZZ_CHECK(rc == HA_PY_CODE_OK && again.line == loc.line && again.func == loc.func &&
		           again.file == loc.file, "the cache answers otherwise");
	}
	rc = ha_py_code_resolve(r, base, ident ^ 8, first, lasti, &again);
	FUZZ_CHECK(rc == HA_PY_CODE_GONE, "another ident: status %d", rc);
	for (size_t i = 0; i + 8 <= len && i < 512; i += 8) {
		char s[4 * HA_PY_STR_MAX + 1];
		uint64_t w;
		memcpy(&w, mem + i, 8);
		if (w - base < len && ha_py_read_str(r, w, s, sizeof s) >= 0)
			check_str(s, "a str");
	}
	ha_py_reader_free(r);
	return 0;
}
