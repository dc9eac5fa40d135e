/* heapattach_reach.c -- the reachability scan's wiring (--reach[=SECS],
 * SIGUSR2; issue 40).  The collector calls cmd_reach_hook at each snapshot
 * on its own thread (collector.h): at a snapshot of reason "reach" (the
 * --reach period, SIGUSR2, and with --reach the last one, which the main
 * thread asks for and waits for before a detach: cmd_reach_last; the
 * hooks are still in, so the agent's park works) it hands the live
 * sampled heap blocks to src/reach, and turns what comes back into the
 * database's rows (per call path the estimate unreachable, reachable and
 * unknown, and the holders of the reachable part), hung on the snapshot's
 * message for the writer.  A stack's holder is told by its frame, walked
 * with the collector's unwinder (this is its thread), and named by the
 * writer (src/record/reach_names.c), as a global's definition is.  A scan
 * is asked for only when the last one asked is done (cmd_reach_ask):
 * scans slower than the period never queue up.  A scan that cannot run
 * (another allocator, no safe point, a refused clone) says why in one
 * line, once per distinct reason, is stored with its error, and the
 * session goes on. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "heapattach_int.h"
#include "book.h"
#include "collector.h"
#include "db.h"
#include "db_write.h"
#include "reach.h"
#include "unwind.h"
#include "util.h"
#include "writer.h"

#define LAST_SCAN_WAIT_S 600

struct gather {
	struct reach_block *v;
	double *weight;
	size_t n, cap;
	int oom;
};

static void gather_one(void *ctx, uint64_t addr, uint64_t size, double weight, uint32_t bucket,
                       int kind)
{
	struct gather *g = ctx;
	if (kind != HA_KIND_HEAP || g->oom)
		return;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 1024;
		struct reach_block *v = realloc(g->v, cap * sizeof *v);
		if (v)
			g->v = v;
		double *w = v ? realloc(g->weight, cap * sizeof *w) : NULL;
		if (!v || !w) {
			g->oom = 1;
			return;
		}
		g->weight = w;
		g->cap = cap;
	}
	g->v[g->n] = (struct reach_block){ .addr = addr, .size = size, .tag = bucket };
	g->weight[g->n++] = weight;
}

struct held {
	uint32_t bucket, holder;
	double bytes, count;
	int hops;
};

static int by_bucket_holder(const void *a, const void *b)
{
	const struct held *x = a, *y = b;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->holder < y->holder ? -1 : x->holder > y->holder;
}

/* Per bucket: unreachable, reachable, unknown (bytes, count). */
struct acc {
	double v[6];
};

static int fill_rows(struct ha_db_reach *d, const struct gather *g, size_t nbuckets)
{
	struct acc *acc = calloc(nbuckets + 1, sizeof *acc);
	if (!acc)
		return -1;
	for (size_t i = 0; i < g->n; i++) {
		const struct reach_block *b = &g->v[i];
		if (b->tag > nbuckets)
			continue;
		int at = b->state == REACH_UNREACHABLE ? 0 : b->state == REACH_REACHABLE ? 2 : 4;
		acc[b->tag].v[at] += g->weight[i] * (double)b->size;
		acc[b->tag].v[at + 1] += g->weight[i];
	}
	d->rows = calloc(nbuckets + 1, sizeof *d->rows);
	for (size_t k = 1; d->rows && k <= nbuckets; k++) {
		const double *v = acc[k].v;
		if (v[1] + v[3] + v[5] <= 0)
			continue;
		d->rows[d->nrows++] = (struct ha_db_reach_row){
			.stack_id = (int64_t)k, .kind = HA_KIND_HEAP,
			.unreachable_bytes = v[0], .unreachable_count = v[1],
			.reachable_bytes = v[2], .reachable_count = v[3],
			.unknown_bytes = v[4], .unknown_count = v[5] };
	}
	free(acc);
	return d->rows ? 0 : -1;
}

static int fill_holders(struct ha_db_reach *d, const struct gather *g,
                        const struct reach_result *res)
{
	struct held *h = malloc((g->n ? g->n : 1) * sizeof *h);
	if (!h)
		return -1;
	size_t n = 0;
	for (size_t i = 0; i < g->n; i++) {
		const struct reach_block *b = &g->v[i];
		if (b->state != REACH_REACHABLE || b->holder >= res->nholders)
			continue;
		h[n++] = (struct held){ b->tag, b->holder, g->weight[i] * (double)b->size,
		                        g->weight[i], b->hops };
	}
	qsort(h, n, sizeof *h, by_bucket_holder);
	d->holders = calloc(n ? n : 1, sizeof *d->holders);
	if (!d->holders) {
		free(h);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct ha_db_reach_holder *o = d->nholders ? &d->holders[d->nholders - 1] : NULL;
		if (o && i > 0 && h[i].bucket == h[i - 1].bucket && h[i].holder == h[i - 1].holder) {
			o->bytes += h[i].bytes;
			o->count += h[i].count;
			o->hops = h[i].hops < o->hops ? h[i].hops : o->hops;
			continue;
		}
		const struct reach_holder *rh = &res->holders[h[i].holder];
		o = &d->holders[d->nholders++];
		o->stack_id = h[i].bucket;
		o->kind = HA_KIND_HEAP;
		o->root = reach_root_name(rh->kind);
		o->name = strdup(rh->name);   /* NULL (no memory): written as "" */
		o->bytes = h[i].bytes;
		o->count = h[i].count;
		o->hops = h[i].hops;
		o->pc = rh->pc;
		o->pc_is_ret = rh->pc_is_ret;
		o->addr = rh->addr;
		o->module = rh->module;
		o->tls = rh->tls;
		o->at = rh->at;
	}
	free(h);
	return 0;
}

/* The scan's walk of a thread's stack in the copy (reach.h: walk): the
 * collector's unwinder, on its own thread. */
static int walk_stack(void *ctx, const struct user_regs_struct *regs, const uint8_t *stack,
                      size_t len, uint64_t *pcs, uint64_t *sps, int max)
{
	const struct ha_regs r = { regs->rip, regs->rsp, regs->rbp, regs->rbx,
	                           regs->r12, regs->r13, regs->r14, regs->r15 };
	return ha_unwind_frames(ctx, &r, stack, len, pcs, sps, max);
}

/* One scan, its rows or its error hung on the snapshot's message. */
static void scan_at(struct cmd_reach *r, const struct ha_book *book, struct ha_unwinder *unw,
                    struct ha_wmsg_snapshot *m)
{
	struct ha_db_reach *d = calloc(1, sizeof *d);
	if (!d)
		return;
	struct gather g = { 0 };
	ha_book_each_block(book, gather_one, &g);
	struct reach_result res;
	struct reach_opts ro = { .verbose = r->verbose, .walk = unw ? walk_stack : NULL,
	                         .walk_ctx = unw, .park = r->ring };
	char err[200] = "";
	int rc = g.oom ? -1 : reach_scan(r->pid, g.v, g.n, &ro, &res, err, sizeof err);
	if (g.oom)
		snprintf(err, sizeof err, "out of memory");
	if (rc == 0 && (fill_rows(d, &g, ha_book_count(book)) != 0 || fill_holders(d, &g, &res) != 0)) {
		snprintf(err, sizeof err, "out of memory");
		rc = -1;
	}
	if (rc != 0) {
		snprintf(d->error, sizeof d->error, "%s", err);
		free(d->rows);
		for (size_t i = 0; i < d->nholders; i++)
			free(d->holders[i].name);
		free(d->holders);
		d->rows = NULL;
		d->holders = NULL;
		d->nrows = d->nholders = 0;
		if (strcmp(err, r->last_err) != 0)
			fprintf(stderr, "heapattach: reachability scan: %s; the session goes on\n", err);
		snprintf(r->last_err, sizeof r->last_err, "%s", err);
	} else {
		d->pause_ms = res.pause_ms;
		d->duration_ms = res.scan_ms;
		d->bytes_scanned = res.bytes_scanned;
		d->cow_bytes = res.cow_bytes;
		d->chunks = res.chunks;
		d->blocks = g.n;
		r->scans++;
		if (r->verbose)
			fprintf(stderr, "heapattach: reachability scan: %zu blocks, %llu chunks; "
			        "the target paused %.2f ms, the scan took %.1f ms (%.1f ms classifying "
			        "and naming holders, %d stacks walked)\n", g.n,
			        (unsigned long long)res.chunks, res.pause_ms, res.scan_ms,
			        res.holders_ms, res.stacks_walked);
		reach_result_free(&res);
	}
	free(g.v);
	free(g.weight);
	m->reach = d;
}

void cmd_reach_hook(void *ctx, const struct ha_book *book, struct ha_unwinder *unw,
                    struct ha_wmsg_snapshot *m)
{
	struct cmd_reach *r = ctx;
	const char *why = m->info.reason;
	if (strcmp(why, "reach") == 0) {
		__atomic_store_n(&r->pending, 0, __ATOMIC_RELEASE); /* cmd_reach_ask may ask again */
		scan_at(r, book, unw, m);
		pthread_mutex_lock(&r->lock);
		r->done++;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
	} else if (__atomic_load_n(&r->at_end, __ATOMIC_ACQUIRE) && strcmp(why, "detach") == 0) {
		scan_at(r, book, unw, m);
	}
}

void cmd_reach_ask(struct ha_collector *c)
{
	struct cmd_reach *r = c->reach_ctx;
	if (!r)
		return;
	if (__atomic_exchange_n(&r->pending, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	pthread_mutex_lock(&r->lock);
	r->asked++;
	pthread_mutex_unlock(&r->lock);
	ha_collector_snapshot(c, "reach");
}

void cmd_reach_last(struct ha_collector *c)
{
	struct cmd_reach *r = c->reach_ctx;
	if (!r || !__atomic_load_n(&r->at_end, __ATOMIC_ACQUIRE))
		return;
	cmd_reach_ask(c); /* one already asked and not begun will do */
	/* A scan reads about 1 GiB in 2.5-9 s (bench/reach_pause); the bound
	 * is for a snapshot the collector could not make (out of memory):
	 * then the detach's snapshot scans, as before. */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += LAST_SCAN_WAIT_S;
	int rc = 0;
	pthread_mutex_lock(&r->lock);
	while (r->done < r->asked && rc == 0)
		rc = pthread_cond_timedwait(&r->cond, &r->lock, &until);
	int done = r->done >= r->asked;
	pthread_mutex_unlock(&r->lock);
	if (done)
		__atomic_store_n(&r->at_end, 0, __ATOMIC_RELEASE);
	else
		fprintf(stderr, "heapattach: the last reachability scan did not end within %d s; "
		        "the detach goes on\n", LAST_SCAN_WAIT_S);
}
