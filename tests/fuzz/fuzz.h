/* fuzz.h -- what every libFuzzer harness of tests/fuzz shares: the input
 * as a NUL-terminated string, and a check that aborts (the fuzzer then
 * saves the input) with the reason. */
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

#endif
