/* rec_check.h -- the collector's checks of one record it framed in the
 * ring (collector.c frames, this checks what is inside): on their own so
 * that tests/fuzz/fuzz_records.c reaches exactly the code the collector
 * runs. */
#ifndef HA_REC_CHECK_H
#define HA_REC_CHECK_H

#include <stdint.h>
#include "ha_proto.h"

/* h: a record of len bytes that framing accepted (len a multiple of
 * HA_RING_ALIGN, at least a header, inside the ring).  The target may
 * rewrite it at any time: every field used is read once and copied out,
 * and only the copies count.  Sets *type (the header's, as read).  Returns
 * 1 if the record is usable:
 *  - HA_REC_SAMPLE: *s is the fixed part (len >= sizeof *s), its stack_len
 *    fits in the len - sizeof *s bytes that follow, its kind is
 *    HA_REC_KIND_HEAP or HA_REC_KIND_MMAP; *stack = the bytes after it
 *    (with HA_REC_F_SREF: stack_len is 0 and a struct ha_rec_sref follows,
 *    *stack points at it);
 *  - HA_REC_FREE: len >= sizeof(struct ha_rec_free); *addr the block;
 *  - HA_REC_MODULES, HA_REC_PAD: nothing more to check.
 * 0 for anything else (an unknown type, a record too short for its type, a
 * stack longer than the record, an unknown kind): the caller counts it as
 * corrupt and goes on with the next record.  *s, *stack and *addr are
 * only meaningful for their types. */
int ha_rec_take(const struct ha_rec_hdr *h, uint32_t len, uint16_t *type,
                struct ha_rec_sample *s, const uint8_t **stack, uint64_t *addr);

/* The Python section of a sample record s of len bytes (h, as taken by
 * ha_rec_take) if it has one (HA_REC_F_PY): its frames in *frames (in the
 * ring: copy each before use), their count and the section's flags.  The
 * section ends the record (ha_py.h) and must fit after the stack copy or
 * the reference.  Returns 1 with a section, 0 without one or when it does
 * not fit (counted by the caller as a record without Python frames). */
int ha_rec_py_take(const struct ha_rec_hdr *h, uint32_t len, const struct ha_rec_sample *s,
                   const uint8_t **frames, uint32_t *n, uint32_t *flags);

#endif
