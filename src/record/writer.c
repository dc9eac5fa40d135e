/* writer.c -- the database writer thread (see writer.h). */
#define _GNU_SOURCE
#include "writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jitdump.h"
#include "live_feed.h"
#include "mem_feed.h"
#include "perfmap.h"
#include "pymerge.h"
#include "reach_names.h"
#include "symbolize.h"
#include "util.h"
#include "proc.h"

#define MAX_FRAMES 512 /* with inlined frames */
#define STACK_BATCH 1024 /* new stacks per transaction at most */
#define BATCH_MS 50      /* ...gathered for at most this long */

struct idmap {
	int64_t *v;
	size_t cap;
};

static int idmap_set(struct idmap *m, uint32_t local, int64_t id)
{
	if (local >= m->cap) {
		size_t cap = m->cap ? m->cap : 1024;
		while (cap <= local)
			cap *= 2;
		int64_t *nv = realloc(m->v, cap * sizeof *nv);
		if (!nv)
			return -1;
		memset(nv + m->cap, 0, (cap - m->cap) * sizeof *nv);
		m->v = nv;
		m->cap = cap;
	}
	m->v[local] = id;
	return 0;
}

static void fail(struct ha_writer *w, const char *what, const char *err)
{
	if (!w->failed)
		snprintf(w->err, sizeof w->err, "%s: %s", what, err);
	w->failed = 1;
}

/* Every THIN_EVERY periodic snapshots, the old ones thinned (db_thin.c):
 * a day's session keeps some 770 snapshots, not 8,640. */
#define THIN_EVERY 30

static void thin(struct ha_writer *w, const char *reason)
{
	char err[200];
	int removed;
	if (!(w->snapshot_period > 0) || strcmp(reason, "periodic") != 0 ||
	    ++w->since_thin < THIN_EVERY)
		return;
	w->since_thin = 0;
	if (ha_db_thin(w->db, w->session_id, w->snapshot_period, &removed, err, sizeof err))
		fail(w, "thinning old snapshots", err);
	else
		__atomic_fetch_add(&w->snapshots_thinned, (uint64_t)removed, __ATOMIC_RELAXED);
}

static void reach_free(struct ha_db_reach *r)
{
	if (r) {
		free(r->rows);
		for (size_t i = 0; i < r->nholders; i++)
			free(r->holders[i].name);
		free(r->holders);
		free(r);
	}
}

/* The scan of snapshot snap_id, its local ids made database ids (rows of
 * stacks not interned are left out). */
static void write_reach(struct ha_writer *w, struct ha_symbolizer *sym, struct idmap *ids,
                        struct ha_db_reach *r, int64_t snap_id)
{
	char err[200];
	size_t k = 0;
	for (size_t i = 0; i < r->nrows; i++) {
		uint64_t local = (uint64_t)r->rows[i].stack_id;
		if (local < ids->cap && ids->v[local] > 0) {
			r->rows[k] = r->rows[i];
			r->rows[k++].stack_id = ids->v[local];
		}
	}
	r->nrows = k;
	k = 0;
	for (size_t i = 0; i < r->nholders; i++) {
		uint64_t local = (uint64_t)r->holders[i].stack_id;
		if (local < ids->cap && ids->v[local] > 0) {
			r->holders[k] = r->holders[i];
			r->holders[k++].stack_id = ids->v[local];
		} else {
			free(r->holders[i].name);
		}
	}
	r->nholders = k;
	double t0 = ha_now_ms();
	ha_reach_name_holders(sym, r);   /* frames and definitions: the symbolizer's */
	if (w->verbose && r->nholders)
		fprintf(stderr, "heapattach: reachability scan: %zu holders named in %.1f ms\n",
		        r->nholders, ha_now_ms() - t0);
	if (ha_db_reach(w->db, snap_id, r, err, sizeof err))
		fail(w, "writing a reachability scan", err);
}

static void write_snapshot(struct ha_writer *w, struct ha_symbolizer *sym, struct idmap *ids,
                           struct ha_wmsg_snapshot *m)
{
	char err[200];
	size_t k = 0;
	/* Rows of stacks that could not be interned are left out, not guessed. */
	for (size_t i = 0; i < m->n; i++) {
		uint32_t local = (uint32_t)m->rows[i].stack_id;
		if (local < ids->cap && ids->v[local] > 0) {
			m->rows[k] = m->rows[i];
			m->rows[k++].stack_id = ids->v[local];
		}
	}
	/* the pinned bytes by call path: local ids made database ids too */
	size_t np = 0;
	for (size_t i = 0; m->mem && i < m->mem->npins; i++) {
		uint64_t local = (uint64_t)m->mem->pins[i].stack_id;
		if (local < ids->cap && ids->v[local] > 0) {
			m->mem->pins[np] = m->mem->pins[i];
			m->mem->pins[np++].stack_id = ids->v[local];
		}
	}
	if (m->mem)
		m->mem->npins = np;
	int64_t snap_id;
	if (ha_db_snapshot(w->db, w->session_id, &m->info, m->rows, k, &snap_id, err, sizeof err))
		fail(w, "writing a snapshot", err);
	else {
		/* snap_id 0: totals only, kept for the next commit (db_write.h);
		 * it has no call paths to push. */
		if (snap_id > 0)
			__atomic_store_n(&w->last_snapshot_id, snap_id, __ATOMIC_RELAXED);
		__atomic_fetch_add(&w->snapshots_written, 1, __ATOMIC_RELAXED);
		if (m->reach && snap_id > 0)
			write_reach(w, sym, ids, m->reach, snap_id);
		if (w->on_snapshot && snap_id > 0)
			w->on_snapshot(w->on_snapshot_arg, snap_id, m->info.reason);
		thin(w, m->info.reason);
	}
	reach_free(m->reach);
	m->reach = NULL;
}

/* Symbolize a new stack and store it. */
/* A symbolized stack as text for the live view: the frames, then their
 * strings, in one block (live_feed.h).  An unknown function shows as its
 * module offset. */
static void send_live_stack(struct ha_writer *w, uint32_t id, const struct ha_sym_frame *sf, int nf)
{
	size_t strings = 0;
	char hex[32];
	for (int i = 0; i < nf; i++)
		strings += strlen(sf[i].function) + strlen(sf[i].file) + strlen(sf[i].module) + 3 +
		           sizeof hex;
	struct ha_lmsg_stack *m = malloc(sizeof *m + (size_t)nf * sizeof m->f[0] + strings);
	if (!m)
		return;
	m->q.type = HA_LMSG_STACK;
	m->id = id;
	m->n = nf;
	char *p = (char *)&m->f[nf];
	for (int i = 0; i < nf; i++) {
		const char *fn = sf[i].function;
		if (!fn[0]) {
			snprintf(hex, sizeof hex, "0x%llx", (unsigned long long)sf[i].rel_pc);
			fn = hex;
		}
		const char *src[3] = { fn, sf[i].file, sf[i].module };
		const char **dst[3] = { &m->f[i].function, &m->f[i].file, &m->f[i].module };
		for (int k = 0; k < 3; k++) {
			size_t len = strlen(src[k]) + 1;
			memcpy(p, src[k], len);
			*dst[k] = p;
			p += len;
		}
		m->f[i].line = sf[i].line;
		m->f[i].inlined = sf[i].inlined;
	}
	ha_queue_put(w->to_live, &m->q);
}

/* A frame the symbolizer could not name: the target's perf map or jitdump
 * may (JIT code).  The map is read again (what was appended, if anything) before
 * the first such frame of each new callstack: its samples were taken just
 * before, so the lines written by then are in the file, and the newest
 * entry for the pc is the code that ran (perfmap.h; a line appended in
 * the few ms since, for code reusing the address, is taken for it).
 * Module "jit" (reports show "[jit]"), rel_pc the offset in the code. */
struct jit_names {
	struct ha_perfmap *pm;   /* the table, and the perf map's reader */
	struct ha_jitdump *jd;   /* the jitdump file's, into the same table */
};

static void jit_poll(struct jit_names *jn)
{
	ha_perfmap_poll(jn->pm);
	ha_jitdump_poll(jn->jd, jn->pm);
}

static void jit_name(struct ha_writer *w, struct jit_names *jn, int *polled, uint64_t pc,
                     int is_ra, struct ha_sym_frame *f)
{
	struct ha_perfmap *pm = jn->pm;
	uint64_t start;
	if (!*polled) {
		jit_poll(jn);
		*polled = 1;
	}
	const char *name = ha_perfmap_lookup(pm, pc - (is_ra ? 1 : 0), ha_perfmap_gen(pm), &start);
	if (!name)
		return;
	*f = (struct ha_sym_frame){ .module = "jit", .build_id = "", .rel_pc = pc - start,
	                            .function = name, .file = "", .line = 0, .inlined = 0 };
	__atomic_add_fetch(&w->jit_frames, 1, __ATOMIC_RELAXED);
}

/* What the Python frames' pcs name (pymerge.h): the collector's messages,
 * kept by id. */
struct py_names {
	struct ha_wmsg_pyframe **v;
	size_t cap;
};

static void py_name_keep(struct py_names *pn, struct ha_wmsg_pyframe *m)
{
	size_t had = pn->cap;
	struct ha_wmsg_pyframe **v =
		m->id ? ha_grow(pn->v, &pn->cap, (size_t)m->id + 1, sizeof(struct ha_wmsg_pyframe *), 256)
		      : NULL;
	if (!v) {
		free(m);
		return; /* its frames are stored without a name */
	}
	if (pn->cap > had)
		memset(v + had, 0, (pn->cap - had) * sizeof(struct ha_wmsg_pyframe *));
	pn->v = v;
	free(pn->v[m->id]);
	pn->v[m->id] = m;
}

static void py_name(const struct py_names *pn, uint64_t pc, struct ha_sym_frame *f)
{
	uint64_t id = pc - HA_PC_PY_BASE;
	const struct ha_wmsg_pyframe *m = id < pn->cap ? pn->v[id] : NULL;
	*f = (struct ha_sym_frame){ .module = HA_PY_MODULE, .build_id = "", .rel_pc = 0,
	                            .function = m ? m->text : "", .file = m ? m->text + m->func_len + 1 : "",
	                            .line = m ? m->line : 0, .inlined = 0 };
}

static void write_stack(struct ha_writer *w, struct ha_symbolizer *sym, struct jit_names *jn,
                        const struct py_names *pn, struct idmap *ids,
                        const struct ha_wmsg_stack *m)
{
	static struct ha_sym_frame sf[MAX_FRAMES];
	static struct ha_db_frame df[MAX_FRAMES];
	char err[200] = "";
	int nf = 0;
	int64_t id;
	int polled = 0;
	for (int i = 0; sym && i < m->n && nf < MAX_FRAMES; i++) {
		if (m->pcs[i] == HA_PC_OVER_CAP) {
			/* The module of the address after it (intern.h). */
			struct ha_sym_frame g[8];
			int k = i + 1 < m->n && m->pcs[i + 1] ? ha_symbolize(sym, m->pcs[i + 1], 0, g, 8) : 0;
			sf[nf++] = (struct ha_sym_frame){ .module = k > 0 ? g[0].module : "", .build_id = k > 0 ? g[0].build_id : "",
			                                  .rel_pc = 0, .function = HA_OVER_CAP_FUNCTION,
			                                  .file = "", .line = 0, .inlined = 0 };
			break;
		}
		if (m->pcs[i] == HA_PC_NOT_UNWOUND) {
			sf[nf++] = (struct ha_sym_frame){ .module = "", .build_id = "", .rel_pc = 0,
			                                  .function = HA_NOT_UNWOUND_FUNCTION,
			                                  .file = "", .line = 0, .inlined = 0 };
			continue;
		}
		if (ha_pc_is_py(m->pcs[i])) {
			py_name(pn, m->pcs[i], &sf[nf++]);
			continue;
		}
		int is_ra = i > 0 || m->first_is_return;
		int k = ha_symbolize(sym, m->pcs[i], is_ra, sf + nf, MAX_FRAMES - nf);
		if (jn->pm && k == 1 && !sf[nf].function[0])
			jit_name(w, jn, &polled, m->pcs[i], is_ra, &sf[nf]);
		nf += k;
	}
	for (int i = 0; i < nf; i++)
		df[i] = (struct ha_db_frame){ sf[i].module, sf[i].build_id, sf[i].rel_pc,
		                              sf[i].function, sf[i].file, sf[i].line, sf[i].inlined };
	if (ha_db_stack(w->db, df, nf, &id, err, sizeof err) || idmap_set(ids, m->local_id, id))
		fail(w, "storing a callstack", err[0] ? err : "out of memory");
	if (w->to_live)
		send_live_stack(w, m->local_id, sf, nf);
}

static void *writer_main(void *arg)
{
	struct ha_writer *w = arg;
	struct idmap ids = { 0 };
	struct py_names pn = { 0 };
	ha_background_thread();
	char err[200] = "";
	if (!w->prepared)
		ha_writer_prepare(w);
	struct ha_symbolizer *sym = w->sym;
	if (!sym && w->sym_err[0])
		fail(w, "symbolizer", w->sym_err);
	struct jit_names jn = { w->perfmap, w->jitdump };
	w->sym = NULL;
	w->perfmap = NULL;
	w->jitdump = NULL;
	struct ha_qmsg *q = NULL;
	const char *slow = getenv("HEAPATTACH_TEST_SLOW_WRITER_MS");
	long slow_ms = slow ? strtol(slow, NULL, 10) : 0;
	for (;;) {
		if (!q)
			q = ha_queue_get(&w->inbox, -1);
		if (q->type == HA_WMSG_PYFRAME) {
			py_name_keep(&pn, (struct ha_wmsg_pyframe *)q);
			q = NULL;
			continue;
		}
		if (q->type == HA_WMSG_STACK) {
			/* New stacks come in bursts (thousands when a session
			 * starts): the ones that come within BATCH_MS go into one
			 * transaction (a commit each cost ~0.1 ms and rewrote the
			 * same pages).  A snapshot or the end closes the batch. */
			static uint32_t batch_locals[STACK_BATCH];
			int batch = !w->failed && ha_db_batch_begin(w->db, err, sizeof err) == 0;
			int n = 0;
			double t_end = ha_now_ms() + BATCH_MS;
			do {
				if (q->type == HA_WMSG_PYFRAME) {
					batch_locals[n] = UINT32_MAX; /* no stack */
					py_name_keep(&pn, (struct ha_wmsg_pyframe *)q);
				} else {
					batch_locals[n] = ((struct ha_wmsg_stack *)q)->local_id;
					write_stack(w, sym, &jn, &pn, &ids, (struct ha_wmsg_stack *)q);
					free(q);
				}
				int left = (int)(t_end - ha_now_ms());
				q = ++n < STACK_BATCH ? ha_queue_get(&w->inbox, left > 0 ? left : 0) : NULL;
			} while (q && (q->type == HA_WMSG_STACK || q->type == HA_WMSG_PYFRAME));
			if (batch && ha_db_batch_commit(w->db, err, sizeof err) != 0) {
				fail(w, "storing callstacks", err);
				/* The batch's ids went with it: snapshots would
				 * name stacks that are not there. */
				for (int i = 0; i < n; i++)
					if (batch_locals[i] < ids.cap)
						ids.v[batch_locals[i]] = 0;
			}
			continue; /* q: the next message, if one was taken */
		} else if (q->type == HA_WMSG_SNAPSHOT) {
			struct ha_wmsg_snapshot *m = (struct ha_wmsg_snapshot *)q;
			/* Tests only: a writer slower than the snapshots
			 * (t_writer_behind; a slow disk in real life). */
			if (slow_ms > 0)
				usleep((useconds_t)slow_ms * 1000);
			jit_poll(&jn);           /* what the JIT wrote meanwhile */
			write_snapshot(w, sym, &ids, m);
			free(m->rows);
			ha_mem_feed_free(m->mem);
		} else if (q->type == HA_WMSG_MAPS) {
			ha_symbolizer_maps_changed(sym);
		} else if (q->type == HA_WMSG_END) {
			struct ha_wmsg_end *m = (struct ha_wmsg_end *)q;
			if (m->python[0] &&
			    ha_db_session_python(w->db, w->session_id, m->python, err, sizeof err))
				fail(w, "closing the session", err);
			if (ha_db_end_session(w->db, w->session_id, m->end_time, err, sizeof err))
				fail(w, "closing the session", err);
			break; /* w->end is not heap-allocated */
		}
		free(q);
		q = NULL;
	}
	free(ids.v);
	for (size_t i = 0; i < pn.cap; i++)
		free(pn.v[i]);
	free(pn.v);
	/* The profile is complete: only now the time to fill the cache. */
	ha_symbolizer_store_cache(sym, w->verbose);
	ha_symbolizer_free(sym);
	ha_jitdump_free(jn.jd);
	ha_perfmap_free(jn.pm);
	if (!w->keep_db) {
		ha_db_close(w->db);
		w->db = NULL;
	}
	return NULL;
}

void ha_writer_init(struct ha_writer *w)
{
	ha_queue_init(&w->inbox);
}

void ha_writer_prepare(struct ha_writer *w)
{
	char err[200] = "";
	double t0 = ha_now_ms();
	w->prepared = 1;
	/* Without a symbolizer stacks are still stored, as frames without names.
	 * A target that exited already (it may, right after the attach) leaves
	 * nothing to symbolize: that is no failure to write the profile. */
	w->sym = ha_symbolizer_new(w->pid, err, sizeof err);
	if (!w->sym && ha_proc_alive(w->pid))
		snprintf(w->sym_err, sizeof w->sym_err, "%s", err);
	if (w->on_missing)
		ha_symbolizer_on_missing(w->sym, w->on_missing, w->missing_ctx);
	pid_t own = w->own_pid ? w->own_pid : w->pid;
	w->perfmap = ha_perfmap_new(w->pid, own);
	w->jitdump = ha_jitdump_new(w->pid, own);
	struct jit_names jn = { w->perfmap, w->jitdump };
	jit_poll(&jn);
	if (w->verbose) {
		int prepared, n = ha_symbolizer_modules(w->sym, &prepared);
		fprintf(stderr, "heapattach: the files of %d modules of code (of %d) opened in %.1f ms\n",
		        prepared, n, ha_now_ms() - t0);
	}
}

void ha_writer_discard(struct ha_writer *w)
{
	struct ha_qmsg *q;
	while ((q = ha_queue_get(&w->inbox, 0)) != NULL) {
		if (q->type == HA_WMSG_SNAPSHOT) {
			free(((struct ha_wmsg_snapshot *)q)->rows);
			ha_mem_feed_free(((struct ha_wmsg_snapshot *)q)->mem);
		}
		if (q != &w->end.q)
			free(q);
	}
	ha_queue_destroy(&w->inbox);
	ha_symbolizer_free(w->sym);
	ha_perfmap_free(w->perfmap);
	ha_jitdump_free(w->jitdump);
	w->sym = NULL;
	w->perfmap = NULL;
	w->jitdump = NULL;
}

int ha_writer_start(struct ha_writer *w)
{
	if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
		snprintf(w->err, sizeof w->err, "cannot start the writer thread");
		return -1;
	}
	return 0;
}

void ha_writer_note_python(struct ha_writer *w, const char *text)
{
	snprintf(w->end.python, sizeof w->end.python, "%s", text);
}

void ha_writer_finish(struct ha_writer *w, double end_time)
{
	w->end.q.type = HA_WMSG_END;
	w->end.end_time = end_time;
	ha_queue_put(&w->inbox, &w->end.q);
	pthread_join(w->thread, NULL);
	ha_queue_destroy(&w->inbox);
}
