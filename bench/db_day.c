/* db_day.c -- what the database writer writes to disk over a long session,
 * without the timing of a live one (issue 39; bench/README.md).
 *
 *   db_day [PATHS [SNAPSHOTS [CHANGED%]]] DB
 *
 * Writes DB as heapattach's writer thread would for a program with PATHS
 * call paths (default 4096) of which CHANGED% (default 100: a program that
 * churns through them all) change between two periodic snapshots, taken
 * every 10 s of simulated time, SNAPSHOTS of them (default 8640: a day),
 * with the call paths' rows once a minute and the totals between (as the
 * collector does: db_write.h, ha_db_paths_due), thinned every 30 as the
 * writer does (src/record/writer.c, db_thin.c).
 * The values are a sampler's estimates (fractional counts, bytes in
 * multiples of the interval), from a fixed seed, so every run writes the
 * same rows.  Each simulated hour it prints the snapshots kept, the file
 * with its WAL, what this process wrote to disk so far (/proc/self/io
 * write_bytes: the WAL, the checkpoints, thinning) and that against the
 * file; at the end, after the close (which checkpoints and removes the
 * WAL), the same against the final file.  A benchmark, not a test: the
 * soak (bench/soak) measures the same on a live attacher, whose writer
 * keeps up with fewer snapshots when the machine is loaded. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db_write.h"

#define PERIOD 10.0
#define THIN_EVERY 30 /* src/record/writer.c */
#define INTERVAL 524288.0

static const char *prog = "db_day";
static char err[512];

#define CHECK(x) \
	do { \
		if ((x) < 0) { \
			fprintf(stderr, "%s: %s\n", prog, err); \
			exit(1); \
		} \
	} while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static unsigned long long written(void)
{
	FILE *f = fopen("/proc/self/io", "r");
	char line[128];
	unsigned long long v = 0;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "write_bytes: %llu", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static long long size_of(const char *path, const char *suffix)
{
	char p[4096];
	struct stat st;
	snprintf(p, sizeof p, "%s%s", path, suffix);
	return stat(p, &st) == 0 ? (long long)st.st_size : 0;
}

int main(int argc, char **argv)
{
	int paths = argc > 2 ? atoi(argv[1]) : 4096;
	int snaps = argc > 3 ? atoi(argv[2]) : 8640;
	int changed = argc > 4 ? atoi(argv[3]) : 100;
	if (argc < 2 || argc > 5 || paths < 1 || paths > 1000000 || snaps < 2 || changed < 0 ||
	    changed > 100) {
		fprintf(stderr, "usage: %s [PATHS [SNAPSHOTS [CHANGED%%]]] DB\n", prog);
		return 2;
	}
	const char *path = argv[argc - 1];
	struct ha_db *db;
	int64_t sid, id, *ids = calloc((size_t)paths, sizeof *ids);
	struct path {
		struct ha_db_bucket b;
		int dirty;              /* changed since the last snapshot with paths */
	} *cur = calloc((size_t)paths, sizeof *cur);
	struct ha_db_bucket *rows = calloc((size_t)paths, sizeof *rows);
	if (!ids || !cur || !rows) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	double t0 = 1.7e9;
	struct ha_db_session sess = { .pid = 4096, .comm = "day", .exe = "/opt/day/day",
		                      .interval = (uint64_t)INTERVAL, .start_time = t0 };
	CHECK(ha_db_open(path, &db, err, sizeof err));
	CHECK(ha_db_begin_session(db, &sess, &sid, err, sizeof err));
	CHECK(ha_db_batch_begin(db, err, sizeof err));
	for (int j = 0; j < paths; j++) {
		struct ha_db_frame f[5];
		char names[5][32];
		for (int k = 0; k < 5; k++) {
			snprintf(names[k], sizeof names[k], k ? "via%d_%d" : "leaf_%d", k, (j >> (3 * k)) & 7);
			if (!k)
				snprintf(names[k], sizeof names[k], "leaf_%d", j);
			f[k] = (struct ha_db_frame){ "/opt/day/day", "00ff", (uint64_t)(0x1000 + 64 * k + j % 8),
				                     names[k], "day.c", 10 * k + 1, 0 };
		}
		CHECK(ha_db_stack(db, f, 5, &ids[j], err, sizeof err));
		cur[j].b = (struct ha_db_bucket){ .stack_id = ids[j], .kind = HA_KIND_HEAP };
	}
	CHECK(ha_db_batch_commit(db, err, sizeof err));
	struct ha_db_snapshot s = { .time = t0, .rss_bytes = 1 << 26, .reason = "attach",
		                    .sample_interval = (uint64_t)INTERVAL, .has_live = 1 };
	CHECK(ha_db_snapshot(db, sid, &s, NULL, 0, &id, err, sizeof err));
	printf("%6s %10s %12s %12s %8s\n", "hour", "snapshots", "db+wal_MB", "written_MB", "ratio");
	int since_thin = 0, kept = 1, last_paths = 0;
	for (int i = 1; i <= snaps; i++) {
		size_t n = 0;
		/* The collector's cadence (src/record/collector.c): the call
		 * paths once every HA_DB_PATHS_EVERY periods, totals between. */
		int with_paths = i == snaps || ha_db_paths_due(PERIOD * i, PERIOD * (i - last_paths), PERIOD);
		for (int j = 0; j < paths; j++) {
			if ((int)(next() % 100) >= changed)
				continue;
			/* A few samples each way, sizes 16..1024: counts fractional. */
			double a = next() % 8, f = next() % 8, sz = 16 + next() % 1009;
			struct ha_db_bucket *b = &cur[j].b;
			b->alloc_bytes += a * INTERVAL;
			b->alloc_count += a * INTERVAL / sz;
			b->free_bytes += f * INTERVAL;
			b->free_count += f * INTERVAL / sz;
			b->live_bytes = b->alloc_bytes - b->free_bytes;
			b->live_count = b->alloc_count - b->free_count;
			cur[j].dirty = 1;
		}
		double live = 0, objects = 0;
		for (int j = 0; j < paths; j++) {
			live += cur[j].b.live_bytes;
			objects += cur[j].b.live_count;
			if (with_paths && cur[j].dirty) {
				rows[n++] = cur[j].b;
				cur[j].dirty = 0;
			}
		}
		if (with_paths)
			last_paths = i;
		s = (struct ha_db_snapshot){ .time = t0 + PERIOD * i, .rss_bytes = 1 << 26,
			                     .samples = (uint64_t)i * 1000,
			                     .reason = i == snaps ? "detach" : "periodic",
			                     .sample_interval = (uint64_t)INTERVAL,
			                     .totals_only = !with_paths, .has_live = 1,
			                     .live_bytes = { live }, .live_count = objects };
		CHECK(ha_db_snapshot(db, sid, &s, rows, n, &id, err, sizeof err));
		kept++;
		if (i < snaps && ++since_thin >= THIN_EVERY) {
			int removed;
			since_thin = 0;
			CHECK(ha_db_thin(db, sid, PERIOD, &removed, err, sizeof err));
			kept -= removed;
		}
		if (i % 360 == 0 || i == snaps) {
			long long sz = size_of(path, "") + size_of(path, "-wal");
			unsigned long long w = written();
			printf("%6.1f %10d %12.1f %12.1f %8.1f\n", i / 360.0, kept, sz / 1048576.0,
			       w / 1048576.0, (double)w / (double)sz);
			fflush(stdout);
		}
	}
	CHECK(ha_db_end_session(db, sid, t0 + PERIOD * snaps + 0.5, err, sizeof err));
	ha_db_close(db);
	unsigned long long w = written();
	long long sz = size_of(path, "");
	printf("end: %d snapshots written, %d kept, file %lld bytes, written %llu bytes: %.2fx the file\n",
	       snaps + 1, kept, sz, w, (double)w / (double)sz);
	free(ids);
	free(cur);
	free(rows);
	return 0;
}
