/* fuzz_elfsym -- libFuzzer harness for the symbol tables the call-site
 * scan reads from a target's module (src/unwind/unwind_elfsym.c): the
 * target's files are anything it likes.
 *
 * The input is an ELF file, in a heap block of exactly its length.
 * Asserted, besides what the sanitizers check:
 *  - uw_syms_parse returns tables (out of memory cannot happen here);
 *  - uw_syms_func_le gives a start at or below the address asked, and the
 *    start it gives holds itself;
 *  - every name uw_syms_slot_name gives lies inside the input, with its
 *    NUL, and uw_syms_func_named of it, where it answers, gives a start
 *    uw_syms_func_le agrees is a function's.
 *
 * fuzz-sources: src/unwind/unwind_elfsym.c
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "unwind_elfsym.h"

static void check_name(const struct uw_syms *s, const uint8_t *p, size_t n, const char *name)
{
	uint64_t st, le;
	FUZZ_CHECK((const uint8_t *)name >= p && (const uint8_t *)name < p + n &&
	                   memchr(name, 0, (size_t)(p + n - (const uint8_t *)name)),
	           "a name outside the input");
	if (uw_syms_func_named(s, name, &st))
		FUZZ_CHECK(uw_syms_func_le(s, st, &le) && le == st,
		           "'%s' starts at %#llx, which is no function's start", name,
		           (unsigned long long)st);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		abort();
	memcpy(p, d, n);
	struct uw_syms *s = uw_syms_parse(p, n);
	FUZZ_CHECK(s != NULL, "no tables");
	/* Addresses to ask: every 8-byte word of the input, as an ELF file's
	 * addresses are (at most 4,096 of them). */
	for (size_t i = 0; i + 8 <= n && i < 8 * 4096; i += 8) {
		uint64_t a, st, again;
		memcpy(&a, p + i, 8);
		if (uw_syms_func_le(s, a, &st)) {
			FUZZ_CHECK(st <= a, "start %#llx above %#llx", (unsigned long long)st,
			           (unsigned long long)a);
			FUZZ_CHECK(uw_syms_func_le(s, st, &again) && again == st,
			           "the start %#llx does not hold itself", (unsigned long long)st);
		}
		const char *name = uw_syms_slot_name(s, a);
		if (name)
			check_name(s, p, n, name);
	}
	uw_syms_free(s);
	free(p);
	return 0;
}
