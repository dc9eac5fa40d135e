/* rss_pages.h -- the pages heapattach --rss attributed, and whether they
 * are still resident.  Owned by the collector thread.
 *
 * Each sampled fault adds its page, with the call path (an rss bucket of
 * the book) and the weight (the faults the sample stands for).  A new
 * sample on a page already attributed replaces the old attribution (a
 * re-touch after MADV_DONTNEED, copy-on-write after fork); it never adds a
 * second one.  A fault is booked at once as a 4 KiB page made resident;
 * ha_rss_check, at every snapshot, reads the residency of every attributed
 * page from /proc/PID/pagemap and books the difference with what was
 * booked before:
 *   - private anonymous page present: resident, weight x its size (4 KiB;
 *     a transparent huge page is counted once, as its 2 MiB window, with
 *     the 4 KiB pages of the window still present in it);
 *   - swapped out: moved to the call path's swap bucket;
 *   - not present (MADV_DONTNEED, munmap, an exited thread's stack), the
 *     shared zero page (a read of untouched memory), or a file-backed or
 *     shared page (page cache, not RssAnon): no longer counted, and the
 *     page is forgotten. */
#ifndef HA_RSS_PAGES_H
#define HA_RSS_PAGES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ha_rss_pages;

/* Where the pages' bytes are booked: the owner's buckets (the collector's
 * book).  rss_pages only calls these; it knows nothing of the book, so the
 * pipeline uses --rss and never the reverse. */
struct ha_rss_owner {
	/* The swap bucket of an rss bucket: interned by the owner (who tells
	 * the writer about a new one).  0 when out of memory. */
	uint32_t (*swap_bucket)(void *arg, uint32_t rss_bucket);
	/* bytes (> 0) more, or fewer, resident (or swapped) in bucket */
	void (*gain)(void *arg, uint32_t bucket, double bytes);
	void (*lose)(void *arg, uint32_t bucket, double bytes);
	void *arg;
};

struct ha_rss_pages *ha_rss_pages_new(pid_t pid, const struct ha_rss_owner *owner);
void ha_rss_pages_free(struct ha_rss_pages *p);

/* A sampled fault at addr, first touch by the call path of bucket, weighing
 * weight faults. */
void ha_rss_fault(struct ha_rss_pages *p, uint64_t addr, uint32_t bucket, double weight);

/* What the last checks found, cumulative (for the status and the notes). */
struct ha_rss_stats {
	uint64_t pages;            /* attributed pages kept now */
	uint64_t huge;             /* ...of which huge-page windows */
	uint64_t dropped;          /* forgotten: no longer present */
	uint64_t zero, file;       /* forgotten: the zero page; file-backed or shared */
	uint64_t check_ns;         /* time spent in checks */
	int scan_ioctl;            /* PAGEMAP_SCAN in use (Linux >= 6.7) */
};

/* Read the residency of every attributed page and book the changes in the
 * rss and swap buckets.  0, or -1 when pagemap could not be read (the
 * target is gone): then nothing changes. */
int ha_rss_check(struct ha_rss_pages *p);
/* Leave the PAGEMAP_SCAN ioctl out (0), as on a kernel before 6.7: sizes
 * from the frames' kpageflags (tests; the default is to use it). */
void ha_rss_use_scan(struct ha_rss_pages *p, int on);
void ha_rss_stats(const struct ha_rss_pages *p, struct ha_rss_stats *out);

#endif
