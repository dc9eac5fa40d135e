/* unwind_check.c -- self-test of src/unwind/unwind.c and src/symbolize/symbolize.c on real
 * stacks of live processes, and a measurement of their speed.
 *
 *   unwind_check                  forked children (unwind_child.c) build known call chains,
 *                                 capture their registers and copy their
 *                                 stack into shared memory (as the agent
 *                                 does in its malloc hook) and wait; we
 *                                 unwind and symbolize them by pid, check
 *                                 names, order, file:line and inlining,
 *                                 then time repeated unwinds; the fast
 *                                 walk must give libunwind's pcs on every
 *                                 capture, damaged and cut-short copies
 *                                 of it and 512 distinct call paths
 *   unwind_check --attach PID FILE [--expect NAME]... [--file BASENAME]
 *                                 the same checks on a capture another
 *                                 program wrote to FILE (struct uc_record
 *                                 + stack bytes) while it stays alive as
 *                                 PID (tests/t_unwind.sh builds C++ and
 *                                 frame-pointer-less targets that way)
 *
 * Prints what it finds; exits 0 if every check passed, 1 otherwise. */
#define _GNU_SOURCE
#include "ha_proto.h"
#include "procmaps.h"
#include "symbolize.h"
#include "unwind.h"
#include "unwind_int.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unwind_check.h"
#include "unit.h"

/* ------------------------------------------------------------------ checks */

void rec_regs(const struct uc_record *r, struct ha_regs *regs)
{
	memcpy(regs, r->regs, sizeof *regs);
}

/* Symbolize pcs[0..n) into f (inline frames expanded); frame -> pc index in
 * fpc. */
static int symbolize_all(struct ha_symbolizer *s, const uint64_t *pcs, int n,
                         struct ha_sym_frame *f, int *fpc)
{
	int nf = 0;
	for (int i = 0; i < n && nf < MAX_FR; i++) {
		int k = ha_symbolize(s, pcs[i], i > 0, f + nf, MAX_FR - nf);
		for (int j = 0; j < k; j++)
			fpc[nf + j] = i;
		nf += k;
	}
	return nf;
}

static void print_frames(const uint64_t *pcs, const struct ha_sym_frame *f, const int *fpc,
                         int nf)
{
	for (int i = 0; i < nf; i++)
		printf("  #%-2d %#14llx %s+%#llx %s%s (%s:%d)%s\n", i,
		       (unsigned long long)pcs[fpc[i]], ha_base_name(f[i].module),
		       (unsigned long long)f[i].rel_pc, f[i].inlined ? "[inlined] " : "",
		       f[i].function[0] ? f[i].function : "??",
		       f[i].file[0] ? ha_base_name(f[i].file) : "?", f[i].line,
		       f[i].build_id[0] ? "" : " (no build-id)");
}

/* f[0..nexp) must be names[] exactly, with lines[] (0 = any) in file_base. */
static void expect_prefix(const char *label, const struct ha_sym_frame *f, int nf,
                          const char *const *names, const int32_t *lines, int nexp,
                          const char *file_base)
{
	EXPECT(nf >= nexp, "%s: %d frames, expected at least %d", label, nf, nexp);
	for (int i = 0; i < nexp && i < nf; i++) {
		EXPECT(strcmp(f[i].function, names[i]) == 0, "%s: frame %d is '%s', expected '%s'",
		      label, i, f[i].function, names[i]);
		if (file_base)
			EXPECT(strcmp(ha_base_name(f[i].file), file_base) == 0,
			      "%s: frame %d (%s) in file '%s', expected %s", label, i, names[i],
			      f[i].file, file_base);
		if (lines && lines[i] > 0)
			EXPECT(f[i].line == lines[i], "%s: frame %d (%s) at line %d, expected %d", label,
			      i, names[i], f[i].line, lines[i]);
	}
}

static int find_fn(const struct ha_sym_frame *f, int nf, int from, const char *name)
{
	for (int i = from; i < nf; i++)
		if (strcmp(f[i].function, name) == 0)
			return i;
	return -1;
}

/* rel_pc must let a profile be re-symbolized later: pc - load bias.  For a
 * PIE or a shared object the bias is the start of its offset-0 mapping. */
static void check_rel_pc(const char *label, pid_t pid, const uint64_t *pcs,
                         const struct ha_sym_frame *f, const int *fpc, int nf)
{
	struct ha_maps maps;
	if (ha_maps_read(pid, &maps) != 0)
		return;
	for (int i = 0; i < nf; i++) {
		const struct ha_map *m = ha_maps_find_addr(&maps, pcs[fpc[i]]);
		const struct ha_map *mod = m ? ha_maps_module_of(&maps, m) : NULL;
		if (!mod || strstr(mod->path, ".so") == NULL)
			continue;       /* shared objects only: vaddr 0 at offset 0 */
		EXPECT(f[i].rel_pc == pcs[fpc[i]] - mod->start,
		      "%s: frame %d rel_pc %#llx, expected %#llx", label, i,
		      (unsigned long long)f[i].rel_pc,
		      (unsigned long long)(pcs[fpc[i]] - mod->start));
		EXPECT(strcmp(f[i].module, mod->path) == 0, "%s: frame %d module '%s', expected '%s'",
		      label, i, f[i].module, mod->path);
	}
	ha_maps_free(&maps);
}

/* CPU time of this thread in ms: "per core" figures that other load on the
 * machine does not distort (much). */
static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Unwind the same copy for ~0.3 s of CPU; report stacks/s and us/frame. */
static void bench(const char *label, struct ha_unwinder *u, const struct ha_regs *regs,
                  const uint8_t *stack, size_t len)
{
	uint64_t pcs[MAX_PCS];
	long iters = 0, frames = 0;
	double c0 = cpu_ms(), w0 = ha_now_ms(), t, w;
	int n = 0;
	do {
		for (int k = 0; k < 256; k++) {
			n = ha_unwind(u, regs, stack, len, pcs, MAX_PCS);
			frames += n;
		}
		iters += 256;
		t = cpu_ms() - c0;
		w = ha_now_ms() - w0;
	} while (t < 300 && w < 3000);
	printf("bench %-6s: %d frames/stack, %.0f stacks/s per core, %.3f us/stack, "
	       "%.3f us/frame (cpu time; wall %.0f stacks/s)\n",
	       label, n, iters / (t / 1e3), t * 1e3 / iters, t * 1e3 / frames, iters / (w / 1e3));
}

static void bench_sym(struct ha_symbolizer *s, const uint64_t *pcs, int n)
{
	struct ha_sym_frame f[32];
	long iters = 0;
	double t0 = ha_now_ms(), t;
	do {
		for (int k = 0; k < 1024; k++)
			for (int i = 0; i < n; i++)
				ha_symbolize(s, pcs[i], i > 0, f, 32);
		iters += 1024;
		t = ha_now_ms() - t0;
	} while (t < 100);
	printf("bench symbolize (cached): %.3f us/pc\n", t * 1e3 / ((double)iters * n));
}

/* ------------------------------------------------------------------ fast walk
 * The fast walk (per-pc rules) must give exactly libunwind's pcs: two
 * unwinders on the same process, neither with the stack cache, one without
 * the fast walk. */
struct pair {
	struct ha_unwinder *fast, *slow;
	long compared, differ, fp_differ, fp_random;
};

static int pair_open(struct pair *p, pid_t pid)
{
	char err[256];
	memset(p, 0, sizeof *p);
	p->fast = ha_unwinder_new(pid, err, sizeof err);
	p->slow = p->fast ? ha_unwinder_new(pid, err, sizeof err) : NULL;
	EXPECT(p->slow != NULL, "fast/slow unwinders: %s", err);
	if (!p->slow) {
		ha_unwinder_free(p->fast);
		return -1;
	}
	ha_unwinder_set_stack_cache(p->fast, 0);
	ha_unwinder_set_stack_cache(p->slow, 0);
	ha_unwinder_set_fast(p->slow, 0);
	return 0;
}

/* random: a stack of random bytes, where the frame-pointer fallback must
 * find nothing.  Elsewhere (damaged copies of a real stack: a return
 * address moved into the padding between functions, where no FDE is) a
 * walk that followed the frame pointer there, while libunwind's own
 * heuristic stopped sooner, is counted apart (fp_differ): it must agree
 * with libunwind on the first two frames and be the longer one. */
static void pair_check_fp(struct pair *p, const struct ha_regs *regs, const uint8_t *stack,
                          size_t len, int max, int random)
{
	uint64_t a[MAX_PCS], b[MAX_PCS], fp0, fp1, fr;
	ha_unwinder_fp_stats(p->fast, &fp0, &fr);
	int na = ha_unwind(p->fast, regs, stack, len, a, max);
	ha_unwinder_fp_stats(p->fast, &fp1, &fr);
	int nb = ha_unwind(p->slow, regs, stack, len, b, max);
	p->compared++;
	if (random && fp1 > fp0)
		p->fp_random++;
	int same = na == nb && (na <= 0 || memcmp(a, b, (size_t)na * 8) == 0);
	if (!same && !random && fp1 > fp0) {
		int k = 0;
		while (k < na && k < nb && a[k] == b[k])
			k++;
		if (k >= 2 && nb < na) {
			p->fp_differ++;
			return;
		}
	}
	if (!same) {
		if (p->differ++ < 5) {
			printf("  fast walk %d pcs, libunwind %d:", na, nb);
			for (int i = 0; i < (na > nb ? na : nb); i++)
				printf(" %llx/%llx", i < na ? (unsigned long long)a[i] : 0ull,
				       i < nb ? (unsigned long long)b[i] : 0ull);
			printf("\n");
		}
	}
}

static void pair_check(struct pair *p, const struct ha_regs *regs, const uint8_t *stack,
                       size_t len, int max)
{
	pair_check_fp(p, regs, stack, len, max, 0);
}

/* min_fast: how many of the stacks the fast walk must have done itself. */
static void pair_close(struct pair *p, const char *label, long min_fast)
{
	uint64_t fast, slow;
	ha_unwinder_fast_stats(p->fast, &fast, &slow);
	printf("%s: fast walk agrees with libunwind on %ld of %ld stacks (%llu walked fast, "
	       "%llu by libunwind; %ld damaged copies followed by frame pointer where libunwind "
	       "stopped; frame-pointer frames on random stacks: %ld)\n", label,
	       p->compared - p->differ - p->fp_differ, p->compared,
	       (unsigned long long)fast, (unsigned long long)slow, p->fp_differ, p->fp_random);
	EXPECT(p->differ == 0, "%s: fast walk differs from libunwind on %ld stacks", label, p->differ);
	EXPECT(p->fp_random == 0, "%s: the frame-pointer fallback found frames on %ld random stacks",
	       label, p->fp_random);
	EXPECT((long)fast >= min_fast, "%s: only %llu stacks walked fast, expected %ld", label,
	      (unsigned long long)fast, min_fast);
	ha_unwinder_free(p->fast);
	ha_unwinder_free(p->slow);
}

/* One capture, then the same capture with every word changed in turn
 * (damaged stacks), then random stacks, then cut short. */
static void fast_agrees(const char *label, pid_t pid, const struct uc_record *r, int real)
{
	struct pair p;
	struct ha_regs regs;
	size_t len = r->stack_len & ~(size_t)7;
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy || pair_open(&p, pid) != 0) {
		free(copy);
		return;
	}
	rec_regs(r, &regs);
	memcpy(copy, r + 1, len);
	pair_check(&p, &regs, copy, len, MAX_PCS);
	long fast_min = real;   /* the real capture itself must be walked fast */
	for (size_t off = 0; off + 8 <= len && off < 8192; off += 8) {
		uint64_t w, junk;
		memcpy(&w, copy + off, 8);
		junk = w ^ 0x5a5a5a5a5a5a5a5aULL;
		memcpy(copy + off, &junk, 8);
		pair_check(&p, &regs, copy, len, MAX_PCS);
		junk = w + 8;
		memcpy(copy + off, &junk, 8);
		pair_check(&p, &regs, copy, len, MAX_PCS);
		memcpy(copy + off, &w, 8);
	}
	for (size_t cut = 0; cut < len && cut < 4096; cut += 24)
		pair_check(&p, &regs, copy, cut, MAX_PCS);
	for (int max = 1; max < 8; max++)
		pair_check(&p, &regs, copy, len, max);
	srand(7);
	for (int k = 0; k < 100; k++) {
		for (size_t i = 0; i < len; i++)
			copy[i] = (uint8_t)rand();
		pair_check_fp(&p, &regs, copy, len, MAX_PCS, 1);
	}
	pair_close(&p, label, fast_min);
	free(copy);
}

/* .eh_frame_hdr of the module (of ours; the children are forks) holding
 * addr: its address and size. */
struct hdr_find { uint64_t addr, hdr, size; };
static int hdr_of(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct hdr_find *h = arg;
	int mine = 0;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t at = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && h->addr - at < ph->p_memsz)
			mine = 1;
		if (ph->p_type == PT_GNU_EH_FRAME) {
			h->hdr = at;
			h->size = ph->p_memsz;
		}
	}
	return mine;
}

/* A copy that runs over a module's .eh_frame_hdr (its rsp in the module's
 * mappings or just below them) said other words there than the file:
 * libunwind, its reads served from the copy first, searched the stack's
 * words for the FDE, the fast walk read the file (tests/fuzz/fuzz_unwind
 * found it: 5 pcs against 2).  Every word of the copy is X (a pc of ours
 * just past a function's entry: CFA = rsp + 8 there and before it), rsp at
 * a few places and alignments with the copy's end just past the table:
 * fresh unwinders, the fast walk and libunwind, must agree. */
static void copy_over_tables(pid_t pid)
{
	static uint64_t stack[STACK_CAP / 8];
	struct hdr_find h = { .addr = (uint64_t)(uintptr_t)&copy_over_tables };
	uint64_t x = h.addr + 1, a[MAX_PCS], b[MAX_PCS];
	int bad = 0;
	EXPECT(dl_iterate_phdr(hdr_of, &h) == 1 && h.size > 0, "no .eh_frame_hdr of our own");
	if (!h.size)
		return;
	for (size_t i = 0; i < STACK_CAP / 8; i++)
		stack[i] = x;
	for (uint64_t k = 0; k < 12; k++) {
		struct pair p;
		if (pair_open(&p, pid) != 0)
			return;
		struct ha_regs regs = { .rip = x };
		regs.rsp = h.hdr + h.size + 64 - sizeof stack + 8 * (k / 4) * 1024 + (k % 4) * 3;
		int na = ha_unwind(p.fast, &regs, (const uint8_t *)stack, sizeof stack, a, 5);
		int nb = ha_unwind(p.slow, &regs, (const uint8_t *)stack, sizeof stack, b, 5);
		if (na != nb || (na > 0 && memcmp(a, b, (size_t)na * sizeof *a) != 0)) {
			printf("  rsp .eh_frame_hdr%+lld: fast walk %d pcs, libunwind %d\n",
			       (long long)(regs.rsp - h.hdr), na, nb);
			bad++;
		}
		ha_unwinder_free(p.fast);
		ha_unwinder_free(p.slow);
	}
	EXPECT(bad == 0, "a copy over a module's unwind tables: the fast walk and libunwind "
	       "differ %d times in 12", bad);
	printf("copy over tables: a copy over a module's .eh_frame_hdr unwinds alike both ways\n");
}

/* The whole-stack cache never answers differently from a walk: with every
 * word of a real copy changed in turn, a cached unwinder (warm with the
 * original) and one without the cache agree. */
static void cache_agrees(struct ha_unwinder *u, pid_t pid, const struct uc_record *r)
{
	char err[200];
	struct ha_unwinder *plain = ha_unwinder_new(pid, err, sizeof err);
	struct ha_regs regs;
	uint64_t a[MAX_PCS], b[MAX_PCS];
	uint64_t hits0, hits, misses;
	size_t len = r->stack_len & ~(size_t)7;
	uint8_t *copy = malloc(len ? len : 1);
	int bad = 0;

	EXPECT(plain != NULL, "second unwinder: %s", err);
	if (!plain || !copy) {
		ha_unwinder_free(plain);
		free(copy);
		return;
	}
	ha_unwinder_set_stack_cache(plain, 0);
	rec_regs(r, &regs);
	memcpy(copy, r + 1, len);
	ha_unwind(u, &regs, copy, len, a, MAX_PCS);
	ha_unwinder_cache_stats(u, &hits0, &misses);
	int na = ha_unwind(u, &regs, copy, len, a, MAX_PCS);
	ha_unwinder_cache_stats(u, &hits, &misses);
	EXPECT(hits == hits0 + 1, "a repeated stack is answered by the cache (%llu hits)",
	      (unsigned long long)(hits - hits0));
	int nb = ha_unwind(plain, &regs, copy, len, b, MAX_PCS);
	EXPECT(na == nb && memcmp(a, b, (size_t)(na > 0 ? na : 0) * 8) == 0,
	      "cached and walked unwinds differ (%d vs %d frames)", na, nb);
	for (size_t off = 0; off + 8 <= len && off < 8192; off += 8) {
		uint64_t w;
		memcpy(&w, copy + off, 8);
		uint64_t junk = w ^ 0x5a5a5a5a5a5a5a5aULL;
		memcpy(copy + off, &junk, 8);
		na = ha_unwind(u, &regs, copy, len, a, MAX_PCS);
		nb = ha_unwind(plain, &regs, copy, len, b, MAX_PCS);
		if (na != nb || (na > 0 && memcmp(a, b, (size_t)na * 8) != 0))
			bad++;
		memcpy(copy + off, &w, 8);
		/* and the original again, from the cache or not */
		na = ha_unwind(u, &regs, copy, len, a, MAX_PCS);
		nb = ha_unwind(plain, &regs, copy, len, b, MAX_PCS);
		if (na != nb || (na > 0 && memcmp(a, b, (size_t)na * 8) != 0))
			bad++;
	}
	EXPECT(bad == 0, "stack cache: %d answers differ from a walk", bad);
	printf("stack cache: agrees with a walk on %zu altered copies\n", len / 8);
	ha_unwinder_free(plain);
	free(copy);
}

/* Unwind + symbolize one capture of process pid; print the frames. */
static int unwind_sym(const char *label, struct ha_unwinder *u, struct ha_symbolizer *s,
                      const struct uc_record *r, uint64_t *pcs, struct ha_sym_frame *f, int *fpc,
                      int *nf)
{
	struct ha_regs regs;
	double t0, t1, t2;
	int n;

	rec_regs(r, &regs);
	t0 = ha_now_ms();
	n = ha_unwind(u, &regs, (const uint8_t *)(r + 1), r->stack_len, pcs, MAX_PCS);
	t1 = ha_now_ms();
	*nf = n > 0 ? symbolize_all(s, pcs, n, f, fpc) : 0;
	t2 = ha_now_ms();
	printf("%s: %d pcs, %d frames (stack copy %llu bytes; first unwind %.3f ms, first "
	       "symbolization %.3f ms)\n",
	       label, n, *nf, (unsigned long long)r->stack_len, t1 - t0, t2 - t1);
	if (n > 0)
		print_frames(pcs, f, fpc, *nf);
	EXPECT(n > 0, "%s: ha_unwind failed (%d)", label, n);
	return n;
}

/* Unwind every capture of the many-path child both ways; time the fast
 * walk on first-seen paths (no stack cache). */
static int many_paths(void)
{
	struct child ch;
	struct pair p;
	struct ha_regs regs;
	uint64_t pcs[MAX_PCS];
	long full = 0, frames = 0;

	g_many = mmap(NULL, MANY_N * MANY_SLOT, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	              -1, 0);
	if (g_many == MAP_FAILED || spawn(SC_MANY, &ch) != 0)
		return 1;
	if (pair_open(&p, ch.pid) != 0)
		return 1;
	for (int i = 0; i < MANY_N; i++) {
		const struct uc_record *r = (const struct uc_record *)(g_many + (size_t)i * MANY_SLOT);
		EXPECT(r->magic == UC_MAGIC, "many: capture %d missing", i);
		rec_regs(r, &regs);
		pair_check(&p, &regs, (const uint8_t *)(r + 1), r->stack_len, MAX_PCS);
		full += i & 1;
	}
	pair_close(&p, "many", full);   /* at least every uncut copy walked fast */
	/* first-seen paths: a fresh unwinder per round, the stack cache off */
	double t[2] = { 0, 0 };
	long stacks = 0;
	for (int round = 0; round < 20; round++) {
		char err[256];
		struct ha_unwinder *u = ha_unwinder_new(ch.pid, err, sizeof err);
		if (!u)
			break;
		ha_unwinder_set_stack_cache(u, 0);
		for (int pass = 0; pass < 2; pass++) {   /* rules cold, then warm */
			double c0 = cpu_ms();
			for (int i = 1; i < MANY_N; i += 2) {
				const struct uc_record *r =
					(const struct uc_record *)(g_many + (size_t)i * MANY_SLOT);
				rec_regs(r, &regs);
				frames += ha_unwind(u, &regs, (const uint8_t *)(r + 1), r->stack_len, pcs,
				                    MAX_PCS);
				stacks++;
			}
			t[pass] += cpu_ms() - c0;
		}
		ha_unwinder_free(u);
	}
	if (stacks && t[0] > 0)
		printf("bench many  : %d distinct paths, %.1f frames/stack, no stack cache: "
		       "%.3f us/stack with the rules cold once per %d stacks, %.3f us/stack warm\n",
		       MANY_N / 2, (double)frames / stacks, t[0] * 2e3 / stacks, MANY_N / 2,
		       t[1] * 2e3 / stacks);
	reap(&ch);
	munmap(g_many, MANY_N * MANY_SLOT);
	return 0;
}

static int self_test(void)
{
	static uint64_t pcs[MAX_PCS];
	static struct ha_sym_frame f[MAX_FR];
	static int fpc[MAX_FR];
	char err[256];
	struct child ch;
	struct ha_unwinder *u;
	struct ha_symbolizer *s;
	struct ha_regs regs;
	int n, nf, i;

	/* 1. C chain with an inlined function */
	if (spawn(SC_CHAIN, &ch) != 0)
		return 1;
	u = ha_unwinder_new(ch.pid, err, sizeof err);
	s = ha_symbolizer_new(ch.pid, err, sizeof err);
	if (!u || !s) {
		printf("FAIL: cannot create unwinder/symbolizer: %s\n", err);
		return 1;
	}
	n = unwind_sym("chain", u, s, ch.rec, pcs, f, fpc, &nf);
	{
		static const char *const names[] = { "capture_here", "inl_step", "chain_c", "chain_b",
		                                     "chain_a" };
		expect_prefix("chain", f, nf, names, ch.rec->lines, 5, UC_CHILD_FILE);
		EXPECT(nf > 1 && f[1].inlined == 1 && f[0].inlined == 0 && f[2].inlined == 0,
		      "chain: inlined flags wrong");
		EXPECT(nf > 2 && fpc[1] == fpc[2] && fpc[1] == 1,
		      "chain: inl_step and chain_c must share one pc");
		EXPECT(find_fn(f, nf, 5, "main") > 0, "chain: main not found");
		EXPECT(nf > 0 && f[0].build_id[0] && f[0].module[0] == '/',
		      "chain: module/build-id missing");
		check_rel_pc("chain", ch.pid, pcs, f, fpc, nf);
		/* unwinding must be repeatable (caches) */
		uint64_t pcs2[MAX_PCS];
		rec_regs(ch.rec, &regs);
		int n2 = ha_unwind(u, &regs, (const uint8_t *)(ch.rec + 1), ch.rec->stack_len, pcs2,
		                   MAX_PCS);
		EXPECT(n2 == n && memcmp(pcs, pcs2, (size_t)n * 8) == 0, "chain: second unwind differs");
		/* and survive a maps refresh */
		ha_unwinder_maps_changed(u);
		ha_symbolizer_maps_changed(s);
		n2 = ha_unwind(u, &regs, (const uint8_t *)(ch.rec + 1), ch.rec->stack_len, pcs2, MAX_PCS);
		EXPECT(n2 == n && memcmp(pcs, pcs2, (size_t)n * 8) == 0,
		      "chain: unwind after maps_changed differs");
		struct ha_sym_frame g[8];
		int k = ha_symbolize(s, pcs[0], 0, g, 8);
		EXPECT(k >= 1 && strcmp(g[0].function, "capture_here") == 0,
		      "chain: symbolize after maps_changed");
	}
	bench("chain", u, &regs, (const uint8_t *)(ch.rec + 1), ch.rec->stack_len);
	bench_sym(s, pcs, n);
	unit_failures += uc_hostile_copies(u, ch.pid, ch.rec);
	copy_over_tables(ch.pid);
	cache_agrees(u, ch.pid, ch.rec);
	fast_agrees("chain", ch.pid, ch.rec, 1);
	ha_symbolizer_free(s);
	ha_unwinder_free(u);
	/* A symbolizer made while the child lives names its pcs once it is
	 * gone, /proc/PID with it: the files were opened when the modules
	 * were reported, not when a pc in them was first asked for. */
	s = ha_symbolizer_new(ch.pid, err, sizeof err);
	reap(&ch);
	{
		struct ha_sym_frame g[8];
		int k = s ? ha_symbolize(s, pcs[0], 0, g, 8) : 0;
		EXPECT(k >= 1 && strcmp(g[0].function, "capture_here") == 0 && g[0].line > 0 &&
		           strstr(g[0].file, UC_CHILD_FILE),
		       "chain: after the child exited, pc %#llx is '%s' at %s:%d, not capture_here "
		       "in " UC_CHILD_FILE, (unsigned long long)pcs[0], k >= 1 ? g[0].function : "",
		       k >= 1 ? g[0].file : "", k >= 1 ? g[0].line : 0);
	}
	ha_symbolizer_free(s);

	/* 2. through libc: qsort -> (libc internals) -> q_cmp -> capture */
	q_captured = 0;
	if (spawn(SC_QSORT, &ch) != 0)
		return 1;
	u = ha_unwinder_new(ch.pid, err, sizeof err);
	s = ha_symbolizer_new(ch.pid, err, sizeof err);
	if (!u || !s) {
		printf("FAIL: cannot create unwinder/symbolizer: %s\n", err);
		return 1;
	}
	n = unwind_sym("qsort", u, s, ch.rec, pcs, f, fpc, &nf);
	{
		static const char *const names[] = { "capture_here", "q_cmp" };
		expect_prefix("qsort", f, nf, names, ch.rec->lines, 2, UC_CHILD_FILE);
		/* libc's qsort (libasan's interceptor in a sanitizer build); its
		 * static functions have names only with libc6-dbg installed, the
		 * exported entry point always. */
		int qo = find_fn(f, nf, 2, "q_outer"), lib = 0, named = 0;
		EXPECT(qo > 2, "qsort: q_outer not found above the library's frames");
		for (i = 2; qo > 0 && i < qo; i++) {
			lib += strstr(ha_base_name(f[i].module), ".so") != NULL;
			named += f[i].function[0] != '\0';
		}
		EXPECT(lib == qo - 2 && lib > 0 && named > 0,
		      "qsort: frames between q_cmp and q_outer must be in a shared library "
		      "(%d of %d, %d named)", lib, qo - 2, named);
		EXPECT(qo < 0 || f[qo].line == ch.rec->lines[3], "qsort: q_outer at line %d, expected %d",
		      qo >= 0 ? f[qo].line : -1, ch.rec->lines[3]);
		EXPECT(find_fn(f, nf, qo > 0 ? qo : 0, "main") > 0, "qsort: main not found");
		check_rel_pc("qsort", ch.pid, pcs, f, fpc, nf);
	}
	rec_regs(ch.rec, &regs);
	bench("qsort", u, &regs, (const uint8_t *)(ch.rec + 1), ch.rec->stack_len);
	cache_agrees(u, ch.pid, ch.rec);
	fast_agrees("qsort", ch.pid, ch.rec, 1);
	{
		/* The target exits; samples still in the ring must be handled. */
		size_t len = sizeof *ch.rec + ch.rec->stack_len;
		struct uc_record *copy = malloc(len);
		uint64_t pcs2[MAX_PCS];
		static struct ha_sym_frame f2[MAX_FR];
		static int fpc2[MAX_FR];
		if (!copy)
			return 1;
		memcpy(copy, ch.rec, len);
		reap(&ch);
		ha_unwinder_maps_changed(u);
		ha_symbolizer_maps_changed(s);
		int n2 = ha_unwind(u, &regs, (const uint8_t *)(copy + 1), copy->stack_len, pcs2, MAX_PCS);
		EXPECT(n2 == n && memcmp(pcs, pcs2, (size_t)n * 8) == 0,
		      "qsort: unwind after the target exited differs (%d pcs, had %d)", n2, n);
		int nf2 = n2 > 0 ? symbolize_all(s, pcs2, n2, f2, fpc2) : 0;
		EXPECT(nf2 == nf, "qsort: %d frames after the target exited, had %d", nf2, nf);
		for (i = 0; i < nf2 && i < nf; i++)
			EXPECT(strcmp(f[i].function, f2[i].function) == 0 && f[i].line == f2[i].line,
			      "qsort: frame %d after exit: %s:%d, had %s:%d", i, f2[i].function,
			      f2[i].line, f[i].function, f[i].line);
		printf("qsort: unwound and symbolized again after the target exited\n");
		free(copy);
	}
	ha_symbolizer_free(s);
	ha_unwinder_free(u);

	/* 3. a signal handler: through the signal frame */
	if (spawn(SC_SIGNAL, &ch) != 0)
		return 1;
	u = ha_unwinder_new(ch.pid, err, sizeof err);
	s = ha_symbolizer_new(ch.pid, err, sizeof err);
	if (!u || !s) {
		printf("FAIL: cannot create unwinder/symbolizer: %s\n", err);
		return 1;
	}
	n = unwind_sym("signal", u, s, ch.rec, pcs, f, fpc, &nf);
	{
		static const char *const names[] = { "capture_here", "sig_handler" };
		expect_prefix("signal", f, nf, names, ch.rec->lines, 2, UC_CHILD_FILE);
		int so = find_fn(f, nf, 2, "sig_outer");
		EXPECT(so > 2, "signal: sig_outer not found beyond the signal frame");
		EXPECT(so < 0 || f[so].line == ch.rec->lines[3],
		      "signal: sig_outer at line %d, expected %d", so >= 0 ? f[so].line : -1,
		      ch.rec->lines[3]);
		EXPECT(find_fn(f, nf, so > 0 ? so : 0, "main") > 0, "signal: main not found");
	}
	fast_agrees("signal", ch.pid, ch.rec, 0);   /* the signal frame is libunwind's */
	ha_symbolizer_free(s);
	ha_unwinder_free(u);
	reap(&ch);

	/* 4. deep recursion: per-frame cost */
	if (spawn(SC_DEEP, &ch) != 0)
		return 1;
	u = ha_unwinder_new(ch.pid, err, sizeof err);
	s = ha_symbolizer_new(ch.pid, err, sizeof err);
	if (!u || !s) {
		printf("FAIL: cannot create unwinder/symbolizer: %s\n", err);
		return 1;
	}
	rec_regs(ch.rec, &regs);
	n = ha_unwind(u, &regs, (const uint8_t *)(ch.rec + 1), ch.rec->stack_len, pcs, MAX_PCS);
	nf = n > 0 ? symbolize_all(s, pcs, n, f, fpc) : 0;
	{
		int d = 0;
		for (i = 0; i < nf; i++)
			d += strcmp(f[i].function, "deep") == 0;
		EXPECT(d == DEEP_DEPTH + 1, "deep: %d frames of deep(), expected %d", d, DEEP_DEPTH + 1);
		EXPECT(find_fn(f, nf, 0, "main") > 0, "deep: main not found");
		printf("deep: %d pcs, %d deep() frames\n", n, d);
	}
	bench("deep", u, &regs, (const uint8_t *)(ch.rec + 1), ch.rec->stack_len);
	fast_agrees("deep", ch.pid, ch.rec, 1);
	ha_symbolizer_free(s);
	ha_unwinder_free(u);
	reap(&ch);

	/* 5. many call paths, some copies cut short */
	return many_paths();
}

/* ------------------------------------------------------------------ --attach */

static int attach_test(pid_t pid, const char *file, const char **names, int nexp,
                       const char *file_base)
{
	static uint64_t pcs[MAX_PCS];
	static struct ha_sym_frame f[MAX_FR];
	static int fpc[MAX_FR];
	struct uc_record *r = malloc(sizeof *r + STACK_CAP);
	struct ha_unwinder *u;
	struct ha_symbolizer *s;
	struct ha_regs regs;
	char err[256];
	ssize_t got = 0, k;
	int fd, nf;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (!r || fd < 0) {
		printf("FAIL: cannot open %s: %s\n", file, strerror(errno));
		return 1;
	}
	while ((size_t)got < sizeof *r + STACK_CAP &&
	       (k = read(fd, (char *)r + got, sizeof *r + STACK_CAP - (size_t)got)) > 0)
		got += k;
	close(fd);
	if ((size_t)got < sizeof *r || r->magic != UC_MAGIC ||
	    r->stack_len > (uint64_t)got - sizeof *r) {
		printf("FAIL: %s is not a complete capture record\n", file);
		return 1;
	}
	u = ha_unwinder_new(pid, err, sizeof err);
	s = ha_symbolizer_new(pid, err, sizeof err);
	if (!u || !s) {
		printf("FAIL: cannot create unwinder/symbolizer for %d: %s\n", (int)pid, err);
		return 1;
	}
	unwind_sym(file_base ? file_base : "attach", u, s, r, pcs, f, fpc, &nf);
	expect_prefix(file_base ? file_base : "attach", f, nf, names, r->lines, nexp, file_base);
	EXPECT(find_fn(f, nf, 0, "main") >= 0, "main not found");
	rec_regs(r, &regs);
	bench("attach", u, &regs, (const uint8_t *)(r + 1), r->stack_len);
	fast_agrees(file_base ? file_base : "attach", pid, r, 1);
	ha_symbolizer_free(s);
	ha_unwinder_free(u);
	free(r);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: unwind_check\n"
	                "       unwind_check --attach PID FILE [--expect NAME]... [--file BASENAME]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc == 1) {
		if (self_test() != 0)
			unit_failures++;
	} else if (strcmp(argv[1], "--attach") == 0 && argc >= 4) {
		const char *names[16], *file_base = NULL;
		int nexp = 0;
		char *end;
		long pid = strtol(argv[2], &end, 10);
		if (*end || pid <= 0)
			usage();
		for (int i = 4; i < argc; i++) {
			if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc && nexp < 16)
				names[nexp++] = argv[++i];
			else if (strcmp(argv[i], "--file") == 0 && i + 1 < argc)
				file_base = argv[++i];
			else
				usage();
		}
		if (attach_test((pid_t)pid, argv[3], names, nexp, file_base) != 0)
			unit_failures++;
	} else {
		usage();
	}
	if (unit_failures) {
		printf("unwind_check: %d check(s) failed\n", unit_failures);
		return 1;
	}
	printf("unwind_check: all checks passed\n");
	return 0;
}
