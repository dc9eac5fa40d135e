/* fuzz_live_text -- libFuzzer harness for ha_text_clean and the UTF-8
 * codec of src/live/live_text.c: names from the target's binaries made
 * safe for the live view's terminal (an escape sequence in a function name
 * must never reach it).
 *
 * Input: a flags byte (bit 0: a UTF-8 terminal), two bytes of width
 * (1 .. HA_TEXT_MAX_W), then the string (up to its first NUL).  The locale
 * is C.UTF-8, as the live view's.  Asserted, besides what the sanitizers
 * check:
 *  - at most w cells, NUL-terminated, taking cols <= w columns, cols being
 *    the sum of the cells' widths (wcwidth; 1 for ASCII);
 *  - no cell is a C0 control, DEL, a C1 control, a surrogate or beyond
 *    U+10FFFF, nor anything but ASCII without utf8;
 *  - the cells written out with ha_utf8_encode are valid, shortest-form
 *    UTF-8 (checked here by a decoder of its own) with no byte < 0x20 and
 *    no 0x7f;
 *  - ha_utf8_decode of the input's first sequence takes 1 to 4 bytes and,
 *    unless it says HA_UTF8_BAD, encodes back to the same bytes.
 *
 * fuzz-sources: src/live/live_text.c
 */
#define _GNU_SOURCE
#include <locale.h>
#include <wchar.h>

#include "fuzz.h"
#include "live_text.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (!setlocale(LC_ALL, "C.UTF-8"))
		abort();
	return 0;
}

static void check_clean(const char *in, int utf8, int w)
{
	wchar_t cells[HA_TEXT_MAX_W + 1];
	unsigned char text[4 * HA_TEXT_MAX_W + 1];
	int cols = -1, n = ha_text_clean(in, utf8, cells, w, &cols), sum = 0;
	size_t k = 0;
	FUZZ_CHECK(n >= 0 && n <= w && cells[n] == 0, "%d cells for width %d", n, w);
	for (int i = 0; i < n; i++) {
		uint32_t c = (uint32_t)cells[i];
		FUZZ_CHECK(c >= 0x20 && c != 0x7f && !(c >= 0x80 && c < 0xa0), "control %#x", c);
		FUZZ_CHECK(c < 0x110000 && !(c >= 0xd800 && c <= 0xdfff), "not a character: %#x", c);
		FUZZ_CHECK(utf8 || c < 0x80, "non-ASCII %#x without utf8", c);
		int cw = c < 0x80 ? 1 : wcwidth((wchar_t)c);
		FUZZ_CHECK(cw == 1 || cw == 2, "cell %#x takes %d columns", c, cw);
		sum += cw;
		k += (size_t)ha_utf8_encode(c, (char *)text + k);
	}
	FUZZ_CHECK(cols == sum && cols <= w, "cols %d, cells take %d, width %d", cols, sum, w);
	FUZZ_CHECK(fuzz_valid_utf8(text, k), "invalid UTF-8 out");
	for (size_t i = 0; i < k; i++)
		FUZZ_CHECK(text[i] >= 0x20 && text[i] != 0x7f, "byte %#x out", text[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n < 3)
		return 0;
	int utf8 = d[0] & 1;
	int w = 1 + (int)((d[1] | (unsigned)d[2] << 8) % HA_TEXT_MAX_W);
	char *s = fuzz_str(d + 3, n - 3);

	check_clean(s, utf8, w);

	uint32_t cp;
	char back[4];
	int len = ha_utf8_decode((const unsigned char *)s, &cp);
	FUZZ_CHECK(len >= 1 && len <= 4, "decode took %d bytes", len);
	if (cp != HA_UTF8_BAD)
		FUZZ_CHECK(ha_utf8_encode(cp, back) == len && memcmp(back, s, (size_t)len) == 0,
		           "%#x does not encode back to its bytes", cp);
	free(s);
	return 0;
}
