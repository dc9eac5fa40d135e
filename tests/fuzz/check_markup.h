/* check_markup.h -- checkers of heapdiff's markup for the harnesses of
 * tests/fuzz:
 *
 *  - check_xml: a well-formed XML document (what an XML parser such as
 *    Python's accepts): UTF-8 without control characters but tab, newline
 *    and carriage return; an optional declaration, comments, processing
 *    instructions, a DOCTYPE; one root element; tags that nest and match,
 *    attributes quoted and not repeated in a tag; no raw '<' in text or in
 *    an attribute; every '&' one of the five entities or a character
 *    reference; CDATA sections; names in ASCII (heapdiff writes no other).
 *
 *  - check_html: heapdiff's HTML page, where every name is either text of
 *    an element (the <title>), escaped as in XML, or a string of the JSON
 *    in <script type="application/json" id="hd-data">: UTF-8 without
 *    control characters; outside <script> and <style>, every '<' opens a
 *    tag (attributes quoted, or without a value), a closing tag, a
 *    comment or the DOCTYPE, and every '&' is an entity or a character
 *    reference; a <script> or <style> ends at its own end tag; the JSON
 *    is valid (check_json).  The sequence of tags is written
 *    out (names, "/name" for end tags, one space apart) for the caller to
 *    compare with a clean page's: a name that slipped into the markup adds
 *    a tag, or ends an element early. */
#ifndef HA_CHECK_MARKUP_H
#define HA_CHECK_MARKUP_H

#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "check_json.h"
#include "fuzz.h"

#define CM_MAX_DEPTH 4096

struct cm {
	const char *s, *p, *end;
	const char *why;
	int html;                     /* attributes without a value allowed */
};

static int cm_fail(struct cm *c, const char *why)
{
	if (!c->why)
		c->why = why;
	return 0;
}

static int cm_starts(const struct cm *c, const char *w)
{
	size_t n = strlen(w);
	return (size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0;
}

static int cm_name_start(char ch)
{
	return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_' || ch == ':';
}

static int cm_name_char(char ch)
{
	return cm_name_start(ch) || (ch >= '0' && ch <= '9') || ch == '-' || ch == '.';
}

/* A name at p: its length (0: none). */
static size_t cm_name(struct cm *c)
{
	const char *s = c->p;
	if (c->p >= c->end || !cm_name_start(*c->p))
		return 0;
	while (c->p < c->end && cm_name_char(*c->p))
		c->p++;
	return (size_t)(c->p - s);
}

static int cm_is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static void cm_ws(struct cm *c)
{
	while (c->p < c->end && cm_is_space(*c->p))
		c->p++;
}

/* Every byte: UTF-8, and no control character but tab, LF, CR. */
static int cm_chars(struct cm *c)
{
	if (!fuzz_valid_utf8((const unsigned char *)c->s, (size_t)(c->end - c->s)))
		return cm_fail(c, "not UTF-8");
	for (const char *q = c->s; q < c->end; q++) {
		unsigned char ch = (unsigned char)*q;
		if ((ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') || ch == 0x7f) {
			c->p = q;
			return cm_fail(c, "a control character");
		}
	}
	return 1;
}

/* A reference at p ('&'): one of the five entities or &#N; / &#xH;. */
static int cm_ref(struct cm *c)
{
	static const char *const ents[] = { "&lt;", "&gt;", "&amp;", "&quot;", "&apos;" };
	for (size_t i = 0; i < sizeof ents / sizeof ents[0]; i++)
		if (cm_starts(c, ents[i])) {
			c->p += strlen(ents[i]);
			return 1;
		}
	if (!cm_starts(c, "&#"))
		return cm_fail(c, "a raw '&'");
	c->p += 2;
	int hex = c->p < c->end && *c->p == 'x';
	c->p += hex;
	unsigned long v = 0;
	int digits = 0;
	for (; c->p < c->end && *c->p != ';'; c->p++, digits++) {
		char ch = *c->p;
		int d = ch >= '0' && ch <= '9' ? ch - '0'
		      : hex && ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		      : hex && ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
		if (d < 0 || digits > 8)
			return cm_fail(c, "a bad character reference");
		v = v * (hex ? 16 : 10) + (unsigned long)d;
	}
	if (c->p >= c->end || digits == 0 || v == 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) ||
	    (v < 0x20 && v != 9 && v != 10 && v != 13))
		return cm_fail(c, "a bad character reference");
	c->p++;
	return 1;
}

/* Skip to just past the string w; 0 if it never comes. */
static int cm_past(struct cm *c, const char *w)
{
	size_t n = strlen(w);
	for (; (size_t)(c->end - c->p) >= n; c->p++)
		if (memcmp(c->p, w, n) == 0) {
			c->p += n;
			return 1;
		}
	return 0;
}

/* The attributes of a start tag, up to its '>' or "/>"; *empty for "/>". */
static int cm_attrs(struct cm *c, int *empty)
{
	const char *names[32];
	size_t lens[32], n = 0;
	for (;;) {
		int sp = c->p < c->end && cm_is_space(*c->p);
		cm_ws(c);
		if (cm_starts(c, "/>")) {
			c->p += 2;
			*empty = 1;
			return 1;
		}
		if (cm_starts(c, ">")) {
			c->p++;
			*empty = 0;
			return 1;
		}
		const char *nm = c->p;
		size_t len = cm_name(c);
		if (!len || !sp)
			return cm_fail(c, "a bad attribute");
		for (size_t i = 0; i < n; i++)
			if (lens[i] == len && memcmp(names[i], nm, len) == 0)
				return cm_fail(c, "an attribute repeated");
		if (n < 32) {
			names[n] = nm;
			lens[n++] = len;
		}
		cm_ws(c);
		if (c->html && (c->p >= c->end || *c->p != '='))
			continue;     /* <pre hidden> */
		if (c->p >= c->end || *c->p != '=')
			return cm_fail(c, "an attribute without a value");
		c->p++;
		cm_ws(c);
		if (c->p >= c->end || (*c->p != '"' && *c->p != '\''))
			return cm_fail(c, "an unquoted attribute");
		char q = *c->p++;
		while (c->p < c->end && *c->p != q) {
			if (*c->p == '<')
				return cm_fail(c, "a raw '<' in an attribute");
			if (*c->p == '&') {
				if (!cm_ref(c))
					return 0;
			} else {
				c->p++;
			}
		}
		if (c->p >= c->end)
			return cm_fail(c, "an unterminated attribute");
		c->p++;
	}
}

/* Comments, processing instructions and white space between elements. */
static int cm_misc(struct cm *c)
{
	for (;;) {
		cm_ws(c);
		if (cm_starts(c, "<!--")) {
			c->p += 4;
			if (!cm_past(c, "-->"))
				return cm_fail(c, "an unterminated comment");
		} else if (cm_starts(c, "<?")) {
			if (!cm_past(c, "?>"))
				return cm_fail(c, "an unterminated processing instruction");
		} else {
			return 1;
		}
	}
}

static inline const char *check_xml(const char *s, size_t n, size_t *at)
{
	struct cm c = { s, s, s + n, NULL, 0 };
	const char *open[CM_MAX_DEPTH];
	size_t olen[CM_MAX_DEPTH];
	int depth = 0, seen_root = 0;

	if (!cm_chars(&c))
		goto out;
	if (cm_starts(&c, "<?xml") && !cm_past(&c, "?>")) {
		cm_fail(&c, "an unterminated declaration");
		goto out;
	}
	if (!cm_misc(&c))
		goto out;
	if (cm_starts(&c, "<!DOCTYPE") && (!cm_past(&c, ">") || !cm_misc(&c)))
		goto out;
	for (;;) {
		if (depth == 0) {
			if (!cm_misc(&c))
				goto out;
			if (c.p >= c.end)
				break;
			if (seen_root) {
				cm_fail(&c, "more after the root element");
				goto out;
			}
		}
		if (c.p >= c.end) {
			cm_fail(&c, "an element is not closed");
			goto out;
		}
		if (*c.p == '&') {
			if (!cm_ref(&c))
				goto out;
			continue;
		}
		if (*c.p != '<') {
			if (depth == 0) {
				cm_fail(&c, "text outside the root element");
				goto out;
			}
			if (cm_starts(&c, "]]>")) {
				cm_fail(&c, "']]>' in text");
				goto out;
			}
			c.p++;
			continue;
		}
		if (cm_starts(&c, "<!--")) {
			c.p += 4;
			if (!cm_past(&c, "-->")) {
				cm_fail(&c, "an unterminated comment");
				goto out;
			}
		} else if (cm_starts(&c, "<![CDATA[")) {
			if (depth == 0 || !cm_past(&c, "]]>")) {
				cm_fail(&c, "a bad CDATA section");
				goto out;
			}
		} else if (cm_starts(&c, "<?")) {
			if (!cm_past(&c, "?>")) {
				cm_fail(&c, "an unterminated processing instruction");
				goto out;
			}
		} else if (cm_starts(&c, "</")) {
			c.p += 2;
			const char *nm = c.p;
			size_t len = cm_name(&c);
			cm_ws(&c);
			if (!len || c.p >= c.end || *c.p != '>' || depth == 0 ||
			    olen[depth - 1] != len || memcmp(open[depth - 1], nm, len) != 0) {
				cm_fail(&c, "an end tag that does not match");
				goto out;
			}
			c.p++;
			depth--;
		} else {
			c.p++;
			const char *nm = c.p;
			size_t len = cm_name(&c);
			int empty;
			if (!len) {
				cm_fail(&c, "a raw '<' in text");
				goto out;
			}
			if (!cm_attrs(&c, &empty))
				goto out;
			seen_root = 1;
			if (!empty) {
				if (depth == CM_MAX_DEPTH) {
					cm_fail(&c, "nested too deep");
					goto out;
				}
				open[depth] = nm;
				olen[depth++] = len;
			}
		}
	}
	if (!seen_root)
		cm_fail(&c, "no root element");
out:
	*at = (size_t)(c.p - s);
	return c.why;
}

static void cm_tag_out(char *tags, size_t cap, size_t *k, int end, const char *nm, size_t len)
{
	int w = snprintf(tags + *k, cap > *k ? cap - *k : 0, "%s%s%.*s", *k ? " " : "",
	                 end ? "/" : "", (int)len, nm);
	if (w > 0)
		*k = *k + (size_t)w < cap ? *k + (size_t)w : cap;
}

static inline const char *check_html(const char *s, size_t n, char *tags, size_t cap, size_t *at)
{
	struct cm c = { s, s, s + n, NULL, 1 };
	size_t k = 0;
	tags[0] = '\0';
	if (!cm_chars(&c))
		goto out;
	while (c.p < c.end) {
		if (*c.p == '&') {
			if (!cm_ref(&c))
				goto out;
			continue;
		}
		if (*c.p != '<') {
			c.p++;
			continue;
		}
		if (cm_starts(&c, "<!--")) {
			c.p += 4;
			if (!cm_past(&c, "-->")) {
				cm_fail(&c, "an unterminated comment");
				goto out;
			}
			continue;
		}
		if (cm_starts(&c, "<!DOCTYPE")) {
			if (!cm_past(&c, ">")) {
				cm_fail(&c, "an unterminated DOCTYPE");
				goto out;
			}
			cm_tag_out(tags, cap, &k, 0, "!DOCTYPE", 8);
			continue;
		}
		int end = cm_starts(&c, "</");
		c.p += end ? 2 : 1;
		const char *nm = c.p, *tag = c.p - 1 - end;
		size_t len = cm_name(&c);
		int empty = 0;
		if (!len) {
			cm_fail(&c, "a raw '<' in text");
			goto out;
		}
		if (end) {
			cm_ws(&c);
			if (c.p >= c.end || *c.p != '>') {
				cm_fail(&c, "a bad end tag");
				goto out;
			}
			c.p++;
		} else if (!cm_attrs(&c, &empty)) {
			goto out;
		}
		cm_tag_out(tags, cap, &k, end, nm, len);
		int script = len == 6 && strncasecmp(nm, "script", 6) == 0;
		int style = len == 5 && strncasecmp(nm, "style", 5) == 0;
		if (end || empty || (!script && !style))
			continue;
		/* Raw text up to its own end tag, which nothing inside may spell. */
		const char *body = c.p, *close = NULL;
		for (const char *q = c.p; q + 2 + len <= c.end; q++)
			if (q[0] == '<' && q[1] == '/' && strncasecmp(q + 2, nm, len) == 0) {
				close = q;
				break;
			}
		if (!close) {
			cm_fail(&c, "a script or style element that does not end");
			goto out;
		}
		if (script && memmem(tag, (size_t)(body - tag), "id=\"hd-data\"", 12)) {
			size_t jat;
			const char *why = check_json(body, (size_t)(close - body), &jat);
			if (why) {
				c.p = body + jat;
				cm_fail(&c, why);
				goto out;
			}
		}
		c.p = close;
	}
out:
	*at = (size_t)(c.p - s);
	return c.why;
}

#endif
