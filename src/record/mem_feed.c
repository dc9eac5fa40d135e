/* mem_feed.c -- a snapshot's memory breakdown (mem_feed.h). */
#include "mem_feed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mem_view.h"

struct heap_only {
	ha_mem_each_fn each;
	void *ctx;
};

static void one_block(void *ctx, uint64_t addr, uint64_t size, double weight, uint32_t bucket,
                      int kind)
{
	const struct heap_only *h = ctx;
	if (kind == HA_KIND_HEAP)
		h->each(h->ctx, addr, size, weight, bucket);
}

static void live_heap(void *arg, ha_mem_each_fn each, void *ctx)
{
	const struct ha_book *b = arg;
	struct heap_only h = { each, ctx };
	if (b)
		ha_book_each_block(b, one_block, &h);
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

struct ha_db_memory *ha_mem_feed_read(const struct ha_collector *c, const struct ha_book *book,
                                      struct ha_collector_stats *st)
{
	struct ha_mem_view v;
	struct ha_mem_alloc alloc;
	uint64_t t0 = now_ns();
	int have_alloc = c->alloc_ask && c->alloc_ask(c->alloc_ctx, &alloc) == 0 &&
	                 alloc.kind != HA_ALLOC_NONE;
	if (have_alloc && st) {
		st->mem_alloc_reads++;
		st->mem_alloc_ns += alloc.ns;
		st->mem_alloc_wait_ns += now_ns() - t0;
	}
	if (ha_mem_view_read(c->pid, live_heap, (void *)book, have_alloc ? &alloc : NULL, &v) != 0)
		return NULL;
	struct ha_db_memory *m = calloc(1, sizeof *m);
	if (m && v.narenas)
		m->arenas = calloc(v.narenas, sizeof *m->arenas);
	if (m && v.npins)
		m->pins = calloc(v.npins, sizeof *m->pins);
	if (!m || (v.narenas && !m->arenas) || (v.npins && !m->pins)) {
		if (m)
			free(m->arenas);
		free(m);
		ha_mem_view_free(&v);
		return NULL;
	}
	snprintf(m->allocator, sizeof m->allocator, "%s", v.allocator);
	m->rss_anon = v.rss_anon;
	m->cpus_online = v.cpus.online;
	m->cpus_allowed = v.cpus.allowed;
	m->cpu_quota = v.cpus.quota;
	memcpy(m->terms, v.terms, sizeof m->terms);
	m->narenas = v.narenas;
	for (size_t i = 0; i < v.narenas; i++) {
		const struct ha_mem_arena *a = &v.arenas[i];
		m->arenas[i] = (struct ha_db_arena){
			.is_main = a->is_main, .complete = a->complete, .heaps = a->heaps,
			.address = a->addr, .system = a->system, .in_use = a->in_use,
			.free = a->free_bins, .top = a->top, .resident = a->resident,
			.trimmable = a->trimmable, .pinned = a->pinned };
	}
	/* stack_id: the book's bucket, which the writer makes a stack id */
	for (size_t i = 0; i < v.npins; i++)
		m->pins[i] = (struct ha_db_pin){ .stack_id = v.pins[i].bucket, .bytes = v.pins[i].bytes,
		                                 .blocks = v.pins[i].blocks };
	m->npins = v.npins;
	if (st) {
		st->mem_views++;
		st->mem_view_ns += v.cost_ns;
		st->mem_walk_ns += v.walk_ns;
		st->mem_arenas += v.narenas - v.alloc_arenas;
	}
	ha_mem_view_free(&v);
	return m;
}

void ha_mem_feed_free(struct ha_db_memory *m)
{
	if (m) {
		free(m->arenas);
		free(m->pins);
	}
	free(m);
}

void ha_mem_feed_keep(const struct ha_db_memory *m, double *rss_anon, double *terms)
{
	if (!m)
		return;
	*rss_anon = (double)m->rss_anon;
	for (int i = 0; i < HA_MT_COUNT; i++)
		terms[i] = (double)m->terms[i];
}

void ha_mem_feed_keep_copy(double rss_anon, const double *terms, double *to_rss_anon,
                           double *to_terms)
{
	*to_rss_anon = rss_anon;
	memcpy(to_terms, terms, HA_MT_COUNT * sizeof *terms);
}
