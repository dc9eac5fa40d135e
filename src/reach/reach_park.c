/* reach_park.c -- the attacher's side of the park: the threads of a busy
 * target asked to wait, at the entry of an allocation hook (outside the
 * allocator), while a scan stops them (agent/park.c).
 *
 * The ring header (ha_proto.h) both sides map holds the request: park_gen,
 * a shared futex word, odd while a park is asked; park_deadline, when the
 * threads stop waiting even if we die (at most HA_PARK_MAX_MS ahead); and
 * park_parked, the threads waiting now.  The hooks look at a word of the
 * agent's own (its address in park_flag), so that the test costs them no
 * line of their own: we write it through process_vm_writev (our ptrace
 * rights), after checking it lies in a writable private mapping of the
 * target (the header is the target's to write).  Asked: the deadline, the
 * generation made odd, the word set.  Ended: the word cleared, the
 * generation made even, FUTEX_WAKE to every waiter.  The agent clears a
 * word it sees set with no request (a scan racing a detach), so the word
 * is set again before each look (reach_park_poke). */
#define _GNU_SOURCE
#include "reach_int.h"
#include "ha_proto.h"
#include "util.h"

#include <limits.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int write_word(const struct reach_park *p, uint32_t v)
{
	struct iovec l = { &v, sizeof v }, r = { (void *)(uintptr_t)p->flag, sizeof v };
	return process_vm_writev(p->pid, &l, 1, &r, 1, 0) == (ssize_t)sizeof v ? 0 : -1;
}

int reach_park_ask(struct reach_park *p, struct ha_ring_hdr *h, pid_t pid,
                   const struct ha_maps *maps, int ms)
{
	memset(p, 0, sizeof *p);
	if (!h)
		return 0;
	uint64_t flag = __atomic_load_n(&h->park_flag, __ATOMIC_ACQUIRE);
	const struct ha_map *m = flag && flag % 4 == 0 ? ha_maps_find_addr(maps, flag) : NULL;
	if (!m || !(m->prot & PROT_WRITE) || flag + 4 > m->end)
		return 0; /* an agent without the park, or a word not where it may be */
	if (ms > HA_PARK_MAX_MS)
		ms = HA_PARK_MAX_MS;
	p->h = h;
	p->pid = pid;
	p->flag = flag;
	p->deadline = mono_ns() + (uint64_t)ms * 1000000ull;
	__atomic_store_n(&h->park_deadline, p->deadline, __ATOMIC_SEQ_CST);
	uint32_t gen = __atomic_load_n(&h->park_gen, __ATOMIC_SEQ_CST);
	p->gen = (gen | 1) + 2 * (gen & 1); /* the next odd one */
	__atomic_store_n(&h->park_gen, p->gen, __ATOMIC_SEQ_CST);
	if (write_word(p, 1) != 0) {
		reach_park_end(p);
		return 0;
	}
	p->on = 1;
	return 1;
}

void reach_park_poke(const struct reach_park *p)
{
	if (p->on)
		(void)write_word(p, 1);
}

uint32_t reach_park_parked(const struct reach_park *p)
{
	return p->h ? __atomic_load_n(&p->h->park_parked, __ATOMIC_SEQ_CST) : 0;
}

int reach_park_wait(const struct reach_park *p, uint32_t want, double until_ms)
{
	for (;;) {
		if (reach_park_parked(p) >= want)
			return 1;
		if (ha_now_ms() >= until_ms || mono_ns() >= p->deadline)
			return 0;
		struct timespec ts = { 0, 50000L };
		nanosleep(&ts, NULL);
	}
}

void reach_park_end(struct reach_park *p)
{
	if (!p->h)
		return;
	if (p->flag)
		(void)write_word(p, 0);
	uint32_t gen = p->gen;
	if (gen & 1)
		(void)__atomic_compare_exchange_n(&p->h->park_gen, &gen, gen + 1, 0, __ATOMIC_SEQ_CST,
		                                  __ATOMIC_SEQ_CST);
	(void)syscall(SYS_futex, &p->h->park_gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	p->on = 0;
	p->h = NULL;
}
