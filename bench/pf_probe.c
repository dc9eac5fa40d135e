/* pf_probe -- what a software page-fault event tells about a running
 * process, and what it costs: the measurements behind heapattach --rss
 * (doc/design.md, "Page faults, measured here"; bench/pagefault).
 *
 *   pf_probe [options] PID
 *     -e pf|min     PERF_COUNT_SW_PAGE_FAULTS (default) or _PAGE_FAULTS_MIN
 *     -c N          sample_period (default 1: every fault)
 *     -p PAGES      data pages of each event's ring, a power of 2 (default 256)
 *     -s BYTES      sample_stack_user (default 16384; 0 = no stack copy)
 *     -u            exclude_kernel (faults taken in kernel mode, e.g. in
 *                   copy_to_user, are then not seen)
 *     -t SECS       stop after SECS seconds (default: when the target exits,
 *                   on SIGINT/SIGTERM, or when FILE "-q FILE" exists)
 *     -q FILE       stop once FILE exists (a script's "stop now")
 *     -o FILE       one line per sample: tid time addr ip stack_dyn_size
 *     -i            inherit: threads (and children) created later count
 *                   too, their samples in their creator's ring
 *     -n            only open the events and their rings, report, exit (the
 *                   per-thread limits: fds, perf_event_mlock_kb)
 *
 * Opens one event per thread listed in /proc/PID/task at start (threads
 * created later are not followed), with sample_type TID|TIME|ADDR|IP|
 * REGS_USER|STACK_USER and the x86_64 registers libunwind needs (ip, sp,
 * bp, bx, r12-r15), mmaps each ring, prints "probing N threads" on stderr
 * once all are enabled, and reads the rings until told to stop, copying
 * every sample out as a collector would.  Then prints one line, key=value:
 * threads, samples, lost, bytes (sample data read), counted (the events'
 * counts: faults seen, sampled or not), addr0 (samples without an address),
 * kip (samples whose ip is a kernel address), pages (distinct 4 KiB pages
 * in ADDR), cpu_s (the probe's own CPU).
 *
 *   pf_probe -m PID ADDR LEN [REPEAT]
 *
 * Reads /proc/PID/pagemap for [ADDR, ADDR+LEN) REPEAT times (default 5),
 * prints the best time and the present/swapped/exclusive counts; then the
 * same range with the PAGEMAP_SCAN ioctl where the kernel has it (Linux >=
 * 6.7): regions and pages present, swapped, huge, zero-PFN.  Also looks up
 * the first present page in /proc/kpageflags (THP, compound head). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define MAX_EVENTS 65536

/* x86_64 perf register numbers (arch/x86/include/uapi/asm/perf_regs.h). */
enum { R_BX = 1, R_BP = 6, R_SP = 7, R_IP = 8, R_R12 = 20, R_R13, R_R14, R_R15 };
#define REGS_MASK ((1ULL << R_BX) | (1ULL << R_BP) | (1ULL << R_SP) | (1ULL << R_IP) | \
	(1ULL << R_R12) | (1ULL << R_R13) | (1ULL << R_R14) | (1ULL << R_R15))
#define NREGS 8

struct ev {
	int fd;
	int tid;
	struct perf_event_mmap_page *meta;
	char *data;
	uint64_t size; /* data area bytes */
};

static struct ev evs[MAX_EVENTS];
static int nevs;
static volatile sig_atomic_t stop;
static FILE *out;
static char *copy;
static size_t copy_cap;
static uint64_t n_samples, n_lost, n_bytes, n_addr0, n_kip;

/* Distinct pages: an open-addressing set of page numbers. */
static uint64_t *pageset;
static size_t pageset_cap, n_pages;

static void page_add(uint64_t addr)
{
	uint64_t pg = addr / PAGE + 1; /* 0 = empty slot */
	if (n_pages * 2 >= pageset_cap) {
		size_t ncap = pageset_cap ? pageset_cap * 2 : 1 << 16;
		uint64_t *n = calloc(ncap, sizeof *n);
		if (!n)
			return;
		for (size_t i = 0; i < pageset_cap; i++) {
			if (!pageset[i])
				continue;
			size_t h = (size_t)(pageset[i] * 0x9e3779b97f4a7c15ULL) & (ncap - 1);
			while (n[h])
				h = (h + 1) & (ncap - 1);
			n[h] = pageset[i];
		}
		free(pageset);
		pageset = n;
		pageset_cap = ncap;
	}
	size_t h = (size_t)(pg * 0x9e3779b97f4a7c15ULL) & (pageset_cap - 1);
	while (pageset[h]) {
		if (pageset[h] == pg)
			return;
		h = (h + 1) & (pageset_cap - 1);
	}
	pageset[h] = pg;
	n_pages++;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int usage(void)
{
	fprintf(stderr, "usage: pf_probe [-e pf|min] [-c PERIOD] [-p PAGES] [-s STACK] [-u] [-t SECS] "
		"[-q FILE] [-o FILE] [-i] [-n] PID\n       pf_probe -m PID ADDR LEN [REPEAT]\n");
	return 2;
}

/* One sample record: the fields in the order the kernel writes them. */
static void take_sample(const char *rec, size_t len, uint32_t stack_req)
{
	const char *p = rec + sizeof(struct perf_event_header);
	const char *end = rec + len;
	uint64_t ip, time, addr, abi, dyn = 0;
	uint32_t pid_tid[2];
	if (p + 8 * 4 > end)
		return;
	memcpy(&ip, p, 8);
	memcpy(pid_tid, p + 8, 8);
	memcpy(&time, p + 16, 8);
	memcpy(&addr, p + 24, 8);
	p += 32;
	if (p + 8 > end)
		return;
	memcpy(&abi, p, 8);
	p += 8;
	if (abi)
		p += 8 * NREGS;
	if (stack_req) {
		uint64_t size;
		if (p + 8 > end)
			return;
		memcpy(&size, p, 8);
		p += 8;
		if (size && p + size + 8 <= end)
			memcpy(&dyn, p + size, 8);
	}
	n_samples++;
	n_bytes += len;
	if (!addr)
		n_addr0++;
	else
		page_add(addr);
	if (ip >= 0xffff800000000000ULL)
		n_kip++;
	if (out)
		fprintf(out, "%u %" PRIu64 " 0x%" PRIx64 " 0x%" PRIx64 " %" PRIu64 "\n", pid_tid[1], time, addr, ip, dyn);
}

/* Drains one ring; returns the records read. */
static int drain(struct ev *e, uint32_t stack_req)
{
	uint64_t head = __atomic_load_n(&e->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = e->meta->data_tail;
	int n = 0;
	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail & (e->size - 1);
		/* Headers are 8-aligned and the ring a power of 2: never split. */
		memcpy(&h, e->data + off, sizeof h);
		if (h.size < sizeof h || h.size > head - tail)
			break;
		if (h.size > copy_cap) {
			copy_cap = h.size * 2;
			copy = realloc(copy, copy_cap);
			if (!copy)
				abort();
		}
		/* Copy the record out, as the collector will (the stack copy is
		 * what it unwinds). */
		uint64_t first = e->size - off < h.size ? e->size - off : h.size;
		memcpy(copy, e->data + off, first);
		memcpy(copy + first, e->data, h.size - first);
		if (h.type == PERF_RECORD_SAMPLE) {
			take_sample(copy, h.size, stack_req);
		} else if (h.type == PERF_RECORD_LOST) {
			uint64_t lost;
			memcpy(&lost, copy + sizeof h + 8, 8);
			n_lost += lost;
		}
		tail += h.size;
		n++;
	}
	__atomic_store_n(&e->meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

/* ---------------------------------------------------------------- pagemap */

struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PM_PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PM_IS_PRESENT (1 << 3)
#define PM_IS_SWAPPED (1 << 4)
#define PM_IS_PFNZERO (1 << 5)
#define PM_IS_HUGE (1 << 6)

static int pagemap_mode(int pid, uint64_t addr, uint64_t len, int repeat)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/pagemap", pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "pf_probe: %s: %s\n", path, strerror(errno));
		return 1;
	}
	uint64_t first = addr / PAGE, npages = (addr + len + PAGE - 1) / PAGE - first;
	uint64_t *ents = malloc(npages * 8);
	if (!ents)
		return 1;
	double best = 1e9;
	uint64_t present = 0, swapped = 0, excl = 0, firstpfn = 0;
	for (int r = 0; r < repeat; r++) {
		double t0 = now_s();
		size_t got = 0;
		while (got < npages * 8) {
			ssize_t n = pread(fd, (char *)ents + got, npages * 8 - got, (off_t)(first * 8 + got));
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		double t = now_s() - t0;
		if (t < best)
			best = t;
		present = swapped = excl = firstpfn = 0;
		for (uint64_t i = 0; i < got / 8; i++) {
			if (ents[i] >> 63 & 1) {
				present++;
				if (!firstpfn)
					firstpfn = ents[i] & ((1ULL << 55) - 1);
			}
			swapped += ents[i] >> 62 & 1;
			excl += ents[i] >> 56 & 1;
		}
	}
	printf("pagemap read: %" PRIu64 " pages (%" PRIu64 " KiB of entries) in %.3f ms (best of %d): "
		"present=%" PRIu64 " swapped=%" PRIu64 " exclusive=%" PRIu64 "\n",
		npages, npages * 8 / 1024, best * 1e3, repeat, present, swapped, excl);
	if (firstpfn) {
		int kf = open("/proc/kpageflags", O_RDONLY);
		uint64_t fl = 0;
		if (kf >= 0 && pread(kf, &fl, 8, (off_t)(firstpfn * 8)) == 8)
			printf("kpageflags of the first present page (pfn 0x%" PRIx64 "): 0x%" PRIx64
				" thp=%d compound_head=%d compound_tail=%d zero_page=%d\n", firstpfn, fl,
				(int)(fl >> 22 & 1), (int)(fl >> 15 & 1), (int)(fl >> 16 & 1), (int)(fl >> 24 & 1));
		if (kf >= 0)
			close(kf);
	}
	/* PAGEMAP_SCAN: regions of like pages, in one call per vector. */
	size_t vcap = 4096;
	struct page_region *vec = malloc(vcap * sizeof *vec);
	best = 1e9;
	uint64_t regions = 0, p_present = 0, p_swapped = 0, p_huge = 0, p_zero = 0;
	int err = 0;
	for (int r = 0; r < repeat && !err; r++) {
		regions = p_present = p_swapped = p_huge = p_zero = 0;
		double t0 = now_s();
		uint64_t start = first * PAGE, end = (first + npages) * PAGE;
		while (start < end) {
			struct pm_scan_arg a = { .size = sizeof a, .start = start, .end = end,
				.vec = (uintptr_t)vec, .vec_len = vcap,
				.category_anyof_mask = PM_IS_PRESENT | PM_IS_SWAPPED,
				.return_mask = PM_IS_PRESENT | PM_IS_SWAPPED | PM_IS_HUGE | PM_IS_PFNZERO };
			long n = ioctl(fd, PM_PAGEMAP_SCAN, &a);
			if (n < 0) {
				err = errno;
				break;
			}
			for (long i = 0; i < n; i++) {
				uint64_t pg = (vec[i].end - vec[i].start) / PAGE;
				regions++;
				if (vec[i].categories & PM_IS_PRESENT)
					p_present += pg;
				if (vec[i].categories & PM_IS_SWAPPED)
					p_swapped += pg;
				if (vec[i].categories & PM_IS_HUGE)
					p_huge += pg;
				if (vec[i].categories & PM_IS_PFNZERO)
					p_zero += pg;
			}
			if (a.walk_end <= start)
				break;
			start = a.walk_end;
		}
		double t = now_s() - t0;
		if (t < best)
			best = t;
	}
	if (err)
		printf("PAGEMAP_SCAN: %s\n", strerror(err));
	else
		printf("PAGEMAP_SCAN: %.3f ms (best of %d): regions=%" PRIu64 " present=%" PRIu64
			" swapped=%" PRIu64 " huge=%" PRIu64 " pfnzero=%" PRIu64 "\n", best * 1e3, repeat,
			regions, p_present, p_swapped, p_huge, p_zero);
	close(fd);
	return 0;
}

/* ---------------------------------------------------------------- events */

int main(int argc, char **argv)
{
	int config = PERF_COUNT_SW_PAGE_FAULTS, pages = 256, opt, only_open = 0, user_only = 0, inherit = 0;
	uint64_t period = 1;
	uint32_t stack = 16384;
	double secs = 0;
	const char *outpath = NULL, *quitfile = NULL;
	if (argc >= 5 && strcmp(argv[1], "-m") == 0)
		return pagemap_mode(atoi(argv[2]), strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0),
			argc > 5 ? atoi(argv[5]) : 5);
	while ((opt = getopt(argc, argv, "e:c:p:s:uit:q:o:n")) != -1) {
		switch (opt) {
		case 'e':
			if (strcmp(optarg, "pf") == 0)
				config = PERF_COUNT_SW_PAGE_FAULTS;
			else if (strcmp(optarg, "min") == 0)
				config = PERF_COUNT_SW_PAGE_FAULTS_MIN;
			else
				return usage();
			break;
		case 'c': period = strtoull(optarg, NULL, 0); break;
		case 'p': pages = atoi(optarg); break;
		case 's': stack = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'u': user_only = 1; break;
		case 'i': inherit = 1; break;
		case 't': secs = atof(optarg); break;
		case 'q': quitfile = optarg; break;
		case 'o': outpath = optarg; break;
		case 'n': only_open = 1; break;
		default: return usage();
		}
	}
	if (optind != argc - 1 || period < 1 || pages < 1 || (pages & (pages - 1)) || stack % 8)
		return usage();
	int pid = atoi(argv[optind]);
	if (outpath && !(out = fopen(outpath, "w"))) {
		perror(outpath);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);

	struct perf_event_attr at;
	memset(&at, 0, sizeof at);
	at.size = sizeof at;
	at.type = PERF_TYPE_SOFTWARE;
	at.config = (uint64_t)config;
	at.sample_period = period;
	at.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_IP |
		PERF_SAMPLE_REGS_USER | (stack ? PERF_SAMPLE_STACK_USER : 0);
	at.sample_regs_user = REGS_MASK;
	at.sample_stack_user = stack;
	at.disabled = 1;
	at.exclude_kernel = (unsigned)user_only;
	at.inherit = (unsigned)inherit;
	at.exclude_hv = 1;
	at.use_clockid = 1;
	at.clockid = CLOCK_MONOTONIC;
	at.watermark = 1;
	at.wakeup_watermark = (uint32_t)(pages * PAGE / 4);

	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d) {
		fprintf(stderr, "pf_probe: %s: %s\n", path, strerror(errno));
		return 1;
	}
	struct dirent *de;
	int open_fail = 0, mmap_fail = 0, first_errno = 0, first_mmap_errno = 0;
	size_t ring_bytes = (size_t)(pages + 1) * PAGE;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name);
		if (tid <= 0 || nevs == MAX_EVENTS)
			continue;
		int fd = (int)syscall(SYS_perf_event_open, &at, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (!open_fail++)
				first_errno = errno;
			continue;
		}
		void *m = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			if (!mmap_fail++)
				first_mmap_errno = errno;
			close(fd);
			continue;
		}
		evs[nevs++] = (struct ev){ fd, tid, m, (char *)m + PAGE, (uint64_t)pages * PAGE };
	}
	closedir(d);
	if (open_fail)
		fprintf(stderr, "pf_probe: perf_event_open failed on %d threads (first: %s)\n", open_fail,
			strerror(first_errno));
	if (mmap_fail)
		fprintf(stderr, "pf_probe: mmap of the ring failed on %d threads (first: %s)\n", mmap_fail,
			strerror(first_mmap_errno));
	if (only_open) {
		printf("threads=%d open_failed=%d mmap_failed=%d ring_kib=%zu\n", nevs, open_fail, mmap_fail,
			ring_bytes / 1024);
		return nevs ? 0 : 1;
	}
	if (!nevs)
		return 1;
	for (int i = 0; i < nevs; i++)
		ioctl(evs[i].fd, PERF_EVENT_IOC_ENABLE, 0);
	fprintf(stderr, "probing %d threads\n", nevs);

	struct pollfd *pfds = calloc((size_t)nevs, sizeof *pfds);
	for (int i = 0; i < nevs; i++)
		pfds[i] = (struct pollfd){ .fd = evs[i].fd, .events = POLLIN };
	double t0 = now_s();
	int live = nevs;
	while (!stop) {
		int n = 0;
		for (int i = 0; i < nevs; i++)
			n += drain(&evs[i], stack);
		if (secs > 0 && now_s() - t0 >= secs)
			break;
		if (quitfile && access(quitfile, F_OK) == 0)
			break;
		if (n)
			continue;
		/* POLLHUP on every event: every thread has exited. */
		if (poll(pfds, (nfds_t)nevs, 10) > 0) {
			live = 0;
			for (int i = 0; i < nevs; i++)
				if (!(pfds[i].revents & POLLHUP))
					live++;
			if (!live)
				break;
		}
	}
	uint64_t counted = 0;
	for (int i = 0; i < nevs; i++) {
		uint64_t v;
		ioctl(evs[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		drain(&evs[i], stack);
		if (read(evs[i].fd, &v, 8) == 8)
			counted += v;
	}
	printf("event=%s period=%" PRIu64 " threads=%d samples=%" PRIu64 " lost=%" PRIu64 " bytes=%" PRIu64
		" counted=%" PRIu64 " addr0=%" PRIu64 " kip=%" PRIu64 " pages=%zu cpu_s=%.3f\n",
		config == PERF_COUNT_SW_PAGE_FAULTS ? "page-faults" : "minor-faults", period, nevs, n_samples,
		n_lost, n_bytes, counted, n_addr0, n_kip, n_pages, cpu_s());
	if (out)
		fclose(out);
	return 0;
}
