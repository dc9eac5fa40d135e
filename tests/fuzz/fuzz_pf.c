/* fuzz_pf -- libFuzzer harness for the perf record parser of heapattach
 * --rss, ha_pf_parse_record in src/rss/pf_events.c: what ha_pf_next
 * does with each record it copies out of a CPU's ring.  The kernel writes
 * those records, but a sample's user registers and stack are the target's.
 *
 * The input is one record, as ha_pf_next hands it over (a perf_event_header
 * then the fields of PERF_SAMPLE_IDENTIFIER | IP | TID | TIME | ADDR |
 * REGS_USER | STACK_USER), in a block of exactly its size.  Asserted,
 * besides what the sanitizers check:
 *  - the result is one of HA_PF_REC_*, and HA_PF_REC_BAD for a record
 *    shorter than its header;
 *  - for a sample, the stack lies inside the record and holds at most
 *    HA_PF_STACK_BYTES (every byte of it is read), and the registers are
 *    the eight the record carries, in order (bx, bp, sp, ip, r12..r15);
 *  - for a lost record, the count is the record's second field.
 *
 * fuzz-sources: src/rss/pf_events.c src/common/util.c
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>

#include "fuzz.h"
#include "pf_events.h"

/* Where the fields of a sample are (see attr_init in pf_events.c). */
#define OFF_ABI (8 + 8 + 8 + 8 + 8 + 8)
#define OFF_REGS (OFF_ABI + 8)

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct ha_pf_sample s;
	uint64_t id = 0, lost = 0;
	memset(&s, 0, sizeof s);
	int k = ha_pf_parse_record(d, n, &id, &s, &lost);
	FUZZ_CHECK(k == HA_PF_REC_OTHER || k == HA_PF_REC_SAMPLE || k == HA_PF_REC_LOST ||
	           k == HA_PF_REC_BAD, "result %d", k);
	FUZZ_CHECK(n >= sizeof(struct perf_event_header) || k == HA_PF_REC_BAD,
	           "a %zu-byte record parsed", n);
	if (k == HA_PF_REC_LOST) {
		uint64_t want;
		FUZZ_CHECK(n >= sizeof(struct perf_event_header) + 16, "short lost record taken");
		memcpy(&want, d + sizeof(struct perf_event_header) + 8, 8);
		FUZZ_CHECK(lost == want, "lost %llu, record says %llu", (unsigned long long)lost,
		           (unsigned long long)want);
	}
	if (k != HA_PF_REC_SAMPLE)
		return 0;
	FUZZ_CHECK(n >= OFF_REGS + 8 * 8 + 8, "short sample taken (%zu bytes)", n);
	FUZZ_CHECK(s.stack_len <= HA_PF_STACK_BYTES, "stack of %zu bytes", s.stack_len);
	FUZZ_CHECK(s.stack >= d + OFF_REGS + 8 * 8 + 8 && s.stack + s.stack_len <= d + n,
	           "stack outside the record");
	volatile unsigned sum = 0;
	for (size_t i = 0; i < s.stack_len; i++)
		sum += s.stack[i];
	(void)sum;
	uint64_t regs[8];
	memcpy(regs, d + OFF_REGS, sizeof regs);
	FUZZ_CHECK(s.regs.rbx == regs[0] && s.regs.rbp == regs[1] && s.regs.rsp == regs[2] &&
	           s.regs.rip == regs[3] && s.regs.r12 == regs[4] && s.regs.r13 == regs[5] &&
	           s.regs.r14 == regs[6] && s.regs.r15 == regs[7], "registers out of place");
	return 0;
}
