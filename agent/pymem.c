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

static void sample(void *p, size_t n)
{
	if (p && ha_sampler_due(n))
		ha_sample_alloc(p, n, HA_FN_PYMALLOC, HA_REC_KIND_HEAP);
}

static void drop(void *p)
{
	if (p && __builtin_expect(ha_ls_maybe(p), 0))
		ha_sample_free(p);
}

static void *w_malloc(void *ctx, size_t n)
{
	const struct py_alloc *o = ctx;
	if (!small(n))
		return o->malloc(o->ctx, n);
	ha_depth++;
	void *p = o->malloc(o->ctx, n);
	ha_depth--;
	sample(p, n);
	return p;
}

static void *w_calloc(void *ctx, size_t nelem, size_t elsize)
{
	const struct py_alloc *o = ctx;
	size_t n;
	if (__builtin_mul_overflow(nelem, elsize, &n) || !small(n))
		return o->calloc(o->ctx, nelem, elsize);
	ha_depth++;
	void *p = o->calloc(o->ctx, nelem, elsize);
	ha_depth--;
	sample(p, n);
	return p;
}

static void *w_realloc(void *ctx, void *ptr, size_t n)
{
	const struct py_alloc *o = ctx;
	/* The old block leaves first (the free hook's order, hooks.c). */
	drop(ptr);
	if (!small(n))
		return o->realloc(o->ctx, ptr, n);
	ha_depth++;
	void *p = o->realloc(o->ctx, ptr, n);
	ha_depth--;
	sample(p, n);
	return p;
}

static void w_free(void *ctx, void *ptr)
{
	const struct py_alloc *o = ctx;
	drop(ptr);
	o->free(o->ctx, ptr);
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
	if (!still_ours)
		return 0; /* wrapped over since: ours stay, passing through */
	for (int d = DOMAIN_MEM; d <= DOMAIN_OBJ; d++)
		set_alloc(d, &orig[d]);
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
	}
	if (!get_alloc || !set_alloc || !add_pending) {
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
