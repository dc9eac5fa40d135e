/* rss_check -- unit test of src/rss/rss_pages.c on this process's own
 * memory (no perf event: the "samples" are made up, the residency is real):
 *   - a written anonymous page counts weight x 4 KiB in its bucket, booked
 *     at the fault, and stays after a check;
 *   - MADV_DONTNEED: the next check takes it back (free) and forgets it;
 *   - a second sample on the same page moves it to the new bucket, once;
 *   - a read of never-written memory (the zero page), a page of a file
 *     mapping: forgotten at the check, nothing left booked (a kernel that
 *     maps no zero page, e.g. a PVM guest booted with pvm_no_zero_page,
 *     gives the read a page of its own: resident, and kept as written);
 *   - munmap: forgotten;
 *   - a transparent huge page (where the kernel makes one): counted once,
 *     as its 2 MiB window, whatever 4 KiB page of it was sampled, and a
 *     second sample in the same huge page does not add a second window;
 *   - swap buckets are asked for only when a page is swapped out (none
 *     here: no swap bucket is ever asked for).
 * With --no-scan, without the PAGEMAP_SCAN ioctl (Linux < 6.7): the zero
 * page and huge pages are then told from the frame numbers and
 * /proc/kpageflags, which only root can read. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "book.h"
#include "rss_pages.h"
#include "unit.h"

#define PAGE 4096ULL
#define HUGE (2ULL << 20)
#define W 10.0 /* the weight of every made-up sample */

static int swap_asked;

/* Does a read of never-written memory map the shared zero page here?  The
 * resident set does not grow by it; with a kernel that maps none it grows
 * by a page a read. */
static long resident_pages(void)
{
	long size = 0, res = -1;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = -1;
		fclose(f);
	}
	return res;
}
static int kernel_has_zero_page(void)
{
	enum { N = 256 };
	char *m = mmap(NULL, N * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	long before = resident_pages();
	for (int i = 0; i < N; i++)
		(void)*(volatile char *)(m + (size_t)i * PAGE);
	long after = resident_pages();
	munmap(m, N * PAGE);
	return before < 0 || after < 0 || after - before < N / 2;
}

static uint32_t no_swap(void *arg, uint32_t rss_bucket)
{
	(void)arg;
	(void)rss_bucket;
	swap_asked++;
	return 0;
}

/* rss_pages books into its owner's buckets: here a book of our own. */
static void gain(void *arg, uint32_t bucket, double bytes)
{
	ha_book_gain(arg, bucket, bytes);
}

static void lose(void *arg, uint32_t bucket, double bytes)
{
	ha_book_lose(arg, bucket, bytes);
}

static double live(struct ha_book *b, uint32_t id)
{
	struct ha_db_bucket *rows;
	double v = -1;
	/* take_changed gives every bucket changed since the last call: keep
	 * the last value seen per bucket across calls. */
	static double seen[16];
	size_t n = ha_book_take_changed(b, &rows);
	for (size_t i = 0; i < n; i++)
		if (rows[i].stack_id < 16)
			seen[rows[i].stack_id] = rows[i].live_bytes;
	free(rows);
	v = seen[id];
	return v;
}

static uint32_t bucket(struct ha_book *b, uint64_t pc)
{
	int is_new;
	return ha_book_bucket(b, &pc, 1, HA_KIND_RSS, &is_new);
}

int main(int argc, char **argv)
{
	struct ha_book *b = ha_book_new();
	struct ha_rss_pages *p = ha_rss_pages_new(
		getpid(), &(struct ha_rss_owner){ .swap_bucket = no_swap, .gain = gain, .lose = lose, .arg = b });
	/* --no-scan: as on a kernel without PAGEMAP_SCAN. */
	int no_scan = argc > 1 && strcmp(argv[1], "--no-scan") == 0;
	if (p && no_scan)
		ha_rss_use_scan(p, 0);
	uint32_t a = bucket(b, 0x1000), c = bucket(b, 0x2000), z = bucket(b, 0x3000),
	         f = bucket(b, 0x4000), h = bucket(b, 0x5000);
	if (!b || !p || !a || !c || !z || !f || !h) {
		printf("out of memory\n");
		return 1;
	}

	/* A written page. */
	char *m = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m[0] = 1;
	ha_rss_fault(p, (uintptr_t)m + 123, a, W);
	EXPECT(live(b, a) == W * PAGE, "booked at the fault: %g", live(b, a));
	EXPECT(ha_rss_check(p) == 0, "check failed");
	EXPECT(live(b, a) == W * PAGE, "resident after the check: %g", live(b, a));

	/* The same page sampled again: it moves, it is not counted twice. */
	ha_rss_fault(p, (uintptr_t)m, c, W);
	ha_rss_check(p);
	EXPECT(live(b, a) == 0 && live(b, c) == W * PAGE, "re-fault: a %g, c %g", live(b, a), live(b, c));
	struct ha_rss_stats st;
	ha_rss_stats(p, &st);
	EXPECT(st.pages == 1, "%llu pages kept, expected 1", (unsigned long long)st.pages);

	/* Dropped. */
	madvise(m, PAGE, MADV_DONTNEED);
	ha_rss_check(p);
	ha_rss_stats(p, &st);
	EXPECT(live(b, c) == 0, "after MADV_DONTNEED: %g", live(b, c));
	EXPECT(st.pages == 0 && st.dropped == 1, "pages %llu dropped %llu", (unsigned long long)st.pages,
	       (unsigned long long)st.dropped);

	/* The zero page: a read of a page never written. */
	int zero_page = kernel_has_zero_page();
	volatile char sink = m[PAGE];
	(void)sink;
	ha_rss_fault(p, (uintptr_t)m + PAGE, z, W);
	ha_rss_check(p);
	ha_rss_stats(p, &st);
	if (zero_page) {
		EXPECT(live(b, z) == 0 && st.zero == 1, "zero page: live %g, zero %llu (PFNs visible: %s)",
		       live(b, z), (unsigned long long)st.zero, getuid() == 0 ? "yes" : "no");
	} else {
		printf("this kernel maps no zero page: a read of never-written memory is a "
		       "resident page of its own, counted as written\n");
		EXPECT(live(b, z) == W * PAGE && st.zero == 0, "no zero page: live %g, zero %llu",
		       live(b, z), (unsigned long long)st.zero);
	}

	/* A page of a file mapping. */
	int fd = open("/proc/self/exe", O_RDONLY);
	char *fm = fd >= 0 ? mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (fm != MAP_FAILED) {
		sink = fm[0];
		ha_rss_fault(p, (uintptr_t)fm, f, W);
		ha_rss_check(p);
		ha_rss_stats(p, &st);
		EXPECT(live(b, f) == 0 && st.file == 1, "file page: live %g, file %llu", live(b, f),
		       (unsigned long long)st.file);
	}

	/* Unmapped. */
	m[2 * PAGE] = 1;
	ha_rss_fault(p, (uintptr_t)m + 2 * PAGE, a, W);
	ha_rss_check(p);
	EXPECT(live(b, a) == W * PAGE, "before munmap: %g", live(b, a));
	munmap(m, 4 * PAGE);
	ha_rss_check(p);
	EXPECT(live(b, a) == 0, "after munmap: %g", live(b, a));

	/* A huge page, where the kernel makes one. */
	char *hm = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *ha = (char *)(((uintptr_t)hm + HUGE - 1) & ~(HUGE - 1));
	madvise(ha, HUGE, MADV_HUGEPAGE);
	memset(ha, 1, HUGE);
	ha_rss_fault(p, (uintptr_t)ha + 5 * PAGE, h, W);
	ha_rss_check(p);
	ha_rss_stats(p, &st);
	if (st.huge == 1) {
		EXPECT(live(b, h) == W * HUGE, "huge page: %g, expected %g", live(b, h), W * HUGE);
		/* Another sample inside the same huge page replaces the first. */
		ha_rss_fault(p, (uintptr_t)ha + 100 * PAGE, h, W);
		ha_rss_check(p);
		ha_rss_stats(p, &st);
		EXPECT(st.huge == 1 && live(b, h) == W * HUGE, "second sample: %llu windows, %g",
		       (unsigned long long)st.huge, live(b, h));
		/* Half of it dropped: the window counts what is left. */
		madvise(ha, HUGE / 2, MADV_DONTNEED);
		ha_rss_check(p);
		EXPECT(live(b, h) == W * HUGE / 2, "half dropped: %g, expected %g", live(b, h), W * HUGE / 2);
	} else {
		printf("no transparent huge page made here: huge-page checks not run\n");
		EXPECT(live(b, h) == W * PAGE, "a 4 KiB page of the region: %g", live(b, h));
	}
	munmap(hm, 2 * HUGE);
	ha_rss_check(p);
	EXPECT(live(b, h) == 0, "after munmap of the huge page: %g", live(b, h));
	EXPECT(swap_asked == 0, "a swap bucket was asked for %d times without swap", swap_asked);
	EXPECT(ha_book_live_bytes(b, HA_KIND_RSS) < 1, "resident left booked: %g",
	       ha_book_live_bytes(b, HA_KIND_RSS));
	EXPECT(ha_book_live_bytes(b, -1) == 0, "rss leaked into the heap total: %g", ha_book_live_bytes(b, -1));

	ha_rss_pages_free(p);
	ha_book_free(b);
	return UNIT_RESULT("rss_pages on this process's own pages (scan ioctl: %s)",
	                   st.scan_ioctl ? "yes" : no_scan ? "left out" : "not in this kernel");
}
