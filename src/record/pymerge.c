/* pymerge.c -- a sample's Python frames into its native stack (see
 * pymerge.h). */
#define _GNU_SOURCE
#include "pymerge.h"

#include <stdlib.h>
#include <string.h>

#include "ha_proto.h"
#include "util.h"
#include "writer.h"

#define GONE_FUNCTION "(code object gone)"

struct pyf_entry {
	char *func, *file;
	int line;
	uint64_t hash;
};

/* by_rec: the whole entry in the slot (one line a lookup). */
struct rec_slot {
	uint64_t code, ident;
	uint32_t lasti;
	int32_t firstlineno;
	uint32_t id;                 /* 0: empty */
	uint32_t pad;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xbf58476d1ce4e5b9ull;
}

static uint64_t rec_hash_of(uint64_t code, uint64_t ident, uint32_t lasti, int32_t first)
{
	return mix(mix(mix(mix(0, code), ident), lasti), (uint32_t)first);
}

static uint64_t rec_hash(const void *ctx, const void *slot)
{
	const struct rec_slot *s = slot;
	(void)ctx;
	return rec_hash_of(s->code, s->ident, s->lasti, s->firstlineno);
}

static inline int rec_eq(const void *ctx, const void *slot, const void *key)
{
	const struct rec_slot *s = slot, *k = key;
	(void)ctx;
	return s->code == k->code && s->ident == k->ident && s->lasti == k->lasti &&
	       s->firstlineno == k->firstlineno;
}

static int rec_used(const void *slot)
{
	return ((const struct rec_slot *)slot)->id != 0;
}

static const struct ha_ht_type rec_type = { sizeof(struct rec_slot), 1024, 2, rec_hash, rec_eq,
	                                    rec_used };

/* by_name: the entry's number (id) in the slot. */
struct name_key {
	const char *func, *file;
	int line;
};

static uint64_t name_hash_of(const char *func, const char *file, int line)
{
	uint64_t h = 1469598103934665603ull;
	for (const char *p = func; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ 0xff) * 1099511628211ull;
	for (const char *p = file; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return mix(h, (uint32_t)line);
}

static uint64_t name_hash(const void *ctx, const void *slot)
{
	const struct ha_pymerge *m = ctx;
	uint32_t id;
	memcpy(&id, slot, sizeof id);
	return m->names[id - 1].hash;
}

static inline int name_eq(const void *ctx, const void *slot, const void *key)
{
	const struct ha_pymerge *m = ctx;
	const struct name_key *k = key;
	uint32_t id;
	memcpy(&id, slot, sizeof id);
	const struct pyf_entry *e = &m->names[id - 1];
	return e->line == k->line && strcmp(e->func, k->func) == 0 && strcmp(e->file, k->file) == 0;
}

static const struct ha_ht_type name_type = { sizeof(uint32_t), 256, 2, name_hash, name_eq, NULL };

void ha_pymerge_init(struct ha_pymerge *m, const uint64_t eval[2][2], ha_py_resolve_fn resolve,
                     void *ctx, struct ha_queue *to_writer)
{
	memset(m, 0, sizeof *m);
	memcpy(m->eval, eval, sizeof m->eval);
	m->resolve = resolve;
	m->resolve_ctx = ctx;
	m->to_writer = to_writer;
}

void ha_pymerge_free(struct ha_pymerge *m)
{
	for (uint32_t i = 0; i < m->n_names; i++) {
		free(m->names[i].func);
		free(m->names[i].file);
	}
	free(m->names);
	ha_ht_free(&m->by_rec);
	ha_ht_free(&m->by_name);
	memset(m, 0, sizeof *m);
}

static void send_name(struct ha_pymerge *m, uint32_t id, const struct pyf_entry *e)
{
	size_t fl = strlen(e->func), fi = strlen(e->file);
	struct ha_wmsg_pyframe *w = malloc(sizeof *w + fl + fi + 2);
	if (!w)
		return; /* the frame is stored without a name */
	w->q.type = HA_WMSG_PYFRAME;
	w->id = id;
	w->line = e->line;
	w->func_len = (uint32_t)fl;
	w->file_len = (uint32_t)fi;
	memcpy(w->text, e->func, fl + 1);
	memcpy(w->text + fl + 1, e->file, fi + 1);
	ha_queue_put(m->to_writer, &w->q);
}

/* The id of (func, file, line), made and sent on first sight; 0 when out
 * of memory. */
static uint32_t name_id(struct ha_pymerge *m, const char *func, const char *file, int line)
{
	struct name_key k = { func, file, line };
	uint64_t h = name_hash_of(func, file, line);
	uint32_t *slot = ha_ht_find(&m->by_name, &name_type, m, h, &k);
	uint32_t found = *slot;
	if (found)
		return found;
	if (m->n_names >= (uint32_t)(HA_PC_PY_MAX - HA_PC_PY_BASE) - 1)
		return 0;
	struct pyf_entry *grown = ha_grow(m->names, &m->cap_names, m->n_names + 1,
	                                  sizeof *m->names, 256);
	if (!grown)
		return 0;
	m->names = grown;
	struct pyf_entry e = { strdup(func), strdup(file), line, h };
	if (!e.func || !e.file || !(slot = ha_ht_add(&m->by_name, &name_type, m, h, slot))) {
		free(e.func);
		free(e.file);
		return 0;
	}
	m->names[m->n_names++] = e;
	*slot = m->n_names;
	send_name(m, m->n_names, &e);
	return m->n_names;
}

/* The pc of a recorded frame; 0 when out of memory. */
static uint64_t frame_pc(struct ha_pymerge *m, const struct ha_py_frame *f)
{
	struct rec_slot k = { f->code, f->ident, f->lasti & ~HA_PY_RUN_END, f->firstlineno, 0, 0 };
	uint64_t h = rec_hash_of(k.code, k.ident, k.lasti, k.firstlineno);
	struct rec_slot *s = ha_ht_find(&m->by_rec, &rec_type, NULL, h, &k);
	if (s->id)
		return HA_PC_PY_BASE + s->id;
	const char *func = GONE_FUNCTION, *file = "";
	int line = 0;
	struct ha_py_frame g = *f;
	g.lasti = k.lasti;
	if (!m->resolve || m->resolve(m->resolve_ctx, &g, &func, &file, &line) != 0) {
		func = GONE_FUNCTION;
		file = "";
		line = 0;
		m->st.frames_gone++;
	}
	uint32_t id = name_id(m, func, file, line);
	if (!id)
		return 0;
	/* s is still good: neither the resolver nor name_id touches this
	 * table. */
	s = ha_ht_add(&m->by_rec, &rec_type, NULL, h, s);
	if (s) {
		*s = k;
		s->id = id;
	}
	return HA_PC_PY_BASE + id;
}

static int is_eval(const struct ha_pymerge *m, uint64_t pc, int i)
{
	uint64_t at = i > 0 ? pc - 1 : pc; /* a return address: its call */
	return (at >= m->eval[0][0] && at < m->eval[0][1]) ||
	       (at >= m->eval[1][0] && at < m->eval[1][1]);
}

/* The pcs of frames f[from, to) onto out (*o of max used; an empty run's
 * mark puts none); -1 when out of memory: the sample is counted and stays
 * native. */
static int put_run(struct ha_pymerge *m, const struct ha_py_frame *f, uint32_t from, uint32_t to,
                   uint64_t *out, int *o, int max)
{
	for (uint32_t j = from; j < to && *o < max; j++) {
		if (!f[j].code)
			continue;
		uint64_t pc = frame_pc(m, &f[j]);
		if (!pc) {
			m->st.unmatched++;
			return -1;
		}
		out[(*o)++] = pc;
	}
	return 0;
}

int ha_pymerge(struct ha_pymerge *m, uint64_t *pcs, int n, int max, int native_cut,
               const struct ha_py_frame *f, uint32_t nf, uint32_t pyflags)
{
	/* The runs: [start, end) of f, innermost first. */
	static uint32_t run_start[HA_PY_DEPTH_MAX + 1], run_end[HA_PY_DEPTH_MAX + 1];
	static int evals[1024];
	static uint64_t out[1024];
	if (nf > HA_PY_DEPTH_MAX || n < 0 || max > 1024 || n > max)
		return n;
	m->st.samples++;
	uint32_t runs = 0, start = 0;
	for (uint32_t i = 0; i < nf; i++)
		if (f[i].lasti & HA_PY_RUN_END) {
			run_start[runs] = start;
			run_end[runs++] = i + 1;
			start = i + 1;
		}
	int open = start < nf; /* a run cut by the walk's end */
	if (open) {
		run_start[runs] = start;
		run_end[runs] = nf;
	}
	int py_cut = (pyflags & (HA_PY_F_TRUNCATED | HA_PY_F_INVALID)) != 0;
	int e = 0;
	for (int i = 0; i < n; i++)
		if (is_eval(m, pcs[i], i))
			evals[e++] = i;
	uint32_t all = runs + (uint32_t)open;
	uint32_t take;   /* runs put in place of eval frames */
	int append = 0;  /* the runs after them go outside the last frame */
	if ((uint32_t)e == runs && !open) {
		take = runs;
	} else if (py_cut && (uint32_t)e >= all) {
		take = all; /* outer eval frames stay native */
	} else if (native_cut && (uint32_t)e < all) {
		take = (uint32_t)e;
		append = 1;
	} else {
		m->st.unmatched++;
		return n;
	}
	if (nf == 0)
		return n;
	int k = 0, o = 0;
	for (int i = 0; i < n && o < max; i++) {
		if (k < (int)take && evals[k] == i) {
			int o0 = o;
			if (put_run(m, f, run_start[k], run_end[k], out, &o, max) < 0)
				return n;
			k++;
			if (o > o0)
				continue; /* an empty run keeps its eval frame */
		}
		out[o++] = pcs[i];
	}
	for (uint32_t r = take; append && r < all && o < max; r++)
		if (put_run(m, f, run_start[r], run_end[r], out, &o, max) < 0)
			return n;
	memcpy(pcs, out, (size_t)o * sizeof *pcs);
	m->st.merged++;
	return o;
}

/* Where the wrap of CPython's allocators stands (ha_proto.h, enum
 * ha_py_wrap), in the user's words. */
const char *ha_py_wrap_words(uint32_t state)
{
	switch (state) {
	case HA_PYW_WAITING:
		return "frames on; small objects: waiting for the main thread to run Python";
	case HA_PYW_ON:
		return "frames and small objects on";
	case HA_PYW_NOT_PYMALLOC:
		return "frames on (no pymalloc: every object through malloc)";
	case HA_PYW_FAILED:
		return "frames on; small objects not sampled (the allocator could not be wrapped)";
	}
	return "frames on; small objects as pymalloc's arenas";
}
