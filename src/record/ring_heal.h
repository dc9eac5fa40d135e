/* ring_heal.h -- the consumer's answer to a target that writes over its
 * own ring: positions put back where the protocol needs them, a corrupt
 * record counted once and got past, never a consumer that stops for good.
 *
 * The ring lives in the target's memory, and the target may write any byte
 * of it (a stray pointer, or on purpose: tests/t_hostile_ring.sh).  The
 * consumer already trusts nothing it reads there (ha_ring.h, collector.c);
 * what it must add is a way on:
 *   - cons is the consumer's word, and so is the interval; one the target
 *     changed is stored again (producers that believe the ring full, or
 *     spin on a cons ahead of prod, go on);
 *   - prod misaligned is rounded up (a CAS: producers reserve from there),
 *     and a prod outside the window [pos, pos + data_size] means the
 *     producers write where the consumer cannot follow: it goes on from
 *     prod, and what lay between is lost;
 *   - a record that cannot be framed (a length that is not one, beyond
 *     prod) is counted once; the consumer goes on from the next published
 *     record, at once if there is one, else after as long as an abandoned
 *     record gets (HA_ABANDONED_MS, ring_read.h), from prod.
 * Each repair is counted: the session's summary says what was lost. */
#ifndef HA_RING_HEAL_H
#define HA_RING_HEAL_H

#include <stdint.h>
#include "ha_proto.h"

struct ha_ring_heal {
	uint64_t corrupt;       /* records that could not be framed, counted once each */
	uint64_t repairs;       /* positions put back (cons stored, prod rounded or followed) */
	uint64_t skipped;       /* bytes given up on (after a corrupt record, or jumped over) */
	uint64_t corrupt_pos;   /* where the last corrupt record was found... */
	double corrupt_since;   /* ...and when (ms); valid when have_corrupt */
	int have_corrupt;
};

/* Before a drain: check prod and cons against pos (consumed up to there)
 * and repair them, and the interval word against the consumer's (written
 * again if it differs; 0, the configured one, is not counted as a
 * repair).  May move *pos and *rpos (== *pos then) forward to prod.
 * Returns 1 if the positions moved. */
int ha_ring_heal_positions(struct ha_ring_heal *st, struct ha_ring_hdr *h, uint64_t data_size,
                           uint64_t interval, uint64_t *pos, uint64_t *rpos);

/* Framing found a corrupt record at *rpos (pos: consumed up to there; now:
 * ms).  Counts it (once per position) and moves *rpos past it if it can:
 * to the next published record, or after wait_ms to prod.  Returns 1 if
 * *rpos moved. */
int ha_ring_heal_corrupt(struct ha_ring_heal *st, struct ha_ring_hdr *h, uint64_t data_size,
                         uint64_t pos, uint64_t *rpos, double now, double wait_ms);

#endif
