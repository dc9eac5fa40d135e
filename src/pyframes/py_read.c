/* py_read.c -- code objects of a live CPython read into names and lines
 * (py_read.h).
 *
 * A resolution: the code object's head (the table's code_size bytes) in
 * one read; its type and co_firstlineno checked against the record; then
 * its name (co_qualname from 3.11, else co_name) and file name, each a str
 * read the same way (head, type check, bounded body), whose characters
 * must give the record's ident (ha_py_ident, src/proto/ha_py.h: else
 * another code object took the address); then its line table.  The result
 * goes into the cache, keyed by the record's (code, ident, firstlineno): a
 * later frame of the same code is a hash lookup and a binary search of its
 * decoded line ranges (py_lines.c).  The strings go into a pool of their
 * own, interned by content, so that what the caller was given stays valid
 * when the cache is emptied.
 *
 * Nothing is written to the target, and no read is trusted: sizes and
 * lengths are bounded before anything is allocated for them. */
#define _GNU_SOURCE
#include "py_read.h"
#include "hashtab.h"
#include "py_lines.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define HEAD_MAX 1024      /* the largest code object head read (a 3.13 one: 208) */

struct code_ent {
	uint64_t code, ident;
	int32_t firstlineno;
	int status;                  /* HA_PY_CODE_* */
	const char *func, *file;     /* in the pool */
	struct ha_py_lines lines;
};

struct code_key {
	uint64_t code, ident;
	int32_t firstlineno;
};

struct ha_py_reader {
	pid_t pid;
	struct ha_py_target t;
	struct ha_py_walk w;         /* the string layout, as the agent has it */
	/* the cache: ents[0..n), the table's slots hold index + 1 */
	struct code_ent *ents;
	size_t n, cap, line_bytes;
	struct ha_hashtab codes;
	/* the pool: strs[0..nstr), the table's slots hold index + 1 */
	char **strs;
	size_t nstr, strcap, str_bytes;
	struct ha_hashtab pool;
	uint64_t reads, hits;
};

/* ------------------------------------------------------------ the pool */

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return ha_mix64(h);
}

static uint64_t pool_slot_hash(const void *ctx, const void *slot)
{
	const struct ha_py_reader *r = ctx;
	uint32_t i;
	memcpy(&i, slot, sizeof i);
	return str_hash(r->strs[i - 1]);
}

static int pool_eq(const void *ctx, const void *slot, const void *key)
{
	const struct ha_py_reader *r = ctx;
	uint32_t i;
	memcpy(&i, slot, sizeof i);
	return strcmp(r->strs[i - 1], key) == 0;
}

static const struct ha_ht_type pool_type = {
	.size = sizeof(uint32_t), .first_cap = 64, .hash = pool_slot_hash, .eq = pool_eq,
};

/* s interned: the pool's copy, or "?" when out of memory or room. */
static const char *intern(struct ha_py_reader *r, const char *s)
{
	uint64_t h = str_hash(s);
	uint32_t *slot = ha_ht_find(&r->pool, &pool_type, r, h, s);
	size_t len = strlen(s);
	char **strs, *copy;

	if (*slot)
		return r->strs[*slot - 1];
	if (r->str_bytes + len + 1 > HA_PY_POOL_BYTES || r->nstr >= UINT32_MAX - 1)
		return "?";
	strs = ha_grow(r->strs, &r->strcap, r->nstr + 1, sizeof *r->strs, 64);
	if (!strs)
		return "?";
	r->strs = strs;
	copy = strdup(s);
	if (!copy)
		return "?";
	slot = ha_ht_add(&r->pool, &pool_type, r, h, slot);
	if (!slot) {
		free(copy);
		return "?";
	}
	r->strs[r->nstr++] = copy;
	*slot = (uint32_t)r->nstr;
	r->str_bytes += len + 1;
	return copy;
}

/* ------------------------------------------------------------ reading */

static uint64_t word(const uint8_t *p, unsigned off)
{
	uint64_t v;
	memcpy(&v, p + off, sizeof v);
	return v;
}

/* c (a code point, or -1 for none) as UTF-8 at buf[*n], room left. */
static int put_utf8(char *buf, size_t buflen, size_t *n, long c)
{
	unsigned char u[4];
	size_t k;

	if (c < 0 || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		c = 0xfffd;
	if (c < 0x80) {
		u[0] = (unsigned char)c;
		k = 1;
	} else if (c < 0x800) {
		u[0] = (unsigned char)(0xc0 | c >> 6);
		u[1] = (unsigned char)(0x80 | (c & 0x3f));
		k = 2;
	} else if (c < 0x10000) {
		u[0] = (unsigned char)(0xe0 | c >> 12);
		u[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
		u[2] = (unsigned char)(0x80 | (c & 0x3f));
		k = 3;
	} else {
		u[0] = (unsigned char)(0xf0 | c >> 18);
		u[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
		u[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
		u[3] = (unsigned char)(0x80 | (c & 0x3f));
		k = 4;
	}
	if (*n + k >= buflen)
		return -1;
	memcpy(buf + *n, u, k);
	*n += k;
	return 0;
}

/* The str at addr into buf as ha_py_read_str says; and when h is not
 * NULL, *h with it as the agent adds it to an ident (ha_py_ident_add: no
 * bytes if it is not a compact str).  -2: the memory could not be read
 * (*h unchanged). */
static int read_str(struct ha_py_reader *r, uint64_t addr, char *buf, size_t buflen, uint64_t *h)
{
	const struct ha_py_offsets *o = &r->t.off;
	uint8_t head[128], data[4 * HA_PY_STR_MAX], tail[HA_PY_IDENT_TAIL];
	uint32_t state, kind, data_off = 0, ikind = 0;
	int64_t length, bytes = -1;
	size_t n = 0, count;
	int ascii;

	if (buflen == 0)
		return -1;
	buf[0] = '\0';
	if (!ha_py_ptr_ok(addr) || o->str_ascii_size > sizeof head) {
		if (h)
			*h = ha_py_ident_nostr(*h);
		return -1;
	}
	if (ha_remote_read(r->pid, addr, head, o->str_ascii_size) < 0)
		return -2;
	memcpy(&length, head + o->str_length, sizeof length);
	memcpy(&state, head + o->str_state, sizeof state);
	if (word(head, o->object_type) == r->t.unicode_type)
		bytes = ha_py_str_bytes(&r->w, length, state, &data_off, &ikind);
	if (h && bytes < 0)
		*h = ha_py_ident_nostr(*h);
	if (bytes < 0)
		return -1;
	kind = state >> o->str_kind_shift & ((1u << o->str_kind_bits) - 1);
	ascii = (state >> o->str_ascii_bit & 1) != 0;
	if (o->str_ready_bit != HA_PY_NO_FIELD && !(state >> o->str_ready_bit & 1))
		bytes = -1;  /* (compact strings are always ready) */
	count = length > HA_PY_STR_MAX ? HA_PY_STR_MAX : (size_t)length;
	if (bytes >= 0 && count &&
	    ha_remote_read(r->pid, addr + (ascii ? o->str_ascii_size : o->str_compact_size), data,
	                   count * kind) < 0)
		return -2;
	if (h) {
		/* the characters' last bytes: in data, unless cut there */
		uint64_t all = (uint64_t)length * ikind;
		uint32_t t = all < HA_PY_IDENT_TAIL ? (uint32_t)all : HA_PY_IDENT_TAIL;
		const uint8_t *p = data + count * ikind - t;
		if ((uint64_t)count < (uint64_t)length || bytes < 0) {
			if (t && ha_remote_read(r->pid, addr + data_off + all - t, tail, t) < 0)
				return -2;
			p = tail;
		}
		*h = ha_py_ident_add(*h, p, t, length, ikind);
	}
	if (bytes < 0)
		return -1;
	for (size_t i = 0; i < count; i++) {
		long c;
		if (kind == 1)
			c = (ascii && data[i] >= 0x80) ? -1 : data[i];
		else if (kind == 2)
			c = (long)data[2 * i] | (long)data[2 * i + 1] << 8;
		else
			c = (long)((uint32_t)data[4 * i] | (uint32_t)data[4 * i + 1] << 8 |
			           (uint32_t)data[4 * i + 2] << 16 | (uint32_t)data[4 * i + 3] << 24);
		if (put_utf8(buf, buflen, &n, c) < 0)
			break;
	}
	buf[n] = '\0';
	return (int)n;
}

int ha_py_read_str(struct ha_py_reader *r, uint64_t addr, char *buf, size_t buflen)
{
	int n = read_str(r, addr, buf, buflen, NULL);
	return n < 0 ? -1 : n;
}

/* The bytes object at addr: its size, the bytes in *out (malloc'ed, the
 * caller frees); -1 if it is not one or is over max; -2 out of memory. */
static long read_bytes_alloc(struct ha_py_reader *r, uint64_t addr, size_t max, uint8_t **out)
{
	const struct ha_py_offsets *o = &r->t.off;
	uint8_t head[64];
	int64_t size;
	uint8_t *buf;

	*out = NULL;
	if (!addr || o->bytes_sval > sizeof head ||
	    ha_remote_read(r->pid, addr, head, o->bytes_sval) < 0 ||
	    word(head, o->object_type) != r->t.bytes_type)
		return -1;
	memcpy(&size, head + o->var_size, sizeof size);
	if (size < 0 || (uint64_t)size > max)
		return -1;
	buf = malloc(size ? (size_t)size : 1);
	if (!buf)
		return -2;
	if (size && ha_remote_read(r->pid, addr + o->bytes_sval, buf, (size_t)size) < 0) {
		free(buf);
		return -1;
	}
	*out = buf;
	return (long)size;
}

long ha_py_read_bytes(struct ha_py_reader *r, uint64_t addr, uint8_t *buf, size_t max)
{
	uint8_t *b;
	long n = read_bytes_alloc(r, addr, max, &b);

	if (n < 0)
		return -1;
	memcpy(buf, b, (size_t)n);
	free(b);
	return n;
}

/* The code object's name and file name strings (the head read at its
 * address), into *ident as the agent computes it (ha_py_ident); and, when
 * name and file are not NULL, interned there ("?" if not a string).  0,
 * or -1 if their memory could not be read. */
static int read_ident(struct ha_py_reader *r, const uint8_t *head, uint64_t *ident,
                      const char **name, const char **file)
{
	const struct ha_py_offsets *o = &r->t.off;
	char buf[2][4 * HA_PY_STR_MAX + 1];
	uint64_t h = HA_PY_IDENT_SEED;
	int n[2];

	n[0] = read_str(r, word(head, o->code_qualname != HA_PY_NO_FIELD ? o->code_qualname
	                                                                 : o->code_name),
	                buf[0], sizeof buf[0], &h);
	n[1] = read_str(r, word(head, o->code_filename), buf[1], sizeof buf[1], &h);
	if (n[0] == -2 || n[1] == -2)
		return -1;
	*ident = h;
	if (name) {
		*name = n[0] >= 0 ? intern(r, buf[0]) : "?";
		*file = n[1] >= 0 ? intern(r, buf[1]) : "?";
	}
	return 0;
}

/* Read the code object of key k into e (every field but the key). */
static void read_code(struct ha_py_reader *r, const struct code_key *k, struct code_ent *e)
{
	const struct ha_py_offsets *o = &r->t.off;
	uint8_t head[HEAD_MAX], *tab;
	uint64_t ident;
	int32_t first;
	long len;
	int rc;

	e->func = e->file = "?";
	r->reads++;
	rc = ha_remote_read(r->pid, k->code, head, o->code_size);
	if (rc < 0) {
		/* unmapped since the sample: the object is gone with its arena */
		e->status = rc == -EFAULT || rc == -EIO ? HA_PY_CODE_GONE : HA_PY_CODE_UNREADABLE;
		return;
	}
	memcpy(&first, head + o->code_firstlineno, sizeof first);
	if (word(head, o->object_type) != r->t.code_type || first != k->firstlineno) {
		e->status = HA_PY_CODE_GONE;
		return;
	}
	if (read_ident(r, head, &ident, &e->func, &e->file) < 0 || ident != k->ident) {
		/* another code object at the address, of another name or file */
		e->func = e->file = "?";
		e->status = HA_PY_CODE_GONE;
		return;
	}
	e->status = HA_PY_CODE_OK;
	len = read_bytes_alloc(r, word(head, o->code_linetable), HA_PY_LINETABLE_MAX, &tab);
	if (len >= 0) {
		ha_py_lines_decode(o->line_format, tab, (size_t)len, first, &e->lines);
		free(tab);
	}
	if (!e->lines.v)
		e->lines.firstlineno = first;   /* no table: every line -1 */
}

/* ------------------------------------------------------------ the cache */

static uint64_t key_hash(const struct code_key *k)
{
	return ha_mix64(k->code ^ ha_mix64(k->ident) ^ ((uint64_t)(uint32_t)k->firstlineno << 32));
}

static uint64_t code_slot_hash(const void *ctx, const void *slot)
{
	const struct ha_py_reader *r = ctx;
	const struct code_ent *e;
	struct code_key k;
	uint32_t i;

	memcpy(&i, slot, sizeof i);
	e = &r->ents[i - 1];
	k.code = e->code;
	k.ident = e->ident;
	k.firstlineno = e->firstlineno;
	return key_hash(&k);
}

static int code_eq(const void *ctx, const void *slot, const void *key)
{
	const struct ha_py_reader *r = ctx;
	const struct code_key *k = key;
	const struct code_ent *e;
	uint32_t i;

	memcpy(&i, slot, sizeof i);
	e = &r->ents[i - 1];
	return e->code == k->code && e->ident == k->ident && e->firstlineno == k->firstlineno;
}

static const struct ha_ht_type codes_type = {
	.size = sizeof(uint32_t), .first_cap = 256, .hash = code_slot_hash, .eq = code_eq,
};

static void cache_clear(struct ha_py_reader *r)
{
	for (size_t i = 0; i < r->n; i++)
		ha_py_lines_free(&r->ents[i].lines);
	r->n = 0;
	r->line_bytes = 0;
	ha_ht_free(&r->codes);
}

struct ha_py_reader *ha_py_reader_new(pid_t pid, const struct ha_py_target *t)
{
	const struct ha_py_offsets *o = &t->off;
	struct ha_py_reader *r;

	/* every field read must lie in the head, the headers in their buffers */
	if (o->code_size > HEAD_MAX || o->object_type + 8u > o->code_size ||
	    o->code_name + 8u > o->code_size || o->code_filename + 8u > o->code_size ||
	    o->code_linetable + 8u > o->code_size || o->code_firstlineno + 4u > o->code_size ||
	    (o->code_qualname != HA_PY_NO_FIELD && o->code_qualname + 8u > o->code_size) ||
	    o->str_ascii_size > 128 || o->str_length + 8u > o->str_ascii_size ||
	    o->str_state + 4u > o->str_ascii_size || o->object_type + 8u > o->str_ascii_size ||
	    o->bytes_sval > 64 || o->var_size + 8u > o->bytes_sval ||
	    o->object_type + 8u > o->bytes_sval || o->str_kind_bits == 0 ||
	    o->str_kind_shift + o->str_kind_bits > 32 || o->str_compact_bit >= 32 ||
	    o->str_ascii_bit >= 32 || (o->str_ready_bit != HA_PY_NO_FIELD && o->str_ready_bit >= 32)) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->pid = pid;
	r->t = *t;
	ha_py_walk_fill(&r->w, &t->off, 0, t->code_type, t->unicode_type, 0);
	ha_ht_init(&r->codes);
	ha_ht_init(&r->pool);
	return r;
}

void ha_py_reader_free(struct ha_py_reader *r)
{
	if (!r)
		return;
	cache_clear(r);
	free(r->ents);
	for (size_t i = 0; i < r->nstr; i++)
		free(r->strs[i]);
	free(r->strs);
	ha_ht_free(&r->pool);
	free(r);
}

static void fill(const struct code_ent *e, uint32_t lasti, struct ha_py_loc *out)
{
	out->func = e->func;
	out->file = e->file;
	out->firstlineno = e->firstlineno;
	out->line = e->status == HA_PY_CODE_OK ? ha_py_lines_find(&e->lines, lasti) : -1;
}

int ha_py_code_resolve(struct ha_py_reader *r, uint64_t code, uint64_t ident,
                       int32_t firstlineno, uint32_t lasti, struct ha_py_loc *out)
{
	struct code_key k = { code, ident, firstlineno };
	uint64_t h = key_hash(&k);
	uint32_t *slot = ha_ht_find(&r->codes, &codes_type, r, h, &k);
	struct code_ent e = { 0 }, *ents;

	lasti &= ~HA_PY_RUN_END;
	if (*slot) {
		r->hits++;
		fill(&r->ents[*slot - 1], lasti, out);
		return r->ents[*slot - 1].status;
	}
	if (r->n >= HA_PY_CACHE_MAX || r->line_bytes > HA_PY_CACHE_BYTES) {
		cache_clear(r);
		slot = ha_ht_find(&r->codes, &codes_type, r, h, &k);
	}
	e.code = code;
	e.ident = ident;
	e.firstlineno = firstlineno;
	read_code(r, &k, &e);
	fill(&e, lasti, out);
	ents = ha_grow(r->ents, &r->cap, r->n + 1, sizeof *r->ents, 256);
	if (ents) {
		r->ents = ents;
		r->ents[r->n++] = e;
		slot = ha_ht_add(&r->codes, &codes_type, r, h, slot);
		if (slot) {
			*slot = (uint32_t)r->n;
			r->line_bytes += ha_py_lines_bytes(&e.lines);
			return e.status;
		}
		r->n--;
	}
	/* not cached (out of memory): the answer stands, its table goes */
	ha_py_lines_free(&e.lines);
	return e.status;
}

int ha_py_code_ident(struct ha_py_reader *r, uint64_t code, uint64_t *ident)
{
	const struct ha_py_offsets *o = &r->t.off;
	uint8_t head[HEAD_MAX];

	if (ha_remote_read(r->pid, code, head, o->code_size) < 0 ||
	    word(head, o->object_type) != r->t.code_type)
		return -1;
	return read_ident(r, head, ident, NULL, NULL);
}

void ha_py_reader_stats(const struct ha_py_reader *r, uint64_t *reads, uint64_t *hits)
{
	*reads = r->reads;
	*hits = r->hits;
}
