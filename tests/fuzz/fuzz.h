/* fuzz.h -- what every libFuzzer harness of tests/fuzz shares: the input
 * as a NUL-terminated string, and a check that aborts (the fuzzer then
 * saves the input) with the reason; a strict UTF-8 check of its own. */
#ifndef HA_FUZZ_H
#define HA_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                         \
	do {                                                          \
		if (!(cond)) {                                        \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                 \
			fputc('\n', stderr);                          \
			abort();                                      \
		}                                                     \
	} while (0)

/* n bytes at d and a NUL, in a heap block of exactly n + 1 bytes (so that
 * AddressSanitizer sees a read past the NUL); free() it. */
static inline char *fuzz_str(const uint8_t *d, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		abort();
	memcpy(s, d, n);
	s[n] = '\0';
	return s;
}

/* Is s (n bytes) valid UTF-8: shortest forms, no surrogates, <= U+10FFFF? */
static inline int fuzz_valid_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 :
		           (c & 0xf8) == 0xf0 ? 3 : 9;
		if (k == 9 || i + k >= n) /* a bad lead byte, or cut short */
			return 0;
		uint32_t v = k == 0 ? c : c & (0x3f >> k);
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			v = v << 6 | (s[i + j] & 0x3f);
		}
		static const uint32_t min[] = { 0, 0x80, 0x800, 0x10000 };
		if (v < min[k] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
			return 0;
		i += k + 1;
	}
	return 1;
}

#endif
