/*
 * sref.h -- stack references, the attacher's side (the protocol is struct
 * ha_sref in ha_proto.h): which of the unwinder's whole-stack cache
 * entries are published in the ring's table for the agent, and the pcs of
 * the samples that name one instead of carrying their stack.
 *
 * Owned by the ring reader (collector.c), like the unwinder it reads the
 * entries of.  The table is in the target's memory: written here, never
 * read back (what is published is remembered here, with its own pcs), so
 * a target that scribbles over it can only make its own samples copy
 * their stacks or name stacks they do not have -- a lie about itself,
 * like any forged record.  What a slot shows is remembered with the slot
 * for as long as it shows it, and once replaced for the next 4,096
 * replacements (4 s at least): a sample naming an older one (or anything never
 * published) is stale and counted as a failed unwind.
 */
#ifndef HA_RECORD_SREF_H
#define HA_RECORD_SREF_H

#include <stdint.h>

#include "ha_proto.h"
#include "unwind.h"

struct ha_srefs;

struct ha_srefs_stats {
	uint64_t published;      /* entries written to the table */
	uint64_t hits;           /* samples resolved from a reference */
	uint64_t stale;          /* references to nothing published (failed) */
	uint64_t frames, fp_frames; /* pcs of the hits, of which found by frame pointer */
};

/* table: the ring's HA_SREF_SLOTS entries (zero = empty).  NULL on no
 * memory (the session then goes without references). */
struct ha_srefs *ha_srefs_new(struct ha_sref *table);
void ha_srefs_free(struct ha_srefs *r);

/* A sample with its stack copy of len bytes was unwound by the cache entry
 * ref of u (ha_unwind_ref) with at most max pcs: publish that entry if one
 * of the slots of its length is free, or, once enough copies of that
 * length came, in place of the least used (at most 1,000 such replacements
 * a second, counted on the clock now_ms).  Call only while the unwinder's
 * maps are those of the newest modules record. */
void ha_srefs_offer(struct ha_srefs *r, struct ha_unwinder *u, uint64_t ref, uint64_t len,
                    int max, double now_ms);

/* The pcs (at most max) of the stack a sample names, captured at rip; 0 if
 * it names nothing published (stale, or forged). */
int ha_srefs_resolve(struct ha_srefs *r, const struct ha_rec_sref *ref, uint64_t rip,
                     uint64_t *pcs, int max);

/* Two words kept with publication seq of slot for the collector (the
 * callstack ids of its pcs, as ha_unwind_user; zero when published), or
 * NULL once that publication is forgotten.  Ask again for each use. */
uint32_t *ha_srefs_ids(struct ha_srefs *r, uint32_t slot, uint32_t seq);

/* The modules changed: a modules record of generation gen was read, or
 * the ring header shows gen (the record may have been dropped).  Entries
 * published from now on hold for gen, the table is emptied.  Returns 1 if
 * gen is newer than the one in effect (else nothing changes). */
int ha_srefs_modules(struct ha_srefs *r, uint16_t gen);

void ha_srefs_stats(const struct ha_srefs *r, struct ha_srefs_stats *st);

#endif /* HA_RECORD_SREF_H */
