/* pymem.c -- CPython's object and mem allocators, wrapped (see pymem.h). */
#define _GNU_SOURCE
#include "pymem.h"

#include <dlfcn.h>
#include <stddef.h>

#include "ha_proto.h"
#include "imports.h"
#include "liveset.h"
#include "sampler.h"

/* CPython's PyMemAllocatorEx and domains (stable since 3.5). */
struct py_alloc {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr);
};
enum { DOMAIN_RAW = 0, DOMAIN_MEM = 1, DOMAIN_OBJ = 2, NDOMAINS = 3 };
#define SMALL_REQUEST_THRESHOLD 512 /* pymalloc's, every version */

static void (*get_alloc)(int domain, struct py_alloc *a);
static void (*set_alloc)(int domain, struct py_alloc *a);
static int (*add_pending)(int (*fn)(void *), void *arg);

static struct py_alloc orig[NDOMAINS]; /* what ours call: set before they are installed */
static struct py_alloc ours[NDOMAINS];
static uint32_t state;                 /* enum ha_py_wrap */
static int installed;                  /* ours are in place (GIL holder only) */
static int wanted;                     /* a session wants them (atomic) */
static int pending;                    /* a call of ours is queued (atomic) */

static inline int small(size_t n)
{
	return n - 1 < SMALL_REQUEST_THRESHOLD;
}

/* The wrappers' path that does not sample is a count and a jump on to
 * CPython's allocator (a sibling call: no frame of ours while it runs),
 * as the malloc hooks' is: the wrap is on every object allocation and
 * free of the interpreter. */
__attribute__((noinline, cold)) static void *malloc_sampled(const struct py_alloc *o, size_t n)
{
	void *p = o->malloc(o->ctx, n);
	if (p)
		ha_sample_alloc(p, n, HA_FN_PYMALLOC, HA_REC_KIND_HEAP);
	return p;
}

__attribute__((noinline, cold)) static void *calloc_sampled(const struct py_alloc *o, size_t nelem,
                                                            size_t elsize, size_t n)
{
	void *p = o->calloc(o->ctx, nelem, elsize);
	if (p)
		ha_sample_alloc(p, n, HA_FN_PYMALLOC, HA_REC_KIND_HEAP);
	return p;
}

__attribute__((noinline, cold)) static void *realloc_sampled(const struct py_alloc *o, void *ptr,
                                                             size_t n)
{
	void *p = o->realloc(o->ctx, ptr, n);
	if (p)
		ha_sample_alloc(p, n, HA_FN_PYMALLOC, HA_REC_KIND_HEAP);
	return p;
}

__attribute__((noinline, cold)) static void drop(void *p)
{
	ha_sample_free(p);
}

/* Only 1..512 bytes are counted here: a larger request goes on to malloc
 * inside CPython's allocator, whose hook counts it. */
static void *w_malloc(void *ctx, size_t n)
{
	const struct py_alloc *o = ctx;
	if (__builtin_expect(small(n) && ha_sampler_due(n), 0))
		return malloc_sampled(o, n);
	return o->malloc(o->ctx, n);
}

static void *w_calloc(void *ctx, size_t nelem, size_t elsize)
{
	const struct py_alloc *o = ctx;
	size_t n;
	if (!__builtin_mul_overflow(nelem, elsize, &n) &&
	    __builtin_expect(small(n) && ha_sampler_due(n), 0))
		return calloc_sampled(o, nelem, elsize, n);
	return o->calloc(o->ctx, nelem, elsize);
}

static void *w_realloc(void *ctx, void *ptr, size_t n)
{
	const struct py_alloc *o = ctx;
	/* The old block leaves first (the free hook's order, hooks.c). */
	if (ptr && __builtin_expect(ha_ls_maybe(ptr), 0))
		drop(ptr);
	if (__builtin_expect(small(n) && ha_sampler_due(n), 0))
		return realloc_sampled(o, ptr, n);
	return o->realloc(o->ctx, ptr, n);
}

static void w_free(void *ctx, void *ptr)
{
	const struct py_alloc *o = ctx;
	if (ptr && __builtin_expect(ha_ls_maybe(ptr), 0))
		drop(ptr);
	o->free(o->ctx, ptr);
}

/* The arenas pymalloc carves small objects from (mmap): their mappings are
 * not samples of ours while the objects in them are (the depth makes the
 * mmap hook pass them on), so that nothing is counted twice. */
struct py_arena {
	void *ctx;
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
};
static struct py_arena orig_arena, our_arena;
static void (*get_arena)(struct py_arena *a);
static void (*set_arena)(struct py_arena *a);

static void *w_arena_alloc(void *ctx, size_t size)
{
	(void)ctx;
	ha_depth++;
	void *p = orig_arena.alloc(orig_arena.ctx, size);
	ha_depth--;
	return p;
}

static void w_arena_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	orig_arena.free(orig_arena.ctx, ptr, size);
}

/* Pending calls: run by the main thread holding the GIL. */
static int install(void *arg)
{
	(void)arg;
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&wanted, __ATOMIC_ACQUIRE) || installed) {
		if (installed)
			__atomic_store_n(&state, HA_PYW_ON, __ATOMIC_RELEASE);
		return 0;
	}
	struct py_alloc raw, mem, obj;
	get_alloc(DOMAIN_RAW, &raw);
	get_alloc(DOMAIN_MEM, &mem);
	get_alloc(DOMAIN_OBJ, &obj);
	/* PYTHONMALLOC=malloc: the domains are malloc's own, no arenas. */
	if (obj.malloc == raw.malloc && mem.malloc == raw.malloc) {
		__atomic_store_n(&state, HA_PYW_NOT_PYMALLOC, __ATOMIC_RELEASE);
		return 0;
	}
	orig[DOMAIN_MEM] = mem;
	orig[DOMAIN_OBJ] = obj;
	get_arena(&orig_arena);
	our_arena = (struct py_arena){ NULL, w_arena_alloc, w_arena_free };
	set_arena(&our_arena);
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		ours[d] = (struct py_alloc){ &orig[d], w_malloc, w_calloc, w_realloc, w_free };
		set_alloc(d, &ours[d]);
	}
	installed = 1;
	__atomic_store_n(&state, HA_PYW_ON, __ATOMIC_RELEASE);
	return 0;
}

static int uninstall(void *arg)
{
	(void)arg;
	__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&wanted, __ATOMIC_ACQUIRE) || !installed)
		return 0; /* a new session wants them: keep them */
	int still_ours = 1;
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++) {
		struct py_alloc cur;
		get_alloc(d, &cur);
		still_ours &= cur.malloc == w_malloc && cur.ctx == &orig[d];
	}
	struct py_arena cur_arena;
	get_arena(&cur_arena);
	still_ours &= cur_arena.alloc == w_arena_alloc;
	if (!still_ours)
		return 0; /* wrapped over since: ours stay, passing through */
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++)
		set_alloc(d, &orig[d]);
	set_arena(&orig_arena);
	installed = 0;
	return 0;
}

static int ask(int (*fn)(void *))
{
	if (__atomic_exchange_n(&pending, 1, __ATOMIC_ACQ_REL))
		return 0; /* one queued already: it looks at wanted when it runs */
	if (add_pending(fn, NULL) != 0) {
		__atomic_store_n(&pending, 0, __ATOMIC_RELEASE);
		return -1;
	}
	return 0;
}

void ha_pymem_start(void)
{
	if (!get_alloc) {
		get_alloc = (void (*)(int, struct py_alloc *))ha_imp.dlsym(RTLD_DEFAULT,
		                                                            "PyMem_GetAllocator");
		set_alloc = (void (*)(int, struct py_alloc *))ha_imp.dlsym(RTLD_DEFAULT,
		                                                            "PyMem_SetAllocator");
		add_pending = (int (*)(int (*)(void *), void *))ha_imp.dlsym(RTLD_DEFAULT,
		                                                              "Py_AddPendingCall");
		get_arena = (void (*)(struct py_arena *))ha_imp.dlsym(RTLD_DEFAULT,
		                                                       "PyObject_GetArenaAllocator");
		set_arena = (void (*)(struct py_arena *))ha_imp.dlsym(RTLD_DEFAULT,
		                                                       "PyObject_SetArenaAllocator");
	}
	if (!get_alloc || !set_alloc || !add_pending || !get_arena || !set_arena) {
		get_alloc = NULL;
		__atomic_store_n(&state, HA_PYW_FAILED, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&wanted, 1, __ATOMIC_RELEASE);
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == HA_PYW_ON)
		return; /* still in place from an earlier session */
	__atomic_store_n(&state, HA_PYW_WAITING, __ATOMIC_RELEASE);
	/* If an uninstall is queued, it sees wanted and keeps them; install
	 * must then still run: queue it behind. */
	if (__atomic_load_n(&pending, __ATOMIC_ACQUIRE) ? add_pending(install, NULL) != 0
	                                                : ask(install) != 0)
		__atomic_store_n(&state, HA_PYW_FAILED, __ATOMIC_RELEASE);
}

void ha_pymem_stop(void)
{
	if (!__atomic_exchange_n(&wanted, 0, __ATOMIC_ACQ_REL) || !get_alloc)
		return;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == HA_PYW_ON) {
		/* Sampling is off already (the sampler stopped): until the
		 * call runs, ours only pass through. */
		__atomic_store_n(&state, HA_PYW_NONE, __ATOMIC_RELEASE);
		(void)add_pending(uninstall, NULL);
	} else {
		__atomic_store_n(&state, HA_PYW_NONE, __ATOMIC_RELEASE);
	}
}

uint32_t ha_pymem_state(void)
{
	return __atomic_load_n(&state, __ATOMIC_ACQUIRE);
}

void ha_pymem_publish(void *ring)
{
	if (ring)
		__atomic_store_n(&((struct ha_ring_hdr *)ring)->py_wrap, ha_pymem_state(),
		                 __ATOMIC_RELAXED);
}
