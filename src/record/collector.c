/*
 * collector.c -- the collector thread (see collector.h).
 *
 * Everything read from the ring comes from the target and is untrusted:
 * each record's length, type and stack length are checked against what the
 * ring and the record can hold before anything is used.
 *
 * The cost per sample is what the target pays on a busy machine, so the
 * common path is batched: the thread sleeps until a share of the ring has
 * filled, then takes BATCH records at a time -- frame and copy out their
 * headers, unwind their stacks (mostly whole-stack cache hits, whose cache
 * entry also remembers the callstack id: no hashing of the pcs), book them
 * in ring order -- and hands the space back with one store of cons per
 * 1/CONSUME_DIV of the ring.  No allocation, system call, clock read or
 * atomic read-modify-write per record; the counters are ours and published
 * once per drain.
 */
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
#include "live_feed.h"
#include "peak.h"
#include "pf_events.h"
#include "proc.h"
#include "procmaps.h"
#include "rec_check.h"
#include "ring_heal.h"
#include "rss_pages.h"
#include "sref.h"
#include "unwind.h"
#include "util.h"
#include "writer.h"

#define MAX_PCS 128

_Static_assert(HA_REC_KIND_HEAP == HA_KIND_HEAP && HA_REC_KIND_MMAP == HA_KIND_MMAP,
               "ring kinds are the database kinds");
#define RING_WAIT_MS 10       /* poll period of the ring when it is quiet */
#define NAP_FILL_DIV 8        /* a busy ring: wake up at about 1/8 full */
#define BATCH 64              /* records framed, then unwound, then booked */
#define CONSUME_DIV 16        /* hand space back every 1/16 of the ring, not per record */
#define ABANDONED_MS 1000     /* a record unpublished this long, with later ones published, is skipped */
/* ...and once the program has written over its ring: a stamp it wrote
 * over reads as a record never published, and waiting a second for each
 * (small records, stack references, put many in reach of a stray write)
 * stalled a --block target for a minute.  A record it costs is counted. */
#define ABANDONED_HOSTILE_MS 100
#define WCACHE 2048           /* sample weights by size (direct-mapped) */
#define RING_PREFETCH 8192    /* published bytes asked for ahead of the reader */
#define RAISE_GAP_MS 50       /* adaptive interval: at most one doubling per 50 ms */
#define LOWER_AFTER_MS 500    /* ...and one halving per 500 ms of a calm ring */
#define PF_BATCH 4096         /* page-fault samples per drain, at most */
#define MODULES_GAP_MS 10     /* maps re-read for modules records at most once per 10 ms,
                               * and never more than a tenth of the time */

/* One record of a batch.  The target can rewrite the ring at any time:
 * what is checked is copied out first, and only the copy is used. */
struct item {
	uint16_t type;
	int ok;                       /* framed and checked: usable */
	int n;                        /* samples: pcs unwound (0: failure) */
	uint64_t ref;                 /* samples: the unwinder's cache entry (ha_unwind_ref) */
	uint32_t id;                  /* samples: bucket id (0: none) */
	const uint8_t *stack;         /* samples: the stack copy, in the ring (with
	                               * HA_REC_F_SREF: the struct ha_rec_sref) */
	uint32_t sref_slot, sref_seq; /* samples by reference: the publication (sref.h) */
	uint16_t flags;               /* the record header's (modules: the generation) */
	uint64_t addr;                /* frees: the block */
	struct ha_rec_sample s;       /* samples: the fixed part */
};

/* One ring's reading (the session has c->rings of them, each its own
 * ring of ha_ring.h). */
struct rstate {
	struct ha_ring_hdr *h;
	uint64_t pos;                 /* consumed up to here (what cons is set to) */
	uint64_t rpos;                /* read up to here; [pos, rpos) awaits consume */
	uint64_t pf, pf_limit;        /* ring prefetched up to pf, never past pf_limit
	                               * (prod as last loaded: once per batch, or
	                               * when a record ends beyond it) */
	struct ha_ring_heal heal;     /* what the target wrote over its ring (ring_heal.h) */
	uint64_t stuck_pos;           /* rpos at which framing last found nothing published */
	double stuck_since;           /* ...since then (ms); stuck_pos != rpos: not stuck */
};

struct ctx {
	struct ha_collector *c;
	struct ha_book *book;
	struct ha_unwinder *unw;
	struct ha_srefs *srefs;       /* stack references published (NULL: none) */
	uint64_t agent_lo, agent_hi;  /* the agent's mappings: its frames are skipped */
	struct rstate ring[HA_RINGS_MAX];
	uint32_t nrings;
	uint16_t modules_gen;         /* the newest modules record acted on... */
	int modules_seen;             /* ...if any (each ring has a copy) */
	double maps_ms;               /* when a modules record last had the maps re-read... */
	double maps_cost_ms;          /* ...and how long that took */
	int maps_pending;             /* one came since, within MODULES_GAP_MS */
	double rate;                  /* recent input, bytes per ms */
	uint64_t interval;            /* adaptive interval in effect (ring header) */
	uint64_t period_interval;     /* the largest since the last snapshot */
	uint64_t seen_drops;          /* ring drops when the interval last changed */
	double changed_ms;            /* when it last changed */
	struct ha_collector_stats st; /* ours; published to c->stats per drain */
	struct ha_peak peak;          /* the session's highest live total (peak.h) */
	uint64_t rec_ns;              /* latest sample time booked (target's clock) */
	uint64_t pf_bad;              /* page-fault records that did not parse, counted */
	uint64_t start_ns;            /* CLOCK_MONOTONIC when the collector started */
	double start_unix;            /* ...and the unix time then */
	struct ha_rss_pages *rss;     /* --rss: the attributed pages */
	uint64_t pf_pcs[MAX_PCS];     /* pcs of the page-fault sample in hand */
	struct item batch[BATCH];
	uint64_t pcs[BATCH][MAX_PCS]; /* pcs of batch[i] */
	struct { uint64_t size, interval; double w; } wc[WCACHE];
};

/* Single writer: plain relaxed stores, no read-modify-write on the bus. */
static void publish_stats(struct ctx *x)
{
	const uint64_t *src = (const uint64_t *)&x->st;
	uint64_t *dst = (uint64_t *)&x->c->stats;
	for (size_t i = 0; i < sizeof x->st / sizeof(uint64_t); i++)
		__atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
}

static void find_agent_range(struct ctx *x)
{
	struct ha_maps maps = { 0 };
	if (ha_maps_read(x->c->pid, &maps) < 0)
		return;
	x->agent_lo = UINT64_MAX;
	x->agent_hi = 0;
	for (size_t i = 0; i < maps.n; i++) {
		if (strcmp(ha_base_name(maps.v[i].path), HA_AGENT_SONAME) == 0) {
			if (maps.v[i].start < x->agent_lo)
				x->agent_lo = maps.v[i].start;
			if (maps.v[i].end > x->agent_hi)
				x->agent_hi = maps.v[i].end;
		}
	}
	ha_maps_free(&maps);
}

/* Is pc the agent's own code? */
static inline int in_agent(const struct ctx *x, uint64_t pc)
{
	return pc >= x->agent_lo && pc < x->agent_hi;
}

/* Hand a new stack to the writer, which symbolizes and stores it. */
static void send_stack(struct ctx *x, uint32_t id, const uint64_t *pcs, int n, int skipped)
{
	struct ha_wmsg_stack *m = malloc(sizeof *m + (size_t)n * sizeof m->pcs[0]);
	if (!m)
		return;
	m->q.type = HA_WMSG_STACK;
	m->local_id = id;
	m->n = n;
	/* When agent frames were skipped, the first pc kept is a return address. */
	m->first_is_return = skipped;
	memcpy(m->pcs, pcs, (size_t)n * sizeof *pcs);
	ha_queue_put(x->c->to_writer, &m->q);
}

/* Ask the writer to refresh its symbolizer's view of the modules before it
 * symbolizes the stacks that follow. */
static void send_maps_changed(struct ctx *x)
{
	struct ha_qmsg *m = calloc(1, sizeof *m);
	if (!m)
		return;
	m->type = HA_WMSG_MAPS;
	ha_queue_put(x->c->to_writer, m);
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

/* Copy out and check the record h of len bytes (len already checked
 * against the ring): rec_check.h. */
static void take_record(struct ctx *x, struct item *it, const struct ha_rec_hdr *h, uint32_t len)
{
	it->n = 0;
	it->sref_seq = 0;
	it->flags = __atomic_load_n(&h->flags, __ATOMIC_RELAXED);
	it->ok = ha_rec_take(h, len, &it->type, &it->s, &it->stack, &it->addr);
	if (!it->ok)
		x->st.corrupt_records++;
}

/* The records were written on other cores, and each header tells where the
 * next one starts: read one after the other, every header is a cache miss
 * waiting for the previous one.  Ask for the lines ahead early so that the
 * misses overlap; never past prod (lines still being written stay with
 * their writer). */
static void prefetch_ring(struct ctx *x, struct rstate *r, uint64_t upto)
{
	const char *data = ha_ring_data(r->h);
	uint64_t mask = x->c->data_size - 1;
	/* Compared as distances from rpos: positions wrap at 2^64 (a target
	 * can start its ring there), and a pf < upto loop then ran for ever. */
	if (upto - r->rpos > r->pf_limit - r->rpos)
		upto = r->pf_limit;
	if ((int64_t)(r->pf - r->rpos) < 0)
		r->pf = r->rpos & ~(uint64_t)63;
	for (; (int64_t)(upto - r->pf) > 0; r->pf += 64)
		__builtin_prefetch(data + (r->pf & mask));
}

/* Go on from the next published record after rpos, if there is one: the
 * record at rpos was reserved and will never be published.  Returns 1 if
 * rpos moved. */
static int skip_to_next(struct ctx *x, struct rstate *r)
{
	uint64_t prod = __atomic_load_n(&r->h->prod, __ATOMIC_ACQUIRE);
	uint64_t next = ha_ring_find_next(r->h, x->c->data_size, r->rpos, prod);
	if (!next || next - r->pos > x->c->data_size)
		return 0;
	x->st.abandoned++;
	r->rpos = next;
	r->stuck_pos = next + 1; /* not stuck at next (yet) */
	return 1;
}

/* Framing found no published record at rpos.  A writer that never comes
 * back to its reserved record (a longjmp out of a signal handler in the
 * middle of a sample) would stall the session for good: when nothing has
 * been published at rpos for ABANDONED_MS while a later record has been,
 * go on from that one (the skipped space is consumed with the rest).
 * Returns 1 if rpos moved.  A writer only stopped for that long (SIGSTOP)
 * loses its record. */
static int skip_abandoned(struct ctx *x, struct rstate *r)
{
	double now = ha_now_ms();
	if (r->stuck_pos != r->rpos) {
		r->stuck_pos = r->rpos;
		r->stuck_since = now;
		return 0;
	}
	int hostile = r->heal.corrupt || r->heal.repairs || x->st.corrupt_records;
	if (now - r->stuck_since < (hostile ? ABANDONED_HOSTILE_MS : ABANDONED_MS))
		return 0;
	return skip_to_next(x, r);
}

/* Read up to BATCH published records from rpos on, without consuming
 * them.  A modules record ends the batch: the samples after it must be
 * unwound with the new maps.  Returns how many were read. */
static int frame_batch(struct ctx *x, struct rstate *r)
{
	struct ha_collector *c = x->c;
	int k = 0;
	/* Only a bound for hints: a wrong prod from the target costs nothing. */
	r->pf_limit = __atomic_load_n(&r->h->prod, __ATOMIC_RELAXED);
	if (r->pf_limit - r->rpos > c->data_size)
		r->pf_limit = r->rpos;
	while (k < BATCH) {
		int corrupt;
		const struct ha_rec_hdr *h = ha_ring_peek(r->h, c->data_size, r->rpos, &corrupt);
		uint32_t len = 0;
		if (h) {
			/* peek checked its own load of len; this one is what we use. */
			len = __atomic_load_n(&h->len, __ATOMIC_RELAXED);
			corrupt = len % HA_RING_ALIGN || len < sizeof *h ||
			          r->rpos + len - r->pos > c->data_size ||
			          !ha_ring_covers(r->h, c->data_size, r->rpos, r->rpos + len,
			                          &r->pf_limit);
		}
		if (corrupt) {
			/* A record we cannot frame (the target wrote over its
			 * ring): counted, and got past when that can be done. */
			uint64_t seen = r->heal.corrupt;
			int moved = ha_ring_heal_corrupt(&r->heal, r->h, c->data_size, r->pos,
			                                 &r->rpos, ha_now_ms(), ABANDONED_MS);
			x->st.corrupt_records += r->heal.corrupt - seen;
			if (moved)
				continue;
			break;
		}
		if (!h) {
			if (skip_abandoned(x, r))
				continue;
			break;
		}
		prefetch_ring(x, r, r->rpos + len + RING_PREFETCH);
		struct item *it = &x->batch[k++];
		take_record(x, it, h, len);
		r->rpos += len;
		x->st.records++;
		x->st.ring_bytes += len;
		if (it->type == HA_REC_MODULES)
			break;
	}
	return k;
}

/* dlopen in the target: samples after a modules record may have pcs in
 * modules we have not seen; re-read the maps now rather than after a
 * rate-limited miss, and tell the symbolizer too.  At most once per
 * MODULES_GAP_MS, and after ten times as long as the last re-read took (a
 * target with 65,530 mappings has megabytes of maps): every such record
 * says the same, and a target can write millions of them (each re-read
 * costs a read of its maps: a detach took 49 s after a flood).  One that
 * comes sooner is acted on at the first batch after the gap. */
static void maps_changed(struct ctx *x, double now)
{
	double gap = 10 * x->maps_cost_ms > MODULES_GAP_MS ? 10 * x->maps_cost_ms : MODULES_GAP_MS;
	if (now - x->maps_ms < gap) {
		x->maps_pending = 1;
		return;
	}
	x->maps_pending = 0;
	ha_unwinder_maps_changed(x->unw);
	send_maps_changed(x);
	x->maps_ms = ha_now_ms();
	x->maps_cost_ms = x->maps_ms - now;
}

/* Unwind the batch's samples, timed as a whole. */
static void unwind_batch(struct ctx *x, int k)
{
	/* A modules generation the ring header shows and no record brought
	 * (the ring had no room for it): the same as its record. */
	uint16_t gen = (uint16_t)__atomic_load_n(&x->c->ring->modules_gen, __ATOMIC_ACQUIRE);
	if (ha_srefs_modules(x->srefs, gen))
		maps_changed(x, ha_now_ms());
	if (x->maps_pending)
		maps_changed(x, ha_now_ms());
	if (!x->book)
		return;
	double t0 = ha_now_ms();
	/* First ask for the lines the unwinder's cache lookups will read, for
	 * the whole batch, so that the misses overlap. */
	for (int stage = 0; stage < 2; stage++)
		for (int i = 0; i < k; i++) {
			const struct item *it = &x->batch[i];
			if (it->type == HA_REC_SAMPLE && it->ok && !(it->s.h.flags & HA_REC_F_SREF))
				ha_unwind_prefetch(x->unw, &it->s.regs, it->stack, it->s.stack_len, stage);
		}
	for (int i = 0; i < k; i++) {
		struct item *it = &x->batch[i];
		if (it->type != HA_REC_SAMPLE || !it->ok)
			continue;
		int n;
		if (it->s.h.flags & HA_REC_F_SREF) {
			/* The agent found its stack in the table: the pcs kept
			 * with what was published there. */
			struct ha_rec_sref ref;
			memcpy(&ref, it->stack, sizeof ref);
			n = ha_srefs_resolve(x->srefs, &ref, it->s.regs.rip, x->pcs[i], MAX_PCS);
			it->sref_slot = ref.slot;
			it->sref_seq = n > 0 ? ref.seq : 0;
			it->ref = 0;
		} else {
			n = x->unw ? ha_unwind(x->unw, &it->s.regs, it->stack, it->s.stack_len, x->pcs[i],
			                       MAX_PCS)
			           : -1;
			/* A walk that ended inside the agent has nothing of the
			 * program: as good as none (and never published). */
			if (n > 0 && in_agent(x, x->pcs[i][n - 1]))
				n = 0;
			it->ref = n > 0 ? ha_unwind_ref(x->unw) : 0;
			/* Not with maps older than the newest modules record: the
			 * entry must hold for the modules the agent has now. */
			if (it->ref && !x->maps_pending)
				ha_srefs_offer(x->srefs, x->unw, it->ref, it->s.stack_len, MAX_PCS, t0);
		}
		if (n <= 0) {
			x->st.unwind_failures++;
			n = 0;
		}
		it->n = n;
	}
	x->st.unwind_ns += (uint64_t)((ha_now_ms() - t0) * 1e6);
}

/* The bucket of n pcs (leaf first) of kind (0: out of memory); a new one
 * goes to the writer.  ids: the words the unwinder's cache entry keeps for
 * the heap and mmap buckets of those pcs (NULL: none).  first_is_return:
 * pcs[0] is a return address (as it is when agent frames are skipped). */
static uint32_t intern(struct ctx *x, uint64_t *pcs, int n, int kind, uint32_t *ids,
                       int first_is_return)
{
	int is_new;
	if (ids && ids[kind])
		return ids[kind];
	/* The innermost frames are the agent's own hook and capture code.  Hook
	 * frames further out (operator new's hook around libstdc++'s new, whose
	 * malloc took the sample) are dropped too: the stack reads as if the
	 * program ran without the agent. */
	int skip = 0;
	while (skip < n && in_agent(x, pcs[skip]))
		skip++;
	int kept = skip;
	for (int i = skip; i < n; i++)
		if (!in_agent(x, pcs[i]))
			pcs[kept++] = pcs[i];
	n = kept;
	uint32_t id = ha_book_stack(x->book, pcs + skip, n - skip, kind, &is_new);
	if (!id)
		return 0;
	if (is_new) {
		x->st.stacks++;
		send_stack(x, id, pcs + skip, n - skip, skip > 0 || first_is_return);
	}
	if (ids)
		ids[kind] = id;
	return id;
}

/* The bucket id of a sample's stack (0: out of memory). */
static uint32_t stack_id(struct ctx *x, const struct item *it, uint64_t *pcs)
{
	int kind = it->s.kind == HA_REC_KIND_MMAP ? HA_KIND_MMAP : HA_KIND_HEAP;
	/* The same pcs as a stack booked before: its id, kept by the unwinder's
	 * cache entry (the agent range, hence the pcs kept, never changes). */
	uint32_t *ids = it->sref_seq ? ha_srefs_ids(x->srefs, it->sref_slot, it->sref_seq)
	                : it->ref    ? ha_unwind_user(x->unw, it->ref)
	                             : NULL;
	/* Not unwound: what the agent knew, the program's call of the
	 * allocation function, then a frame saying the rest is missing (one
	 * bucket per such leaf, never one "(no frames)" for them all). */
	if (it->n == 0 && it->s.caller) {
		pcs[0] = it->s.caller;
		pcs[1] = HA_PC_NOT_UNWOUND;
		return intern(x, pcs, 2, kind, NULL, 1);
	}
	return intern(x, pcs, it->n, kind, ids, 0);
}

/* ---------------------------------------------------------------- --rss */

/* The swap bucket of an rss bucket: the same pcs, kind swap. */
static uint32_t swap_bucket(void *arg, uint32_t rss_bucket)
{
	struct ctx *x = arg;
	int n, kind;
	const uint64_t *pcs = ha_book_pcs(x->book, rss_bucket, &n, &kind);
	if (!pcs || n > MAX_PCS)
		return 0;
	memcpy(x->pf_pcs, pcs, (size_t)n * sizeof *pcs);
	return intern(x, x->pf_pcs, n, HA_KIND_SWAP, NULL, 0);
}

/* What the attributed pages gain and lose, booked in their buckets. */
static void rss_gain(void *arg, uint32_t bucket, double bytes)
{
	ha_book_gain(((struct ctx *)arg)->book, bucket, bytes);
}

static void rss_lose(void *arg, uint32_t bucket, double bytes)
{
	ha_book_lose(((struct ctx *)arg)->book, bucket, bytes);
}

/* Book the page-fault samples waiting in the perf rings: unwound like the
 * agent's samples (a first touch inside a system call unwinds from the
 * user registers at the call), attributed to their page.  An unwind that
 * fails books the faulting pc alone. */
static void drain_rss(struct ctx *x)
{
	struct ha_pf_sample s;
	if (!x->c->pf)
		return;
	for (int k = 0; k < PF_BATCH && ha_pf_next(x->c->pf, &s); k++) {
		if (!x->book || !x->rss)
			continue;
		int n = x->unw ? ha_unwind(x->unw, &s.regs, s.stack, s.stack_len, x->pf_pcs, MAX_PCS) : -1;
		if (n <= 0) {
			x->st.rss_unwind_failures++;
			x->pf_pcs[0] = s.regs.rip;
			n = 1;
		}
		uint32_t id = intern(x, x->pf_pcs, n, HA_KIND_RSS, NULL, 0);
		ha_rss_fault(x->rss, s.addr, id, (double)x->c->rss_period);
		x->st.rss_samples++;
	}
	uint64_t samples, lost, bad;
	ha_pf_counts(x->c->pf, &samples, &lost, &bad);
	x->st.rss_lost = lost;
	x->st.corrupt_records += bad - x->pf_bad;
	x->pf_bad = bad;
}

/* The residency of the attributed pages, at a snapshot. */
static void check_rss(struct ctx *x)
{
	if (!x->rss)
		return;
	drain_rss(x);
	ha_rss_check(x->rss);
	struct ha_rss_stats rs;
	ha_rss_stats(x->rss, &rs);
	x->st.rss_pages = rs.pages;
	x->st.rss_bytes = (uint64_t)ha_book_live_bytes(x->book, HA_KIND_RSS);
	x->st.rss_zero = rs.zero;
	x->st.rss_file = rs.file;
	x->st.rss_dropped = rs.dropped;
	x->st.rss_check_ns = rs.check_ns;
}

/* A /proc/PID/status field in kB, as bytes (0 when unknown). */
static uint64_t status_bytes(pid_t pid, const char *name)
{
	char v[64];
	if (ha_proc_status_field(pid, 0, name, v, sizeof v) != 0)
		return 0;
	return strtoull(v, NULL, 10) * 1024;
}

static uint64_t target_rss(pid_t pid);

/* The counters a snapshot taken now records (its time, reason and interval
 * are the caller's). */
static void counters_now(struct ctx *x, struct ha_db_snapshot *s)
{
	s->rss_bytes = target_rss(x->c->pid);
	s->samples = x->st.samples;
	s->drops = ha_rings_drops(x->c->ring, x->c->data_size, x->nrings);
	s->unwind_failures = x->st.unwind_failures;
	ha_unwinder_fp_stats(x->unw, &s->fp_frames, &s->frames);
	struct ha_srefs_stats rs;
	ha_srefs_stats(x->srefs, &rs);
	s->fp_frames += rs.fp_frames;
	s->frames += rs.frames;
	if (x->c->pf) {
		s->rss_anon_bytes = status_bytes(x->c->pid, "RssAnon");
		s->swap_bytes = status_bytes(x->c->pid, "VmSwap");
		s->rss_samples = x->st.rss_samples;
		s->rss_lost = x->st.rss_lost;
	}
}

/* A peak copy was just made: what its snapshot will say. */
static void note_peak(struct ctx *x)
{
	counters_now(x, &x->peak.info);
	x->peak.info.sample_interval = x->interval;
}

/* The bookkeeping of the batch, in ring order: first every sample's
 * bucket id, asking for the lines the updates will touch, then the
 * updates. */
static void apply_batch(struct ctx *x, int k)
{
	if (x->book)
		for (int i = 0; i < k; i++) {
			struct item *it = &x->batch[i];
			if (!it->ok)
				continue;
			if (it->type == HA_REC_SAMPLE) {
				it->id = stack_id(x, it, x->pcs[i]);
				ha_book_prefetch(x->book, it->id, it->id ? it->s.addr : 0);
				__builtin_prefetch(&x->wc[WC_SLOT(it->s.size, it->s.interval)]);
			} else if (it->type == HA_REC_FREE) {
				ha_book_prefetch(x->book, 0, it->addr);
			}
		}
	for (int i = 0; i < k; i++) {
		const struct item *it = &x->batch[i];
		if (!it->ok)
			continue;
		switch (it->type) {
		case HA_REC_SAMPLE:
			if (x->book && it->id) {
				ha_book_alloc(x->book, it->id, it->s.addr, it->s.size,
				              weight_of(x, it->s.size, it->s.interval));
				x->st.samples++;
				if (it->s.time_ns > x->rec_ns)
					x->rec_ns = it->s.time_ns;
			}
			break;
		case HA_REC_FREE:
			if (x->book)
				ha_book_release(x->book, it->addr);
			x->st.frees++;
			break;
		case HA_REC_MODULES:
			/* Every ring has a copy of each (the samples after it in
			 * any ring may need the new maps): the first one read is
			 * acted on.  Forward only, as ha_srefs_modules. */
			if (!x->modules_seen || (int16_t)(it->flags - x->modules_gen) > 0) {
				x->modules_seen = 1;
				x->modules_gen = it->flags;
				maps_changed(x, ha_now_ms());
			}
			ha_srefs_modules(x->srefs, it->flags);
			break;
		}
	}
	if (x->book && ha_peak_after_records(&x->peak, x->book, x->rec_ns))
		note_peak(x);
}

/* Give what was read back to the producers: one store of cons for many
 * records (cons is the line every producer reads). */
static void consume(struct rstate *r)
{
	if (r->rpos != r->pos)
		r->pos = ha_ring_consume(r->h, r->pos, r->rpos - r->pos);
}

/* Consume the published records of ring r, at most about a ring's worth.
 * Returns how many. */
static size_t drain_ring(struct ctx *x, struct rstate *r)
{
	uint64_t start;
	size_t n = 0;
	int k;
	if (ha_ring_heal_positions(&r->heal, r->h, x->c->data_size, x->interval, &r->pos, &r->rpos))
		r->stuck_pos = r->rpos + 1;
	start = r->pos;
	while (r->rpos - start < x->c->data_size && (k = frame_batch(x, r)) > 0) {
		unwind_batch(x, k);
		apply_batch(x, k);
		n += (size_t)k;
		if (r->rpos - r->pos >= x->c->data_size / CONSUME_DIV)
			consume(r);
	}
	consume(r);
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
	drain_rss(x);
	x->st.ring_repairs = repairs;
	x->st.ring_skipped = skipped;
	publish_stats(x);
	return n;
}

static uint64_t target_rss(pid_t pid)
{
	char path[64], buf[256], *p, *end;
	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	/* "size resident ...", in pages: past size, resident. */
	if (ha_read_file(path, buf, sizeof buf) <= 0 || (strtoull(buf, &p, 10) == 0 && p == buf))
		return 0;
	unsigned long long resident = strtoull(p, &end, 10);
	if (end == p)
		return 0;
	return resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void snapshot(struct ctx *x, const char *reason)
{
	struct ha_collector *c = x->c;
	struct ha_wmsg_snapshot *m = calloc(1, sizeof *m);
	if (!m)
		return;
	m->q.type = HA_WMSG_SNAPSHOT;
	/* The baseline (the first snapshot) has no rows: the page faults of the
	 * attach itself are booked with the next one. */
	if (x->st.snapshots > 0)
		check_rss(x);
	if (x->book)
		ha_peak_at_snapshot(&x->peak, x->book);
	m->n = x->book ? ha_book_take_changed(x->book, &m->rows) : 0;
	counters_now(x, &m->info);
	m->info.time = ha_unix_now();
	m->info.reason = reason;
	m->info.sample_interval = x->period_interval;
	x->period_interval = x->interval;
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
	memset(m, 0, sizeof *m);
	m->q.type = HA_LMSG_FRAME;
	m->time = ha_unix_now();
	m->samples = x->st.samples;
	m->drops = ha_rings_drops(c->ring, c->data_size, x->nrings);
	m->interval = x->interval;
	m->rss_bytes = target_rss(c->pid);
	m->rss_on = c->pf != NULL;
	if (m->rss_on) {
		m->rss_anon_bytes = status_bytes(c->pid, "RssAnon");
		m->rss_samples = x->st.rss_samples;
	}
	for (int k = 0; k < HA_KIND_COUNT && x->book; k++)
		m->kind_bytes[k] = ha_book_live_bytes(x->book, k);
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

/* The unix time of a record time (the target's CLOCK_MONOTONIC), kept
 * within the session: the value comes from the target. */
static double record_unix_time(const struct ctx *x, uint64_t ns)
{
	double t = x->start_unix + ((double)ns - (double)x->start_ns) / 1e9, now = ha_unix_now();
	return t < x->start_unix ? x->start_unix : t > now ? now : t;
}

/* The peak copy as a snapshot of its own (reason "peak"), if it is higher
 * than every snapshot: written after the last records are booked and
 * before the final snapshot, which writes again every bucket it holds
 * (book.h), so the session's last snapshot is still its final state. */
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
			more = skip_to_next(x, &x->ring[i]);
		for (uint32_t i = 0; i < x->nrings; i++)
			if (x->ring[i].rpos - start[i] > 2 * x->c->data_size)
				more = 0;
		if (!more)
			break;
	}
}

/* The adaptive interval.  Drops mean the target writes samples faster than
 * we read them: rather than lose samples for as long as that lasts (and
 * bias the profile towards whatever ran while the ring had room), double
 * the interval the agent's threads draw their countdowns with (the ring
 * header's interval, read at each thread's next sample), at most once per
 * RAISE_GAP_MS.  Once the ring stays below 1/16 full with no new drops,
 * halve it every LOWER_AFTER_MS until it is the configured one again.  The
 * estimates stay unbiased: every sample carries the interval it was drawn
 * with, and is weighted with it. */
static void set_interval(struct ctx *x, uint64_t v, double now)
{
	struct ha_collector *c = x->c;
	int raised = v > x->interval;
	x->interval = v;
	x->changed_ms = now;
	__atomic_store_n(&c->ring->interval, v, __ATOMIC_RELAXED);
	if (v > x->period_interval)
		x->period_interval = v;
	if (v > x->st.interval_max)
		x->st.interval_max = v;
	x->st.interval = v;
	/* Raised and back always said; the steps down only with -v. */
	if (raised)
		fprintf(stderr, "heapattach: ring overflowing: sampling interval raised to %llu bytes\n",
		        (unsigned long long)v);
	else if (v == c->interval || c->verbose)
		fprintf(stderr, "heapattach: sampling interval %s %llu bytes\n",
		        v == c->interval ? "back to" : "lowered to", (unsigned long long)v);
}

static void adapt_interval(struct ctx *x, double now)
{
	struct ha_collector *c = x->c;
	if (!c->adaptive)
		return;
	uint64_t drops = ha_rings_drops(c->ring, c->data_size, x->nrings), fill = 0;
	for (uint32_t i = 0; i < x->nrings; i++) {
		uint64_t f = __atomic_load_n(&x->ring[i].h->prod, __ATOMIC_RELAXED) - x->ring[i].pos;
		if (f > fill)
			fill = f;
	}
	if (drops != x->seen_drops) {
		if (now - x->changed_ms >= RAISE_GAP_MS && x->interval < HA_INTERVAL_MAX) {
			x->seen_drops = drops;
			uint64_t v = x->interval < HA_INTERVAL_MAX / 2 ? x->interval * 2 : HA_INTERVAL_MAX;
			set_interval(x, v, now);
		}
	} else if (x->interval > c->interval && fill < c->data_size / 16 &&
	           now - x->changed_ms >= LOWER_AFTER_MS) {
		uint64_t v = x->interval / 2 > c->interval ? x->interval / 2 : c->interval;
		set_interval(x, v, now);
	}
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
		const struct rstate *r = &x->ring[i];
		corrupt |= r->heal.have_corrupt && r->heal.corrupt_pos == r->pos;
		hdrs[i] = r->h;
		pos[i] = r->pos;
	}
	if (corrupt) {
		struct timespec ts = { 0, RING_WAIT_MS * 1000000L };
		nanosleep(&ts, NULL);
	} else {
		ha_rings_wait(hdrs, pos, x->nrings, x->c->data_size, ms);
	}
}

static void *collector_main(void *arg)
{
	struct ha_collector *c = arg;
	ha_background_thread();
	/* Big (the batch's pcs): on the heap, not on the thread's stack. */
	struct ctx *x = calloc(1, sizeof *x);
	char err[200] = "";

	if (!x) {
		snprintf(c->err, sizeof c->err, "collector: out of memory");
		return NULL;
	}
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
	if (c->pf && x->book)
		x->rss = ha_rss_pages_new(c->pid, &(struct ha_rss_owner){ .swap_bucket = swap_bucket,
		                                   .gain = rss_gain, .lose = rss_lose, .arg = x });
	find_agent_range(x);
	x->nrings = c->rings >= 1 && c->rings <= HA_RINGS_MAX ? c->rings : 1;
	for (uint32_t i = 0; i < x->nrings; i++) {
		struct rstate *r = &x->ring[i];
		r->h = ha_ring_at(c->ring, c->data_size, i);
		r->pos = r->rpos = __atomic_load_n(&r->h->cons, __ATOMIC_ACQUIRE);
		r->stuck_pos = r->rpos + 1;
	}
	/* Without an unwinder the ring is still drained (a --block target must
	 * never wait on us); samples count as unwind failures. */
	if (!x->book || !x->unw)
		snprintf(c->err, sizeof c->err, "collector: %s", x->book ? err : "out of memory");

	double last = ha_now_ms();
	struct timespec mono;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	x->start_ns = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
	x->start_unix = ha_unix_now();
	x->interval = x->period_interval = x->st.interval = x->st.interval_max = c->interval;
	/* The baseline: every bucket zero, the RSS and counters of now.  The
	 * records already in the ring were written after the attach. */
	snapshot(x, "attach");
	x->seen_drops = ha_rings_drops(c->ring, c->data_size, x->nrings);
	x->changed_ms = last;
	for (int stop = 0; !stop;) {
		/* Drain everything, then sleep: the records that come meanwhile
		 * are handled together at the next wake-up. */
		double now = ha_now_ms();
		uint64_t pos0 = consumed(x);
		drain(x);
		adapt_interval(x, now);
		int ms = nap_ms(x, consumed(x) - pos0, now - last);
		last = now;
		if (__atomic_load_n(&c->cmds_pending, __ATOMIC_ACQUIRE) > 0)
			stop = run_cmds(x);
		else
			nap(x, ms);
	}
	uint64_t hits, misses;
	ha_unwinder_cache_stats(x->unw, &hits, &misses);
	x->st.unwind_cached += hits;
	ha_unwinder_fp_stats(x->unw, &x->st.fp_frames, &x->st.frames);
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
	ha_pf_close(c->pf);
	c->pf = NULL;
	ha_rss_pages_free(x->rss);
	ha_srefs_free(x->srefs);
	ha_unwinder_free(x->unw);
	ha_book_free(x->book);
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
	for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}
