/* util_test -- unit test of util.c's ha_grow, the one growing array of the
 * attacher's layers: room made by doubling from the first size, the array
 * kept when asked for no more, sizes that would overflow refused with the
 * array and its capacity untouched. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "unit.h"

int main(void)
{
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
	return UNIT_RESULT("ha_grow");
}
