/*
 * hooks.c -- the replacements installed in GOT slots: malloc, free, calloc,
 * realloc, reallocarray, the memalign family, free_sized, C++ operator new
 * and delete in every variant, jemalloc's *allocx, anonymous mmap / munmap /
 * mremap (their own kind of memory), and dlopen and vfork (stubs.c).
 *
 * The path that does not sample: bump a per-thread call counter, subtract
 * the size from the per-thread sampling countdown (or, for a free, look the
 * address's page up in the live set's filter), then jump to the real
 * function: a tail call, no frame of ours while the allocator runs.  Only
 * when the countdown runs out does an out-of-line slow path call the real
 * function itself and have sampler.c capture a stack and write to the ring;
 * only a free of a block the filter may hold goes there too.  errno and the
 * return value are exactly what the real function left: nothing on the
 * fast path can change errno, and the sampling path saves it.
 *
 * Counted once: the slow paths, and the hooks that are not tail calls,
 * raise the per-thread depth ha_depth around their real call; a hook
 * entered with ha_depth > 0 (reallocarray calling realloc, a signal
 * handler interrupting one of them) only forwards.  operator new delegates
 * to the malloc hook it reaches through libstdc++'s GOT (see NEW1),
 * operator delete to the free hook (both only look at the filter
 * themselves, so a replacement operator that does not call malloc or free
 * is still seen).  operator new may throw: nothing of ours is left to undo
 * (the agent is built with -fexceptions, so the C++ unwinder passes through
 * our frame).  The tail-calling hooks cannot raise the depth; nothing we
 * hook is reached from inside them through a GOT slot (glibc's allocator
 * calls mmap directly, and got.c does not hook mmap & co in a module that
 * provides malloc itself: jemalloc's or tcmalloc's own mappings are their
 * heap, already counted block by block).
 *
 * MUSL_NESTED: musl's libc calls its own allocation functions through its
 * GOT, which is patched like any module's (its strdup's malloc is the
 * program's allocation): calloc calls malloc, reallocarray realloc,
 * posix_memalign and memalign aligned_alloc, valloc memalign.  In the
 * agent of musl targets (HA_LIBC_MUSL) the calloc hook therefore raises
 * the depth around its real call too, and the malloc and realloc hooks
 * only forward at depth > 0 (their countdown would count the block a
 * second time); the others already do.  The glibc agent's hooks are
 * unchanged by this (glibc calls its internal functions directly).
 *
 * Mappings: only anonymous ones, and not PROT_NONE reservations (address
 * space, not memory).  They share the countdown with the heap (sampled on
 * their length) and are recorded with kind HA_REC_KIND_MMAP, keyed by their
 * start address.  munmap(addr, len) sends the free of every sampled mapping
 * whose START lies in [addr, addr + len): a partial munmap that leaves the
 * start mapped keeps the whole mapping live, one that removes the start
 * frees all of it (documented choice: a mapping is counted whole, as it was
 * sampled).  The scan looks at the filter's count of each page, for at most
 * HA_UNMAP_SCAN_PAGES pages (and only once a mapping was sampled in the
 * session); the first page is always looked at.  MAP_FIXED over existing
 * pages unmaps them first, the same way.  mremap is treated like realloc:
 * the old mapping's free if it was sampled, then the result goes through
 * the countdown with its new length (a file mapping moved by mremap is rare
 * and counted as mmap too).
 *
 * dlopen and vfork: assembler stubs of their own (stubs.c), in the table
 * below like the others.
 *
 * The park (park.c): a reachability scan asks the threads to wait at a
 * hook's entry, outside the allocator.  A hook tests ha_hot.park, a word on
 * the line that holds ha_real[] of malloc, free, calloc and realloc (the
 * line its own jump reads): one load, one branch not taken; the hot hooks
 * wait out of line (X_parked) and keep their tail call.  operator new and
 * delete mark the thread so that their real function's malloc or free
 * does not park inside them.
 *
 * Why this is safe at any time, including after detach:
 *   - the hooks read ha_real[] (set once before any slot points at a hook,
 *     never cleared), per-thread state and the live-set occupancy table, all
 *     of which live as long as the process (the agent is never unloaded and
 *     the live set is never unmapped);
 *   - the ring is only touched inside sampler.c's in-flight section, which
 *     ha_sampler_stop() drains before the ring is unmapped.
 */
#define _GNU_SOURCE
#include "hooks.h"

#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/types.h>

#include "counters.h"
#include "liveset.h"
#include "park.h"
#include "sampler.h"
#include "stubs.h"
#include "tls.h"

/* Real functions, indexed by enum ha_hook_fn.  Written once (CAS from 0), read
 * with acquire in the hooks.  After the park's word, in one aligned block:
 * the park's word and the real malloc, free, calloc and realloc share the
 * first line (see "The park" above). */
static struct {
	uint32_t park;                 /* nonzero: a park is asked (the attacher's) */
	uintptr_t real[HA_HOOK_COUNT];
} ha_hot __attribute__((aligned(64)));
#define ha_real ha_hot.real
_Static_assert(offsetof(__typeof__(ha_hot), real) + (HA_HOOK_REALLOC + 1) * sizeof(uintptr_t) <= 64,
               "the park's word and the hottest real functions on one line");

/* Relaxed: a hook is reached only through a GOT slot stored after its
 * real function was set, and a relaxed load lets the tail call be one
 * indirect jump through memory (an acquire load made it a load and a jump:
 * one more instruction on every malloc and free; acquire costs nothing
 * else on x86). */
static inline uintptr_t ha_target(enum ha_hook_fn fn)
{
	return __atomic_load_n(&ha_real[fn], __ATOMIC_RELAXED);
}

#define REAL(fn, type) ((type)ha_target(fn))

#define park_asked() ha_park_asked(&ha_hot.park)
#define PARK_POINT() HA_PARK_POINT(&ha_hot.park, 0)
#define PARK_POINT_NEW_DELETE() HA_PARK_POINT(&ha_hot.park, 1)

void ha_hooks_park_publish(void)
{
	ha_park_publish(&ha_hot.park);
}

void ha_hooks_park_end(void)
{
	ha_park_end(&ha_hot.park);
}

static inline void depth_leave(int *unused)
{
	(void)unused;
	ha_depth--;
}
/* Raise the depth for the rest of the block; lowered on leaving it, also
 * when a C++ exception goes through (operator new). */
#define DEPTH_SCOPE()                                                 \
	int ha_depth_scope __attribute__((cleanup(depth_leave), unused)) = ++ha_depth

__attribute__((noinline, cold)) static void free_filtered(void *ptr);

static inline void *after_alloc(void *p, size_t size, int counter, enum ha_alloc_func fn)
{
	ha_count(counter);
	if (p && ha_sampler_due(size))
		ha_sample_alloc(p, size, fn, HA_REC_KIND_HEAP);
	return p;
}

/* A block leaving the program (freed, moved, resized, unmapped): if the
 * filter says it may be a sampled one, send its free (free_filtered; NULL
 * is never sampled). */
static inline void leave_live_set(void *ptr)
{
	if (__builtin_expect(ha_ls_maybe(ptr), 0))
		free_filtered(ptr);
}

/* ------------------------------------------------------------------ */
/* malloc family                                                       */
/* ------------------------------------------------------------------ */

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*align_fn)(size_t, size_t);
typedef void (*free2_fn)(void *, size_t);
typedef void (*free3_fn)(void *, size_t, size_t);

/* Slow paths of the hooks above (out of line, so that the fast path stays
 * a handful of instructions and a jump). */
__attribute__((noinline, cold)) static void free_filtered(void *ptr)
{
	/* Before the real free: once the block is back in the allocator another
	 * thread may get the same address, sample it and overtake our record. */
	if (ptr)
		ha_sample_free(ptr);
}

__attribute__((noinline, cold)) static void *malloc_sampled(size_t size)
{
	if (ha_depth)
		return REAL(HA_HOOK_MALLOC, malloc_fn)(size);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_MALLOC, malloc_fn)(size);
	}
	if (p)
		ha_sample_alloc(p, size, HA_FN_MALLOC, HA_REC_KIND_HEAP);
	return p;
}

__attribute__((noinline, cold)) static void *calloc_sampled(size_t nmemb, size_t size,
                                                            size_t total)
{
	if (ha_depth)
		return REAL(HA_HOOK_CALLOC, calloc_fn)(nmemb, size);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_CALLOC, calloc_fn)(nmemb, size);
	}
	if (p)
		ha_sample_alloc(p, total, HA_FN_CALLOC, HA_REC_KIND_HEAP);
	return p;
}

__attribute__((noinline, cold)) static void *realloc_sampled(void *ptr, size_t size)
{
	if (ha_depth)
		return REAL(HA_HOOK_REALLOC, realloc_fn)(ptr, size);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_REALLOC, realloc_fn)(ptr, size);
	}
	if (p)
		ha_sample_alloc(p, size, HA_FN_REALLOC, HA_REC_KIND_HEAP);
	return p;
}

/* The path that does not sample, for the hottest hooks: count, take the
 * size off the countdown, look at the free filter, and jump to the real
 * function.  These are tail calls: no frame of ours while the allocator
 * runs and nothing to do after it, so no depth either.  That is safe
 * because nothing we hook is reached through a GOT slot from inside them:
 * glibc's allocator calls mmap & co directly, and in a module that
 * provides its own malloc (jemalloc, tcmalloc) got.c leaves the mmap slots
 * alone.  An allocation nested in another hook's real call (ha_depth > 0)
 * still counts against the countdown; if it makes it run out, the slow
 * path forwards it and the next allocation at depth 0 is sampled.
 *
 * HA_BENCH_FLOOR (bench/run's floor agent only, never installed): malloc
 * and free jump straight on to libc, the cost of GOT interception itself,
 * against which the hooks are measured.
 *
 * Each starts a cache line of its own (HOT_HOOK): where the code before it
 * left them decided whether one of these few instructions crossed a line,
 * and 56 bytes more of the sampling path moved malloc's and free's hooks
 * across one and cost 0.04 of the microbenchmark's speed at 512 KiB. */
#define HOT_HOOK __attribute__((aligned(64)))
/* Each hot hook is its body (X_go, inlined) behind the park's test; when
 * a park is asked, X_parked (out of line) parks, then runs the same body:
 * the path that does not park keeps its tail call and no frame. */
#define PARKED(ret, name, params, args)                              \
	__attribute__((noinline, cold)) static ret name##_parked params  \
	{                                                                \
		ha_park_wait(&ha_hot.park, 0);                               \
		return name##_go args;                                       \
	}

static inline __attribute__((always_inline)) void *malloc_go(size_t size)
{
#ifdef HA_LIBC_MUSL
	if (ha_depth)   /* musl's calloc calling it (see MUSL_NESTED) */
		return REAL(HA_HOOK_MALLOC, malloc_fn)(size);
#endif
#ifndef HA_BENCH_FLOOR
	ha_count(HA_C_MALLOC);
	if (__builtin_expect(ha_sampler_due(size), 0))
		return malloc_sampled(size);
#endif
	return REAL(HA_HOOK_MALLOC, malloc_fn)(size);
}
PARKED(void *, malloc, (size_t size), (size))

HOT_HOOK void *ha_hook_malloc(size_t size)
{
	if (park_asked())
		return malloc_parked(size);
	return malloc_go(size);
}

static inline __attribute__((always_inline)) void free_go(void *ptr)
{
#ifndef HA_BENCH_FLOOR
	leave_live_set(ptr);
#endif
	REAL(HA_HOOK_FREE, free_fn)(ptr);
}
__attribute__((noinline, cold)) static void free_parked(void *ptr)
{
	ha_park_wait(&ha_hot.park, 0);
	free_go(ptr);
}

HOT_HOOK void ha_hook_free(void *ptr)
{
	if (park_asked()) {
		free_parked(ptr);
		return;
	}
	free_go(ptr);
}

static inline __attribute__((always_inline)) void *calloc_go(size_t nmemb, size_t size)
{
	size_t total;
	ha_count(HA_C_CALLOC);
	/* On overflow the real calloc fails: nothing to count. */
	if (!__builtin_mul_overflow(nmemb, size, &total) &&
	    __builtin_expect(ha_sampler_due(total), 0))
		return calloc_sampled(nmemb, size, total);
#ifdef HA_LIBC_MUSL
	DEPTH_SCOPE();  /* its malloc only forwards (MUSL_NESTED) */
#endif
	return REAL(HA_HOOK_CALLOC, calloc_fn)(nmemb, size);
}
PARKED(void *, calloc, (size_t nmemb, size_t size), (nmemb, size))

HOT_HOOK void *ha_hook_calloc(size_t nmemb, size_t size)
{
	if (park_asked())
		return calloc_parked(nmemb, size);
	return calloc_go(nmemb, size);
}

static inline __attribute__((always_inline)) void *realloc_go(void *ptr, size_t size)
{
	ha_count(HA_C_REALLOC);
	/* The old block leaves the live set first (see free_filtered).  If the
	 * real realloc then fails, the block stays allocated but is no longer
	 * counted: rare, and it errs towards less, never more, live heap. */
	leave_live_set(ptr);
#ifdef HA_LIBC_MUSL
	if (ha_depth)   /* musl's reallocarray calling it (MUSL_NESTED) */
		return REAL(HA_HOOK_REALLOC, realloc_fn)(ptr, size);
#endif
	if (__builtin_expect(ha_sampler_due(size), 0))
		return realloc_sampled(ptr, size);
	return REAL(HA_HOOK_REALLOC, realloc_fn)(ptr, size);
}
PARKED(void *, realloc, (void *ptr, size_t size), (ptr, size))

HOT_HOOK void *ha_hook_realloc(void *ptr, size_t size)
{
	if (park_asked())
		return realloc_parked(ptr, size);
	return realloc_go(ptr, size);
}

static void *ha_hook_reallocarray(void *ptr, size_t nmemb, size_t size)
{
	PARK_POINT();
	if (ha_depth)
		return REAL(HA_HOOK_REALLOCARRAY, reallocarray_fn)(ptr, nmemb, size);
	leave_live_set(ptr);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_REALLOCARRAY, reallocarray_fn)(ptr, nmemb, size);
	}
	return after_alloc(p, p ? nmemb * size : 0, HA_C_OTHER, HA_FN_REALLOCARRAY);
}

static int ha_hook_posix_memalign(void **out, size_t align, size_t size)
{
	PARK_POINT();
	if (ha_depth)
		return REAL(HA_HOOK_POSIX_MEMALIGN, posix_memalign_fn)(out, align, size);
	int r;
	{
		DEPTH_SCOPE();
		r = REAL(HA_HOOK_POSIX_MEMALIGN, posix_memalign_fn)(out, align, size);
	}
	(void)after_alloc(r == 0 ? *out : NULL, size, HA_C_OTHER, HA_FN_POSIX_MEMALIGN);
	return r;
}

#define ALIGN_HOOK(name, FN, AFN)                                     \
	static void *name(size_t align, size_t size)                      \
	{                                                                 \
		PARK_POINT();                                                 \
		if (ha_depth)                                                 \
			return REAL(FN, align_fn)(align, size);                   \
		void *p;                                                      \
		{                                                             \
			DEPTH_SCOPE();                                            \
			p = REAL(FN, align_fn)(align, size);                      \
		}                                                             \
		return after_alloc(p, size, HA_C_OTHER, AFN);                    \
	}
ALIGN_HOOK(ha_hook_aligned_alloc, HA_HOOK_ALIGNED_ALLOC, HA_FN_ALIGNED_ALLOC)
ALIGN_HOOK(ha_hook_memalign, HA_HOOK_MEMALIGN, HA_FN_MEMALIGN)

static void *ha_hook_valloc(size_t size)
{
	PARK_POINT();
	if (ha_depth)
		return REAL(HA_HOOK_VALLOC, malloc_fn)(size);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_VALLOC, malloc_fn)(size);
	}
	return after_alloc(p, size, HA_C_OTHER, HA_FN_VALLOC);
}

static void *ha_hook_pvalloc(size_t size)
{
	PARK_POINT();
	if (ha_depth)
		return REAL(HA_HOOK_PVALLOC, malloc_fn)(size);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_PVALLOC, malloc_fn)(size);
	}
	return after_alloc(p, size, HA_C_OTHER, HA_FN_PVALLOC);
}

HOT_HOOK static void ha_hook_free_sized(void *ptr, size_t size)
{
	PARK_POINT();
	leave_live_set(ptr);
	REAL(HA_HOOK_FREE_SIZED, free2_fn)(ptr, size);
}

HOT_HOOK static void ha_hook_free_aligned_sized(void *ptr, size_t align, size_t size)
{
	PARK_POINT();
	leave_live_set(ptr);
	REAL(HA_HOOK_FREE_ALIGNED_SIZED, free3_fn)(ptr, align, size);
}

/* ------------------------------------------------------------------ */
/* C++ operator new / delete                                           */
/* ------------------------------------------------------------------ */

typedef void *(*new1_fn)(size_t);
typedef void *(*new2_fn)(size_t, uintptr_t);          /* nothrow or align */
typedef void *(*new3_fn)(size_t, uintptr_t, uintptr_t); /* align + nothrow */
typedef void (*del1_fn)(void *);
typedef void (*del2_fn)(void *, uintptr_t);
typedef void (*del3_fn)(void *, uintptr_t, uintptr_t);

/* operator new delegates: an allocation hook reached from inside it
 * (libstdc++'s new -> malloc through its GOT) counts and samples the
 * allocation as usual, so that operator new is a frame of the stack; if no
 * allocation was counted meanwhile (an operator new that does not go
 * through a hooked function), the new hook counts it itself.  Once either
 * way, and nothing for the malloc hook to clear on every call. */
#define NEW1(name, FN, AFN)                                           \
	static void *name(size_t size)                                    \
	{                                                                 \
		PARK_POINT_NEW_DELETE();                                      \
		if (ha_depth)                                                 \
			return REAL(FN, new1_fn)(size);                           \
		uint64_t seen = ha_count_all();                        \
		void *p = REAL(FN, new1_fn)(size);                            \
		if (ha_count_all() != seen)                            \
			return p; /* the malloc inside took it */                 \
		return after_alloc(p, size, HA_C_MALLOC, AFN);                   \
	}
#define NEW2(name, FN, AFN)                                           \
	static void *name(size_t size, uintptr_t a)                       \
	{                                                                 \
		PARK_POINT_NEW_DELETE();                                      \
		if (ha_depth)                                                 \
			return REAL(FN, new2_fn)(size, a);                        \
		uint64_t seen = ha_count_all();                        \
		void *p = REAL(FN, new2_fn)(size, a);                         \
		if (ha_count_all() != seen)                            \
			return p; /* the malloc inside took it */                 \
		return after_alloc(p, size, HA_C_MALLOC, AFN);                   \
	}
#define NEW3(name, FN, AFN)                                           \
	static void *name(size_t size, uintptr_t a, uintptr_t b)          \
	{                                                                 \
		PARK_POINT_NEW_DELETE();                                      \
		if (ha_depth)                                                 \
			return REAL(FN, new3_fn)(size, a, b);                     \
		uint64_t seen = ha_count_all();                        \
		void *p = REAL(FN, new3_fn)(size, a, b);                      \
		if (ha_count_all() != seen)                            \
			return p; /* the malloc inside took it */                 \
		return after_alloc(p, size, HA_C_MALLOC, AFN);                   \
	}
#define DEL1(name, FN)                                            \
	static void name(void *ptr)                                   \
	{                                                             \
		PARK_POINT_NEW_DELETE();                                  \
		leave_live_set(ptr);                                      \
		REAL(FN, del1_fn)(ptr);                                   \
	}
#define DEL2(name, FN)                                            \
	static void name(void *ptr, uintptr_t a)                      \
	{                                                             \
		PARK_POINT_NEW_DELETE();                                  \
		leave_live_set(ptr);                                      \
		REAL(FN, del2_fn)(ptr, a);                                \
	}
#define DEL3(name, FN)                                            \
	static void name(void *ptr, uintptr_t a, uintptr_t b)         \
	{                                                             \
		PARK_POINT_NEW_DELETE();                                  \
		leave_live_set(ptr);                                      \
		REAL(FN, del3_fn)(ptr, a, b);                             \
	}

NEW1(ha_hook_nw, HA_HOOK_NW, HA_FN_NEW)
NEW2(ha_hook_nw_nt, HA_HOOK_NW_NT, HA_FN_NEW)
NEW2(ha_hook_nw_al, HA_HOOK_NW_AL, HA_FN_NEW)
NEW3(ha_hook_nw_al_nt, HA_HOOK_NW_AL_NT, HA_FN_NEW)
NEW1(ha_hook_na, HA_HOOK_NA, HA_FN_NEW_ARRAY)
NEW2(ha_hook_na_nt, HA_HOOK_NA_NT, HA_FN_NEW_ARRAY)
NEW2(ha_hook_na_al, HA_HOOK_NA_AL, HA_FN_NEW_ARRAY)
NEW3(ha_hook_na_al_nt, HA_HOOK_NA_AL_NT, HA_FN_NEW_ARRAY)
DEL1(ha_hook_dl, HA_HOOK_DL)
DEL2(ha_hook_dl_s, HA_HOOK_DL_S)
DEL2(ha_hook_dl_nt, HA_HOOK_DL_NT)
DEL2(ha_hook_dl_al, HA_HOOK_DL_AL)
DEL3(ha_hook_dl_s_al, HA_HOOK_DL_S_AL)
DEL3(ha_hook_dl_al_nt, HA_HOOK_DL_AL_NT)
DEL1(ha_hook_da, HA_HOOK_DA)
DEL2(ha_hook_da_s, HA_HOOK_DA_S)
DEL2(ha_hook_da_nt, HA_HOOK_DA_NT)
DEL2(ha_hook_da_al, HA_HOOK_DA_AL)
DEL3(ha_hook_da_s_al, HA_HOOK_DA_S_AL)
DEL3(ha_hook_da_al_nt, HA_HOOK_DA_AL_NT)

/* ------------------------------------------------------------------ */
/* jemalloc                                                            */
/* ------------------------------------------------------------------ */

typedef void *(*mallocx_fn)(size_t, int);
typedef void *(*rallocx_fn)(void *, size_t, int);
typedef size_t (*xallocx_fn)(void *, size_t, size_t, int);
typedef void (*sdallocx_fn)(void *, size_t, int);
typedef void (*dallocx_fn)(void *, int);

static void *ha_hook_mallocx(size_t size, int flags)
{
	PARK_POINT();
	if (ha_depth)
		return REAL(HA_HOOK_MALLOCX, mallocx_fn)(size, flags);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_MALLOCX, mallocx_fn)(size, flags);
	}
	return after_alloc(p, size, HA_C_MALLOC, HA_FN_MALLOCX);
}

static void *ha_hook_rallocx(void *ptr, size_t size, int flags)
{
	PARK_POINT();
	if (ha_depth)
		return REAL(HA_HOOK_RALLOCX, rallocx_fn)(ptr, size, flags);
	leave_live_set(ptr);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_RALLOCX, rallocx_fn)(ptr, size, flags);
	}
	return after_alloc(p, size, HA_C_REALLOC, HA_FN_RALLOCX);
}

static size_t ha_hook_xallocx(void *ptr, size_t size, size_t extra, int flags)
{
	PARK_POINT();
	if (ha_depth)
		return REAL(HA_HOOK_XALLOCX, xallocx_fn)(ptr, size, extra, flags);
	size_t r;
	{
		DEPTH_SCOPE();
		r = REAL(HA_HOOK_XALLOCX, xallocx_fn)(ptr, size, extra, flags);
	}
	/* Resized in place: the block is the same, its size is new.  A sampled
	 * block leaves the live set; the new size goes through the countdown
	 * like a realloc.  (The address does not change: no race with reuse.) */
	leave_live_set(ptr);
	(void)after_alloc(ptr, r, HA_C_REALLOC, HA_FN_XALLOCX);
	return r;
}

static void ha_hook_sdallocx(void *ptr, size_t size, int flags)
{
	PARK_POINT();
	leave_live_set(ptr);
	REAL(HA_HOOK_SDALLOCX, sdallocx_fn)(ptr, size, flags);
}

static void ha_hook_dallocx(void *ptr, int flags)
{
	PARK_POINT();
	leave_live_set(ptr);
	REAL(HA_HOOK_DALLOCX, dallocx_fn)(ptr, flags);
}

/* ------------------------------------------------------------------ */
/* Anonymous mappings                                                  */
/* ------------------------------------------------------------------ */

typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef int (*munmap_fn)(void *, size_t);
typedef void *(*mremap_fn)(void *, size_t, size_t, int, void *);

#define HA_PAGE 4096u               /* x86_64 */
#define HA_UNMAP_SCAN_PAGES 16384u  /* 64 MiB of address space per call */

/* Send the free of every sampled mapping whose start is in [addr, addr+len). */
static void unmap_range(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr & ~(uintptr_t)(HA_PAGE - 1);
	leave_live_set((void *)a);
	if (!ha_sampler_mmap_seen())
		return;
	uintptr_t end = (uintptr_t)addr + len;
	if (end < a)
		end = UINTPTR_MAX & ~(uintptr_t)(HA_PAGE - 1);
	size_t pages = (end - a + HA_PAGE - 1) / HA_PAGE;
	if (pages > HA_UNMAP_SCAN_PAGES)
		pages = HA_UNMAP_SCAN_PAGES;
	for (size_t i = 1; i < pages; i++) {
		leave_live_set((void *)(a + i * HA_PAGE));
	}
}

/* The program maps over, unmaps or moves [addr, addr + len): if that is
 * (part of) the ring, the session stops writing to it first (sampler.h). */
static void check_ring(const void *addr, size_t len)
{
	if (__builtin_expect(ha_sampler_ring_overlaps(addr, len), 0))
		ha_sampler_ring_taken(addr, len);
}

static void *mmap_common(enum ha_hook_fn fn, void *addr, size_t len, int prot, int flags, int fd,
                         off_t off)
{
	if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE))
		check_ring(addr, len);
	if (ha_depth || !(flags & MAP_ANONYMOUS))
		return REAL(fn, mmap_fn)(addr, len, prot, flags, fd, off);
	if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE))
		unmap_range(addr, len);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(fn, mmap_fn)(addr, len, prot, flags, fd, off);
	}
	ha_count(HA_C_OTHER);
	if (p != MAP_FAILED && prot != PROT_NONE && ha_sampler_due(len))
		ha_sample_alloc(p, len, HA_FN_MMAP, HA_REC_KIND_MMAP);
	return p;
}

static void *ha_hook_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_common(HA_HOOK_MMAP, addr, len, prot, flags, fd, off);
}

static void *ha_hook_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_common(HA_HOOK_MMAP64, addr, len, prot, flags, fd, off);
}

static int ha_hook_munmap(void *addr, size_t len)
{
	check_ring(addr, len);
	if (!ha_depth) {
		ha_count(HA_C_OTHER);
		unmap_range(addr, len);
	}
	DEPTH_SCOPE();
	return REAL(HA_HOOK_MUNMAP, munmap_fn)(addr, len);
}

static void *ha_hook_mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
		check_ring(want, newlen);
	}
	/* Moved, shrunk or grown in place: the old range is no longer
	 * (only) ours either way.  (oldlen 0 makes a second mapping of a
	 * shared one and leaves ours alone.) */
	if (oldlen)
		check_ring(old, oldlen);
	if (ha_depth)
		return REAL(HA_HOOK_MREMAP, mremap_fn)(old, oldlen, newlen, flags, want);
	leave_live_set(old);
	void *p;
	{
		DEPTH_SCOPE();
		p = REAL(HA_HOOK_MREMAP, mremap_fn)(old, oldlen, newlen, flags, want);
	}
	ha_count(HA_C_OTHER);
	if (p != MAP_FAILED && ha_sampler_due(newlen))
		ha_sample_alloc(p, newlen, HA_FN_MREMAP, HA_REC_KIND_MMAP);
	return p;
}

/* ------------------------------------------------------------------ */
/* Table                                                               */
/* ------------------------------------------------------------------ */

struct hook_def {
	const char *name;
	void *hook;
};

static const struct hook_def ha_defs[HA_HOOK_COUNT] = {
	[HA_HOOK_MALLOC] = { "malloc", (void *)ha_hook_malloc },
	[HA_HOOK_FREE] = { "free", (void *)ha_hook_free },
	[HA_HOOK_CALLOC] = { "calloc", (void *)ha_hook_calloc },
	[HA_HOOK_REALLOC] = { "realloc", (void *)ha_hook_realloc },
	[HA_HOOK_REALLOCARRAY] = { "reallocarray", (void *)ha_hook_reallocarray },
	[HA_HOOK_POSIX_MEMALIGN] = { "posix_memalign", (void *)ha_hook_posix_memalign },
	[HA_HOOK_ALIGNED_ALLOC] = { "aligned_alloc", (void *)ha_hook_aligned_alloc },
	[HA_HOOK_MEMALIGN] = { "memalign", (void *)ha_hook_memalign },
	[HA_HOOK_VALLOC] = { "valloc", (void *)ha_hook_valloc },
	[HA_HOOK_PVALLOC] = { "pvalloc", (void *)ha_hook_pvalloc },
	[HA_HOOK_FREE_SIZED] = { "free_sized", (void *)ha_hook_free_sized },
	[HA_HOOK_FREE_ALIGNED_SIZED] = { "free_aligned_sized", (void *)ha_hook_free_aligned_sized },
	[HA_HOOK_NW] = { "_Znwm", (void *)ha_hook_nw },
	[HA_HOOK_NW_NT] = { "_ZnwmRKSt9nothrow_t", (void *)ha_hook_nw_nt },
	[HA_HOOK_NW_AL] = { "_ZnwmSt11align_val_t", (void *)ha_hook_nw_al },
	[HA_HOOK_NW_AL_NT] = { "_ZnwmSt11align_val_tRKSt9nothrow_t", (void *)ha_hook_nw_al_nt },
	[HA_HOOK_NA] = { "_Znam", (void *)ha_hook_na },
	[HA_HOOK_NA_NT] = { "_ZnamRKSt9nothrow_t", (void *)ha_hook_na_nt },
	[HA_HOOK_NA_AL] = { "_ZnamSt11align_val_t", (void *)ha_hook_na_al },
	[HA_HOOK_NA_AL_NT] = { "_ZnamSt11align_val_tRKSt9nothrow_t", (void *)ha_hook_na_al_nt },
	[HA_HOOK_DL] = { "_ZdlPv", (void *)ha_hook_dl },
	[HA_HOOK_DL_S] = { "_ZdlPvm", (void *)ha_hook_dl_s },
	[HA_HOOK_DL_NT] = { "_ZdlPvRKSt9nothrow_t", (void *)ha_hook_dl_nt },
	[HA_HOOK_DL_AL] = { "_ZdlPvSt11align_val_t", (void *)ha_hook_dl_al },
	[HA_HOOK_DL_S_AL] = { "_ZdlPvmSt11align_val_t", (void *)ha_hook_dl_s_al },
	[HA_HOOK_DL_AL_NT] = { "_ZdlPvSt11align_val_tRKSt9nothrow_t", (void *)ha_hook_dl_al_nt },
	[HA_HOOK_DA] = { "_ZdaPv", (void *)ha_hook_da },
	[HA_HOOK_DA_S] = { "_ZdaPvm", (void *)ha_hook_da_s },
	[HA_HOOK_DA_NT] = { "_ZdaPvRKSt9nothrow_t", (void *)ha_hook_da_nt },
	[HA_HOOK_DA_AL] = { "_ZdaPvSt11align_val_t", (void *)ha_hook_da_al },
	[HA_HOOK_DA_S_AL] = { "_ZdaPvmSt11align_val_t", (void *)ha_hook_da_s_al },
	[HA_HOOK_DA_AL_NT] = { "_ZdaPvSt11align_val_tRKSt9nothrow_t", (void *)ha_hook_da_al_nt },
	[HA_HOOK_MALLOCX] = { "mallocx", (void *)ha_hook_mallocx },
	[HA_HOOK_RALLOCX] = { "rallocx", (void *)ha_hook_rallocx },
	[HA_HOOK_XALLOCX] = { "xallocx", (void *)ha_hook_xallocx },
	[HA_HOOK_SDALLOCX] = { "sdallocx", (void *)ha_hook_sdallocx },
	[HA_HOOK_DALLOCX] = { "dallocx", (void *)ha_hook_dallocx },
	[HA_HOOK_MMAP] = { "mmap", (void *)ha_hook_mmap },
	[HA_HOOK_MMAP64] = { "mmap64", (void *)ha_hook_mmap64 },
	[HA_HOOK_MUNMAP] = { "munmap", (void *)ha_hook_munmap },
	[HA_HOOK_MREMAP] = { "mremap", (void *)ha_hook_mremap },
	[HA_HOOK_DLOPEN] = { "dlopen", (void *)ha_hook_dlopen },
	[HA_HOOK_VFORK] = { "vfork", (void *)ha_hook_vfork },
};

const char *ha_hooks_name(enum ha_hook_fn fn)
{
	return (unsigned)fn < HA_HOOK_COUNT ? ha_defs[fn].name : "";
}

uintptr_t ha_hooks_hook(enum ha_hook_fn fn)
{
	return (unsigned)fn < HA_HOOK_COUNT ? (uintptr_t)ha_defs[fn].hook : 0;
}

uintptr_t ha_hooks_real(enum ha_hook_fn fn)
{
	return (unsigned)fn < HA_HOOK_COUNT ? ha_target(fn) : 0;
}

int ha_hooks_set_real(enum ha_hook_fn fn, uintptr_t addr)
{
	uintptr_t expect = 0;
	if ((unsigned)fn >= HA_HOOK_COUNT || addr == 0)
		return -1;
	/* Never let a hook forward to a hook (endless recursion). */
	for (int i = 0; i < HA_HOOK_COUNT; i++)
		if (addr == ha_hooks_hook((enum ha_hook_fn)i))
			return -1;
	if (fn == HA_HOOK_DLOPEN) {
		uintptr_t e2 = 0;
		(void)__atomic_compare_exchange_n(&ha_dlopen_real, &e2, addr, 0, __ATOMIC_RELEASE,
		                                  __ATOMIC_ACQUIRE);
		if (__atomic_load_n(&ha_dlopen_real, __ATOMIC_ACQUIRE) != addr)
			return -1;
	}
	if (__atomic_compare_exchange_n(&ha_real[fn], &expect, addr, 0,
	                                __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		return 0;
	return expect == addr ? 0 : -1;
}
