/*
 * collector.c -- the collector thread (see collector.h).
 *
 * Everything read from the ring comes from the target and is untrusted:
 * each record's length, type and stack length are checked against what the
 * ring and the record can hold before anything is used.
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

#include "buckets.h"
#include "ha_ring.h"
#include "procmaps.h"
#include "unwind.h"
#include "util.h"
#include "writer.h"

#define MAX_PCS 128

_Static_assert(HA_REC_KIND_HEAP == HA_KIND_HEAP && HA_REC_KIND_MMAP == HA_KIND_MMAP,
               "ring kinds are the database kinds");
#define RING_WAIT_MS 10       /* poll period of the ring when it is quiet */

struct ctx {
	struct ha_collector *c;
	struct ha_book *book;
	struct ha_unwinder *unw;
	uint64_t agent_lo, agent_hi;  /* the agent's mappings: its frames are skipped */
	uint64_t pos;                 /* our read position in the ring */
	int ring_broken;
};

static void stat_add(uint64_t *field, uint64_t n)
{
	__atomic_fetch_add(field, n, __ATOMIC_RELAXED);
}

static double unix_now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static void find_agent_range(struct ctx *x)
{
	struct ha_maps maps = { 0 };
	if (ha_maps_read(x->c->pid, &maps) < 0)
		return;
	x->agent_lo = UINT64_MAX;
	x->agent_hi = 0;
	for (size_t i = 0; i < maps.n; i++) {
		const char *base = strrchr(maps.v[i].path, '/');
		base = base ? base + 1 : maps.v[i].path;
		if (strcmp(base, HA_AGENT_SONAME) == 0) {
			if (maps.v[i].start < x->agent_lo)
				x->agent_lo = maps.v[i].start;
			if (maps.v[i].end > x->agent_hi)
				x->agent_hi = maps.v[i].end;
		}
	}
	ha_maps_free(&maps);
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

static void on_sample(struct ctx *x, const struct ha_rec_sample *r, uint32_t len)
{
	uint64_t pcs[MAX_PCS];
	int n, is_new;
	if (len < sizeof *r || r->stack_len > len - sizeof *r) {
		stat_add(&x->c->stats.corrupt_records, 1);
		return;
	}
	if (r->kind != HA_REC_KIND_HEAP && r->kind != HA_REC_KIND_MMAP) {
		stat_add(&x->c->stats.corrupt_records, 1);
		return;
	}
	if (!x->book)
		return;
	double t0 = ha_now_ms();
	n = x->unw ? ha_unwind(x->unw, &r->regs, (const uint8_t *)(r + 1), r->stack_len, pcs,
	                       MAX_PCS)
	           : -1;
	stat_add(&x->c->stats.unwind_ns, (uint64_t)((ha_now_ms() - t0) * 1e6));
	if (n <= 0) {
		stat_add(&x->c->stats.unwind_failures, 1);
		n = 0;
	}
	/* The innermost frames are the agent's own hook and capture code.  Hook
	 * frames further out (operator new's hook around libstdc++'s new, whose
	 * malloc took the sample) are dropped too: the stack reads as if the
	 * program ran without the agent. */
	int skip = 0;
	while (skip < n && pcs[skip] >= x->agent_lo && pcs[skip] < x->agent_hi)
		skip++;
	int kept = skip;
	for (int i = skip; i < n; i++)
		if (!(pcs[i] >= x->agent_lo && pcs[i] < x->agent_hi))
			pcs[kept++] = pcs[i];
	n = kept;
	int kind = r->kind == HA_REC_KIND_MMAP ? HA_KIND_MMAP : HA_KIND_HEAP;
	uint32_t id = ha_book_stack(x->book, pcs + skip, n - skip, kind, &is_new);
	if (!id)
		return;
	if (is_new) {
		stat_add(&x->c->stats.stacks, 1);
		send_stack(x, id, pcs + skip, n - skip, skip > 0);
	}
	ha_book_alloc(x->book, id, r->addr, r->size, ha_sample_weight(r->size, x->c->interval));
	stat_add(&x->c->stats.samples, 1);
}

static void on_record(struct ctx *x, const struct ha_rec_hdr *h)
{
	stat_add(&x->c->stats.records, 1);
	switch (h->type) {
	case HA_REC_SAMPLE:
		on_sample(x, (const struct ha_rec_sample *)h, h->len);
		break;
	case HA_REC_FREE:
		if (h->len < sizeof(struct ha_rec_free)) {
			stat_add(&x->c->stats.corrupt_records, 1);
			break;
		}
		if (x->book)
			ha_book_release(x->book, ((const struct ha_rec_free *)h)->addr);
		stat_add(&x->c->stats.frees, 1);
		break;
	case HA_REC_MODULES:
		/* dlopen in the target: samples after this may have pcs in
		 * modules we have not seen; re-read the maps now rather than
		 * after a rate-limited miss, and tell the symbolizer too. */
		ha_unwinder_maps_changed(x->unw);
		send_maps_changed(x);
		break;
	case HA_REC_PAD:
		break;
	default:
		stat_add(&x->c->stats.corrupt_records, 1);
	}
}

/* Consume every published record.  Returns how many. */
static size_t drain(struct ctx *x)
{
	struct ha_collector *c = x->c;
	size_t n = 0;
	while (!x->ring_broken) {
		int corrupt;
		const struct ha_rec_hdr *h = ha_ring_peek(c->ring, c->data_size, x->pos, &corrupt);
		if (corrupt) {
			/* A record we cannot frame: nothing after it can be trusted
			 * either.  Stop reading; the target is not affected. */
			stat_add(&c->stats.corrupt_records, 1);
			x->ring_broken = 1;
			break;
		}
		if (!h)
			break;
		uint32_t len = h->len;
		on_record(x, h);
		stat_add(&c->stats.ring_bytes, len);
		x->pos = ha_ring_consume(c->ring, c->data_size, x->pos, len);
		n++;
	}
	return n;
}

static uint64_t target_rss(pid_t pid)
{
	char path[64], buf[256];
	unsigned long long size, resident;
	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	if (ha_read_file(path, buf, sizeof buf) <= 0 ||
	    sscanf(buf, "%llu %llu", &size, &resident) != 2)
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
	m->n = x->book ? ha_book_take_changed(x->book, &m->rows) : 0;
	m->info.time = unix_now();
	m->info.rss_bytes = target_rss(c->pid);
	m->info.samples = __atomic_load_n(&c->stats.samples, __ATOMIC_RELAXED);
	m->info.drops = __atomic_load_n(&c->ring->drops, __ATOMIC_RELAXED);
	m->info.unwind_failures = __atomic_load_n(&c->stats.unwind_failures, __ATOMIC_RELAXED);
	m->info.reason = reason;
	ha_queue_put(c->to_writer, &m->q);
	stat_add(&c->stats.snapshots, 1);
}

static void *collector_main(void *arg)
{
	struct ctx x = { .c = arg };
	struct ha_collector *c = x.c;
	char err[200] = "";

	x.book = ha_book_new();
	x.unw = ha_unwinder_new(c->pid, err, sizeof err);
	find_agent_range(&x);
	x.pos = __atomic_load_n(&c->ring->cons, __ATOMIC_ACQUIRE);
	/* Without an unwinder the ring is still drained (a --block target must
	 * never wait on us); samples count as unwind failures. */
	if (!x.book || !x.unw)
		snprintf(c->err, sizeof c->err, "collector: %s", x.book ? err : "out of memory");

	for (int stop = 0; !stop;) {
		if (drain(&x) == 0)
			ha_ring_wait(c->ring, c->data_size, x.pos, RING_WAIT_MS);
		struct ha_qmsg *q;
		while ((q = ha_queue_get(&c->inbox, 0)) != NULL) {
			struct ha_cmd *cmd = (struct ha_cmd *)q;
			drain(&x);
			snapshot(&x, cmd->reason);
			stop |= q->type == HA_CMD_STOP;
			if (cmd != &c->stop_cmd)
				free(q);
		}
	}
	uint64_t hits, misses;
	ha_unwinder_cache_stats(x.unw, &hits, &misses);
	stat_add(&c->stats.unwind_cached, hits);
	ha_unwinder_free(x.unw);
	ha_book_free(x.book);
	return NULL;
}

int ha_collector_start(struct ha_collector *c)
{
	memset(&c->stats, 0, sizeof c->stats);
	c->err[0] = '\0';
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
	pthread_join(c->thread, NULL);
	ha_queue_destroy(&c->inbox);
}

void ha_collector_read_stats(struct ha_collector *c, struct ha_collector_stats *out)
{
	uint64_t *src = (uint64_t *)&c->stats, *dst = (uint64_t *)out;
	for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}
