/* rec_check.c -- the checks of one framed ring record (rec_check.h).
 * What the target wrote is untrusted: each record's type, length and
 * stack length are checked against what the record holds before anything
 * is used, and only copies are checked and used. */
#include "rec_check.h"

#include <string.h>

int ha_rec_take(const struct ha_rec_hdr *h, uint32_t len, uint16_t *type,
                struct ha_rec_sample *s, const uint8_t **stack, uint64_t *addr)
{
	*type = __atomic_load_n(&h->type, __ATOMIC_RELAXED);
	switch (*type) {
	case HA_REC_SAMPLE:
		if (len < sizeof *s)
			return 0;
		memcpy(s, h, sizeof *s);
		if (s->h.flags & HA_REC_F_SREF) {
			/* no copy: the reference that follows names the stack */
			if (s->stack_len || len - sizeof *s < sizeof(struct ha_rec_sref) ||
			    (s->kind != HA_REC_KIND_HEAP && s->kind != HA_REC_KIND_MMAP))
				return 0;
			*stack = (const uint8_t *)h + sizeof *s;
			return 1;
		}
		if (s->stack_len > len - sizeof *s ||
		    (s->kind != HA_REC_KIND_HEAP && s->kind != HA_REC_KIND_MMAP))
			return 0;
		*stack = (const uint8_t *)h + sizeof *s;
		return 1;
	case HA_REC_FREE:
		if (len < sizeof(struct ha_rec_free))
			return 0;
		*addr = __atomic_load_n(&((const struct ha_rec_free *)h)->addr, __ATOMIC_RELAXED);
		return 1;
	case HA_REC_MODULES:
	case HA_REC_PAD:
		return 1;
	}
	return 0;
}

int ha_rec_py_take(const struct ha_rec_hdr *h, uint32_t len, const struct ha_rec_sample *s,
                   const uint8_t **frames, uint32_t *n, uint32_t *flags)
{
	if (!(s->h.flags & HA_REC_F_PY))
		return 0;
	uint64_t used = sizeof *s + ((s->h.flags & HA_REC_F_SREF) ? sizeof(struct ha_rec_sref)
	                                                          : (uint64_t)s->stack_len);
	struct ha_rec_py t;
	if (used + sizeof t > len)
		return 0;
	memcpy(&t, (const uint8_t *)h + len - sizeof t, sizeof t);
	if (t.n > HA_PY_DEPTH_MAX ||
	    used + sizeof t + (uint64_t)t.n * sizeof(struct ha_py_frame) > len)
		return 0;
	*n = t.n;
	*flags = t.flags;
	*frames = (const uint8_t *)h + len - sizeof t - (size_t)t.n * sizeof(struct ha_py_frame);
	return 1;
}
