/*
 * sampler.c -- Poisson sampling, stack capture and the ring records
 * (see sampler.h; the countdown's draws are in countdown.h, the live set
 * in liveset.h).
 *
 * A sample is one ring record: the registers captured here, and a copy of
 * the raw stack from the captured sp upward (capped), which the attacher
 * unwinds out of process.  On the thread's own stack (bounds known) the
 * copy is libc's memcpy; anywhere else it goes through process_vm_readv,
 * which stops at the first unmapped page instead of faulting.  A whole
 * copy of the thread's own stack is left out when an entry the attacher
 * published in the ring's table (a stack reference, struct ha_sref) holds
 * for the live stack: the record then names that entry instead.
 */
#define _GNU_SOURCE
#include "sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "counters.h"
#include "countdown.h"
#include "ha_ring.h"
#include "ha_ring_map.h"
#include "imports.h"
#include "liveset.h"
#include "pywalk.h"
#include "sref_check.h"

/* While dormant, a thread looks at the session state again after this many
 * bytes: cheap, and it notices a new session soon enough. */
#define DORMANT_COUNTDOWN (1 << 20)

static struct ha_sampler_cfg cfg;  /* written by the agent thread only while inactive */
/* Each ring's header (cfg.rings of them), for ring_of: written with cfg. */
static struct ha_ring_hdr *ring_hdrs[HA_RINGS_MAX];
static uint32_t active;            /* 1 while a session may write to the ring */
static uint32_t session;           /* current session number, never 0 when active */
/* Threads between "may write to the ring" and "done".  Each thread that
 * writes claims a slot of its own, a cache line only it writes: it enters
 * with one exchange (before it writes anything, so the exchange does not
 * wait for much) and leaves with a plain release store, which does not
 * wait until the lines of the record it just wrote are its own -- a locked
 * operation there took most of a sample's time after the stack copy.
 * ha_sampler_stop waits until every slot is idle.  A slot's count is a
 * depth, not a flag: a signal handler's free may nest inside a record.
 * Threads that find no slot (more than INFLIGHT_SLOTS writing threads
 * alive) count in shared_inflight instead. */
#define INFLIGHT_SLOTS 256
#define NO_SLOT UINT32_MAX
struct inflight_slot {
	uint32_t tid;              /* owner; 0 = free */
	uint32_t busy;             /* the owner's depth in the section */
	uint8_t pad[56];
};
static struct inflight_slot slots[INFLIGHT_SLOTS] __attribute__((aligned(64)));
static uint64_t shared_inflight __attribute__((aligned(64)));
static uint32_t slots_gen;         /* a fork()ed child voids the parent's claims */
/* Totals, added to from each thread's own counts at most every
 * FLUSH_PERIOD_NS (see flush_counts): statistics that lag each thread by
 * that much, not exact counts. */
#define FLUSH_PERIOD_NS 10000000ull
static struct {
	uint64_t samples, frees, untracked;
} st __attribute__((aligned(64)));
#define n_samples st.samples
#define n_frees st.frees
#define n_untracked st.untracked
static pid_t owner;                /* getpid() of the session's process */
/* Outermost-frame bounds (looked up once, on the agent thread): glibc's
 * static TLS size (what sits between a thread's first frame and the top of
 * its stack block, with the thread descriptor) and the main thread's stack
 * pointer at process entry.  Without them a copy runs into the descriptor,
 * the TLS surplus or the environment strings: kilobytes per sample that
 * nothing unwinds. */
static size_t tls_static_size;
static uint64_t main_stack_end;
uint32_t ha_mmap_seen;
/* The ring's address range while a session may write to it ([0, 0) when
 * none), and what the program did to it (enum ha_ring_taken: for
 * HA_RING_TAKEN_ONCE, [taken_lo, taken_hi) is what it took). */
static uintptr_t ring_lo, ring_hi;
static uint32_t ring_taken;
static uintptr_t taken_lo, taken_hi;


/* ------------------------------------------------------------------ */
/* per-thread state                                                    */
/* ------------------------------------------------------------------ */

/* The interval in effect: the one the attacher set in the ring header
 * (raised while the ring overflows), never below the configured one.  Only
 * between ring_enter and ring_leave: the ring may be unmapped otherwise. */
static uint64_t current_interval(void)
{
	uint64_t i = __atomic_load_n(&cfg.ring->interval, __ATOMIC_RELAXED);
	if (i < cfg.interval)
		return cfg.interval;
	return i > HA_INTERVAL_MAX ? HA_INTERVAL_MAX : i;
}

/* Out of line, once per thread: its locals (pthread_attr_t) would
 * otherwise sit in ha_sample_alloc's frame, and every sample copies the
 * agent's own frames with the stack. */
__attribute__((noinline, cold)) static void thread_setup_slow(void)
{
	if (!ha_ts.tid)
		ha_ts.tid = (uint32_t)syscall(SYS_gettid);
	if (!ha_ts.rng) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		ha_ts.rng = ((uint64_t)t.tv_nsec * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)ha_ts.tid << 32) ^
		            (uint64_t)(uintptr_t)&t;
		if (!ha_ts.rng)
			ha_ts.rng = 0x853c49e6748fea9bULL;
	}
	if (!ha_ts.stack_hi) {
		/* pthread_getattr_np allocates (and reads /proc/self/maps for the
		 * main thread): the caller holds the re-entrancy guard. */
		pthread_attr_t attr;
		void *lo;
		size_t size = 0;
		if (ha_imp.pthread_getattr_np(pthread_self(), &attr) == 0) {
			if (ha_imp.pthread_attr_getstack(&attr, &lo, &size) == 0)
				ha_ts.stack_hi = (uint64_t)(uintptr_t)lo + size;
			pthread_attr_destroy(&attr);
		}
		uint64_t lo_ = ha_ts.stack_hi - size, hi_ = ha_ts.stack_hi;
		ha_ts.stack_lo = lo_;
		uint64_t self = (uint64_t)(uintptr_t)pthread_self();
		if (hi_ && size && self > lo_ && self < hi_) {
			/* A glibc thread: its block holds, from the top, the
			 * descriptor and the static TLS, then the first frame
			 * (start_thread's return address at most at
			 * top - static TLS size, the descriptor included). */
			if (tls_static_size && tls_static_size < hi_ - lo_ &&
			    hi_ - tls_static_size > (uint64_t)(uintptr_t)&attr)
				ha_ts.stack_hi = hi_ - tls_static_size;
		} else if (hi_ && size && main_stack_end > lo_ && main_stack_end < hi_ &&
		           main_stack_end > (uint64_t)(uintptr_t)&attr) {
			/* The main thread: _start's frame ends at the entry sp. */
			uint64_t top = main_stack_end + 64;
			if (top < hi_)
				ha_ts.stack_hi = top;
		}
	}
}

/* The ring of the records about the block at p (ha_ring_route).  Only in
 * flight. */
static inline struct ha_ring_hdr *ring_of(const void *p)
{
	return ring_hdrs[ha_ring_route((uint64_t)(uintptr_t)p, cfg.rings)];
}

/* This thread's copy of ring h's cons (ha_ring_reserve), reset for every
 * session (a copy from an earlier ring could be ahead of this one's cons)
 * and whenever the thread writes to another ring than the last (most
 * threads write to the ring of their own arena).  Only in flight. */
static inline uint64_t *cons_seen(const struct ha_ring_hdr *h)
{
	uint32_t sess = __atomic_load_n(&session, __ATOMIC_RELAXED);
	/* The header address's low 32 bits tell the rings of one mapping
	 * apart: they are i * (36 KiB + 2 * data_size) from the first, and no
	 * multiple below 16 of that is one of 2^32. */
	uint32_t r = (uint32_t)(uintptr_t)h;
	if (__builtin_expect(ha_ts.cons_session != sess || ha_ts.cons_ring != r, 0)) {
		ha_ts.cons_session = sess;
		ha_ts.cons_ring = r;
		ha_ts.cons_seen = 0;
	}
	return &ha_ts.cons_seen;
}

static inline void thread_setup(void)
{
	if (__builtin_expect(!ha_ts.tid || !ha_ts.rng || !ha_ts.stack_hi, 0))
		thread_setup_slow();
}

/* ------------------------------------------------------------------ */
/* records                                                             */
/* ------------------------------------------------------------------ */

/* A record's time stamp: CLOCK_MONOTONIC_COARSE, the time of the last
 * timer tick (a few ms of resolution; nothing needs finer): a read of the
 * vDSO's data page, a quarter of the cost of the precise clock. */
static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

int ha_sampler_active(void)
{
	return __atomic_load_n(&active, __ATOMIC_ACQUIRE) != 0;
}

/* Free the slots of threads that have exited (only when none is free). */
static void reclaim_slots(void)
{
	for (int i = 0; i < INFLIGHT_SLOTS; i++) {
		uint32_t tid = __atomic_load_n(&slots[i].tid, __ATOMIC_ACQUIRE);
		if (tid && !__atomic_load_n(&slots[i].busy, __ATOMIC_ACQUIRE) &&
		    syscall(SYS_tgkill, getpid(), tid, 0) < 0 && errno == ESRCH)
			__atomic_compare_exchange_n(&slots[i].tid, &tid, 0, 0, __ATOMIC_SEQ_CST,
			                            __ATOMIC_RELAXED);
	}
}

/* This thread's slot, claimed on first use; NULL if there was none to take
 * (the thread then counts in shared_inflight for good). */
static struct inflight_slot *my_slot(void)
{
	uint32_t gen = __atomic_load_n(&slots_gen, __ATOMIC_ACQUIRE);
	if (ha_ts.slot && ha_ts.slot_gen == gen)
		return ha_ts.slot == NO_SLOT ? NULL : &slots[ha_ts.slot - 1];
	/* A vfork() child on this thread claims nothing: with its own pid,
	 * tgkill would call the parent's live threads exited. */
	if (!ha_tls_same_process())
		return NULL;
	if (!ha_ts.tid)
		ha_ts.tid = (uint32_t)syscall(SYS_gettid);
	ha_ts.slot_gen = gen;
	ha_ts.slot = NO_SLOT;
	int saved_errno = errno;
	for (int pass = 0; pass < 2 && ha_ts.slot == NO_SLOT; pass++) {
		if (pass)
			reclaim_slots();
		for (int i = 0; i < INFLIGHT_SLOTS; i++) {
			uint32_t expect = 0;
			if (!__atomic_load_n(&slots[i].tid, __ATOMIC_RELAXED) &&
			    __atomic_compare_exchange_n(&slots[i].tid, &expect, ha_ts.tid, 0,
			                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
				ha_ts.slot = (uint32_t)i + 1;
				break;
			}
		}
	}
	errno = saved_errno;
	return ha_ts.slot == NO_SLOT ? NULL : &slots[ha_ts.slot - 1];
}

static void ring_leave(struct inflight_slot *s)
{
	if (s)
		__atomic_store_n(&s->busy, s->busy - 1, __ATOMIC_RELEASE);
	else
		__atomic_fetch_sub(&shared_inflight, 1, __ATOMIC_SEQ_CST);
}

/* Enter the ring-writing section; 0 if no session is active.  (The
 * exchange orders the slot's store before the load of active, as the
 * store of active in ha_sampler_stop is ordered before its load of the
 * slots: one of the two sees the other.) */
static int ring_enter(struct inflight_slot *s)
{
	if (s)
		__atomic_exchange_n(&s->busy, s->busy + 1, __ATOMIC_SEQ_CST);
	else
		__atomic_fetch_add(&shared_inflight, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&active, __ATOMIC_SEQ_CST))
		return 1;
	ring_leave(s);
	return 0;
}

struct ha_ring_hdr *ha_sampler_hold(void)
{
	return ring_enter(my_slot()) ? cfg.ring : NULL;
}

void ha_sampler_release(void)
{
	ring_leave(my_slot());
}

/* Add this thread's counts to the shared totals if the last time was
 * FLUSH_PERIOD_NS ago (now: a record's time stamp).  Locked additions to
 * lines the other threads write too cost more than the rest of a record
 * when done for every record. */
static void flush_counts(uint64_t now)
{
	if (now - ha_ts.flushed_ns < FLUSH_PERIOD_NS && ha_ts.flushed_ns)
		return;
	ha_ts.flushed_ns = now;
	ha_counters_flush();
	if (ha_ts.samples)
		__atomic_fetch_add(&n_samples, ha_ts.samples, __ATOMIC_RELAXED);
	if (ha_ts.frees)
		__atomic_fetch_add(&n_frees, ha_ts.frees, __ATOMIC_RELAXED);
	ha_ts.samples = ha_ts.frees = 0;
}

/* Copy len bytes from addr, which may run into unmapped memory: one iovec
 * per page, so that process_vm_readv (on our own process: no fault, no
 * signal) returns exactly the pages before the first hole.  Returns the
 * bytes copied (0 if the call is refused, e.g. by a seccomp filter). */
static uint64_t copy_unknown_stack(void *dst, uint64_t addr, uint64_t len)
{
	enum { PAGE = 4096, MAX_IOV = 64 };
	struct iovec local = { dst, len }, remote[MAX_IOV];
	int n = 0;
	for (uint64_t a = addr, end = addr + len; a < end && n < MAX_IOV; n++) {
		uint64_t next = (a & ~(uint64_t)(PAGE - 1)) + PAGE;
		if (next > end)
			next = end;
		remote[n] = (struct iovec){ (void *)(uintptr_t)a, next - a };
		a = next;
	}
	long got = syscall(SYS_process_vm_readv, __atomic_load_n(&owner, __ATOMIC_RELAXED), &local, 1UL,
	                   remote, (unsigned long)n, 0UL);
	return got > 0 ? (uint64_t)got & ~7ull : 0;
}

/* Where a record goes: the ring, or (HA_BENCH_PRIVATE_BUF, bench/run's
 * "private buffer" agent only, never installed) a buffer of the writing
 * thread's own that nobody reads, L2-sized and reused at once: what the
 * records would cost if their lines never left the writing core.  Taken
 * apart from the shared ring in bench/run's breakdown of the sampling's
 * cost; the attacher then sees no records but the first.  With
 * HA_BENCH_SHARED_PROD too (bench/run's "shared prod" agent) every
 * reservation still makes the CAS of the shared ring's prod, on a line of
 * this agent's own that all writing threads CAS: the private buffer's
 * cost plus the contended line, which tells the ring's two costs apart
 * (the CAS, and the record lines that cycle through the ring). */
#ifdef HA_BENCH_PRIVATE_BUF
#define PRIVATE_BUF_BYTES (256u << 10)
static __thread char *private_buf;
static __thread uint64_t private_pos;
static void *record_reserve(struct ha_ring_hdr *h, uint32_t len, uint64_t *at)
{
	(void)h;
	if (!private_buf) {
		void *b = mmap(NULL, PRIVATE_BUF_BYTES + 65536, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b == MAP_FAILED)
			return NULL;
		private_buf = b;
	}
#ifdef HA_BENCH_SHARED_PROD
	static uint64_t shared_prod __attribute__((aligned(64)));
	uint64_t pos = __atomic_load_n(&shared_prod, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&shared_prod, &pos, pos + len, 1, __ATOMIC_ACQ_REL,
	                                    __ATOMIC_RELAXED))
		;
#endif
	*at = private_pos;
	private_pos += len;
	return private_buf + (*at & (PRIVATE_BUF_BYTES - 1));
}
static void record_publish(struct ha_ring_hdr *h, void *rec, uint64_t at, uint32_t len,
                           uint16_t type, uint16_t flags)
{
	(void)h;
	struct ha_rec_hdr *r = rec;
	r->len = len;
	r->type = type;
	r->flags = flags;
	__atomic_store_n(&r->stamp, ha_ring_stamp(at), __ATOMIC_RELEASE);
}
#else
static inline void *record_reserve(struct ha_ring_hdr *h, uint32_t len, uint64_t *at)
{
	return ha_ring_reserve(h, cfg.data_size, len, cfg.block, at, cons_seen(h));
}
static inline void record_publish(struct ha_ring_hdr *h, void *rec, uint64_t at, uint32_t len,
                                  uint16_t type, uint16_t flags)
{
	ha_ring_publish(h, &cfg.ring->consumer_waiting, rec, at, len, type, flags);
}
#endif

/* Ask for the lines a record of bytes (0: one with the whole stack) will
 * probably take (the ring's next
 * position: another thread may reserve it first) for writing, before the
 * live-set work of the sample, so that taking them from the consumer's
 * cache overlaps it instead of stalling the record's stores.  A prefetch
 * never faults; only while in flight (the ring stays mapped). */
static void prefetch_record(struct ha_ring_hdr *h, uint64_t bytes)
{
	enum { MAX_LINES = 16 };
	uint64_t pos = __atomic_load_n(&h->prod, __ATOMIC_RELAXED);
	uint64_t sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	if (!bytes)
		bytes = sizeof(struct ha_rec_sample) +
		        (sp >= ha_ts.stack_lo && sp < ha_ts.stack_hi ? ha_ts.stack_hi - sp : 0);
	uint64_t lines = bytes / 64 + 1;
	const char *d = ha_ring_data(h);
	for (uint64_t i = 0; i < lines && i < MAX_LINES; i++)
		__asm__ volatile("prefetchw %0" : : "m"(d[(pos + 64 * i) & (cfg.data_size - 1)]));
}

/* Can this sample name its stack instead of copying it (ref filled)?  Only
 * a whole copy of the thread's own stack has entries.  Inlined into
 * ha_sample_alloc like write_sample: the same rsp, the same rbp. */
__attribute__((always_inline)) static inline int sample_by_ref(struct ha_rec_sref *ref)
{
	uint64_t lo, rbp;
	__asm__ volatile("mov %%rsp, %0\n\tmov %%rbp, %1" : "=r"(lo), "=r"(rbp));
	if (!(lo >= ha_ts.stack_lo && lo < ha_ts.stack_hi))
		return 0;
	uint64_t len = (ha_ts.stack_hi - lo) & ~7ull;
	return len <= cfg.stack_bytes && ha_sref_find(cfg.ring, lo, len, rbp, ref);
}

/* The agent's own object, from its ELF header to its end: the linker's
 * own names for them (hence reserved), bound here, so that the program's
 * _end never interposes. */
/* NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): the linker's */
extern const char __ehdr_start[] __attribute__((visibility("hidden")));
/* NOLINTNEXTLINE(bugprone-reserved-identifier,cert-dcl37-c,cert-dcl51-cpp): the linker's */
extern const char _end[] __attribute__((visibility("hidden")));

/* The program's return address from the allocation function: the first
 * one up the frame-pointer chain from fp (ha_sample_alloc's frame) that
 * is not the agent's.  Only the agent's own frames are read -- built with
 * frame pointers, each links to its caller's, and a hook reached by a
 * jump from another has no frame to link -- and only inside this thread's
 * stack, moving up; 0 where that does not hold (a signal stack, a thread
 * whose bounds are unknown: stack_hi 0). */
__attribute__((always_inline)) static inline uint64_t program_caller(uint64_t fp)
{
	for (int k = 0; k < 4; k++) {
		if (!ha_ts.stack_hi || fp < ha_ts.stack_lo || fp + 16 > ha_ts.stack_hi || (fp & 7))
			return 0;
		const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;
		uint64_t ra = frame[1];
		if (ra < (uint64_t)(uintptr_t)__ehdr_start || ra >= (uint64_t)(uintptr_t)_end)
			return ra;
		if (frame[0] <= fp)
			return 0;
		fp = frame[0];
	}
	return 0;
}

/* The Python section, ending at end: the frames, then struct ha_rec_py. */
static void write_py(char *end, uint32_t n)
{
	struct ha_rec_py *t = (struct ha_rec_py *)(end - sizeof *t);
	struct ha_py_frame *f = (struct ha_py_frame *)((char *)t - n * sizeof *f);
	uint32_t flags, got = ha_pywalk(f, n, &flags);
	if (got < n) /* cannot be (the chain is this thread's): keep the layout */
		memmove((char *)t - got * sizeof *f, f, got * sizeof *f);
	t->n = got;
	t->flags = flags;
}

/* Capture the registers and copy the stack into a new record.  Inlined
 * into ha_sample_alloc: the captured rip, rsp and callee-saved registers
 * belong to that frame, which the attacher unwinds from (its CFI holds at
 * any instruction) and then skips as the agent's own; one frame fewer of
 * ours in every stack copy. */
__attribute__((always_inline)) static inline void write_sample(struct ha_ring_hdr *h, void *p,
                                                               size_t size, enum ha_alloc_func fn,
                                                               unsigned kind, uint64_t interval,
                                                               const struct ha_rec_sref *ref)
{
	/* rsp first (it is back where it was whenever the record is filled: no
	 * alloca, and the pushes of a call with stack arguments are popped), the
	 * other registers straight into the record once it is reserved -- no
	 * copy of them in this frame, which every sample copies too. */
	uint64_t lo, len;
	__asm__ volatile("mov %%rsp, %0" : "=r"(lo));
	uint16_t flags = 0;
	/* On this thread's own stack the copy ends at its outermost frame and
	 * is a memcpy.  Anywhere else (a signal stack, a coroutine's stack,
	 * a clone child's) the bounds are unknown: copy up to the cap through
	 * the kernel, which stops at the first unmapped page instead of
	 * faulting. */
	int own_stack = lo >= ha_ts.stack_lo && lo < ha_ts.stack_hi;
	len = own_stack ? (ha_ts.stack_hi - lo) & ~7ull : cfg.stack_bytes & ~7u;
#ifdef HA_BENCH_NO_STACK
	len = 0; /* bench/run's "no stack copy" agent only: records without stacks */
#endif
	if (len > cfg.stack_bytes) {
		len = cfg.stack_bytes & ~7u;
		flags |= HA_REC_F_TRUNCATED;
	}
	if (ref)
		flags |= HA_REC_F_SREF;
	/* Python frames go at the record's end (ha_py.h): counted now, written
	 * into the record once it is reserved. */
	uint32_t py_n = 0, py_flags = 0, py_bytes = 0;
	if (ha_pywalk_on()) {
		py_n = ha_pywalk(NULL, 0, &py_flags);
		if (py_n || py_flags) {
			py_bytes = (uint32_t)(sizeof(struct ha_rec_py) + py_n * sizeof(struct ha_py_frame));
			flags |= HA_REC_F_PY;
		}
	}
	uint32_t rec_len = ha_ring_round((uint32_t)(sizeof(struct ha_rec_sample) +
	                                            (ref ? sizeof *ref : len) + py_bytes));
	uint64_t at;
	char *rec = record_reserve(h, rec_len, &at);
	if (!rec)
		return;
	struct ha_rec_sample *s = (struct ha_rec_sample *)rec;
	uint64_t s_time = now_ns();
	s->seq = ha_ts.seq++;
	s->time_ns = s_time;
	s->addr = (uint64_t)(uintptr_t)p;
	s->size = size;
	s->tid = ha_ts.tid;
	s->func = (uint16_t)fn;
	s->kind = (uint16_t)kind;
	s->pad2 = 0;
	s->interval = interval;
	s->caller = program_caller((uint64_t)(uintptr_t)__builtin_frame_address(0));
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"
	                 "mov %%rax, 0(%0)\n\t"
	                 "mov %%rsp, 8(%0)\n\t"
	                 "mov %%rbp, 16(%0)\n\t"
	                 "mov %%rbx, 24(%0)\n\t"
	                 "mov %%r12, 32(%0)\n\t"
	                 "mov %%r13, 40(%0)\n\t"
	                 "mov %%r14, 48(%0)\n\t"
	                 "mov %%r15, 56(%0)\n\t"
	                 :
	                 : "r"(&s->regs)
	                 : "rax", "memory");
	uint64_t *dst = (uint64_t *)(s + 1);
	if (ref) {
		memcpy(dst, ref, sizeof *ref);
		len = 0;
	} else if (own_stack) {
		/* libc's memcpy: wide stores, a quarter of the store-buffer
		 * entries of a word loop for lines that are not ours yet. */
		memcpy(dst, (const void *)(uintptr_t)lo, len);
	} else {
		len = copy_unknown_stack(dst, lo, len);
	}
	s->stack_len = (uint32_t)len;
	if (py_bytes)
		write_py(rec + rec_len, py_n);
	record_publish(h, rec, at, rec_len, HA_REC_SAMPLE, flags);
	ha_ts.samples++;
	flush_counts(s_time);
}

void ha_sample_alloc(void *p, size_t size, enum ha_alloc_func fn, unsigned kind)
{
	int saved_errno = errno;
	if (ha_hook_guard || !ha_tls_same_process())
		goto out; /* an allocation by our own sampling code, or by a vfork
		           * child (its memory is the parent's: never sampled) */
	uint32_t sess = __atomic_load_n(&session, __ATOMIC_ACQUIRE);
	if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE)) {
		ha_ts.countdown = DORMANT_COUNTDOWN;
		ha_counters_flush();
		goto out;
	}
	ha_hook_guard = 1;
	thread_setup();
	if (ha_ts.session != sess) {
		/* First look at this session: start a fresh countdown here (the
		 * exponential has no memory, so this adds no bias) and take this
		 * allocation off it like any other: sampled if it reaches the
		 * countdown, with probability 1 - exp(-size / interval), the
		 * weight the attacher gives it.  (Skipping it would never sample
		 * a thread's first allocation of a session, however large.) */
		ha_ts.session = sess;
		/* Calls made before this session are not its calls. */
		memcpy(ha_tls.flushed, ha_tls.calls, sizeof ha_tls.flushed);
		ha_ts.samples = ha_ts.frees = 0;
		ha_ts.flushed_ns = 0;
		if (cfg.interval > 1) {
			ha_ts.countdown = ha_countdown_draw(cfg.interval) - (int64_t)size;
			if (ha_ts.countdown >= 0) {
				ha_hook_guard = 0;
				goto out;
			}
		}
	}
	uint64_t drawn_with = ha_ts.interval, next = cfg.interval;
	struct inflight_slot *slot = my_slot();
#ifdef HA_BENCH_DECIDE_ONLY
	/* bench/run's "decisions only" agent: the countdown runs out and is
	 * drawn again, nothing is recorded (no live set, no ring, no frees). */
	if (0) {
#else
	if (ring_enter(slot)) {
#endif
		/* Only in flight: the ring may be unmapped the moment we leave. */
		next = current_interval();
		struct ha_rec_sref ref;
		struct ha_ring_hdr *h = ring_of(p);
		int by_ref = sample_by_ref(&ref);
		prefetch_record(h, by_ref ? sizeof(struct ha_rec_sample) + sizeof ref : 0);
		int tracked = p && ha_ls_insert(p);
		if (tracked) {
			if (kind == HA_REC_KIND_MMAP && !ha_mmap_seen)
				__atomic_store_n(&ha_mmap_seen, 1, __ATOMIC_RELAXED);
			write_sample(h, p, size, fn, kind, drawn_with, by_ref ? &ref : NULL);
		} else if (p) {
			__atomic_fetch_add(&n_untracked, 1, __ATOMIC_RELAXED);
		}
		ring_leave(slot);
	}
	ha_ts.countdown = ha_countdown_draw(next);
	ha_hook_guard = 0;
out:
	errno = saved_errno;
}

void ha_sample_free(void *p)
{
	int saved_errno = errno;
	if (!ha_ls_contains(p))
		goto out;
	struct inflight_slot *slot = my_slot();
	if (!ring_enter(slot))
		goto out;
	if (ha_ls_remove(p)) {
		uint32_t len = ha_ring_round(sizeof(struct ha_rec_free));
		uint64_t at;
		struct ha_ring_hdr *h = ring_of(p);
		struct ha_rec_free *f = record_reserve(h, len, &at);
		if (f) {
			uint64_t t = now_ns();
			f->seq = ha_ts.seq++;
			f->time_ns = t;
			f->addr = (uint64_t)(uintptr_t)p;
			f->tid = ha_ts.tid;
			f->pad = 0;
			record_publish(h, f, at, len, HA_REC_FREE, 0);
			ha_ts.frees++;
			flush_counts(t);
		}
	}
	ring_leave(slot);
out:
	errno = saved_errno;
}

void ha_sampler_note_modules(void)
{
	int saved_errno = errno;
	struct inflight_slot *slot = my_slot();
	if (ring_enter(slot)) {
		uint32_t len = ha_ring_round(sizeof(struct ha_rec_hdr));
		uint64_t at;
		/* Stack references of the old modules no longer hold (see struct
		 * ha_sref); the record tells the attacher which generation is new.
		 * In every ring: the samples after it in any of them may have
		 * pcs in the new modules. */
		uint32_t gen = __atomic_add_fetch(&cfg.ring->modules_gen, 1, __ATOMIC_SEQ_CST);
		for (uint32_t i = 0; i < cfg.rings; i++) {
			struct ha_ring_hdr *h = ring_hdrs[i];
			void *r = ha_ring_reserve(h, cfg.data_size, len, cfg.block, &at, cons_seen(h));
			if (r)
				ha_ring_publish(h, &cfg.ring->consumer_waiting, r, at, len,
				                HA_REC_MODULES, (uint16_t)gen);
		}
		ring_leave(slot);
	}
	errno = saved_errno;
}

void ha_sampler_start(const struct ha_sampler_cfg *c)
{
	if (ha_ls_setup() != 0)
		return; /* no live set: the session samples nothing */
	if (!tls_static_size) {
		void (*info)(size_t *, size_t *) =
			(void (*)(size_t *, size_t *))ha_imp.dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
		void **end = ha_imp.dlsym(RTLD_DEFAULT, "__libc_stack_end");
		size_t sz = 0, al = 0;
		if (info)
			info(&sz, &al);
		tls_static_size = sz;
		main_stack_end = end ? (uint64_t)(uintptr_t)*end : 0;
	}
	cfg = *c;
	ha_pywalk_start(&c->py);
	for (uint32_t i = 0; i < HA_RINGS_MAX; i++)
		ring_hdrs[i] = i < c->rings ? ha_ring_at(c->ring, c->data_size, i) : c->ring;
	n_samples = n_frees = n_untracked = 0;
	owner = getpid();
	ha_mmap_seen = 0;
	uint32_t s = __atomic_load_n(&session, __ATOMIC_RELAXED) + 1;
	__atomic_store_n(&session, s ? s : 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ring_taken, HA_RING_OURS, __ATOMIC_RELAXED);
	__atomic_store_n(&ring_hi, (uintptr_t)c->ring + ha_rings_map_len(c->data_size, c->rings),
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&ring_lo, (uintptr_t)c->ring, __ATOMIC_RELEASE);
	__atomic_store_n(&active, 1, __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------------ */
/* the program takes the ring away                                     */
/* ------------------------------------------------------------------ */

int ha_sampler_ring_overlaps(const void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, lo = __atomic_load_n(&ring_lo, __ATOMIC_ACQUIRE);
	uintptr_t hi = __atomic_load_n(&ring_hi, __ATOMIC_RELAXED);
	uintptr_t end = a + len < a ? UINTPTR_MAX : a + len;
	return lo < hi && a < hi && end > lo;
}

void ha_sampler_ring_taken(const void *addr, size_t len)
{
	/* No record after this; wait (boundedly) for the writers already in
	 * flight, but this thread's own (a signal handler inside a record)
	 * and those in the shared count, which cannot be told apart. */
	__atomic_store_n(&active, 0, __ATOMIC_SEQ_CST);
	uint32_t mine = ha_ts.slot_gen == __atomic_load_n(&slots_gen, __ATOMIC_ACQUIRE) &&
	                ha_ts.slot && ha_ts.slot != NO_SLOT ? ha_ts.slot - 1 : UINT32_MAX;
	for (int i = 0, waited = 0; i < INFLIGHT_SLOTS && waited < 20000; i++)
		while ((uint32_t)i != mine && __atomic_load_n(&slots[i].busy, __ATOMIC_SEQ_CST) != 0 &&
		       waited++ < 20000) {
			struct timespec t = { 0, 50000 };
			nanosleep(&t, NULL);
		}
	/* MORE while the range is being recorded: a second caller meanwhile
	 * sees it taken already */
	uint32_t expect = HA_RING_OURS;
	if (__atomic_compare_exchange_n(&ring_taken, &expect, HA_RING_TAKEN_MORE, 0,
	                                __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
		/* In whole pages: what munmap and mmap act on. */
		uintptr_t a = (uintptr_t)addr, e = a + len < a ? UINTPTR_MAX : a + len;
		taken_lo = a & ~(uintptr_t)4095;
		taken_hi = e > UINTPTR_MAX - 4095 ? UINTPTR_MAX & ~(uintptr_t)4095
		                                  : (e + 4095) & ~(uintptr_t)4095;
		__atomic_store_n(&ring_taken, HA_RING_TAKEN_ONCE, __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&ring_taken, HA_RING_TAKEN_MORE, __ATOMIC_RELEASE);
	}
}

int ha_sampler_ring_lost(uintptr_t *lo, uintptr_t *hi)
{
	uint32_t t = __atomic_load_n(&ring_taken, __ATOMIC_ACQUIRE);
	if (t == HA_RING_TAKEN_ONCE && lo && hi) {
		*lo = taken_lo;
		*hi = taken_hi;
	}
	return (int)t;
}

void ha_sampler_stop(void)
{
	__atomic_store_n(&active, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ring_hi, 0, __ATOMIC_RELAXED);
	/* Threads that entered before the store finish their record; none can
	 * enter after it.  The wait is as long as one stack copy. */
	for (int i = 0; i <= INFLIGHT_SLOTS; i++) {
		uint64_t *n = i < INFLIGHT_SLOTS ? NULL : &shared_inflight;
		while (n ? __atomic_load_n(n, __ATOMIC_SEQ_CST) != 0
		         : __atomic_load_n(&slots[i].busy, __ATOMIC_SEQ_CST) != 0) {
			struct timespec t = { 0, 50000 };
			nanosleep(&t, NULL);
		}
	}
	ha_pywalk_stop();
	ha_ls_clear();
}

void ha_sampler_fork_child(void)
{
	/* Only the forking thread exists in the child: nobody else is in
	 * flight, and the ring (shared with the parent) must never be written. */
	__atomic_store_n(&active, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ring_hi, 0, __ATOMIC_RELAXED);
	memset(slots, 0, sizeof slots);
	__atomic_store_n(&shared_inflight, 0, __ATOMIC_SEQ_CST);
	__atomic_fetch_add(&slots_gen, 1, __ATOMIC_SEQ_CST);
	ha_pywalk_stop();
	ha_ls_clear();
}

void ha_sampler_counters(uint64_t *samples, uint64_t *frees, uint64_t *untracked)
{
	*samples = __atomic_load_n(&n_samples, __ATOMIC_RELAXED);
	*frees = __atomic_load_n(&n_frees, __ATOMIC_RELAXED);
	*untracked = __atomic_load_n(&n_untracked, __ATOMIC_RELAXED);
}
