/*
 * collector.c -- the collector thread (see collector.h).
 *
 * Everything read from the ring comes from the target and is untrusted:
 * each record's length, type and stack length are checked against what the
 * ring and the record can hold before anything is used.
 *
 * The cost per sample is what the target pays on a busy machine, so the
 * common path is batched: the thread sleeps until a share of the ring has
 * filled, then takes HA_BATCH records at a time -- frame and copy out their
 * headers, unwind their stacks (mostly whole-stack cache hits, whose cache
 * entry also remembers the callstack id: no hashing of the pcs), book them
 * in ring order -- and hands the space back with one store of cons per
 * 1/CONSUME_DIV of the ring.  No allocation, system call, clock read or
 * atomic read-modify-write per record; the counters are ours and published
 * once per drain.
 *
 * Its jobs each have a file: reading a ring (ring_read.c), pcs into
 * buckets (intern.c), when modules records have the maps read again
 * (modules_gate.c), the adaptive interval (interval.c), --rss's samples
 * and pages (rss_feed.c), the peak (peak.c), the book (book.c).  This file
 * is the loop that drives them and the messages it sends: snapshots to
 * the writer, frames to a live view. */
#define _GNU_SOURCE
#include "collector.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "book.h"
#include "ha_ring.h"
#include "ha_ring_map.h"
#include "intern.h"
#include "interval.h"
#include "live_feed.h"
#include "mem_feed.h"
#include "modules_gate.h"
#include "peak.h"
#include "proc.h"
#include "pymerge.h"
#include "ring_read.h"
#include "rss_feed.h"
#include "sref.h"
#include "unwind.h"
#include "util.h"
#include "writer.h"

_Static_assert(HA_REC_KIND_HEAP == HA_KIND_HEAP && HA_REC_KIND_MMAP == HA_KIND_MMAP,
               "ring kinds are the database kinds");
#define RING_WAIT_MS 10       /* poll period of the ring when it is quiet */
#define NAP_FILL_DIV 8        /* a busy ring: wake up at about 1/8 full */
#define CONSUME_DIV 16        /* hand space back every 1/16 of the ring, not per record */
#define WCACHE 2048           /* sample weights by size (direct-mapped) */
#define MEM_POLL_MS 100       /* the target's RSS read at least this often */

/* The collector thread's state: each job a part of its own (the files
 * named), this file the loop that drives them. */
struct ctx {
	struct ha_collector *c;
	struct ha_book *book;
	struct ha_unwinder *unw;
	struct ha_srefs *srefs;       /* stack references published (NULL: none) */
	struct ha_intern in;          /* pcs into buckets (intern.h) */
	struct ha_pymerge py;         /* Python frames into stacks (pymerge.h) */
	struct ha_ring_reader ring[HA_RINGS_MAX]; /* ring_read.h */
	uint32_t nrings;
	struct ha_modules_gate mods;  /* when the maps are read again (modules_gate.h) */
	struct ha_interval iv;        /* the adaptive interval (interval.h) */
	uint64_t period_interval;     /* the largest since the last snapshot */
	double rate;                  /* recent input, bytes per ms (the naps) */
	struct ha_rss_feed rss;       /* --rss (rss_feed.h) */
	struct ha_peak peak;          /* the session's highest live total (peak.h) */
	double mem_rss_anon, mem_terms[HA_MT_COUNT]; /* the last breakdown (mem_feed.h) */
	struct ha_proc_mem mem;       /* the target's memory as last read whole... */
	double mem_unix;              /* ...at this unix time (0: never) */
	double mem_ms;                /* ...and ha_now_ms then */
	struct ha_collector_stats st; /* ours; published to c->stats per drain */
	uint64_t rec_ns;              /* latest sample time booked (target's clock) */
	uint64_t start_ns;            /* CLOCK_MONOTONIC when the collector started */
	double start_unix;            /* ...and the unix time then */
	struct ha_db_cadence cadence; /* which snapshots carry their paths */
	struct ha_rec_item batch[HA_BATCH];
	uint64_t pcs[HA_BATCH][HA_MAX_PCS]; /* pcs of batch[i] */
	struct { uint64_t size, interval; double w; } wc[WCACHE];
};

/* Single writer: plain relaxed stores, no read-modify-write on the bus. */
static void publish_stats(struct ctx *x)
{
	x->st.py_samples = x->py.st.samples;
	x->st.py_merged = x->py.st.merged;
	x->st.py_unmatched = x->py.st.unmatched;
	x->st.py_frames_gone = x->py.st.frames_gone;
	uint32_t wrap = __atomic_load_n(&x->c->ring->py_wrap, __ATOMIC_RELAXED);
	if (x->c->verbose && x->c->py_resolve && wrap != x->st.py_wrap)
		fprintf(stderr, "heapattach: Python %s\n", ha_py_wrap_words(wrap));
	x->st.py_wrap = wrap;
	const uint64_t *src = (const uint64_t *)&x->st;
	uint64_t *dst = (uint64_t *)&x->c->stats;
	for (size_t i = 0; i < HA_COLLECTOR_NSTATS; i++)
		__atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
}

/* ha_sample_weight, remembered per (size, interval): the interval rarely
 * changes and sizes repeat. */
#define WC_SLOT(size, interval) (((size) ^ (interval)) & (WCACHE - 1))
static double weight_of(struct ctx *x, uint64_t size, uint64_t interval)
{
	__typeof__(x->wc[0]) *e = &x->wc[WC_SLOT(size, interval)];
	if (e->w == 0 || e->size != size || e->interval != interval) {
		e->size = size;
		e->interval = interval;
		e->w = ha_sample_weight(size, interval);
	}
	return e->w;
}

/* The target's modules changed (a modules record, or a generation only the
 * ring header shows): the unwinder's maps and the symbolizer's modules are
 * read again, when the gate says so (modules_gate.h). */
static void maps_changed(struct ctx *x, double now)
{
	if (!ha_modules_gate_ask(&x->mods, now))
		return;
	ha_unwinder_maps_changed(x->unw);
	/* The writer refreshes its symbolizer's view of the modules before it
	 * symbolizes the callstacks that follow. */
	struct ha_qmsg *m = calloc(1, sizeof *m);
	if (m) {
		m->type = HA_WMSG_MAPS;
		ha_queue_put(x->c->to_writer, m);
	}
	ha_modules_gate_done(&x->mods, now, ha_now_ms());
}

/* Unwind the batch's samples, timed as a whole. */
static void unwind_batch(struct ctx *x, int k)
{
	/* A modules generation the ring header shows and no record brought
	 * (the ring had no room for it): the same as its record. */
	uint16_t gen = (uint16_t)__atomic_load_n(&x->c->ring->modules_gen, __ATOMIC_ACQUIRE);
	if (ha_srefs_modules(x->srefs, gen))
		maps_changed(x, ha_now_ms());
	if (x->mods.pending)
		maps_changed(x, ha_now_ms());
	if (!x->book)
		return;
	double t0 = ha_now_ms();
	/* First ask for the lines the unwinder's cache lookups will read, for
	 * the whole batch, so that the misses overlap. */
	for (int stage = 0; stage < 2; stage++)
		for (int i = 0; i < k; i++) {
			const struct ha_rec_item *it = &x->batch[i];
			if (it->type == HA_REC_SAMPLE && it->ok && !(it->s.h.flags & HA_REC_F_SREF))
				ha_unwind_prefetch(x->unw, &it->s.regs, it->stack, it->s.stack_len, stage);
		}
	for (int i = 0; i < k; i++) {
		struct ha_rec_item *it = &x->batch[i];
		if (it->type != HA_REC_SAMPLE || !it->ok)
			continue;
		int n;
		if (it->s.h.flags & HA_REC_F_SREF) {
			/* The agent found its stack in the table: the pcs kept
			 * with what was published there. */
			struct ha_rec_sref ref;
			memcpy(&ref, it->stack, sizeof ref);
			n = ha_srefs_resolve(x->srefs, &ref, it->s.regs.rip, x->pcs[i], HA_MAX_PCS);
			it->sref_slot = ref.slot;
			it->sref_seq = n > 0 ? ref.seq : 0;
			it->ref = 0;
		} else {
			n = x->unw ? ha_unwind(x->unw, &it->s.regs, it->stack, it->s.stack_len, x->pcs[i],
			                       HA_MAX_PCS)
			           : -1;
			/* A walk that ended inside the agent has nothing of the
			 * program: as good as none (and never published). */
			if (n > 0 && ha_intern_in_agent(&x->in, x->pcs[i][n - 1]))
				n = 0;
			it->ref = n > 0 ? ha_unwind_ref(x->unw) : 0;
			/* Not with maps older than the newest modules record: the
			 * entry must hold for the modules the agent has now. */
			if (it->ref && !x->mods.pending)
				ha_srefs_offer(x->srefs, x->unw, it->ref, it->s.stack_len, HA_MAX_PCS, t0);
		}
		if (n <= 0) {
			x->st.unwind_failures++;
			n = 0;
		}
		it->n = n;
	}
	x->st.unwind_ns += (uint64_t)((ha_now_ms() - t0) * 1e6);
}

/* The bucket of a sample (0: out of memory). */
static uint32_t sample_bucket(struct ctx *x, const struct ha_rec_item *it, uint64_t *pcs)
{
	int kind = it->s.kind == HA_REC_KIND_MMAP ? HA_KIND_MMAP : HA_KIND_HEAP;
	/* The same pcs as a callstack booked before: its buckets, kept by the
	 * unwinder's cache entry (the agent range, hence the pcs kept, never
	 * changes). */
	uint32_t *ids = it->sref_seq ? ha_srefs_ids(x->srefs, it->sref_slot, it->sref_seq)
	                : it->ref    ? ha_unwind_user(x->unw, it->ref)
	                             : NULL;
	/* Not unwound: what the agent knew, the program's call of the
	 * allocation function, then a frame saying the rest is missing (one
	 * bucket per such leaf, never one "(no frames)" for them all). */
	if (it->n == 0 && it->s.caller) {
		pcs[0] = it->s.caller;
		pcs[1] = HA_PC_NOT_UNWOUND;
		return ha_intern_bucket(&x->in, pcs, 2, kind, NULL, 1);
	}
	if (it->py && x->c->py_resolve && it->n > 0) {
		/* The same native pcs carry other Python frames each time: no
		 * bucket kept with the native stack. */
		static struct ha_py_frame f[HA_PY_DEPTH_MAX];
		memcpy(f, it->py, (size_t)it->py_n * sizeof *f);
		int cut = (it->s.h.flags & HA_REC_F_TRUNCATED) || it->n >= HA_MAX_PCS;
		int n = ha_pymerge(&x->py, pcs, it->n, HA_MAX_PCS, cut, f, it->py_n, it->py_flags);
		return ha_intern_bucket(&x->in, pcs, n, kind, NULL, 0);
	}
	return ha_intern_bucket(&x->in, pcs, it->n, kind, ids, 0);
}

/* The target's memory, read now, kept with its time when read whole; once
 * the target is gone (or exiting), the last reading, which the loop keeps
 * fresh (MEM_POLL_MS): a target that grows and exits between two snapshots
 * does not shrink to 0.  1: read now; 0: the last (none: mem_unix 0). */
static int read_mem(struct ctx *x)
{
	struct ha_proc_mem m;
	x->mem_ms = ha_now_ms();
	if (ha_proc_mem(x->c->pid, x->rss.pf != NULL, &m) < 0)
		return 0;
	x->mem = m;
	x->mem_unix = ha_unix_now();
	return 1;
}

/* The target's memory and the rings' drops, now: what a snapshot and a
 * live frame both record. */
struct target_now {
	struct ha_proc_mem mem;
	int mem_now;               /* read now, or the last reading (read_mem) */
	uint64_t drops;
};

static void read_target(struct ctx *x, struct target_now *t)
{
	t->mem_now = read_mem(x);
	t->mem = x->mem;
	t->drops = ha_rings_drops(x->c->ring, x->c->data_size, x->nrings);
}

/* The counters a snapshot taken now records (its time, reason and interval
 * are the caller's). */
static void counters_now(struct ctx *x, struct ha_db_snapshot *s)
{
	struct target_now t;
	read_target(x, &t);
	s->rss_bytes = t.mem.rss;
	s->rss_last = !t.mem_now;
	s->rss_time = x->mem_unix;
	s->samples = x->st.samples;
	s->drops = t.drops;
	s->unwind_failures = x->st.unwind_failures;
	ha_unwinder_fp_stats(x->unw, &s->fp_frames, &s->frames);
	struct ha_srefs_stats rs;
	ha_srefs_stats(x->srefs, &rs);
	s->fp_frames += rs.fp_frames;
	s->frames += rs.frames;
	if (x->rss.pf) {
		s->rss_anon_bytes = t.mem.rss_anon;
		s->swap_bytes = t.mem.swap;
		s->rss_samples = x->st.rss_samples;
		s->rss_lost = x->st.rss_lost;
	}
}

/* A peak copy if the total is a new high (peak.h). */
static void peak_check(struct ctx *x)
{
	if (ha_peak_after_records(&x->peak, x->book, x->rec_ns)) {
		/* A peak copy was just made: what its snapshot will say. */
		counters_now(x, &x->peak.info);
		x->peak.info.sample_interval = x->iv.now;
	}
}

/* The bookkeeping of the batch, in ring order: first every sample's
 * bucket, asking for the lines the updates will touch, then the updates.
 * The peak is looked at where the total may have been highest: before a
 * free that follows samples, and at the end (a batch that reached its
 * high and then freed, as a program that exits does, kept it from the
 * check at its end alone). */
static void apply_batch(struct ctx *x, int k)
{
	int rose = 0;
	if (x->book)
		for (int i = 0; i < k; i++) {
			struct ha_rec_item *it = &x->batch[i];
			if (!it->ok)
				continue;
			if (it->type == HA_REC_SAMPLE) {
				it->bucket = sample_bucket(x, it, x->pcs[i]);
				ha_book_prefetch(x->book, it->bucket, it->bucket ? it->s.addr : 0);
				__builtin_prefetch(&x->wc[WC_SLOT(it->s.size, it->s.interval)]);
			} else if (it->type == HA_REC_FREE) {
				ha_book_prefetch(x->book, 0, it->addr);
			}
		}
	for (int i = 0; i < k; i++) {
		const struct ha_rec_item *it = &x->batch[i];
		if (!it->ok)
			continue;
		switch (it->type) {
		case HA_REC_SAMPLE:
			if (x->book && it->bucket) {
				ha_book_alloc(x->book, it->bucket, it->s.addr, it->s.size,
				              weight_of(x, it->s.size, it->s.interval));
				rose = 1;
				x->st.samples++;
				if (it->s.time_ns > x->rec_ns)
					x->rec_ns = it->s.time_ns;
			}
			break;
		case HA_REC_FREE:
			if (x->book && rose)
				peak_check(x);
			rose = 0;
			if (x->book)
				ha_book_release(x->book, it->addr);
			x->st.frees++;
			break;
		case HA_REC_MODULES:
			/* Every ring has a copy of each (the samples after it in
			 * any ring may need the new maps): the first one read is
			 * acted on. */
			if (ha_modules_gate_record(&x->mods, it->flags))
				maps_changed(x, ha_now_ms());
			ha_srefs_modules(x->srefs, it->flags);
			break;
		}
	}
	if (x->book)
		peak_check(x);
}

/* Consume the published records of ring r, at most about a ring's worth.
 * Returns how many. */
static size_t drain_ring(struct ctx *x, struct ha_ring_reader *r)
{
	size_t n = 0;
	int k;
	ha_reader_heal(r, x->iv.now);
	uint64_t start = r->pos;
	while (r->rpos - start < x->c->data_size &&
	       (k = ha_reader_frame(r, x->batch, HA_BATCH, &x->st)) > 0) {
		unwind_batch(x, k);
		apply_batch(x, k);
		n += (size_t)k;
		if (r->rpos - r->pos >= x->c->data_size / CONSUME_DIV)
			ha_reader_consume(r);
	}
	ha_reader_consume(r);
	return n;
}

/* Consume the published records of every ring, at most about a ring's
 * worth of each (then the caller looks at its commands).  One ring after
 * the other: the records of one block are all in one ring, in order
 * (ha_proto.h, section 4), and no bookkeeping depends on the order of two
 * blocks.  Returns how many. */
static size_t drain(struct ctx *x)
{
	size_t n = 0;
	uint64_t repairs = 0, skipped = 0;
	for (uint32_t i = 0; i < x->nrings; i++) {
		n += drain_ring(x, &x->ring[i]);
		repairs += x->ring[i].heal.repairs;
		skipped += x->ring[i].heal.skipped;
	}
	ha_rss_feed_drain(&x->rss, &x->st);
	x->st.ring_repairs = repairs;
	x->st.ring_skipped = skipped;
	publish_stats(x);
	return n;
}

/* Periodic snapshots queued for the writer and not written, at most: past
 * it the next periodic one is skipped (its changes go with the one after),
 * so that a slow writer cannot make the queue, and our memory, grow
 * without end.  Asked-for snapshots are never skipped. */
#define SNAPSHOTS_IN_FLIGHT 2

static void snapshot(struct ctx *x, const char *reason)
{
	struct ha_collector *c = x->c;
	if (c->writer_done && strcmp(reason, "periodic") == 0 &&
	    x->st.snapshots - __atomic_load_n(c->writer_done, __ATOMIC_RELAXED) >= SNAPSHOTS_IN_FLIGHT) {
		x->st.snapshots_skipped++;
		publish_stats(x);
		return;
	}
	struct ha_wmsg_snapshot *m = calloc(1, sizeof *m);
	if (!m)
		return;
	m->q.type = HA_WMSG_SNAPSHOT;
	/* The baseline (the first snapshot) has no rows: the page faults of the
	 * attach itself are booked with the next one. */
	if (x->st.snapshots > 0)
		ha_rss_feed_check(&x->rss, &x->st);
	/* Paths or totals only (db_write.h); the peak is over those with paths. */
	double now = ha_unix_now();
	int paths = ha_db_cadence_paths(&x->cadence, reason, now, c->snapshot_period);
	if (x->book && paths)
		ha_peak_at_snapshot(&x->peak, x->book);
	m->n = x->book && paths ? ha_book_take_changed(x->book, &m->rows) : 0;
	counters_now(x, &m->info);
	m->info.memory = m->mem = c->no_memory_view || !paths ? NULL
	                                                    : ha_mem_feed_read(c, x->book, &x->st);
	ha_mem_feed_keep(m->mem, &x->mem_rss_anon, x->mem_terms);
	m->info.time = now;
	m->info.reason = reason;
	m->info.sample_interval = x->period_interval;
	m->info.totals_only = !paths;
	if (x->book)
		ha_book_totals(x->book, &m->info);
	x->period_interval = x->iv.now;
	if (c->reach && x->book && paths)
		c->reach(c->reach_ctx, x->book, x->unw, m);
	ha_queue_put(c->to_writer, &m->q);
	x->st.snapshots++;
	publish_stats(x);
}

/* Every bucket's values, for a live view (live_feed.h). */
static void live_frame(struct ctx *x)
{
	struct ha_collector *c = x->c;
	double t0 = ha_now_ms();
	size_t n = x->book ? ha_book_count(x->book) : 0;
	struct ha_lmsg_frame *m = malloc(sizeof *m + n * sizeof m->rows[0]);
	if (!m || !c->to_live) {
		free(m);
		return;
	}
	struct target_now t;
	read_target(x, &t);
	memset(m, 0, sizeof *m);
	m->q.type = HA_LMSG_FRAME;
	m->time = ha_unix_now();
	m->samples = x->st.samples;
	m->drops = t.drops;
	m->interval = x->iv.now;
	m->rss_bytes = t.mem.rss;
	m->rss_last = !t.mem_now;
	m->rss_time = x->mem_unix;
	m->rss_on = x->rss.pf != NULL;
	if (m->rss_on) {
		m->rss_anon_bytes = t.mem.rss_anon;
		m->rss_samples = x->st.rss_samples;
	}
	for (int k = 0; k < HA_KIND_COUNT && x->book; k++)
		m->kind_bytes[k] = ha_book_live_bytes(x->book, k);
	ha_mem_feed_keep_copy(x->mem_rss_anon, x->mem_terms, &m->mem_rss_anon, m->mem_terms);
	for (size_t i = 0; i < n; i++) {
		const struct ha_db_bucket *v = ha_book_value(x->book, (uint32_t)(i + 1));
		m->rows[m->n++] = (struct ha_live_bucket){ .id = (uint32_t)(i + 1), .kind = v->kind,
		                                           .live_bytes = v->live_bytes,
		                                           .live_count = v->live_count,
		                                           .alloc_bytes = v->alloc_bytes,
		                                           .alloc_count = v->alloc_count };
	}
	ha_queue_put(c->to_live, &m->q);
	x->st.live_frames++;
	x->st.live_ns += (uint64_t)((ha_now_ms() - t0) * 1e6);
}

/* The unix time of a record time (the target's CLOCK_MONOTONIC, untrusted), kept in the session. */
static double record_unix_time(const struct ctx *x, uint64_t ns)
{
	double t = x->start_unix + ((double)ns - (double)x->start_ns) / 1e9, now = ha_unix_now();
	return t < x->start_unix ? x->start_unix : t > now ? now : t;
}

/* The peak copy as a snapshot of its own (reason "peak"), if higher than
 * every snapshot: written after the last records are booked, before the
 * final snapshot, which writes again every bucket it holds (book.h). */
static void snapshot_peak(struct ctx *x)
{
	struct ha_collector *c = x->c;
	if (!x->book || !ha_peak_pending(&x->peak, x->book))
		return;
	struct ha_wmsg_snapshot *m = calloc(1, sizeof *m);
	if (!m)
		return;
	m->q.type = HA_WMSG_SNAPSHOT;
	m->n = ha_book_take_peak(x->book, &m->rows);
	m->info = x->peak.info;
	m->info.time = record_unix_time(x, x->peak.copy_ns);
	m->info.reason = "peak";
	ha_queue_put(c->to_writer, &m->q);
	x->st.snapshots++;
	x->st.peak_bytes = (uint64_t)x->peak.copy_total;
	x->st.peak_unix_ms = (uint64_t)(m->info.time * 1e3);
}

/* The session is over: the agent detached (it waits for its writers
 * first) or the target is gone, so nothing more will be published.  Take
 * every record there is, whether the main thread noticed the end before or
 * after the last ones were read; a reservation never published is skipped
 * at once. */
static void drain_final(struct ctx *x)
{
	/* drain takes at most a ring's worth: only a drain that found nothing
	 * at rpos means the record there will never come.  Two rings' worth
	 * at most: a target can keep a mapping of its ring after the agent
	 * unmapped it (mremap) and go on writing records for ever. */
	uint64_t start[HA_RINGS_MAX] = { 0 };
	for (uint32_t i = 0; i < x->nrings; i++)
		start[i] = x->ring[i].pos;
	for (;;) {
		int more = drain(x) > 0;
		for (uint32_t i = 0; i < x->nrings && !more; i++)
			more = ha_reader_skip_to_next(&x->ring[i], &x->st);
		for (uint32_t i = 0; i < x->nrings; i++)
			if (x->ring[i].rpos - start[i] > 2 * x->c->data_size)
				more = 0;
		if (!more)
			break;
	}
}

/* The adaptive interval (interval.h), applied: the ring header's word the
 * agent's threads read at their next sample, the stats, and a line. */
static void adapt_interval(struct ctx *x, double now)
{
	struct ha_collector *c = x->c;
	if (!c->adaptive)
		return;
	uint64_t drops = ha_rings_drops(c->ring, c->data_size, x->nrings), fill = 0;
	for (uint32_t i = 0; i < x->nrings; i++) {
		uint64_t f = ha_reader_fill(&x->ring[i]);
		if (f > fill)
			fill = f;
	}
	uint64_t old = x->iv.now, v = ha_interval_next(&x->iv, drops, fill, c->data_size, now);
	if (!v)
		return;
	__atomic_store_n(&c->ring->interval, v, __ATOMIC_RELAXED);
	if (v > x->period_interval)
		x->period_interval = v;
	if (v > x->st.interval_max)
		x->st.interval_max = v;
	x->st.interval = v;
	/* Raised and back always said; the steps down only with -v. */
	if (v > old)
		fprintf(stderr, "heapattach: ring overflowing: sampling interval raised to %llu bytes\n",
		        (unsigned long long)v);
	else if (v == c->interval || c->verbose)
		fprintf(stderr, "heapattach: sampling interval %s %llu bytes\n",
		        v == c->interval ? "back to" : "lowered to", (unsigned long long)v);
}

/* Run the commands waiting in the inbox.  Returns 1 after HA_CMD_STOP. */
static int run_cmds(struct ctx *x)
{
	struct ha_collector *c = x->c;
	struct ha_qmsg *q;
	int stop = 0;
	while (__atomic_load_n(&c->cmds_pending, __ATOMIC_ACQUIRE) > 0 &&
	       (q = ha_queue_get(&c->inbox, 0)) != NULL) {
		struct ha_cmd *cmd = (struct ha_cmd *)q;
		__atomic_fetch_sub(&c->cmds_pending, 1, __ATOMIC_RELAXED);
		if (q->type == HA_CMD_LIVE) {
			drain(x);
			live_frame(x);
			free(q);
			continue;
		}
		if (q->type == HA_CMD_STOP) {
			drain_final(x);
			snapshot_peak(x);
			stop = 1;
		} else {
			drain(x);
		}
		snapshot(x, cmd->reason);
		if (cmd != &c->stop_cmd)
			free(q);
	}
	return stop;
}

/* How long to sleep after a drain that took bytes records in ms since the
 * previous one: until the ring would be NAP_FILL_DIV-th full at the recent
 * rate, between 1 ms and RING_WAIT_MS.  The producers wake us at a quarter,
 * but such a wake-up can be missed and the machine may not run us at once:
 * most of the ring stays headroom for that. */
static int nap_ms(struct ctx *x, uint64_t bytes, double ms)
{
	if (ms <= 0)
		return RING_WAIT_MS;
	double rate = (double)bytes / ms;           /* bytes per ms */
	/* Quick to rise, slower to fall. */
	x->rate = rate > x->rate ? rate : (x->rate + rate) / 2;
	double t = (double)x->c->data_size / NAP_FILL_DIV / (x->rate > 1 ? x->rate : 1);
	return t >= RING_WAIT_MS ? RING_WAIT_MS : t <= 1 ? 1 : (int)t;
}

/* The sum of the rings' consumed positions: what it grew by between two
 * looks is what was consumed. */
static uint64_t consumed(const struct ctx *x)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < x->nrings; i++)
		n += x->ring[i].pos;
	return n;
}

/* Sleep until records or a command come, or ms pass. */
static void nap(struct ctx *x, int ms)
{
	/* A corrupt record at pos: ha_rings_wait returns at once (it checks
	 * the records first), so sleep the poll period instead. */
	struct ha_ring_hdr *hdrs[HA_RINGS_MAX];
	uint64_t pos[HA_RINGS_MAX];
	int corrupt = 0;
	for (uint32_t i = 0; i < x->nrings; i++) {
		corrupt |= ha_reader_stuck_on_corrupt(&x->ring[i]);
		hdrs[i] = x->ring[i].h;
		pos[i] = x->ring[i].pos;
	}
	if (corrupt) {
		struct timespec ts = { 0, RING_WAIT_MS * 1000000L };
		nanosleep(&ts, NULL);
	} else {
		ha_rings_wait(hdrs, pos, x->nrings, x->c->data_size, ms);
	}
}

/* Make the thread's parts.  Without an unwinder the ring is still drained
 * (a --block target must never wait on us); samples count as unwind
 * failures, and c->err says why. */
static struct ctx *ctx_new(struct ha_collector *c)
{
	/* Big (the batch's pcs): on the heap, not on the thread's stack. */
	struct ctx *x = calloc(1, sizeof *x);
	char err[200] = "";
	if (!x)
		return NULL;
	x->c = c;
	x->book = ha_book_new();
	x->unw = ha_unwinder_new(c->pid, err, sizeof err);
	/* Tests only: a session whose every sample fails to unwind, as when
	 * the unwinder cannot be made (what such samples are booked as). */
	if (getenv("HEAPATTACH_TEST_NO_UNWIND")) {
		ha_unwinder_free(x->unw);
		x->unw = NULL;
		snprintf(err, sizeof err, "no unwinder (HEAPATTACH_TEST_NO_UNWIND)");
	}
	if (x->unw && !c->no_stack_refs)
		x->srefs = ha_srefs_new((struct ha_sref *)((char *)c->ring + HA_SREF_OFF));
	ha_intern_init(&x->in, c->pid, x->book, c->to_writer, &x->st.buckets, c->max_callpaths,
	               &x->st.callpaths_folded);
	ha_pymerge_init(&x->py, (const uint64_t(*)[2])c->py_eval, c->py_resolve,
	                c->py_resolve_ctx, c->to_writer);
	ha_rss_feed_open(&x->rss, c->pid, c->pf, c->rss_period, x->unw, &x->in);
	x->nrings = c->rings >= 1 && c->rings <= HA_RINGS_MAX ? c->rings : 1;
	for (uint32_t i = 0; i < x->nrings; i++)
		ha_reader_init(&x->ring[i], ha_ring_at(c->ring, c->data_size, i), c->data_size);
	if (!x->book || !x->unw)
		snprintf(c->err, sizeof c->err, "collector: %s", x->book ? err : "out of memory");
	return x;
}

/* What only the end knows: the caches' and the thread's totals. */
static void final_stats(struct ctx *x)
{
	uint64_t hits, misses;
	ha_unwinder_cache_stats(x->unw, &hits, &misses);
	x->st.unwind_cached += hits;
	ha_unwinder_fp_stats(x->unw, &x->st.fp_frames, &x->st.frames);
	x->st.scan_frames = ha_unwinder_scan_frames(x->unw);
	struct ha_srefs_stats rs;
	ha_srefs_stats(x->srefs, &rs);
	x->st.sref_published = rs.published;
	x->st.sref_hits = rs.hits;
	x->st.sref_stale = rs.stale;
	x->st.frames += rs.frames;
	x->st.fp_frames += rs.fp_frames;
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		x->st.cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	publish_stats(x);
}

static void *collector_main(void *arg)
{
	struct ha_collector *c = arg;
	ha_background_thread();
	struct ctx *x = ctx_new(c);
	if (!x) {
		snprintf(c->err, sizeof c->err, "collector: out of memory");
		return NULL;
	}
	double last = ha_now_ms();
	struct timespec mono;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	x->start_ns = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
	x->start_unix = ha_unix_now();
	x->iv.now = x->period_interval = x->st.interval = x->st.interval_max = c->interval;
	/* The baseline: every bucket zero, the RSS and counters of now.  The
	 * records already in the ring were written after the attach. */
	snapshot(x, "attach");
	ha_interval_init(&x->iv, c->interval, HA_INTERVAL_MAX,
	                 ha_rings_drops(c->ring, c->data_size, x->nrings), last);
	for (int stop = 0; !stop;) {
		/* Drain everything, then sleep: the records that come meanwhile
		 * are handled together at the next wake-up. */
		double now = ha_now_ms();
		uint64_t pos0 = consumed(x);
		drain(x);
		if (now - x->mem_ms >= MEM_POLL_MS)
			read_mem(x);
		adapt_interval(x, now);
		int ms = nap_ms(x, consumed(x) - pos0, now - last);
		last = now;
		if (__atomic_load_n(&c->cmds_pending, __ATOMIC_ACQUIRE) > 0)
			stop = run_cmds(x);
		else
			nap(x, ms);
	}
	final_stats(x);
	ha_rss_feed_close(&x->rss);
	c->pf = NULL; /* closed with the feed */
	ha_srefs_free(x->srefs);
	ha_unwinder_free(x->unw);
	ha_pymerge_free(&x->py);
	ha_book_free(x->book);
	ha_intern_free(&x->in);
	free(x);
	return NULL;
}

int ha_collector_start(struct ha_collector *c)
{
	memset(&c->stats, 0, sizeof c->stats);
	c->err[0] = '\0';
	c->cmds_pending = 0;
	ha_queue_init(&c->inbox);
	if (pthread_create(&c->thread, NULL, collector_main, c) != 0) {
		snprintf(c->err, sizeof c->err, "cannot start the collector thread");
		return -1;
	}
	return 0;
}

static void send_cmd(struct ha_collector *c, int type, const char *reason)
{
	struct ha_cmd *m = calloc(1, sizeof *m);
	if (!m)
		return;
	m->q.type = type;
	m->reason = reason;
	ha_queue_put(&c->inbox, &m->q);
	__atomic_fetch_add(&c->cmds_pending, 1, __ATOMIC_RELEASE);
}

void ha_collector_live(struct ha_collector *c)
{
	send_cmd(c, HA_CMD_LIVE, NULL);
}

void ha_collector_snapshot(struct ha_collector *c, const char *reason)
{
	send_cmd(c, HA_CMD_SNAPSHOT, reason);
}

void ha_collector_stop(struct ha_collector *c, const char *reason)
{
	c->stop_cmd.q.type = HA_CMD_STOP;
	c->stop_cmd.reason = reason;
	ha_queue_put(&c->inbox, &c->stop_cmd.q);
	__atomic_fetch_add(&c->cmds_pending, 1, __ATOMIC_RELEASE);
	pthread_join(c->thread, NULL);
	ha_queue_destroy(&c->inbox);
}

void ha_collector_read_stats(struct ha_collector *c, struct ha_collector_stats *out)
{
	uint64_t *src = (uint64_t *)&c->stats, *dst = (uint64_t *)out;
	for (size_t i = 0; i < HA_COLLECTOR_NSTATS; i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}
