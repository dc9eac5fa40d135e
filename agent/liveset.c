/*
 * liveset.c -- the storage of the live sampled set and its filter
 * (liveset.h: the look-ups themselves are inline there).
 */
#include "liveset.h"

#include <string.h>
#include <sys/mman.h>

uint8_t ha_ls_filter[HA_LS_PAGE_SLOTS] __attribute__((aligned(4096)));
uint64_t *ha_ls_table;

static size_t ls_bytes(void)
{
	return (sizeof(uint64_t) << HA_LS_BUCKET_BITS) * HA_LS_WAYS;
}

int ha_ls_setup(void)
{
	if (ha_ls_table)
		return 0;
	/* Allocated once, never unmapped (see liveset.h).  Pages are given
	 * back at stop. */
	void *t = mmap(NULL, ls_bytes(), PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED)
		return -1;
	ha_ls_table = t;
	return 0;
}

void ha_ls_clear(void)
{
	if (ha_ls_table) {
		madvise(ha_ls_table, ls_bytes(), MADV_DONTNEED); /* reads as zeros again */
		/* Anonymous pages of the .bss (page-aligned, beyond the file's
		 * data): given back, they read as zeros again. */
		madvise(ha_ls_filter, sizeof ha_ls_filter, MADV_DONTNEED);
	}
}
