/* fuzz_ring -- libFuzzer harness for the consumer side of the ring
 * protocol, src/proto/ha_ring.h (ha_ring_peek, ha_ring_find_next,
 * ha_ring_covers, ha_ring_consume), on a ring image the fuzzer writes: the
 * target can write anything anywhere in its ring at any time.
 *
 * Input: cons (8 bytes), prod - cons (8 bytes), then the data area (the
 * rest zero).  The data area is DATA_SIZE bytes, laid out as ha_ring_map
 * lays it out (mapped twice, back to back, here a copy), in a heap block of
 * exactly that size so that AddressSanitizer sees any read outside it.  An
 * aligned 8-byte word equal to MARK is replaced by the stamp of the
 * position the consumer would meet it at (a stamp is a 64-bit hash: the
 * fuzzer could not guess one), so that inputs can hold published records.
 *
 * The consumer loop is the collector's framing (ha_reader_frame and
 * ha_reader_skip_to_next in src/record/ring_read.c) reduced to the ring calls: peek
 * at pos; on a record, check prod covers it, read it all, consume it; on
 * nothing, go on from ha_ring_find_next; stop at a corrupt record.
 * Asserted, besides what the sanitizers check:
 *  - a record peek returns is at data + (pos & (size - 1)), its length a
 *    multiple of 8 in [16, size / 2], and it lies inside the two copies of
 *    the data area;
 *  - find_next returns 0 or a later position below prod whose stamp is
 *    its own and whose record prod covers;
 *  - cons never passes prod, nor moves more than the data size in all;
 *  - the loop ends within size / 8 steps.
 * What the collector then does with a record (take_record's checks of the
 * sample and free records, static in ring_read.c) is not reached here.
 *
 * fuzz-sources:
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "ha_ring.h"

#define DATA_SIZE 4096u
#define MARK 0x21504d4154534148ull /* "HASTAMP!" */

static void check_record(const char *data, uint64_t pos, const struct ha_rec_hdr *r)
{
	uint32_t len = r->len;
	FUZZ_CHECK((const char *)r == data + (pos & (DATA_SIZE - 1)), "record not at its position");
	FUZZ_CHECK(len % HA_RING_ALIGN == 0 && len >= sizeof *r && len <= DATA_SIZE / 2,
	           "peek passed a length of %u", len);
	FUZZ_CHECK((const char *)r + len <= data + 2 * DATA_SIZE, "record past the mapping");
}

static void consume_all(struct ha_ring_hdr *h, uint64_t start, uint64_t prod)
{
	const char *data = ha_ring_data(h);
	uint64_t pos = start, known = start;
	unsigned steps = 0;
	volatile unsigned char sum = 0;

	for (;; steps++) {
		FUZZ_CHECK(steps <= DATA_SIZE / HA_RING_ALIGN, "no end after %u steps", steps);
		int corrupt;
		const struct ha_rec_hdr *r = ha_ring_peek(h, DATA_SIZE, pos, &corrupt);
		if (corrupt)
			break;
		if (!r) {
			uint64_t next = ha_ring_find_next(h, DATA_SIZE, pos, prod);
			if (!next || next - start > DATA_SIZE)
				break;
			FUZZ_CHECK(next - pos > 0 && next - pos < prod - pos, "find_next went back");
			const struct ha_rec_hdr *n = (const struct ha_rec_hdr *)(data + (next & (DATA_SIZE - 1)));
			FUZZ_CHECK(n->stamp == ha_ring_stamp(next), "find_next: not a stamp of its own");
			FUZZ_CHECK(prod - next >= n->len, "find_next: a record prod does not cover");
			pos = next;
			continue;
		}
		check_record(data, pos, r);
		uint32_t len = r->len;
		if (pos + len - start > DATA_SIZE ||
		    !ha_ring_covers(h, DATA_SIZE, pos, pos + len, &known))
			break;
		for (uint32_t i = 0; i < len; i++)
			sum += ((const unsigned char *)r)[i];
		pos = ha_ring_consume(h, pos, len);
		FUZZ_CHECK(pos - start <= prod - start, "cons passed prod");
		FUZZ_CHECK(pos - start <= DATA_SIZE, "cons moved more than the ring");
	}
	(void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	uint64_t start = 0, delta = 0;
	if (n < 16)
		return 0;
	memcpy(&start, d, 8);
	memcpy(&delta, d + 8, 8);
	d += 16;
	n -= 16;

	struct ha_ring_hdr *h = aligned_alloc(64, HA_RING_HDR_SIZE + 2 * DATA_SIZE);
	if (!h)
		abort();
	memset(h, 0, HA_RING_HDR_SIZE + 2 * DATA_SIZE);
	h->magic = HA_RING_MAGIC;
	h->version = HA_PROTO_VERSION;
	h->data_size = DATA_SIZE;
	h->prod = start + delta;
	h->cons = start;
	h->producers_waiting = 0; /* ha_ring_consume makes no futex call */
	char *data = ha_ring_data(h);
	memcpy(data, d, n < DATA_SIZE ? n : DATA_SIZE);
	for (uint64_t o = 0; o < DATA_SIZE; o += 8) {
		uint64_t w;
		memcpy(&w, data + o, 8);
		if (w == MARK) {
			w = ha_ring_stamp(start + ((o - start) & (DATA_SIZE - 1)));
			memcpy(data + o, &w, 8);
		}
	}
	memcpy(data + DATA_SIZE, data, DATA_SIZE);
	consume_all(h, start, start + delta);
	free(h);
	return 0;
}
