/* live_model_test -- unit test of the live model (src/live/live_model.c): frames
 * and stack texts in, rows out.  Growth since attach, then since a mark
 * (zero at once, counted from the next frame);
 * the three sorts; kinds (heap + mmap by default, rss apart); the filter
 * (function, file or module, any frame, case insensitive; a stack not
 * symbolized yet matches no filter); a stack text that comes after its
 * bucket; the summary and its history; the status line's top function with
 * a control character from the target replaced.
 * Functions (src/live/live_funcs.c): flat and cumulative sums exact, the
 * allocator's frames folded, recursion counted once, kinds, the filter on
 * a function's own name, file or module, the sorts, the callers; and what
 * ranking the functions of 100,000 buckets costs (printed). */
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

/* A stack of n frames, leaf first, all in file and mod but the leaf, in
 * leaf_mod. */
static void stackv(struct ha_live *l, uint32_t id, int n, const char *const *fn, const char *file,
                   const char *leaf_mod, const char *mod)
{
	size_t len = strlen(leaf_mod);
	for (int i = 0; i < n; i++)
		len += strlen(fn[i]) + strlen(file) + strlen(mod) + 3;
	struct ha_lmsg_stack *m = calloc(1, sizeof *m + (size_t)n * sizeof m->f[0] + len);
	char *p = (char *)&m->f[n];
	m->q.type = HA_LMSG_STACK;
	m->id = id;
	m->n = n;
	for (int i = 0; i < n; i++) {
		m->f[i].function = strcpy(p, fn[i]);
		p += strlen(fn[i]) + 1;
		m->f[i].file = strcpy(p, file);
		p += strlen(file) + 1;
		m->f[i].module = strcpy(p, i ? mod : leaf_mod);
		p += strlen(m->f[i].module) + 1;
		m->f[i].line = 12 + i;
	}
	ha_live_take(l, &m->q);
}

static void stack(struct ha_live *l, uint32_t id, const char *fn, const char *file, const char *mod)
{
	stackv(l, id, 1, &fn, file, mod, mod);
}

/* A stack of the frames listed, in x.c of /usr/bin/srv but the leaf, in leaf_mod. */
#define STACK(l, id, leaf_mod, ...)                                                                      \
	stackv(l, id, sizeof(const char *[]){ __VA_ARGS__ } / sizeof(char *), (const char *[]){ __VA_ARGS__ }, \
	       "x.c", leaf_mod, "/usr/bin/srv")

/* A bucket's live bytes in whole objects of 100 bytes (7 bytes: none). */
static double objects(double live)
{
	return (double)(long long)(live / 100);
}
#define B(i, k, live) { .id = (i), .kind = (k), .live_bytes = (live), .live_count = objects(live) }

static double ms_since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

/* What a function row should hold. */
struct want {
	const char *name;
	double flat, cum; /* growth (and live, and rate: the frame is 60 s after the mark) */
	uint32_t paths;
};

static void expect_functions(const char *what, const struct ha_live_fn *f, size_t n,
                             const struct want *w, size_t nw)
{
	EXPECT(n == nw, "%s: %zu functions, expected %zu", what, n, nw);
	for (size_t i = 0; i < n && i < nw; i++)
		EXPECT(strcmp(f[i].name->function, w[i].name) == 0 && f[i].flat.growth_bytes == w[i].flat &&
		       f[i].cum.growth_bytes == w[i].cum && f[i].paths == w[i].paths,
		       "%s: row %zu is %s flat %g cum %g, %u paths; expected %s %g %g, %u", what, i,
		       f[i].name->function, f[i].flat.growth_bytes, f[i].cum.growth_bytes, f[i].paths,
		       w[i].name, w[i].flat, w[i].cum, w[i].paths);
}

static const struct ha_live_fn *find_fn(const struct ha_live_fn *f, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(f[i].name->function, name) == 0)
			return &f[i];
	return NULL;
}

/* Functions on a made-up set of buckets: every sum can be counted by hand. */
static void check_functions(void)
{
	struct ha_live *l = ha_live_new(1, "fn", T0);
	const struct ha_live_fn *f;
	const struct ha_live_caller *c;
	const struct ha_live_row *r;
	const char *srv = "/usr/bin/srv";
	size_t n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &f);
	EXPECT(n == 0, "functions before anything came: %zu", n);

	STACK(l, 10, srv, "malloc", "intern", "parse_a", "main");
	STACK(l, 11, srv, "operator new(unsigned long)", "intern", "parse_b", "main");
	STACK(l, 12, srv, "intern", "parse_a", "serve", "main");
	STACK(l, 13, "/usr/lib/libleak.so", "leak_big", "main");
	STACK(l, 14, srv, "walk", "walk", "walk", "main"); /* recursion: once */
	STACK(l, 15, srv, "parse_a", "main");
	STACK(l, 16, srv, "intern", "main");               /* mmap */
	STACK(l, 17, srv, "intern", "main");               /* resident: not heap+mmap */
	STACK(l, 19, srv, "malloc");                       /* the allocator alone: its own leaf */
	/* 18: never symbolized, in no function */
	struct ha_live_bucket b[] = { B(10, HA_KIND_HEAP, 1000), B(11, HA_KIND_HEAP, 2000),
	                              B(12, HA_KIND_HEAP, 4000), B(13, HA_KIND_HEAP, 5000),
	                              B(14, HA_KIND_HEAP, 300),  B(15, HA_KIND_HEAP, 100),
	                              B(16, HA_KIND_MMAP, 10000), B(17, HA_KIND_RSS, 70000),
	                              B(18, HA_KIND_HEAP, 50),   B(19, HA_KIND_HEAP, 7) };
	frame(l, 60, 100, 10, b);

	/* Growth since the attach: by flat, then cum; malloc and operator new
	 * folded away below intern. */
	static const struct want attach[] = {
		{ "intern", 17000, 17000, 4 }, { "leak_big", 5000, 5000, 1 }, { "walk", 300, 300, 1 },
		{ "parse_a", 100, 5100, 3 },   { "malloc", 7, 7, 1 },         { "main", 0, 22400, 7 },
		{ "serve", 0, 4000, 1 },       { "parse_b", 0, 2000, 1 },
	};
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &f);
	expect_functions("heap+mmap by growth", f, n, attach, sizeof attach / sizeof *attach);
	EXPECT(n && f[0].flat.live_bytes == 17000 && f[0].flat.live_objects == 170 &&
	       f[0].flat.growth_objects == 170 && f[0].flat.rate_per_min == 17000 &&
	       f[0].cum.rate_per_min == 17000 && strcmp(f[0].name->module, srv) == 0 &&
	       strcmp(f[0].name->file, "x.c") == 0 && f[0].name->line == 0,
	       "intern's other amounts and its name");
	n = ha_live_functions(l, HA_KIND_HEAP, HA_LIVE_BY_GROWTH, NULL, &f);
	const struct ha_live_fn *x = find_fn(f, n, "intern"), *m = find_fn(f, n, "main");
	EXPECT(x && x->flat.growth_bytes == 7000 && x->cum.growth_bytes == 7000 && x->paths == 3,
	       "heap only: intern %g", x ? x->flat.growth_bytes : -1);
	EXPECT(m && m->cum.growth_bytes == 12400, "heap only: main's cum %g", m ? m->cum.growth_bytes : -1);
	n = ha_live_functions(l, HA_KIND_RSS, HA_LIVE_BY_GROWTH, NULL, &f);
	EXPECT(n == 2 && f[0].flat.growth_bytes == 70000 && strcmp(f[0].name->function, "intern") == 0,
	       "resident: %zu functions", n);

	/* The filter: a function's own name, file or module, any case. */
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "PARSE", &f);
	EXPECT(n == 2 && strcmp(f[0].name->function, "parse_a") == 0 &&
	       strcmp(f[1].name->function, "parse_b") == 0 && f[1].cum.growth_bytes == 2000,
	       "filter on the name: %zu functions", n);
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "libLEAK", &f);
	EXPECT(n == 1 && strcmp(f[0].name->function, "leak_big") == 0, "filter on the module: %zu", n);
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "x.c", &f);
	EXPECT(n == 8, "filter on the file: %zu", n);
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "no_such", &f);
	EXPECT(n == 0, "a filter nothing matches: %zu", n);

	/* Callers: the nearest other function above the leaf-most frame. */
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &f);
	x = find_fn(f, n, "intern");
	size_t nc = x ? ha_live_callers(l, x->id, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, &c) : 0;
	EXPECT(nc == 3 && strcmp(c[0].name->function, "main") == 0 && c[0].v.growth_bytes == 10000 &&
	       c[0].paths == 1 && strcmp(c[1].name->function, "parse_a") == 0 &&
	       c[1].v.growth_bytes == 5000 && c[1].paths == 2 && strcmp(c[2].name->function, "parse_b") == 0 &&
	       c[2].v.growth_bytes == 2000, "intern's callers: %zu", nc);
	x = find_fn(f, n, "walk");
	nc = x ? ha_live_callers(l, x->id, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, &c) : 0;
	EXPECT(nc == 1 && strcmp(c[0].name->function, "main") == 0 && c[0].v.growth_bytes == 300,
	       "a recursive function's caller: %zu, %s", nc, nc ? c[0].name ? c[0].name->function : "-" : "");
	x = find_fn(f, n, "main");
	nc = x ? ha_live_callers(l, x->id, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, &c) : 0;
	EXPECT(nc == 1 && c[0].name == NULL && c[0].v.growth_bytes == 22400 && c[0].paths == 7,
	       "the outermost function's callers: %zu", nc);

	/* The call paths' leaf is folded the same way. */
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "parse_b", &r);
	EXPECT(n == 1 && ha_live_leaf(r[0].stack) == 1, "the leaf below operator new: %d",
	       n ? ha_live_leaf(r[0].stack) : -1);
	n = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, "malloc", &r);
	EXPECT(n == 2 && ha_live_leaf(r[1].stack) == 0 && r[1].stack->n == 1,
	       "a stack of the allocator alone keeps its frame: %zu", n);

	/* A mark, then growth: walk grows most, leak_big not at all; by live
	 * bytes the order is another. */
	ha_live_mark(l);
	frame(l, 60, 100, 10, b);
	b[0].live_bytes = 1600;
	b[4].live_bytes = 1300;
	frame(l, 120, 200, 10, b);
	static const struct want marked[] = {
		{ "walk", 1000, 1000, 1 }, { "intern", 600, 600, 1 },
		{ "main", 0, 1600, 2 },    { "parse_a", 0, 600, 1 },
	};
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &f);
	expect_functions("by growth since the mark", f, n, marked, sizeof marked / sizeof *marked);
	EXPECT(n && f[0].flat.rate_per_min == 1000 && f[0].flat.live_bytes == 1300, "walk's rate and live");
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_RATE, NULL, &f);
	expect_functions("by rate", f, n, marked, sizeof marked / sizeof *marked);
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_LIVE, NULL, &f);
	EXPECT(n == 8 && strcmp(f[0].name->function, "intern") == 0 && f[0].flat.live_bytes == 17600 &&
	       strcmp(f[1].name->function, "leak_big") == 0 && strcmp(f[2].name->function, "walk") == 0 &&
	       strcmp(f[5].name->function, "main") == 0 && f[5].cum.live_bytes == 24000 && f[5].paths == 7,
	       "by live: %zu functions", n);
	x = find_fn(f, n, "intern");
	nc = x ? ha_live_callers(l, x->id, HA_LIVE_ALLOC, HA_LIVE_BY_LIVE, &c) : 0;
	EXPECT(nc == 3 && c[1].v.live_bytes == 5600 && c[1].paths == 2, "intern's callers by live: %zu", nc);
	nc = x ? ha_live_callers(l, x->id, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, &c) : 0;
	EXPECT(nc == 1 && strcmp(c[0].name->function, "parse_a") == 0 && c[0].v.growth_bytes == 600,
	       "intern's callers by growth since the mark: %zu", nc);

	/* A stack's text sent again replaces the functions of its bucket. */
	STACK(l, 14, srv, "walk_again", "main");
	n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &f);
	EXPECT(n == 4 && strcmp(f[0].name->function, "walk_again") == 0 && !find_fn(f, n, "walk"),
	       "a stack sent again: %zu", n);
	ha_live_free(l);
}

/* What ranking the functions costs with 100,000 buckets of 10 frames each:
 * a leaf among 5,000 functions, or (every 10th bucket) keep_name, the
 * helper no single call path shows. */
static void time_functions(void)
{
	enum { BIG = 100000, ROUNDS = 10 };
	static struct ha_live_bucket big[BIG];
	struct ha_live *l = ha_live_new(1, "big", T0);
	char leaf[32], mid[32], top[32];
	double helper = 0;
	for (int i = 0; i < BIG; i++) {
		if (i % 10)
			snprintf(leaf, sizeof leaf, "leaf_%d", i % 5000);
		else
			snprintf(leaf, sizeof leaf, "keep_name");
		snprintf(mid, sizeof mid, "mid_%d", i % 300);
		snprintf(top, sizeof top, "top_%d", i % 20);
		const char *fr[] = { "malloc", leaf, mid, top, "dispatch", "handle", "run", "loop", "main", "_start" };
		stackv(l, (uint32_t)(i + 1), 10, fr, "b.c", "/bin/b", "/bin/b");
		big[i] = (struct ha_live_bucket)B((uint32_t)(i + 1), HA_KIND_HEAP, 64.0 * (i % 7 + 1));
		helper += i % 10 ? 0 : big[i].live_bytes;
	}
	frame(l, 60, 1, BIG, big);

	const struct ha_live_fn *f;
	const struct ha_live_caller *c;
	const struct ha_live_row *r;
	size_t n = 0, nc = 0, np = 0;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < ROUNDS; k++)
		n = ha_live_functions(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &f);
	double fn_ms = ms_since(&t0) / ROUNDS;
	/* (leaf_K of K a multiple of 10 never comes: those buckets have keep_name) */
	EXPECT(n == 4500 + 1 + 300 + 20 + 6 && strcmp(f[0].name->function, "keep_name") == 0 &&
	       f[0].flat.growth_bytes == helper && f[0].paths == BIG / 10,
	       "%zu functions, the first %s", n, n ? f[0].name->function : "-");
	uint32_t id = n ? f[0].id : 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < ROUNDS; k++)
		nc = ha_live_callers(l, id, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, &c);
	double callers_ms = ms_since(&t0) / ROUNDS;
	EXPECT(nc == 30, "keep_name's callers: %zu, expected 30 (mid_0, mid_10 ...)", nc);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int k = 0; k < ROUNDS; k++)
		np = ha_live_rows(l, HA_LIVE_ALLOC, HA_LIVE_BY_GROWTH, NULL, &r);
	double rows_ms = ms_since(&t0) / ROUNDS;
	EXPECT(np == BIG, "%zu call paths", np);
	printf("%d call paths, %zu functions: %.1f ms to rank the functions, %.1f ms for one's callers "
	       "(%.1f ms to rank the call paths)\n", BIG, n, fn_ms, callers_ms, rows_ms);
	ha_live_free(l);
}

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
	EXPECT(n == 3 && r[0].v.rate_per_min == 5000, "rate per minute after 60 s: %g", r[0].v.rate_per_min);
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
	EXPECT(n == 3 && r[0].id == 1 && r[0].v.growth_bytes == 6000 && r[1].id == 5 && r[2].id == 2 &&
	       r[2].v.growth_bytes == -1000, "growth since the mark: %zu rows, first %u %g", n,
	       n ? r[0].id : 0, n ? r[0].v.growth_bytes : 0);
	EXPECT(n == 3 && r[0].v.rate_per_min == 6000, "rate since the mark: %g", n ? r[0].v.rate_per_min : 0);
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
	check_functions();
	time_functions();
	return UNIT_RESULT("live model");
}
