/* mem_view.c -- RssAnon broken down into terms (mem_view.h).
 *
 * Each mapping with anonymous pages (smaps' Anonymous, which counts the
 * private copies of file pages too, as RssAnon does) goes to one place:
 *   - a glibc heap ([heap], a thread arena's heap): its pages are split by
 *     the arena walk (mem_glibc.c) into blocks in use (sampled since
 *     attach, up to what is resident; the rest from before attach), free
 *     trimmable, free pinned, and overhead (headers, arena structures,
 *     a thread arena's top);
 *   - the agent's own mappings: profiler (the rings are shared memory, not
 *     RssAnon);
 *   - [stack], and private anonymous mappings right above a PROT_NONE
 *     guard (how glibc's pthread_create maps a stack): thread_stacks;
 *   - private anonymous mappings made of malloc's mmapped chunks (each
 *     starting with a header: prev_size 0, size a whole number of pages
 *     with IS_MMAPPED): mmap_chunks for their resident part;
 *   - anything else: other_anon.
 * RssAnon is read first from smaps_rollup; unexplained is RssAnon minus
 * the sum, which holds what changed between the two readings and what a
 * walk that stopped early (a race with the target's allocator) left. */
#define _GNU_SOURCE
#include "mem_view.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define PG 4096ULL
#define SMAPS_MAX (256u << 20)
#define HEADER_BUDGET (256u << 10) /* pages read for mmapped chunks' headers */

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* A whole /proc file, NUL-terminated, malloc'ed; NULL on failure. */
static char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n + 1 >= cap) {
			char *b = cap < SMAPS_MAX ? realloc(buf, cap * 2) : NULL;
			if (!b) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = b;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			buf = NULL;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

struct vma {
	struct ha_map m;
	uint64_t anon;
};

/* The kB of a "Key:   N kB" line whose key is at line (NUL-terminated);
 * UINT64_MAX if it is not one. */
static uint64_t kb_field(const char *line, const char *key)
{
	size_t kl = strlen(key);
	if (strncmp(line, key, kl) != 0)
		return UINT64_MAX;
	const char *p = line + kl;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return UINT64_MAX;
	char *end;
	errno = 0;
	unsigned long long kb = strtoull(p, &end, 10);
	if (errno || strncmp(end, " kB", 3) != 0 || kb > UINT64_MAX / 1024)
		return UINT64_MAX;
	return (uint64_t)kb * 1024;
}

static void free_vmas(struct vma *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].m.path);
	free(v);
}

/* smaps: each mapping (procmaps.c's parser of its first line) and its
 * Anonymous. */
static size_t parse_smaps(char *text, struct vma **out)
{
	size_t n = 0, cap = 0;
	struct vma *v = NULL;
	for (char *line = text, *nl; line && *line; line = nl) {
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		struct ha_map m;
		if (ha_maps_parse_line(line, &m) == 0) {
			if (n == cap) {
				struct vma *w = realloc(v, (cap = cap ? cap * 2 : 256) * sizeof *w);
				if (!w) {
					free(m.path);
					break;
				}
				v = w;
			}
			v[n++] = (struct vma){ .m = m };
			continue;
		}
		uint64_t anon = kb_field(line, "Anonymous:");
		if (n && anon != UINT64_MAX)
			v[n - 1].anon = anon;
	}
	*out = v;
	return n;
}

static uint64_t rollup_anon(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
	if (ha_read_file(path, buf, sizeof buf) <= 0)
		return UINT64_MAX;
	const char *p = strstr(buf, "\nAnonymous:");
	return p ? kb_field(p + 1, "Anonymous:") : UINT64_MAX;
}

/* The resident bytes of malloc's mmapped chunks in a private anonymous
 * mapping (the kernel merges neighbours: chunks may sit anywhere in it,
 * beside other memory).  A chunk starts on a page with its header: prev_size
 * 0, size a whole number of pages with only IS_MMAPPED set.  The first 16
 * bytes of each resident page are read (through /proc/PID/mem), the pages
 * of a chunk found skipped; at most *budget pages, all mappings together. */
static uint64_t mmap_chunks_resident(int memfd, int pmfd, const struct ha_map *m,
                                     const struct ha_mem_glibc *g, uint64_t *budget)
{
	uint64_t *pm, r = 0;
	if (ha_mem_pagemap(pmfd, m->start, m->end, &pm) != 0)
		return 0;
	size_t np = (size_t)((m->end - m->start) / PG);
	for (size_t i = 0; i < np && *budget > 0;) {
		uint64_t addr = m->start + i * PG, h[2];
		if (!ha_mem_present(pm[i]) || (g && ha_mem_glibc_in_heap(g, addr))) {
			i++;
			continue;
		}
		(*budget)--;
		uint64_t sz;
		if (ha_mem_pread(memfd, addr, h, sizeof h) != 0 || h[0] != 0 || (h[1] & 7) != 2 ||
		    (sz = h[1] & ~7ULL) == 0 || sz % PG || sz / PG > np - i) {
			i++;
			continue;
		}
		for (size_t j = i; j < i + sz / PG; j++)
			if (ha_mem_present(pm[j]))
				r += PG;
		i += sz / PG;
	}
	free(pm);
	return r;
}

/* An allocator other than glibc's that the program maps (a library of its
 * own: Debian's redis-server on libjemalloc, LD_PRELOAD'ed tcmalloc or
 * mimalloc): its name and why it is not read, or NULL.  Its memory falls in
 * other_anon, and the allocator's name says so.  Their statistics are only
 * had by calling them inside the target (the agent's thread could: not
 * built), and their structures are not laid out for a reading from
 * outside as glibc's arenas are. */
static const char *other_allocator(const struct vma *v, size_t n)
{
	static const struct { const char *lib, *name; } known[] = {
		{ "libjemalloc", "jemalloc (not read: its stats need mallctl() called in the target" },
		{ "libtcmalloc", "tcmalloc (not read: its stats need MallocExtension called in the "
		                 "target" },
		{ "libmimalloc", "mimalloc (not read: its stats need mi_stats called in the target" },
	};
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(v[i].m.path, '/');
		for (size_t k = 0; base && k < sizeof known / sizeof known[0]; k++)
			if (strncmp(base + 1, known[k].lib, strlen(known[k].lib)) == 0)
				return known[k].name;
	}
	return NULL;
}

struct sampled {
	const struct ha_mem_glibc *g;
	double in_heaps, outside;          /* sampled live bytes in glibc's heaps, elsewhere */
	struct ha_mem_pin_acc pin;
};

static void each_live(void *ctx, uint64_t addr, uint64_t size, double weight, uint32_t bucket)
{
	struct sampled *s = ctx;
	if (s->g && ha_mem_glibc_in_heap(s->g, addr)) {
		s->in_heaps += weight * (double)size;
		ha_mem_pin_block(&s->pin, addr, size, weight, bucket);
	} else {
		s->outside += weight * (double)size;
	}
}

int ha_mem_view_read(pid_t pid, ha_mem_live_fn live, void *live_arg,
                     const struct ha_mem_alloc *alloc, struct ha_mem_view *out)
{
	memset(out, 0, sizeof *out);
	uint64_t t0 = now_ns();
	uint64_t rss_anon = rollup_anon(pid);
	if (rss_anon == UINT64_MAX)
		return -1;
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/smaps", (int)pid);
	size_t len;
	char *text = slurp(path, &len);
	if (!text)
		return -1;
	struct vma *v = NULL;
	size_t n = parse_smaps(text, &v);
	struct ha_map *maps = malloc((n ? n : 1) * sizeof *maps);
	if (!maps) {
		free_vmas(v, n);
		free(text);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		maps[i] = v[i].m;
	struct ha_maps hm = { maps, n };
	struct ha_mem_glibc g = { .want_pages = live != NULL };
	int have_glibc = ha_mem_glibc_read(pid, &hm, &g) == 0;
	out->rss_anon = rss_anon;
	ha_mem_cpus_read(pid, &out->cpus);
	snprintf(path, sizeof path, "/proc/%d/pagemap", (int)pid);
	int pmfd = open(path, O_RDONLY | O_CLOEXEC), memfd = ha_mem_open(pid);
	uint64_t budget = HEADER_BUDGET;
	/* malloc's mmapped chunks are glibc's: with another allocator read
	 * and no glibc heap, their search (a read of each resident page's
	 * first bytes, most of a snapshot's time) is skipped. */
	int scan_chunks = have_glibc || !alloc || alloc->kind == HA_ALLOC_NONE;

	for (size_t i = 0; i < n; i++) {
		const struct ha_map *m = &v[i].m;
		uint64_t anon = v[i].anon;
		if (anon == 0)
			continue;
		/* A thread arena's heap, or a mapping merged with some: the
		 * heaps' pages are the walk's, the rest is the mapping's. */
		if (have_glibc) {
			uint64_t h = ha_mem_glibc_resident_in(&g, m->start, m->end);
			if (h >= anon)
				continue;
			anon -= h;
		}
		if (strstr(m->path, "heapattach_agent")) {
			out->terms[HA_MT_PROFILER] += (int64_t)anon;
			continue;
		}
		int private_anon = !m->path[0] && !m->shared && (m->prot & PROT_WRITE);
		int guarded = i > 0 && v[i - 1].m.end == m->start && v[i - 1].m.prot == 0 &&
		              !v[i - 1].m.path[0];
		if (strcmp(m->path, "[stack]") == 0 || (private_anon && guarded)) {
			out->terms[HA_MT_THREAD_STACKS] += (int64_t)anon;
			continue;
		}
		uint64_t chunks = private_anon && pmfd >= 0 && memfd >= 0 && scan_chunks
		                  ? mmap_chunks_resident(memfd, pmfd, m, have_glibc ? &g : NULL, &budget)
		                  : 0;
		if (chunks > anon)
			chunks = anon;
		out->terms[HA_MT_MMAP_CHUNKS] += (int64_t)chunks;
		out->terms[HA_MT_OTHER_ANON] += (int64_t)(anon - chunks);
	}
	if (pmfd >= 0)
		close(pmfd);
	if (memfd >= 0)
		close(memfd);

	const char *other = other_allocator(v, n);
	const char *read = alloc ? ha_mem_alloc_name(alloc->kind) : NULL;
	struct sampled s = { have_glibc ? &g : NULL, 0, 0, { .pages = g.pages, .npages = g.npages } };
	if (live && (have_glibc || read))
		live(live_arg, each_live, &s);
	if (other && !read)
		snprintf(out->allocator, sizeof out->allocator, "%s; its memory in other_anon)%s", other,
		         have_glibc ? "; glibc" : "");
	if (have_glibc) {
		if (!other && !read)
			snprintf(out->allocator, sizeof out->allocator, "glibc");
		uint64_t in_use = 0;
		for (size_t k = 0; k < g.n; k++) {
			const struct ha_mem_arena *a = &g.arenas[k];
			in_use += a->in_use_resident;
			out->terms[HA_MT_FREE_TRIMMABLE] += (int64_t)a->trimmable;
			out->terms[HA_MT_FREE_PINNED] += (int64_t)a->pinned;
			out->terms[HA_MT_OVERHEAD] += (int64_t)(a->overhead_resident + a->top_kept);
		}
		out->npins = ha_mem_pin_take(&s.pin, &out->pins);
		uint64_t sampled = s.in_heaps <= 0 ? 0 : s.in_heaps >= (double)in_use ? in_use
		                   : (uint64_t)s.in_heaps;
		out->terms[HA_MT_LIVE_SAMPLED] = (int64_t)sampled;
		out->terms[HA_MT_LIVE_BEFORE] = (int64_t)(in_use - sampled);
		out->arenas = g.arenas;
		out->narenas = g.n;
		g.arenas = NULL;
		out->walk_ns = g.walk_ns;
		ha_mem_glibc_free(&g);
	} else if (!other && !read) {
		snprintf(out->allocator, sizeof out->allocator, "unknown (no glibc heap found)");
	}
	if (read) {
		/* Its memory is in other_anon: the allocator's figures say
		 * what it is (mem_alloc.c). */
		char name[sizeof out->allocator];
		ha_mem_alloc_terms(alloc, s.outside, out->terms, name, sizeof name);
		if (have_glibc)
			snprintf(out->allocator, sizeof out->allocator, "%.150s; glibc", name);
		else
			snprintf(out->allocator, sizeof out->allocator, "%s", name);
		struct ha_mem_arena rows[HA_ALLOC_ARENAS_MAX];
		size_t nr = ha_mem_alloc_arenas(alloc, rows, HA_ALLOC_ARENAS_MAX);
		struct ha_mem_arena *all = nr ? realloc(out->arenas, (out->narenas + nr) * sizeof *all)
		                              : NULL;
		if (all) {
			memcpy(all + out->narenas, rows, nr * sizeof *rows);
			out->arenas = all;
			out->narenas += nr;
			out->alloc_arenas = nr;
		}
		out->alloc_kind = alloc->kind;
		out->alloc_ns = alloc->ns;
	}
	int64_t sum = 0;
	for (int t = 0; t < HA_MT_UNEXPLAINED; t++)
		sum += out->terms[t];
	out->terms[HA_MT_UNEXPLAINED] = (int64_t)rss_anon - sum;
	free(maps);
	free_vmas(v, n);
	free(text);
	out->cost_ns = now_ns() - t0;
	return 0;
}

void ha_mem_view_free(struct ha_mem_view *v)
{
	free(v->arenas);
	free(v->pins);
	memset(v, 0, sizeof *v);
}
