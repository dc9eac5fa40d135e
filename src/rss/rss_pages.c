/* rss_pages.c -- attributed pages and their residency (see rss_pages.h).
 *
 * The pages live in a dense array (a check walks all of them) with an
 * index by page number (hashtab.h: slots are index + 1 into the array).  A check sorts them by address and
 * reads /proc/PID/pagemap in spans: neighbouring pages (at most GAP_PAGES
 * apart) cost one pread of their entries.  Reading only the sampled pages
 * keeps a check cheap: 1 GiB of 4 KiB first touches at the default period
 * is ~1,000 pages (doc/design.md, "Page faults, measured here").
 *
 * What a page's fault mapped is decided at its first check: a transparent
 * huge page (PAGEMAP_SCAN's PAGE_IS_HUGE where the kernel has the ioctl,
 * Linux >= 6.7; else the THP flag of its frame in /proc/kpageflags, which
 * needs the frame numbers root sees), the shared zero page (PAGE_IS_PFNZERO,
 * or the frame the zero page has in our own address space), or a 4 KiB
 * page.  Without either source of the size (no ioctl, not root) every page
 * counts as 4 KiB and huge pages are undercounted. */
#define _GNU_SOURCE
#include "rss_pages.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hashtab.h"
#include "util.h"

#define PAGE 4096ULL
#define HUGE_SIZE (2ULL << 20)
#define HUGE_PAGES (HUGE_SIZE / PAGE)
#define GAP_PAGES 64         /* pages this close share one pread */
#define SPAN_MAX 8192        /* pagemap entries per pread (64 KiB) */

/* /proc/PID/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAPPED (1ULL << 62)
#define PM_FILE (1ULL << 61)  /* file page or shared anonymous */
#define PM_PFN_MASK ((1ULL << 55) - 1)
#define KPF_THP 22

/* The PAGEMAP_SCAN ioctl (Linux 6.7); Linux 6.1's headers lack it. */
struct pm_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PM_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PM_IS_FILE (1 << 2)
#define PM_IS_PRESENT (1 << 3)
#define PM_IS_SWAPPED (1 << 4)
#define PM_IS_PFNZERO (1 << 5)
#define PM_IS_HUGE (1 << 6)

struct page {
	uint64_t pn;              /* page number (va / 4 KiB); a huge window's first */
	uint32_t bucket, swap_bucket;
	double weight;
	double rss, swap;         /* bytes booked in the buckets now */
	uint8_t checked;          /* its size was decided */
	uint8_t huge;             /* a 2 MiB window */
};

struct ha_rss_pages {
	pid_t pid;
	struct ha_rss_owner owner;  /* where the bytes are booked */
	struct page *v;
	size_t n, cap;
	struct ha_hashtab idx;    /* index + 1 into v by pn (idx_type) */
	int pagemap;              /* fd, -1 until opened */
	int kpageflags;           /* fd, -1 if not readable */
	int scan_ioctl;           /* 1 works, 0 untried, -1 not there */
	uint64_t zero_pfn;        /* 0: unknown */
	uint64_t *ents;           /* SPAN_MAX pagemap entries */
	struct ha_rss_stats st;
};

static uint64_t pn_hash(uint64_t pn)
{
	return ha_mix64(pn + 1);
}

static uint64_t idx_hash(const void *ctx, const void *slot)
{
	const struct ha_rss_pages *p = ctx;
	return pn_hash(p->v[*(const uint32_t *)slot - 1].pn);
}

static inline int idx_eq(const void *ctx, const void *slot, const void *key)
{
	const struct ha_rss_pages *p = ctx;
	return p->v[*(const uint32_t *)slot - 1].pn == *(const uint64_t *)key;
}

static const struct ha_ht_type idx_type = {
	.size = sizeof(uint32_t), .first_cap = 2048, .hash = idx_hash, .eq = idx_eq,
};

/* The index slot of pn, or the empty slot ending its chain. */
static uint32_t *find_slot(const struct ha_rss_pages *p, uint64_t pn)
{
	return ha_ht_find(&p->idx, &idx_type, p, pn_hash(pn), &pn);
}

static struct page *find(struct ha_rss_pages *p, uint64_t pn)
{
	uint32_t i = *find_slot(p, pn);
	return i ? &p->v[i - 1] : NULL;
}

/* Index every page of v anew (after the array was sorted). */
static void reindex(struct ha_rss_pages *p)
{
	ha_ht_clear(&p->idx, &idx_type);
	for (size_t i = 0; i < p->n; i++) {
		uint32_t *slot = ha_ht_add_new(&p->idx, &idx_type, p, pn_hash(p->v[i].pn));
		*slot = (uint32_t)(i + 1); /* no growth: as many pages as before */
	}
}

static struct page *insert(struct ha_rss_pages *p, uint64_t pn)
{
	struct page *nv = ha_grow(p->v, &p->cap, p->n + 1, sizeof *nv, 1024);
	if (!nv)
		return NULL;
	p->v = nv;
	uint32_t *slot = ha_ht_add_new(&p->idx, &idx_type, p, pn_hash(pn));
	if (!slot)
		return NULL;
	struct page *pg = &p->v[p->n++];
	memset(pg, 0, sizeof *pg);
	pg->pn = pn;
	*slot = (uint32_t)p->n;
	return pg;
}

static void book_page(struct ha_rss_pages *p, struct page *pg, uint64_t res, uint64_t swp);

/* Take back what pg has booked. */
static void unbook(struct ha_rss_pages *p, struct page *pg)
{
	if (pg->rss > 0)
		p->owner.lose(p->owner.arg, pg->bucket, pg->rss);
	if (pg->swap > 0 && pg->swap_bucket)
		p->owner.lose(p->owner.arg, pg->swap_bucket, pg->swap);
	pg->rss = pg->swap = 0;
}

/* Unbook and forget pg (the last page moves into its place). */
static void forget(struct ha_rss_pages *p, struct page *pg)
{
	unbook(p, pg);
	ha_ht_delete(&p->idx, &idx_type, p, find_slot(p, pg->pn));
	size_t i = (size_t)(pg - p->v), last = p->n - 1;
	if (i != last) {
		p->v[i] = p->v[last];
		*find_slot(p, p->v[i].pn) = (uint32_t)(i + 1);
	}
	p->n--;
}

/* The frame of the shared zero page, as our own reads of untouched memory
 * map it (frame numbers read as 0 without CAP_SYS_ADMIN: unknown).  Two
 * pages of one mapping, both still mapped when their frames are read:
 * only the zero page gives both the same frame.  A kernel that maps no
 * zero page (a PVM guest booted with pvm_no_zero_page) gives each read a
 * page of its own, and the frame of one freed again would be anybody's
 * next page: 0, none. */
static uint64_t learn_zero_pfn(void)
{
	uint64_t ent[2] = { 0, 0 }, pfn = 0;
	volatile char *m = mmap(NULL, 2 * PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	(void)m[0];
	(void)m[PAGE];
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, ent, sizeof ent, (off_t)((uintptr_t)m / PAGE * 8)) == sizeof ent &&
	    (ent[0] & PM_PRESENT) && (ent[1] & PM_PRESENT) &&
	    (ent[0] & PM_PFN_MASK) == (ent[1] & PM_PFN_MASK))
		pfn = ent[0] & PM_PFN_MASK;
	if (fd >= 0)
		close(fd);
	munmap((void *)m, 2 * PAGE);
	return pfn;
}

struct ha_rss_pages *ha_rss_pages_new(pid_t pid, const struct ha_rss_owner *owner)
{
	struct ha_rss_pages *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->pid = pid;
	p->owner = *owner;
	ha_ht_init(&p->idx);
	p->ents = malloc(SPAN_MAX * sizeof *p->ents);
	if (ha_ht_alloc(&p->idx, &idx_type) != 0 || !p->ents) {
		ha_rss_pages_free(p);
		return NULL;
	}
	p->pagemap = -1;
	p->kpageflags = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	p->zero_pfn = learn_zero_pfn();
	return p;
}

void ha_rss_pages_free(struct ha_rss_pages *p)
{
	if (!p)
		return;
	if (p->pagemap >= 0)
		close(p->pagemap);
	if (p->kpageflags >= 0)
		close(p->kpageflags);
	free(p->v);
	ha_ht_free(&p->idx);
	free(p->ents);
	free(p);
}

void ha_rss_fault(struct ha_rss_pages *p, uint64_t addr, uint32_t bucket, double weight)
{
	uint64_t pn = addr / PAGE;
	if (!bucket || !addr)
		return;
	/* The page itself, or the huge page it is part of. */
	struct page *pg = find(p, pn);
	if (!pg) {
		pg = find(p, addr / HUGE_SIZE * HUGE_PAGES);
		if (pg && !pg->huge)
			pg = NULL;
	}
	if (pg)
		forget(p, pg);
	pg = insert(p, pn);
	if (!pg)
		return;
	pg->bucket = bucket;
	pg->weight = weight;
	/* Booked at once as one 4 KiB page made resident (so that a page
	 * dropped before the next check still shows as made resident, and
	 * live totals move between snapshots); the check corrects it. */
	book_page(p, pg, 1, 0);
}

/* ------------------------------------------------------------ first check */

/* PAGEMAP_SCAN categories of one page (-1: the ioctl is not there, or the
 * page could not be scanned). */
static long scan_page(struct ha_rss_pages *p, uint64_t pn)
{
	if (p->scan_ioctl < 0)
		return -1;
	struct pm_region r = { 0, 0, 0 };
	struct pm_scan_arg a = { .size = sizeof a, .start = pn * PAGE, .end = (pn + 1) * PAGE,
	                         .vec = (uintptr_t)&r, .vec_len = 1,
	                         .return_mask = PM_IS_FILE | PM_IS_PRESENT | PM_IS_SWAPPED |
	                                        PM_IS_PFNZERO | PM_IS_HUGE };
	long n = ioctl(p->pagemap, PM_SCAN, &a);
	if (n < 0) {
		if (errno == ENOTTY || errno == EINVAL || errno == EOPNOTSUPP)
			p->scan_ioctl = -1;
		return -1;
	}
	p->scan_ioctl = 1;
	return n == 0 ? 0 : (long)r.categories;
}

/* The kpageflags of a frame (0 when unknown). */
static uint64_t frame_flags(const struct ha_rss_pages *p, uint64_t pfn)
{
	uint64_t fl = 0;
	if (p->kpageflags < 0 || !pfn || pread(p->kpageflags, &fl, 8, (off_t)(pfn * 8)) != 8)
		return 0;
	return fl;
}

/* Decide what pg's fault mapped.  Returns 0 if pg stayed where it was, 1 if
 * the array changed at its place (it was forgotten: the zero page; or it
 * moved, as a huge page's window, to the end, checked). */
static int first_check(struct ha_rss_pages *p, struct page *pg)
{
	int huge = 0, zero = 0;
	long cat = scan_page(p, pg->pn);
	if (cat >= 0) {
		huge = (cat & PM_IS_HUGE) && (cat & PM_IS_PRESENT);
		zero = (cat & PM_IS_PFNZERO) != 0;
	} else {
		uint64_t ent = 0;
		if (pread(p->pagemap, &ent, 8, (off_t)(pg->pn * 8)) == 8 && (ent & PM_PRESENT)) {
			uint64_t pfn = ent & PM_PFN_MASK;
			zero = pfn && pfn == p->zero_pfn;
			huge = !zero && (frame_flags(p, pfn) >> KPF_THP & 1);
		}
	}
	pg->checked = 1;
	if (zero) {
		p->st.zero++;
		forget(p, pg);
		return 1;
	}
	if (huge) {
		/* Counted once, as its window: a second sample in the same huge
		 * page (a re-touch after it was dropped) replaces the first. */
		uint64_t win = pg->pn / HUGE_PAGES * HUGE_PAGES;
		struct page *old = find(p, win);
		if (old && old != pg)
			forget(p, old);
		/* forget() may have moved pg: find it again by its number. */
		uint64_t pn = pg->pn;
		pg = find(p, pn);
		struct page keep = *pg;
		forget(p, pg); /* unbooks it: the window books anew */
		keep.rss = keep.swap = 0;
		struct page *h = insert(p, win);
		if (!h)
			return 1;
		*h = keep;
		h->pn = win;
		h->huge = 1;
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------ residency */

static int by_pn(const void *a, const void *b)
{
	uint64_t x = ((const struct page *)a)->pn, y = ((const struct page *)b)->pn;
	return x < y ? -1 : x > y;
}

/* Book pg at res resident and swp swapped 4 KiB pages. */
static void book_page(struct ha_rss_pages *p, struct page *pg, uint64_t res, uint64_t swp)
{
	double rss = (double)res * PAGE * pg->weight, swap = (double)swp * PAGE * pg->weight;
	if (rss > pg->rss)
		p->owner.gain(p->owner.arg, pg->bucket, rss - pg->rss);
	else if (rss < pg->rss)
		p->owner.lose(p->owner.arg, pg->bucket, pg->rss - rss);
	pg->rss = rss;
	if (swap != pg->swap && !pg->swap_bucket)
		pg->swap_bucket = p->owner.swap_bucket(p->owner.arg, pg->bucket);
	if (!pg->swap_bucket)
		return;
	if (swap > pg->swap)
		p->owner.gain(p->owner.arg, pg->swap_bucket, swap - pg->swap);
	else if (swap < pg->swap)
		p->owner.lose(p->owner.arg, pg->swap_bucket, pg->swap - swap);
	pg->swap = swap;
}

/* Read the pagemap entries [first, first + n) into p->ents (n <= SPAN_MAX).
 * Entries past a short read (the end of the address space) are 0. */
static int read_span(struct ha_rss_pages *p, uint64_t first, size_t n)
{
	size_t got = 0;
	while (got < n * 8) {
		ssize_t r = pread(p->pagemap, (char *)p->ents + got, n * 8 - got,
		                  (off_t)(first * 8 + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	memset((char *)p->ents + got, 0, n * 8 - got);
	return 0;
}

/* Count pg's resident and swapped pages from the span's entries; returns 1
 * if pg is to be forgotten (no page left, or file-backed). */
static int count_page(struct ha_rss_pages *p, struct page *pg, uint64_t span_first)
{
	uint64_t res = 0, swp = 0, file = 0, npages = pg->huge ? HUGE_PAGES : 1;
	for (uint64_t k = 0; k < npages; k++) {
		uint64_t e = p->ents[pg->pn - span_first + k];
		if (e & PM_FILE)
			file += (e & (PM_PRESENT | PM_SWAPPED)) != 0;
		else if (e & PM_PRESENT)
			res += !(p->zero_pfn && (e & PM_PFN_MASK) == p->zero_pfn);
		else if (e & PM_SWAPPED)
			swp++;
	}
	book_page(p, pg, res, swp);
	if (res || swp)
		return 0;
	if (file)
		p->st.file++;
	else
		p->st.dropped++;
	return 1;
}

int ha_rss_check(struct ha_rss_pages *p)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (p->pagemap < 0) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/pagemap", (int)p->pid);
		p->pagemap = open(path, O_RDONLY | O_CLOEXEC);
		if (p->pagemap < 0)
			return -1;
	}
	/* A process that is gone reads as nothing resident: keep what the
	 * last check found rather than book it all as dropped. */
	uint64_t probe;
	if (p->n && pread(p->pagemap, &probe, 8, 0) != 8)
		return -1;
	for (size_t i = 0; i < p->n;)
		if (p->v[i].checked || !first_check(p, &p->v[i]))
			i++;
	/* Sorted by address (the index is rebuilt after), then span by span. */
	if (p->n > 1)
		qsort(p->v, p->n, sizeof *p->v, by_pn);
	uint8_t *drop = calloc(p->n ? p->n : 1, 1);
	if (!drop)
		return -1;
	for (size_t i = 0; i < p->n;) {
		uint64_t first = p->v[i].pn, last = first + (p->v[i].huge ? HUGE_PAGES : 1);
		size_t j = i + 1;
		for (; j < p->n; j++) {
			uint64_t end = p->v[j].pn + (p->v[j].huge ? HUGE_PAGES : 1);
			if (p->v[j].pn > last + GAP_PAGES || end - first > SPAN_MAX)
				break;
			if (end > last)
				last = end;
		}
		if (read_span(p, first, (size_t)(last - first)) < 0) {
			free(drop);
			return -1;
		}
		for (; i < j; i++)
			drop[i] = (uint8_t)count_page(p, &p->v[i], first);
	}
	/* Forget the dropped ones: compact, then rebuild the index. */
	size_t kept = 0;
	p->st.huge = 0;
	for (size_t i = 0; i < p->n; i++)
		if (!drop[i]) {
			p->st.huge += p->v[i].huge;
			p->v[kept++] = p->v[i];
		}
	free(drop);
	p->n = kept;
	reindex(p);
	p->st.pages = p->n;
	p->st.scan_ioctl = p->scan_ioctl > 0;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	p->st.check_ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
	return 0;
}

void ha_rss_use_scan(struct ha_rss_pages *p, int on)
{
	p->scan_ioctl = on ? 0 : -1;
}

void ha_rss_stats(const struct ha_rss_pages *p, struct ha_rss_stats *out)
{
	*out = p->st;
}
