/* reach_mem.c -- the copy's memory, read a window (256 KiB, cut at the
 * readable range holding it) at a time into a small direct-mapped cache:
 * the chunk walk reads headers in order, the mark reads blocks wherever
 * pointers lead, and neither holds more than REACH_NWIN windows of the
 * target in the attacher.  A window that cannot be read is remembered as
 * bad and skipped.  The reader is a callback, so the unit test runs the
 * walk and the mark on memory of its own. */
#define _GNU_SOURCE
#include "reach_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

long reach_mem_read_pid(void *ctx, uint64_t addr, void *buf, size_t len, int whole)
{
	(void)whole;
	pid_t pid = *(const pid_t *)ctx;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n < 0 ? -1 : (long)n;
}

/* Only the pages present or swapped (the copy's pagemap says which) are
 * read; the others read as zeros.  A read of a page never touched would
 * give the copy a page of its own.  A file's mapping (whole) is read as it
 * is: its pages not in the copy's page tables (fork does not copy those of
 * clean file pages) come from the page cache. */
long reach_mem_read_fd(void *ctx, uint64_t addr, void *buf, size_t len, int whole)
{
	const struct reach_fds *fds = ctx;
	if (whole) {
		ssize_t n = pread(fds->mem, buf, len, (off_t)addr);
		return n > 0 ? (long)n : -1;
	}
	uint64_t pm[256];
	size_t done = 0;
	while (done < len) {
		uint64_t at = addr + done;
		size_t pages = (len - done + 4095) / 4096;
		if (pages > 256)
			pages = 256;
		ssize_t got = pread(fds->pagemap, pm, pages * 8, (off_t)(at / 4096 * 8));
		if (got <= 0)
			return done ? (long)done : -1;
		pages = (size_t)got / 8;
		for (size_t i = 0; i < pages;) {
			size_t j = i;
			int in = (pm[i] >> 62) != 0; /* present (bit 63) or swapped (62) */
			while (j < pages && ((pm[j] >> 62) != 0) == in)
				j++;
			uint64_t from = at + i * 4096, to = at + j * 4096;
			if (to > addr + len)
				to = addr + len;
			if (in) {
				ssize_t n = pread(fds->mem, (char *)buf + (from - addr), to - from,
				                  (off_t)from);
				if (n != (ssize_t)(to - from))
					return -1;
			} else {
				memset((char *)buf + (from - addr), 0, to - from);
			}
			i = j;
		}
		done += pages * 4096 < len - done ? pages * 4096 : len - done;
	}
	return (long)done;
}

static const struct reach_range *range_of(const struct reach_mem *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->ranges[mid].hi <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < m->nranges && m->ranges[lo].lo <= addr && addr < m->ranges[lo].hi)
		return &m->ranges[lo];
	return NULL;
}

static const uint64_t WIN = 1ull << REACH_WIN_BITS;

/* The windows' buffers: made once and kept for every scan (one scan runs
 * at a time, on the collector's thread): a free of a window each scan
 * was an munmap each, whose TLB flushes took half the scan's time. */
static uint8_t *window_buffer(size_t i)
{
	static uint8_t *pool;
	if (!pool) {
		void *p = mmap(NULL, (size_t)WIN * REACH_NWIN, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		pool = p;
	}
	return pool + i * WIN;
}

const uint8_t *reach_mem_get(struct reach_mem *m, uint64_t addr, size_t want, size_t *len)
{
	const struct reach_range *r = range_of(m, addr);
	if (!r) {
		/* skip to the next range (or a window on) */
		uint64_t next = (addr | (WIN - 1)) + 1;
		for (size_t i = 0; i < m->nranges; i++)
			if (m->ranges[i].lo > addr) {
				next = m->ranges[i].lo;
				break;
			}
		*len = next > addr ? next - addr : 1;
		return NULL;
	}
	uint64_t base = addr & ~(WIN - 1);
	struct reach_win *w = &m->win[(base >> REACH_WIN_BITS) % REACH_NWIN];
	if (!(w->lo <= addr && addr < w->hi)) {
		uint64_t lo = base > r->lo ? base : r->lo;
		uint64_t hi = base + WIN < r->hi ? base + WIN : r->hi;
		if (!w->buf && !(w->buf = window_buffer((size_t)(w - m->win)))) {
			*len = 1;
			return NULL;
		}
		long n = m->read(m->ctx, lo, w->buf, hi - lo, r->file);
		w->lo = lo;
		w->hi = hi;
		w->bad = n != (long)(hi - lo);
		if (n > 0)
			m->bytes_read += (uint64_t)n;
	}
	size_t avail = w->hi - addr;
	*len = avail < want ? avail : want;
	if (w->bad)
		return NULL;
	return w->buf + (addr - w->lo);
}

int reach_mem_word(struct reach_mem *m, uint64_t addr, uint64_t *v)
{
	size_t len;
	const uint8_t *p = reach_mem_get(m, addr, 8, &len);
	if (!p || len < 8) {
		*v = 0;
		return -1;
	}
	memcpy(v, p, 8);
	return 0;
}

void reach_mem_free(struct reach_mem *m)
{
	for (int i = 0; i < REACH_NWIN; i++) {
		m->win[i].buf = NULL; /* the pool's: kept */
		m->win[i].lo = m->win[i].hi = 0;
	}
}
