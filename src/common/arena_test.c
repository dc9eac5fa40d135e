/* arena_test.c -- the arena (arena.h) on its own: pieces aligned as told
 * and never overlapping, packed end to end when unaligned, a piece larger
 * than a chunk in a chunk of its own, a zeroed arena usable, an absurd
 * size (one whose chunk would overflow) refused with the arena unchanged, and the arena usable again after
 * ha_arena_free (run under ASan: nothing leaks, nothing is written out of
 * a piece).  Exit 0 = pass; the first failure is printed. */
#include "arena.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int fails;
#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "arena_test:%d: %s\n", __LINE__, #c); \
			fails++;                                               \
			return;                                                \
		}                                                              \
	} while (0)

static void aligned_and_apart(void)
{
	struct ha_arena a;
	ha_arena_init(&a, 4096, 16);
	unsigned char *prev = NULL;
	for (size_t i = 1; i < 3000; i++) {
		size_t n = i % 97 + 1;
		unsigned char *p = ha_arena_alloc(&a, n);
		CHECK(p);
		CHECK(((uintptr_t)p & 15) == 0);
		memset(p, (int)(i & 0xff), n); /* ASan: all n bytes are ours */
		if (prev && p > prev)
			CHECK(p >= prev + 1); /* distinct pieces */
		prev = p;
	}
	unsigned char *big = ha_arena_alloc(&a, 100000); /* > a chunk: its own */
	CHECK(big);
	memset(big, 1, 100000);
	unsigned char *after = ha_arena_alloc(&a, 8);
	CHECK(after && (after < big || after >= big + 100000));
	ha_arena_free(&a);
	CHECK(a.head == NULL);
	CHECK(ha_arena_alloc(&a, 32) != NULL); /* usable again */
	ha_arena_free(&a);
}

static void zeroed_packs_bytes(void)
{
	struct ha_arena a;
	memset(&a, 0, sizeof a);
	char *s = ha_arena_alloc(&a, 3);
	char *t = ha_arena_alloc(&a, 5);
	CHECK(s && t);
	CHECK(t == s + 3); /* strings end to end */
	memcpy(s, "ab", 3);
	memcpy(t, "cdef", 5);
	CHECK(strcmp(s, "ab") == 0 && strcmp(t, "cdef") == 0);
	ha_arena_free(&a);
}

static void absurd_size_refused(void)
{
	struct ha_arena a;
	ha_arena_init(&a, 0, 8);
	void *p = ha_arena_alloc(&a, 16);
	CHECK(p);
	struct ha_arena_chunk *head = a.head;
	CHECK(ha_arena_alloc(&a, SIZE_MAX - 4) == NULL);
	CHECK(a.head == head);
	ha_arena_free(&a);
}

int main(void)
{
	aligned_and_apart();
	zeroed_packs_bytes();
	absurd_size_refused();
	if (fails)
		return 1;
	puts("arena_test: ok");
	return 0;
}
