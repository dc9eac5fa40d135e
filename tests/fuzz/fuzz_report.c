/* fuzz_report -- libFuzzer harness for heapdiff's text cleaning and
 * escaping (hd_clean_text, src/report/report_util.c; the escapers,
 * src/render/render_util.c): every name in a report comes from a database
 * the target's binaries filled (hd_clean_text first, then the escaper of
 * the output format).
 *
 * The input is a text value from the database (up to its first NUL).
 * Asserted, besides what the sanitizers check:
 *  - hd_clean_text gives valid UTF-8 with no C0 or C1 control and no DEL,
 *    at most HD_MAX_TEXT bytes and one character more;
 *  - hd_json_str of it is one valid JSON string (quoted, no raw control
 *    character or quote inside, only JSON's escapes) that decodes back to
 *    the cleaned text; hd_json_html_str the same, with no raw '<', '>' or
 *    '&' either (nothing can close the page's <script> element);
 *  - hd_xml_str of it has no raw '<', '>', '"' or '\'', every '&' starts
 *    one of the five entities, and it decodes back to the cleaned text.
 *
 * fuzz-sources: src/report/report_util.c src/render/render_util.c src/common/util.c src/common/hashtab.c
 * fuzz-libs: -lsqlite3
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "render.h"

/* The output of an escaper on s, malloc'ed, its length in *n. */
static char *escaped(void (*esc)(FILE *, const char *), const char *s, size_t *n)
{
	char *o = NULL;
	FILE *f = open_memstream(&o, n);
	if (!f)
		abort();
	esc(f, s);
	fclose(f);
	return o;
}

/* Decode the JSON string o (n bytes) into dst; 0 if it is not one. */
static int json_decode(const char *o, size_t n, int html, char *dst)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	if (n < 2 || o[0] != '"' || o[n - 1] != '"' || !fuzz_valid_utf8((const unsigned char *)o, n))
		return 0;
	for (size_t i = 1; i < n - 1; i++) {
		unsigned char c = (unsigned char)o[i];
		if (c < 0x20 || c == '"' || (html && (c == '<' || c == '>' || c == '&')))
			return 0;
		if (c != '\\') {
			*dst++ = (char)c;
			continue;
		}
		if (++i >= n - 1)
			return 0;
		const char *e = strchr(from, o[i]);
		if (e && *e) {
			*dst++ = to[e - from];
		} else if (o[i] == 'u' && i + 4 < n - 1) {
			unsigned v;
			char hex[5] = { o[i + 1], o[i + 2], o[i + 3], o[i + 4], 0 };
			if (strspn(hex, "0123456789abcdefABCDEF") != 4 || sscanf(hex, "%x", &v) != 1 ||
			    v == 0 || v >= 0x80)
				return 0; /* the escapers write \u only for ASCII */
			*dst++ = (char)v;
			i += 4;
		} else {
			return 0;
		}
	}
	*dst = '\0';
	return 1;
}

/* Decode the XML text o (n bytes) into dst; 0 if it is not safe text. */
static int xml_decode(const char *o, size_t n, char *dst)
{
	static const char *const ent[] = { "&lt;", "&gt;", "&amp;", "&quot;", "&apos;" };
	static const char chr[] = "<>&\"'";
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)o[i];
		if (c < 0x20 || strchr("<>\"'", c))
			return 0;
		if (c != '&') {
			*dst++ = (char)c;
			i++;
			continue;
		}
		size_t k = 0;
		while (k < 5 && strncmp(o + i, ent[k], strlen(ent[k])) != 0)
			k++;
		if (k == 5)
			return 0;
		*dst++ = chr[k];
		i += strlen(ent[k]);
	}
	*dst = '\0';
	return 1;
}

static void check_escaper(void (*esc)(FILE *, const char *), const char *what, int json, int html,
                          const char *clean)
{
	size_t n;
	char *o = escaped(esc, clean, &n);
	char *back = malloc(n + 1);
	if (!back)
		abort();
	int ok = json ? json_decode(o, n, html, back) : xml_decode(o, n, back);
	FUZZ_CHECK(ok, "%s: not a valid escaped string: %s", what, o);
	FUZZ_CHECK(strcmp(back, clean) == 0, "%s: does not decode back to its input", what);
	free(back);
	free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char *s = fuzz_str(d, n);
	char *c = hd_clean_text((const unsigned char *)s);
	size_t k = strlen(c);
	FUZZ_CHECK(k <= HD_MAX_TEXT + 3, "%zu bytes kept", k);
	FUZZ_CHECK(fuzz_valid_utf8((const unsigned char *)c, k), "clean text is not valid UTF-8");
	for (size_t i = 0; i < k; i++) {
		unsigned char b = (unsigned char)c[i];
		FUZZ_CHECK(b >= 0x20 && b != 0x7f, "byte %#x kept", b);
		FUZZ_CHECK(!(b == 0xc2 && i + 1 < k && (unsigned char)c[i + 1] < 0xa0),
		           "C1 control U+%04X kept", (unsigned char)c[i + 1]);
	}
	check_escaper(hd_json_str, "hd_json_str", 1, 0, c);
	check_escaper(hd_json_html_str, "hd_json_html_str", 1, 1, c);
	check_escaper(hd_xml_str, "hd_xml_str", 0, 0, c);
	free(c);
	free(s);
	return 0;
}
