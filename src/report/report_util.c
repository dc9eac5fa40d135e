/* report_util.c -- small helpers of the model and the writers on it: a
 * string-keyed hash map, a byte buffer, errors (kept, returned: report.h)
 * and the one out-of-memory handler, text cleaning, the byte format of the
 * notes, which kinds --kind takes.  What only the writers use (escaping,
 * counts and times, the words for each kind) is src/render/render_util.c. */
#define _GNU_SOURCE
#include "report.h"
#include "hashtab.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ errors */

/* src made safe to print as hd_clean_text makes it, into dst (cap bytes,
 * cut there), without allocating. */
static void clean_line(char *dst, size_t cap, const char *src)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t k = 0;
	while (*s && k + 5 < cap) {
		int n = ha_utf8_len(s);
		if (n == 0 || (n == 1 && (*s < 0x20 || *s == 0x7f)) ||
		    (n == 2 && s[0] == 0xc2 && s[1] < 0xa0)) {
			dst[k++] = '?';
			s += n ? n : 1;
		} else {
			memcpy(dst + k, s, (size_t)n);
			k += (size_t)n;
			s += n;
		}
	}
	dst[k] = '\0';
}

/* The line is cleaned here, once: it may quote the file (SQLite's message
 * of a malformed schema quotes the schema's SQL), which may be anything. */
int hd_fail(struct hd_err *e, const char *fmt, ...)
{
	char msg[sizeof e->msg];
	va_list ap;
	if (e->set)
		return HD_ERR; /* the first error is the cause */
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	clean_line(e->msg, sizeof e->msg, msg);
	e->set = 1;
	return HD_ERR;
}

int hd_sql_fail(struct hd_source *s)
{
	int code = sqlite3_errcode(s->h);
	if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
		return hd_fail(s->err, "%s: corrupt database: %s", s->path, sqlite3_errmsg(s->h));
	return hd_fail(s->err, "%s: %s", s->path, sqlite3_errmsg(s->h));
}

int hd_prepare(struct hd_source *s, const char *sql, sqlite3_stmt **q)
{
	if (sqlite3_prepare_v2(s->h, sql, -1, q, NULL) != SQLITE_OK) {
		*q = NULL;
		return hd_sql_fail(s);
	}
	return HD_OK;
}

int hd_step(struct hd_source *s, sqlite3_stmt *q)
{
	if (s->err->set)
		return HD_ERR; /* a bad column since the last step */
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc != SQLITE_DONE)
		return hd_sql_fail(s);
	return 0;
}

int hd_query_i64(struct hd_source *s, const char *sql, int64_t *v, int *got, int np, int64_t p1,
                 int64_t p2)
{
	sqlite3_stmt *q;
	int rc;
	*got = 0;
	if (hd_prepare(s, sql, &q) < 0)
		return HD_ERR;
	if (np > 0)
		sqlite3_bind_int64(q, 1, p1);
	if (np > 1)
		sqlite3_bind_int64(q, 2, p2);
	rc = hd_step(s, q);
	if (rc > 0 && sqlite3_column_type(q, 0) != SQLITE_NULL) {
		*v = sqlite3_column_int64(q, 0);
		*got = 1;
	}
	sqlite3_finalize(q);
	return rc < 0 ? HD_ERR : HD_OK;
}

double hd_col_real(struct hd_source *s, sqlite3_stmt *q, int i)
{
	int t = sqlite3_column_type(q, i);
	double v;
	if (t == SQLITE_NULL)
		return 0;
	if (t != SQLITE_FLOAT && t != SQLITE_INTEGER) {
		hd_fail(s->err, "%s: corrupt database: a value is not a number", s->path);
		return 0;
	}
	v = sqlite3_column_double(q, i);
	if (!isfinite(v)) {
		hd_fail(s->err, "%s: corrupt database: a value is not finite", s->path);
		return 0;
	}
	/* Past what any memory, count or clock can reach: kept, but at the
	 * cap, so that sums, differences and squares of such values stay
	 * finite (JSON has no inf). */
	return v > HD_MAX_VALUE ? HD_MAX_VALUE : v < -HD_MAX_VALUE ? -HD_MAX_VALUE : v;
}

/* ------------------------------------------------------------ memory */

/* The one out-of-memory handler (report.h): nothing is built on a failed
 * allocation, so no caller has a half-made block to free.  The program's
 * own name: heapattach's push threads allocate here too. */
static void __attribute__((noreturn)) out_of_memory(void)
{
	fflush(stdout); /* NOLINT(cert-err33-c): only orders the report before the message */
	fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
	exit(1);
}

void hd_out_of_memory(void)
{
	out_of_memory();
}

void *hd_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		out_of_memory();
	return p;
}

void *hd_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		out_of_memory();
	return p;
}

void *hd_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		out_of_memory();
	return p;
}

char *hd_xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		out_of_memory();
	return p;
}

/* ------------------------------------------------------------ map */

struct slot {             /* a slot of the map's table (hashtab.h) */
	char *key;           /* NULL = empty */
	uint64_t h;
	void *val;
};

struct hd_map {
	struct ha_hashtab t;
};

static uint64_t hash_str(const char *k)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 0x100000001b3ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static uint64_t slot_hash(const void *ctx, const void *slot)
{
	(void)ctx;
	return ((const struct slot *)slot)->h;
}

struct map_key {
	const char *key;
	uint64_t h;
};

static inline int slot_eq(const void *ctx, const void *slot, const void *key)
{
	const struct slot *s = slot;
	const struct map_key *k = key;
	(void)ctx;
	return s->h == k->h && strcmp(s->key, k->key) == 0;
}

static int slot_used(const void *slot)
{
	return ((const struct slot *)slot)->key != NULL;
}

/* Three quarters full before it grows: a day's profile keys 100,000s of
 * call paths and functions, and a slot is 24 bytes (issue 39). */
static const struct ha_ht_type map_type = {
	.size = sizeof(struct slot), .first_cap = 64, .load = 3, .hash = slot_hash, .eq = slot_eq,
	.used = slot_used,
};

struct hd_map *hd_map_new(void)
{
	struct hd_map *m = hd_xmalloc(sizeof *m);
	ha_ht_init(&m->t);
	if (ha_ht_alloc(&m->t, &map_type) != 0)
		out_of_memory();
	return m;
}

static struct slot *find(struct hd_map *m, const char *key, uint64_t h)
{
	struct map_key k = { key, h };
	return ha_ht_find(&m->t, &map_type, NULL, h, &k);
}

void *hd_map_get(struct hd_map *m, const char *key)
{
	struct slot *s = find(m, key, hash_str(key));
	return s->key ? s->val : NULL;
}

void hd_map_put(struct hd_map *m, const char *key, void *val)
{
	uint64_t h = hash_str(key);
	struct slot *s;
	if (ha_ht_fit(&m->t, &map_type, NULL) < 0)
		out_of_memory();
	s = find(m, key, h);
	if (!s->key) {
		char *k = hd_xstrdup(key);
		s = ha_ht_add(&m->t, &map_type, NULL, h, s); /* room made above */
		s->key = k;
		s->h = h;
	}
	s->val = val;
}

size_t hd_map_index(struct hd_map *m, const char *key, size_t next, int *fresh)
{
	uintptr_t i = (uintptr_t)hd_map_get(m, key);
	*fresh = !i;
	if (i)
		return i - 1;
	hd_map_put(m, key, (void *)(uintptr_t)(next + 1));
	return next;
}

void hd_map_free(struct hd_map *m, void (*fn)(void *))
{
	if (!m)
		return;
	struct slot *s = m->t.slots;
	for (size_t i = 0; i < m->t.cap; i++) { /* in slot order, as before */
		if (s[i].key && fn)
			fn(s[i].val);
		free(s[i].key);
	}
	ha_ht_free(&m->t);
	free(m);
}

/* ------------------------------------------------------------ buffer */

void hd_buf_add(struct hd_buf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n)
			cap *= 2;
		b->p = hd_xrealloc(b->p, cap);
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

void hd_buf_addc(struct hd_buf *b, int c)
{
	unsigned char ch = (unsigned char)c;
	hd_buf_add(b, &ch, 1);
}

void hd_buf_printf(struct hd_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;
	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		out_of_memory();
	hd_buf_add(b, s, (size_t)n);
	free(s);
}

void hd_buf_free(struct hd_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->n = b->cap = 0;
}

/* ------------------------------------------------------------ text */

char *hd_clean_text(const unsigned char *s)
{
	struct hd_buf b = { 0 };
	if (!s)
		s = (const unsigned char *)"";
	while (*s && b.n < HD_MAX_TEXT) {
		int n = ha_utf8_len(s);
		if (n == 0) {
			hd_buf_addc(&b, '?');
			s++;
		} else if ((n == 1 && (*s < 0x20 || *s == 0x7f)) ||
		           (n == 2 && s[0] == 0xc2 && s[1] < 0xa0)) {
			/* C0 controls, DEL, and C1 controls (U+0080..U+009F, which a
			 * terminal may obey: U+009B is CSI) */
			hd_buf_addc(&b, '?');
			s += n;
		} else {
			hd_buf_add(&b, s, (size_t)n);
			s += n;
		}
	}
	hd_buf_addc(&b, 0);
	/* Exactly its size: a day's profile holds a million of these (a
	 * buffer's first growth is far larger than most names). */
	return hd_xrealloc(b.p, b.n);
}

/* ------------------------------------------------------------ numbers */

const char *hd_fmt_bytes(char *buf, size_t len, double v, int sign, int exact)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double a = fabs(v);
	const char *s = v < 0 ? "-" : sign && v > 0 ? "+" : "";
	if (a < 0.5)
		a = 0, s = "";
	if (exact || a < 1024) {
		snprintf(buf, len, exact ? "%s%.0f" : "%s%.0f B", s, a);
		return buf;
	}
	int u = -1;
	while (a >= 1024 && u < 3) {
		a /= 1024;
		u++;
	}
	snprintf(buf, len, a < 10 ? "%s%.2f %s" : a < 100 ? "%s%.1f %s" : "%s%.0f %s", s, a, units[u]);
	return buf;
}

const char *hd_frame_name(const struct hd_frame *f, char *buf, size_t len)
{
	if (f->function[0])
		return f->function;
	snprintf(buf, len, "0x%" PRIx64, f->rel_pc);
	return buf;
}

/* ------------------------------------------------------------ kinds */

int hd_kind_matches(int filter, int kind)
{
	if (filter == HD_KIND_ALLOC)
		return kind == HA_KIND_HEAP || kind == HA_KIND_MMAP;
	return kind == filter;
}

const char *hd_kind_what(int kind)
{
	switch (kind) {
	case HA_KIND_HEAP: return "live heap";
	case HA_KIND_MMAP: return "live mmap memory";
	case HA_KIND_RSS: return "resident memory";
	case HA_KIND_SWAP: return "swapped memory";
	default: return "live memory";
	}
}
