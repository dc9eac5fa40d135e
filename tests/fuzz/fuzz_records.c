/* fuzz_records -- libFuzzer harness for the collector's checks of the
 * records it frames in the ring, ha_rec_take (src/record/rec_check.c, what
 * take_record in ring_read.c runs), and for what the collector then books
 * from an accepted sample or free (ha_sample_weight, ha_book_alloc and
 * ha_book_release, src/record/book.c): the target writes every byte of
 * these records.
 *
 * The input is a run of records as they lie in the ring, each framed as
 * the collector frames one (its header's len: a multiple of 8, at least a
 * header, within what is left; the run stops at the first that is not),
 * each handed over in a heap block of exactly its length so that
 * AddressSanitizer sees any read past it.  Asserted, besides what the
 * sanitizers check:
 *  - the type given back is the header's; a sample is accepted only if it
 *    holds its fixed part, its kind is heap or mmap and its stack_len fits
 *    in the record (with HA_REC_F_SREF: stack_len is 0 and a stack
 *    reference follows), and then the copy is the record's bytes and the
 *    stack pointer is right after the fixed part (every stack byte, or the
 *    reference, is read); a
 *    free only if it holds a struct ha_rec_free, with its addr; modules
 *    and pad records always; any other type never;
 *  - an accepted sample's weight is finite and at least 1, and so is the
 *    weight times its size;
 *  - after booking every accepted sample and free (one bucket per pc and
 *    kind, as the collector's intern does), every bucket's values are
 *    finite, its live bytes and count never negative, and the live total
 *    of each kind finite and not negative.
 *
 * fuzz-sources: src/record/rec_check.c src/record/book.c src/common/hashtab.c src/common/util.c
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "book.h"
#include "rec_check.h"

#include <math.h>

/* The record in its own block of exactly len bytes; checked, booked. */
static void one_record(struct ha_book *b, const uint8_t *d, uint32_t len)
{
	uint8_t *rec = malloc(len);
	if (!rec)
		abort();
	memcpy(rec, d, len);
	const struct ha_rec_hdr *h = (const struct ha_rec_hdr *)rec;
	uint16_t type = 0xffff;
	struct ha_rec_sample s;
	const uint8_t *stack = NULL;
	uint64_t addr = 0;
	memset(&s, 0xa5, sizeof s);
	int ok = ha_rec_take(h, len, &type, &s, &stack, &addr);

	FUZZ_CHECK(ok == 0 || ok == 1, "result %d", ok);
	FUZZ_CHECK(type == h->type, "type %u, the record says %u", type, h->type);
	switch (type) {
	case HA_REC_SAMPLE: {
		struct ha_rec_sample want;
		int fits = len >= sizeof want;
		if (fits)
			memcpy(&want, rec, sizeof want);
		/* With HA_REC_F_SREF no copy: stack_len 0, a struct ha_rec_sref
		 * after the fixed part. */
		int by_ref = fits && (want.h.flags & HA_REC_F_SREF);
		int good = fits &&
		           (by_ref ? want.stack_len == 0 && len - sizeof want >= sizeof(struct ha_rec_sref)
		                   : want.stack_len <= len - sizeof want) &&
		           (want.kind == HA_REC_KIND_HEAP || want.kind == HA_REC_KIND_MMAP);
		FUZZ_CHECK(ok == good, "sample of %u bytes (stack_len %u, kind %u): ok %d", len,
		           fits ? want.stack_len : 0, fits ? want.kind : 0, ok);
		if (!ok)
			break;
		FUZZ_CHECK(memcmp(&s, &want, sizeof s) == 0, "the copy is not the record");
		FUZZ_CHECK(stack == rec + sizeof s, "stack not after the fixed part");
		volatile unsigned sum = 0;
		for (uint32_t i = 0; i < (by_ref ? sizeof(struct ha_rec_sref) : s.stack_len); i++)
			sum += stack[i];
		(void)sum;
		double w = ha_sample_weight(s.size, s.interval);
		FUZZ_CHECK(isfinite(w) && w >= 1, "weight %g (size %llu, interval %llu)", w,
		           (unsigned long long)s.size, (unsigned long long)s.interval);
		FUZZ_CHECK(isfinite(w * (double)s.size), "weighted bytes %g", w * (double)s.size);
		int is_new;
		int kind = s.kind == HA_REC_KIND_MMAP ? HA_KIND_MMAP : HA_KIND_HEAP;
		uint32_t id = ha_book_bucket(b, &s.regs.rip, 1, kind, &is_new);
		FUZZ_CHECK(id != 0, "no bucket");
		ha_book_alloc(b, id, s.addr, s.size, w);
		break;
	}
	case HA_REC_FREE: {
		int good = len >= sizeof(struct ha_rec_free);
		FUZZ_CHECK(ok == good, "free record of %u bytes: ok %d", len, ok);
		if (!ok)
			break;
		uint64_t want;
		memcpy(&want, rec + offsetof(struct ha_rec_free, addr), sizeof want);
		FUZZ_CHECK(addr == want, "free of %#llx, the record says %#llx",
		           (unsigned long long)addr, (unsigned long long)want);
		ha_book_release(b, addr);
		break;
	}
	case HA_REC_MODULES:
	case HA_REC_PAD:
		FUZZ_CHECK(ok == 1, "type %u refused", type);
		break;
	default:
		FUZZ_CHECK(ok == 0, "unknown type %u accepted", type);
	}
	free(rec);
}

static void check_book(const struct ha_book *b)
{
	for (size_t i = 1; i <= ha_book_count(b); i++) {
		const struct ha_db_bucket *v = ha_book_value(b, (uint32_t)i);
		FUZZ_CHECK(v != NULL, "bucket %zu missing", i);
		FUZZ_CHECK(isfinite(v->alloc_count) && isfinite(v->alloc_bytes) &&
		           isfinite(v->free_count) && isfinite(v->free_bytes) &&
		           isfinite(v->live_count) && isfinite(v->live_bytes),
		           "bucket %zu: a value is not finite", i);
		FUZZ_CHECK(v->live_count >= 0 && v->live_bytes >= 0,
		           "bucket %zu: live %g bytes, %g objects", i, v->live_bytes, v->live_count);
	}
	for (int k = -1; k < HA_KIND_COUNT; k++) {
		double t = ha_book_live_bytes(b, k);
		FUZZ_CHECK(isfinite(t) && t >= 0, "live total of kind %d: %g", k, t);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct ha_book *b = ha_book_new();
	if (!b)
		abort();
	for (size_t o = 0; n - o >= sizeof(struct ha_rec_hdr);) {
		struct ha_rec_hdr h;
		memcpy(&h, d + o, sizeof h);
		if (h.len % HA_RING_ALIGN || h.len < sizeof h || h.len > n - o)
			break; /* framing stops here: corrupt */
		one_record(b, d + o, h.len);
		o += h.len;
	}
	check_book(b);
	ha_book_free(b);
	return 0;
}
