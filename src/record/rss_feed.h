/* rss_feed.h -- heapattach --rss on the pipeline's side: the page-fault
 * samples (src/rss/pf_events.h) unwound like the agent's samples and
 * interned into buckets of kind rss, their pages handed to the attributed
 * pages (src/rss/rss_pages.h), which book residency changes back into the
 * buckets through the callbacks given here (and swap as kind swap).
 *
 * Owned by the collector thread; it owns the perf events once opened. */
#ifndef HA_RSS_FEED_H
#define HA_RSS_FEED_H

#include <stdint.h>
#include <sys/types.h>
#include "collector.h"
#include "intern.h"

struct ha_pf;
struct ha_rss_pages;
struct ha_unwinder;

struct ha_rss_feed {
	struct ha_pf *pf;             /* the page-fault events (NULL: no --rss) */
	uint64_t period;              /* their sampling period, faults */
	struct ha_rss_pages *pages;   /* the attributed pages (NULL: none) */
	struct ha_unwinder *unw;      /* the collector's (NULL: none) */
	struct ha_intern *in;         /* where buckets are interned */
	uint64_t pf_bad;              /* records that did not parse, counted so far */
	uint64_t pcs[HA_MAX_PCS];     /* pcs of the sample in hand */
};

/* Take pf (may be NULL: then every call does nothing) and start the
 * attributed pages. */
void ha_rss_feed_open(struct ha_rss_feed *f, pid_t pid, struct ha_pf *pf, uint64_t period,
                      struct ha_unwinder *unw, struct ha_intern *in);
void ha_rss_feed_close(struct ha_rss_feed *f);

/* Book the page-fault samples waiting in the perf rings.  An unwind that
 * fails books the faulting pc alone. */
void ha_rss_feed_drain(struct ha_rss_feed *f, struct ha_collector_stats *st);

/* The residency of the attributed pages, at a snapshot. */
void ha_rss_feed_check(struct ha_rss_feed *f, struct ha_collector_stats *st);

#endif
