/*
 * heapattach_status.c -- what the user reads of the session's counters: the
 * status line rewritten in place once a second on a terminal, and the lines
 * said at the end (the summary, the --rss, --verbose and --push lines).
 *
 * Separate because it is text only: it reads the collector's, the writer's,
 * the rings' and the push threads' counters and words them, and changes
 * nothing.  A message's wording is changed here and nowhere else.  It calls
 * only libraries (src/record/, src/live/, src/push/), never the files that
 * call it (heapattach_stay.c, heapattach_record.c).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "alloc_frame.h"
#include "debuginfod_fetch.h"
#include "heapattach_int.h"
#include "collector.h"
#include "db_write.h"
#include "ha_ring_map.h"
#include "live_model.h"
#include "push.h"
#include "pymerge.h"
#include "session.h"
#include "writer.h"

/* One status line, rewritten in place on a terminal: the counters, then
 * what the live model says (the live heap since attach and the top growing
 * function), cut to the terminal's width so that it stays one line. */
struct ha_fetcher *cmd_fetcher;

void cmd_print_status(struct ha_collector *c, const struct ha_session *s,
                      uint64_t *last_samples, struct ha_live *live, struct ha_push *push)
{
	struct ha_collector_stats st;
	char line[512], what[256] = "";
	ha_collector_read_stats(c, &st);
	/* The fullest ring.  The target can write prod and cons: a fill
	 * beyond the ring is not one. */
	double fill = 0;
	for (uint32_t i = 0; i < s->ring_count; i++) {
		struct ha_ring_hdr *ring = ha_ring_at(s->ring, s->ring_data_size, i);
		uint64_t prod = __atomic_load_n(&ring->prod, __ATOMIC_RELAXED);
		uint64_t cons = __atomic_load_n(&ring->cons, __ATOMIC_RELAXED);
		double f = prod - cons <= s->ring_data_size
		           ? 100.0 * (double)(prod - cons) / (double)s->ring_data_size : 0;
		if (f > fill)
			fill = f;
	}
	if (live)
		ha_live_status(live, what, sizeof what);
	/* A debug file that takes long to come: what is fetched, so far. */
	struct ha_fetch_status fs;
	ha_fetcher_status(cmd_fetcher, &fs);
	if (fs.busy_s >= 1.0) {
		size_t k = strlen(what);
		snprintf(what + k, sizeof what - k, "%sdebuginfod: %s for %.0f s (%u of %u)",
		         k ? ", " : "", fs.current, fs.busy_s, fs.done + 1, fs.wanted);
	}
	/* What the heap does first: on a narrow terminal the counters are
	 * what is cut. */
	int n = snprintf(line, sizeof line, "heapattach: %s%s%llu samples (%llu/s), %llu stacks, "
	                 "%llu drops, ring %.0f%%, %llu snapshots", what, what[0] ? " | " : "",
	                 (unsigned long long)st.samples,
	                 (unsigned long long)(st.samples - *last_samples),
	                 (unsigned long long)st.buckets,
	                 (unsigned long long)ha_rings_drops(s->ring, s->ring_data_size, s->ring_count),
	                 fill,
	                 (unsigned long long)st.snapshots);
	if (st.callpaths_folded && n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, ", %llu past the call-path cap",
		              (unsigned long long)st.callpaths_folded);
	if (c->rss_period && n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, ", %llu page-fault samples",
		              (unsigned long long)st.rss_samples);
	if (c->py_resolve && n > 0 && (size_t)n < sizeof line)
		n += snprintf(line + n, sizeof line - (size_t)n, ", Python %s",
		              ha_py_wrap_words((uint32_t)st.py_wrap));
	if (push && n > 0 && (size_t)n < sizeof line) {
		struct ha_push_stats ps;
		ha_push_totals(push, &ps);
		snprintf(line + n, sizeof line - (size_t)n, ", pushed %llu, %llu failed, %llu dropped",
		         (unsigned long long)ps.sent, (unsigned long long)ps.failed,
		         (unsigned long long)ps.dropped);
	}
	struct winsize ws;
	size_t width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
	if (width < sizeof line) {
		/* Not in the middle of a UTF-8 sequence (a name's). */
		while (width > 0 && ((unsigned char)line[width] & 0xc0) == 0x80)
			width--;
		line[width] = '\0';
	}
	/* \r, the line, and clear to the end of the line (ECMA-48 EL). */
	fprintf(stderr, "\r%s\033[K", line);
	*last_samples = st.samples;
}

/* The first lines a user reads when the session ends: what was recorded,
 * where, and the peak when one was kept. */
void cmd_print_summary(const struct options *o, const struct ha_session *s,
                       struct ha_collector *c, const struct ha_writer *w,
                       const struct ha_db_session *info, const char *dbname)
{
	struct ha_collector_stats st;
	ha_collector_read_stats(c, &st);
	if (c->err[0])
		fprintf(stderr, "heapattach: %s\n", c->err);
	if (w->failed)
		fprintf(stderr, "heapattach: %s: %s\n", dbname, w->err);
	uint64_t drops = ha_rings_drops(s->ring, s->ring_data_size, s->ring_count);
	fprintf(stderr, "heapattach: %llu samples, %llu callstacks, %llu unwind failures, "
	        "%llu drops; %llu snapshots in %s (last: %lld)\n",
	        (unsigned long long)st.samples, (unsigned long long)st.buckets,
	        (unsigned long long)st.unwind_failures, (unsigned long long)drops,
	        (unsigned long long)w->snapshots_written, dbname,
	        (long long)w->last_snapshot_id);
	uint64_t thinned = __atomic_load_n(&w->snapshots_thinned, __ATOMIC_RELAXED);
	if (thinned)
		fprintf(stderr, "heapattach: %llu old periodic snapshots thinned out (the last 360 "
		        "periods kept whole, then those with call paths, past 8640 one in 60)\n",
		        (unsigned long long)thinned);
	if (st.snapshots_skipped)
		fprintf(stderr, "heapattach: %llu periodic snapshots skipped while the database writer "
		        "was behind (their changes went with the next one)\n",
		        (unsigned long long)st.snapshots_skipped);
	if (st.callpaths_folded)
		fprintf(stderr, "heapattach: %llu samples of call paths past the cap of %llu "
		        "(--max-callpaths) booked under their leaf's module, as \"%s\"\n",
		        (unsigned long long)st.callpaths_folded, (unsigned long long)o->max_callpaths,
		        HA_OVER_CAP_FUNCTION);
	if (st.fp_frames)
		fprintf(stderr, "heapattach: %llu of %llu frames found by frame pointer (code without "
		        "unwind tables)\n", (unsigned long long)st.fp_frames,
		        (unsigned long long)st.frames);
	if (st.scan_frames)
		fprintf(stderr, "heapattach: %llu of %llu frames found by a call-site scan (code without "
		        "unwind tables or frame pointers: musl's libc)\n", (unsigned long long)st.scan_frames,
		        (unsigned long long)st.frames);
	uint64_t jit = __atomic_load_n(&w->jit_frames, __ATOMIC_RELAXED);
	if (jit)
		fprintf(stderr, "heapattach: %llu frames of new callstacks named by the perf map "
		        "(JIT code)\n", (unsigned long long)jit);
	if (st.py_samples || c->py_resolve)
		fprintf(stderr, "heapattach: Python: %llu samples with Python frames, %llu merged into "
		        "their stacks, %llu left native (frames and eval loops did not agree), %llu "
		        "frames of code objects gone; %s\n", (unsigned long long)st.py_samples,
		        (unsigned long long)st.py_merged, (unsigned long long)st.py_unmatched,
		        (unsigned long long)st.py_frames_gone,
		        ha_py_wrap_words((uint32_t)st.py_wrap));
	if (st.peak_bytes)
		fprintf(stderr, "heapattach: the live heap peaked at %.1f MiB (estimated, heap and mmap), "
		        "%.1f s after attach: snapshot 'peak' (heapdiff --peak %s)\n",
		        (double)st.peak_bytes / 1048576.0, (double)st.peak_unix_ms / 1e3 - info->start_time,
		        dbname);
	if (c->rss_period)
		fprintf(stderr, "heapattach: --rss: %llu page-fault samples (1 in %llu faults), %llu lost; "
		        "%.1f MiB resident attributed to %llu pages' call paths at the end "
		        "(heapdiff --kind rss %s)\n",
		        (unsigned long long)st.rss_samples, (unsigned long long)c->rss_period,
		        (unsigned long long)st.rss_lost, (double)st.rss_bytes / 1048576.0,
		        (unsigned long long)st.rss_pages, dbname);
	if (c->rss_period && st.rss_lost)
		fprintf(stderr, "heapattach: --rss: the kernel dropped %llu page-fault samples (its rings "
		        "were full): resident memory is underestimated; a longer --rss-period takes "
		        "fewer samples\n", (unsigned long long)st.rss_lost);
	if (o->verbose && c->rss_period)
		fprintf(stderr, "heapattach: --rss: %llu pages forgotten as dropped, %llu as the zero page, "
		        "%llu as file-backed; %llu unwinds failed; %.1f ms reading pagemap in all\n",
		        (unsigned long long)st.rss_dropped, (unsigned long long)st.rss_zero,
		        (unsigned long long)st.rss_file, (unsigned long long)st.rss_unwind_failures,
		        (double)st.rss_check_ns / 1e6);
	if (o->verbose && st.mem_views)
		fprintf(stderr, "heapattach: the allocator's view at %llu snapshots: %.2f ms each, of "
		        "which %.2f ms walking %.1f arenas (%.0f us per arena)\n",
		        (unsigned long long)st.mem_views, (double)st.mem_view_ns / 1e6 / (double)st.mem_views,
		        (double)st.mem_walk_ns / 1e6 / (double)st.mem_views,
		        (double)st.mem_arenas / (double)st.mem_views,
		        st.mem_arenas ? (double)st.mem_walk_ns / 1e3 / (double)st.mem_arenas : 0.0);
	if (o->verbose && st.mem_alloc_reads)
		fprintf(stderr, "heapattach: the allocator's own figures at %llu snapshots: %.1f us of "
		        "the agent thread's CPU each, %.1f us the collector waited (the round trip)\n",
		        (unsigned long long)st.mem_alloc_reads,
		        (double)st.mem_alloc_ns / 1e3 / (double)st.mem_alloc_reads,
		        (double)st.mem_alloc_wait_ns / 1e3 / (double)st.mem_alloc_reads);
	if (o->verbose && st.live_frames)
		fprintf(stderr, "heapattach: %llu live frames of %llu buckets at the end, %.1f us each in "
		        "the collector\n", (unsigned long long)st.live_frames,
		        (unsigned long long)st.buckets, (double)st.live_ns / 1e3 / (double)st.live_frames);
	if (st.abandoned)
		fprintf(stderr, "heapattach: %llu records were reserved in the ring and never written "
		        "(a thread left the sampling code without returning); skipped\n",
		        (unsigned long long)st.abandoned);
	/* What the program wrote over its ring cost the profile (ring_heal.h). */
	if (st.corrupt_records || st.ring_repairs)
		fprintf(stderr, "heapattach: %llu corrupt records rejected, %llu ring positions put back, "
		        "%llu bytes of the ring skipped: the program wrote over its ring; the profile "
		        "misses what they held\n", (unsigned long long)st.corrupt_records,
		        (unsigned long long)st.ring_repairs, (unsigned long long)st.ring_skipped);
	if (o->verbose && st.samples)
		fprintf(stderr, "heapattach: %.1f us per unwind (%.0f stacks/s), %.0f bytes per record, "
		        "%llu frees of sampled blocks\n", st.unwind_ns / 1e3 / (double)st.samples,
		        st.unwind_ns ? 1e9 * (double)st.samples / (double)st.unwind_ns : 0,
		        (double)st.ring_bytes / (double)st.records, (unsigned long long)st.frees);
	if (o->verbose && (st.sref_published || st.sref_stale))
		fprintf(stderr, "heapattach: %llu samples named their stack instead of copying it "
		        "(%llu stack references published, %llu references to nothing published)\n",
		        (unsigned long long)st.sref_hits, (unsigned long long)st.sref_published,
		        (unsigned long long)st.sref_stale);
	if (o->verbose && st.samples) {
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		double cpu_us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
		                ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
		fprintf(stderr, "heapattach: attacher CPU %.2f us per sample (%.2f s in all), "
		        "max RSS %ld KiB; %.1f%% of unwinds from the stack cache\n",
		        cpu_us / (double)st.samples, cpu_us / 1e6, ru.ru_maxrss,
		        100.0 * (double)st.unwind_cached / (double)(st.samples + st.rss_samples));
	}
}

/* --push: what became of the profiles, one line per receiver. */
void cmd_print_push(const struct ha_push *push)
{
	for (int i = 0; i < ha_push_receivers(push); i++) {
		struct ha_push_stats st;
		const char *url = ha_push_receiver(push, i, &st);
		char line[1024];
		int n = snprintf(line, sizeof line, "heapattach: --push %s: %llu of %llu profiles sent",
		                 url, (unsigned long long)st.sent, (unsigned long long)st.queued);
		if (st.retries && n > 0 && (size_t)n < sizeof line)
			n += snprintf(line + n, sizeof line - (size_t)n, " (%llu retries)",
			              (unsigned long long)st.retries);
		if (st.dropped && n > 0 && (size_t)n < sizeof line)
			n += snprintf(line + n, sizeof line - (size_t)n, "; %llu dropped (the queue of %d "
			              "was full)", (unsigned long long)st.dropped, HA_PUSH_QUEUE);
		if (st.unsent && n > 0 && (size_t)n < sizeof line)
			n += snprintf(line + n, sizeof line - (size_t)n, "; %llu not sent by the end "
			              "(--push-timeout)", (unsigned long long)st.unsent);
		if (st.failed && n > 0 && (size_t)n < sizeof line)
			snprintf(line + n, sizeof line - (size_t)n, "; %llu failed, the last: %s",
			         (unsigned long long)st.failed, st.last_error);
		fprintf(stderr, "%s\n", line);
	}
}
