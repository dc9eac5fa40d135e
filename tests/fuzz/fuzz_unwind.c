/* fuzz_unwind -- libFuzzer harness for the copied-stack unwinder,
 * ha_unwind (src/unwind/unwind*.c), against real modules: the "target" is
 * a child forked from the harness at its start, which waits for ever, so
 * that its maps are the harness's (this binary, libc, libunwind, libdw...:
 * the unwinder reads their ELF files and unwind tables) and its memory
 * stays as it was (what the unwinder reads live from it never changes
 * between two calls).  The registers and the stack copy are the fuzzer's,
 * as a sample record's are the target's.
 *
 * Input: max (1 byte: 1 + d[0] % 128 pcs; the collector asks for 128),
 * the eight registers (rip rsp rbp rbx r12 r13 r14 r15, 8 bytes each),
 * then the stack copy (at most STACK_MAX bytes), in a heap block of
 * exactly its length.  Random 64-bit words almost never land on code or
 * on the copy, so a register or an aligned stack word whose top byte is
 * TAG_CODE is replaced by an address inside an executable mapping (which
 * one: the next byte, modulo their number, in the order of their files'
 * names: the order of their addresses changes from one process to the
 * next, and an input run again must name the same module; where: the low
 * 40 bits modulo its size), and one whose top byte is TAG_STACK by an
 * address in or just past the copy (rsp + the low 24 bits, modulo the
 * copy's length plus a page).  rsp itself is put in a PROT_NONE region reserved for it (plus
 * its low 12 bits below the middle, unless it is tagged): what the
 * unwinder reads around the copy there fails alike every time.  At its
 * start the harness captures its own registers and stack (as the agent's
 * hook does), writes them in that form (the seed corpus/unwind/self; with
 * FUZZ_UNWIND_SEED=FILE it writes it to FILE) and requires that capture
 * to unwind through at least 3 frames: the harness is not fuzzing an
 * unwinder that never gets anywhere.
 *
 * Three unwinders over the same process: as the collector runs it (the
 * whole-stack cache and the fast walk), the fast walk alone, and libunwind
 * alone.  Asserted, besides what the sanitizers check:
 *  - each returns -1 or 1..max pcs, and pcs[0] = rip;
 *  - the unwinds of one input take less than a second of CPU time
 *    together (so each call does);
 *  - the fast walk gives exactly libunwind's pcs (tests/unwind_check.c
 *    asserts it on real and damaged captures) up to the first return
 *    address without CFI.  There each follows a frame-pointer heuristic of
 *    its own: the fast walk's (unwind_fp.c) reads only the copy, wants rbp
 *    aligned and moving up and a return address in executable memory, and
 *    else ends the walk; libunwind's reads the target's memory and checks
 *    less.  So the two may differ from there on (tests/unwind_check.c
 *    allows it on damaged copies: the fast walk followed rbp where
 *    libunwind stopped), but only from there: they agree on at least the
 *    first two pcs, and one of those they agree on is a return address
 *    without CFI (the one that sees it counts a frame-pointer frame, or
 *    the fast walk a call-site scan's, among its first k + 1,
 *    ha_unwinder_fp_stats and ha_unwinder_scan_frames, k the pcs they
 *    agree on);
 *  - the collector's unwinder gives the same pcs as the fast walk, and the
 *    same again on a second call (then answered by its whole-stack cache).
 *
 * Coverage is off in the accessors libunwind calls for every word it
 * reads of the unwind tables (fuzz-cov-ignore): their comparison tracing
 * was half the time of a run; ASan and UBSan still check them.
 *
 * fuzz-sources: src/unwind/unwind.c src/unwind/unwind_scache.c src/unwind/unwind_walk.c
 * fuzz-sources: src/unwind/unwind_cfi.c src/unwind/unwind_access.c src/unwind/unwind_maps.c
 * fuzz-sources: src/unwind/unwind_fp.c src/common/target_fs.c src/common/proc.c
 * fuzz-sources: src/unwind/unwind_scan.c src/unwind/unwind_elfsym.c
 * fuzz-sources: src/common/procmaps.c src/common/util.c src/common/agent_file.c
 * fuzz-libs: -lunwind-ptrace -lunwind-generic -lunwind -ldw -lelf
 * fuzz-cov-ignore: acc_access_mem read_other read_live find_map uw_mapinfo_of
 * fuzz-cov-ignore: ha_maps_find_addr
 */
#define _GNU_SOURCE
#include "fuzz.h"
#include "procmaps.h"
#include "unwind.h"
#include "util.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define STACK_MAX 16384          /* the agent's default stack copy */
#define MAX_PCS 128
#define TAG_CODE 0xc0ull
#define TAG_STACK 0xd0ull
#define FAKE_STACK (1u << 20)    /* the reserved region rsp lies in */
#define MAX_CODE 64

static struct ha_unwinder *u_prod, *u_fast, *u_slow;
static struct code_map { uint64_t start, len, offset; char *path; } code[MAX_CODE];
static int ncode;
static uint64_t fake_sp, stack_top;

/* ------------------------------------------------------------ the input */

/* A word of the input as the harness means it (see the top). */
static uint64_t translate(uint64_t w, uint64_t sp, size_t len)
{
	unsigned tag = (unsigned)(w >> 56);
	if (tag == TAG_CODE) {
		int k = (int)((w >> 48) & 0xff) % ncode;
		return code[k].start + (w & 0xffffffffffull) % code[k].len;
	}
	if (tag == TAG_STACK)
		return sp + (w & 0xffffff) % (len + 4096);
	return w;
}

/* The other way round, for the capture of setup(): a real word as the
 * input would say it. */
static uint64_t encode(uint64_t w, uint64_t sp, size_t len)
{
	for (int k = 0; k < ncode; k++)
		if (w - code[k].start < code[k].len)
			return TAG_CODE << 56 | (uint64_t)k << 48 | (w - code[k].start);
	if (w - sp < len)
		return TAG_STACK << 56 | (w - sp);
	return w;
}

/* ------------------------------------------------------------ checks */

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int unwind(struct ha_unwinder *u, const char *who, const struct ha_regs *regs,
                  const uint8_t *stack, size_t len, uint64_t *pcs, int max)
{
	int n = ha_unwind(u, regs, stack, len, pcs, max);
	FUZZ_CHECK(n == -1 || (n >= 1 && n <= max), "%s: %d pcs (max %d)", who, n, max);
	FUZZ_CHECK(n == -1 || pcs[0] == regs->rip, "%s: pcs[0] %#llx, rip %#llx", who,
	           (unsigned long long)pcs[0], (unsigned long long)regs->rip);
	return n;
}

/* Where addr is, for the report of a difference. */
static void describe(const char *what, uint64_t addr)
{
	for (int k = 0; k < ncode; k++)
		if (addr - code[k].start < code[k].len) {
			fprintf(stderr, "  %s %#llx: %s file offset %#llx\n", what,
			        (unsigned long long)addr, code[k].path,
			        (unsigned long long)(addr - code[k].start + code[k].offset));
			return;
		}
	fprintf(stderr, "  %s %#llx (fake sp %+lld)\n", what, (unsigned long long)addr,
	        (long long)(addr - fake_sp));
}

static void same(const char *what, const struct ha_regs *regs, int na, const uint64_t *a,
                 int nb, const uint64_t *b)
{
	if (na == nb && (na <= 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0))
		return;
	fprintf(stderr, "%s: %d pcs against %d:\n", what, na, nb);
	describe("rip", regs->rip);
	describe("rsp", regs->rsp);
	describe("rbp", regs->rbp);
	for (int i = 0; i < (na > nb ? na : nb) && i < 16; i++) {
		if (i < na)
			describe("first ", a[i]);
		if (i < nb)
			describe("second", b[i]);
	}
	FUZZ_CHECK(0, "%s differ", what);
}

/* How many of the first max frames u finds were stepped over a return
 * address without CFI: its frame-pointer count, and the fast walk's
 * call-site scan (unwind_scan.c), which libunwind does not have. */
static uint64_t fp_frames_of(struct ha_unwinder *u, const struct ha_regs *regs,
                             const uint8_t *stack, size_t len, int max)
{
	uint64_t pcs[MAX_PCS], fp0, fp1, frames;
	uint64_t scan0 = ha_unwinder_scan_frames(u);
	ha_unwinder_fp_stats(u, &fp0, &frames);
	ha_unwind(u, regs, stack, len, pcs, max);
	ha_unwinder_fp_stats(u, &fp1, &frames);
	return fp1 - fp0 + ha_unwinder_scan_frames(u) - scan0;
}

/* The fast walk (a, nf pcs) and libunwind (b, ns) differ: is it after a
 * return address without CFI, where their frame-pointer heuristics part
 * (see the top)? */
static int fp_parted(const struct ha_regs *regs, const uint8_t *stack, size_t len, int max,
                     const uint64_t *a, int nf, const uint64_t *b, int ns)
{
	int k = 0;
	while (k < nf && k < ns && a[k] == b[k])
		k++;
	if (k < 2 || k >= max)
		return 0;
	/* the first k + 1 frames of the longer walk at that point: the
	 * frame-pointer frames among them follow one of the k shared pcs */
	return fp_frames_of(ns > k ? u_slow : u_fast, regs, stack, len, k + 1) > 0;
}

/* One input through the three unwinders; the fast walk's count. */
static int run(const uint8_t *d, size_t n)
{
	int max = 1 + d[0] % MAX_PCS;
	uint64_t r[8];
	memcpy(r, d + 1, sizeof r);
	d += 1 + sizeof r;
	n -= 1 + sizeof r;
	size_t len = n < STACK_MAX ? n : STACK_MAX;

	unsigned sp_tag = (unsigned)(r[1] >> 56);
	uint64_t sp = sp_tag == TAG_STACK || sp_tag == TAG_CODE ? translate(r[1], fake_sp, 0)
	                                                       : fake_sp - (r[1] & 0xfff);
	struct ha_regs regs = { .rsp = sp };
	uint64_t *dst[8] = { &regs.rip, &regs.rsp, &regs.rbp, &regs.rbx,
	                     &regs.r12, &regs.r13, &regs.r14, &regs.r15 };
	for (int i = 0; i < 8; i++)
		if (i != 1)
			*dst[i] = translate(r[i], sp, len);
	uint8_t *stack = malloc(len ? len : 1);
	if (!stack)
		abort();
	memcpy(stack, d, len);
	for (size_t o = 0; o + 8 <= len; o += 8) {
		uint64_t w;
		memcpy(&w, stack + o, 8);
		w = translate(w, sp, len);
		memcpy(stack + o, &w, 8);
	}

	uint64_t a[MAX_PCS], b[MAX_PCS], c[MAX_PCS], e[MAX_PCS];
	double t0 = cpu_s();
	int nf = unwind(u_fast, "fast walk", &regs, stack, len, a, max);
	int ns = unwind(u_slow, "libunwind", &regs, stack, len, b, max);
	if (!fp_parted(&regs, stack, len, max, a, nf, b, ns))
		same("the fast walk and libunwind", &regs, nf, a, ns, b);
	int np = unwind(u_prod, "collector's unwinder", &regs, stack, len, c, max);
	same("the collector's unwinder and the fast walk", &regs, np, c, nf, a);
	int n2 = unwind(u_prod, "collector's unwinder, again", &regs, stack, len, e, max);
	same("the collector's unwinder, twice,", &regs, n2, e, np, c);
	/* one clock read for the lot (it is a system call): each call's
	 * time is at most their sum */
	double t = cpu_s() - t0;
	FUZZ_CHECK(t < 1.0, "%.3f s of CPU for the unwinds of one input", t);
	free(stack);
	return nf;
}

/* ------------------------------------------------------------ setup */

/* code[] in the order of the files' names (then of addresses): the one
 * thing about them that does not change from one process to the next. */
static int code_cmp(const void *pa, const void *pb)
{
	const char *a = ha_base_name(((const struct code_map *)pa)->path);
	const char *b = ha_base_name(((const struct code_map *)pb)->path);
	int c = strcmp(a, b);
	if (c)
		return c;
	uint64_t x = ((const struct code_map *)pa)->start, y = ((const struct code_map *)pb)->start;
	return (x > y) - (x < y);
}

/* Our own registers and stack, as the agent's hook captures them, in the
 * input's form: into in (1 + 64 + STACK_MAX bytes); its length. */
__attribute__((noinline)) static size_t capture(uint8_t *in)
{
	uint64_t r[8];
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
	                 : "r"(r)
	                 : "rax", "memory");
	size_t len = stack_top - r[1] < STACK_MAX ? (size_t)(stack_top - r[1]) : STACK_MAX;
	len &= ~(size_t)7;
	/* Through the kernel: ASan's redzones on our stack are not for us. */
	FUZZ_CHECK(ha_remote_read(getpid(), r[1], in + 1 + sizeof r, len) == 0, "cannot read our stack");
	in[0] = MAX_PCS - 1;
	for (size_t o = 0; o < len; o += 8) {
		uint64_t w;
		memcpy(&w, in + 1 + sizeof r + o, 8);
		w = encode(w, r[1], len);
		memcpy(in + 1 + sizeof r + o, &w, 8);
	}
	uint64_t sp = r[1];
	for (int i = 0; i < 8; i++)
		r[i] = i == 1 ? TAG_STACK << 56 : encode(r[i], sp, len);
	memcpy(in + 1, r, sizeof r);
	return 1 + sizeof r + len;
}

static void setup(void)
{
	char err[256];
	struct ha_maps maps = { 0 };
	void *fake = mmap(NULL, FAKE_STACK, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
	                  -1, 0);
	FUZZ_CHECK(fake != MAP_FAILED, "cannot reserve the stack region");
	fake_sp = (uint64_t)fake + FAKE_STACK / 2;
	if (ha_maps_read(getpid(), &maps) < 0)
		abort();
	uint64_t here = (uint64_t)__builtin_frame_address(0);
	for (size_t i = 0; i < maps.n; i++) {
		const struct ha_map *m = &maps.v[i];
		if ((m->prot & PROT_EXEC) && m->path[0] && ncode < MAX_CODE) {
			code[ncode].start = m->start;
			code[ncode].len = m->end - m->start;
			code[ncode].offset = m->offset;
			code[ncode++].path = strdup(m->path);
		}
		if (here >= m->start && here < m->end)
			stack_top = m->end;
	}
	ha_maps_free(&maps);
	FUZZ_CHECK(ncode > 0 && stack_top, "no executable mapping or no stack in /proc/self/maps");
	qsort(code, (size_t)ncode, sizeof *code, code_cmp);

	/* Captured before the fork: the child's memory holds the same. */
	static uint8_t self[1 + 64 + STACK_MAX];
	size_t nself = capture(self);

	pid_t parent = getpid(), child = fork();
	FUZZ_CHECK(child >= 0, "fork failed");
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		for (;;)
			pause();
	}
	u_prod = ha_unwinder_new(child, err, sizeof err);
	u_fast = ha_unwinder_new(child, err, sizeof err);
	u_slow = ha_unwinder_new(child, err, sizeof err);
	FUZZ_CHECK(u_prod && u_fast && u_slow, "ha_unwinder_new: %s", err);
	ha_unwinder_set_stack_cache(u_fast, 0);
	ha_unwinder_set_stack_cache(u_slow, 0);
	ha_unwinder_set_fast(u_slow, 0);

	const char *seed = getenv("FUZZ_UNWIND_SEED");
	if (seed && *seed) {
		FILE *f = fopen(seed, "wb");
		FUZZ_CHECK(f && fwrite(self, 1, nself, f) == nself && fclose(f) == 0,
		           "cannot write %s", seed);
	}
	int n = run(self, nself);
	FUZZ_CHECK(n >= 3, "our own capture unwinds to %d frames", n);
	fprintf(stderr, "fuzz_unwind: our own capture (%zu bytes of stack) unwinds to %d frames\n",
	        nself - 1 - 64, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (!u_prod)
		setup();
	if (n < 1 + 64)
		return 0;
	run(d, n);
	return 0;
}
