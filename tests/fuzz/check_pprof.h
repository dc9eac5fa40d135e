/* check_pprof.h -- a checker of heapdiff --format pprof for the harnesses
 * of tests/fuzz: what Go's pprof (github.com/google/pprof/profile: its
 * decoder and CheckValid) needs of a file.
 *
 *  - one gzip stream (zlib), and nothing after it;
 *  - a well-formed profile.proto message: every field's wire type the one
 *    its number has, every length inside its message, packed and unpacked
 *    repeated numbers alike;
 *  - string_table[0] is "", every string valid UTF-8 (heapdiff's are
 *    cleaned), every string index (types, units, names, files, labels,
 *    comments, the default sample type) inside the table;
 *  - every sample has one value per sample type; location, function and
 *    mapping ids are non-zero and unique; every id a sample, location or
 *    line refers to exists. */
#ifndef HA_CHECK_PPROF_H
#define HA_CHECK_PPROF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fuzz.h"

struct cp_vec {
	uint64_t *v;
	size_t n, cap;
};

static void cp_push(struct cp_vec *a, uint64_t x)
{
	if (a->n == a->cap) {
		a->cap = a->cap ? a->cap * 2 : 64;
		a->v = realloc(a->v, a->cap * sizeof *a->v);
		if (!a->v)
			abort();
	}
	a->v[a->n++] = x;
}

struct cp {
	const uint8_t *p, *end;
	const char *why;
	size_t nstrings, ntypes;
	int first_string_empty;
	struct cp_vec strs;           /* string indexes used */
	struct cp_vec loc_ids, fn_ids, map_ids;
	struct cp_vec loc_refs, fn_refs, map_refs;
};

static int cp_fail(struct cp *c, const char *why)
{
	if (!c->why)
		c->why = why;
	return 0;
}

static int cp_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int sh = 0; sh < 64; sh += 7) {
		if (*p >= end)
			return 0;
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << sh;
		if (!(b & 0x80))
			return 1;
	}
	return 0;
}

/* One field of a message [p, end): its number, wire type, and its varint
 * value or its bytes. */
struct cp_field {
	unsigned num, wire;
	uint64_t v;
	const uint8_t *b;
	size_t len;
};

static int cp_next(struct cp *c, const uint8_t **p, const uint8_t *end, struct cp_field *f)
{
	uint64_t key;
	if (!cp_varint(p, end, &key))
		return cp_fail(c, "a bad field key");
	f->num = (unsigned)(key >> 3);
	f->wire = (unsigned)(key & 7);
	if (f->num == 0)
		return cp_fail(c, "field number 0");
	if (f->wire == 0)
		return cp_varint(p, end, &f->v) ? 1 : cp_fail(c, "a bad varint");
	if (f->wire == 2) {
		uint64_t len;
		if (!cp_varint(p, end, &len) || len > (uint64_t)(end - *p))
			return cp_fail(c, "a length past the end of its message");
		f->b = *p;
		f->len = (size_t)len;
		*p += len;
		return 1;
	}
	return cp_fail(c, "a wire type profile.proto does not use");
}

/* The numbers of a repeated number field, packed or not, into a. */
static int cp_numbers(struct cp *c, const struct cp_field *f, struct cp_vec *a, size_t *count)
{
	if (f->wire == 0) {
		if (a)
			cp_push(a, f->v);
		(*count)++;
		return 1;
	}
	for (const uint8_t *q = f->b; q < f->b + f->len;) {
		uint64_t v;
		if (!cp_varint(&q, f->b + f->len, &v))
			return cp_fail(c, "a bad packed number");
		if (a)
			cp_push(a, v);
		(*count)++;
	}
	return 1;
}

static int cp_scalar(struct cp *c, const struct cp_field *f)
{
	return f->wire == 0 ? 1 : cp_fail(c, "a length-delimited field where a number belongs");
}

/* Each field g of the message field f (its bytes), through body. */
#define CP_EACH(c, f, g, body)                                                   \
	do {                                                                     \
		if ((f)->wire != 2)                                              \
			return cp_fail(c, "a number where a message belongs");  \
		const uint8_t *q_ = (f)->b, *e_ = (f)->b + (f)->len;             \
		struct cp_field g;                                               \
		while (q_ < e_) {                                                \
			if (!cp_next(c, &q_, e_, &g))                            \
				return 0;                                        \
			body                                                     \
		}                                                                \
	} while (0)

static int cp_value_type(struct cp *c, const struct cp_field *f)
{
	CP_EACH(c, f, g, {
		if (g.num == 1 || g.num == 2) {
			if (!cp_scalar(c, &g))
				return 0;
			cp_push(&c->strs, g.v);
		}
	});
	return 1;
}

static int cp_sample(struct cp *c, const struct cp_field *f)
{
	size_t nloc = 0, nval = 0;
	CP_EACH(c, f, g, {
		if (g.num == 1 && !cp_numbers(c, &g, &c->loc_refs, &nloc))
			return 0;
		if (g.num == 2 && !cp_numbers(c, &g, NULL, &nval))
			return 0;
		if (g.num == 3)
			CP_EACH(c, &g, l, {
				if (!cp_scalar(c, &l))
					return 0;
				if (l.num == 1 || l.num == 2 || l.num == 4)
					cp_push(&c->strs, l.v);
			});
	});
	if (nval != c->ntypes)
		return cp_fail(c, "a sample whose values are not one per sample type");
	return 1;
}

static int cp_mapping(struct cp *c, const struct cp_field *f)
{
	uint64_t id = 0;
	CP_EACH(c, f, g, {
		if (!cp_scalar(c, &g))
			return 0;
		if (g.num == 1)
			id = g.v;
		if (g.num == 5 || g.num == 6)
			cp_push(&c->strs, g.v);
	});
	cp_push(&c->map_ids, id);
	return 1;
}

static int cp_location(struct cp *c, const struct cp_field *f)
{
	uint64_t id = 0;
	CP_EACH(c, f, g, {
		if (g.num == 4) {
			CP_EACH(c, &g, l, {
				if (!cp_scalar(c, &l))
					return 0;
				if (l.num == 1)
					cp_push(&c->fn_refs, l.v);
			});
			continue;
		}
		if (!cp_scalar(c, &g))
			return 0;
		if (g.num == 1)
			id = g.v;
		if (g.num == 2 && g.v)
			cp_push(&c->map_refs, g.v);
	});
	cp_push(&c->loc_ids, id);
	return 1;
}

static int cp_function(struct cp *c, const struct cp_field *f)
{
	uint64_t id = 0;
	CP_EACH(c, f, g, {
		if (!cp_scalar(c, &g))
			return 0;
		if (g.num == 1)
			id = g.v;
		if (g.num >= 2 && g.num <= 4)
			cp_push(&c->strs, g.v);
	});
	cp_push(&c->fn_ids, id);
	return 1;
}

static int cp_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The ids of a, sorted: non-zero and unique?  And every ref of r among them? */
static int cp_ids(struct cp *c, struct cp_vec *a, const struct cp_vec *r, const char *what)
{
	if (a->n)
		qsort(a->v, a->n, sizeof *a->v, cp_cmp);
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i] == 0 || (i && a->v[i] == a->v[i - 1]))
			return cp_fail(c, what);
	for (size_t i = 0; i < r->n; i++)
		if (!a->n || !bsearch(&r->v[i], a->v, a->n, sizeof *a->v, cp_cmp))
			return cp_fail(c, "a reference to an id that does not exist");
	return 1;
}

static int cp_profile(struct cp *c)
{
	/* Two passes: the sample types first (a sample's values are counted
	 * against them wherever they come). */
	for (int pass = 0; pass < 2; pass++) {
		const uint8_t *p = c->p;
		struct cp_field f;
		while (p < c->end) {
			if (!cp_next(c, &p, c->end, &f))
				return 0;
			if (pass == 0) {
				if (f.num == 1)
					c->ntypes++;
				continue;
			}
			int ok = 1;
			switch (f.num) {
			case 1: case 11: ok = cp_value_type(c, &f); break;
			case 2: ok = cp_sample(c, &f); break;
			case 3: ok = cp_mapping(c, &f); break;
			case 4: ok = cp_location(c, &f); break;
			case 5: ok = cp_function(c, &f); break;
			case 6:
				if (f.wire != 2)
					return cp_fail(c, "a string that is not length-delimited");
				if (!fuzz_valid_utf8(f.b, f.len))
					return cp_fail(c, "a string that is not UTF-8");
				if (c->nstrings++ == 0)
					c->first_string_empty = f.len == 0;
				break;
			case 7: case 8: case 14:
				ok = cp_scalar(c, &f);
				cp_push(&c->strs, f.v);
				break;
			case 13: {
				size_t k = 0;
				ok = cp_numbers(c, &f, &c->strs, &k);
				break;
			}
			default:
				break;
			}
			if (!ok)
				return 0;
		}
	}
	if (!c->nstrings || !c->first_string_empty)
		return cp_fail(c, "string_table[0] is not \"\"");
	for (size_t i = 0; i < c->strs.n; i++)
		if (c->strs.v[i] >= c->nstrings)
			return cp_fail(c, "a string index past the string table");
	return cp_ids(c, &c->loc_ids, &c->loc_refs, "a location id 0 or repeated") &&
	       cp_ids(c, &c->fn_ids, &c->fn_refs, "a function id 0 or repeated") &&
	       cp_ids(c, &c->map_ids, &c->map_refs, "a mapping id 0 or repeated");
}

/* Is gz (n bytes) a profile Go's pprof reads?  NULL if so, else why not. */
static inline const char *check_pprof(const void *gz, size_t n)
{
	z_stream z;
	uint8_t *out = NULL;
	size_t len = 0, cap = 0;
	int rc;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, 15 + 16) != Z_OK)
		abort();
	z.next_in = (Bytef *)gz;
	z.avail_in = (uInt)n;
	do {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			if (!(out = realloc(out, cap)))
				abort();
		}
		z.next_out = out + len;
		z.avail_out = (uInt)(cap - len);
		rc = inflate(&z, Z_NO_FLUSH);
		len = cap - z.avail_out;
	} while (rc == Z_OK);
	int gz_ok = rc == Z_STREAM_END && z.avail_in == 0;
	inflateEnd(&z);
	if (!gz_ok) {
		free(out);
		return "not one whole gzip stream";
	}
	struct cp c = { .p = out, .end = out + len };
	cp_profile(&c);
	free(out);
	free(c.strs.v);
	free(c.loc_ids.v);
	free(c.fn_ids.v);
	free(c.map_ids.v);
	free(c.loc_refs.v);
	free(c.fn_refs.v);
	free(c.map_refs.v);
	return c.why;
}

#endif
