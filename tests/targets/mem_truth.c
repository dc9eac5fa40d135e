/* mem_truth -- memory of known kinds, for the RssAnon breakdown (issue 41,
 * tests/t_memory.sh).  Commands on stdin, each answered "done CMD" after a
 * line "truth KEY=BYTES ..." of what it made:
 *   threads N MB  N threads, each allocating MB MiB in 32 KiB blocks (its
 *                 own arena), written, then waiting until exit
 *   churn N MB    N threads, each allocating MB MiB in 32 KiB blocks, then
 *                 one small block kept, then freeing the others: MB MiB
 *                 free in each thread's arena (tfree=), as many arenas as
 *                 glibc allows
 *   holes MB      MB MiB of 2 KiB blocks, every other one freed: free bytes
 *                 on pages that keep live blocks (pinned=)
 *   empty MB      MB MiB of 60 KiB blocks in groups of four closed by a
 *                 4 KiB live block, each group's four freed: whole free
 *                 pages (freed=)
 *   anon MB       an anonymous mapping of MB MiB, written
 *   big N MB      N blocks of MB MiB from malloc (mmapped chunks), written
 *   grow MB       MB MiB of 8 KiB blocks, written (live=)
 *   pin MB        two call paths (heapdiff --memory --by-stack): from
 *                 pin_site_b MB MiB of 8 KiB blocks, page-aligned, every
 *                 other run of eight freed (its pages empty entirely: it
 *                 pins nothing, pinned_b=0); then from pin_site_a MB MiB of
 *                 1 KiB blocks, four to a page, the first of each page kept
 *                 and the other three freed: its blocks pin 3 KiB on each
 *                 page (pinned_a=); aligned=0 if the blocks could not be
 *                 laid on page boundaries
 *   fork          a child that shares every page copy-on-write and
 *                 waits (child=PID)
 *   trim          malloc_trim(0) here
 *   exit          exit 0 at once
 * EOF exits too.  Prints "ready pid=N". */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MiB (1024UL * 1024)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int started;

static void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p)
		abort();
	memset(p, 0x5a, n);
	return p;
}

static void *thread_main(void *arg)
{
	size_t mb = (size_t)(uintptr_t)arg;
	for (size_t i = 0; i < mb * MiB / (32 * 1024); i++)
		xmalloc(32 * 1024);
	pthread_mutex_lock(&mu);
	started++;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (;;)
		pause();
	return NULL;
}

static void *thread_churn(void *arg)
{
	size_t mb = (size_t)(uintptr_t)arg, n = mb * MiB / (32 * 1024);
	void **v = malloc(n * sizeof *v);
	if (!v)
		abort();
	for (size_t i = 0; i < n; i++)
		v[i] = xmalloc(32 * 1024);
	xmalloc(64); /* kept: the freed blocks are not the top, which free() may trim */
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	return thread_main((void *)0);
}

static void threads(int n, size_t mb, int churn)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, churn ? thread_churn : thread_main,
		                   (void *)(uintptr_t)mb) != 0)
			abort();
	}
	pthread_mutex_lock(&mu);
	while (started < n)
		pthread_cond_wait(&cv, &mu);
	started = 0;
	pthread_mutex_unlock(&mu);
	if (churn)
		printf("truth threads=%d tfree=%zu\n", n, (size_t)n * mb * MiB);
	else
		printf("truth threads=%d live=%zu\n", n, (size_t)n * mb * MiB);
}

static void holes(size_t mb)
{
	size_t n = mb * MiB / 2048, freed = 0;
	void **v = malloc(n * sizeof *v);
	for (size_t i = 0; i < n; i++)
		v[i] = xmalloc(2048 - 16);
	for (size_t i = 0; i < n; i += 2) {
		free(v[i]);
		freed += 2048;
	}
	free(v);
	printf("truth pinned=%zu live=%zu\n", freed, n / 2 * 2048);
}

static void empty(size_t mb)
{
	size_t groups = mb * MiB / (4 * 60 * 1024), freed;
	void **v = malloc(groups * 4 * sizeof *v);
	if (!v)
		abort();
	/* every group first: a group freed before the next is made would be
	 * taken again by it */
	for (size_t g = 0; g < groups; g++) {
		for (int i = 0; i < 4; i++)
			v[g * 4 + i] = xmalloc(60 * 1024);
		xmalloc(4096); /* the live block closing the group (larger than a hole of holes) */
	}
	for (size_t i = 0; i < groups * 4; i++)
		free(v[i]);
	freed = groups * 4 * (60 * 1024 + 16);
	free(v);
	printf("truth freed=%zu\n", freed);
}

/* The next chunk from the top starts on a page: a block sized to reach
 * it (glibc: a chunk is the request + 8 rounded up to 16, 32 at least). */
static int page_align(void)
{
	for (int tries = 0; tries < 4; tries++) {
		char *probe = xmalloc(16);
		uintptr_t next = (uintptr_t)probe - 16 + 32, pad = (4096 - next % 4096) % 4096;
		if (pad == 0)
			return 1;
		if (pad < 32)
			pad += 4096;
		char *p = xmalloc(pad - 8);
		if ((uintptr_t)p - 16 + pad == (((uintptr_t)p - 16 + pad) & ~(uintptr_t)4095))
			return 1;
	}
	return 0;
}

static __attribute__((noinline)) void pin_site_b(void **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = xmalloc(8192 - 16);
}

static __attribute__((noinline)) void pin_site_a(void **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = xmalloc(1024 - 16);
}

static void pin(size_t mb)
{
	size_t nb = mb * MiB / 8192, na = mb * MiB / 1024, pinned = 0;
	/* kept (never freed: that would make a hole of its own) */
	void **vb = malloc(nb * sizeof *vb), **va = malloc(na * sizeof *va);
	if (!vb || !va)
		abort();
	int aligned = page_align();
	/* every block first, then the frees: a hole freed early would be
	 * taken by the next blocks */
	pin_site_b(vb, nb);
	pin_site_a(va, na);
	aligned = aligned && ((uintptr_t)vb[0] - 16) % 4096 == 0 && ((uintptr_t)va[0] - 16) % 4096 == 0;
	for (size_t i = 0; i < nb; i++)
		if ((i / 8) % 2)
			free(vb[i]);
	for (size_t i = 0; i < na; i++)
		if (i % 4) {
			free(va[i]);
			pinned += 1024;
		}
	printf("truth pinned_a=%zu pinned_b=0 aligned=%d\n", pinned, aligned);
}

static void anon(size_t mb)
{
	char *p = mmap(NULL, mb * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();
	memset(p, 1, mb * MiB);
	printf("truth anon=%zu\n", mb * MiB);
}

int main(void)
{
	char line[128];
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = '\0';
		int n;
		size_t mb;
		if (sscanf(line, "threads %d %zu", &n, &mb) == 2)
			threads(n, mb, 0);
		else if (sscanf(line, "churn %d %zu", &n, &mb) == 2)
			threads(n, mb, 1);
		else if (sscanf(line, "holes %zu", &mb) == 1)
			holes(mb);
		else if (sscanf(line, "empty %zu", &mb) == 1)
			empty(mb);
		else if (sscanf(line, "pin %zu", &mb) == 1)
			pin(mb);
		else if (sscanf(line, "anon %zu", &mb) == 1)
			anon(mb);
		else if (sscanf(line, "big %d %zu", &n, &mb) == 2) {
			for (int i = 0; i < n; i++)
				xmalloc(mb * MiB);
			printf("truth big=%zu\n", (size_t)n * mb * MiB);
		} else if (sscanf(line, "grow %zu", &mb) == 1) {
			for (size_t i = 0; i < mb * MiB / 8192; i++)
				xmalloc(8192 - 16);
			printf("truth live=%zu\n", mb * MiB);
		} else if (strcmp(line, "fork") == 0) {
			pid_t c = fork();
			if (c == 0)
				for (;;)
					pause();
			printf("truth child=%d\n", (int)c);
		} else if (strcmp(line, "trim") == 0)
			printf("truth trimmed=%d\n", malloc_trim(0));
		else if (strcmp(line, "exit") == 0)
			_exit(0);
		else {
			printf("bad %s\n", line);
			continue;
		}
		printf("done %s\n", line);
	}
	return 0;
}
