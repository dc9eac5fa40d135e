/* unit.h -- the one assertion of the plain-C unit tests: EXPECT(cond,
 * printf-args) prints a mismatch and counts it; UNIT_RESULT(what) prints
 * the count or "ok: what" and gives main's exit status. */
#ifndef HA_TESTS_UNIT_H
#define HA_TESTS_UNIT_H

#include <stdio.h>

static int unit_failures;

#define EXPECT(cond, ...)                                 \
	do {                                              \
		if (!(cond)) {                            \
			printf("MISMATCH: " __VA_ARGS__); \
			putchar('\n');                    \
			unit_failures++;                  \
		}                                         \
	} while (0)

#define UNIT_RESULT(...)                                              \
	(unit_failures ? (printf("%d mismatches\n", unit_failures), 1) \
	               : (printf("ok: " __VA_ARGS__), putchar('\n'), 0))

#endif
