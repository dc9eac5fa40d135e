/* pf_events.c -- the page-fault events of heapattach --rss (see pf_events.h).
 *
 * Threads.  The events of a thread are inherited by the threads it creates
 * after they were opened (attr.inherit; with attr.inherit_thread, Linux >=
 * 5.13, by its threads only, not by forked processes).  The threads that
 * exist at the attach are listed from /proc/PID/task and opened one after
 * the other, then the list is read again: a thread that appears there was
 * created meanwhile, either by a thread already opened (then it is covered
 * by inheritance) or by one not yet opened (then it is not).  Nothing tells
 * the two apart from outside, so such a "window" thread gets events of its
 * own; if a sample of it then comes from another event, it was covered
 * twice, and its own events are closed (their samples dropped from then
 * on).  The window is the few milliseconds the opening takes.
 *
 * Rings.  The first event opened on a CPU owns that CPU's ring; every other
 * event of the CPU writes into it (PERF_EVENT_IOC_SET_OUTPUT accepts
 * per-CPU events of different tasks, not per-task ones of cpu -1).  Ring
 * size: 1 MiB per CPU up to 16 CPUs, less beyond (16 MiB in all, at least
 * 64 KiB each): at the default period a 1 GiB first touch by 2 threads
 * writes ~17 MB of samples, which the collector reads every 10 ms or less.
 *
 * Every record is bounds-checked against the ring and its own header before
 * use (the kernel writes them; the check costs nothing). */
#define _GNU_SOURCE
#include "pf_events.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define PAGE 4096u
#define MAX_CPUS 4096
#define RESCANS 8             /* passes over /proc/PID/task */
#define RECORD_MAX 65536      /* perf_event_header.size is 16 bits */
#define FD_RESERVE 256        /* descriptors kept for the attacher's own use */

/* x86_64 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h),
 * in the order the kernel writes them (ascending). */
enum { R_BX = 1, R_BP = 6, R_SP = 7, R_IP = 8, R_R12 = 20, R_R13, R_R14, R_R15 };
#define REGS_MASK ((1ULL << R_BX) | (1ULL << R_BP) | (1ULL << R_SP) | (1ULL << R_IP) | \
                   (1ULL << R_R12) | (1ULL << R_R13) | (1ULL << R_R14) | (1ULL << R_R15))
#define NREGS 8

struct ring {
	int fd;                       /* the event that owns it */
	struct perf_event_mmap_page *meta;
	const char *data;
	uint64_t size;                /* data bytes, a power of two */
};

/* A thread we opened events for. */
struct thread {
	pid_t tid;
	int window;                   /* appeared in a rescan (see the top) */
	int closed;                   /* its events were closed as duplicates, or
	                               * could not be opened */
	int *fds;                     /* one per CPU, -1 if none */
	uint64_t *ids;                /* the events' ids (window threads only) */
};

struct ha_pf {
	pid_t pid;
	int ncpu;
	int *cpu;                     /* the online CPUs' numbers */
	struct ring *rings;           /* per CPU (fd -1: none) */
	struct thread *th;
	size_t nth, capth;
	int nwindow;                  /* window threads still open */
	int next_ring;                /* ha_pf_next goes round the rings */
	unsigned long fd_budget;      /* descriptors the events may still take */
	char *rec;                    /* one record copied out of a ring */
	uint64_t samples, lost, bad;
};

static int online_cpus(int **out)
{
	char buf[4096];
	int *v = calloc(MAX_CPUS, sizeof *v), n = 0;
	if (!v)
		return -1;
	if (ha_read_file("/sys/devices/system/cpu/online", buf, sizeof buf) > 0) {
		for (char *p = buf; *p && *p != '\n' && n < MAX_CPUS;) {
			char *end;
			long a = strtol(p, &end, 10), b = a;
			if (end == p)
				break;
			if (*end == '-')
				b = strtol(end + 1, &end, 10);
			for (long c = a; c <= b && n < MAX_CPUS; c++)
				v[n++] = (int)c;
			p = *end == ',' ? end + 1 : end;
		}
	}
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		for (long i = 0; i < (c > 0 ? c : 1) && n < MAX_CPUS; i++)
			v[n++] = (int)i;
	}
	*out = v;
	return n;
}

static void attr_init(struct perf_event_attr *a, uint64_t period, int inherit_thread)
{
	memset(a, 0, sizeof *a);
	a->size = sizeof *a;
	a->type = PERF_TYPE_SOFTWARE;
	/* Fires once a fault completed without I/O: every anonymous first
	 * touch, no failed fault (doc/design.md, "Page faults"). */
	a->config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
	a->sample_period = period;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
	                 PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_REGS_USER |
	                 PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = REGS_MASK;
	a->sample_stack_user = HA_PF_STACK_BYTES;
	a->disabled = 1;
	a->inherit = 1;
	a->inherit_thread = (unsigned)inherit_thread;
	/* Kernel faults too: a first touch inside read(2) is the program's;
	 * the unwind starts from the user registers. */
	a->exclude_kernel = 0;
	a->exclude_hv = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* No reader sleeps on the fds: wake-ups only cost. */
	a->watermark = 1;
	a->wakeup_watermark = 1u << 30;
}

static int perf_open(struct perf_event_attr *a, pid_t tid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, tid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The first thing that can fail: says why in one line. */
static void explain(int e, pid_t pid, char *err, size_t errlen)
{
	char paranoid[32] = "?";
	ha_read_file("/proc/sys/kernel/perf_event_paranoid", paranoid, sizeof paranoid);
	paranoid[strcspn(paranoid, "\n")] = '\0';
	if (e == EACCES || e == EPERM)
		ha_err(err, errlen, "perf events are not allowed here (%s; kernel.perf_event_paranoid "
		       "is %s, and page-fault samples of another process with kernel faults need "
		       "CAP_PERFMON or CAP_SYS_ADMIN, or a container's seccomp refuses "
		       "perf_event_open)", strerror(e), paranoid);
	else if (e == ENOSYS)
		ha_err(err, errlen, "perf_event_open is not available (%s: a kernel without "
		       "CONFIG_PERF_EVENTS, or a seccomp filter)", strerror(e));
	else if (e == ESRCH)
		ha_err(err, errlen, "process %d is gone", (int)pid);
	else
		ha_err(err, errlen, "perf_event_open: %s", strerror(e));
}

static int map_ring(struct ring *r, int fd, size_t pages)
{
	size_t len = (pages + 1) * PAGE;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return -1;
	r->fd = fd;
	r->meta = m;
	r->data = (const char *)m + PAGE;
	r->size = (uint64_t)pages * PAGE;
	return 0;
}

static struct thread *find_thread(struct ha_pf *pf, pid_t tid)
{
	for (size_t i = 0; i < pf->nth; i++)
		if (pf->th[i].tid == tid)
			return &pf->th[i];
	return NULL;
}

/* Close t's events but those that own a ring: they stay open while the
 * ring is mapped (ha_pf_close closes them with it). */
static void close_events(struct ha_pf *pf, struct thread *t)
{
	for (int c = 0; t->fds && c < pf->ncpu; c++) {
		if (t->fds[c] < 0 || t->fds[c] == pf->rings[c].fd)
			continue;
		close(t->fds[c]);
		t->fds[c] = -1;
	}
}

/* t's events are done with: closed, and a ring's owner stopped. */
static void close_thread(struct ha_pf *pf, struct thread *t)
{
	close_events(pf, t);
	for (int c = 0; t->fds && c < pf->ncpu; c++)
		if (t->fds[c] >= 0)
			ioctl(t->fds[c], PERF_EVENT_IOC_DISABLE, 0);
	t->closed = 1;
}

/* Open the events of tid on every CPU.  0; 1 if the thread is gone; -1 with
 * errno (the first failure) otherwise. */
static int open_thread(struct ha_pf *pf, struct perf_event_attr *a, pid_t tid, int window,
                       size_t ring_pages)
{
	struct thread *n = ha_grow(pf->th, &pf->capth, pf->nth + 1, sizeof *n, 64);
	if (!n)
		return -1;
	pf->th = n;
	struct thread *t = &pf->th[pf->nth];
	*t = (struct thread){ .tid = tid, .window = window };
	if (pf->fd_budget < (unsigned long)pf->ncpu) {
		/* Past the budget: left out without a try (it is counted once:
		 * kept as a thread without events). */
		t->fds = NULL;
		t->closed = 1;
		pf->nth++;
		errno = EMFILE;
		return -1;
	}
	pf->fd_budget -= (unsigned long)pf->ncpu;
	t->fds = malloc((size_t)pf->ncpu * sizeof *t->fds);
	t->ids = window ? calloc((size_t)pf->ncpu, sizeof *t->ids) : NULL;
	if (!t->fds || (window && !t->ids)) {
		free(t->fds);
		free(t->ids);
		errno = ENOMEM;
		return -1;
	}
	for (int c = 0; c < pf->ncpu; c++)
		t->fds[c] = -1;
	int rc = 0;
	for (int c = 0; c < pf->ncpu && rc == 0; c++) {
		int fd = perf_open(a, tid, pf->cpu[c]);
		if (fd < 0) {
			/* ESRCH: the thread exited meanwhile; ENODEV: the CPU went
			 * offline.  Neither is a failure of the session. */
			if (errno == ESRCH)
				rc = 1;
			else if (errno != ENODEV)
				rc = -1;
			continue;
		}
		t->fds[c] = fd;
		struct ring *r = &pf->rings[c];
		if (r->fd < 0) {
			if (map_ring(r, fd, ring_pages) < 0)
				rc = -1;
		} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) < 0) {
			rc = -1;
		}
		if (window && rc == 0)
			ioctl(fd, PERF_EVENT_IOC_ID, &t->ids[c]);
	}
	if (rc != 0) {
		int e = errno;
		/* The thread is kept as one without events, so that a rescan
		 * does not try it again. */
		close_thread(pf, t);
		t->window = 0;
		pf->nth++;
		pf->fd_budget += (unsigned long)pf->ncpu; /* none of them kept */
		errno = e;
		return rc;
	}
	for (int c = 0; c < pf->ncpu; c++)
		if (t->fds[c] >= 0)
			ioctl(t->fds[c], PERF_EVENT_IOC_ENABLE, 0);
	pf->nth++;
	pf->nwindow += window;
	return 0;
}

/* One pass over /proc/PID/task: open every thread not seen yet.  Returns
 * the threads opened, -1 if the list could not be read; *first_errno and
 * *left_out take the failures. */
static int scan(struct ha_pf *pf, struct perf_event_attr *a, int window, size_t ring_pages,
                int *first_errno, int *left_out)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pf->pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *de;
	int opened = 0;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);
		if (*end || tid <= 0 || find_thread(pf, (pid_t)tid))
			continue;
		int rc = open_thread(pf, a, (pid_t)tid, window, ring_pages);
		if (rc == 0) {
			opened++;
		} else if (rc < 0) {
			if (!*first_errno)
				*first_errno = errno;
			(*left_out)++;
		}
	}
	closedir(d);
	return opened;
}

struct ha_pf *ha_pf_open(pid_t pid, uint64_t period, struct ha_pf_report *rep, char *err,
                         size_t errlen)
{
	struct ha_pf *pf = calloc(1, sizeof *pf);
	memset(rep, 0, sizeof *rep);
	if (!pf || (pf->ncpu = online_cpus(&pf->cpu)) <= 0 ||
	    !(pf->rings = calloc((size_t)pf->ncpu, sizeof *pf->rings)) ||
	    !(pf->rec = malloc(RECORD_MAX))) {
		ha_err(err, errlen, "out of memory");
		ha_pf_close(pf);
		return NULL;
	}
	pf->pid = pid;
	for (int c = 0; c < pf->ncpu; c++)
		pf->rings[c].fd = -1;
	size_t pages = 256;
	while (pages > 16 && pages * (size_t)pf->ncpu > 4096)
		pages /= 2;
	rep->cpus = pf->ncpu;
	rep->ring_bytes = pages * PAGE;
	rep->fd_limit = ha_raise_fd_limit();
	/* The events may take what is left of the limit but a reserve: the
	 * attacher itself needs descriptors (the injection's /proc files, the
	 * database, debug files). */
	unsigned long used = ha_open_fd_count() + FD_RESERVE;
	pf->fd_budget = rep->fd_limit > used ? rep->fd_limit - used : 0;
	unsigned long budget = pf->fd_budget;

	/* inherit_thread is refused (EINVAL) by kernels before 5.13: then
	 * forked children inherit the events too, and their samples are
	 * dropped by pid. */
	struct perf_event_attr a;
	int first_errno = 0, left_out = 0;
	attr_init(&a, period, 1);
	rep->inherit_thread = 1;
	int n = scan(pf, &a, 0, pages, &first_errno, &left_out);
	if (n == 0 && first_errno == EINVAL) {
		for (size_t i = 0; i < pf->nth; i++) {
			free(pf->th[i].fds);
			free(pf->th[i].ids);
		}
		pf->nth = 0;
		pf->fd_budget = budget;
		attr_init(&a, period, 0);
		rep->inherit_thread = 0;
		first_errno = left_out = 0;
		n = scan(pf, &a, 0, pages, &first_errno, &left_out);
	}
	for (int pass = 1; n > 0 && pass < RESCANS; pass++)
		n = scan(pf, &a, 1, pages, &first_errno, &left_out);
	rep->threads = (int)pf->nth - left_out;
	rep->threads_left_out = left_out;
	if (rep->threads == 0) {
		explain(first_errno ? first_errno : ESRCH, pid, err, errlen);
		ha_pf_close(pf);
		return NULL;
	}
	return pf;
}

/* The window thread whose own events have this id, if any. */
static struct thread *window_owner(struct ha_pf *pf, uint64_t id)
{
	for (size_t i = 0; i < pf->nth; i++) {
		struct thread *t = &pf->th[i];
		if (!t->window)
			continue;
		for (int c = 0; c < pf->ncpu; c++)
			if (t->ids[c] == id)
				return t;
	}
	return NULL;
}

/* A sample from event id of thread tid: keep it?  (See "Threads" at the
 * top.) */
static int keep_sample(struct ha_pf *pf, uint64_t id, pid_t tid)
{
	if (pf->nwindow == 0)
		return 1;
	struct thread *own = window_owner(pf, id);
	if (own)
		return !own->closed;
	struct thread *t = find_thread(pf, tid);
	if (t && t->window && !t->closed) {
		/* Covered twice: by inheritance and by its own events. */
		close_thread(pf, t);
		pf->nwindow--;
	}
	return 1;
}

#define TAKE(dst)                                          \
	do {                                               \
		if ((size_t)(end - p) < sizeof(dst))       \
			return 0;                          \
		memcpy(&(dst), p, sizeof(dst));            \
		p += sizeof(dst);                          \
	} while (0)

/* Parse one sample record (len bytes at rec).  1 if it is usable. */
static int parse_sample(const char *rec, size_t len, uint64_t *id, struct ha_pf_sample *s)
{
	const char *p = rec + sizeof(struct perf_event_header), *end = rec + len;
	uint32_t pid_tid[2];
	uint64_t abi, regs[NREGS], size, dyn;
	TAKE(*id);
	TAKE(s->ip);
	TAKE(pid_tid);
	TAKE(s->time_ns);
	TAKE(s->addr);
	TAKE(abi);
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return 0; /* no user context (a kernel thread) */
	TAKE(regs);
	TAKE(size);
	if (size > (size_t)(end - p) || size > HA_PF_STACK_BYTES)
		return 0;
	const char *stack = p;
	p += size;
	dyn = 0;
	if (size)
		TAKE(dyn);
	s->pid = pid_tid[0];
	s->tid = pid_tid[1];
	/* Ascending register numbers: bx, bp, sp, ip, r12-r15. */
	s->regs = (struct ha_regs){ .rbx = regs[0], .rbp = regs[1], .rsp = regs[2], .rip = regs[3],
	                            .r12 = regs[4], .r13 = regs[5], .r14 = regs[6], .r15 = regs[7] };
	s->stack = (const uint8_t *)stack;
	s->stack_len = dyn < size ? dyn : size;
	return 1;
}

uint64_t ha_pf_ring_take(struct perf_event_mmap_page *meta, const char *data, uint64_t size,
                         char *rec)
{
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	if (head == tail)
		return 0;
	struct perf_event_header h;
	uint64_t off = tail & (size - 1);
	/* Headers are 8-aligned and the ring a power of two: never split
	 * (tail is ours and only ever moves by a record's size, a multiple
	 * of 8; one that is not cannot be trusted either, and its header
	 * would run past the end of the ring). */
	if (tail % 8 || head - tail > size)
		goto reset;
	memcpy(&h, data + off, sizeof h);
	if (h.size < sizeof h || h.size % 8 || h.size > head - tail)
		goto reset;
	uint64_t first = size - off < h.size ? size - off : h.size;
	memcpy(rec, data + off, first);
	memcpy(rec + first, data, h.size - first);
	__atomic_store_n(&meta->data_tail, tail + h.size, __ATOMIC_RELEASE);
	return h.size;
reset:
	__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
	return (uint64_t)-1;
}

int ha_pf_parse_record(const void *rec, size_t len, uint64_t *id, struct ha_pf_sample *s,
                       uint64_t *lost)
{
	struct perf_event_header h;
	if (len < sizeof h)
		return HA_PF_REC_BAD;
	memcpy(&h, rec, sizeof h);
	if (h.type == PERF_RECORD_LOST) {
		uint64_t v[2]; /* id, lost */
		if (len < sizeof h + sizeof v)
			return HA_PF_REC_OTHER;
		memcpy(v, (const char *)rec + sizeof h, sizeof v);
		*lost = v[1];
		return HA_PF_REC_LOST;
	}
	if (h.type != PERF_RECORD_SAMPLE)
		return HA_PF_REC_OTHER;
	return parse_sample(rec, len, id, s) ? HA_PF_REC_SAMPLE : HA_PF_REC_BAD;
}

int ha_pf_next(struct ha_pf *pf, struct ha_pf_sample *s)
{
	for (int tried = 0; tried < pf->ncpu;) {
		struct ring *r = &pf->rings[pf->next_ring];
		uint64_t len = r->fd >= 0 ? ha_pf_ring_take(r->meta, r->data, r->size, pf->rec) : 0;
		if (len == 0) {
			pf->next_ring = (pf->next_ring + 1) % pf->ncpu;
			tried++;
			continue;
		}
		if (len == (uint64_t)-1) {
			pf->bad++;
			continue;
		}
		uint64_t id, lost;
		switch (ha_pf_parse_record(pf->rec, len, &id, s, &lost)) {
		case HA_PF_REC_LOST:
			pf->lost += lost;
			break;
		case HA_PF_REC_BAD:
			pf->bad++;
			break;
		case HA_PF_REC_SAMPLE:
			if ((pid_t)s->pid == pf->pid && keep_sample(pf, id, (pid_t)s->tid)) {
				pf->samples++;
				return 1;
			}
			break;
		}
	}
	return 0;
}

void ha_pf_counts(const struct ha_pf *pf, uint64_t *samples, uint64_t *lost, uint64_t *bad)
{
	*samples = pf ? pf->samples : 0;
	*lost = pf ? pf->lost : 0;
	*bad = pf ? pf->bad : 0;
}

void ha_pf_close(struct ha_pf *pf)
{
	if (!pf)
		return;
	for (size_t i = 0; i < pf->nth; i++) {
		close_events(pf, &pf->th[i]);
		free(pf->th[i].fds);
		free(pf->th[i].ids);
	}
	if (pf->rings)
		for (int c = 0; c < pf->ncpu; c++) {
			struct ring *r = &pf->rings[c];
			if (r->fd < 0)
				continue;
			munmap(r->meta, r->size + PAGE);
			close(r->fd);
		}
	free(pf->th);
	free(pf->rings);
	free(pf->cpu);
	free(pf->rec);
	free(pf);
}
