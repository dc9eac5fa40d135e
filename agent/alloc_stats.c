/* alloc_stats.c -- the statistics of an allocator other than glibc's, read
 * by calling it on the agent's thread when the attacher asks at a snapshot
 * (HA_MSG_ALLOC_ASK; issue 41), and the trim of that allocator.
 *
 * glibc's arenas are read from outside (src/rss/mem_glibc.c); jemalloc's,
 * tcmalloc's and mimalloc's structures are not laid out for that, but each
 * has an API that says what it holds.  Which allocator serves the program
 * is searched for in the modules' symbol tables until found, in this
 * order: mallctl (jemalloc: LD_PRELOAD'ed, or linked as Debian's
 * redis-server links libjemalloc.so.2), MallocExtension_GetNumericProperty
 * (gperftools' tcmalloc), mi_process_info (mimalloc).  None: NONE.
 *
 * Only on the agent's thread, never in a hook, with no lock of ours held:
 * the calls take the allocator's own locks (jemalloc's "epoch" merges every
 * arena's stats under its mutexes), so the program's threads may wait for
 * them a moment; the time is measured (CLOCK_THREAD_CPUTIME_ID, the agent
 * thread's CPU time) and sent with the figures.  No stdio, no allocation of
 * ours: the names of per-arena controls are made in a stack buffer. */
#define _GNU_SOURCE
#include "alloc_stats.h"

#include <link.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "elfmod.h"
#include "forklock.h"
#include "msg.h"

/* The entry points searched for, first definition in load order (what a
 * call from the program binds to), in the modules' own symbol tables
 * (elfmod.h) rather than through dlsym: a dlsym that fails allocates its
 * error message, and glibc would then give the agent's thread an arena of
 * its own, which the memory view would count. */
enum { S_MALLCTL, S_TC_GET, S_TC_RELEASE, S_MI_INFO, S_MI_COLLECT, S_COUNT };
static const char *const sym_names[S_COUNT] = {
	"mallctl", "MallocExtension_GetNumericProperty", "MallocExtension_ReleaseFreeMemory",
	"mi_process_info", "mi_collect",
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t *addr = data;
	struct ha_mod m;
	(void)size;
	if (ha_mod_skip(info) || !ha_mod_parse(info, &m))
		return 0;
	for (int i = 0; i < S_COUNT; i++)
		if (!addr[i])
			addr[i] = ha_mod_lookup(&m, sym_names[i]);
	return 0;
}

static int find(struct ha_alloc_fns *f)
{
	uintptr_t a[S_COUNT] = { 0 };
	ha_fork_lock();
	(void)dl_iterate_phdr(find_cb, a);
	ha_fork_unlock();
	if ((f->mallctl = (ha_mallctl_fn)a[S_MALLCTL]))
		return f->kind = HA_ALLOC_JEMALLOC;
	if ((f->tc_get = (ha_tc_get_fn)a[S_TC_GET])) {
		f->tc_release = (void (*)(void))a[S_TC_RELEASE];
		return f->kind = HA_ALLOC_TCMALLOC;
	}
	if ((f->mi_info = (ha_mi_info_fn)a[S_MI_INFO])) {
		f->mi_collect = (void (*)(bool))a[S_MI_COLLECT];
		return f->kind = HA_ALLOC_MIMALLOC;
	}
	return f->kind = HA_ALLOC_NONE;
}

/* What the first successful search found: an allocator serving the
 * program is never unloaded (its blocks would outlive it), so it is
 * searched for once.  Written and read on the agent's thread only. */
static struct ha_alloc_fns g_found;

int ha_alloc_find(struct ha_alloc_fns *f)
{
	if (g_found.kind != HA_ALLOC_NONE) {
		*f = g_found;
		return f->kind;
	}
	memset(f, 0, sizeof *f);
	int kind = find(f);
	g_found = *f;
	return kind;
}

/* "stats.arenas.<i>.<leaf>" into buf (64 bytes). */
static const char *arena_name(char *buf, unsigned i, const char *leaf)
{
	static const char pre[] = "stats.arenas.";
	char num[12];
	int n = 0;
	do
		num[n++] = (char)('0' + i % 10);
	while ((i /= 10) && n < 11);
	size_t k = sizeof pre - 1, ll = strlen(leaf);
	memcpy(buf, pre, k);
	while (n)
		buf[k++] = num[--n];
	buf[k++] = '.';
	if (k + ll + 1 > 64)
		ll = 64 - k - 1;
	memcpy(buf + k, leaf, ll);
	buf[k + ll] = '\0';
	return buf;
}

static int je_size(ha_mallctl_fn ctl, const char *name, uint64_t *out)
{
	size_t v = 0, len = sizeof v;
	if (ctl(name, &v, &len, NULL, 0) != 0 || len != sizeof v)
		return 0;
	*out = v;
	return 1;
}

static int je_uint(ha_mallctl_fn ctl, const char *name, uint64_t *out)
{
	unsigned v = 0;
	size_t len = sizeof v;
	if (ctl(name, &v, &len, NULL, 0) != 0 || len != sizeof v)
		return 0;
	*out = v;
	return 1;
}

/* 1, 0, or -1 when it cannot be read. */
static int je_bool(ha_mallctl_fn ctl, const char *name)
{
	bool b = 0;
	size_t len = sizeof b;
	if (ctl(name, &b, &len, NULL, 0) != 0 || len != sizeof b)
		return -1;
	return b;
}

/* Large blocks live in the arena whose stats name starts with prefix
 * ("stats.arenas.<i>."): large.nmalloc - large.ndalloc, UINT64_MAX if
 * unread. */
static uint64_t large_blocks(ha_mallctl_fn ctl, const char *prefix)
{
	char name[64];
	size_t k = strlen(prefix);
	uint64_t nm = 0, nd = 0;
	size_t len = sizeof nm;
	if (k + sizeof "large.nmalloc" > sizeof name)
		return UINT64_MAX;
	memcpy(name, prefix, k);
	memcpy(name + k, "large.nmalloc", sizeof "large.nmalloc");
	if (ctl(name, &nm, &len, NULL, 0) != 0 || len != sizeof nm)
		return UINT64_MAX;
	memcpy(name + k, "large.ndalloc", sizeof "large.ndalloc");
	if (ctl(name, &nd, &len, NULL, 0) != 0 || len != sizeof nd || nd > nm)
		return UINT64_MAX;
	return nm - nd;
}

struct je_arenas {
	uint64_t v[HA_ALLOC_ARENAS_MAX][HA_JA_VALUES];
	unsigned n;
};

static void read_jemalloc(ha_mallctl_fn ctl, struct ha_msg_alloc_stats *a, struct je_arenas *ar)
{
	uint64_t epoch = 1;
	size_t elen = sizeof epoch;
	(void)ctl("epoch", &epoch, &elen, &epoch, sizeof epoch);
	static const char *const totals[] = {
		[HA_J_ALLOCATED] = "stats.allocated", [HA_J_ACTIVE] = "stats.active",
		[HA_J_RESIDENT] = "stats.resident", [HA_J_MAPPED] = "stats.mapped",
		[HA_J_RETAINED] = "stats.retained", [HA_J_METADATA] = "stats.metadata",
	};
	for (int i = 0; i < HA_J_DIRTY; i++)
		if (je_size(ctl, totals[i], &a->v[i]))
			a->have |= 1u << i;
	uint64_t page = 0, narenas = 0, pages;
	if (je_size(ctl, "arenas.page", &page) && page) {
		a->v[HA_J_PAGE] = page;
		a->have |= 1u << HA_J_PAGE;
		/* 4096: MALLCTL_ARENAS_ALL, every arena's stats merged */
		if (je_size(ctl, "stats.arenas.4096.pdirty", &pages)) {
			a->v[HA_J_DIRTY] = pages * page;
			a->have |= 1u << HA_J_DIRTY;
		}
		if (je_size(ctl, "stats.arenas.4096.pmuzzy", &pages)) {
			a->v[HA_J_MUZZY] = pages * page;
			a->have |= 1u << HA_J_MUZZY;
		}
	}
	int oblivious = je_bool(ctl, "opt.cache_oblivious");
	if (oblivious < 0)
		oblivious = je_bool(ctl, "config.cache_oblivious");
	uint64_t large = oblivious == 1 && page ? large_blocks(ctl, "stats.arenas.4096.") : 0;
	if (large != UINT64_MAX && oblivious >= 0) {
		a->v[HA_J_LARGE_PAD] = large * page;
		a->have |= 1u << HA_J_LARGE_PAD;
	}
	if (!je_uint(ctl, "arenas.narenas", &narenas) || !page)
		return;
	a->narenas = narenas > UINT32_MAX ? UINT32_MAX : (uint32_t)narenas;
	/* The arenas in use (an arena never initialised has no stats: its
	 * reads fail), the first HA_ALLOC_ARENAS_MAX of them. */
	char name[64];
	for (unsigned i = 0; i < narenas && i < 4096 && ar->n < HA_ALLOC_ARENAS_MAX; i++) {
		uint64_t *v = ar->v[ar->n], small = 0, large = 0, act = 0, dirty = 0, muzzy = 0;
		if (!je_size(ctl, arena_name(name, i, "pactive"), &act))
			continue;
		(void)je_uint(ctl, arena_name(name, i, "nthreads"), &v[HA_JA_THREADS]);
		(void)je_size(ctl, arena_name(name, i, "pdirty"), &dirty);
		(void)je_size(ctl, arena_name(name, i, "pmuzzy"), &muzzy);
		(void)je_size(ctl, arena_name(name, i, "small.allocated"), &small);
		(void)je_size(ctl, arena_name(name, i, "large.allocated"), &large);
		if (act == 0 && dirty == 0 && muzzy == 0 && v[HA_JA_THREADS] == 0)
			continue;
		v[HA_JA_INDEX] = i;
		uint64_t pad = 0;
		if (oblivious == 1) {
			arena_name(name, i, "");
			pad = large_blocks(ctl, name);
			pad = pad == UINT64_MAX || pad > act ? 0 : pad;
		}
		v[HA_JA_ACTIVE] = (act - pad) * page;
		v[HA_JA_ALLOCATED] = small + large;
		v[HA_JA_DIRTY] = dirty * page;
		v[HA_JA_MUZZY] = muzzy * page;
		ar->n++;
	}
}

static void read_tcmalloc(ha_tc_get_fn get, struct ha_msg_alloc_stats *a)
{
	static const char *const props[] = {
		[HA_T_ALLOCATED] = "generic.current_allocated_bytes",
		[HA_T_HEAP_SIZE] = "generic.heap_size",
		[HA_T_PAGEHEAP_FREE] = "tcmalloc.pageheap_free_bytes",
		[HA_T_PAGEHEAP_UNMAPPED] = "tcmalloc.pageheap_unmapped_bytes",
		[HA_T_CENTRAL_FREE] = "tcmalloc.central_cache_free_bytes",
		[HA_T_TRANSFER_FREE] = "tcmalloc.transfer_cache_free_bytes",
		[HA_T_THREAD_FREE] = "tcmalloc.thread_cache_free_bytes",
		[HA_T_PHYSICAL] = "generic.total_physical_bytes",
	};
	for (int i = 0; i < HA_T_COUNT; i++) {
		size_t v = 0;
		if (get(props[i], &v)) {
			a->v[i] = v;
			a->have |= 1u << i;
		}
	}
}

static void read_mimalloc(ha_mi_info_fn info, struct ha_msg_alloc_stats *a)
{
	size_t elapsed = 0, user = 0, sys = 0, rss = 0, peak_rss = 0, commit = 0, peak_commit = 0,
	       faults = 0;
	info(&elapsed, &user, &sys, &rss, &peak_rss, &commit, &peak_commit, &faults);
	a->v[HA_M_COMMIT] = commit;
	a->v[HA_M_PEAK_COMMIT] = peak_commit;
	a->v[HA_M_RSS] = rss;
	a->v[HA_M_PEAK_RSS] = peak_rss;
	a->have = (1u << HA_M_COUNT) - 1;
}

static uint64_t thread_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* The arena table is 24 KiB: static (one caller, the agent's thread),
 * not on its stack. */
static struct je_arenas g_arenas;

void ha_alloc_stats_reply(int sock, uint32_t seq)
{
	struct ha_msg m;
	ha_msg_init(&m, HA_MSG_ALLOC_STATS);
	struct ha_msg_alloc_stats *a = &m.u.alloc;
	a->seq = seq;
	a->parts = 1;
	uint64_t t0 = thread_ns();
	struct ha_alloc_fns f;
	a->kind = (uint16_t)ha_alloc_find(&f);
	g_arenas.n = 0;
	if (f.kind == HA_ALLOC_JEMALLOC)
		read_jemalloc(f.mallctl, a, &g_arenas);
	else if (f.kind == HA_ALLOC_TCMALLOC)
		read_tcmalloc(f.tc_get, a);
	else if (f.kind == HA_ALLOC_MIMALLOC)
		read_mimalloc(f.mi_info, a);
	a->ns = thread_ns() - t0;
	uint16_t parts = (uint16_t)(1 + (g_arenas.n + HA_ALLOC_ARENAS_PER_MSG - 1) /
	                            HA_ALLOC_ARENAS_PER_MSG);
	a->parts = parts;
	if (ha_msg_send(sock, &m) != 0)
		return;
	for (uint16_t p = 1; p < parts; p++) {
		ha_msg_init(&m, HA_MSG_ALLOC_STATS);
		a->seq = seq;
		a->kind = (uint16_t)f.kind;
		a->part = p;
		a->parts = parts;
		unsigned first = (unsigned)(p - 1) * HA_ALLOC_ARENAS_PER_MSG;
		for (unsigned k = 0; k < HA_ALLOC_ARENAS_PER_MSG && first + k < g_arenas.n; k++) {
			memcpy(&a->v[(size_t)k * HA_JA_VALUES], g_arenas.v[first + k], sizeof g_arenas.v[0]);
			a->count++;
		}
		if (ha_msg_send(sock, &m) != 0)
			return;
	}
}
