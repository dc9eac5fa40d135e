/*
 * hooks.c -- malloc/free/calloc/realloc replacements installed in GOT slots.
 *
 * Issue 2: a hook only counts the call (a relaxed atomic add on a counter of
 * the agent's own, on its own cache line) and forwards to the real function
 * with a tail call.  Nothing runs after the real function returns, so errno
 * and the return value are exactly what the real function left.
 *
 * Why this is safe at any time, including after detach:
 *   - the hooks only read ha_real[] (set once before any slot points at a
 *     hook, never cleared) and write the counters, both in the agent's own
 *     .bss, which lives as long as the process (the agent is never unloaded);
 *   - they never touch the ring: it is unmapped at detach while other threads
 *     may still be between "load the GOT slot" and "return from the hook".
 */
#define _GNU_SOURCE
#include "hooks.h"

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

static inline void ha_count(enum ha_hook_fn fn)
{
	__atomic_fetch_add(&ha_calls[fn].v, 1, __ATOMIC_RELAXED);
}

static inline uintptr_t ha_target(enum ha_hook_fn fn)
{
	return __atomic_load_n(&ha_real[fn], __ATOMIC_ACQUIRE);
}

void *ha_hook_malloc(size_t size)
{
	ha_count(HA_HOOK_MALLOC);
	return ((malloc_fn)ha_target(HA_HOOK_MALLOC))(size);
}

void ha_hook_free(void *ptr)
{
	ha_count(HA_HOOK_FREE);
	((free_fn)ha_target(HA_HOOK_FREE))(ptr);
}

void *ha_hook_calloc(size_t nmemb, size_t size)
{
	ha_count(HA_HOOK_CALLOC);
	return ((calloc_fn)ha_target(HA_HOOK_CALLOC))(nmemb, size);
}

void *ha_hook_realloc(void *ptr, size_t size)
{
	ha_count(HA_HOOK_REALLOC);
	return ((realloc_fn)ha_target(HA_HOOK_REALLOC))(ptr, size);
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
