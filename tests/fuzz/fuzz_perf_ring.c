/* fuzz_perf_ring -- libFuzzer harness for the framing of perf's own ring
 * in heapattach --rss, ha_pf_ring_take (src/rss/pf_events.c, what
 * ha_pf_next runs on each CPU's ring), then ha_pf_parse_record on every
 * record it gives (fuzz_pf fuzzes that parser alone).  The kernel writes
 * the ring and data_head; here both may lie: records that wrap, sizes 0,
 * huge or unaligned, head behind tail or far ahead of it, an unaligned
 * tail.
 *
 * Input: the ring's size as a power of two (1 byte: 64 B to 64 KiB),
 * data_head (8 bytes), data_tail (8 bytes), then the data area (the rest
 * zero), in a heap block of exactly the ring's size so that
 * AddressSanitizer sees any read outside it.  The records are taken until
 * the ring is empty or found untrustworthy.  Asserted, besides what the
 * sanitizers check:
 *  - an empty ring (head == tail) gives 0 and leaves tail alone;
 *  - a record's size is its header's, a multiple of 8, at least a header,
 *    at most head - tail and the ring; its copy is the ring's bytes from
 *    tail on, joined across the end of the ring; tail moves by its size;
 *  - an untrustworthy ring gives (uint64_t)-1 with tail set to head;
 *  - tail never passes head; the loop ends within size / 8 + 1 records;
 *  - the parser's result is one of HA_PF_REC_*.
 *
 * fuzz-sources: src/rss/pf_events.c src/common/util.c
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>

#include "fuzz.h"
#include "pf_events.h"

#define REC_MAX 65536 /* pf_events.c's RECORD_MAX: what ha_pf_open gives */

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n < 17)
		return 0;
	uint64_t size = 64ull << (d[0] % 11), head, tail;
	memcpy(&head, d + 1, 8);
	memcpy(&tail, d + 9, 8);
	d += 17;
	n -= 17;

	struct perf_event_mmap_page *meta = calloc(1, sizeof *meta);
	char *data = calloc(1, size), *rec = malloc(REC_MAX);
	if (!meta || !data || !rec)
		abort();
	memcpy(data, d, n < size ? n : size);
	meta->data_head = head;
	meta->data_tail = tail;

	uint64_t start = tail;
	for (uint64_t step = 0;; step++) {
		FUZZ_CHECK(step <= size / 8 + 1, "no end after %llu records", (unsigned long long)step);
		uint64_t t0 = meta->data_tail;
		uint64_t len = ha_pf_ring_take(meta, data, size, rec);
		FUZZ_CHECK(meta->data_head == head, "data_head written");
		if (head == t0) {
			FUZZ_CHECK(len == 0 && meta->data_tail == t0, "empty ring: %llu",
			           (unsigned long long)len);
			break;
		}
		FUZZ_CHECK(len != 0, "a ring with %llu bytes read as empty",
		           (unsigned long long)(head - t0));
		if (len == (uint64_t)-1) {
			FUZZ_CHECK(meta->data_tail == head, "untrusted ring not emptied");
			break;
		}
		struct perf_event_header h;
		memcpy(&h, rec, sizeof h);
		FUZZ_CHECK(len == h.size && len % 8 == 0 && len >= sizeof h && len <= head - t0 &&
		           len <= size, "record of %llu bytes (header %u, %llu in the ring of %llu)",
		           (unsigned long long)len, h.size, (unsigned long long)(head - t0),
		           (unsigned long long)size);
		FUZZ_CHECK(meta->data_tail == t0 + len, "tail moved by %llu, not %llu",
		           (unsigned long long)(meta->data_tail - t0), (unsigned long long)len);
		FUZZ_CHECK(meta->data_tail - start <= head - start, "tail passed head");
		for (uint64_t i = 0; i < len; i++)
			FUZZ_CHECK(rec[i] == data[(t0 + i) & (size - 1)], "byte %llu of the copy",
			           (unsigned long long)i);
		uint64_t id, lost;
		struct ha_pf_sample s;
		int k = ha_pf_parse_record(rec, len, &id, &s, &lost);
		FUZZ_CHECK(k == HA_PF_REC_OTHER || k == HA_PF_REC_SAMPLE || k == HA_PF_REC_LOST ||
		           k == HA_PF_REC_BAD, "parse result %d", k);
	}
	free(rec);
	free(data);
	free(meta);
	return 0;
}
