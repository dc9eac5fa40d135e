/* cover_alloc -- a target that allocates through every allocation function
 * heapattach hooks, driven by commands on stdin.  Each function is
 * used from its own extern "C" noinline function use_<name>(), so a profile
 * can be checked function by function.
 *
 *   all N         every use_<fn>() allocates N blocks of its own size, kept
 *   release       every block of "all" freed with its matching deallocator
 *                 (mappings: the tail unmapped first, then the head)
 *   mmapleak N L  N anonymous mappings of L bytes in leak_mmap_here(), kept
 *   threads N S   N threads alive at once, each keeps one S-byte block from
 *                 thread_alloc(), then all exit
 *   fork          a fork() child allocates in fork_child_alloc() and exits
 *   vfork         a vfork() child allocates in vfork_child_alloc(), exits
 *   signals N     N signals whose handler allocates and frees, while the
 *                 main thread loops on malloc/free
 *   stacks N      N blocks of 777 bytes kept by altstack_alloc(), run in a
 *                 signal handler on a sigaltstack, and N blocks of 888 bytes
 *                 kept by coroutine_alloc(), run on a makecontext() stack;
 *                 both stacks are 32 KiB with an inaccessible page right
 *                 above them (a stack copy must stop at their end)
 *   exec PATH     execv(PATH, {PATH}) after leaking 64 x 64 KiB in
 *                 before_exec_leak()
 *   quit          exit 0
 * Each command is acknowledged with "done CMD".  Prints "ready pid=N" first.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <new>

#define NOINL extern "C" __attribute__((noinline))

/* Sizes: distinct per function, multiples of 64 (aligned new rounds the
 * size up to its alignment before calling aligned_alloc). */
enum {
	SZ_MALLOC = 1088, SZ_CALLOC = 1152, SZ_REALLOC = 1216, SZ_REALLOCARRAY = 1280,
	SZ_POSIX_MEMALIGN = 1344, SZ_ALIGNED_ALLOC = 1408, SZ_MEMALIGN = 1472,
	SZ_VALLOC = 1536, SZ_PVALLOC = 4096, SZ_NEW = 1600, SZ_NEW_ARRAY = 1664,
	SZ_NEW_NOTHROW = 1728, SZ_NEW_ALIGNED = 1792, SZ_NEW_ARRAY_ALIGNED_NOTHROW = 1856,
	SZ_MMAP = 65536, SZ_MREMAP_FROM = 16384, SZ_MREMAP_TO = 32768,
};

#define MAXN 1000
static void *blocks[16][MAXN];
static size_t nblocks;

static void must(void *p)
{
	if (!p) {
		fprintf(stderr, "allocation failed\n");
		abort();
	}
	((volatile char *)p)[0] = 1;
}

NOINL void *use_malloc(void) { void *p = malloc(SZ_MALLOC); must(p); return p; }
NOINL void *use_calloc(void) { void *p = calloc(SZ_CALLOC / 64, 64); must(p); return p; }
NOINL void *use_realloc(void)
{
	void *p = malloc(64);
	must(p);
	p = realloc(p, SZ_REALLOC);
	must(p);
	return p;
}
NOINL void *use_reallocarray(void)
{
	void *p = reallocarray(NULL, SZ_REALLOCARRAY / 64, 64);
	must(p);
	return p;
}
NOINL void *use_posix_memalign(void)
{
	void *p = NULL;
	if (posix_memalign(&p, 64, SZ_POSIX_MEMALIGN) != 0)
		p = NULL;
	must(p);
	return p;
}
NOINL void *use_aligned_alloc(void) { void *p = aligned_alloc(64, SZ_ALIGNED_ALLOC); must(p); return p; }
NOINL void *use_memalign(void) { void *p = memalign(128, SZ_MEMALIGN); must(p); return p; }
NOINL void *use_valloc(void) { void *p = valloc(SZ_VALLOC); must(p); return p; }
NOINL void *use_pvalloc(void) { void *p = pvalloc(SZ_PVALLOC); must(p); return p; }
NOINL void *use_new(void) { void *p = ::operator new(SZ_NEW); must(p); return p; }
NOINL void *use_new_array(void) { char *p = new char[SZ_NEW_ARRAY]; must(p); return p; }
NOINL void *use_new_nothrow(void)
{
	void *p = ::operator new(SZ_NEW_NOTHROW, std::nothrow);
	must(p);
	return p;
}
NOINL void *use_new_aligned(void)
{
	void *p = ::operator new(SZ_NEW_ALIGNED, std::align_val_t(64));
	must(p);
	return p;
}
NOINL void *use_new_array_aligned_nothrow(void)
{
	void *p = ::operator new[](SZ_NEW_ARRAY_ALIGNED_NOTHROW, std::align_val_t(64), std::nothrow);
	must(p);
	return p;
}
NOINL void *use_mmap(void)
{
	void *p = mmap(NULL, SZ_MMAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	must(p == MAP_FAILED ? NULL : p);
	return p;
}
NOINL void *use_mremap(void)
{
	void *p = mmap(NULL, SZ_MREMAP_FROM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	must(p == MAP_FAILED ? NULL : p);
	p = mremap(p, SZ_MREMAP_FROM, SZ_MREMAP_TO, MREMAP_MAYMOVE);
	must(p == MAP_FAILED ? NULL : p);
	return p;
}

typedef void *(*use_fn)(void);
static const use_fn uses[] = {
	use_malloc, use_calloc, use_realloc, use_reallocarray, use_posix_memalign,
	use_aligned_alloc, use_memalign, use_valloc, use_pvalloc, use_new, use_new_array,
	use_new_nothrow, use_new_aligned, use_new_array_aligned_nothrow, use_mmap, use_mremap,
};

static void do_all(size_t n)
{
	if (n > MAXN)
		n = MAXN;
	for (size_t i = 0; i < n; i++)
		for (size_t f = 0; f < sizeof uses / sizeof uses[0]; f++)
			blocks[f][i] = uses[f]();
	nblocks = n;
}

static void unmap_in_two(void *p, size_t len)
{
	/* The tail first (the region stays counted), then the head (it goes). */
	if (munmap((char *)p + 4096, len - 4096) != 0 || munmap(p, 4096) != 0)
		abort();
}

static void do_release(void)
{
	for (size_t i = 0; i < nblocks; i++) {
		free(blocks[0][i]);
		free(blocks[1][i]);
		free(blocks[2][i]);
		free(blocks[3][i]);
		free(blocks[4][i]);
		free(blocks[5][i]);
		free(blocks[6][i]);
		free(blocks[7][i]);
		free(blocks[8][i]);
		::operator delete(blocks[9][i], (size_t)SZ_NEW);            /* sized */
		delete[] (char *)blocks[10][i];
		::operator delete(blocks[11][i], std::nothrow);
		::operator delete(blocks[12][i], (size_t)SZ_NEW_ALIGNED, std::align_val_t(64));
		::operator delete[](blocks[13][i], std::align_val_t(64), std::nothrow);
		unmap_in_two(blocks[14][i], SZ_MMAP);
		unmap_in_two(blocks[15][i], SZ_MREMAP_TO);
	}
	nblocks = 0;
}

NOINL void leak_mmap_here(size_t n, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		char *p = (char *)mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		                       -1, 0);
		if (p == MAP_FAILED)
			abort();
		p[0] = 1;
	}
}

/* ---------------------------------------------------------------- threads */

static pthread_barrier_t bar;
static size_t thread_size;

NOINL void *thread_alloc(size_t size) { void *p = malloc(size); must(p); return p; }

static void *thread_main(void *arg)
{
	(void)arg;
	void *p = thread_alloc(thread_size);
	pthread_barrier_wait(&bar);  /* all alive at once */
	return p;                    /* kept: the joiner leaks it */
}

static int do_threads(unsigned n, size_t size)
{
	pthread_t *t = (pthread_t *)calloc(n, sizeof *t);
	pthread_attr_t a;
	unsigned made = 0;
	thread_size = size;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	pthread_barrier_init(&bar, NULL, n + 1);
	for (; made < n; made++)
		if (pthread_create(&t[made], &a, thread_main, NULL) != 0)
			break;
	if (made != n) {
		fprintf(stderr, "only %u threads\n", made);
		abort();  /* the barrier would never open */
	}
	pthread_barrier_wait(&bar);
	for (unsigned i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&bar);
	pthread_attr_destroy(&a);
	free(t);
	return (int)made;
}

/* ---------------------------------------------------------------- handoff */

/* Blocks made on one thread and freed on another, PAIRS pairs at once:
 * sampled blocks come and go in every live-set bucket while other threads
 * look them up (the free filter's set/clear races).  Every 100th block
 * (4000 bytes) is kept, the rest freed by the peer thread. */
NOINL void *handoff_alloc(size_t size) { void *p = malloc(size); must(p); return p; }

struct handoff { int fd[2]; size_t n; };

static void *handoff_producer(void *arg)
{
	struct handoff *h = (struct handoff *)arg;
	for (size_t i = 1; i <= h->n; i++) {
		void *p = handoff_alloc(i % 100 == 0 ? 4000 : 16 + (i * 37) % 1009);
		if (i % 100 == 0)
			continue;  /* kept */
		if (write(h->fd[1], &p, sizeof p) != (ssize_t)sizeof p)
			abort();
	}
	close(h->fd[1]);
	return NULL;
}

static void *handoff_consumer(void *arg)
{
	struct handoff *h = (struct handoff *)arg;
	void *p;
	while (read(h->fd[0], &p, sizeof p) == (ssize_t)sizeof p)
		free(p);
	close(h->fd[0]);
	return NULL;
}

static void do_handoff(unsigned pairs, size_t n)
{
	struct handoff h[16];
	pthread_t t[32];
	if (pairs > 16)
		pairs = 16;
	for (unsigned i = 0; i < pairs; i++) {
		h[i].n = n;
		if (pipe(h[i].fd) != 0)
			abort();
		pthread_create(&t[2 * i], NULL, handoff_producer, &h[i]);
		pthread_create(&t[2 * i + 1], NULL, handoff_consumer, &h[i]);
	}
	for (unsigned i = 0; i < 2 * pairs; i++)
		pthread_join(t[i], NULL);
}

/* ---------------------------------------------------------------- fork, vfork */

NOINL void fork_child_alloc(void)
{
	for (int i = 0; i < 100; i++)
		must(malloc(100000));
}

NOINL void vfork_child_alloc(void)
{
	/* Not allowed by POSIX, done by real programs: the child runs on the
	 * parent's stack and TLS, in the parent's memory. */
	void *p = malloc(200000);
	free(p);
}

static int do_fork(int use_vfork)
{
	pid_t pid = use_vfork ? vfork() : fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (use_vfork)
			vfork_child_alloc();
		else
			fork_child_alloc();
		_exit(7);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* ---------------------------------------------------------------- signals */

static volatile sig_atomic_t handled;

NOINL void signal_alloc(void)
{
	/* Not async-signal-safe, done by real programs. */
	void *p = malloc(333);
	free(p);
}

static void on_usr1(int sig)
{
	int e = errno;
	(void)sig;
	signal_alloc();
	handled = handled + 1;
	errno = e;
}

static int do_signals(int n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	handled = 0;
	pid_t self = getpid();
	pid_t kid = fork();
	if (kid == 0) {
		for (int i = 0; i < n; i++) {
			kill(self, SIGUSR1);
			usleep(200);
		}
		_exit(0);
	}
	while (waitpid(kid, NULL, WNOHANG) == 0) {
		void *p = malloc(48 + (size_t)(handled % 100));
		free(p);
	}
	return (int)handled;
}

/* ---------------------------------------------------------------- stacks */

enum { SMALL_STACK = 32 << 10, GUARD = 4096 };
static void *kept_stacks[2 * MAXN];
static size_t nkept_stacks;
static size_t stack_n;

/* A 32 KiB stack with a PROT_NONE page right above its top. */
static char *guarded_stack(void)
{
	char *m = (char *)mmap(NULL, SMALL_STACK + GUARD, PROT_READ | PROT_WRITE,
	                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + SMALL_STACK, GUARD, PROT_NONE) != 0)
		abort();
	return m;
}

NOINL void altstack_alloc(void)
{
	for (size_t i = 0; i < stack_n && nkept_stacks < 2 * MAXN; i++)
		must(kept_stacks[nkept_stacks++] = malloc(777));
}

static void on_usr2(int sig)
{
	(void)sig;
	altstack_alloc();
}

NOINL void coroutine_alloc(void)
{
	for (size_t i = 0; i < stack_n && nkept_stacks < 2 * MAXN; i++)
		must(kept_stacks[nkept_stacks++] = malloc(888));
}

static ucontext_t main_ctx, co_ctx;

static void coroutine_main(void)
{
	coroutine_alloc();
}

static void do_stacks(size_t n)
{
	stack_n = n;
	stack_t ss = { guarded_stack(), 0, SMALL_STACK }, old;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr2;
	sa.sa_flags = SA_ONSTACK;
	if (sigaltstack(&ss, &old) != 0 || sigaction(SIGUSR2, &sa, NULL) != 0)
		abort();
	raise(SIGUSR2);
	ss.ss_flags = SS_DISABLE;
	sigaltstack(&ss, NULL);

	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = guarded_stack();
	co_ctx.uc_stack.ss_size = SMALL_STACK;
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, coroutine_main, 0);
	if (swapcontext(&main_ctx, &co_ctx) != 0)
		abort();
}

/* ---------------------------------------------------------------- exec */

NOINL void before_exec_leak(void)
{
	for (int i = 0; i < 64; i++)
		must(malloc(65536));
}

int main(void)
{
	char line[512];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		unsigned long a = 0, b = 0;
		char path[256];
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "all %lu", &a) == 1) {
			do_all(a);
		} else if (strcmp(line, "release") == 0) {
			do_release();
		} else if (sscanf(line, "mmapleak %lu %lu", &a, &b) == 2) {
			leak_mmap_here(a, b);
		} else if (sscanf(line, "threads %lu %lu", &a, &b) == 2) {
			printf("threads made %d\n", do_threads((unsigned)a, b));
		} else if (sscanf(line, "handoff %lu %lu", &a, &b) == 2) {
			do_handoff((unsigned)a, b);
		} else if (strcmp(line, "fork") == 0) {
			printf("child status %d\n", do_fork(0));
		} else if (strcmp(line, "vfork") == 0) {
			printf("child status %d\n", do_fork(1));
		} else if (sscanf(line, "signals %lu", &a) == 1) {
			printf("handled %d\n", do_signals((int)a));
		} else if (sscanf(line, "stacks %lu", &a) == 1) {
			do_stacks(a);
		} else if (sscanf(line, "exec %255s", path) == 1) {
			before_exec_leak();
			printf("done %s\n", line);
			char *argv[] = { path, NULL };
			execv(path, argv);
			printf("exec failed\n");
			continue;
		} else if (strcmp(line, "quit") == 0) {
			printf("done quit\n");
			return 0;
		} else {
			printf("unknown %s\n", line);
			continue;
		}
		printf("done %s\n", line);
	}
	return 0;
}
