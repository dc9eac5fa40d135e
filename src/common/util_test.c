/* util_test -- unit test of util.c's ha_grow, the one growing array of the
 * attacher's layers (room made by doubling from the first size, the array
 * kept when asked for no more, sizes that would overflow refused with the
 * array and its capacity untouched), and of util.h's ha_count_le, its one
 * binary search (every position of a key, duplicates, the ends). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "unit.h"

struct ent {
	uint32_t pad;
	uint64_t key;
};

/* ha_count_le against counting by hand, for every key around the array's. */
static void count_le_cases(void)
{
	static const struct ent v[] = { { 0, 10 }, { 0, 20 }, { 0, 20 }, { 0, 30 }, { 0, UINT64_MAX } };
	size_t n = sizeof v / sizeof v[0];
	static const uint64_t keys[] = { 0, 9, 10, 11, 19, 20, 21, 30, 31, UINT64_MAX - 1, UINT64_MAX };
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
		size_t want = 0;
		for (size_t i = 0; i < n; i++)
			want += v[i].key <= keys[k];
		size_t got = ha_count_le(v, n, sizeof v[0], offsetof(struct ent, key), keys[k]);
		EXPECT(got == want, "ha_count_le(%llu): %zu, want %zu", (unsigned long long)keys[k], got, want);
	}
	EXPECT(ha_count_le(v, 0, sizeof v[0], offsetof(struct ent, key), 5) == 0, "an empty array: 0");
}

int main(void)
{
	count_le_cases();
	size_t cap = 0;
	int *v = ha_grow(NULL, &cap, 1, sizeof *v, 64);
	EXPECT(v && cap == 64, "first growth: cap %zu, want 64", cap);
	for (int i = 0; v && i < 64; i++)
		v[i] = i;
	int *same = ha_grow(v, &cap, 64, sizeof *v, 64);
	EXPECT(same == v && cap == 64, "room enough: the same array, cap %zu", cap);
	int *w = ha_grow(v, &cap, 65, sizeof *v, 64);
	EXPECT(w && cap == 128, "one more: doubled to %zu, want 128", cap);
	if (w) {
		v = w;
		int ok = 1;
		for (int i = 0; i < 64; i++)
			ok &= v[i] == i;
		EXPECT(ok, "the elements survive the growth");
	}
	w = ha_grow(v, &cap, 1000, sizeof *v, 64);
	EXPECT(w && cap == 1024, "far more: doubled until it fits, %zu, want 1024", cap);
	if (w)
		v = w;

	/* Sizes past SIZE_MAX: refused, nothing changed. */
	size_t before = cap;
	EXPECT(ha_grow(v, &cap, SIZE_MAX / 2, sizeof *v, 64) == NULL && cap == before,
	       "an element count whose bytes overflow is refused (cap %zu)", cap);
	EXPECT(ha_grow(v, &cap, SIZE_MAX, 1, 64) == NULL && cap == before,
	       "a count that cannot be doubled to is refused (cap %zu)", cap);
	EXPECT(v[0] == 0 && v[63] == 63, "the array is kept after a refusal");
	free(v);

	/* No first size: starts at one element. */
	size_t c1 = 0;
	char *p = ha_grow(NULL, &c1, 3, 1, 0);
	EXPECT(p && c1 == 4, "first 0: 1, 2, 4 (got %zu)", c1);
	free(p);
	return UNIT_RESULT("ha_grow and ha_count_le");
}
