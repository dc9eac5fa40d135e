/* mem_glibc.h -- glibc's arenas as the attacher reads them from the
 * target's memory (issue 41): per arena its heaps, what its chunks hold
 * (in use, free in bins, the top), and the resident part of the free
 * memory from /proc/PID/pagemap, split into what malloc_trim(0) gives back
 * (trimmable) and free bytes on pages that also hold blocks in use
 * (pinned).  No call into the target, no lock: the chunks are walked as
 * they are, so a walk racing the target's allocator may stop early (the
 * arena says so: complete 0); every value read is checked before use. */
#ifndef HA_MEM_GLIBC_H
#define HA_MEM_GLIBC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "procmaps.h"

struct ha_mem_range {
	uint64_t start, end;
	uint64_t resident;      /* its resident bytes (pagemap) */
};

struct ha_mem_arena {
	uint64_t addr;          /* its malloc_state (0: the main arena, not found) */
	int is_main;
	uint32_t heaps;         /* heaps walked (the main arena: 1, its brk heap) */
	uint64_t system;        /* bytes of its heaps */
	uint64_t in_use;        /* chunks in use (tcache and fastbin chunks among them) */
	uint64_t in_use_chunks;
	uint64_t free_bins;     /* free chunks, the top left out */
	uint64_t free_chunks;
	uint64_t top;           /* the top chunk */
	uint64_t resident;      /* resident bytes of its heaps (pagemap) */
	uint64_t in_use_resident; /* resident bytes of chunks in use, headers left out */
	uint64_t overhead_resident; /* headers, heap_info and malloc_state, fenceposts */
	uint64_t trimmable;     /* resident whole free pages, and the main arena's top */
	uint64_t pinned;        /* resident free bytes on pages holding chunks in use */
	uint64_t top_kept;      /* resident top of a thread arena (malloc_trim keeps it) */
	int complete;           /* every heap walked to its end */
};

/* A resident page with pinned free bytes, and the bytes of chunks in use
 * on it (their headers left out): the input of the charge of the pinned
 * bytes to the blocks on the page (mem_pin.h). */
struct ha_mem_pin_page {
	uint64_t page;          /* its address */
	uint32_t pinned, in_use;
};

struct ha_mem_glibc {
	int want_pages;              /* in: fill pages (ha_mem_glibc_read keeps it) */
	struct ha_mem_arena *arenas; /* main arena first when there is one */
	size_t n;
	struct ha_mem_range *heaps;  /* every heap walked, sorted by address */
	size_t nheaps;
	uint64_t walk_ns;            /* time of the walk */
	uint64_t bytes_read;         /* of the target's memory, for the walk */
	struct ha_mem_pin_page *pages; /* with want_pages: sorted by address */
	size_t npages;
};

/* Walk the arenas of pid with maps m (read now).  0, or -1 when no glibc
 * heap was found (then *out is empty but for want_pages).  out->want_pages
 * is read first: set, the pages with pinned bytes are kept (8 bytes per
 * page of a heap while it is walked, 16 per page kept).  Free with
 * ha_mem_glibc_free. */
int ha_mem_glibc_read(pid_t pid, const struct ha_maps *m, struct ha_mem_glibc *out);
void ha_mem_glibc_free(struct ha_mem_glibc *g);

/* Is addr inside a heap walked? */
int ha_mem_glibc_in_heap(const struct ha_mem_glibc *g, uint64_t addr);
/* The resident bytes of the heaps inside [start, end). */
uint64_t ha_mem_glibc_resident_in(const struct ha_mem_glibc *g, uint64_t start, uint64_t end);

/* The pagemap of [start, end) (page aligned): one entry per page, read
 * into a malloc'ed array (*out).  0 or -errno. */
int ha_mem_pagemap(int fd, uint64_t start, uint64_t end, uint64_t **out);
/* n bytes at addr of the target through /proc/PID/mem (fd), read whole:
 * 0 or -1.  Never process_vm_readv: its pin un-shares a copy-on-write page
 * it reads (Linux 5.19 on), which would copy the pages a prefork server's
 * workers share with their parent. */
int ha_mem_pread(int fd, uint64_t addr, void *buf, size_t n);
int ha_mem_open(pid_t pid);

/* Is a pagemap entry a resident page (present, not swapped)? */
static inline int ha_mem_present(uint64_t e)
{
	return (int)((e >> 63) & 1);
}

#endif
