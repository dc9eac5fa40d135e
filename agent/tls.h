/*
 * tls.h -- the bottom of the agent: the visibility macros and all of the
 * agent's per-thread state.  Every other module of agent/ sits on this one;
 * it includes nothing of ours.
 *
 * The agent's modules form one chain, each including only those below it:
 *     tls, forklock,    per-thread state, HA_HIDDEN; the fork lock;
 *     imports           what the agent takes from the target at run time
 *  <- counters, liveset the hooks' call counts; the live set and its filter
 *  <- pywalk, sref_check the thread's Python frames; the stack references
 *  <- sampler           the countdown (countdown.h), stacks, ring records
 *  <- park              the reachability scan's safe point (heapattach --reach)
 *  <- pymem             CPython's allocators wrapped (small objects)
 *  <- stubs             the dlopen and vfork hooks (assembler)
 *  <- hooks             every other hook, the table of hooked functions
 *  <- elfmod            a loaded module's dynamic section and relocations
 *  <- resolve           the real functions behind the hooks
 *  <- got               patching and restoring GOT slots, module passes
 *  <- msg, slices       messages on the attacher's socket; short time slices
 *  <- trim              malloc_trim(0) on the agent's thread (heapattach --trim)
 *  <- agent             the entry: handshake, session, detach, fork
 * A call upward goes through a pointer the higher module registers (the one
 * there is: hooks' dlopen wrapper -> got's patch pass, see stubs.h).
 *
 * The per-thread state is one initial-exec TLS block (a TLSDESC one in the
 * agent of musl targets, see below): touching it never
 * calls into the dynamic loader (a global-dynamic access can allocate on a
 * thread's first touch), and the hooks reach every field through one GOT
 * load of its offset from %fs (separate variables cost one GOT load each on
 * the path that does not sample).  Zero-initialised is "not set up yet".
 */
#ifndef HA_AGENT_TLS_H
#define HA_AGENT_TLS_H

#include <stdint.h>

/* Exported from the shared object (only the two symbols of agent.h). */
#define HA_EXPORT __attribute__((visibility("default")))
/* Everything else of the agent (the build adds -fvisibility=hidden too). */
#define HA_HIDDEN __attribute__((visibility("hidden")))

/* The sampler's per-thread state (sampler.c). */
struct ha_tstate {
	int64_t countdown;      /* bytes until the next sample */
	uint64_t rng;
	uint64_t interval;      /* the mean the countdown was drawn with */
	uint64_t seq;           /* this thread's records so far */
	uint64_t stack_lo;      /* this thread's stack: [stack_lo, stack_hi) */
	uint64_t stack_hi;      /* (hi: its outermost frame), 0 = unknown */
	uint32_t tid;
	uint32_t session;       /* the session the countdown was drawn for */
	uint64_t samples;       /* records this thread wrote: samples, frees */
	uint64_t frees;
	uint64_t flushed_ns;    /* when its counts last went to the totals */
	uint32_t slot;          /* its in-flight slot + 1 (sampler.c); 0 = none yet */
	uint32_t slot_gen;      /* the slots' generation it was claimed in */
	uint32_t cons_session;  /* the session cons_seen belongs to */
	uint32_t cons_ring;     /* ...and the ring (its header's low 32 bits) */
	uint64_t cons_seen;     /* its last look at that ring's cons (sampler.c) */
};

#define HA_TLS_CALL_CLASSES 6

struct ha_tls {
	int in_vfork;           /* a vfork() child may be running on this thread
	                         * (set by the vfork stub, stubs.c); offset 0 */
	int depth;              /* ha_depth: inside a hook's real call (hooks.c) */
	int guard;              /* ha_hook_guard: inside our own sampling code */
	int dlopen_depth;       /* inside the dlopen wrapper (stubs.c) */
	struct ha_tstate ts;
	uint64_t calls[HA_TLS_CALL_CLASSES];   /* this thread's calls, by counter class (counters.h) */
	uint64_t flushed[HA_TLS_CALL_CLASSES]; /* ...of which already added to the shared totals */
	uint32_t park_done;     /* the park generation this thread last parked
	                         * for or let pass (hooks.c): never twice */
	uint32_t park_skip;     /* operator new or delete is calling the real one:
	                         * the hook that call reaches does not park */
};
/* Defined in tls.c.  The agent of musl targets (built with -DHA_LIBC_MUSL,
 * agent/README.md) reaches it through TLS descriptors instead: musl refuses
 * initial-exec TLS in a dlopen'ed library, and it allocates such a
 * library's TLS for every thread at dlopen (and at pthread_create after),
 * so a descriptor access never allocates there either. */
#ifdef HA_LIBC_MUSL
#define HA_TLS_MODEL "global-dynamic"
#else
#define HA_TLS_MODEL "initial-exec"
#endif
extern HA_HIDDEN __thread struct ha_tls ha_tls __attribute__((tls_model(HA_TLS_MODEL)));
#define ha_ts (ha_tls.ts)

/* Per-thread "inside a hook" depth: set around the real call of every hook
 * that is not a tail call, so that an allocation function reached from
 * inside another one (operator new -> malloc through libstdc++'s GOT,
 * reallocarray -> realloc, an allocator's own mmap) is forwarded without
 * being counted or sampled a second time.  A signal handler that allocates
 * while its thread is inside the real allocator is forwarded the same way
 * (not sampled). */
#define ha_depth (ha_tls.depth)

/* Per-thread re-entrancy guard: set while our own code runs on a thread of
 * the program (sampling, a patch pass after dlopen) and for good on the
 * agent thread; an allocation made meanwhile is forwarded, never sampled. */
#define ha_hook_guard (ha_tls.guard)

/* We are not a vfork() child running on this thread's stack and TLS (the
 * vfork stub marks the thread; no system call). */
static inline int ha_tls_same_process(void)
{
	return !__atomic_load_n(&ha_tls.in_vfork, __ATOMIC_RELAXED);
}

#endif /* HA_AGENT_TLS_H */
