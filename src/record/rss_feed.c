/* rss_feed.c -- heapattach --rss on the pipeline's side (see rss_feed.h). */
#define _GNU_SOURCE
#include "rss_feed.h"

#include <string.h>

#include "pf_events.h"
#include "rss_pages.h"
#include "unwind.h"

#define PF_BATCH 4096         /* page-fault samples per drain, at most */

/* The swap bucket of an rss bucket: the same pcs, kind swap. */
static uint32_t swap_bucket(void *arg, uint32_t rss_bucket)
{
	struct ha_rss_feed *f = arg;
	int n, kind;
	const uint64_t *pcs = ha_book_pcs(f->in->book, rss_bucket, &n, &kind);
	if (!pcs || n > HA_MAX_PCS)
		return 0;
	memcpy(f->pcs, pcs, (size_t)n * sizeof *pcs);
	return ha_intern_bucket(f->in, f->pcs, n, HA_KIND_SWAP, NULL, 0);
}

/* What the attributed pages gain and lose, booked in their buckets. */
static void gain(void *arg, uint32_t bucket, double bytes)
{
	ha_book_gain(((struct ha_rss_feed *)arg)->in->book, bucket, bytes);
}

static void lose(void *arg, uint32_t bucket, double bytes)
{
	ha_book_lose(((struct ha_rss_feed *)arg)->in->book, bucket, bytes);
}

void ha_rss_feed_open(struct ha_rss_feed *f, pid_t pid, struct ha_pf *pf, uint64_t period,
                      struct ha_unwinder *unw, struct ha_intern *in)
{
	memset(f, 0, sizeof *f);
	f->pf = pf;
	f->period = period;
	f->unw = unw;
	f->in = in;
	if (pf && in->book)
		f->pages = ha_rss_pages_new(pid, &(struct ha_rss_owner){ .swap_bucket = swap_bucket,
		                                                          .gain = gain,
		                                                          .lose = lose,
		                                                          .arg = f });
}

void ha_rss_feed_close(struct ha_rss_feed *f)
{
	ha_pf_close(f->pf);
	f->pf = NULL;
	ha_rss_pages_free(f->pages);
	f->pages = NULL;
}

/* A first touch inside a system call unwinds from the user registers at
 * the call. */
void ha_rss_feed_drain(struct ha_rss_feed *f, struct ha_collector_stats *st)
{
	struct ha_pf_sample s;
	if (!f->pf)
		return;
	for (int k = 0; k < PF_BATCH && ha_pf_next(f->pf, &s); k++) {
		if (!f->in->book || !f->pages)
			continue;
		int n = f->unw ? ha_unwind(f->unw, &s.regs, s.stack, s.stack_len, f->pcs, HA_MAX_PCS) : -1;
		if (n <= 0) {
			st->rss_unwind_failures++;
			f->pcs[0] = s.regs.rip;
			n = 1;
		}
		uint32_t id = ha_intern_bucket(f->in, f->pcs, n, HA_KIND_RSS, NULL, 0);
		ha_rss_fault(f->pages, s.addr, id, (double)f->period);
		st->rss_samples++;
	}
	uint64_t samples, lost, bad;
	ha_pf_counts(f->pf, &samples, &lost, &bad);
	st->rss_lost = lost;
	st->corrupt_records += bad - f->pf_bad;
	f->pf_bad = bad;
}

void ha_rss_feed_check(struct ha_rss_feed *f, struct ha_collector_stats *st)
{
	if (!f->pages)
		return;
	ha_rss_feed_drain(f, st);
	ha_rss_check(f->pages);
	struct ha_rss_stats rs;
	ha_rss_stats(f->pages, &rs);
	st->rss_pages = rs.pages;
	st->rss_bytes = (uint64_t)ha_book_live_bytes(f->in->book, HA_KIND_RSS);
	st->rss_zero = rs.zero;
	st->rss_file = rs.file;
	st->rss_dropped = rs.dropped;
	st->rss_check_ns = rs.check_ns;
}
