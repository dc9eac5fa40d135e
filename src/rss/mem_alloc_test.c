/* mem_alloc_test.c -- another allocator's figures from the agent checked
 * (mem_alloc.c): a well-formed jemalloc answer is kept and mapped onto the
 * terms as documented (live, pinned without the large blocks' padding,
 * trimmable; the claim out of other_anon, never below 0); every malformed
 * one (the target's bytes) is refused: a kind out of range, parts out of
 * order or too many, arenas from tcmalloc, an arena index out of order or
 * past narenas, a byte figure past 128 TiB, a page size not a power of
 * two. */
#include "mem_alloc.h"

#include <string.h>

#include "unit.h"

#define MiB (1024ULL * 1024)

static struct ha_msg parts[HA_ALLOC_PARTS_MAX];

/* A jemalloc answer: totals, and two parts of arenas 0, 2, 5. */
static size_t jemalloc_answer(void)
{
	memset(parts, 0, sizeof parts);
	for (size_t i = 0; i < 3; i++) {
		ha_msg_init(&parts[i], HA_MSG_ALLOC_STATS);
		parts[i].u.alloc.kind = HA_ALLOC_JEMALLOC;
		parts[i].u.alloc.part = (uint16_t)i;
		parts[i].u.alloc.parts = 3;
	}
	struct ha_msg_alloc_stats *a = &parts[0].u.alloc;
	a->narenas = 8;
	a->v[HA_J_ALLOCATED] = 40 * MiB;
	a->v[HA_J_ACTIVE] = 50 * MiB;
	a->v[HA_J_DIRTY] = 30 * MiB;
	a->v[HA_J_PAGE] = 4096;
	a->v[HA_J_LARGE_PAD] = 2 * MiB;
	a->v[HA_J_METADATA] = 3 * MiB;
	a->have = (1u << HA_J_ALLOCATED) | (1u << HA_J_ACTIVE) | (1u << HA_J_DIRTY) |
	          (1u << HA_J_PAGE) | (1u << HA_J_LARGE_PAD) | (1u << HA_J_METADATA);
	static const uint64_t ar[3][HA_JA_VALUES] = {
		{ 0, 1, 40 * MiB, 32 * MiB, 30 * MiB, 0 },
		{ 2, 1, 8 * MiB, 8 * MiB, 0, 0 },
		{ 5, 0, 0, 0, 0, 4096 },
	};
	memcpy(parts[1].u.alloc.v, ar[0], 2 * sizeof ar[0]);
	parts[1].u.alloc.count = 2;
	memcpy(parts[2].u.alloc.v, ar[2], sizeof ar[0]);
	parts[2].u.alloc.count = 1;
	return 3;
}

static int refused(size_t n, const char *what)
{
	struct ha_mem_alloc a;
	char why[96] = "";
	int r = ha_mem_alloc_take(&a, parts, n, why, sizeof why);
	EXPECT(r == -1 && a.kind == HA_ALLOC_NONE && why[0], "%s: not refused", what);
	return r;
}

int main(void)
{
	static struct ha_mem_alloc a;
	char why[96];
	size_t n = jemalloc_answer();
	EXPECT(ha_mem_alloc_take(&a, parts, n, why, sizeof why) == 0, "well-formed refused: %s", why);
	EXPECT(a.kind == HA_ALLOC_JEMALLOC && a.nsent == 3 && a.narenas == 8, "kind %d, %zu arenas",
	       a.kind, a.nsent);
	EXPECT(a.arenas[1].index == 2 && a.arenas[2].muzzy == 4096, "arena rows");

	int64_t terms[HA_MT_COUNT] = { 0 };
	terms[HA_MT_OTHER_ANON] = (int64_t)(100 * MiB);
	char name[160];
	ha_mem_alloc_terms(&a, 10.0 * MiB, terms, name, sizeof name);
	EXPECT(terms[HA_MT_LIVE_SAMPLED] == (int64_t)(10 * MiB), "sampled %lld",
	       (long long)terms[HA_MT_LIVE_SAMPLED]);
	EXPECT(terms[HA_MT_LIVE_BEFORE] == (int64_t)(30 * MiB), "before %lld",
	       (long long)terms[HA_MT_LIVE_BEFORE]);
	EXPECT(terms[HA_MT_FREE_PINNED] == (int64_t)(8 * MiB), "pinned %lld (50 - 40 - 2 pad)",
	       (long long)terms[HA_MT_FREE_PINNED]);
	EXPECT(terms[HA_MT_FREE_TRIMMABLE] == (int64_t)(30 * MiB), "trimmable");
	EXPECT(terms[HA_MT_OVERHEAD] == 0, "overhead: metadata stays in other_anon");
	EXPECT(terms[HA_MT_OTHER_ANON] == (int64_t)(22 * MiB), "other_anon %lld",
	       (long long)terms[HA_MT_OTHER_ANON]);
	EXPECT(strncmp(name, "jemalloc (read by mallctl", 25) == 0, "name %s", name);
	memset(terms, 0, sizeof terms);
	terms[HA_MT_OTHER_ANON] = (int64_t)(5 * MiB);
	ha_mem_alloc_terms(&a, 1e18, terms, name, sizeof name);
	EXPECT(terms[HA_MT_OTHER_ANON] == 0 && terms[HA_MT_LIVE_SAMPLED] == (int64_t)(40 * MiB),
	       "a claim past other_anon: %lld, sampled capped %lld",
	       (long long)terms[HA_MT_OTHER_ANON], (long long)terms[HA_MT_LIVE_SAMPLED]);
	struct ha_mem_arena rows[HA_ALLOC_ARENAS_MAX];
	EXPECT(ha_mem_alloc_arenas(&a, rows, HA_ALLOC_ARENAS_MAX) == 3 && rows[0].pinned == 8 * MiB &&
	       rows[0].trimmable == 30 * MiB && rows[1].addr == 2, "arena rows mapped");

	jemalloc_answer();
	parts[0].u.alloc.kind = HA_ALLOC_KINDS;
	refused(n, "kind out of range");
	jemalloc_answer();
	parts[2].u.alloc.part = 1;
	refused(n, "part out of order");
	jemalloc_answer();
	refused(HA_ALLOC_PARTS_MAX + 1, "too many parts");
	jemalloc_answer();
	parts[2].u.alloc.v[HA_JA_INDEX] = 2;
	refused(n, "arena index not increasing");
	jemalloc_answer();
	parts[2].u.alloc.v[HA_JA_INDEX] = 8;
	refused(n, "arena index past narenas");
	jemalloc_answer();
	parts[1].u.alloc.count = HA_ALLOC_ARENAS_PER_MSG + 1;
	refused(n, "count past a part's room");
	jemalloc_answer();
	parts[0].u.alloc.v[HA_J_DIRTY] = HA_ALLOC_BYTES_MAX + 1;
	refused(n, "bytes past 128 TiB");
	jemalloc_answer();
	parts[1].u.alloc.v[HA_JA_ACTIVE] = ~0ULL;
	refused(n, "an arena's bytes past 128 TiB");
	jemalloc_answer();
	parts[0].u.alloc.v[HA_J_PAGE] = 12288;
	refused(n, "page size not a power of two");
	jemalloc_answer();
	for (size_t i = 0; i < n; i++)
		parts[i].u.alloc.kind = HA_ALLOC_TCMALLOC;
	refused(n, "arenas from tcmalloc");
	return UNIT_RESULT("allocator figures checked and mapped");
}
