/* collector.h -- the collector thread: drains the ring, unwinds each copied
 * stack, interns callstacks (new ones go to the writer to be symbolized),
 * keeps the buckets, and on request turns what changed into a snapshot
 * message for the writer.  It owns the unwinder and the bookkeeping; it
 * talks to the main thread and the writer only through queues. */
#ifndef HA_COLLECTOR_H
#define HA_COLLECTOR_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include "ha_proto.h"
#include "queue.h"

/* Messages the main thread sends to the collector. */
enum { HA_CMD_SNAPSHOT = 1, HA_CMD_STOP = 2, HA_CMD_LIVE = 3 };
struct ha_cmd {
	struct ha_qmsg q;
	const char *reason;     /* static string: "periodic", "signal", ... */
};

/* Counters the collector publishes for status lines: written only by the
 * collector, after each drain of the ring, and copied word by word with
 * relaxed atomics (ha_collector_read_stats).  Every one a uint64_t: the
 * list below makes the struct, and the assertion after it holds the copy
 * to that layout. */
#define HA_COLLECTOR_STATS(X) \
	X(records)          /* records framed */ \
	X(samples)          /* samples booked */ \
	X(frees)            /* frees read */ \
	X(unwind_failures)  /* samples not unwound */ \
	X(corrupt_records)  /* records that did not check, counted and skipped */ \
	X(buckets)          /* buckets interned (callstack x kind) */ \
	X(snapshots)        /* snapshots sent to the writer */ \
	X(abandoned)        /* records reserved and never published, skipped */ \
	X(ring_repairs)     /* ring positions the target changed, put back (ring_heal.h) */ \
	X(ring_skipped)     /* bytes of ring given up on after corruption */ \
	X(unwind_ns)        /* time spent unwinding */ \
	X(unwind_cached)    /* unwinds answered by the whole-stack cache (at the end) */ \
	X(frames)           /* pcs unwound (at the end)... */ \
	X(fp_frames)        /* ...of which by frame pointer */ \
	X(scan_frames)      /* ...of which by a call-site scan (unwind_scan.c) */ \
	X(ring_bytes)       /* bytes of records consumed */ \
	X(cpu_ns)           /* CPU time of the collector thread (set when it stops) */ \
	X(interval)         /* sampling interval in effect (adaptive) */ \
	X(interval_max)     /* the largest it has been */ \
	X(peak_bytes)       /* a peak snapshot was written: its live total... */ \
	X(peak_unix_ms)     /* ...and its unix time, ms */ \
	X(rss_samples)      /* --rss: page-fault samples booked */ \
	X(rss_lost)         /* ...lost by the kernel (ring full) */ \
	X(rss_unwind_failures) /* ...booked with the faulting pc alone */ \
	X(rss_pages)        /* attributed pages kept (rss_pages.h) */ \
	X(rss_bytes)        /* attributed resident bytes at the last check */ \
	X(rss_zero)         /* pages forgotten: the zero page... */ \
	X(rss_file)         /* ...file-backed or shared... */ \
	X(rss_dropped)      /* ...no longer present */ \
	X(rss_check_ns)     /* time spent reading pagemap */ \
	X(live_frames)      /* frames sent to a live view */ \
	X(live_ns)          /* ...and the time their copies took */ \
	X(sref_published)   /* stack references (sref.h): entries published for the agent */ \
	X(sref_hits)        /* samples that named their stack */ \
	X(sref_stale)       /* ...naming nothing published (unwind failures) */ \
	X(py_samples)       /* samples with Python frames (pymerge.h) */ \
	X(py_merged)        /* ...merged into their native stacks */ \
	X(py_unmatched)     /* ...kept native: runs and eval frames disagreed */ \
	X(py_frames_gone)   /* Python frames whose code object could not be read */ \
	X(py_wrap)          /* the agent's wrap of pymalloc (enum ha_py_wrap), as last seen */ \
	X(callpaths_folded) /* samples of call paths past --max-callpaths (intern.h) */ \
	X(snapshots_skipped) /* periodic snapshots skipped: the writer was behind */ \
	X(mem_views)        /* snapshots with the allocator's view read (mem_feed.h)... */ \
	X(mem_view_ns)      /* ...the time they took (smaps, the walk, pagemap)... */ \
	X(mem_walk_ns)      /* ...of which walking glibc's arenas... */ \
	X(mem_arenas)       /* ...of this many arenas in all */ \
	X(mem_alloc_reads)  /* snapshots with another allocator's figures (mem_alloc.h)... */ \
	X(mem_alloc_ns)     /* ...their reading's CPU time on the agent's thread... */ \
	X(mem_alloc_wait_ns) /* ...and the collector's wait for them (the round trip) */

struct ha_collector_stats {
#define HA_STAT_FIELD(name) uint64_t name;
	HA_COLLECTOR_STATS(HA_STAT_FIELD)
#undef HA_STAT_FIELD
};
/* How many: one byte each in a struct of bytes (which has no padding). */
#define HA_STAT_BYTE(name) char name;
struct ha_collector_stats_count {
	HA_COLLECTOR_STATS(HA_STAT_BYTE)
};
#undef HA_STAT_BYTE
enum { HA_COLLECTOR_NSTATS = sizeof(struct ha_collector_stats_count) };
_Static_assert(sizeof(struct ha_collector_stats) == HA_COLLECTOR_NSTATS * sizeof(uint64_t),
               "the stats are copied as an array of uint64_t");

struct ha_book;
struct ha_mem_alloc;
struct ha_unwinder;
struct ha_wmsg_snapshot;

struct ha_collector {
	/* configuration, set before start */
	pid_t pid;
	struct ha_ring_hdr *ring;   /* the first ring (ha_ring_map's base) */
	uint64_t data_size;         /* each ring's */
	uint32_t rings;             /* how many (ha_proto.h, section 4) */
	uint64_t interval;          /* the configured sampling interval */
	int adaptive;               /* raise the interval while the ring overflows
	                             * (not with --block) */
	int verbose;                /* say every change of the interval */
	int no_stack_refs;          /* publish no stack references (sref.h) */
	uint64_t max_callpaths;     /* --max-callpaths (intern.h; 0: no cap) */
	int no_memory_view;         /* --no-memory-view: no breakdown of RssAnon at
	                             * snapshots (mem_feed.h) */
	double snapshot_period;     /* --snapshot-every, s: a periodic snapshot
	                             * carries the call paths once every
	                             * HA_DB_PATHS_EVERY of them, the totals
	                             * between (db_write.h); 0: always paths */
	const uint64_t *writer_done; /* the writer's count of snapshots written
	                              * (relaxed atomic): a periodic snapshot is
	                              * skipped while it is behind; NULL: never */
	struct ha_queue *to_writer;
	struct ha_pf *pf;           /* --rss: the page-fault events (pf_events.h),
	                             * owned and closed by the collector; NULL: none */
	uint64_t rss_period;        /* their sampling period, faults */
	struct ha_queue *to_live;   /* live view or status line: frames go there
	                             * (live_feed.h); NULL: none */
	/* The target's CPython (pymerge.h): its eval loop's code, and what
	 * names a recorded frame (called on the collector thread).  resolve
	 * NULL: Python frames are not merged. */
	uint64_t py_eval[2][2];     /* [lo, hi): the eval loop, its .cold part */
	int (*py_resolve)(void *ctx, const struct ha_py_frame *f, const char **func,
	                  const char **file, int *line);
	void *py_resolve_ctx;
	/* The reachability scan (heapattach --reach): called on the collector
	 * thread at each snapshot once its rows are taken, with the
	 * collector's unwinder (NULL: none) to walk the stacks of the
	 * target's copy; it may scan the target and hang the result on m
	 * (m->reach).  NULL: none. */
	void (*reach)(void *ctx, const struct ha_book *book, struct ha_unwinder *unw,
	              struct ha_wmsg_snapshot *m);
	void *reach_ctx;
	/* Another allocator's figures at a snapshot (src/rss/mem_alloc.h),
	 * asked of the agent: called on the collector thread before the
	 * memory view is read; 0 with *out filled, or -1 (none: glibc, or no
	 * answer).  NULL: never asked. */
	int (*alloc_ask)(void *ctx, struct ha_mem_alloc *out);
	void *alloc_ctx;
	/* owned by the collector thread */
	struct ha_queue inbox;
	pthread_t thread;
	struct ha_collector_stats stats;
	struct ha_cmd stop_cmd;     /* the last command: no allocation can fail it */
	int cmds_pending;           /* commands put in inbox and not yet taken: the
	                             * collector looks at the queue only when > 0 */
	char err[256];
};

/* Start the thread.  0 or -1 with c->err. */
int ha_collector_start(struct ha_collector *c);
/* Ask for a snapshot (reason: a static string). */
void ha_collector_snapshot(struct ha_collector *c, const char *reason);
/* Send a frame of every bucket's values to c->to_live, after a drain. */
void ha_collector_live(struct ha_collector *c);
/* Drain what is left, write the final snapshot, stop, join. */
void ha_collector_stop(struct ha_collector *c, const char *reason);
/* Read a consistent-enough copy of the counters (main thread). */
void ha_collector_read_stats(struct ha_collector *c, struct ha_collector_stats *out);

#endif
