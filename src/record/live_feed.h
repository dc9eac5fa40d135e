/* live_feed.h -- what the collector and the writer send to a live view
 * (heapattach --live, and the one-line status): once a second the value of
 * every bucket, and each new callstack's frames as text once the writer has
 * symbolized it.  Messages on the queue the caller gives them as to_live;
 * ownership moves with each message (the receiver frees it with free()).
 *
 * Bucket ids are the collector's local ids: one per (pcs, kind), so the
 * text of a stack comes once per id, and every frame message carries every
 * bucket (they are cumulative values: a lost message loses nothing). */
#ifndef HA_LIVE_FEED_H
#define HA_LIVE_FEED_H

#include <stddef.h>
#include <stdint.h>
#include "db.h"
#include "mem_terms.h"
#include "queue.h"

enum { HA_LMSG_FRAME = 1, HA_LMSG_STACK = 2 };

struct ha_live_bucket {
	uint32_t id;                /* local id (>= 1) */
	int kind;                   /* enum ha_mem_kind */
	double live_bytes, live_count;
	double alloc_bytes, alloc_count;
};

/* The state of the session at one moment (the collector's, after a
 * drain). */
struct ha_lmsg_frame {
	struct ha_qmsg q;
	double time;                /* unix time */
	uint64_t samples, drops;    /* cumulative */
	uint64_t interval;          /* sampling interval in effect */
	uint64_t rss_bytes;         /* VmRSS of the target */
	int rss_last;               /* it could not be read now (the target is
	                             * gone or exiting): rss_bytes and
	                             * rss_anon_bytes are the last figures read,
	                             * at rss_time (0: none was) */
	double rss_time;
	uint64_t rss_anon_bytes;    /* RssAnon (0 unless --rss) */
	uint64_t rss_samples;       /* page-fault samples (--rss) */
	int rss_on;                 /* the session samples page faults */
	double kind_bytes[HA_KIND_COUNT]; /* live bytes per kind */
	double mem_rss_anon;        /* the last snapshot's breakdown of RssAnon */
	double mem_terms[HA_MT_COUNT]; /* (mem_feed.h; mem_rss_anon 0: none yet) */
	size_t n;
	struct ha_live_bucket rows[];
};

/* One frame of a stack as text (strings: never NULL, "" when unknown). */
struct ha_live_text {
	const char *function, *file, *module;
	int line;
	int inlined;
};

/* A new callstack, symbolized: frames leaf first; the strings live in the
 * same block, after the frames. */
struct ha_lmsg_stack {
	struct ha_qmsg q;
	uint32_t id;
	int n;
	struct ha_live_text f[];
};

#endif
