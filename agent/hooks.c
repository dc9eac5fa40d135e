/*
 * hooks.c -- malloc/free/calloc/realloc replacements installed in GOT slots.
 *
 * The path that does not sample: call the real function, bump a per-thread
 * call counter, subtract the size from the per-thread sampling countdown.
 * Only when the countdown runs out does sampler.c capture a stack and write
 * to the ring; only a free of a block the live set may hold goes there too.
 * errno and the return value are exactly what the real function left:
 * nothing on the fast path can change errno, and the sampling path saves it.
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
#include "sampler.h"

__thread int ha_hook_guard __attribute__((tls_model("initial-exec")));

/* One counter per cache line: the hot path of many threads. */
struct ha_counter_line {
	uint64_t v;
	char pad[64 - sizeof(uint64_t)];
} __attribute__((aligned(64)));

static struct ha_counter_line ha_calls[HA_HOOK_COUNT];

/* Real functions, indexed by enum ha_hook_fn.  Written once (CAS from 0), read
 * with acquire in the hooks. */
static uintptr_t ha_real[HA_HOOK_COUNT];

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);

/* Calls are counted per thread and added to the shared counters in batches:
 * a shared atomic on every call would cost more than the sampling itself. */
#define HA_COUNT_BATCH 1024
static __thread uint32_t ha_tcalls[HA_HOOK_COUNT] __attribute__((tls_model("initial-exec")));

static inline void ha_count(enum ha_hook_fn fn)
{
	if (__builtin_expect(++ha_tcalls[fn] == HA_COUNT_BATCH, 0)) {
		ha_tcalls[fn] = 0;
		__atomic_fetch_add(&ha_calls[fn].v, HA_COUNT_BATCH, __ATOMIC_RELAXED);
	}
}

static inline uintptr_t ha_target(enum ha_hook_fn fn)
{
	return __atomic_load_n(&ha_real[fn], __ATOMIC_ACQUIRE);
}

void *ha_hook_malloc(size_t size)
{
	void *p = ((malloc_fn)ha_target(HA_HOOK_MALLOC))(size);
	ha_count(HA_HOOK_MALLOC);
	if (ha_sampler_due(size))
		ha_sample_alloc(p, size, HA_FN_MALLOC);
	return p;
}

void ha_hook_free(void *ptr)
{
	ha_count(HA_HOOK_FREE);
	/* Before the real free: once the block is back in the allocator another
	 * thread may get the same address, sample it and overtake our record. */
	if (ptr && ha_ls_maybe(ptr))
		ha_sample_free(ptr);
	((free_fn)ha_target(HA_HOOK_FREE))(ptr);
}

void *ha_hook_calloc(size_t nmemb, size_t size)
{
	void *p = ((calloc_fn)ha_target(HA_HOOK_CALLOC))(nmemb, size);
	ha_count(HA_HOOK_CALLOC);
	/* A non-NULL result means nmemb * size did not overflow. */
	if (p && ha_sampler_due(nmemb * size))
		ha_sample_alloc(p, nmemb * size, HA_FN_CALLOC);
	return p;
}

void *ha_hook_realloc(void *ptr, size_t size)
{
	/* The old block leaves the live set first (see ha_hook_free).  If the
	 * real realloc then fails, the block stays allocated but is no longer
	 * counted: rare, and it errs towards less, never more, live heap. */
	if (ptr && ha_ls_maybe(ptr))
		ha_sample_free(ptr);
	void *p = ((realloc_fn)ha_target(HA_HOOK_REALLOC))(ptr, size);
	ha_count(HA_HOOK_REALLOC);
	if (p && ha_sampler_due(size))
		ha_sample_alloc(p, size, HA_FN_REALLOC);
	return p;
}

static const char *const ha_names[HA_HOOK_COUNT] = {
	[HA_HOOK_MALLOC] = "malloc",
	[HA_HOOK_FREE] = "free",
	[HA_HOOK_CALLOC] = "calloc",
	[HA_HOOK_REALLOC] = "realloc",
};

const char *ha_hooks_name(enum ha_hook_fn fn)
{
	return (unsigned)fn < HA_HOOK_COUNT ? ha_names[fn] : "";
}

uintptr_t ha_hooks_hook(enum ha_hook_fn fn)
{
	switch (fn) {
	case HA_HOOK_MALLOC:
		return (uintptr_t)&ha_hook_malloc;
	case HA_HOOK_FREE:
		return (uintptr_t)&ha_hook_free;
	case HA_HOOK_CALLOC:
		return (uintptr_t)&ha_hook_calloc;
	case HA_HOOK_REALLOC:
		return (uintptr_t)&ha_hook_realloc;
	default:
		return 0;
	}
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
	if (__atomic_compare_exchange_n(&ha_real[fn], &expect, addr, 0,
	                                __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
		return 0;
	return expect == addr ? 0 : -1;
}

void ha_hooks_reset_counters(void)
{
	for (int i = 0; i < HA_HOOK_COUNT; i++)
		__atomic_store_n(&ha_calls[i].v, 0, __ATOMIC_RELAXED);
}

void ha_hooks_read_counters(struct ha_counters *c)
{
	c->malloc_calls = __atomic_load_n(&ha_calls[HA_HOOK_MALLOC].v, __ATOMIC_RELAXED);
	c->free_calls = __atomic_load_n(&ha_calls[HA_HOOK_FREE].v, __ATOMIC_RELAXED);
	c->calloc_calls = __atomic_load_n(&ha_calls[HA_HOOK_CALLOC].v, __ATOMIC_RELAXED);
	c->realloc_calls = __atomic_load_n(&ha_calls[HA_HOOK_REALLOC].v, __ATOMIC_RELAXED);
}
