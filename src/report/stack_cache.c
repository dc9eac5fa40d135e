/* stack_cache.c -- a source's callstacks, each read once and kept while
 * the source is open (hd_stack_get), in as little memory as a day's
 * profile allows.
 *
 * A day's profile holds 100,000 call paths and more, and most of their
 * frames are shared (main, the event loop, the helpers).  So a frame is
 * read and kept once per frames.id (its names interned in the source's
 * string pool), and a stack is an array of pointers to those frames: on
 * the 105,224-stack fixture of issue 39 (tests/db_fill --many), 10 frames
 * a stack, that is ~20 MB where one copy of each frame per stack was
 * 94 MB.  Stacks and frames live in chunks that are never moved (a
 * pointer to either stays good until hd_source_close), found by id in two
 * hash tables (hashtab.h).
 *
 * A frame the session left unnamed is named here when a debug file can be
 * had now (late_names.h): its entry is its inline chain, innermost first,
 * and every stack through it shows the chain. */
#define _GNU_SOURCE
#include "report.h"
#include "alloc_frame.h"
#include "arena.h"
#include "hashtab.h"
#include "late_names.h"
#include "strpool.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* A frame by frames.id: the k frames it shows (1, or its late-named
 * inline chain). */
struct fslot {
	int64_t id;
	const struct hd_frame *f;  /* NULL: an empty slot */
	int k;
};

struct sslot {
	int64_t id;
	const struct hd_stack *st; /* NULL: an empty slot */
};

struct hd_stacks {
	struct ha_arena mem;          /* frames, stacks, their arrays */
	struct ha_hashtab frames, stacks;
	const struct hd_frame **tmp; /* a stack's frames while read */
	int ntmp;
};

static uint64_t mix(int64_t id)
{
	uint64_t h = (uint64_t)id * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static uint64_t fslot_hash(const void *ctx, const void *slot)
{
	(void)ctx;
	return mix(((const struct fslot *)slot)->id);
}

static inline int fslot_eq(const void *ctx, const void *slot, const void *key)
{
	(void)ctx;
	return ((const struct fslot *)slot)->id == *(const int64_t *)key;
}

static int fslot_used(const void *slot)
{
	return ((const struct fslot *)slot)->f != NULL;
}

static uint64_t sslot_hash(const void *ctx, const void *slot)
{
	(void)ctx;
	return mix(((const struct sslot *)slot)->id);
}

static inline int sslot_eq(const void *ctx, const void *slot, const void *key)
{
	(void)ctx;
	return ((const struct sslot *)slot)->id == *(const int64_t *)key;
}

static int sslot_used(const void *slot)
{
	return ((const struct sslot *)slot)->st != NULL;
}

static const struct ha_ht_type frame_type = {
	.size = sizeof(struct fslot), .first_cap = 1024, .load = 3, .hash = fslot_hash, .eq = fslot_eq,
	.used = fslot_used,
};
static const struct ha_ht_type stack_type = {
	.size = sizeof(struct sslot), .first_cap = 1024, .load = 3, .hash = sslot_hash, .eq = sslot_eq,
	.used = sslot_used,
};

/* n bytes that stay where they are until the cache is freed. */
static void *cache_alloc(struct hd_stacks *c, size_t n)
{
	void *p = ha_arena_alloc(&c->mem, n);
	if (!p)
		hd_out_of_memory();
	return p;
}

void hd_stacks_free(struct hd_stacks *c)
{
	if (!c)
		return;
	ha_arena_free(&c->mem);
	ha_ht_free(&c->frames);
	ha_ht_free(&c->stacks);
	free(c->tmp);
	free(c);
}

/* text cleaned (hd_clean_text) and interned in the source's names. */
static const char *name_of(struct hd_source *s, const unsigned char *text)
{
	char *c = hd_clean_text(text);
	const char *n = ha_strpool_intern(s->names, c);
	free(c);
	return n;
}

/* The frame of the query's row, kept (with its late-named chain, if the
 * session left it unnamed and a debug file names it now). */
static const struct fslot *frame_of(struct hd_source *s, sqlite3_stmt *q)
{
	struct hd_stacks *c = s->stacks;
	int64_t id = sqlite3_column_int64(q, 0), line = sqlite3_column_int64(q, 3);
	uint64_t h = mix(id);
	struct fslot *slot = ha_ht_find(&c->frames, &frame_type, NULL, h, &id);
	if (slot->f)
		return slot;
	struct hd_frame was = {
		.id = id,
		.function = name_of(s, sqlite3_column_text(q, 1)),
		.file = name_of(s, sqlite3_column_text(q, 2)),
		.line = line > 0 && line < INT32_MAX ? (int)line : 0,
		.inlined = sqlite3_column_int64(q, 4) != 0,
		.rel_pc = (uint64_t)sqlite3_column_int64(q, 5),
		.module = name_of(s, sqlite3_column_text(q, 6)),
		.build_id = name_of(s, sqlite3_column_text(q, 7)),
	};
	struct ha_sym_frame chain[32];
	int k = 0;
	/* Whether the leaf's pc was a return address is not recorded: all
	 * are taken as one (the leaf is the allocator's caller's return
	 * address unless the agent's frames were not skipped), the call
	 * before it named. */
	if (s->late && !was.function[0] && was.build_id[0] && strcmp(was.module, HA_PY_MODULE) != 0)
		k = hd_late_name(s->late, was.module, was.build_id, was.rel_pc, 1, chain, 32);
	struct hd_frame *f = cache_alloc(c, (size_t)(k > 0 ? k : 1) * sizeof *f);
	f[0] = was;
	for (int j = 0; j < k; j++) {
		f[j] = was;
		f[j].function = name_of(s, (const unsigned char *)chain[j].function);
		f[j].file = name_of(s, (const unsigned char *)chain[j].file);
		f[j].line = chain[j].line;
		f[j].inlined = j < k - 1 ? 1 : was.inlined;
	}
	slot = ha_ht_add(&c->frames, &frame_type, NULL, h, slot);
	if (!slot)
		hd_out_of_memory();
	*slot = (struct fslot){ .id = id, .f = f, .k = k > 0 ? k : 1 };
	return slot;
}

int hd_stack_get(struct hd_source *s, int64_t id, const struct hd_stack **out)
{
	struct hd_stacks *c = s->stacks;
	uint64_t h = mix(id);
	int n = 0, rc;

	if (!c) {
		c = s->stacks = hd_xcalloc(1, sizeof *c);
		ha_arena_init(&c->mem, 1u << 20, 16);
	}
	struct sslot *slot = ha_ht_find(&c->stacks, &stack_type, NULL, h, &id);
	if ((*out = slot->st))
		return HD_OK;
	if (!s->stack_q && hd_prepare(s,
		"SELECT f.id, f.function, f.file, f.line, f.inlined, f.rel_pc, m.path, m.build_id"
		"  FROM stack_frames sf JOIN frames f ON f.id = sf.frame_id"
		"  LEFT JOIN modules m ON m.id = f.module_id"
		" WHERE sf.stack_id = ?1 ORDER BY sf.pos", &s->stack_q) < 0)
		return HD_ERR;
	sqlite3_stmt *q = s->stack_q;
	sqlite3_bind_int64(q, 1, id);
	while ((rc = hd_step(s, q)) > 0 && n < HD_MAX_FRAMES) {
		const struct fslot *fs = frame_of(s, q);
		if (n + fs->k > HD_MAX_FRAMES)
			break;
		if (n + fs->k > c->ntmp) {
			c->ntmp = c->ntmp ? 2 * c->ntmp : 64;
			if (c->ntmp < n + fs->k)
				c->ntmp = n + fs->k;
			/* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
			c->tmp = hd_xrealloc(c->tmp, (size_t)c->ntmp * sizeof *c->tmp);
		}
		for (int j = 0; j < fs->k; j++)
			c->tmp[n++] = &fs->f[j];
	}
	sqlite3_reset(q);
	if (rc < 0)
		return HD_ERR;
	struct hd_stack *st = cache_alloc(c, sizeof *st);
	size_t bytes = (size_t)n * sizeof(const struct hd_frame *);
	const struct hd_frame **f = n ? cache_alloc(c, bytes) : NULL;
	if (n)
		memcpy(f, c->tmp, bytes);
	*st = (struct hd_stack){ .id = id, .n = n, .f = f };
	/* (frame_of grew the other table, never this one: slot is good.) */
	slot = ha_ht_add(&c->stacks, &stack_type, NULL, h, slot);
	if (!slot)
		hd_out_of_memory();
	*slot = (struct sslot){ .id = id, .st = st };
	*out = st;
	return HD_OK;
}
