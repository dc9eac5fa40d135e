/* check_text.h -- checkers of heapdiff's terminal text for the harnesses
 * of tests/fuzz: what reaches a terminal (a report, an error line) must
 * not be able to drive it.
 *
 *  - check_text: valid UTF-8 (fuzz_valid_utf8), no C0 control but the
 *    newline (ESC starts every terminal sequence), no DEL, no C1 control
 *    (U+0080..U+009F: U+009B is CSI to some terminals); with one_line, no
 *    newline either;
 *  - check_folded: check_text, and every line "FRAMES COUNT": the count a
 *    positive integer after the last space (what flamegraph.pl reads). */
#ifndef HA_CHECK_TEXT_H
#define HA_CHECK_TEXT_H

#include <stddef.h>
#include <string.h>

#include "fuzz.h"

static inline const char *check_text(const char *s, size_t n, int one_line, size_t *at)
{
	const unsigned char *u = (const unsigned char *)s;
	*at = 0;
	if (!fuzz_valid_utf8(u, n))
		return "not UTF-8";
	for (size_t i = 0; i < n; i++) {
		*at = i;
		if (u[i] == '\n' && !one_line)
			continue;
		if (u[i] < 0x20 || u[i] == 0x7f)
			return "a control character";
		if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
			return "a C1 control character";
	}
	return NULL;
}

static inline const char *check_folded(const char *s, size_t n, size_t *at)
{
	const char *why = check_text(s, n, 0, at);
	if (why)
		return why;
	for (const char *line = s; line < s + n;) {
		const char *nl = memchr(line, '\n', (size_t)(s + n - line));
		*at = (size_t)(line - s);
		if (!nl)
			return "a last line without its newline";
		const char *sp = nl;
		while (sp > line && sp[-1] != ' ')
			sp--;
		if (sp == line || sp == nl || sp - 1 == line)
			return "a line without frames and a count";
		for (const char *d = sp; d < nl; d++)
			if (*d < '0' || *d > '9')
				return "a count that is not a positive integer";
		if (*sp == '0')
			return "a count that is not a positive integer";
		line = nl + 1;
	}
	return NULL;
}

#endif
