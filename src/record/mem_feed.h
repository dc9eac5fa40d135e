/* mem_feed.h -- the memory breakdown of a snapshot (issue 41): RssAnon's
 * terms and glibc's arenas read (src/rss/mem_view.h) with the book's live
 * sampled blocks, as the database row the writer stores
 * (struct ha_db_memory).  On the collector thread. */
#ifndef HA_MEM_FEED_H
#define HA_MEM_FEED_H

#include <stdint.h>
#include <sys/types.h>

#include "book.h"
#include "collector.h"
#include "db_write.h"

/* Read it now: malloc'ed, NULL when the target cannot be read.  Another
 * allocator's figures are asked first through c->alloc_ask, if set.  st
 * (may be NULL) counts it: mem_views, mem_view_ns, mem_walk_ns,
 * mem_arenas, mem_alloc_*. */
struct ha_db_memory *ha_mem_feed_read(const struct ha_collector *c, const struct ha_book *book,
                                      struct ha_collector_stats *st);
void ha_mem_feed_free(struct ha_db_memory *m);

/* The figures a live view shows of m (NULL: keeps what is there). */
void ha_mem_feed_keep(const struct ha_db_memory *m, double *rss_anon, double *terms);
void ha_mem_feed_keep_copy(double rss_anon, const double *terms, double *to_rss_anon,
                           double *to_terms);

#endif
