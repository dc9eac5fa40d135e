/* mem_alloc.c -- another allocator's figures checked and mapped onto the
 * terms (mem_alloc.h).
 *
 * The mapping, each allocator's figures into the terms of mem_terms.h:
 *   jemalloc  live = stats.allocated; pinned = active - allocated (free
 *             regions of pages that hold live ones: no purge gives them
 *             back; the large blocks' padding pages, never touched, left
 *             out: ha_proto.h, HA_J_LARGE_PAD); trimmable = dirty + muzzy
 *             pages (unused, resident until purged: what arena.<all>.purge
 *             gives back); overhead 0: its metadata (stats.metadata) is
 *             mostly reserved, not touched, and stats.resident, which
 *             counts it all, was measured 2-2.6 MiB above the truth on a
 *             60 MiB heap: it stays in other_anon, and the line says so.
 *   tcmalloc  live = generic.current_allocated_bytes (its size classes'
 *             rounding included); pinned = the central and transfer
 *             caches' free bytes (free objects of spans that hold live
 *             ones: a span wholly free goes back to the page heap; no
 *             release gives them back); trimmable = the page heap's free
 *             bytes (mapped: what ReleaseFreeMemory gives back; unmapped
 *             ones are not resident); overhead = the thread caches' free
 *             bytes and its metadata (total_physical_bytes - (heap_size -
 *             unmapped)).
 *   mimalloc  2.0's release build counts neither live nor free bytes:
 *             mi_process_info gives its committed bytes only (its
 *             current_rss on Linux is the same figure).  Only the sampled
 *             live part is a term; the rest of its memory stays in
 *             other_anon, and its line says so.
 * live_heap_sampled is the sampled live blocks (outside glibc's heaps), at
 * most the live figure; live_heap_before_attach the rest of it.  What the
 * terms claim comes out of other_anon, where the allocator's anonymous
 * mappings fell: allocated bytes never written are claimed but not
 * resident, and show as a negative unexplained. */
#include "mem_alloc.h"

#include <stdio.h>
#include <string.h>

const char *ha_mem_alloc_name(int kind)
{
	switch (kind) {
	case HA_ALLOC_JEMALLOC: return "jemalloc";
	case HA_ALLOC_TCMALLOC: return "tcmalloc";
	case HA_ALLOC_MIMALLOC: return "mimalloc";
	default: return NULL;
	}
}

static int bytes_ok(uint64_t v)
{
	return v <= HA_ALLOC_BYTES_MAX;
}

int ha_mem_alloc_take(struct ha_mem_alloc *a, const struct ha_msg *parts, size_t n, char *why,
                      size_t whylen)
{
	memset(a, 0, sizeof *a);
	if (n == 0 || n > HA_ALLOC_PARTS_MAX) {
		snprintf(why, whylen, "no answer");
		return -1;
	}
	const struct ha_msg_alloc_stats *p0 = &parts[0].u.alloc;
	if (p0->kind >= HA_ALLOC_KINDS || p0->parts != n || p0->part != 0) {
		snprintf(why, whylen, "an answer of kind %u in %u parts", (unsigned)p0->kind,
		         (unsigned)p0->parts);
		return -1;
	}
	if (p0->kind == HA_ALLOC_NONE)
		return 0;
	if (p0->kind != HA_ALLOC_JEMALLOC && n != 1) {
		snprintf(why, whylen, "arenas from an allocator without any");
		return -1;
	}
	a->have = p0->have & ((1u << HA_ALLOC_VALUES) - 1);
	for (int i = 0; i < HA_ALLOC_VALUES; i++) {
		if (!(a->have & (1u << i)))
			continue;
		if (!bytes_ok(p0->v[i])) {
			snprintf(why, whylen, "figure %d out of bounds", i);
			return -1;
		}
		a->v[i] = p0->v[i];
	}
	if (p0->kind == HA_ALLOC_JEMALLOC && (a->have & (1u << HA_J_PAGE)) &&
	    (a->v[HA_J_PAGE] < 4096 || a->v[HA_J_PAGE] > (1u << 21) ||
	     (a->v[HA_J_PAGE] & (a->v[HA_J_PAGE] - 1)))) {
		snprintf(why, whylen, "page size %llu", (unsigned long long)a->v[HA_J_PAGE]);
		return -1;
	}
	a->narenas = p0->narenas;
	a->ns = p0->ns;
	int64_t last = -1;
	for (size_t k = 1; k < n; k++) {
		const struct ha_msg_alloc_stats *p = &parts[k].u.alloc;
		if (p->part != k || p->parts != n || p->kind != p0->kind ||
		    p->count > HA_ALLOC_ARENAS_PER_MSG) {
			snprintf(why, whylen, "arena part %zu malformed", k);
			return -1;
		}
		for (unsigned j = 0; j < p->count; j++) {
			const uint64_t *v = &p->v[(size_t)j * HA_JA_VALUES];
			if (a->nsent >= HA_ALLOC_ARENAS_MAX || v[HA_JA_INDEX] >= 4096 ||
			    (int64_t)v[HA_JA_INDEX] <= last || v[HA_JA_INDEX] >= a->narenas ||
			    v[HA_JA_THREADS] > (1u << 22) || !bytes_ok(v[HA_JA_ACTIVE]) ||
			    !bytes_ok(v[HA_JA_ALLOCATED]) || !bytes_ok(v[HA_JA_DIRTY]) ||
			    !bytes_ok(v[HA_JA_MUZZY])) {
				snprintf(why, whylen, "arena %zu out of bounds", a->nsent);
				return -1;
			}
			last = (int64_t)v[HA_JA_INDEX];
			a->arenas[a->nsent++] = (struct ha_mem_je_arena){
				.index = (uint32_t)v[HA_JA_INDEX], .threads = (uint32_t)v[HA_JA_THREADS],
				.active = v[HA_JA_ACTIVE], .allocated = v[HA_JA_ALLOCATED],
				.dirty = v[HA_JA_DIRTY], .muzzy = v[HA_JA_MUZZY] };
		}
	}
	a->kind = p0->kind;
	return 0;
}

static uint64_t sub0(uint64_t x, uint64_t y)
{
	return x > y ? x - y : 0;
}

static double mib(uint64_t b)
{
	return (double)b / 1048576.0;
}

void ha_mem_alloc_terms(const struct ha_mem_alloc *a, double sampled, int64_t *terms, char *name,
                        size_t namelen)
{
	const uint64_t *v = a->v;
	uint64_t live = 0, pinned = 0, trim = 0, over = 0;
	int live_known = 1;
	switch (a->kind) {
	case HA_ALLOC_JEMALLOC: {
		uint64_t active = v[HA_J_ACTIVE] > v[HA_J_ALLOCATED] ? v[HA_J_ACTIVE] : v[HA_J_ALLOCATED];
		live = v[HA_J_ALLOCATED];
		trim = v[HA_J_DIRTY] + v[HA_J_MUZZY];
		/* large blocks' padding pages: active, never touched */
		pinned = sub0(active - live, v[HA_J_LARGE_PAD]);
		snprintf(name, namelen, "jemalloc (read by mallctl: allocated, active, dirty, muzzy; "
		         "%u arenas, %zu in use; metadata %.1f MiB, its resident part unknown, in "
		         "other_anon)", a->narenas, a->nsent, mib(v[HA_J_METADATA]));
		break;
	}
	case HA_ALLOC_TCMALLOC:
		live = v[HA_T_ALLOCATED];
		trim = v[HA_T_PAGEHEAP_FREE];
		pinned = v[HA_T_CENTRAL_FREE] + v[HA_T_TRANSFER_FREE];
		over = v[HA_T_THREAD_FREE];
		if (a->have & (1u << HA_T_PHYSICAL))
			over += sub0(v[HA_T_PHYSICAL], sub0(v[HA_T_HEAP_SIZE], v[HA_T_PAGEHEAP_UNMAPPED]));
		snprintf(name, namelen, "tcmalloc (read by MallocExtension: allocated, page heap free, "
		         "central and transfer caches' free as pinned, thread caches, metadata)");
		break;
	case HA_ALLOC_MIMALLOC:
		live_known = 0;
		live = v[HA_M_COMMIT];
		snprintf(name, namelen, "mimalloc (read by mi_process_info: committed %.1f MiB; not "
		         "read: live and free bytes, uncounted by its release build: in other_anon)",
		         mib(v[HA_M_COMMIT]));
		break;
	default:
		return;
	}
	uint64_t s = sampled <= 0 ? 0 : sampled >= (double)live ? live : (uint64_t)sampled;
	uint64_t claim = s;
	terms[HA_MT_LIVE_SAMPLED] += (int64_t)s;
	if (live_known) {
		terms[HA_MT_LIVE_BEFORE] += (int64_t)(live - s);
		terms[HA_MT_FREE_PINNED] += (int64_t)pinned;
		terms[HA_MT_FREE_TRIMMABLE] += (int64_t)trim;
		terms[HA_MT_OVERHEAD] += (int64_t)over;
		claim = live + pinned + trim + over;
	}
	int64_t other = terms[HA_MT_OTHER_ANON];
	terms[HA_MT_OTHER_ANON] = other > (int64_t)claim ? other - (int64_t)claim : 0;
}

size_t ha_mem_alloc_arenas(const struct ha_mem_alloc *a, struct ha_mem_arena *rows, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; a->kind == HA_ALLOC_JEMALLOC && i < a->nsent && n < max; i++) {
		const struct ha_mem_je_arena *j = &a->arenas[i];
		uint64_t held = j->active + j->dirty + j->muzzy;
		rows[n++] = (struct ha_mem_arena){
			.addr = j->index, .heaps = j->threads, .system = held, .resident = held,
			.in_use = j->allocated, .free_bins = j->dirty, .top = j->muzzy,
			.trimmable = j->dirty + j->muzzy, .pinned = sub0(j->active, j->allocated),
			.complete = 1 };
	}
	return n;
}
