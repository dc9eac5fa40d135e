/* mem_glibc.c -- glibc's arenas walked from the attacher (mem_glibc.h).
 *
 * The layout read (glibc 2.26 and later, x86_64; checked on every value):
 *   - the main arena's heap is the [heap] mapping (brk), its first chunk at
 *     its start, its top the chunk that reaches its end;
 *   - a thread arena's heaps are 64 MiB-aligned mappings starting with
 *     heap_info { ar_ptr, prev, size, mprotect_size[, pagesize] } (32 bytes,
 *     48 from glibc 2.35); the first heap of an arena holds its malloc_state
 *     at ar_ptr (= heap + sizeof heap_info), its chunks after it (2200
 *     bytes, 16-aligned); a later heap's chunks follow its heap_info;
 *   - malloc_state: top at +96, next at +2160 (the circular list of every
 *     arena, which leads to main_arena in libc's data), system_mem at +2184.
 * A chunk is in use when the next one's PREV_INUSE bit is set (tcache and
 * fastbin chunks look in use: they are small and malloc_trim keeps the
 * tcache's).  What malloc_trim(0) gives back (glibc's mtrim): in each free
 * chunk the whole pages from chunk + 48 rounded up; then the main arena's
 * top beyond MINSIZE (systrim); a thread arena's top is kept.
 *
 * The target's memory is read through /proc/PID/mem (ha_mem_pread: no
 * page pinned, so no copy-on-write page un-shared), only on pages pagemap says are resident
 * (reading others would map the zero page there and change the next
 * pagemap), a few pages at a time, at most WALK_BUDGET bytes per walk. */
#define _GNU_SOURCE
#include "mem_glibc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define PG 4096ULL
#define HEAP_MAX (64ULL << 20)
#define MSTATE_SIZE 2200ULL
#define OFF_TOP 96
#define OFF_NEXT 2160
#define OFF_SYSTEM 2184
#define MINSIZE 32ULL
#define WALK_BUDGET (512ULL << 20)
#define RUN_PAGES 16
#define ARENAS_MAX 4096

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

int ha_mem_pagemap(int fd, uint64_t start, uint64_t end, uint64_t **out)
{
	*out = NULL;
	if (end <= start || (start | end) % PG)
		return -EINVAL;
	size_t n = (size_t)((end - start) / PG);
	uint64_t *v = malloc(n * sizeof *v);
	if (!v)
		return -ENOMEM;
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, v + got, (n - got) * sizeof *v,
		                  (off_t)((start / PG + got) * sizeof *v));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? -errno : -EIO;
			free(v);
			return e;
		}
		got += (size_t)r / sizeof *v;
	}
	*out = v;
	return 0;
}

/* One heap's pages and a small window of its resident memory. */
struct heap_rd {
	int memfd;              /* /proc/PID/mem */
	uint64_t pstart;        /* first page */
	uint64_t *pm;           /* its pagemap */
	size_t npages;
	uint64_t wbase, wlen;   /* the window read */
	unsigned char w[RUN_PAGES * PG];
	uint64_t *budget;       /* bytes still allowed */
	uint64_t *bytes_read;
	uint32_t *pin, *use;    /* per page: pinned free bytes, bytes in use (or NULL) */
};

static int page_present(const struct heap_rd *h, uint64_t addr)
{
	if (addr < h->pstart)
		return 0;
	uint64_t i = (addr - h->pstart) / PG;
	return i < h->npages && ha_mem_present(h->pm[i]);
}

/* The resident bytes of [a, b) (inside the heap). */
static uint64_t resident_in(const struct heap_rd *h, uint64_t a, uint64_t b)
{
	uint64_t r = 0;
	while (a < b) {
		uint64_t pe = (a & ~(PG - 1)) + PG, e = pe < b ? pe : b;
		if (page_present(h, a))
			r += e - a;
		a = e;
	}
	return r;
}

/* Add the resident bytes of [a, b) to each page's count in v (NULL: none). */
static void spread(const struct heap_rd *h, uint32_t *v, uint64_t a, uint64_t b)
{
	while (v && a < b) {
		uint64_t pe = (a & ~(PG - 1)) + PG, e = pe < b ? pe : b;
		if (page_present(h, a))
			v[(a - h->pstart) / PG] += (uint32_t)(e - a);
		a = e;
	}
}

/* [a, b) is free and pinned: booked, and spread over its pages. */
static void pin(const struct heap_rd *h, struct ha_mem_arena *ar, uint64_t a, uint64_t b)
{
	ar->pinned += resident_in(h, a, b);
	spread(h, h->pin, a, b);
}

/* The 8 bytes at addr (8-aligned), read through the window: 0 or -1. */
static int rd_u64(struct heap_rd *h, uint64_t addr, uint64_t *v)
{
	if (addr < h->wbase || addr + 8 > h->wbase + h->wlen) {
		uint64_t base = addr & ~(PG - 1), len = 0;
		while (len < RUN_PAGES * PG && page_present(h, base + len))
			len += PG;
		if (len == 0 || *h->budget < len)
			return -1;
		if (ha_mem_pread(h->memfd, base, h->w, (size_t)len) != 0)
			return -1;
		*h->budget -= len;
		*h->bytes_read += len;
		h->wbase = base;
		h->wlen = len;
	}
	memcpy(v, h->w + (addr - h->wbase), 8);
	return 0;
}

static int heap_rd_open(struct heap_rd *h, int pmfd, uint64_t start, uint64_t end)
{
	h->pstart = start & ~(PG - 1);
	uint64_t pend = (end + PG - 1) & ~(PG - 1);
	h->npages = (size_t)((pend - h->pstart) / PG);
	h->wbase = h->wlen = 0;
	return ha_mem_pagemap(pmfd, h->pstart, pend, &h->pm);
}

/* Book a chunk whose state is known. */
static void book_chunk(struct heap_rd *h, struct ha_mem_arena *a, uint64_t c, uint64_t sz,
                       int in_use)
{
	if (in_use) {
		a->in_use += sz;
		a->in_use_chunks++;
		a->overhead_resident += resident_in(h, c, c + 16);
		a->in_use_resident += resident_in(h, c + 16, c + sz);
		spread(h, h->use, c + 16, c + sz);
		return;
	}
	a->free_bins += sz;
	a->free_chunks++;
	uint64_t t0 = (c + 48 + PG - 1) & ~(PG - 1), t1 = (c + sz) & ~(PG - 1);
	if (t1 > t0) {
		a->trimmable += resident_in(h, t0, t1);
		pin(h, a, c, t0);
		pin(h, a, t1, c + sz);
	} else {
		pin(h, a, c, c + sz);
	}
}

static void book_top(struct heap_rd *h, struct ha_mem_arena *a, uint64_t c, uint64_t sz)
{
	a->top += sz;
	uint64_t t0 = (c + MINSIZE + 1 + PG - 1) & ~(PG - 1), e = c + sz;
	if (t0 > e)
		t0 = e;
	pin(h, a, c, t0);
	if (a->is_main)
		a->trimmable += resident_in(h, t0, e);
	else
		a->top_kept += resident_in(h, t0, e);
}

/* The pages of h with pinned bytes appended to g->pages (in address order:
 * heaps do not overlap, and are sorted after). */
static void keep_pages(struct ha_mem_glibc *g, const struct heap_rd *h)
{
	for (size_t i = 0; i < h->npages; i++) {
		if (!h->pin[i])
			continue;
		size_t n = g->npages;
		if (n == 0 || (n >= 256 && (n & (n - 1)) == 0)) { /* full: 256, 512, ... */
			size_t cap = n ? n * 2 : 256;
			struct ha_mem_pin_page *v = realloc(g->pages, cap * sizeof *v);
			if (!v)
				return;
			g->pages = v;
		}
		g->pages[g->npages++] = (struct ha_mem_pin_page){ h->pstart + i * PG, h->pin[i],
		                                                  h->use[i] };
	}
}

/* Walk the chunks of one heap, [start, end), the first at first. */
static void walk_heap(int memfd, int pmfd, struct ha_mem_glibc *g, struct ha_mem_arena *a,
                      uint64_t start, uint64_t first, uint64_t end, uint64_t *budget)
{
	struct heap_rd *h = calloc(1, sizeof *h);
	if (!h || heap_rd_open(h, pmfd, start, end) != 0) {
		free(h);
		a->complete = 0;
		return;
	}
	h->memfd = memfd;
	h->budget = budget;
	h->bytes_read = &g->bytes_read;
	if (g->want_pages) {
		h->pin = calloc(h->npages, sizeof *h->pin);
		h->use = calloc(h->npages, sizeof *h->use);
	}
	a->heaps++;
	a->system += end - start;
	a->resident += resident_in(h, start, end);
	a->overhead_resident += resident_in(h, start, first);
	uint64_t p = first, prev = 0, prev_sz = 0;
	int done = 0;
	while (p + 16 <= end) {
		uint64_t raw;
		if (rd_u64(h, p + 8, &raw) != 0)
			break;
		uint64_t sz = raw & ~7ULL;
		if (prev)
			book_chunk(h, a, prev, prev_sz, (int)(raw & 1));
		prev = 0;
		if ((sz == 16 || sz == 0) && p != first) { /* a fencepost: the end of an older heap */
			a->overhead_resident += resident_in(h, p, end);
			done = 1;
			break;
		}
		if (sz < MINSIZE || (sz & 15) || sz > end - p || (raw & 2))
			break;
		/* the top: the chunk reaching the end (brk may end inside the
		 * [heap] mapping's last page) */
		if (end - (p + sz) < (a->is_main ? PG : 16)) {
			book_top(h, a, p, sz);
			done = 1;
			break;
		}
		prev = p;
		prev_sz = sz;
		p += sz;
	}
	if (!done)
		a->complete = 0;
	if (h->pin && h->use)
		keep_pages(g, h);
	free(h->pin);
	free(h->use);
	free(h->pm);
	free(h);
}

struct heap_found {
	uint64_t start, size, ar_ptr;
};

static int cmp_range(const void *x, const void *y)
{
	const struct ha_mem_range *a = x, *b = y;
	return a->start < b->start ? -1 : a->start > b->start;
}

static int add_range(struct ha_mem_glibc *g, uint64_t s, uint64_t e, uint64_t resident)
{
	struct ha_mem_range *v = realloc(g->heaps, (g->nheaps + 1) * sizeof *v);
	if (!v)
		return -1;
	g->heaps = v;
	v[g->nheaps++] = (struct ha_mem_range){ s, e, resident };
	return 0;
}

static struct ha_mem_arena *add_arena(struct ha_mem_glibc *g, uint64_t addr, int is_main)
{
	struct ha_mem_arena *v = realloc(g->arenas, (g->n + 1) * sizeof *v);
	if (!v)
		return NULL;
	g->arenas = v;
	v[g->n] = (struct ha_mem_arena){ .addr = addr, .is_main = is_main, .complete = 1 };
	return &v[g->n++];
}

static int read_u64(int memfd, uint64_t addr, uint64_t *v)
{
	return ha_mem_pread(memfd, addr, v, 8);
}

int ha_mem_pread(int fd, uint64_t addr, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(addr + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

int ha_mem_open(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* The heaps of thread arenas: 64 MiB-aligned addresses of private
 * anonymous mappings (the kernel may merge a heap with the mapping below
 * it, a thread's stack) holding a plausible heap_info.  *hdr: sizeof heap_info, as the
 * first heaps of arenas tell (32 if none does). */
static size_t find_thread_heaps(int memfd, const struct ha_maps *m, struct heap_found **out,
                                uint64_t *hdr)
{
	size_t n = 0;
	*out = NULL;
	*hdr = 32;
	for (size_t i = 0; i < m->n; i++) {
		const struct ha_map *e = &m->v[i];
		if (e->path[0] || e->shared || (e->prot & 3) != 3)
			continue;
		for (uint64_t at = (e->start + HEAP_MAX - 1) & ~(HEAP_MAX - 1); at < e->end;
		     at += HEAP_MAX) {
			uint64_t hi[4];
			if (ha_mem_pread(memfd, at, hi, sizeof hi) != 0)
				continue;
			if (hi[0] == 0 || hi[2] < PG || hi[2] > HEAP_MAX || hi[2] > e->end - at ||
			    hi[3] < hi[2] || hi[3] > HEAP_MAX || (hi[0] & 15))
				continue;
			if (hi[0] == at + 32 || hi[0] == at + 48)
				*hdr = hi[0] - at;
			struct heap_found *v = realloc(*out, (n + 1) * sizeof *v);
			if (!v)
				return n;
			*out = v;
			v[n++] = (struct heap_found){ at, hi[2], hi[0] };
		}
	}
	return n;
}

static int cmp_page(const void *x, const void *y)
{
	const struct ha_mem_pin_page *a = x, *b = y;
	return a->page < b->page ? -1 : a->page > b->page;
}

int ha_mem_glibc_read(pid_t pid, const struct ha_maps *m, struct ha_mem_glibc *g)
{
	int want = g->want_pages;
	memset(g, 0, sizeof *g);
	g->want_pages = want;
	uint64_t t0 = now_ns(), budget = WALK_BUDGET;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
	int pmfd = open(path, O_RDONLY | O_CLOEXEC), memfd = ha_mem_open(pid);
	if (pmfd < 0 || memfd < 0) {
		if (pmfd >= 0)
			close(pmfd);
		if (memfd >= 0)
			close(memfd);
		return -1;
	}
	const struct ha_map *brk = NULL;
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].path, "[heap]") == 0)
			brk = &m->v[i];
	uint64_t hdr;
	struct heap_found *th = NULL;
	size_t nth = find_thread_heaps(memfd, m, &th, &hdr);

	/* main_arena: through the list of a thread arena, if there is one. */
	uint64_t main_addr = 0;
	for (size_t i = 0; i < nth && !main_addr; i++) {
		uint64_t a = th[i].ar_ptr;
		for (int steps = 0; steps < ARENAS_MAX && a; steps++) {
			int is_thread = 0;
			for (size_t j = 0; j < nth && !is_thread; j++)
				is_thread = th[j].ar_ptr == a;
			if (!is_thread) {
				uint64_t top;
				if (brk && read_u64(memfd, a + OFF_TOP, &top) == 0 && top >= brk->start &&
				    top < brk->end)
					main_addr = a;
				break;
			}
			if (read_u64(memfd, a + OFF_NEXT, &a) != 0)
				break;
		}
	}
	if (brk) {
		struct ha_mem_arena *a = add_arena(g, main_addr, 1);
		if (a) {
			uint64_t r0 = a->resident;
			walk_heap(memfd, pmfd, g, a, brk->start, brk->start, brk->end, &budget);
			/* Not a chunk of glibc's in it: brk is another allocator's
			 * (tcmalloc's), or the program's own. */
			if (a->in_use_chunks + a->free_chunks == 0 && a->top == 0)
				g->n--;
			else
				add_range(g, brk->start, brk->end, a->resident - r0);
		}
	}
	for (size_t i = 0; i < nth; i++) {
		struct ha_mem_arena *a = NULL;
		for (size_t k = 0; k < g->n && !a; k++)
			if (!g->arenas[k].is_main && g->arenas[k].addr == th[i].ar_ptr)
				a = &g->arenas[k];
		if (!a && g->n < ARENAS_MAX)
			a = add_arena(g, th[i].ar_ptr, 0);
		if (!a)
			continue;
		uint64_t s = th[i].start, e = s + th[i].size;
		uint64_t first = th[i].ar_ptr == s + hdr ? (s + hdr + MSTATE_SIZE + 15) & ~15ULL : s + hdr;
		uint64_t r0 = a->resident;
		walk_heap(memfd, pmfd, g, a, s, first, e, &budget);
		add_range(g, s, e, a->resident - r0);
	}
	free(th);
	close(pmfd);
	close(memfd);
	if (g->nheaps)
		qsort(g->heaps, g->nheaps, sizeof *g->heaps, cmp_range);
	if (g->npages)
		qsort(g->pages, g->npages, sizeof *g->pages, cmp_page);
	g->walk_ns = now_ns() - t0;
	if (g->n == 0) {
		ha_mem_glibc_free(g);
		return -1;
	}
	return 0;
}

void ha_mem_glibc_free(struct ha_mem_glibc *g)
{
	int want = g->want_pages;
	free(g->arenas);
	free(g->heaps);
	free(g->pages);
	memset(g, 0, sizeof *g);
	g->want_pages = want;
}

int ha_mem_glibc_in_heap(const struct ha_mem_glibc *g, uint64_t addr)
{
	size_t lo = 0, hi = g->nheaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (addr < g->heaps[mid].start)
			hi = mid;
		else if (addr >= g->heaps[mid].end)
			lo = mid + 1;
		else
			return 1;
	}
	return 0;
}

uint64_t ha_mem_glibc_resident_in(const struct ha_mem_glibc *g, uint64_t start, uint64_t end)
{
	uint64_t r = 0;
	for (size_t i = 0; i < g->nheaps; i++)
		if (g->heaps[i].start >= start && g->heaps[i].end <= end)
			r += g->heaps[i].resident;
	return r;
}
