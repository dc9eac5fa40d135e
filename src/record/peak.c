/* peak.c -- when to keep a copy of the buckets as the session's peak, and
 * whether to write it (see peak.h). */
#include "peak.h"

int ha_peak_after_records(struct ha_peak *p, struct ha_book *b, uint64_t now_ns)
{
	double total = ha_book_live_bytes(b, -1);
	if (total <= 0 || total <= p->high * HA_PEAK_RISE)
		return 0;
	/* Record times come from the target: a time that goes backwards
	 * cannot hold copies back; the copy is made at once, as after the
	 * gap (peak_test.c checks it). */
	if (p->copy_total > 0 && now_ns - p->copy_ns < HA_PEAK_GAP_NS && now_ns >= p->copy_ns &&
	    ha_book_peak_dirty(b) > HA_PEAK_CHEAP)
		return 0;
	ha_book_keep_peak(b);
	p->high = p->copy_total = total;
	p->copy_ns = now_ns;
	return 1;
}

void ha_peak_at_snapshot(struct ha_peak *p, const struct ha_book *b)
{
	double total = ha_book_live_bytes(b, -1);
	if (total > p->snap_max)
		p->snap_max = total;
	if (total > p->high)
		p->high = total;
}

int ha_peak_pending(const struct ha_peak *p, const struct ha_book *b)
{
	double now = ha_book_live_bytes(b, -1);
	double highest = now > p->snap_max ? now : p->snap_max;
	return p->copy_total > highest * HA_PEAK_RISE &&
	       p->copy_total - highest > HA_PEAK_NOISE * (double)p->info.sample_interval;
}
