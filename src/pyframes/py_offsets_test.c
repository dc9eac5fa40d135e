/* py_offsets_test.c -- py_offsets.c and the parts of py_detect.c that need
 * no process: the table (every supported version, none other, the chain
 * each has), 3.13's _Py_DebugOffsets (the words a real 3.13.0 holds at
 * &_PyRuntime, taken as the table says, then spoilt one way at a time:
 * refused every time), the agent's struct ha_py_walk, and versions read
 * from module names (ABI letters: d debug, t free-threaded). */
#include "py_detect.h"
#include "py_offsets.h"
#include "unit.h"

#include <string.h>

/* CPython 3.13.0's _Py_DebugOffsets after its cookie, as read from a live
 * interpreter (python3.13 -c: the 72 words at &_PyRuntime + 8). */
static const uint64_t real313[] = {
	0x30d00f0, 0, 283320, 608, 632, 194968, 7272, 7264, 7344, 7400, 7656, 7640, 7648, 16,
	7752, 0, 7768, 7760, 304, 0, 8, 16, 72, 152, 160, 232, 32, 80, 8, 0, 56, 72, 70, 208,
	112, 120, 128, 136, 68, 52, 96, 104, 200, 16, 8, 416, 24, 88, 168, 32, 24, 16, 40, 24,
	16, 48, 32, 40, 24, 16, 32, 16, 24, 40, 16, 32, 64, 32, 16, 40, 240, 200,
};
/* word indexes (after the cookie) spoilt below */
enum { W_VERSION = 0, W_FREE = 1, W_FINALIZING = 3, W_CODE_SIZE = 33, W_CODE_NAME = 35,
       W_ASCII_SIZE = 69 };

static const unsigned char cookie[8] = "xdebugpy";   /* no NUL, as in CPython */

static void make313(unsigned char *buf)
{
	memset(buf, 0, HA_PY_DEBUG_OFFSETS_BYTES);
	memcpy(buf, cookie, sizeof cookie);
	memcpy(buf + 8, real313, sizeof real313);
}

static void set_word(unsigned char *buf, int w, uint64_t v)
{
	memcpy(buf + 8 + (size_t)w * 8, &v, 8);
}

static void debug_offsets(void)
{
	unsigned char buf[HA_PY_DEBUG_OFFSETS_BYTES];
	struct ha_py_offsets o;
	const char *d;
	uint32_t hex = 0;
	char err[256];
	static const struct { int word; uint64_t value; const char *what; } spoil[] = {
		{ W_VERSION, 0x30e00f0, "3.14" },
		{ W_VERSION, 0x30c01f0, "3.12" },
		{ W_FREE, 1, "free-threaded" },
		{ W_FINALIZING, 283320, "finalizing at the struct's end" },
		{ W_CODE_NAME, 208, "co_name past the code object" },
		{ W_CODE_SIZE, 4096, "a code object of 4 KiB" },
		{ W_ASCII_SIZE, 0, "no ASCII header" },
		{ W_ASCII_SIZE, 65, "an ASCII header larger than the string" },
		{ 2, 0, "a runtime of size 0" },
	};

	EXPECT(sizeof real313 == (size_t)72 * 8, "72 words");
	make313(buf);
	EXPECT(ha_py_offsets_debug(buf, sizeof buf, &o, &hex, err, sizeof err) == 0,
	       "a real 3.13.0's debug offsets refused: %s", err);
	EXPECT(hex == 0x30d00f0, "hexversion %#x", hex);
	d = ha_py_offsets_diff(&o, ha_py_offsets_table(3, 13));
	EXPECT(!d, "the 3.13 table differs from 3.13.0's debug offsets in %s", d);
	EXPECT(ha_py_offsets_debug(buf, sizeof buf - 300, &o, &hex, err, sizeof err) < 0,
	       "a short read taken");
	buf[7] = 'z';
	EXPECT(ha_py_offsets_debug(buf, sizeof buf, &o, &hex, err, sizeof err) < 0,
	       "a wrong cookie taken");
	for (size_t i = 0; i < sizeof spoil / sizeof spoil[0]; i++) {
		make313(buf);
		set_word(buf, spoil[i].word, spoil[i].value);
		EXPECT(ha_py_offsets_debug(buf, sizeof buf, &o, &hex, err, sizeof err) < 0,
		       "debug offsets with %s taken", spoil[i].what);
	}
	make313(buf);
	set_word(buf, W_CODE_NAME, 121);   /* moved, still inside: taken, and told */
	EXPECT(ha_py_offsets_debug(buf, sizeof buf, &o, &hex, err, sizeof err) == 0 &&
	       (d = ha_py_offsets_diff(ha_py_offsets_table(3, 13), &o)) &&
	       strcmp(d, "code_name") == 0, "a moved co_name not told");
}

static void table(void)
{
	static const int chains[] = { 1, 1, 1, 2, 2, 3 };
	struct ha_py_walk w;

	EXPECT(ha_py_offsets_count == 6, "%zu entries", ha_py_offsets_count);
	EXPECT(!ha_py_offsets_table(3, 7) && !ha_py_offsets_table(3, 14) &&
	       !ha_py_offsets_table(2, 7), "an unsupported version has an entry");
	for (int m = 8; m <= 13; m++) {
		const struct ha_py_offsets *o = ha_py_offsets_table(3, m);
		EXPECT(o && o->chain == chains[m - 8], "3.%d: chain %d", m, o ? o->chain : -1);
		if (!o)
			continue;
		EXPECT(o->line_format == (m < 10 ? HA_PY_LINES_LNOTAB : m == 10 ? HA_PY_LINES_310
		                                                                  : HA_PY_LINES_311),
		       "3.%d: line format %d", m, o->line_format);
		EXPECT((o->chain == HA_PY_CHAIN_FRAMEOBJ) == (o->lasti_units != 0),
		       "3.%d: lasti_units %d", m, o->lasti_units);
		EXPECT((m == 11) == (o->frame_is_entry != HA_PY_NO_FIELD), "3.%d: is_entry", m);
		EXPECT((m >= 12) == (o->frame_owner != HA_PY_NO_FIELD), "3.%d: owner", m);
		EXPECT((m >= 11) == (o->code_qualname != HA_PY_NO_FIELD), "3.%d: qualname", m);
		EXPECT(o->object_type == 8 && o->var_size == 16, "3.%d: object header", m);
		ha_py_walk_fill(&w, o, 0x1000, 0x2000, 0x4000, 0x30000);
		EXPECT(w.get_tstate == 0x1000 && w.code_type == 0x2000 && w.unicode_type == 0x4000 &&
		       w.finalizing == 0x30000u + o->runtime_finalizing && w.chain == o->chain &&
		       w.depth_max == HA_PY_DEPTH_MAX && w.frame_lasti == o->frame_lasti &&
		       w.code_adaptive == o->code_adaptive && w.cframe_current == o->cframe_current &&
		       w.code_qualname == o->code_qualname && w.code_filename == o->code_filename &&
		       w.str_length == o->str_length && w.str_state == o->str_state &&
		       w.str_ascii_size == o->str_ascii_size &&
		       w.str_compact_size == o->str_compact_size &&
		       w.str_kind_shift == o->str_kind_shift && w.str_kind_mask == 7 &&
		       w.str_compact_bit == o->str_compact_bit && w.str_ascii_bit == o->str_ascii_bit &&
		       w.pad[0] == 0 && w.pad[1] == 0, "3.%d: the walk", m);
	}
}

static void names(void)
{
	static const struct { const char *path; int major, minor; const char *flags; } ok[] = {
		{ "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", 3, 11, "" },
		{ "/root/.pyenv/versions/3.8.18/lib/libpython3.8.so.1.0", 3, 8, "" },
		{ "/opt/py/lib/libpython3.13t.so.1.0", 3, 13, "t" },
		{ "libpython3.9d.so", 3, 9, "d" },
		{ "/usr/bin/python3.11", 3, 11, "" },
		{ "/usr/local/bin/python3.12-dbg", 3, 12, "" },
		{ "python3.10d", 3, 10, "d" },
		{ "libpython3.7m.so.1.0", 3, 7, "m" },
		{ "/usr/lib/libpython2.7.so.1.0", 2, 7, "" },
	};
	static const char *const bad[] = {
		"/usr/bin/python3", "/usr/lib/libpython3.so", "/usr/bin/python", "python3.",
		"python3.x", "/usr/bin/pythonista3.11", "/usr/lib/libc.so.6", "python3.11:x",
		"python1.5", "libpython.so",
	};
	int major, minor;
	char flags[8];

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		int rc = ha_py_version_from_name(ok[i].path, &major, &minor, flags, sizeof flags);
		EXPECT(rc == 0 && major == ok[i].major && minor == ok[i].minor &&
		       strcmp(flags, ok[i].flags) == 0, "%s: rc %d, %d.%d%s", ok[i].path, rc, major,
		       minor, flags);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		EXPECT(ha_py_version_from_name(bad[i], &major, &minor, flags, sizeof flags) < 0,
		       "%s: a version found", bad[i]);
}

int main(void)
{
	table();
	debug_offsets();
	names();
	return UNIT_RESULT("the offsets table, 3.13's debug offsets, versions from names");
}
