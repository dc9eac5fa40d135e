/* reach_truth -- blocks whose reachability is known, for the reachability
 * scan (heapattach --reach, issue 40).  Prints "ready pid=N", then takes
 * commands on stdin, one a line, each answered "done CMD":
 *   build N SIZE   N blocks of SIZE bytes at each site below:
 *     drop_site      dropped at once (unreachable);
 *     global_site    held in the global array g_held (reachable, global);
 *     table_site     held by a heap array that the global g_table holds;
 *     parent_site    parents, each holding a child made in child_site,
 *                    all dropped (unreachable: parents and children);
 *     thread_site    held only in a local array of a thread blocked in
 *                    read() on a pipe (reachable, stack);
 *     tls_site       held only in the thread-local array t_held of that
 *                    thread (reachable, tls; past t_round in the TLS
 *                    block: not at its offset 0);
 *     middle_site    held by g_mid through pointers to their middle.
 *   addrs          one line "SITE ADDR" per block, then "done addrs";
 *   busy N         N threads that allocate and free without end (the
 *                  output of check must not change while they run);
 *   inhandler      one more busy thread, its loop inside a SIGUSR1 handler
 *                  it raised (never returns: a park there is under a
 *                  signal frame, which the scan's check refuses);
 *   rewrite        every page of every block written again (with the byte
 *                  it holds: check unchanged), as a busy heap is between
 *                  two scans (bench/reach_pause REWRITE=1);
 *   check          "check SUM": a sum over every held block's bytes;
 *   progress       "progress N": the fewest rounds any busy thread made;
 *   reaper         a SIGCHLD handler that reaps with waitpid(-1, WNOHANG);
 *   reaped         "reaped N": the children it reaped.
 * End of input: exit 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXN 4096

void *g_held[MAXN];
void **g_table;
char *g_mid[MAXN];
__thread int t_round = 1; /* .tdata: t_held (.tbss) lies past it in the TLS block */
__thread void *t_held[MAXN];
static int n_blocks;
static size_t blk_size;
static void *dropped[MAXN], *parents[MAXN], *children[MAXN], *thread_blocks[MAXN],
	*tls_blocks[MAXN];
static int pipe_fds[2];
static pthread_mutex_t thread_ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t thread_ready = PTHREAD_COND_INITIALIZER;
static int thread_done;
static volatile sig_atomic_t reaped;

static void on_sigchld(int sig)
{
	(void)sig;
	int st;
	while (waitpid(-1, &st, WNOHANG) > 0)
		reaped++;
}

/* Addresses kept for "addrs" are stored disguised (not as pointers). */
#define HIDE(p) ((void *)((uintptr_t)(p) ^ 0xa5a5a5a5a5a5a5a5ull))

/* Write every page of the n blocks of a (disguised: hidden) array again. */
static void rewrite(void *const *a, int n, int hidden, size_t size)
{
	for (int i = 0; i < n; i++) {
		volatile unsigned char *q = hidden ? HIDE(a[i]) : a[i];
		for (size_t o = 0; q && o < size; o += 4096)
			q[o] = q[o];
	}
}

static void fill(void *p, size_t n, int v)
{
	memset(p, v, n);
}

__attribute__((noinline)) static void drop_site(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(size);
		fill(p, size, 1);
		dropped[i] = HIDE(p);
	}
}

__attribute__((noinline)) static void global_site(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		g_held[i] = malloc(size);
		fill(g_held[i], size, 2);
	}
}

__attribute__((noinline)) static void table_site(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		g_table[i] = malloc(size);
		fill(g_table[i], size, 3);
	}
}

__attribute__((noinline)) static void *child_site(size_t size)
{
	void *c = malloc(size);
	fill(c, size, 4);
	return c;
}

__attribute__((noinline)) static void parent_site(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		void **p = malloc(size);
		fill(p, size, 5);
		p[1] = child_site(size);
		parents[i] = HIDE(p);
		children[i] = HIDE(p[1]);
	}
}

__attribute__((noinline)) static void *thread_site(size_t size)
{
	void *p = malloc(size);
	fill(p, size, 6);
	return p;
}

__attribute__((noinline)) static void *tls_site(size_t size)
{
	void *p = malloc(size);
	fill(p, size, 7);
	return p;
}

__attribute__((noinline)) static void middle_site(int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		char *p = malloc(size);
		fill(p, size, 8);
		g_mid[i] = p + size / 2;
	}
}

static void *holder_thread(void *arg)
{
	(void)arg;
	void *locals[MAXN];
	for (int i = 0; i < n_blocks; i++, t_round++) {
		locals[i] = thread_site(blk_size);
		thread_blocks[i] = HIDE(locals[i]);
		t_held[i] = tls_site(blk_size);
		tls_blocks[i] = HIDE(t_held[i]);
	}
	pthread_mutex_lock(&thread_ready_lock);
	thread_done = 1;
	pthread_cond_signal(&thread_ready);
	pthread_mutex_unlock(&thread_ready_lock);
	char c;
	while (read(pipe_fds[0], &c, 1) < 0)
		;
	/* keep locals and t_held live to here */
	__asm__ volatile("" : : "r"(locals), "r"(t_held) : "memory");
	return NULL;
}

static unsigned long busy_rounds[64];
static int n_busy;

static void busy_loop(unsigned seed)
{
	unsigned long *rounds = &busy_rounds[seed - 1];
	void *keep[64] = { 0 };
	for (;;) {
		__atomic_fetch_add(rounds, 1, __ATOMIC_RELAXED);
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 8) % 64;
		free(keep[i]);
		keep[i] = malloc(16 + (seed >> 4) % 8192);
		if (keep[i])
			((char *)keep[i])[0] = 1;
	}
}

static void *busy_thread(void *arg)
{
	busy_loop((unsigned)(uintptr_t)arg);
	return NULL;
}

static unsigned handler_seed;

static void on_sigusr1(int sig)
{
	(void)sig;
	busy_loop(handler_seed); /* raised by its own thread: malloc is fine here */
}

static void *handler_thread(void *arg)
{
	handler_seed = (unsigned)(uintptr_t)arg;
	raise(SIGUSR1);
	return NULL;
}

static void print_addrs(const char *site, void **v, int n)
{
	for (int i = 0; i < n; i++)
		printf("%s %p\n", site, HIDE(v[i]));
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (pipe(pipe_fds) != 0)
		return 1;
	printf("ready pid=%d\n", (int)getpid());
	char line[256];
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = '\0';
		int n;
		size_t size;
		if (sscanf(line, "build %d %zu", &n, &size) == 2 && n > 0 && n <= MAXN && size >= 16 &&
		    !n_blocks) {
			n_blocks = n;
			blk_size = size;
			g_table = malloc(MAXN * sizeof *g_table);
			drop_site(n, size);
			global_site(n, size);
			table_site(n, size);
			parent_site(n, size);
			middle_site(n, size);
			pthread_t t;
			pthread_create(&t, NULL, holder_thread, NULL);
			pthread_mutex_lock(&thread_ready_lock);
			while (!thread_done)
				pthread_cond_wait(&thread_ready, &thread_ready_lock);
			pthread_mutex_unlock(&thread_ready_lock);
		} else if (strcmp(line, "addrs") == 0) {
			print_addrs("drop_site", dropped, n_blocks);
			for (int i = 0; i < n_blocks; i++) {
				printf("global_site %p\n", g_held[i]);
				printf("table_site %p\n", g_table[i]);
				printf("middle_site %p\n", (void *)(g_mid[i] - blk_size / 2));
			}
			print_addrs("parent_site", parents, n_blocks);
			print_addrs("child_site", children, n_blocks);
			print_addrs("thread_site", thread_blocks, n_blocks);
			print_addrs("tls_site", tls_blocks, n_blocks);
		} else if (sscanf(line, "busy %d", &n) == 1 && n > 0 && n <= 64) {
			for (int i = 0; i < n && n_busy < 64; i++) {
				pthread_t t;
				n_busy++;
				pthread_create(&t, NULL, busy_thread, (void *)(uintptr_t)n_busy);
			}
		} else if (strcmp(line, "inhandler") == 0 && n_busy < 64) {
			struct sigaction sa = { .sa_handler = on_sigusr1 };
			sigaction(SIGUSR1, &sa, NULL);
			pthread_t t;
			n_busy++;
			pthread_create(&t, NULL, handler_thread, (void *)(uintptr_t)n_busy);
		} else if (strcmp(line, "reaper") == 0) {
			struct sigaction sa = { .sa_handler = on_sigchld, .sa_flags = SA_RESTART };
			sigaction(SIGCHLD, &sa, NULL);
		} else if (strcmp(line, "reaped") == 0) {
			printf("reaped %d\n", (int)reaped);
		} else if (strcmp(line, "progress") == 0) {
			unsigned long least = n_busy ? (unsigned long)-1 : 0;
			for (int i = 0; i < n_busy; i++) {
				unsigned long r = __atomic_load_n(&busy_rounds[i], __ATOMIC_RELAXED);
				least = r < least ? r : least;
			}
			printf("progress %lu\n", least);
		} else if (strcmp(line, "rewrite") == 0 && n_blocks) {
			rewrite(dropped, n_blocks, 1, blk_size);
			rewrite(g_held, n_blocks, 0, blk_size);
			rewrite(g_table, n_blocks, 0, blk_size);
			rewrite(parents, n_blocks, 1, blk_size);
			rewrite(children, n_blocks, 1, blk_size);
			rewrite(thread_blocks, n_blocks, 1, blk_size);
			rewrite(tls_blocks, n_blocks, 1, blk_size);
			for (int i = 0; i < n_blocks; i++) {
				volatile char *q = g_mid[i] - blk_size / 2;
				for (size_t o = 0; o < blk_size; o += 4096)
					q[o] = q[o];
			}
		} else if (strcmp(line, "check") == 0) {
			unsigned long sum = 0;
			for (int i = 0; i < n_blocks; i++)
				sum += ((unsigned char *)g_held[i])[0] + ((unsigned char *)g_table[i])[1] +
				       (unsigned char)g_mid[i][0];
			printf("check %lu\n", sum);
		}
		printf("done %s\n", line);
	}
	return 0;
}
