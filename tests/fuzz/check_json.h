/* check_json.h -- a strict JSON checker for the harnesses of tests/fuzz
 * (RFC 8259): exactly one value (whitespace around it), strings of valid
 * UTF-8 (fuzz_valid_utf8) with no raw control character and only JSON's
 * escapes (a \u escape of a surrogate must be a high one followed by a low
 * one), numbers as the grammar spells them (no NaN, no inf, no leading +
 * or 0), objects and arrays nested at most CJ_MAX_DEPTH deep.  What Python's
 * json module and every browser accept, and a bit less. */
#ifndef HA_CHECK_JSON_H
#define HA_CHECK_JSON_H

#include <stddef.h>
#include <string.h>

#include "fuzz.h"

#define CJ_MAX_DEPTH 512

struct cj {
	const unsigned char *p, *end;
	const char *why;              /* the first error, or NULL */
};

static int cj_fail(struct cj *c, const char *why)
{
	if (!c->why)
		c->why = why;
	return 0;
}

static void cj_ws(struct cj *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static int cj_hex4(struct cj *c, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++, c->p++) {
		if (c->p >= c->end)
			return cj_fail(c, "\\u escape cut short");
		unsigned d = *c->p;
		d = d >= '0' && d <= '9' ? d - '0' : d >= 'a' && d <= 'f' ? d - 'a' + 10
		  : d >= 'A' && d <= 'F' ? d - 'A' + 10 : 16;
		if (d == 16)
			return cj_fail(c, "a \\u escape that is not 4 hex digits");
		*v = *v << 4 | d;
	}
	return 1;
}

static int cj_string(struct cj *c)
{
	const unsigned char *start = ++c->p;  /* past the quote */
	while (c->p < c->end && *c->p != '"') {
		unsigned char ch = *c->p;
		if (ch < 0x20)
			return cj_fail(c, "a raw control character in a string");
		if (ch != '\\') {
			c->p++;
			continue;
		}
		if (++c->p >= c->end)
			return cj_fail(c, "a string ends in a backslash");
		ch = *c->p++;
		if (ch == 'u') {
			unsigned v, w;
			if (!cj_hex4(c, &v))
				return 0;
			if (v >= 0xdc00 && v <= 0xdfff)
				return cj_fail(c, "a lone low surrogate escape");
			if (v >= 0xd800 && v <= 0xdbff) {
				if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
					return cj_fail(c, "a lone high surrogate escape");
				c->p += 2;
				if (!cj_hex4(c, &w))
					return 0;
				if (w < 0xdc00 || w > 0xdfff)
					return cj_fail(c, "a high surrogate escape without its low one");
			}
		} else if (!strchr("\"\\/bfnrt", ch) || ch == '\0') {
			return cj_fail(c, "an escape JSON does not have");
		}
	}
	if (c->p >= c->end)
		return cj_fail(c, "an unterminated string");
	if (!fuzz_valid_utf8(start, (size_t)(c->p - start)))
		return cj_fail(c, "a string that is not UTF-8");
	c->p++;
	return 1;
}

static int cj_digits(struct cj *c)
{
	const unsigned char *s = c->p;
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
	return c->p > s;
}

static int cj_number(struct cj *c)
{
	if (c->p < c->end && *c->p == '-')
		c->p++;
	if (c->p < c->end && *c->p == '0')
		c->p++;
	else if (!cj_digits(c))
		return cj_fail(c, "not a number (nan, inf, a stray character?)");
	if (c->p < c->end && *c->p == '.') {
		c->p++;
		if (!cj_digits(c))
			return cj_fail(c, "no digit after a decimal point");
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (!cj_digits(c))
			return cj_fail(c, "no digit in an exponent");
	}
	return 1;
}

static int cj_word(struct cj *c, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0)
		return cj_fail(c, "not a JSON value");
	c->p += n;
	return 1;
}

static int cj_value(struct cj *c, int depth)
{
	cj_ws(c);
	if (c->p >= c->end)
		return cj_fail(c, "a value is missing");
	unsigned char ch = *c->p;
	if (ch == '"')
		return cj_string(c);
	if (ch == 't')
		return cj_word(c, "true");
	if (ch == 'f')
		return cj_word(c, "false");
	if (ch == 'n')
		return cj_word(c, "null");
	if (ch != '{' && ch != '[')
		return cj_number(c);
	if (depth >= CJ_MAX_DEPTH)
		return cj_fail(c, "nested too deep");
	unsigned char close = ch == '{' ? '}' : ']';
	c->p++;
	cj_ws(c);
	if (c->p < c->end && *c->p == close) {
		c->p++;
		return 1;
	}
	for (;;) {
		if (close == '}') {
			cj_ws(c);
			if (c->p >= c->end || *c->p != '"')
				return cj_fail(c, "an object key that is not a string");
			if (!cj_string(c))
				return 0;
			cj_ws(c);
			if (c->p >= c->end || *c->p != ':')
				return cj_fail(c, "no ':' after an object key");
			c->p++;
		}
		if (!cj_value(c, depth + 1))
			return 0;
		cj_ws(c);
		if (c->p < c->end && *c->p == ',') {
			c->p++;
			continue;
		}
		if (c->p < c->end && *c->p == close) {
			c->p++;
			return 1;
		}
		return cj_fail(c, close == '}' ? "no ',' or '}' in an object" : "no ',' or ']' in an array");
	}
}

/* Is s (n bytes) one JSON document?  NULL if so, else why not, with the
 * offset of the error in *at. */
static inline const char *check_json(const char *s, size_t n, size_t *at)
{
	struct cj c = { (const unsigned char *)s, (const unsigned char *)s + n, NULL };
	if (cj_value(&c, 0)) {
		cj_ws(&c);
		if (c.p != c.end)
			cj_fail(&c, "more after the value");
	}
	*at = (size_t)(c.p - (const unsigned char *)s);
	return c.why;
}

#endif
