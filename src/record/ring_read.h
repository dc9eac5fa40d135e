/* ring_read.h -- reading one of the session's rings: framing published
 * records into a batch, getting past what was abandoned or written over,
 * handing the space back.
 *
 * Everything read from the ring comes from the target and is untrusted:
 * each record's length, type and stack length are checked against what the
 * ring and the record can hold before anything is used, and what is
 * checked is copied out first (struct ha_rec_item); only the copy is used.
 * Consuming is batched: one store of cons for many records (cons is the
 * line every producer reads).  The counters go to the collector's stats
 * (the reader is the collector's; it calls nothing of it). */
#ifndef HA_RING_READ_H
#define HA_RING_READ_H

#include <stdint.h>
#include "collector.h"
#include "ha_proto.h"
#include "ring_heal.h"

#define HA_BATCH 64                /* records framed, then unwound, then booked */
#define HA_ABANDONED_MS 1000       /* a record unpublished this long, with later ones published, is skipped */
/* ...and once the program has written over its ring: a stamp it wrote
 * over reads as a record never published, and waiting a second for each
 * (small records, stack references, put many in reach of a stray write)
 * stalled a --block target for a minute.  A record it costs is counted. */
#define HA_ABANDONED_HOSTILE_MS 100

/* One record of a batch, as copied out and checked. */
struct ha_rec_item {
	uint16_t type;
	int ok;                       /* framed and checked: usable */
	int n;                        /* samples: pcs unwound (0: failure) */
	uint64_t ref;                 /* samples: the unwinder's cache entry (ha_unwind_ref) */
	uint32_t bucket;              /* samples: bucket id (0: none) */
	const uint8_t *stack;         /* samples: the stack copy, in the ring (with
	                               * HA_REC_F_SREF: the struct ha_rec_sref) */
	uint32_t sref_slot, sref_seq; /* samples by reference: the publication (sref.h) */
	uint16_t flags;               /* the record header's (modules: the generation) */
	uint64_t addr;                /* frees: the block */
	struct ha_rec_sample s;       /* samples: the fixed part */
	const uint8_t *py;            /* samples: Python frames (in the ring), or NULL */
	uint32_t py_n, py_flags;      /* ...their count and flags (rec_check.h) */
};

/* One ring's reading (the session has c->rings of them, each its own
 * ring of ha_ring.h). */
struct ha_ring_reader {
	struct ha_ring_hdr *h;
	uint64_t data_size;           /* its data area's */
	uint64_t pos;                 /* consumed up to here (what cons is set to) */
	uint64_t rpos;                /* read up to here; [pos, rpos) awaits consume */
	uint64_t pf, pf_limit;        /* ring prefetched up to pf, never past pf_limit
	                               * (prod as last loaded: once per batch, or
	                               * when a record ends beyond it) */
	struct ha_ring_heal heal;     /* what the target wrote over its ring (ring_heal.h) */
	uint64_t stuck_pos;           /* rpos at which framing last found nothing published */
	double stuck_since;           /* ...since then (ms); stuck_pos != rpos: not stuck */
};

/* Start reading ring h (of data_size bytes) where its consumer left it. */
void ha_reader_init(struct ha_ring_reader *r, struct ha_ring_hdr *h, uint64_t data_size);

/* Before a drain: the positions the target may have changed, put back
 * (ring_heal.h; interval is the consumer's). */
void ha_reader_heal(struct ha_ring_reader *r, uint64_t interval);

/* Read up to max published records from rpos on into batch, without
 * consuming them.  A modules record ends the batch: the samples after it
 * must be unwound with the new maps.  Returns how many were read. */
int ha_reader_frame(struct ha_ring_reader *r, struct ha_rec_item *batch, int max,
                    struct ha_collector_stats *st);

/* Go on from the next published record after rpos, if there is one: the
 * record at rpos was reserved and will never be published.  Returns 1 if
 * rpos moved. */
int ha_reader_skip_to_next(struct ha_ring_reader *r, struct ha_collector_stats *st);

/* Give what was read back to the producers. */
void ha_reader_consume(struct ha_ring_reader *r);

/* Unconsumed bytes (prod as the target wrote it: a hint). */
uint64_t ha_reader_fill(const struct ha_ring_reader *r);

/* A corrupt record waits at pos: ha_rings_wait would return at once. */
int ha_reader_stuck_on_corrupt(const struct ha_ring_reader *r);

#endif
