/* unwind.c -- unwind stacks copied out of the target (unwind.h): an
 * unwinder per target address space, and ha_unwind, which answers from
 * the whole-stack cache (unwind_scache.c) when it can and else walks the
 * copy (unwind_walk.c: a fast walk over CFI rules, else libunwind's remote
 * API, unwind_access.c, over the target's maps and files, unwind_maps.c)
 * and stores the walk.  unwind_int.h says which file owns what.
 *
 * All input (registers, stack bytes, the files, maps) is untrusted: every
 * read is bounds-checked, the number of frames is capped, and a frame whose
 * (pc, sp) repeats ends the walk. */
#define _GNU_SOURCE
#include "unwind_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct ha_unwinder *ha_unwinder_new(pid_t pid, char *err, size_t errlen)
{
	struct ha_unwinder *u = calloc(1, sizeof *u);
	int rc;

	if (!u) {
		ha_err(err, errlen, "out of memory");
		return NULL;
	}
	u->pid = pid;
	u->pages = calloc(PCACHE_N, sizeof *u->pages);
	if (!u->pages) {
		free(u);
		ha_err(err, errlen, "out of memory");
		return NULL;
	}
	u->pc_gen = 1;           /* calloc'ed pages have gen 0: invalid */
	u->pc_epoch_ms = ha_now_ms();
	rc = uw_load_maps(u);
	if (rc < 0 || !u->mi) {
		ha_err(err, errlen, "cannot read /proc/%d/maps: %s", (int)pid,
		       strerror(rc < 0 ? -rc : ENOMEM));
		ha_unwinder_free(u);
		return NULL;
	}
	u->as = unw_create_addr_space(&uw_accessors, 0);
	if (!u->as) {
		ha_err(err, errlen, "unw_create_addr_space failed");
		ha_unwinder_free(u);
		return NULL;
	}
	const char *v = getenv("HA_UNWIND_VERIFY");
	u->verify = v && *v && strcmp(v, "0") != 0;
	/* No register-state cache in libunwind: it keeps a frame's state by
	 * ip alone, computed at ip - 1 for a return address and at ip for the
	 * first frame, so one walk's states leaked into the next with the
	 * other meaning (fixed after 1.6: libunwind's pull request 1059).
	 * libunwind walks only what the fast walk cannot (none of python's
	 * stacks in a run of its allocation loop), behind the whole-stack
	 * cache: ~3 us a frame instead of ~0.6 there costs nothing that
	 * shows. */
	unw_set_caching_policy(u->as, UNW_CACHE_NONE);
	return u;
}

void ha_unwinder_free(struct ha_unwinder *u)
{
	if (!u)
		return;
	if (u->verify)
		fprintf(stderr, "heapattach: unwind verify: %llu fast walks compared with libunwind, "
		        "%llu differ; %llu walks by libunwind\n", (unsigned long long)u->verified,
		        (unsigned long long)u->verify_bad, (unsigned long long)u->slow_n);
	if (u->as)
		unw_destroy_addr_space(u->as);
	uw_images_free(u);
	ha_maps_free(&u->maps);
	free(u->mi);
	free(u->pages);
	uw_sc_free(u);
	free(u->rc);
	free(u);
}

/* The bytes of the copied stack a walk may read: none without a copy,
 * never past the end of the address space, and no byte that stands for a
 * module's (uw_copy_len). */
static inline size_t uw_stack_len(struct ha_unwinder *u, const struct ha_regs *regs,
                                  const uint8_t *stack, size_t stack_len)
{
	if (!stack)
		stack_len = 0;
	if (stack_len > UINT64_MAX - regs->rsp)
		stack_len = (size_t)(UINT64_MAX - regs->rsp);
	return uw_copy_len(u, regs->rsp, stack_len);
}

int ha_unwind(struct ha_unwinder *u, const struct ha_regs *regs, const uint8_t *stack,
              size_t stack_len, uint64_t *pcs, int max)
{
	struct uctx c;
	int n;

	if (u && u->sc)
		u->sc->last_ref = 0;
	if (!u || !regs || !pcs || max <= 0 || regs->rip == 0)
		return -1;
	/* Before anything, the cache's key included. */
	stack_len = uw_stack_len(u, regs, stack, stack_len);

	/* The whole-stack cache first: a hit reads no rules, no maps, no
	 * clock. */
	struct sc_rec *rec = NULL;
	if (!u->sc && !u->sc_off)
		uw_sc_new(u);
	if (u->sc && !u->sc_off && u->maps_gen &&
	    (n = sc_lookup(u, regs, stack, stack_len, pcs, max, &rec)) > 0)
		return n;
	u->sc_misses++;
	uctx_init(&c, u, regs, stack, stack_len);
	unsigned gen0 = u->maps_gen;
	n = uw_walk(u, &c, pcs, max, rec);
	if (rec && !c.unknown_ip && gen0 == u->maps_gen)
		uw_sc_store(u, regs, stack_len, stack, pcs, n, max);
	return n;
}

int ha_unwind_frames(struct ha_unwinder *u, const struct ha_regs *regs, const uint8_t *stack,
                     size_t stack_len, uint64_t *pcs, uint64_t *sps, int max)
{
	struct uctx c;

	if (!u || !regs || !pcs || !sps || max <= 0 || regs->rip == 0)
		return -1;
	stack_len = uw_stack_len(u, regs, stack, stack_len);
	uctx_init(&c, u, regs, stack, stack_len);
	c.sps = sps;
	return uw_walk(u, &c, pcs, max, NULL);
}
