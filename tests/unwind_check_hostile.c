/* unwind_check_hostile.c -- the unwinder's self-test (tests/unwind_check.c)
 * on copies it must survive: damaged and cut-short copies, a pc past its
 * segment's bytes, the state of a return address in the first frame, a
 * thread's stack mapped where a file was.  Each check compares against a
 * fresh unwinder or libunwind, never against a figure written here. */
#define _GNU_SOURCE
#include "ha_proto.h"
#include "procmaps.h"
#include "unwind.h"
#include "unwind_int.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unwind_check.h"
#include "unit.h"

/* A pc in a module's text mapping but past its PT_LOAD's bytes (the
 * mapping's last byte: a segment's end is rounded up to a page) says
 * nothing about the rest of the module: unwinding it first must not spoil
 * the module for the unwinder (it once did, for the whole session:
 * tests/fuzz/fuzz_unwind found it).  With the fast walk and without. */
static void tail_pc(pid_t pid, const struct uc_record *r)
{
	struct ha_maps maps;
	struct ha_regs regs;
	uint64_t a[MAX_PCS], b[MAX_PCS];
	char err[256];
	if (ha_maps_read(pid, &maps) != 0)
		return;
	const struct ha_map *m = ha_maps_find_addr(&maps, r->regs[0]);
	uint64_t tail = m ? m->end - 1 : 0;
	ha_maps_free(&maps);
	EXPECT(tail != 0, "no mapping holds the capture's pc");
	for (int fast = 0; fast < 2 && tail; fast++) {
		struct ha_unwinder *fresh = ha_unwinder_new(pid, err, sizeof err);
		struct ha_unwinder *u = ha_unwinder_new(pid, err, sizeof err);
		EXPECT(fresh && u, "unwinders: %s", err);
		if (!fresh || !u) {
			ha_unwinder_free(fresh);
			ha_unwinder_free(u);
			return;
		}
		ha_unwinder_set_fast(fresh, fast);
		ha_unwinder_set_fast(u, fast);
		rec_regs(r, &regs);
		regs.rip = tail;
		ha_unwind(u, &regs, (const uint8_t *)(r + 1), r->stack_len, a, MAX_PCS);
		rec_regs(r, &regs);
		int na = ha_unwind(u, &regs, (const uint8_t *)(r + 1), r->stack_len, a, MAX_PCS);
		int nb = ha_unwind(fresh, &regs, (const uint8_t *)(r + 1), r->stack_len, b, MAX_PCS);
		EXPECT(na == nb && na > 2 && memcmp(a, b, (size_t)na * sizeof *a) == 0,
		       "%s: after a pc past the module's segment, %d frames; a fresh unwinder %d",
		       fast ? "fast walk" : "libunwind", na, nb);
		ha_unwinder_free(fresh);
		ha_unwinder_free(u);
	}
	printf("tail pc: a pc past a module's segment leaves its unwind tables usable\n");
}

/* libunwind (1.6) keeps the register state of a frame by its ip alone, but
 * computes it at ip - 1 for a return address and at ip itself for the
 * first frame: once an ip has been a return address, a first frame at
 * that very ip got the state of the byte before it (and the other way
 * round), so a walk depended on the walks before it (libunwind's fix,
 * its pull request 1059, is not in the version we build with).
 * tests/fuzz/fuzz_unwind found it.  Here: a return address X inside a
 * function, where the state at X - 1 is not the state at X (X = the entry
 * + k, the bytes around the first push), then a first frame at X: it must
 * unwind as on an unwinder that never saw X. */
static void prev_instr_state(pid_t pid)
{
	uint64_t entry = (uint64_t)(uintptr_t)&prev_instr_state, stack[64], a[MAX_PCS], b[MAX_PCS];
	char err[256];
	int bad = 0;
	for (int i = 0; i < 64; i++)
		stack[i] = 0x1000 + 8 * (uint64_t)i;     /* unmapped: each its own pc */
	for (uint64_t k = 1; k <= 16; k++) {
		struct ha_unwinder *u = ha_unwinder_new(pid, err, sizeof err);
		struct ha_unwinder *fresh = ha_unwinder_new(pid, err, sizeof err);
		EXPECT(u && fresh, "unwinders: %s", err);
		if (!u || !fresh) {
			ha_unwinder_free(u);
			ha_unwinder_free(fresh);
			return;
		}
		for (int i = 0; i < 2; i++) {
			struct ha_unwinder *v = i ? fresh : u;
			ha_unwinder_set_fast(v, 0);
			ha_unwinder_set_stack_cache(v, 0);
		}
		uint64_t x = entry + k, ret[4] = { x, 0x2000, 0x2008, 0x2010 };
		/* X as a return address: the first frame is a function's entry */
		struct ha_regs regs = { .rip = entry, .rsp = 0x7ff000000000ull, .rbp = 0 };
		ha_unwind(u, &regs, (const uint8_t *)ret, sizeof ret, a, MAX_PCS);
		/* X as the first frame */
		regs.rip = x;
		int na = ha_unwind(u, &regs, (const uint8_t *)stack, sizeof stack, a, MAX_PCS);
		int nb = ha_unwind(fresh, &regs, (const uint8_t *)stack, sizeof stack, b, MAX_PCS);
		if (na != nb || (na > 0 && memcmp(a, b, (size_t)na * sizeof *a) != 0)) {
			printf("  entry+%llu: %d pcs (%#llx...) after it was a return address, "
			       "%d (%#llx...) on a fresh unwinder\n", (unsigned long long)k, na,
			       na > 1 ? (unsigned long long)a[1] : 0ull, nb,
			       nb > 1 ? (unsigned long long)b[1] : 0ull);
			bad++;
		}
		ha_unwinder_free(u);
		ha_unwinder_free(fresh);
	}
	EXPECT(bad == 0, "libunwind: %d first frames unwound with the state of a return address", bad);
	printf("prev instr: a first frame at an ip seen as a return address unwinds alike\n");
}

/* A copy whose rsp lies where the maps last read had a file, now a stack
 * (a thread's stack mapped into a dlclose'd library's hole): cut to
 * nothing while the maps are that fresh, whole once they are read again
 * (uw_copy_end reads them at most every UW_REFRESH_MIN_MS, and never
 * remembered the cut: every copy of that thread failed for the session). */
static void stale_maps_copy(void)
{
	char err[256];
	size_t len = 16 * 4096;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	void *a = fd >= 0 ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (fd >= 0)
		close(fd);
	EXPECT(a != MAP_FAILED, "cannot map our own executable");
	if (a == MAP_FAILED)
		return;
	struct ha_unwinder *u = ha_unwinder_new(getpid(), err, sizeof err);
	EXPECT(u != NULL, "unwinder of ourselves: %s", err);
	void *b = mmap(a, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	EXPECT(b == a, "cannot map a stack where the file was");
	if (u && b == a) {
		uint64_t rsp = (uint64_t)(uintptr_t)a + 4096 + 8;
		size_t fresh = uw_copy_len(u, rsp, 8192);
		u->maps_ms -= 2 * UW_REFRESH_MIN_MS; /* as if read a while ago */
		size_t later = uw_copy_len(u, rsp, 8192);
		EXPECT(fresh == 0 && later == 8192,
		       "a copy at rsp in a file's old place: %zu bytes with fresh maps (0 expected), "
		       "%zu once they may be read again (8192 expected)", fresh, later);
		printf("stale maps: a copy where a file was mapped is whole once the maps are read again\n");
	}
	ha_unwinder_free(u);
	munmap(a, len);
}

/* Robustness: hostile or damaged input must not crash or run away. */
static void abuse(struct ha_unwinder *u, const struct uc_record *r)
{
	struct ha_regs regs;
	uint64_t pcs[MAX_PCS];
	uint8_t *junk = malloc(STACK_CAP);
	int n;

	rec_regs(r, &regs);
	n = ha_unwind(u, &regs, (const uint8_t *)(r + 1), 16, pcs, MAX_PCS);
	EXPECT(n >= 1 && n < 6, "truncated copy (16 bytes): %d frames", n);
	n = ha_unwind(u, &regs, NULL, 0, pcs, MAX_PCS);
	EXPECT(n >= 1 && n < 6, "no copy: %d frames", n);
	n = ha_unwind(u, &regs, (const uint8_t *)(r + 1), r->stack_len, pcs, 3);
	EXPECT(n == 3, "max=3: %d frames", n);
	regs.rip = 0;
	n = ha_unwind(u, &regs, (const uint8_t *)(r + 1), r->stack_len, pcs, MAX_PCS);
	EXPECT(n == -1, "rip=0: %d, expected -1", n);
	if (junk) {
		/* random stack and registers: bounded, no crash */
		srand(1);
		for (int k = 0; k < 200; k++) {
			for (int i = 0; i < STACK_CAP; i++)
				junk[i] = (uint8_t)rand();
			rec_regs(r, &regs);
			if (k & 1) {
				regs.rbp = regs.rsp + (uint64_t)(rand() % 4096);
				regs.rip += (uint64_t)(rand() % 256);
			}
			n = ha_unwind(u, &regs, junk, STACK_CAP, pcs, MAX_PCS);
			EXPECT(n >= 1 && n <= MAX_PCS, "junk stack: %d", n);
		}
		/* a self-referencing frame-pointer chain */
		for (int i = 0; i < STACK_CAP / 8; i++)
			((uint64_t *)junk)[i] = r->regs[1];
		rec_regs(r, &regs);
		regs.rbp = regs.rsp;
		n = ha_unwind(u, &regs, junk, STACK_CAP, pcs, MAX_PCS);
		EXPECT(n >= 1 && n <= MAX_PCS, "looping stack: %d", n);
		free(junk);
	}
	printf("robustness: truncated, empty, capped, rip=0, junk and looping stacks handled\n");
}

int uc_hostile_copies(struct ha_unwinder *u, pid_t pid, const struct uc_record *r)
{
	abuse(u, r);
	tail_pc(pid, r);
	prev_instr_state(pid);
	stale_maps_copy();
	return unit_failures;
}
