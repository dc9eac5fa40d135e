/* book.h -- the attacher's bookkeeping: buckets interned by their program
 * counters and kind, per-bucket allocation/free/live estimates, and the
 * set of sampled blocks still live.  Owned by one thread (the collector).
 *
 * A bucket is a callstack and a kind of memory (heap, mmap, rss, swap):
 * the same pcs as heap and as mmap are two buckets, with two local ids
 * (1, 2, ...), which the writer maps to one database stack; each row the
 * book gives carries its kind.
 *
 * Estimates are unbiased: a sample of size S taken at mean interval I
 * stands for 1 / (1 - exp(-S/I)) allocations of that size (Go's
 * scaleHeapSample); the free of a sampled block removes what its sample
 * added. */
#ifndef HA_BOOK_H
#define HA_BOOK_H

#include <stddef.h>
#include <stdint.h>
#include "db_write.h"

struct ha_book;

struct ha_book *ha_book_new(void);
void ha_book_free(struct ha_book *b);

/* Weight of one sample of size bytes at mean interval (1 = every call). */
double ha_sample_weight(uint64_t size, uint64_t interval);

/* Intern a bucket: a callstack of n pcs (leaf first) and a kind of memory
 * (enum ha_mem_kind); *is_new tells whether it was seen for the first time
 * (the same pcs with another kind is another bucket with its own id, whose
 * frames the writer interns to the same database stack).  Returns its id
 * (>= 1), 0 when out of memory. */
uint32_t ha_book_bucket(struct ha_book *b, const uint64_t *pcs, int n, int kind, int *is_new);

/* The id of the bucket of those pcs and kind, 0 if there is none (nothing
 * is added). */
uint32_t ha_book_find(const struct ha_book *b, const uint64_t *pcs, int n, int kind);

/* Optional: start loading bucket (0: none) and the live-set
 * slot of addr (0: none) that ha_book_alloc/ha_book_release will touch. */
void ha_book_prefetch(const struct ha_book *b, uint32_t bucket, uint64_t addr);

/* A sampled allocation of size bytes at addr with the given weight. */
void ha_book_alloc(struct ha_book *b, uint32_t bucket, uint64_t addr, uint64_t size, double weight);
/* addr was freed: if it was a live sampled block, move its estimate from
 * live to freed.  Returns 1 if it was, 0 otherwise. */
int ha_book_release(struct ha_book *b, uint64_t addr);

/* Resident memory (kinds rss and swap, rss_pages.c): bytes made resident
 * in bucket (alloc and live grow), or that left it (free grows, live
 * falls); counts are 4 KiB pages. */
void ha_book_gain(struct ha_book *b, uint32_t bucket, double bytes);
void ha_book_lose(struct ha_book *b, uint32_t bucket, double bytes);
/* The pcs and kind of bucket (NULL if there is none). */
const uint64_t *ha_book_pcs(const struct ha_book *b, uint32_t bucket, int *n, int *kind);

/* Every bucket: ids 1..ha_book_count(b), each one's cumulative values
 * (NULL for an id out of range). */
size_t ha_book_count(const struct ha_book *b);
const struct ha_db_bucket *ha_book_value(const struct ha_book *b, uint32_t id);

/* The buckets changed since the previous call, with their cumulative
 * values (stack_id holds the bucket's local id).  *rows is malloc'ed; the
 * caller owns it.  Returns the count. */
size_t ha_book_take_changed(struct ha_book *b, struct ha_db_bucket **rows);

/* The estimated live bytes of every bucket of one kind (enum ha_mem_kind),
 * or of heap and mmap together (-1: what the program allocated; rss and
 * swap count the same memory again): kept as they are booked, O(1). */
double ha_book_live_bytes(const struct ha_book *b, int kind);
/* The session's live totals of a snapshot (db_write.h: has_live,
 * live_bytes of each kind, live_count of heap and mmap): O(buckets). */
void ha_book_totals(const struct ha_book *b, struct ha_db_snapshot *s);

/* The peak copy: a copy of every bucket's values at one moment, the
 * session's highest live total so far (src/record/peak.c decides when).
 * ha_book_keep_peak makes the copy now; it costs one copy per bucket
 * changed since the previous one (ha_book_peak_dirty of them).
 * ha_book_take_peak gives the rows of a snapshot that holds the copy: every
 * bucket that existed at that moment with its values then, and a zero row
 * for every bucket that came later but is already in the database (so that
 * it does not carry its later value back to the peak).  Every bucket it
 * gives a row is marked changed: the next ha_book_take_changed writes its
 * current value again, so that a reader that leaves the peak snapshot out
 * sees every bucket as it would without it.  *rows is malloc'ed (NULL and
 * 0 when no copy was made or out of memory). */
void ha_book_keep_peak(struct ha_book *b);
size_t ha_book_peak_dirty(const struct ha_book *b);
size_t ha_book_take_peak(struct ha_book *b, struct ha_db_bucket **rows);

/* Every live sampled block: its address, size, sample weight, bucket and
 * the bucket's kind (the reachability scan's input). */
void ha_book_each_block(const struct ha_book *b,
                        void (*each)(void *ctx, uint64_t addr, uint64_t size, double weight,
                                     uint32_t bucket, int kind),
                        void *ctx);

#endif
