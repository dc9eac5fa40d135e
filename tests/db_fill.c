/* db_fill.c -- writes profile databases through the db.h API, for the
 * heapdiff and database tests (tests/t_heapdiff*.sh, tests/t_db*.sh).
 *
 *   db_fill [--sessions 1|2] DB
 *       A synthetic profile with known values (see below); prints the ids.
 *   db_fill --loop COUNT [--stacks N] [--step] DB
 *       A new session with COUNT snapshots (0 = until killed), each a
 *       different number of changed buckets, a new callstack interned before
 *       each; prints "committed snapshot ID buckets M" after each commit.
 *       With --step, waits for a line on stdin before each snapshot and ends
 *       the session cleanly at end of file (tests interleave two writers).
 *   db_fill --open DB
 *       Open for writing and close; the error and exit 1 if refused.
 *   db_fill --series DB
 *       A session of 10 snapshots one minute apart for --leaks, --peak and
 *       the filters (see series() below).
 *   db_fill --offset-ids ...
 *       Intern an unrelated callstack first, so that the same callstacks
 *       get other ids than without (for diffs across two files).
 *   db_fill --spread DB
 *       A session of 10 snapshots one minute apart whose leaks are spread
 *       over call paths, for --leaks' function trends (see spread()).
 *   db_fill --attacher DB
 *       A session written as the attacher writes one now: an 'attach'
 *       baseline without rows, periodic snapshots, a 'peak' snapshot
 *       before the final 'detach' one (see attacher() below).
 *   db_fill --many N [--snapshots K] DB
 *       A profile with N distinct call paths over 5 snapshots, a few of
 *       them growing (see many() below), for the HTML report's speed; with
 *       --snapshots, K snapshots at each of which every path changes.
 *   db_fill --rss DB
 *       A session recorded with heapattach --rss: heap and mmap, resident
 *       and swapped memory by first-touch call path, the kernel's RssAnon
 *       and VmSwap (see rss() below).
 *
 * The synthetic profile, session 1 (pid 4242, "leaky"), snapshots 1..3 at
 * t0, t0+10 s, t0+20 s, RSS 10000000, 11500000, 13200000; live values
 * (bytes/objects) of each callstack, "-" = no row written (unchanged):
 *
 *   stack  leaf          kind  snap 1         snap 2         snap 3
 *   grow   leak_grow     heap  1000000/100    2000000/200    4000000/400
 *   const  pool_init     mmap   500000/10     -              -
 *   shrink cache_fill    heap   800000/800     300000/300    -
 *   small  mk_small      heap  (none)           10000/1000     20000/2000
 *
 * so from 1 to 3: grow +3000000/+300, small +20000/+2000, shrink
 * -500000/-500, const unchanged; total +2520000, RSS +3200000.
 *
 * With --sessions 2, the database is closed and reopened and session 2
 * (pid 4343) adds snapshots 4 and 5 (t0+100, t0+110; RSS 20000000,
 * 20100000): grow 4096/1 then 12288/3 (the same callstack, so the same
 * stack id), and a new stack "s2_leak" 1000/10 at snapshot 5 only. */
#define _GNU_SOURCE
#include "db_write.h"
#include "db_rows.h"

#include <getopt.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 1700000000.0

static const char *prog = "db_fill";
static char err[512];

#define CHECK(call)                                                          \
	do {                                                                 \
		if ((call) < 0) {                                            \
			fprintf(stderr, "%s: %s\n", prog, err);              \
			exit(1);                                             \
		}                                                            \
	} while (0)

static const char *EXE = "/opt/leaky/bin/leaky";
static const char *EXE_BID = "5f3c9a0e1b2d4c6e8f90a1b2c3d4e5f60718293a";
static const char *LIB = "/opt/leaky/lib/libsmall.so.1";
static const char *LIB_BID = "a1b2c3d4e5f60718293a5f3c9a0e1b2d4c6e8f90";

static const struct ha_db_frame grow_frames[] = {
	{ NULL, NULL, 0x1234, "leak_grow", "/src/leaky/leaky.c", 42, 1 },
	{ NULL, NULL, 0x1234, "handle_request", "/src/leaky/leaky.c", 80, 0 },
	{ NULL, NULL, 0x1300, "main", "/src/leaky/leaky.c", 120, 0 },
};
static const struct ha_db_frame const_frames[] = {
	{ NULL, NULL, 0x1100, "pool_init", "/src/leaky/leaky.c", 10, 0 },
	{ NULL, NULL, 0x12f0, "main", "/src/leaky/leaky.c", 118, 0 },
};
static const struct ha_db_frame shrink_frames[] = {
	{ NULL, NULL, 0x500, "cache_fill", "/src/leaky/cache.c", 33, 0 },
	{ NULL, NULL, 0x1310, "main", "/src/leaky/leaky.c", 125, 0 },
};
static const struct ha_db_frame small_frames[] = {
	{ NULL, NULL, 0x600, "mk_small", "/src/leaky/small.c", 7, 0 },
	{ "", "", 0x7f00, "", "", 0, 0 },     /* unknown: JIT or stripped */
	{ NULL, NULL, 0x1320, "main", "/src/leaky/leaky.c", 130, 0 },
};
static const struct ha_db_frame s2_frames[] = {
	{ NULL, NULL, 0x1400, "s2_leak", "/src/leaky/leaky.c", 200, 0 },
	{ NULL, NULL, 0x1300, "main", "/src/leaky/leaky.c", 120, 0 },
};

/* Fill in module and build-id: the executable unless given, libsmall for
 * the cache_fill and mk_small leaves. */
static int64_t stack(struct ha_db *db, const struct ha_db_frame *tmpl, int n)
{
	struct ha_db_frame f[8];
	int64_t id;
	for (int i = 0; i < n; i++) {
		f[i] = tmpl[i];
		if (!f[i].module) {
			int lib = strcmp(f[i].function, "cache_fill") == 0 ||
			          strcmp(f[i].function, "mk_small") == 0;
			f[i].module = lib ? LIB : EXE;
			f[i].build_id = lib ? LIB_BID : EXE_BID;
		}
	}
	CHECK(ha_db_stack(db, f, n, &id, err, sizeof err));
	return id;
}


static int64_t snapshot(struct ha_db *db, int64_t session, double t, uint64_t rss,
                        uint64_t samples, uint64_t drops, uint64_t unwf, const char *reason,
                        const struct ha_db_bucket *b, size_t n)
{
	struct ha_db_snapshot s = snap_info(t, rss, samples, drops, unwf, reason);
	int64_t id;
	CHECK(ha_db_snapshot(db, session, &s, b, n, &id, err, sizeof err));
	printf("snapshot %lld session %lld buckets %zu\n", (long long)id, (long long)session, n);
	return id;
}

/* Snapshots and sessions as the tests spell them (no --rss columns). */
#define SNAP(t, rss, sm, dr, uw, rs, iv) { .time = (t), .rss_bytes = (rss), .samples = (sm), \
	.drops = (dr), .unwind_failures = (uw), .reason = (rs), .sample_interval = (iv) }

#define N(a) (sizeof(a) / sizeof(a)[0])

static void fill(const char *path, int sessions)
{
	struct ha_db *db;
	struct ha_db_session sess = SESSION(4242, "leaky", EXE, 524288, T0 - 5);
	int64_t sid, g, c, s, m, again;

	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	g = stack(db, grow_frames, N(grow_frames));
	c = stack(db, const_frames, N(const_frames));
	s = stack(db, shrink_frames, N(shrink_frames));
	m = stack(db, small_frames, N(small_frames));
	again = stack(db, grow_frames, N(grow_frames));
	if (again != g) {
		fprintf(stderr, "%s: the same callstack got ids %lld and %lld\n", prog,
		        (long long)g, (long long)again);
		exit(1);
	}
	printf("stack grow %lld\nstack const %lld\nstack shrink %lld\nstack small %lld\n",
	       (long long)g, (long long)c, (long long)s, (long long)m);
	printf("session %lld\n", (long long)sid);

	struct ha_db_bucket s1[] = {
		bucket(g, HA_KIND_HEAP, 1000000, 100, 0, 0),
		bucket(c, HA_KIND_MMAP, 500000, 10, 0, 0),
		bucket(s, HA_KIND_HEAP, 800000, 800, 0, 0),
	};
	struct ha_db_bucket s2[] = {
		bucket(g, HA_KIND_HEAP, 2000000, 200, 0, 0),
		bucket(s, HA_KIND_HEAP, 800000, 800, 500000, 500),
		bucket(m, HA_KIND_HEAP, 10000, 1000, 0, 0),
	};
	struct ha_db_bucket s3[] = {
		bucket(g, HA_KIND_HEAP, 4500000, 450, 500000, 50),
		bucket(m, HA_KIND_HEAP, 25000, 2500, 5000, 500),
	};
	snapshot(db, sid, T0, 10000000, 1000, 0, 0, "periodic", s1, N(s1));
	snapshot(db, sid, T0 + 10, 11500000, 2100, 0, 1, "signal", s2, N(s2));
	snapshot(db, sid, T0 + 20, 13200000, 3500, 5, 1, "detach", s3, N(s3));
	CHECK(ha_db_end_session(db, sid, T0 + 20.5, err, sizeof err));
	ha_db_close(db);
	if (sessions < 2)
		return;

	/* Session 2 after a reopen: interning must find the stored stacks. */
	struct ha_db_session sess2 = SESSION(4343, "leaky", EXE, 524288, T0 + 95);
	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess2, &sid, err, sizeof err));
	again = stack(db, grow_frames, N(grow_frames));
	if (again != g) {
		fprintf(stderr, "%s: after reopen, the grow callstack got id %lld, was %lld\n", prog,
		        (long long)again, (long long)g);
		exit(1);
	}
	int64_t n2 = stack(db, s2_frames, N(s2_frames));
	printf("stack s2 %lld\nsession %lld\n", (long long)n2, (long long)sid);
	struct ha_db_bucket s4[] = { bucket(g, HA_KIND_HEAP, 4096, 1, 0, 0) };
	struct ha_db_bucket s5[] = {
		bucket(g, HA_KIND_HEAP, 12288, 3, 0, 0),
		bucket(n2, HA_KIND_HEAP, 1000, 10, 0, 0),
	};
	snapshot(db, sid, T0 + 100, 20000000, 10, 0, 0, "periodic", s4, N(s4));
	snapshot(db, sid, T0 + 110, 20100000, 25, 0, 0, "exit", s5, N(s5));
	CHECK(ha_db_end_session(db, sid, T0 + 110, err, sizeof err));
	ha_db_close(db);
}

/* --series: session 1 (pid 5151, "app"), snapshots 1..10 at T0 + 60 i
 * (i = 0..9), live bytes/objects at snapshot i+1:
 *
 *   leak_steady   heap  6000 i / 6 i          a steady leak, 6000 B/min
 *   Cache::grow   heap  1000 i / i            a C++ leak through operator
 *                                             new and std::__new_allocator
 *   Registry::add heap  50000/5 twice         two stacks (operator new and
 *                                             operator new[]) that fold into
 *                                             one, constant
 *   cache_fill    heap  10000 min(i, 10 - 2 (i - 5)) ... grows to 50000 at
 *                       i = 5 then falls back to 0 (0 10 20 30 40 50 40 20 0 0 kB)
 *   pool_init     mmap  500000/10             constant
 *
 * The estimated live total peaks at i = 5 (snapshot 6). */
static void series(const char *path)
{
	static const char *APP = "/opt/app/bin/app", *APP_BID = "00112233445566778899aabbccddeeff00112233";
	static const char *CXX = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
	static const double cache[10] = { 0, 10000, 20000, 30000, 40000, 50000, 40000, 20000, 0, 0 };
	struct ha_db_frame leak[] = {
		{ APP, APP_BID, 0x2100, "leak_steady", "/src/app/app.c", 21, 0 },
		{ APP, APP_BID, 0x2900, "main", "/src/app/app.c", 90, 0 },
	};
	struct ha_db_frame cxx[] = {
		{ CXX, "", 0x9a0e0, "operator new(unsigned long)", "", 0, 0 },
		{ APP, APP_BID, 0x2200, "std::__new_allocator<int>::allocate(unsigned long, void const*)",
		  "/usr/include/c++/12/bits/new_allocator.h", 137, 1 },
		{ APP, APP_BID, 0x2200, "app::Cache::grow()", "/src/app/cache.cc", 14, 0 },
		{ APP, APP_BID, 0x2910, "main", "/src/app/app.c", 91, 0 },
	};
	struct ha_db_frame reg1[] = {
		{ CXX, "", 0x9a0e0, "operator new(unsigned long)", "", 0, 0 },
		{ APP, APP_BID, 0x2300, "app::Registry::add(int)", "/src/app/registry.cc", 30, 0 },
		{ APP, APP_BID, 0x2920, "main", "/src/app/app.c", 92, 0 },
	};
	struct ha_db_frame reg2[] = {
		{ CXX, "", 0x9a130, "operator new[](unsigned long)", "", 0, 0 },
		{ APP, APP_BID, 0x2300, "app::Registry::add(int)", "/src/app/registry.cc", 30, 0 },
		{ APP, APP_BID, 0x2920, "main", "/src/app/app.c", 92, 0 },
	};
	struct ha_db_frame cachef[] = {
		{ LIB, LIB_BID, 0x500, "cache_fill", "/src/leaky/cache.c", 33, 0 },
		{ APP, APP_BID, 0x2930, "main", "/src/app/app.c", 93, 0 },
	};
	struct ha_db_frame pool[] = {
		{ APP, APP_BID, 0x2400, "pool_init", "/src/app/app.c", 10, 0 },
		{ APP, APP_BID, 0x2940, "main", "/src/app/app.c", 94, 0 },
	};
	struct ha_db *db;
	struct ha_db_session sess = SESSION(5151, "app", APP, 524288, T0 - 1);
	int64_t sid, l, c, r1, r2, cf, p;

	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	CHECK(ha_db_stack(db, leak, N(leak), &l, err, sizeof err));
	CHECK(ha_db_stack(db, cxx, N(cxx), &c, err, sizeof err));
	CHECK(ha_db_stack(db, reg1, N(reg1), &r1, err, sizeof err));
	CHECK(ha_db_stack(db, reg2, N(reg2), &r2, err, sizeof err));
	CHECK(ha_db_stack(db, cachef, N(cachef), &cf, err, sizeof err));
	CHECK(ha_db_stack(db, pool, N(pool), &p, err, sizeof err));
	printf("stack leak %lld\nstack cxx %lld\nstack reg1 %lld\nstack reg2 %lld\n"
	       "stack cache %lld\nstack pool %lld\n", (long long)l, (long long)c, (long long)r1,
	       (long long)r2, (long long)cf, (long long)p);
	for (int i = 0; i < 10; i++) {
		struct ha_db_bucket b[6];
		size_t n = 0;
		if (i == 0) {
			b[n++] = bucket(r1, HA_KIND_HEAP, 50000, 5, 0, 0);
			b[n++] = bucket(r2, HA_KIND_HEAP, 50000, 5, 0, 0);
			b[n++] = bucket(p, HA_KIND_MMAP, 500000, 10, 0, 0);
		} else {
			b[n++] = bucket(l, HA_KIND_HEAP, 6000.0 * i, 6 * i, 0, 0);
			b[n++] = bucket(c, HA_KIND_HEAP, 1000.0 * i, i, 0, 0);
		}
		if (cache[i] != (i ? cache[i - 1] : -1)) {
			/* Cumulative: allocations only grow, frees make up the rest. */
			double alloc = 0;
			for (int j = 1; j <= i; j++)
				alloc += cache[j] > cache[j - 1] ? cache[j] - cache[j - 1] : 0;
			b[n++] = bucket(cf, HA_KIND_HEAP, alloc, alloc / 1000, alloc - cache[i],
			                (alloc - cache[i]) / 1000);
		}
		snapshot(db, sid, T0 + 60 * i, 20000000 + 10000 * (uint64_t)i, 100 * (uint64_t)i, 0, 0,
		         i == 9 ? "detach" : "periodic", b, n);
	}
	CHECK(ha_db_end_session(db, sid, T0 + 541, err, sizeof err));
	ha_db_close(db);
}

/* --spread: session 1 (pid 7171, "spread"), 10 snapshots one minute apart.
 * Each call path below wobbles (up 7000, down 5000 in turn: no steady
 * trend) while each pair of them adds up to a line (+2000 a minute):
 *   keep_block <- caller_K <- serve <- main   K = 0..7: keep_block's flat
 *                       trend is a suspect (+8000/min over 8 call paths),
 *                       serve's and main's cumulative ones are its via;
 *   leaf_a, leaf_b <- parse <- main           each leaf one call path (no
 *                       flat trend measured); parse's cumulative trend is a
 *                       suspect (+2000/min) that no narrower one explains;
 *   pool_init <- main  a constant pool. */
static void spread(const char *path)
{
	static const char *const callers[8] = { "caller_0", "caller_1", "caller_2", "caller_3",
		                                 "caller_4", "caller_5", "caller_6", "caller_7" };
	struct ha_db_frame kb[] = {
		{ NULL, NULL, 0x3000, "keep_block", "/src/sp/keep.c", 5, 0 },
		{ NULL, NULL, 0x3100, NULL, "/src/sp/callers.c", 10, 0 },
		{ NULL, NULL, 0x3200, "serve", "/src/sp/serve.c", 20, 0 },
		{ NULL, NULL, 0x2950, "main", "/src/sp/main.c", 30, 0 },
	};
	struct ha_db_frame la[] = {
		{ NULL, NULL, 0x3300, "leaf_a", "/src/sp/parse.c", 40, 0 },
		{ NULL, NULL, 0x3400, "parse", "/src/sp/parse.c", 50, 0 },
		{ NULL, NULL, 0x2960, "main", "/src/sp/main.c", 31, 0 },
	};
	struct ha_db_frame lb[] = {
		{ NULL, NULL, 0x3310, "leaf_b", "/src/sp/parse.c", 41, 0 },
		{ NULL, NULL, 0x3410, "parse", "/src/sp/parse.c", 51, 0 },
		{ NULL, NULL, 0x2960, "main", "/src/sp/main.c", 31, 0 },
	};
	struct ha_db_frame pool[] = {
		{ NULL, NULL, 0x2400, "pool_init", "/src/sp/main.c", 10, 0 },
		{ NULL, NULL, 0x2970, "main", "/src/sp/main.c", 32, 0 },
	};
	struct ha_db *db;
	struct ha_db_session sess = SESSION(7171, "spread", EXE, 524288, T0 - 1);
	int64_t sid, k[8], a, b, p;

	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	for (int j = 0; j < 8; j++) {
		kb[1].rel_pc = 0x3100 + 0x10 * (uint64_t)j;
		kb[1].function = callers[j];
		k[j] = stack(db, kb, N(kb));
	}
	a = stack(db, la, N(la));
	b = stack(db, lb, N(lb));
	p = stack(db, pool, N(pool));
	for (int i = 0; i < 10; i++) {
		struct ha_db_bucket v[11];
		size_t n = 0;
		double up = 3000 + 1000.0 * i + (i % 2 ? -3000 : 3000), down = 3000 + 1000.0 * i - (i % 2 ? -3000 : 3000);
		for (int j = 0; j < 8; j++)
			v[n++] = bucket(k[j], HA_KIND_HEAP, j % 2 ? down : up, 1, 0, 0);
		v[n++] = bucket(a, HA_KIND_HEAP, up, 1, 0, 0);
		v[n++] = bucket(b, HA_KIND_HEAP, down, 1, 0, 0);
		v[n++] = bucket(p, HA_KIND_HEAP, 100000, 10, 0, 0);
		snapshot(db, sid, T0 + 60 * i, 30000000, 100 * (uint64_t)i, 0, 0,
		         i == 9 ? "detach" : "periodic", v, n);
	}
	CHECK(ha_db_end_session(db, sid, T0 + 541, err, sizeof err));
	ha_db_close(db);
}

/* --attacher: session 1 (pid 6161, "srv"), interval 512 KiB:
 *
 *   id  reason    time      rows
 *   1   attach    T0        none (the baseline: every bucket 0)
 *   2.. periodic  T0 + 60 i (i = 1..6) leak_attach heap 8000 i / 8 i;
 *   7                       pool_srv mmap 300000/3 from snapshot 2 on;
 *                           burst_fill heap: allocated and freed between
 *                           snapshots 4 and 5 (live 0 in every periodic one)
 *   8   peak      T0 + 210  burst_fill 2000000/2000, leak_attach 28000/28
 *   9   detach    T0 + 420  burst_fill 0 (rewritten), leak_attach 56000/56
 *
 * Snapshot 5 has sample_interval 1 MiB (raised); snapshot 6 counts 12
 * drops (0 before).  Without snapshot 8 the leak is a straight line: the
 * only leak suspect, 8000 B/min; the peak is snapshot 8 (2328000 B). */
static void attacher(const char *path)
{
	static const char *SRV = "/opt/srv/bin/srv", *SRV_BID = "7788990011223344556677889900aabbccddeeff";
	struct ha_db_frame leak[] = {
		{ SRV, SRV_BID, 0x3100, "leak_attach", "/src/srv/srv.c", 31, 0 },
		{ SRV, SRV_BID, 0x3800, "serve", "/src/srv/srv.c", 70, 0 },
		{ SRV, SRV_BID, 0x3900, "main", "/src/srv/srv.c", 99, 0 },
	};
	struct ha_db_frame burst[] = {
		{ SRV, SRV_BID, 0x3200, "burst_fill", "/src/srv/burst.c", 12, 0 },
		{ SRV, SRV_BID, 0x3810, "serve", "/src/srv/srv.c", 72, 0 },
		{ SRV, SRV_BID, 0x3900, "main", "/src/srv/srv.c", 99, 0 },
	};
	struct ha_db_frame pool[] = {
		{ SRV, SRV_BID, 0x3300, "pool_srv", "/src/srv/pool.c", 5, 0 },
		{ SRV, SRV_BID, 0x3910, "main", "/src/srv/srv.c", 97, 0 },
	};
	struct ha_db *db;
	struct ha_db_session sess = SESSION(6161, "srv", SRV, 524288, T0);
	int64_t sid, l, b, p, id;

	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	CHECK(ha_db_stack(db, leak, N(leak), &l, err, sizeof err));
	CHECK(ha_db_stack(db, burst, N(burst), &b, err, sizeof err));
	CHECK(ha_db_stack(db, pool, N(pool), &p, err, sizeof err));
	printf("stack leak %lld\nstack burst %lld\nstack pool %lld\n", (long long)l, (long long)b,
	       (long long)p);
	struct ha_db_snapshot s0 = SNAP(T0, 4000000, 0, 0, 0, "attach", 524288);
	CHECK(ha_db_snapshot(db, sid, &s0, NULL, 0, &id, err, sizeof err));
	printf("snapshot %lld session %lld buckets 0\n", (long long)id, (long long)sid);
	for (int i = 1; i <= 6; i++) {
		struct ha_db_bucket v[3];
		size_t n = 0;
		v[n++] = bucket(l, HA_KIND_HEAP, 8000.0 * i, 8 * i, 0, 0);
		if (i == 1)
			v[n++] = bucket(p, HA_KIND_MMAP, 300000, 3, 0, 0);
		if (i == 4)
			v[n++] = bucket(b, HA_KIND_HEAP, 2000000, 2000, 2000000, 2000);
		struct ha_db_snapshot sn = SNAP(T0 + 60 * i, 5000000 + 100000 * (uint64_t)i, 100 * (uint64_t)i,
		                             i >= 5 ? 12 : 0, 0, "periodic", i == 5 ? 1u << 20 : 524288);
		CHECK(ha_db_snapshot(db, sid, &sn, v, n, &id, err, sizeof err));
		printf("snapshot %lld session %lld buckets %zu\n", (long long)id, (long long)sid, n);
	}
	/* The peak, written at the end with the time it happened. */
	struct ha_db_bucket pk[] = {
		bucket(b, HA_KIND_HEAP, 2000000, 2000, 0, 0),
		bucket(l, HA_KIND_HEAP, 28000, 28, 0, 0),
	};
	struct ha_db_snapshot sp = SNAP(T0 + 210, 7200000, 350, 0, 0, "peak", 524288);
	CHECK(ha_db_snapshot(db, sid, &sp, pk, N(pk), &id, err, sizeof err));
	printf("snapshot %lld session %lld buckets %zu\n", (long long)id, (long long)sid, N(pk));
	/* The final snapshot rewrites every bucket the peak has a row for. */
	struct ha_db_bucket fin[] = {
		bucket(b, HA_KIND_HEAP, 2000000, 2000, 2000000, 2000),
		bucket(l, HA_KIND_HEAP, 56000, 56, 0, 0),
	};
	snapshot(db, sid, T0 + 420, 5800000, 700, 12, 0, "detach", fin, N(fin));
	CHECK(ha_db_end_session(db, sid, T0 + 420.5, err, sizeof err));
	ha_db_close(db);
}

/* --many N: session 1 (pid 7171, "many"), N call paths of 10 frames,
 * main -> mid_<j % 4> -> ... -> leaf_<j>, so that the tree branches at
 * every level; an 'attach' baseline and 4 periodic snapshots 60 s apart
 * and a 'detach' one.  Path j holds 1000 + 100 (j % 97) bytes from the
 * first periodic snapshot on; every 512th path (j % 512 == 7) leaks
 * 50000 B more at each snapshot, its leaf named many_leak_<j>.  busy > 0:
 * busy snapshots instead of 5, every path changing at each (+-8 B). */
static void many(const char *path, int npaths, int busy)
{
	static const char *BIN = "/opt/many/bin/many", *BID = "0f0e0d0c0b0a09080706050403020100ffeeddcc";
	enum { DEPTH = 10 };
	struct ha_db *db;
	struct ha_db_session sess = SESSION(7171, "many", BIN, 524288, T0);
	struct ha_db_frame f[DEPTH];
	char names[DEPTH][48];
	int64_t sid, *ids = calloc((size_t)npaths, sizeof *ids), id;
	struct ha_db_bucket *v = calloc((size_t)npaths, sizeof *v);

	if (!ids || !v) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	CHECK(ha_db_batch_begin(db, err, sizeof err));
	for (int j = 0; j < npaths; j++) {
		/* Frame k (from the root) branches 4 ways per level. */
		for (int k = 0; k < DEPTH; k++) {
			int pos = DEPTH - 1 - k, branch = 1;
			for (int x = 0; x < k; x++)
				branch *= 4;
			if (k == 0)
				snprintf(names[pos], sizeof names[pos], "main");
			else if (k == DEPTH - 1)
				snprintf(names[pos], sizeof names[pos], j % 512 == 7 ? "many_leak_%d" : "leaf_%d", j);
			else
				snprintf(names[pos], sizeof names[pos], "mid%d_%d", k, j % branch);
			f[pos] = (struct ha_db_frame){ BIN, BID, (uint64_t)(0x10000 + 64 * k + (j % branch)),
			                               names[pos], "/src/many/many.c", 100 * k + 1, 0 };
		}
		CHECK(ha_db_stack(db, f, DEPTH, &ids[j], err, sizeof err));
	}
	CHECK(ha_db_batch_commit(db, err, sizeof err));
	struct ha_db_snapshot s0 = SNAP(T0, 8000000, 0, 0, 0, "attach", 524288);
	CHECK(ha_db_snapshot(db, sid, &s0, NULL, 0, &id, err, sizeof err));
	int last = busy > 0 ? busy : 5;
	for (int i = 1; i <= last; i++) {
		size_t n = 0;
		for (int j = 0; j < npaths; j++) {
			double live = 1000 + 100 * (j % 97) + (busy > 0 ? 8 * (i % 2) : 0);
			if (j % 512 == 7)
				live += 50000.0 * i;
			else if (i > 1 && busy <= 0)
				continue; /* unchanged */
			v[n++] = bucket(ids[j], HA_KIND_HEAP, live, live / 100, 0, 0);
		}
		struct ha_db_snapshot sn = SNAP(T0 + 60 * i, 9000000 + 500000 * (uint64_t)i, 1000 * (uint64_t)i,
		                             0, 0, i == last ? "detach" : "periodic", 524288);
		CHECK(ha_db_snapshot(db, sid, &sn, v, n, &id, err, sizeof err));
	}
	printf("session %lld paths %d\n", (long long)sid, npaths);
	CHECK(ha_db_end_session(db, sid, T0 + 300.5, err, sizeof err));
	ha_db_close(db);
	free(ids);
	free(v);
}

/* A bucket of kind rss or swap: its counts are 4 KiB pages. */
static struct ha_db_bucket pages(int64_t stack_id, int kind, double alloc_b, double free_b)
{
	return bucket(stack_id, kind, alloc_b, alloc_b / 4096, free_b, free_b / 4096);
}

/* --rss: session 1 (pid 8181, "rssapp", rss_period 256), snapshots 1..4 at
 * T0 + 60 i (i = 0..3): 'attach' (no rows), periodic, periodic, 'detach'.
 * Every function allocates through one call path (malloc, or mmap, folded
 * away) and touches its pages through another (the first-touch call path,
 * kind rss), both through the function; live bytes in MiB at snapshots
 * 1 2 3 4 ("-": no row, unchanged):
 *
 *   function           heap/mmap      rss (first touch)           swap
 *   fill_touched       0 64 - -       0 64 - -  (memset)          touched, kept
 *   reserve_untouched  0 64 - -       0 4 KiB - - (_int_malloc)   never touched
 *   scratch_burst      0 32 - 0 mmap  0 - 32 0  (memset)          touched, dropped
 *   cold_cache         0 16 - -       0 16 8 4  (cold_cache_load) 0 - 8 12
 *   parse_input        0 8 0 -        0 8 - -   (parse_line)      freed, resident
 *   session_cache      0 32 - -       0 8 16 24 (session_cache_put) touched slowly
 *
 * Heap and mmap: 0, 216, 208, 176 MiB (the peak: snapshot 2); resident: 0,
 * 96 MiB + 4 KiB, 128 MiB + 4 KiB, 100 MiB + 4 KiB (the peak: snapshot 3);
 * swapped 0, 0, 8, 12 MiB.  The kernel: RssAnon 2, 100, 132, 104 MiB,
 * VmSwap 0, 0, 8, 12 MiB, VmRSS 6, 104, 136, 108 MiB; page-fault samples
 * 0, 100, 200, 260, lost 0, 0, 0, 3. */
static void rss(const char *path)
{
	static const char *APP = "/opt/rssapp/bin/rssapp", *APP_BID = "99887766554433221100ffeeddccbbaa99887766";
	static const char *LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6", *LIBC_BID = "";
	enum { FILL, RESERVE, SCRATCH, COLD, PARSE, SESS, NFN };
	static const char *const fn[NFN] = { "fill_touched", "reserve_untouched", "scratch_burst",
	                                     "cold_cache", "parse_input", "session_cache" };
	/* The leaf of each first-touch call path (before the function). */
	static const char *const toucher[NFN] = { "__memset_avx2_unaligned_erms", "_int_malloc",
	                                          "__memset_avx2_unaligned_erms", "cold_cache_load",
	                                          "parse_line", "session_cache_put" };
	const double M = 1048576;
	struct ha_db *db;
	struct ha_db_session sess = SESSION(8181, "rssapp", APP, 524288, T0 - 1);
	int64_t sid, h[NFN], r[NFN], id;

	sess.rss_period = 256;
	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	for (int i = 0; i < NFN; i++) {
		uint64_t pc = 0x4000 + 0x100 * (uint64_t)i;
		int app_leaf = toucher[i][0] != '_';
		struct ha_db_frame heap[] = {
			{ LIBC, LIBC_BID, i == SCRATCH ? 0x11ba0 : 0xa50a0, i == SCRATCH ? "mmap" : "malloc", "", 0, 0 },
			{ APP, APP_BID, pc, fn[i], "/src/rssapp/rssapp.c", 10 * i + 11, 0 },
			{ APP, APP_BID, 0x5000 + 0x10 * (uint64_t)i, "main", "/src/rssapp/rssapp.c", 100 + i, 0 },
		};
		struct ha_db_frame touch[] = {
			{ app_leaf ? APP : LIBC, app_leaf ? APP_BID : LIBC_BID, pc + 0x80, toucher[i],
			  app_leaf ? "/src/rssapp/touch.c" : "", app_leaf ? 5 * i + 3 : 0, 0 },
			{ LIBC, LIBC_BID, 0xa50a0, "malloc", "", 0, 0 },   /* reserve_untouched only */
			{ APP, APP_BID, pc + 0x20, fn[i], "/src/rssapp/rssapp.c", 10 * i + 12, 0 },
			{ APP, APP_BID, 0x5080 + 0x10 * (uint64_t)i, "main", "/src/rssapp/rssapp.c", 110 + i, 0 },
		};
		CHECK(ha_db_stack(db, heap, N(heap), &h[i], err, sizeof err));
		if (i == RESERVE) {
			CHECK(ha_db_stack(db, touch, N(touch), &r[i], err, sizeof err));
		} else {
			touch[1] = touch[0];
			CHECK(ha_db_stack(db, touch + 1, N(touch) - 1, &r[i], err, sizeof err));
		}
		printf("stack %s heap %lld rss %lld\n", fn[i], (long long)h[i], (long long)r[i]);
	}

	struct ha_db_snapshot s1 = SNAP(T0, 6 * M, 0, 0, 0, "attach", 524288);
	s1.rss_anon_bytes = 2 * M;
	CHECK(ha_db_snapshot(db, sid, &s1, NULL, 0, &id, err, sizeof err));
	printf("snapshot %lld session %lld buckets 0\n", (long long)id, (long long)sid);

	struct ha_db_bucket b2[] = {
		bucket(h[FILL], HA_KIND_HEAP, 64 * M, 1, 0, 0),
		bucket(h[RESERVE], HA_KIND_HEAP, 64 * M, 1, 0, 0),
		bucket(h[SCRATCH], HA_KIND_MMAP, 32 * M, 1, 0, 0),
		bucket(h[COLD], HA_KIND_HEAP, 16 * M, 16, 0, 0),
		bucket(h[PARSE], HA_KIND_HEAP, 8 * M, 2048, 0, 0),
		bucket(h[SESS], HA_KIND_HEAP, 32 * M, 1, 0, 0),
		pages(r[FILL], HA_KIND_RSS, 64 * M, 0),
		pages(r[RESERVE], HA_KIND_RSS, 4096, 0),
		pages(r[COLD], HA_KIND_RSS, 16 * M, 0),
		pages(r[PARSE], HA_KIND_RSS, 8 * M, 0),
		pages(r[SESS], HA_KIND_RSS, 8 * M, 0),
	};
	struct ha_db_snapshot s2 = SNAP(T0 + 60, 104 * M, 100, 0, 0, "periodic", 524288);
	s2.rss_anon_bytes = 100 * M;
	s2.rss_samples = 100;
	CHECK(ha_db_snapshot(db, sid, &s2, b2, N(b2), &id, err, sizeof err));
	printf("snapshot %lld session %lld buckets %zu\n", (long long)id, (long long)sid, N(b2));

	struct ha_db_bucket b3[] = {
		bucket(h[PARSE], HA_KIND_HEAP, 8 * M, 2048, 8 * M, 2048),
		pages(r[SCRATCH], HA_KIND_RSS, 32 * M, 0),
		pages(r[COLD], HA_KIND_RSS, 16 * M, 8 * M),
		pages(r[COLD], HA_KIND_SWAP, 8 * M, 0),
		pages(r[SESS], HA_KIND_RSS, 16 * M, 0),
	};
	struct ha_db_snapshot s3 = SNAP(T0 + 120, 136 * M, 200, 0, 0, "periodic", 524288);
	s3.rss_anon_bytes = 132 * M;
	s3.swap_bytes = 8 * M;
	s3.rss_samples = 200;
	CHECK(ha_db_snapshot(db, sid, &s3, b3, N(b3), &id, err, sizeof err));
	printf("snapshot %lld session %lld buckets %zu\n", (long long)id, (long long)sid, N(b3));

	struct ha_db_bucket b4[] = {
		bucket(h[SCRATCH], HA_KIND_MMAP, 32 * M, 1, 32 * M, 1),
		pages(r[SCRATCH], HA_KIND_RSS, 32 * M, 32 * M),
		pages(r[COLD], HA_KIND_RSS, 16 * M, 12 * M),
		pages(r[COLD], HA_KIND_SWAP, 12 * M, 0),
		pages(r[SESS], HA_KIND_RSS, 24 * M, 0),
	};
	struct ha_db_snapshot s4 = SNAP(T0 + 180, 108 * M, 260, 0, 0, "detach", 524288);
	s4.rss_anon_bytes = 104 * M;
	s4.swap_bytes = 12 * M;
	s4.rss_samples = 260;
	s4.rss_lost = 3;
	CHECK(ha_db_snapshot(db, sid, &s4, b4, N(b4), &id, err, sizeof err));
	printf("snapshot %lld session %lld buckets %zu\n", (long long)id, (long long)sid, N(b4));
	CHECK(ha_db_end_session(db, sid, T0 + 180.5, err, sizeof err));
	ha_db_close(db);
}

/* Many snapshots as fast as possible, for the kill -9 test. */
static void loop(const char *path, long count, int nstacks, int step)
{
	struct ha_db *db;
	struct ha_db_session sess = SESSION(getpid(), "db_fill", "/proc/self/exe", 4096, T0);
	int64_t sid, *ids;
	struct ha_db_bucket *b;
	char fn[8][32];
	struct ha_db_frame f[8];

	ids = calloc((size_t)nstacks, sizeof *ids);
	b = calloc((size_t)nstacks + 1, sizeof *b);
	if (!ids || !b) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	CHECK(ha_db_open(path, &db, err, sizeof err));
	/* A tiny page cache: big transactions spill pages into the WAL before
	 * their commit, so a kill also leaves uncommitted frames behind for the
	 * recovery to ignore. */
	if (sqlite3_exec(ha_db_handle(db), "PRAGMA cache_size = 4", NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: cannot set the cache size\n", prog);
		exit(1);
	}
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	for (int i = 0; i < 8; i++)
		f[i] = (struct ha_db_frame){ EXE, EXE_BID, 0, fn[i], "/src/loop.c", 0, 0 };
	for (int j = 0; j < nstacks; j++) {
		for (int i = 0; i < 8; i++) {
			snprintf(fn[i], sizeof fn[i], "loop_fn_%d_%d", j % (i + 2), i);
			f[i].rel_pc = (uint64_t)(0x1000 + 16 * i + j % (i + 2));
			f[i].line = 10 * i + 1;
		}
		CHECK(ha_db_stack(db, f, 8, &ids[j], err, sizeof err));
	}
	printf("session %lld stacks %d\n", (long long)sid, nstacks);
	fflush(stdout);
	for (long k = 1; count == 0 || k <= count; k++) {
		size_t n = 1 + (size_t)((k * 37) % nstacks);
		int64_t id, fresh;
		char line[64];
		if (step && !fgets(line, sizeof line, stdin))
			break;
		/* A new callstack before each snapshot: the crash can also hit a
		 * stack-interning transaction. */
		snprintf(fn[0], sizeof fn[0], "loop_new_%ld_%d", k, getpid());
		f[0].rel_pc = (uint64_t)k;
		for (int i = 1; i < 8; i++)
			snprintf(fn[i], sizeof fn[i], "loop_fn_0_%d", i);
		CHECK(ha_db_stack(db, f, 8, &fresh, err, sizeof err));
		for (size_t j = 0; j < n; j++)
			b[j] = bucket(ids[j], HA_KIND_HEAP, 4096.0 * k + j, k, 1024.0 * k, k / 2);
		b[n] = bucket(fresh, HA_KIND_MMAP, 65536, 1, 0, 0);
		struct ha_db_snapshot s = SNAP(T0 + k, 1000000 + 4096 * (uint64_t)k, (uint64_t)k * 10, 0, 0,
		                            "periodic", 512u << 10);
		CHECK(ha_db_snapshot(db, sid, &s, b, n + 1, &id, err, sizeof err));
		printf("committed snapshot %lld buckets %zu\n", (long long)id, n + 1);
		fflush(stdout);
	}
	CHECK(ha_db_end_session(db, sid, T0 + 1e6, err, sizeof err));
	ha_db_close(db);
	free(ids);
	free(b);
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: %s [--sessions 1|2] DB\n"
	        "       %s --loop COUNT [--stacks N] [--step] DB\n"
	        "       %s --open DB\n"
	        "       %s --series DB\n"
	        "       %s --spread DB\n"
	        "       %s --attacher DB\n"
	        "       %s --many N [--snapshots K] DB\n"
	        "       %s --rss DB\n", prog, prog, prog, prog, prog, prog, prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sessions", required_argument, NULL, 's' },
		{ "loop", required_argument, NULL, 'l' },
		{ "stacks", required_argument, NULL, 'n' },
		{ "open", no_argument, NULL, 'o' },
		{ "step", no_argument, NULL, 'S' },
		{ "series", no_argument, NULL, 'x' },
		{ "spread", no_argument, NULL, 'P' },
		{ "offset-ids", no_argument, NULL, 'O' },
		{ "attacher", no_argument, NULL, 'A' },
		{ "many", required_argument, NULL, 'M' },
		{ "snapshots", required_argument, NULL, 'K' },
		{ "rss", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	int sessions = 1, nstacks = 500, do_open = 0, step = 0, do_series = 0, offset = 0, c;
	int do_attacher = 0, do_rss = 0, npaths = 0, do_spread = 0, busy = 0;
	long count = -1;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': sessions = atoi(optarg); break;
		case 'l': count = atol(optarg); break;
		case 'n': nstacks = atoi(optarg); break;
		case 'o': do_open = 1; break;
		case 'S': step = 1; break;
		case 'x': do_series = 1; break;
		case 'P': do_spread = 1; break;
		case 'O': offset = 1; break;
		case 'A': do_attacher = 1; break;
		case 'R': do_rss = 1; break;
		case 'K': busy = atoi(optarg); break;
		case 'M':
			npaths = atoi(optarg);
			if (npaths < 1)
				usage();
			break;
		default: usage();
		}
	}
	if (optind != argc - 1 || sessions < 1 || sessions > 2 || nstacks < 1)
		usage();
	if (do_open) {
		struct ha_db *db;
		CHECK(ha_db_open(argv[optind], &db, err, sizeof err));
		ha_db_close(db);
		return 0;
	}
	if (offset) {
		static const struct ha_db_frame other[] = {
			{ "/opt/other", "", 0x10, "unrelated", "/src/other.c", 1, 0 },
		};
		struct ha_db *db;
		int64_t id;
		CHECK(ha_db_open(argv[optind], &db, err, sizeof err));
		CHECK(ha_db_stack(db, other, 1, &id, err, sizeof err));
		ha_db_close(db);
	}
	if (do_attacher)
		attacher(argv[optind]);
	else if (do_rss)
		rss(argv[optind]);
	else if (npaths > 0)
		many(argv[optind], npaths, busy);
	else if (do_series)
		series(argv[optind]);
	else if (do_spread)
		spread(argv[optind]);
	else if (count >= 0)
		loop(argv[optind], count, nstacks, step);
	else
		fill(argv[optind], sessions);
	return 0;
}
