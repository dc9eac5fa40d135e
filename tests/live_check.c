/* live_check -- unit test of the live model (src/live/live_model.c): frames
 * and stack texts in, rows out.  Growth since attach, then since a mark
 * (zero at once, counted from the next frame);
 * the three sorts; kinds (heap + mmap by default, rss apart); the filter
 * (function, file or module, any frame, case insensitive; a stack not
 * symbolized yet matches no filter); a stack text that comes after its
 * bucket; the summary and its history; the status line's top function with
 * a control character from the target replaced. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

#include "live_model.h"
#include "unit.h"

static double T0 = 1.8e9;

static void frame(struct ha_live *l, double t, uint64_t samples, int n,
                  const struct ha_live_bucket *b)
{
	struct ha_lmsg_frame *m = calloc(1, sizeof *m + (size_t)n * sizeof *b);
	m->q.type = HA_LMSG_FRAME;
	m->time = T0 + t;
	m->samples = samples;
	m->interval = 524288;
	m->rss_bytes = 100 << 20;
	m->n = (size_t)n;
	memcpy(m->rows, b, (size_t)n * sizeof *b);
	for (int i = 0; i < n; i++)
		m->kind_bytes[b[i].kind] += b[i].live_bytes;
	ha_live_take(l, &m->q);
}

static void stack(struct ha_live *l, uint32_t id, const char *fn, const char *file, const char *mod)
{
	size_t len = strlen(fn) + strlen(file) + strlen(mod) + 3;
	struct ha_lmsg_stack *m = calloc(1, sizeof *m + sizeof m->f[0] + len);
	char *p = (char *)&m->f[1];
	m->q.type = HA_LMSG_STACK;
	m->id = id;
	m->n = 1;
	m->f[0].function = strcpy(p, fn);
	p += strlen(fn) + 1;
	m->f[0].file = strcpy(p, file);
	p += strlen(file) + 1;
	m->f[0].module = strcpy(p, mod);
	m->f[0].line = 12;
	ha_live_take(l, &m->q);
}

#define B(i, k, live) { .id = (i), .kind = (k), .live_bytes = (live), .live_count = (live) / 100 }

int main(void)
{
	struct ha_live *l = ha_live_new(4242, "srv", T0);
	const struct ha_live_row *r;
	char status[256];

	ha_live_status(l, status, sizeof status);
	EXPECT(status[0] == '\0', "a status before any frame: '%s'", status);
	stack(l, 1, "leak_a", "a.c", "/usr/bin/srv");
	stack(l, 2, "cache\x1b[2Jfill", "cache.c", "/usr/lib/libcache.so");
	struct ha_live_bucket f1[] = { B(1, HA_KIND_HEAP, 1000), B(2, HA_KIND_HEAP, 5000),
	                               B(3, HA_KIND_MMAP, 3000), B(4, HA_KIND_RSS, 9000) };
	frame(l, 60, 100, 4, f1);

	size_t n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &r);
	EXPECT(n == 3, "heap+mmap rows: %zu, expected 3 (rss apart)", n);
	EXPECT(n == 3 && r[0].id == 2 && r[1].id == 3 && r[2].id == 1, "order by growth: %u %u %u",
	       r[0].id, r[1].id, r[2].id);
	EXPECT(n == 3 && r[0].rate_per_min == 5000, "rate per minute after 60 s: %g", r[0].rate_per_min);
	EXPECT(n == 3 && r[1].stack == NULL, "bucket 3 has no text yet, yet it has one");
	n = ha_live_rows(l, HA_KIND_RSS, HA_LIVE_BY_GROWTH, NULL, &r);
	EXPECT(n == 1 && r[0].id == 4, "rss rows: %zu", n);
	n = ha_live_rows(l, HA_KIND_MMAP, HA_LIVE_BY_GROWTH, NULL, &r);
	EXPECT(n == 1 && r[0].id == 3, "mmap rows: %zu", n);

	ha_live_status(l, status, sizeof status);
	EXPECT(strcmp(status, "live heap +8.8 KiB since attach, top: cache?[2Jfill") == 0,
	       "status: '%s'", status);

	/* The filter: function, file or module, case insensitive. */
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "LEAK", &r);
	EXPECT(n == 1 && r[0].id == 1, "filter on the function: %zu rows", n);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "libcache", &r);
	EXPECT(n == 1 && r[0].id == 2, "filter on the module: %zu rows", n);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "a.c", &r);
	EXPECT(n == 1 && r[0].id == 1, "filter on the file: %zu rows", n);

	/* A mark: growth from here on. */
	ha_live_mark(l);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &r);
	EXPECT(n == 0, "rows right after the mark: %zu", n);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_LIVE, NULL, &r);
	EXPECT(n == 3 && r[0].id == 2, "by live bytes after the mark: %zu rows", n);
	/* The frame after the key is the mark (here: the same values). */
	frame(l, 60, 100, 4, f1);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &r);
	EXPECT(n == 0, "rows at the mark's frame: %zu", n);
	stack(l, 3, "map_region", "m.c", "/usr/bin/srv");
	struct ha_live_bucket f2[] = { B(1, HA_KIND_HEAP, 7000), B(2, HA_KIND_HEAP, 4000),
	                               B(3, HA_KIND_MMAP, 3000), B(4, HA_KIND_RSS, 9000),
	                               B(5, HA_KIND_HEAP, 200) };
	frame(l, 120, 400, 5, f2);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &r);
	EXPECT(n == 3 && r[0].id == 1 && r[0].growth_bytes == 6000 && r[1].id == 5 && r[2].id == 2 &&
	       r[2].growth_bytes == -1000, "growth since the mark: %zu rows, first %u %g", n,
	       n ? r[0].id : 0, n ? r[0].growth_bytes : 0);
	EXPECT(n == 3 && r[0].rate_per_min == 6000, "rate since the mark: %g", n ? r[0].rate_per_min : 0);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_LIVE, NULL, &r);
	EXPECT(n == 4 && r[0].id == 1 && r[1].id == 2, "by live: %zu rows", n);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "map_region", &r);
	EXPECT(n == 0, "a row that did not grow is not shown by growth (%zu)", n);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_LIVE, "map_region", &r);
	EXPECT(n == 1 && r[0].stack && strcmp(r[0].stack->f[0].function, "map_region") == 0,
	       "a text that came after its bucket: %zu", n);

	const struct ha_live_summary *s = ha_live_summary(l);
	EXPECT(s->pid == 4242 && strcmp(s->comm, "srv") == 0, "summary target");
	EXPECT(s->frames == 3 && s->n_history == 3 && s->hist_heap[0] == 6000 && s->hist_heap[2] == 11200,
	       "history: %zu frames, %zu points", s->frames, s->n_history);
	EXPECT(s->samples_per_s == 5, "samples per second: %g", s->samples_per_s);
	EXPECT(s->since_attach_s == 120 && s->since_mark_s == 60, "times: %g since attach, %g since mark",
	       s->since_attach_s, s->since_mark_s);
	EXPECT(s->resident == 9000 && s->heap == 11200 && s->mmap == 3000, "totals by kind");

	/* Many frames: the history keeps the last HA_LIVE_HISTORY. */
	for (int i = 0; i < HA_LIVE_HISTORY + 10; i++)
		frame(l, 121 + i, 400, 5, f2);
	EXPECT(s->n_history == HA_LIVE_HISTORY, "history of %zu points", s->n_history);
	ha_live_free(l);

	/* What a refresh costs the model with 10,000 call paths (printed, for
	 * the notes; the check is only that it ranks them all). */
	enum { BIG = 10000 };
	static struct ha_live_bucket big[BIG];
	l = ha_live_new(1, "big", T0);
	for (int i = 0; i < BIG; i++) {
		big[i] = (struct ha_live_bucket)B((uint32_t)(i + 1), HA_KIND_HEAP, 100.0 * (i % 977 + 1));
		stack(l, (uint32_t)(i + 1), "f", "f.c", "m");
	}
	struct timespec t0, t1, t2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < 10; k++) {
		frame(l, 1 + k, 1, BIG, big);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &r);
	}
	clock_gettime(CLOCK_MONOTONIC, &t2);
	EXPECT(n == BIG, "%zu of %d rows", n, BIG);
	double us = ((double)(t2.tv_sec - t0.tv_sec) * 1e9 + (double)(t2.tv_nsec - t0.tv_nsec)) / 1e3 / 10;
	printf("%d call paths: %.0f us per frame taken and ranked\n", BIG, us);
	(void)t1;
	ha_live_free(l);
	return UNIT_RESULT("live model");
}
