/*
 * park.c -- the park: every thread of a busy target waits, for a moment, at
 * a safe point of our choosing, so that a reachability scan can stop them
 * all outside the allocator.
 *
 * heapattach --reach (src/reach/README.md): a scan needs every
 * thread out of the allocator at once, which stopping them at random never
 * finds on a target that allocates all the time.  So the scan asks, and
 * the threads come to it: the attacher makes the ring header's park_gen
 * odd, sets park_deadline (at most HA_PARK_MAX_MS ahead) and writes 1 to
 * ha_hot.park, our word, whose address the header's park_flag published.
 * A hook sees the word with one load of the line that holds ha_real[] of
 * malloc, free, calloc and realloc (ha_hot: the line the hook's own jump
 * reads anyway) and one predictable branch; only then does it call
 * ha_park_wait(), out of line: at the hook's ENTRY (the hot hooks are tail
 * calls: there is no exit of ours after the real allocator returns, and
 * giving that up would cost every call a frame), that is on its way in
 * from the program, before anything of ours or the allocator's is begun:
 * not nested (depth 0: no hook's real call below it; the guard clear: not
 * our own code), not in a vfork child, no lock of ours held, no record in
 * flight.  There it counts itself in park_parked and waits on park_gen
 * (FUTEX_WAIT_BITSET, shared, absolute CLOCK_MONOTONIC timeout = the
 * deadline) until the generation changes or the deadline passes; then it
 * uncounts and goes on.  Once per generation (ha_tls.park_done): if the
 * attacher dies asking, each thread waits at most once, until the
 * deadline.  The header is held as a record is (ha_sampler_hold), so
 * detach waits for the parked (at most the deadline; ha_got_restore ends
 * the park first and wakes them; ha_got_patch publishes the word: the park
 * works while the hooks are in).  operator new and delete park at their own
 * entry and mark the thread (park_skip) so that the malloc or free their
 * real function calls does not park inside them.  The attacher still
 * unwinds every parked thread (inject_safe.h): a park under a frame of the
 * allocator (a signal handler's malloc over libc's own) is refused there.
 * Errno is kept.  A word set while no session can use it (the attacher
 * racing a detach, a fork() child) is cleared by the first hook that sees
 * no request.  No signal, no allocation, no stdio.
 */
#define _GNU_SOURCE
#include "park.h"

#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "copy_stub.h"
#include "ha_proto.h"
#include "sampler.h"

static void word_clear(uint32_t *word)
{
	uint32_t one = 1;
	(void)__atomic_compare_exchange_n(word, &one, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

__attribute__((noinline, cold)) void ha_park_wait(uint32_t *word, int new_or_delete)
{
	if (ha_depth || ha_hook_guard || !ha_tls_same_process())
		return;
	if (ha_tls.park_skip) {
		ha_tls.park_skip = 0;
		if (!new_or_delete)
			return; /* inside operator new or delete */
	}
	int saved_errno = errno;
	struct ha_ring_hdr *h = ha_sampler_hold();
	if (!h) {
		word_clear(word); /* no session (or a fork() child): a stale word */
		errno = saved_errno;
		return;
	}
	uint32_t gen = __atomic_load_n(&h->park_gen, __ATOMIC_ACQUIRE);
	if (!(gen & 1)) {
		word_clear(word); /* no request: a stale word */
	} else if (gen != ha_tls.park_done) {
		ha_tls.park_done = gen;
		uint64_t deadline = __atomic_load_n(&h->park_deadline, __ATOMIC_RELAXED);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		uint64_t ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		if (deadline > ns && deadline - ns <= HA_PARK_MAX_MS * 1000000ull) {
			struct timespec until = { (time_t)(deadline / 1000000000ull),
			                          (long)(deadline % 1000000000ull) };
			__atomic_fetch_add(&h->park_parked, 1, __ATOMIC_SEQ_CST);
			(void)syscall(SYS_futex, &h->park_gen, FUTEX_WAIT_BITSET, gen, &until, NULL,
			              FUTEX_BITSET_MATCH_ANY);
			__atomic_fetch_sub(&h->park_parked, 1, __ATOMIC_SEQ_CST);
		}
	}
	ha_sampler_release();
	errno = saved_errno;
}

void ha_park_publish(uint32_t *word)
{
	struct ha_ring_hdr *h = ha_sampler_hold();
	if (!h)
		return;
	__atomic_store_n(&h->park_flag, (uint64_t)(uintptr_t)word, __ATOMIC_RELEASE);
	/* the scan's system calls run there (copy_stub.c); never taken back */
	__atomic_store_n(&h->copy_stub, ha_copy_stub_addr(), __ATOMIC_RELEASE);
	ha_sampler_release();
}

void ha_park_end(uint32_t *word)
{
	__atomic_store_n(word, 0, __ATOMIC_RELAXED);
	struct ha_ring_hdr *h = ha_sampler_hold();
	if (!h)
		return;
	__atomic_store_n(&h->park_flag, 0, __ATOMIC_RELEASE);
	uint32_t gen = __atomic_load_n(&h->park_gen, __ATOMIC_ACQUIRE);
	if ((gen & 1) && __atomic_compare_exchange_n(&h->park_gen, &gen, gen + 1, 0,
	                                             __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		(void)syscall(SYS_futex, &h->park_gen, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
	ha_sampler_release();
}
