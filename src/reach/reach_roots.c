/* reach_roots.c -- the roots of the copy, marked class by class, each
 * followed through the heap before the next (so a block's holder is the
 * first class that reaches it, in this order):
 *  1. globals: the private writable mappings of files (a module's .data)
 *     and the anonymous mapping right after one (its .bss, up to the
 *     module's end as its program headers say: the rest, merged by the
 *     kernel, is another anonymous mapping, class 5);
 *  2. TLS: around each thread's thread pointer (fs_base), its static TLS
 *     below it (the PT_TLS segments of the modules, read from their
 *     program headers in memory, plus glibc's 1,664-byte surplus, rounded
 *     up) and its thread block above (2304 bytes);
 *  3. stacks: the mapping holding each thread's SP, from SP - 128 (the
 *     red zone) to its end; nothing below SP (dead frames);
 *  4. registers: each thread's general registers;
 *  5. every other private anonymous writable mapping.
 * Never roots: the heaps (reach_heap.c's areas), shared mappings (the
 * rings are memfds), mappings that are not readable and writable, and the
 * ranges the caller gives (the agent's own memory: its live set holds the
 * address of every sampled block), cut out of the mappings they lie in (the
 * agent's .bss shares a mapping with the main thread's TLS when the kernel
 * merges them). */
#include "reach_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define TLS_SLACK  4096
#define TLS_MAX    (1u << 20)
#define TLS_ABOVE  2304

static int is_rw_private(const struct ha_map *e)
{
	return !e->shared && (e->prot & 3) == 3;
}

static const struct ha_map *map_of(const struct ha_maps *maps, uint64_t a)
{
	return ha_maps_find_addr(maps, a);
}

static int holds_sp(const struct ha_map *e, const struct reach_frozen *f)
{
	for (size_t t = 0; t < f->nth; t++) {
		uint64_t sp = f->th[t].regs.rsp;
		if (sp >= e->start && sp < e->end)
			return 1;
	}
	return strcmp(e->path, "[stack]") == 0;
}

/* Scan [lo, hi) less the heaps' areas (sorted by start, disjoint:
 * reach_heap_walk): the first area ending after lo found by bisection, so
 * that a target of many mmapped chunks (a mapping and an area each) costs
 * no pass over every area per mapping. */
static void scan_outside_heaps(struct reach_marker *k, uint64_t lo, uint64_t hi, int kind,
                               pid_t tid)
{
	const struct reach_heap *h = k->h;
	size_t a = 0, b = h->nareas;
	while (a < b) {
		size_t mid = a + (b - a) / 2;
		if (h->areas[mid].hi <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	for (; lo < hi && a < h->nareas && h->areas[a].lo < hi; a++) {
		if (h->areas[a].lo > lo)
			reach_mark_range(k, lo, h->areas[a].lo, kind, tid);
		if (h->areas[a].hi > lo)
			lo = h->areas[a].hi;
	}
	if (lo < hi)
		reach_mark_range(k, lo, hi, kind, tid);
}

/* The static TLS of the modules: the sum of their PT_TLS segments, read
 * from the program headers each module's first mapping holds. */
static uint64_t static_tls(struct reach_mem *m, const struct ha_maps *maps)
{
	uint64_t sum = TLS_SLACK;
	for (size_t i = 0; i < maps->n; i++) {
		const struct ha_map *e = &maps->v[i];
		if (e->offset != 0 || e->path[0] != '/' || !(e->prot & 1))
			continue;
		uint64_t w0, phoff, w7;
		if (reach_mem_word(m, e->start, &w0) != 0 || (uint32_t)w0 != 0x464c457fu ||
		    reach_mem_word(m, e->start + 32, &phoff) != 0 ||
		    reach_mem_word(m, e->start + 56, &w7) != 0)
			continue;
		uint64_t phnum = w7 & 0xffff; /* e_phnum, at 56 */
		for (uint64_t k = 0; k < phnum && k < 64 && phoff < e->end - e->start; k++) {
			uint64_t at = e->start + phoff + k * 56, type, memsz, align;
			if (reach_mem_word(m, at, &type) != 0 || (uint32_t)type != 7 /* PT_TLS */)
				continue;
			if (reach_mem_word(m, at + 40, &memsz) != 0 || reach_mem_word(m, at + 48, &align))
				continue;
			if (align == 0 || align > 4096)
				align = 64;
			sum += (memsz + align - 1) / align * align;
		}
		if (sum > TLS_MAX)
			return TLS_MAX;
	}
	return sum;
}

/* Scan [lo, hi) less the skipped ranges (the agent's memory: whole
 * mappings, or its .bss at the start of an anonymous mapping the kernel
 * merged with what came after it, the main thread's TLS among it). */
static void scan_roots(struct reach_marker *k, uint64_t lo, uint64_t hi, int kind, pid_t tid,
                       const uint64_t *skip, size_t nskip)
{
	for (size_t i = 0; i < nskip; i++) {
		uint64_t a = skip[2 * i], b = skip[2 * i + 1];
		if (lo < b && a < hi) {
			if (lo < a)
				scan_roots(k, lo, a, kind, tid, skip + 2 * (i + 1), nskip - i - 1);
			if (b < hi)
				scan_roots(k, b, hi, kind, tid, skip + 2 * (i + 1), nskip - i - 1);
			return;
		}
	}
	scan_outside_heaps(k, lo, hi, kind, tid);
}

static void mark_globals(struct reach_marker *k, const struct ha_maps *maps, const uint64_t *skip,
                         size_t nskip)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct ha_map *e = &maps->v[i];
		if (!is_rw_private(e))
			continue;
		int file = e->path[0] == '/';
		int bss = e->path[0] == '\0' && i > 0 && maps->v[i - 1].path[0] == '/' &&
		          maps->v[i - 1].end == e->start;
		uint64_t hi = bss ? reach_bss_end(k->m, maps, i) : e->end;
		if (file || bss)
			scan_roots(k, e->start, hi, REACH_ROOT_GLOBAL, 0, skip, nskip);
	}
}

static void mark_threads(struct reach_marker *k, const struct ha_maps *maps,
                         const struct reach_frozen *f, int kind, const uint64_t *skip,
                         size_t nskip)
{
	uint64_t below = kind == REACH_ROOT_TLS ? static_tls(k->m, maps) : 0;
	for (size_t t = 0; t < f->nth; t++) {
		const struct reach_thread *th = &f->th[t];
		if (kind == REACH_ROOT_TLS) {
			uint64_t tp = th->regs.fs_base;
			const struct ha_map *e = map_of(maps, tp);
			if (!e || !is_rw_private(e))
				continue;
			uint64_t lo = tp - e->start > below ? tp - below : e->start;
			uint64_t hi = e->end - tp > TLS_ABOVE ? tp + TLS_ABOVE : e->end;
			scan_roots(k, lo, hi, kind, th->tid, skip, nskip);
		} else if (kind == REACH_ROOT_STACK) {
			uint64_t sp = th->regs.rsp;
			const struct ha_map *e = map_of(maps, sp);
			if (!e || !is_rw_private(e))
				continue;
			uint64_t lo = sp - e->start > REACH_RED_ZONE ? sp - REACH_RED_ZONE : e->start;
			scan_outside_heaps(k, lo, e->end, kind, th->tid);
		} else {
			const unsigned long long *r = (const unsigned long long *)&th->regs;
			size_t nregs = sizeof th->regs / sizeof *r;
			for (size_t j = 0; j < nregs; j++) {
				size_t off = j * sizeof *r;
				if (off == offsetof(struct user_regs_struct, rip) ||
				    off == offsetof(struct user_regs_struct, eflags) ||
				    off == offsetof(struct user_regs_struct, cs) ||
				    off == offsetof(struct user_regs_struct, ss) ||
				    off >= offsetof(struct user_regs_struct, ds))
					continue;
				reach_mark_value(k, r[j], kind, th->tid, (int)j);
			}
		}
	}
}

static void mark_anon(struct reach_marker *k, const struct ha_maps *maps,
                      const struct reach_frozen *f, const uint64_t *skip, size_t nskip)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct ha_map *e = &maps->v[i];
		if (!is_rw_private(e) || e->path[0] != '\0' || holds_sp(e, f))
			continue;
		scan_roots(k, e->start, e->end, REACH_ROOT_ANON, 0, skip, nskip);
	}
}

void reach_roots_mark(struct reach_marker *k, const struct ha_maps *maps,
                      const struct reach_frozen *f, const uint64_t *skip, size_t nskip)
{
	mark_globals(k, maps, skip, nskip);
	reach_mark_drain(k);
	mark_threads(k, maps, f, REACH_ROOT_TLS, skip, nskip);
	reach_mark_drain(k);
	mark_threads(k, maps, f, REACH_ROOT_STACK, skip, nskip);
	reach_mark_drain(k);
	mark_threads(k, maps, f, REACH_ROOT_REGISTER, skip, nskip);
	reach_mark_drain(k);
	mark_anon(k, maps, f, skip, nskip);
	reach_mark_drain(k);
}
