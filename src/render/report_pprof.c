/* report_pprof.c -- the report as a gzipped profile.proto, the format of
 * Go's pprof (github.com/google/pprof/proto/profile.proto), so that
 * `go tool pprof -top`, `-diff_base` and the pprof web UI read it.
 *
 * Sample types are those of a Go heap profile: alloc_objects/count,
 * alloc_space/bytes, inuse_objects/count, inuse_space/bytes (the default),
 * the period the sampling interval (space/bytes).  Resident and swapped
 * memory (--kind rss, swap) are not a heap: their types say what they are,
 * touched_pages, touched_space (made resident in the session),
 * resident_pages, resident_space (the default), or swapped_out_pages,
 * swapped_out_space, swapped_pages, swapped_space, pages of 4 KiB, the
 * period the page-fault sampling period (page_faults/count).  In a diff
 * each value is the change from A to B.  Of one snapshot B, the inuse_*
 * values are those at B and the alloc_* values those of B's period, since
 * the snapshot before it (r->alloc_from), as a Go heap profile pushed to a
 * continuous profiling store has them (heapattach --push sends exactly
 * this profile); duration_nanos is that period.  Modules become
 * mappings (with their build-ids) at made-up, disjoint addresses: a
 * location's address is its mapping's start plus rel_pc.  The frames are
 * already symbolized (has_functions etc.), so pprof never looks for the
 * binaries.  A run of inlined frames and the frame they were inlined into
 * share one pc and become one location with several lines, innermost
 * first, as profile.proto wants.
 *
 * The protobuf encoding is written by hand: varints and length-delimited
 * fields are all this message needs. */
#define _GNU_SOURCE
#include "render.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* profile.proto field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3, PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6, PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13, PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUETYPE_TYPE = 1, VALUETYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2,
	MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3, MAPPING_OFFSET = 4,
	MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6, MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9, MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3, LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3, FUNCTION_FILENAME = 4,
};

#define WIRE_VARINT 0
#define WIRE_LEN 2
/* Each module's made-up address range: 1 TiB, so any rel_pc fits. */
#define MAPPING_SPAN (1ULL << 40)

/* ------------------------------------------------------------ encoding */

static void pb_varint(struct hd_buf *b, uint64_t v)
{
	while (v >= 0x80) {
		hd_buf_addc(b, (int)(v & 0x7f) | 0x80);
		v >>= 7;
	}
	hd_buf_addc(b, (int)v);
}

static void pb_key(struct hd_buf *b, int field, int wire)
{
	pb_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

/* An integer field (int64 negatives are 10-byte varints, as protobuf
 * encodes them); zero is the default and is left out. */
static void pb_int(struct hd_buf *b, int field, int64_t v)
{
	if (v == 0)
		return;
	pb_key(b, field, WIRE_VARINT);
	pb_varint(b, (uint64_t)v);
}

static void pb_bytes(struct hd_buf *b, int field, const void *p, size_t n)
{
	pb_key(b, field, WIRE_LEN);
	pb_varint(b, n);
	hd_buf_add(b, p, n);
}

static void pb_msg(struct hd_buf *b, int field, const struct hd_buf *m)
{
	pb_bytes(b, field, m->p, m->n);
}

/* ------------------------------------------------------------ tables */

struct pprof {
	struct hd_buf out;         /* the Profile message */
	struct hd_map *strings;    /* text -> index + 1 */
	int64_t nstrings;
	struct hd_map *functions;  /* name \x1f file -> id */
	int64_t nfunctions;
	struct hd_map *locations;  /* module \x1f build-id \x1f frame ids -> id */
	int64_t nlocations;
	struct hd_map *mappings;   /* module \x1f build-id -> id */
	int64_t nmappings;
};

static int64_t str_index(struct pprof *p, const char *s)
{
	intptr_t i = (intptr_t)hd_map_get(p->strings, s);
	if (i)
		return (int64_t)i - 1;
	hd_map_put(p->strings, s, (void *)(intptr_t)(p->nstrings + 1));
	pb_bytes(&p->out, PROFILE_STRING_TABLE, s, strlen(s));
	return p->nstrings++;
}

static void value_type(struct pprof *p, int field, const char *type, const char *unit)
{
	struct hd_buf m = { 0 };
	pb_int(&m, VALUETYPE_TYPE, str_index(p, type));
	pb_int(&m, VALUETYPE_UNIT, str_index(p, unit));
	pb_msg(&p->out, field, &m);
	hd_buf_free(&m);
}

static uint64_t mapping_id(struct pprof *p, const struct hd_frame *f)
{
	struct hd_buf k = { 0 }, m = { 0 };
	intptr_t id;
	hd_buf_printf(&k, "%s\x1f%s", f->module, f->build_id);
	hd_buf_addc(&k, 0);
	if ((id = (intptr_t)hd_map_get(p->mappings, (char *)k.p))) {
		hd_buf_free(&k);
		return (uint64_t)id;
	}
	id = (intptr_t)++p->nmappings;
	hd_map_put(p->mappings, (char *)k.p, (void *)id);
	pb_int(&m, MAPPING_ID, id);
	pb_int(&m, MAPPING_START, (int64_t)((uint64_t)id * MAPPING_SPAN));
	pb_int(&m, MAPPING_LIMIT, (int64_t)((uint64_t)(id + 1) * MAPPING_SPAN));
	pb_int(&m, MAPPING_FILENAME, str_index(p, f->module[0] ? f->module : "[unknown]"));
	pb_int(&m, MAPPING_BUILD_ID, str_index(p, f->build_id));
	pb_int(&m, MAPPING_HAS_FUNCTIONS, 1);
	pb_int(&m, MAPPING_HAS_FILENAMES, 1);
	pb_int(&m, MAPPING_HAS_LINE_NUMBERS, 1);
	pb_int(&m, MAPPING_HAS_INLINE_FRAMES, 1);
	pb_msg(&p->out, PROFILE_MAPPING, &m);
	hd_buf_free(&m);
	hd_buf_free(&k);
	return (uint64_t)id;
}

static uint64_t function_id(struct pprof *p, const struct hd_frame *f)
{
	struct hd_buf k = { 0 }, m = { 0 };
	char pc[64];
	intptr_t id;
	const char *name = f->function;
	if (!name[0]) {
		/* Unknown: name it by offset and module, like the text output. */
		snprintf(pc, sizeof pc, "0x%" PRIx64 " in %s", f->rel_pc,
		         f->module[0] ? ha_base_name(f->module) : "[unknown]");
		name = pc;
	}
	hd_buf_printf(&k, "%s\x1f%s", name, f->file);
	hd_buf_addc(&k, 0);
	if ((id = (intptr_t)hd_map_get(p->functions, (char *)k.p))) {
		hd_buf_free(&k);
		return (uint64_t)id;
	}
	id = (intptr_t)++p->nfunctions;
	hd_map_put(p->functions, (char *)k.p, (void *)id);
	pb_int(&m, FUNCTION_ID, id);
	pb_int(&m, FUNCTION_NAME, str_index(p, name));
	/* A Python frame has no linker symbol: no system name.  go tool pprof
	 * takes a name equal to the system name for one to demangle, and one
	 * it cannot demangle for demangled C++ if it has a '<', whose
	 * "<...>" it drops: <module>, <genexpr>, <listcomp>, <lambda> came
	 * out empty (shown as [py]). */
	pb_int(&m, FUNCTION_SYSTEM_NAME, str_index(p, strcmp(f->module, "py") == 0 ? "" : name));
	pb_int(&m, FUNCTION_FILENAME, str_index(p, f->file));
	pb_msg(&p->out, PROFILE_FUNCTION, &m);
	hd_buf_free(&m);
	hd_buf_free(&k);
	return (uint64_t)id;
}

/* The location of frames f[0..n): inlined frames then the frame they are
 * inlined into (the last one). */
static uint64_t location_id(struct pprof *p, const struct hd_frame *const *f, int n)
{
	struct hd_buf k = { 0 }, m = { 0 }, line = { 0 };
	intptr_t id;
	const struct hd_frame *outer = f[n - 1];
	hd_buf_printf(&k, "%s\x1f%s", outer->module, outer->build_id);
	for (int i = 0; i < n; i++)
		hd_buf_printf(&k, "\x1f%" PRIx64 "\x1e%s\x1e%s\x1e%d", f[i]->rel_pc, f[i]->function,
		              f[i]->file, f[i]->line);
	hd_buf_addc(&k, 0);
	if ((id = (intptr_t)hd_map_get(p->locations, (char *)k.p))) {
		hd_buf_free(&k);
		return (uint64_t)id;
	}
	uint64_t mid = mapping_id(p, outer);
	uint64_t rel = outer->rel_pc < MAPPING_SPAN ? outer->rel_pc : MAPPING_SPAN - 1;
	id = (intptr_t)++p->nlocations;
	hd_map_put(p->locations, (char *)k.p, (void *)id);
	pb_int(&m, LOCATION_ID, id);
	pb_int(&m, LOCATION_MAPPING_ID, (int64_t)mid);
	pb_int(&m, LOCATION_ADDRESS, (int64_t)(mid * MAPPING_SPAN + rel));
	for (int i = 0; i < n; i++) {
		line.n = 0;
		pb_int(&line, LINE_FUNCTION_ID, (int64_t)function_id(p, f[i]));
		pb_int(&line, LINE_LINE, f[i]->line);
		pb_msg(&m, LOCATION_LINE, &line);
	}
	pb_msg(&p->out, PROFILE_LOCATION, &m);
	hd_buf_free(&line);
	hd_buf_free(&m);
	hd_buf_free(&k);
	return (uint64_t)id;
}

static int64_t round_i64(double v)
{
	if (!(fabs(v) < 9e18))
		return v < 0 ? INT64_MIN + 1 : INT64_MAX;
	return (int64_t)llround(v);
}

static void sample(struct pprof *p, const struct hd_row *row)
{
	struct hd_buf m = { 0 }, ids = { 0 }, vals = { 0 }, label = { 0 };
	const struct hd_stack *st = &row->st;

	/* Locations, leaf first: a group ends at a frame that is not
	 * inlined (or at the outermost frame). */
	for (int i = 0; i < st->n;) {
		int j = i;
		while (j < st->n - 1 && st->f[j]->inlined)
			j++;
		pb_varint(&ids, location_id(p, st->f + i, j - i + 1));
		i = j + 1;
	}
	pb_varint(&vals, (uint64_t)round_i64(row->alloc_objects));
	pb_varint(&vals, (uint64_t)round_i64(row->alloc_bytes));
	pb_varint(&vals, (uint64_t)round_i64(row->objects));
	pb_varint(&vals, (uint64_t)round_i64(row->bytes));
	if (ids.n)
		pb_msg(&m, SAMPLE_LOCATION_ID, &ids);   /* packed */
	pb_msg(&m, SAMPLE_VALUE, &vals);                /* packed */
	if (row->kind != 0) {
		pb_int(&label, LABEL_KEY, str_index(p, "kind"));
		pb_int(&label, LABEL_STR, str_index(p, hd_kind_name(row->kind)));
		pb_msg(&m, SAMPLE_LABEL, &label);
	}
	pb_msg(&p->out, PROFILE_SAMPLE, &m);
	hd_buf_free(&m);
	hd_buf_free(&ids);
	hd_buf_free(&vals);
	hd_buf_free(&label);
}

/* ------------------------------------------------------------ gzip */

static int gzip_into(struct hd_err *err, struct hd_buf *dst, const struct hd_buf *b)
{
	z_stream z;
	unsigned char out[65536];
	int rc;
	memset(&z, 0, sizeof z);
	/* windowBits 15 + 16: a gzip wrapper, which pprof expects. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return hd_fail(err, "zlib: cannot initialize the compressor");
	z.next_in = b->p;
	z.avail_in = (uInt)b->n;
	do {
		z.next_out = out;
		z.avail_out = sizeof out;
		rc = deflate(&z, Z_FINISH);
		if (rc == Z_STREAM_ERROR) {
			deflateEnd(&z);
			return hd_fail(err, "zlib: compression failed");
		}
		hd_buf_add(dst, out, sizeof out - z.avail_out);
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	return HD_OK;
}

/* The sample types of a kind: the cumulative count and bytes, the live
 * count and bytes (the default), and the period's type and unit. */
struct types {
	const char *type[4], *unit[4];
	const char *period_type, *period_unit;
};
static const struct types alloc_types = {
	{ "alloc_objects", "alloc_space", "inuse_objects", "inuse_space" },
	{ "count", "bytes", "count", "bytes" }, "space", "bytes",
};
static const struct types rss_types = {
	{ "touched_pages", "touched_space", "resident_pages", "resident_space" },
	{ "count", "bytes", "count", "bytes" }, "page_faults", "count",
};
static const struct types swap_types = {
	{ "swapped_out_pages", "swapped_out_space", "swapped_pages", "swapped_space" },
	{ "count", "bytes", "count", "bytes" }, "page_faults", "count",
};

int hd_pprof_encode(const struct hd_report *r, struct hd_buf *dst)
{
	struct pprof p = { .strings = hd_map_new(), .functions = hd_map_new(),
	                   .locations = hd_map_new(), .mappings = hd_map_new() };
	const struct types *t = r->kind == HA_KIND_RSS ? &rss_types
	                        : r->kind == HA_KIND_SWAP ? &swap_types : &alloc_types;
	char comment[512];

	str_index(&p, "");       /* string 0 is always "" */
	for (int i = 0; i < 4; i++)
		value_type(&p, PROFILE_SAMPLE_TYPE, t->type[i], t->unit[i]);
	for (size_t i = 0; i < r->n; i++)
		sample(&p, &r->rows[i]);
	const struct hd_snap *from = r->a ? r->a : r->alloc_from;
	pb_int(&p.out, PROFILE_TIME_NANOS, round_i64(r->b->time * 1e9));
	if (from)
		pb_int(&p.out, PROFILE_DURATION_NANOS, round_i64((r->b->time - from->time) * 1e9));
	value_type(&p, PROFILE_PERIOD_TYPE, t->period_type, t->period_unit);
	pb_int(&p.out, PROFILE_PERIOD, t == &alloc_types ? r->b->interval : r->b->rss_period);
	if (r->a)
		snprintf(comment, sizeof comment, "heapdiff: %sgrowth from snapshot %" PRId64 " (%s) to %"
		         PRId64 " (%s)", t == &alloc_types ? "" : t == &rss_types ? "resident memory "
		         : "swapped memory ", r->a->id, r->a->src->path, r->b->id, r->b->src->path);
	else if (r->alloc_from)
		snprintf(comment, sizeof comment, "heapdiff: %s at snapshot %" PRId64 " (%s), "
		         "allocated since snapshot %" PRId64, hd_kind_title(r->kind), r->b->id,
		         r->b->src->path, r->alloc_from->id);
	else
		snprintf(comment, sizeof comment, "heapdiff: %s at snapshot %" PRId64 " (%s)",
		         hd_kind_title(r->kind), r->b->id, r->b->src->path);
	char *c = hd_clean_text((const unsigned char *)comment);
	pb_int(&p.out, PROFILE_COMMENT, str_index(&p, c));
	free(c);
	pb_int(&p.out, PROFILE_DEFAULT_SAMPLE_TYPE, str_index(&p, t->type[3]));
	int rc = gzip_into(r->b->src->err, dst, &p.out);
	hd_buf_free(&p.out);
	hd_map_free(p.strings, NULL);
	hd_map_free(p.functions, NULL);
	hd_map_free(p.locations, NULL);
	hd_map_free(p.mappings, NULL);
	return rc;
}

int hd_write_pprof(FILE *f, const struct hd_report *r)
{
	struct hd_buf b = { 0 };
	int rc = hd_pprof_encode(r, &b);
	if (rc == HD_OK)
		fwrite(b.p, 1, b.n, f);
	hd_buf_free(&b);
	return rc;
}
