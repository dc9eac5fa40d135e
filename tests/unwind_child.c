/* unwind_child.c -- the child side of the unwinder's self-test
 * (tests/unwind_check.c): known call chains -- with an inlined function,
 * through qsort's callback, 40 frames deep, through a signal handler, and
 * 512 distinct paths of 8 function shapes -- that capture their registers
 * and copy their stack into shared memory as the agent's hook does, record
 * the source line each frame must show, and wait to be unwound. */
#define _GNU_SOURCE
#include "unwind_check.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procmaps.h"

static struct uc_record *g_rec;   /* shared region: header + STACK_CAP bytes */
static uint64_t g_stack_end;      /* end of the child's stack mapping */
static int g_ready_fd = -1, g_release_fd = -1;

/* Copy the stack with a plain word loop (never memcpy: other frames'
 * redzones under ASan, guard pages under FORTIFY). */
__attribute__((noinline, no_sanitize_address)) static void copy_stack_n(struct uc_record *r,
                                                                     uint64_t cap)
{
	uint64_t sp = r->regs[1], n = g_stack_end > sp ? g_stack_end - sp : 0;
	const volatile uint64_t *src = (const volatile uint64_t *)(uintptr_t)sp;
	uint64_t *dst = (uint64_t *)(r + 1);

	if (n > cap)
		n = cap;
	n &= ~(uint64_t)7;
	for (uint64_t i = 0; i < n / 8; i++)
		dst[i] = src[i];
	r->stack_len = n;
}

static void copy_stack(struct uc_record *r)
{
	copy_stack_n(r, STACK_CAP);
}

/* Registers as the agent's hook captures them: its own pc and sp, and every
 * callee-saved register, at one point of a function. */
#define CAPTURE_REGS(r)                                                           \
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"                                \
	                 "mov %%rax, 0(%0)\n\t"                                   \
	                 "mov %%rsp, 8(%0)\n\t"                                   \
	                 "mov %%rbp, 16(%0)\n\t"                                  \
	                 "mov %%rbx, 24(%0)\n\t"                                  \
	                 "mov %%r12, 32(%0)\n\t"                                  \
	                 "mov %%r13, 40(%0)\n\t"                                  \
	                 "mov %%r14, 48(%0)\n\t"                                  \
	                 "mov %%r15, 56(%0)\n\t"                                  \
	                 :                                                        \
	                 : "r"((r)->regs)                                         \
	                 : "rax", "memory")

/* Capture, tell the parent, wait until it is done with us. */
__attribute__((noinline, noclone)) static int capture_here(struct uc_record *r)
{
	char c = 'r';
	r->lines[0] = __LINE__; CAPTURE_REGS(r);
	copy_stack(r);
	r->magic = UC_MAGIC;
	if (write(g_ready_fd, &c, 1) != 1)
		_exit(3);
	while (read(g_release_fd, &c, 1) > 0)
		;
	return (int)(r->stack_len & 1) + 1;
}

static inline __attribute__((always_inline)) int inl_step(struct uc_record *r, int x)
{
	r->lines[1] = __LINE__; int v = capture_here(r);
	return v * 3 + x;
}

__attribute__((noinline, noclone)) static int chain_c(struct uc_record *r, int x)
{
	r->lines[2] = __LINE__; int v = inl_step(r, x + 1);
	return v + 5;
}

__attribute__((noinline, noclone)) int chain_b(struct uc_record *r, int x)
{
	r->lines[3] = __LINE__; int v = chain_c(r, x * 2);
	return v - 1;
}

__attribute__((noinline, noclone)) int chain_a(struct uc_record *r, int x)
{
	r->lines[4] = __LINE__; int v = chain_b(r, x + 7);
	return v ^ 1;
}

/* qsort: the chain goes through libc (unwound with libc's .eh_frame). */
volatile int q_captured;          /* the parent clears it before it forks */

static int q_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	if (!q_captured) {
		q_captured = 1;
		g_rec->lines[1] = __LINE__; x += capture_here(g_rec) - 1;
	}
	return (x > y) - (x < y);
}

__attribute__((noinline, noclone)) int q_outer(struct uc_record *r, int n)
{
	int v[64];
	for (int i = 0; i < n && i < 64; i++)
		v[i] = (i * 7919) % 61;
	r->lines[3] = __LINE__; qsort(v, (size_t)n, sizeof v[0], q_cmp);
	return v[0] + v[n - 1];
}

/* Recursion for a deep stack (per-frame cost). */
__attribute__((noinline, noclone)) int deep(struct uc_record *r, int depth)
{
	volatile int after = depth;     /* read after the call: no tail recursion */
	if (depth == 0)
		return capture_here(r) + after;
	int v = deep(r, depth - 1);
	return v + after;
}

/* A signal handler: through the kernel's signal frame (libc's __restore_rt,
 * registers read back from the ucontext in the stack copy). */
static volatile int sig_result;

static void sig_handler(int sig)
{
	g_rec->lines[1] = __LINE__; sig_result = capture_here(g_rec) + sig;
}

__attribute__((noinline, noclone)) int sig_outer(struct uc_record *r)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sig_handler;
	sigaction(SIGUSR1, &sa, NULL);
	r->lines[3] = __LINE__; raise(SIGUSR1);
	return sig_result;
}

/* Many call paths (as bench/malloc_bench's MALLOC_BENCH_LEVELS): MANY_LEVELS
 * levels of 8 functions of different shapes (frame pointer or not, saved
 * registers, stack buffers), one capture per path, no waiting; every other
 * copy cut short (the walk must stop where libunwind stops). */
uint8_t *g_many;                  /* shared: MANY_N slots */

__attribute__((noinline, noclone)) static int many_leaf(unsigned code)
{
	struct uc_record *r = (struct uc_record *)(g_many + (size_t)code * MANY_SLOT);
	CAPTURE_REGS(r);
	copy_stack_n(r, (code & 1) ? MANY_CAP : 256 + (code % 7) * 136);
	r->magic = UC_MAGIC;
	return (int)(code & 3);
}

typedef int (*many_fn)(int level, unsigned code);
static const many_fn many_fns[8];
#define MANY_NEXT(level, code) \
	((level) == 0 ? many_leaf(code) : many_fns[((code) >> (3 * (level))) % 8]((level) - 1, code))
/* frame pointer, no locals */
__attribute__((noinline, noclone)) static int many0(int level, unsigned code)
{
	return MANY_NEXT(level, code) + 1;
}
/* no frame pointer, callee-saved registers in use */
__attribute__((noinline, noclone, optimize("omit-frame-pointer"))) static int
many1(int level, unsigned code)
{
	int a = level * 3, b = (int)code ^ 5, c = level + 11, d = (int)code * 7;
	int v = MANY_NEXT(level, code);
	return v + a * b + c * d;
}
/* a stack buffer */
__attribute__((noinline, noclone)) static int many2(int level, unsigned code)
{
	volatile char buf[200];
	buf[code % 200] = (char)code;
	return MANY_NEXT(level, code) + buf[code % 200];
}
/* no frame pointer, a stack buffer */
__attribute__((noinline, noclone, optimize("omit-frame-pointer"))) static int
many3(int level, unsigned code)
{
	volatile long pad[12];
	pad[code % 12] = level;
	return MANY_NEXT(level, code) + (int)pad[code % 12];
}
/* variable-length array: the frame size is not fixed */
__attribute__((noinline, noclone)) static int many4(int level, unsigned code)
{
	volatile char vla[16 + code % 64];
	vla[0] = (char)level;
	return MANY_NEXT(level, code) + vla[0];
}
__attribute__((noinline, noclone, optimize("omit-frame-pointer"))) static int
many5(int level, unsigned code)
{
	return MANY_NEXT(level, code) * 2;
}
__attribute__((noinline, noclone, optimize("omit-frame-pointer"))) static int
many6(int level, unsigned code)
{
	volatile char vla[8 + code % 32];
	vla[0] = (char)code;
	return MANY_NEXT(level, code) - vla[0];
}
__attribute__((noinline, noclone)) static int many7(int level, unsigned code)
{
	long x = level, y = code, z = level ^ (long)code;
	int v = MANY_NEXT(level, code);
	return v + (int)(x * y + z);
}
static const many_fn many_fns[8] = { many0, many1, many2, many3, many4, many5, many6, many7 };

__attribute__((noinline)) static int many_all(void)
{
	int v = 0;
	for (unsigned code = 0; code < MANY_N; code++)
		v += many_fns[code % 8](MANY_LEVELS - 1, code);
	return v;
}

__attribute__((noinline)) static int many_main(struct uc_record *r)
{
	char c = 'r';
	int v = many_all();
	r->magic = UC_MAGIC;
	if (write(g_ready_fd, &c, 1) != 1)
		_exit(3);
	while (read(g_release_fd, &c, 1) > 0)
		;
	return v;
}


__attribute__((noinline)) static int child_main(enum scenario sc)
{
	struct ha_maps maps;
	int local = 0;
	const struct ha_map *m;

	if (ha_maps_read(getpid(), &maps) != 0)
		_exit(4);
	m = ha_maps_find_addr(&maps, (uint64_t)(uintptr_t)&local);
	if (!m)
		_exit(5);
	g_stack_end = m->end;
	ha_maps_free(&maps);
	switch (sc) {
	case SC_CHAIN: return chain_a(g_rec, 1);
	case SC_QSORT: return q_outer(g_rec, 40);
	case SC_DEEP: return deep(g_rec, DEEP_DEPTH);
	case SC_SIGNAL: return sig_outer(g_rec);
	case SC_MANY: return many_main(g_rec);
	}
	return 0;
}


int spawn(enum scenario sc, struct child *ch)
{
	int rp[2], lp[2];
	char c;

	ch->rec = mmap(NULL, sizeof *ch->rec + STACK_CAP, PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ch->rec == MAP_FAILED || pipe2(rp, O_CLOEXEC) || pipe2(lp, O_CLOEXEC)) {
		perror("unwind_check: setup");
		return -1;
	}
	fflush(stdout);
	ch->pid = fork();
	if (ch->pid < 0) {
		perror("unwind_check: fork");
		return -1;
	}
	if (ch->pid == 0) {
		close(rp[0]);
		close(lp[1]);
		g_rec = ch->rec;
		g_ready_fd = rp[1];
		g_release_fd = lp[0];
		child_main(sc);
		_exit(0);
	}
	close(rp[1]);
	close(lp[0]);
	ch->release_w = lp[1];
	if (read(rp[0], &c, 1) != 1) {
		printf("FAIL: child %d did not capture\n", (int)ch->pid);
		close(rp[0]);
		return -1;
	}
	close(rp[0]);
	if (ch->rec->magic != UC_MAGIC) {
		printf("FAIL: bad capture record\n");
		return -1;
	}
	return 0;
}

void reap(struct child *ch)
{
	int st;
	close(ch->release_w);
	waitpid(ch->pid, &st, 0);
	munmap(ch->rec, sizeof *ch->rec + STACK_CAP);
}
