/* touch_pages -- makes memory resident at known sites, on command: the
 * page-fault benchmark (bench/pagefault) and the accuracy target of the
 * resident-memory view.
 *
 *   touch_pages [THREADS]
 *
 * Starts THREADS worker threads (default 2, at most 4096) before it prints
 * "ready pid=N", so that a profiler attached at "ready" sees every thread
 * that will ever touch memory.  Commands on stdin, one a line, each
 * answered by one line "done CMD ... addr=0x... len=N" (the region it made)
 * and, for those that write pages, "ms=X ns_per_page=Y" (the touching
 * alone, threads included, not the allocation):
 *   touch MIB [T]   touch_full(): malloc MIB MiB, first write of every 4 KiB
 *                   page, by T of the worker threads (default all)
 *   half MIB        touch_half(): malloc MIB MiB, write the first half
 *   untouched MIB   alloc_untouched(): malloc MIB MiB, write nothing
 *   drop MIB        touch_then_drop(): malloc MIB MiB, write every page,
 *                   then MADV_DONTNEED all of it (the block stays allocated)
 *   retouch         retouch_dropped(): write every page of the last `drop`
 *                   region again (new faults on pages that were dropped)
 *   read MIB        read_untouched(): malloc MIB MiB, read every page (the
 *                   shared zero page; nothing becomes resident)
 *   write_read      write_after_read(): write every page of the last `read`
 *                   region (zero page, then a real page)
 *   sysread MIB     kernel_first_touch(): malloc MIB MiB and read(2)
 *                   /dev/zero into it (the kernel makes the pages, in
 *                   copy_to_user, not the program's own instructions)
 *   cow MIB         cow_after_fork(): malloc MIB MiB, write it, fork a child
 *                   that waits, write every page again (copy-on-write), let
 *                   the child exit
 *   huge MIB        touch_huge(): mmap MIB MiB aligned to 2 MiB,
 *                   MADV_HUGEPAGE, write every 4 KiB page
 *   pageout MIB     touch_then_pageout(): malloc MIB MiB, write every page,
 *                   then MADV_PAGEOUT (swapped out where there is swap)
 *   pagein          read_paged_out(): read every page of the last `pageout`
 *                   region (swap-in: major faults)
 *   thread MIB      touch_in_new_thread(): start a thread (one that did not
 *                   exist at "ready"), which mallocs MIB MiB, writes every
 *                   page and exits; joined before the answer
 *   free            release_all(): free/munmap every region made so far
 *   exit            release_all(), exit 0
 * EOF exits too.  Every site is its own noinline function, so that a call
 * path names it.  Regions from malloc start 16 bytes into a page (glibc's
 * mmapped-chunk header): the first page of an "untouched" region is
 * resident by malloc's own write. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define HUGE (2UL << 20)
#define MAX_THREADS 4096
#define MAX_REGIONS 1024

struct region {
	char *p;       /* what to free / munmap */
	size_t maplen; /* 0: from malloc */
};
static struct region regions[MAX_REGIONS];
static int nregions;

static char *last_drop, *last_read, *last_pageout;
static size_t last_drop_len, last_read_len, last_pageout_len;

/* The worker pool: every job is "write one byte in every page of
 * [base, base+len)", split in nworking equal slices. */
static int nthreads;
static pthread_barrier_t start_bar, end_bar;
static char *job_base;
static size_t job_len;
static int job_workers;
static volatile int quitting;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One byte per page, in address order: the first write of a page is its
 * fault. */
__attribute__((noinline)) static void write_pages(char *base, size_t len)
{
	for (size_t off = 0; off < len; off += PAGE)
		((volatile char *)base)[off] = 1;
}

static void *worker(void *arg)
{
	int idx = (int)(intptr_t)arg;
	for (;;) {
		pthread_barrier_wait(&start_bar);
		if (quitting)
			return NULL;
		if (idx < job_workers) {
			size_t pages = job_len / PAGE;
			size_t per = pages / job_workers;
			size_t first = per * idx;
			size_t n = idx == job_workers - 1 ? pages - first : per;
			write_pages(job_base + first * PAGE, n * PAGE);
		}
		pthread_barrier_wait(&end_bar);
	}
}

/* Runs one job on the pool; returns its elapsed time in ms. */
static double run_job(char *base, size_t len, int workers)
{
	double t0 = now_ms();
	job_base = base;
	job_len = len;
	job_workers = workers;
	pthread_barrier_wait(&start_bar);
	pthread_barrier_wait(&end_bar);
	return now_ms() - t0;
}

static char *new_block(size_t len)
{
	if (nregions == MAX_REGIONS)
		return NULL;
	char *p = malloc(len);
	if (p)
		regions[nregions++] = (struct region){ p, 0 };
	return p;
}

/* The page-aligned part of a malloc'ed block (which starts 16 bytes into
 * its first page). */
static char *page_up(char *p)
{
	return (char *)(((uintptr_t)p + PAGE - 1) & ~(PAGE - 1));
}

/* touched: the bytes written (ns_per_page is per page written). */
static void report(const char *what, char *p, size_t len, double ms, size_t touched)
{
	printf("done %s addr=%p len=%zu", what, (void *)p, len);
	if (ms >= 0 && touched >= PAGE)
		printf(" ms=%.3f ns_per_page=%.1f", ms, ms * 1e6 / (double)(touched / PAGE));
	printf("\n");
}

__attribute__((noinline)) static void touch_full(size_t len, int workers)
{
	char *p = new_block(len);
	if (!p) {
		printf("error touch: no memory\n");
		return;
	}
	char *a = page_up(p);
	size_t alen = (len - (size_t)(a - p)) & ~(PAGE - 1);
	/* The first page (malloc's header) is resident already. */
	double ms = run_job(a, alen, workers);
	report("touch", p, len, ms, alen);
}

__attribute__((noinline)) static void touch_half(size_t len)
{
	char *p = new_block(len);
	if (!p) {
		printf("error half: no memory\n");
		return;
	}
	double t0 = now_ms();
	write_pages(page_up(p), len / 2);
	report("half", p, len, now_ms() - t0, len / 2);
}

__attribute__((noinline)) static void alloc_untouched(size_t len)
{
	char *p = new_block(len);
	if (!p) {
		printf("error untouched: no memory\n");
		return;
	}
	report("untouched", p, len, -1, 0);
}

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

/* malloc len bytes, write every page, then madvise(advice) them; the
 * region in *last (for the commands that go back to it).  Called, not
 * jumped to, by each site, so that the site stays in the call path.
 * Returns 0 when out of memory. */
__attribute__((noinline)) static int write_then_advise(size_t len, int advice, const char *what,
                                                       char **last, size_t *last_len)
{
	char *p = new_block(len);
	if (!p)
		return 0;
	char *a = page_up(p);
	size_t alen = (len - (size_t)(a - p)) & ~(PAGE - 1);
	double t0 = now_ms();
	write_pages(a, alen);
	double ms = now_ms() - t0;
	if (madvise(a, alen, advice) != 0)
		perror("madvise");
	*last = a;
	*last_len = alen;
	report(what, p, len, ms, alen);
	return 1;
}

__attribute__((noinline)) static void touch_then_drop(size_t len)
{
	if (!write_then_advise(len, MADV_DONTNEED, "drop", &last_drop, &last_drop_len))
		printf("error drop: no memory\n");
}

__attribute__((noinline)) static void touch_then_pageout(size_t len)
{
	if (!write_then_advise(len, MADV_PAGEOUT, "pageout", &last_pageout, &last_pageout_len))
		printf("error pageout: no memory\n");
}

static unsigned read_pages(const char *base, size_t len);

__attribute__((noinline)) static void read_paged_out(void)
{
	if (!last_pageout) {
		printf("error pagein: no pageout region\n");
		return;
	}
	double t0 = now_ms();
	unsigned sum = read_pages(last_pageout, last_pageout_len);
	if (sum != last_pageout_len / PAGE) /* every page holds the 1 written */
		printf("error pagein: read back %u, not %zu\n", sum, last_pageout_len / PAGE);
	report("pagein", last_pageout, last_pageout_len, now_ms() - t0, last_pageout_len);
}

__attribute__((noinline)) static void retouch_dropped(void)
{
	if (!last_drop) {
		printf("error retouch: no drop region\n");
		return;
	}
	double t0 = now_ms();
	write_pages(last_drop, last_drop_len);
	report("retouch", last_drop, last_drop_len, now_ms() - t0, last_drop_len);
}

__attribute__((noinline)) static unsigned read_pages(const char *base, size_t len)
{
	unsigned sum = 0;
	for (size_t off = 0; off < len; off += PAGE)
		sum += ((const volatile char *)base)[off];
	return sum;
}

__attribute__((noinline)) static void read_untouched(size_t len)
{
	char *p = new_block(len);
	if (!p) {
		printf("error read: no memory\n");
		return;
	}
	last_read = page_up(p);
	last_read_len = (len - (size_t)(last_read - p)) & ~(PAGE - 1);
	double t0 = now_ms();
	unsigned sum = read_pages(last_read, last_read_len);
	double ms = now_ms() - t0;
	printf("sum=%u ", sum);
	report("read", p, len, ms, last_read_len);
}

__attribute__((noinline)) static void write_after_read(void)
{
	if (!last_read) {
		printf("error write_read: no read region\n");
		return;
	}
	double t0 = now_ms();
	write_pages(last_read, last_read_len);
	report("write_read", last_read, last_read_len, now_ms() - t0, last_read_len);
}

__attribute__((noinline)) static void kernel_first_touch(size_t len)
{
	char *p = new_block(len);
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (!p || fd < 0) {
		printf("error sysread: %s\n", p ? "cannot open /dev/zero" : "no memory");
		if (fd >= 0)
			close(fd);
		return;
	}
	double t0 = now_ms();
	size_t done = 0;
	while (done < len) {
		ssize_t r = read(fd, p + done, len - done);
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	double ms = now_ms() - t0;
	close(fd);
	report("sysread", p, len, ms, len);
}

__attribute__((noinline)) static void cow_after_fork(size_t len)
{
	char *p = new_block(len);
	int pfd[2];
	if (!p || pipe(pfd) != 0) {
		printf("error cow: no memory or pipe\n");
		return;
	}
	char *a = page_up(p);
	size_t alen = (len - (size_t)(a - p)) & ~(PAGE - 1);
	write_pages(a, alen);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		char c;
		close(pfd[1]);
		/* Holds the pages shared until the parent has written them. */
		while (read(pfd[0], &c, 1) < 0)
			;
		_exit(0);
	}
	close(pfd[0]);
	double ms = -1;
	if (child > 0) {
		double t0 = now_ms();
		write_pages(a, alen);
		ms = now_ms() - t0;
	}
	close(pfd[1]);
	if (child > 0)
		waitpid(child, NULL, 0);
	printf("child=%d ", (int)child);
	report("cow", a, alen, ms, alen);
}

__attribute__((noinline)) static void touch_huge(size_t len)
{
	if (nregions == MAX_REGIONS) {
		printf("error huge: too many regions\n");
		return;
	}
	len = (len + HUGE - 1) & ~(HUGE - 1);
	size_t maplen = len + HUGE;
	char *m = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		printf("error huge: mmap failed\n");
		return;
	}
	regions[nregions++] = (struct region){ m, maplen };
	char *a = (char *)(((uintptr_t)m + HUGE - 1) & ~(HUGE - 1));
	if (madvise(a, len, MADV_HUGEPAGE) != 0)
		perror("madvise(MADV_HUGEPAGE)");
	double t0 = now_ms();
	write_pages(a, len);
	report("huge", a, len, now_ms() - t0, len);
}

struct new_thread_job {
	size_t len;
	char *p;
	double ms;
};

__attribute__((noinline)) static void *new_thread_touch(void *arg)
{
	struct new_thread_job *j = arg;
	j->p = new_block(j->len);
	if (j->p) {
		double t0 = now_ms();
		write_pages(page_up(j->p), j->len - PAGE);
		j->ms = now_ms() - t0;
	}
	return NULL;
}

__attribute__((noinline)) static void touch_in_new_thread(size_t len)
{
	struct new_thread_job j = { len, NULL, -1 };
	pthread_t th;
	if (pthread_create(&th, NULL, new_thread_touch, &j) != 0) {
		printf("error thread: cannot create a thread\n");
		return;
	}
	pthread_join(th, NULL);
	if (!j.p) {
		printf("error thread: no memory\n");
		return;
	}
	report("thread", j.p, len, j.ms, len - PAGE);
}

__attribute__((noinline)) static void release_all(void)
{
	while (nregions > 0) {
		struct region *r = &regions[--nregions];
		if (r->maplen)
			munmap(r->p, r->maplen);
		else
			free(r->p);
	}
	last_drop = last_read = last_pageout = NULL;
}

int main(int argc, char **argv)
{
	char line[128], cmd[32];
	size_t mib;
	int t;
	setvbuf(stdout, NULL, _IOLBF, 0);
	nthreads = argc > 1 ? atoi(argv[1]) : 2;
	if (nthreads < 1 || nthreads > MAX_THREADS) {
		fprintf(stderr, "usage: touch_pages [THREADS (1..%d)]\n", MAX_THREADS);
		return 2;
	}
	pthread_barrier_init(&start_bar, NULL, (unsigned)nthreads + 1);
	pthread_barrier_init(&end_bar, NULL, (unsigned)nthreads + 1);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < nthreads; i++) {
		pthread_t th;
		if (pthread_create(&th, &attr, worker, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "touch_pages: cannot create thread %d\n", i);
			return 1;
		}
		pthread_detach(th);
	}
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		int n = sscanf(line, "%31s %zu %d", cmd, &mib, &t);
		if (n < 1)
			continue;
		size_t len = mib << 20;
		if (n >= 2 && (mib == 0 || mib > (1UL << 20))) {
			printf("error %s: MIB out of range\n", cmd);
		} else if (strcmp(cmd, "touch") == 0 && n >= 2) {
			touch_full(len, n == 3 && t >= 1 && t <= nthreads ? t : nthreads);
		} else if (strcmp(cmd, "half") == 0 && n >= 2) {
			touch_half(len);
		} else if (strcmp(cmd, "untouched") == 0 && n >= 2) {
			alloc_untouched(len);
		} else if (strcmp(cmd, "drop") == 0 && n >= 2) {
			touch_then_drop(len);
		} else if (strcmp(cmd, "retouch") == 0) {
			retouch_dropped();
		} else if (strcmp(cmd, "read") == 0 && n >= 2) {
			read_untouched(len);
		} else if (strcmp(cmd, "write_read") == 0) {
			write_after_read();
		} else if (strcmp(cmd, "sysread") == 0 && n >= 2) {
			kernel_first_touch(len);
		} else if (strcmp(cmd, "cow") == 0 && n >= 2) {
			cow_after_fork(len);
		} else if (strcmp(cmd, "huge") == 0 && n >= 2) {
			touch_huge(len);
		} else if (strcmp(cmd, "pageout") == 0 && n >= 2) {
			touch_then_pageout(len);
		} else if (strcmp(cmd, "pagein") == 0) {
			read_paged_out();
		} else if (strcmp(cmd, "thread") == 0 && n >= 2) {
			touch_in_new_thread(len);
		} else if (strcmp(cmd, "free") == 0) {
			release_all();
			printf("done free\n");
		} else if (strcmp(cmd, "exit") == 0) {
			release_all();
			printf("done exit\n");
			return 0;
		} else {
			printf("error: unknown command %s", line);
		}
	}
	release_all();
	return 0;
}
