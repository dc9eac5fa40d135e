/* jit_tramp -- a program that allocates through hand-made JIT code: two
 * slots of an anonymous PROT_EXEC mapping hold a trampoline without CFI
 * that keeps a frame pointer (push rbp; mov rsp, rbp; call *rsi; pop rbp;
 * ret), named in /tmp/perf-PID.map as a JIT would name them.  Commands on
 * stdin, each answered "done ...":
 *   go A|B N     N x malloc(1000), kept, from alloc_in_c called through slot A or B
 *   name A|B S   append a perf-map line naming the slot S (code regenerated)
 *   quit         remove the map and exit
 * At start slot A is "jit_first" and slot B "jit_stale".  With the argument
 * "jitdump" the names go instead into jit-PID.dump in the working directory
 * as jitdump code-load records (the file mmap'ed, as JITs do for perf). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef void *(*alloc_fn)(size_t);
typedef void *(*tramp_fn)(size_t, alloc_fn);

static const unsigned char tramp_code[] = {
	0x55,                   /* push %rbp */
	0x48, 0x89, 0xe5,       /* mov %rsp, %rbp */
	0xff, 0xd6,             /* call *%rsi */
	0x5d,                   /* pop %rbp */
	0xc3,                   /* ret */
};

static void *keep[100000];
static size_t nkeep;
static char map_path[64];
static unsigned char *code;
static int jd_fd = -1;
static uint64_t jd_index;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void put(const void *p, size_t n)
{
	if (write(jd_fd, p, n) != (ssize_t)n)
		exit(2);
}

/* jitdump: the header, then one code-load record per name */
static void jd_open(void)
{
	char path[64];
	snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
	jd_fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (jd_fd < 0)
		exit(2);
	uint32_t h32[6] = { 0x4A695444u, 1, 40, 62 /* EM_X86_64 */, 0, (uint32_t)getpid() };
	uint64_t h64[2] = { now_ns(), 0 };
	put(h32, sizeof h32);
	put(h64, sizeof h64);
	if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, jd_fd, 0) == MAP_FAILED)
		exit(2);
}

static void jd_load(int slot, const char *name)
{
	size_t nl = strlen(name) + 1;
	uint32_t r32[2] = { 0 /* JIT_CODE_LOAD */, (uint32_t)(16 + 40 + nl + sizeof tramp_code) };
	uint64_t ts = now_ns();
	uint32_t ids[2] = { (uint32_t)getpid(), (uint32_t)gettid() };
	uint64_t addr = (uint64_t)(uintptr_t)(code + 64 * slot);
	uint64_t l64[4] = { addr, addr, sizeof tramp_code, jd_index++ };
	put(r32, sizeof r32);
	put(&ts, sizeof ts);
	put(ids, sizeof ids);
	put(l64, sizeof l64);
	put(name, nl);
	put(code + 64 * slot, sizeof tramp_code);
}

__attribute__((noinline)) static void *alloc_in_c(size_t n)
{
	void *p = malloc(n);
	if (p)
		memset(p, 7, n);
	__asm__ volatile("" ::: "memory");
	return p;
}

/* The caller of the JIT code, with CFI (a C function). */
__attribute__((noinline)) static void call_through_jit(int slot, long n)
{
	tramp_fn t = (tramp_fn)(uintptr_t)(code + 64 * slot);
	for (long i = 0; i < n && nkeep < sizeof keep / sizeof *keep; i++)
		keep[nkeep++] = t(1000, alloc_in_c);
	__asm__ volatile("" ::: "memory");
}

static void name_slot(int slot, const char *name)
{
	if (jd_fd >= 0) {
		jd_load(slot, name);
		return;
	}
	FILE *f = fopen(map_path, "a");
	if (!f)
		exit(2);
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)(code + 64 * slot), sizeof tramp_code,
	        name);
	fclose(f);
}

int main(int argc, char **argv)
{
	char line[256], name[128], s;
	long n;

	setvbuf(stdout, NULL, _IOLBF, 0);
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 2;
	memcpy(code, tramp_code, sizeof tramp_code);
	memcpy(code + 64, tramp_code, sizeof tramp_code);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC) != 0)
		return 2;
	snprintf(map_path, sizeof map_path, "/tmp/perf-%d.map", (int)getpid());
	unlink(map_path);
	if (argc > 1 && strcmp(argv[1], "jitdump") == 0)
		jd_open();
	name_slot(0, "jit_first");
	name_slot(1, "jit_stale");
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "go %c %ld", &s, &n) == 2 && (s == 'A' || s == 'B')) {
			call_through_jit(s - 'A', n);
			printf("done go %c %zu\n", s, nkeep);
		} else if (sscanf(line, "name %c %127s", &s, name) == 2 && (s == 'A' || s == 'B')) {
			name_slot(s - 'A', name);
			printf("done name %c %s\n", s, name);
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	unlink(map_path);
	if (jd_fd >= 0) {
		char path[64];
		snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
		unlink(path);
	}
	return nkeep == 0;
}
