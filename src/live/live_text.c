/* live_text.c -- text for the live view's terminal (see live_text.h).
 *
 * Names come from the target's binaries and may hold anything: an escape
 * sequence in a function name would otherwise reach the terminal and be
 * obeyed.  ha_text_clean decodes UTF-8 itself (strictly: no overlong
 * forms, no surrogates) rather than trusting mbrtowc's idea of the bytes,
 * and lets through only what wcwidth says takes one or two columns. */
#define _GNU_SOURCE
#include "live_text.h"

#include <math.h>
#include <stdio.h>

/* One UTF-8 sequence at p: its length, and its code point in *cp (HA_UTF8_BAD
 * for a byte that does not start a valid, shortest sequence). */
int ha_utf8_decode(const unsigned char *p, uint32_t *cp)
{
	unsigned c = p[0];
	int n;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf)
		n = 1, v = c & 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 2, v = c & 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 3, v = c & 0x07, min = 0x10000;
	else {
		*cp = HA_UTF8_BAD;
		return 1;
	}
	for (int i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80) { /* the terminating NUL stops here too */
			*cp = HA_UTF8_BAD;
			return 1;
		}
		v = v << 6 | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
		*cp = HA_UTF8_BAD;
		return 1;
	}
	*cp = v;
	return n + 1;
}

int ha_utf8_encode(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The columns a cleaned character takes. */
static int cell_width(wchar_t c)
{
	return c < 0x80 ? 1 : wcwidth(c);
}

/* The cells of s for at most w (>= 1) columns, NUL-terminated in out[w+1]:
 * printable characters as they are (non-ASCII ones only in a UTF-8 locale),
 * anything else as '?'; a string longer than w ends with a marker.
 * Returns the count of cells, the columns they take in *cols. */
int ha_text_clean(const char *s, int utf8, wchar_t *out, int w, int *cols)
{
	const unsigned char *p = (const unsigned char *)s;
	int n = 0, used = 0;
	while (*p) {
		uint32_t cp;
		int len = ha_utf8_decode(p, &cp), cw = 1;
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) || cp == HA_UTF8_BAD)
			cp = '?';
		else if (cp >= 0x80) {
			cw = utf8 ? wcwidth((wchar_t)cp) : 0;
			if (cw <= 0)
				cp = '?', cw = 1;
		}
		if (used + cw > w)
			break;
		out[n++] = (wchar_t)cp;
		used += cw;
		p += len;
	}
	if (*p) {
		while (n > 0 && used + 1 > w)
			used -= cell_width(out[--n]);
		out[n++] = utf8 ? L'\x2026' : L'~';
		used++;
	}
	out[n] = 0;
	*cols = used;
	return n;
}

void ha_fmt_bytes(char *b, size_t n, double x, int sign)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	if (!isfinite(x)) {
		snprintf(b, n, "?");
		return;
	}
	const char *s = sign && x > 0.5 ? "+" : x < -0.5 ? "-" : "";
	double a = x < 0 ? -x : x;
	int u = 0;
	while (a >= 1023.5 && u < 5)
		a /= 1024, u++;
	if (u == 0)
		snprintf(b, n, "%s%.0f B", s, a);
	else
		snprintf(b, n, a < 9.995 ? "%s%.2f %s" : a < 99.95 ? "%s%.1f %s" : "%s%.0f %s", s, a, unit[u]);
}

void ha_fmt_count(char *b, size_t n, double x, int sign)
{
	if (!isfinite(x)) {
		snprintf(b, n, "?");
		return;
	}
	const char *s = sign && x > 0.5 ? "+" : x < -0.5 ? "-" : "";
	double a = x < 0 ? -x : x;
	if (a < 9999.5)
		snprintf(b, n, "%s%.0f", s, a);
	else if (a < 999.95e3)
		snprintf(b, n, "%s%.1fk", s, a / 1e3);
	else if (a < 999.95e6)
		snprintf(b, n, "%s%.1fM", s, a / 1e6);
	else
		snprintf(b, n, "%s%.1fG", s, a / 1e9);
}

void ha_fmt_age(char *b, size_t n, double s)
{
	long t = s > 0 ? (s < 1e9 ? (long)s : 999999999L) : 0; /* NaN: 0 */
	if (t < 60)
		snprintf(b, n, "%lds", t);
	else if (t < 3600)
		snprintf(b, n, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(b, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
}

/* A sparkline of the n values (oldest first) in w columns: the whole
 * session, each column the highest value of its share, scaled from the
 * lowest to the highest. */
void ha_sparkline(const double *x, size_t n, int w, int utf8, char *out, size_t len)
{
	static const char *blocks[] = { "\u2581", "\u2582", "\u2583", "\u2584",
	                                "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = "_.-=#";
	int levels = utf8 ? 8 : 5;
	double col[HA_TEXT_MAX_W];
	size_t o = 0;
	out[0] = 0;
	if (!x || n == 0 || w <= 0 || len < 2)
		return;
	if (w > HA_TEXT_MAX_W)
		w = HA_TEXT_MAX_W;
	int cols = n < (size_t)w ? (int)n : w;
	double lo = 0, hi = 0;
	for (int c = 0; c < cols; c++) {
		size_t a = (size_t)c * n / cols, b = (size_t)(c + 1) * n / cols;
		double m = x[a];
		for (size_t i = a + 1; i < b; i++)
			if (x[i] > m)
				m = x[i];
		col[c] = m;
		if (c == 0 || m < lo)
			lo = m;
		if (c == 0 || m > hi)
			hi = m;
	}
	for (int c = 0; c < cols && o + 5 < len; c++) {
		double f = hi > lo ? (col[c] - lo) / (hi - lo) : 0;
		int k = f > 0 ? (f < 1 ? (int)(f * (levels - 1) + 0.5) : levels - 1) : 0; /* NaN: 0 */
		if (utf8)
			o += (size_t)snprintf(out + o, len - o, "%s", blocks[k]);
		else
			out[o++] = ascii[k];
	}
	out[o] = 0;
}
