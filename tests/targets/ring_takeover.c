/* ring_takeover.c -- a hostile target for tests/t_hostile_unmap.sh: a
 * program that takes the ring heapattach's agent shares with it away in
 * the middle of a session, through the C library's calls (which the agent
 * has hooked), and goes on allocating.
 *
 * Commands on stdin, one per line, each answered on stdout:
 *   leak N          keep N blocks of 1000 bytes (leak_here), after one
 *                   block of 2 MiB freed at once
 *   take MODE       munmap      the whole ring (both mappings)
 *                   header      munmap of its header page only
 *                   mapover     mmap MAP_FIXED anonymous memory over its
 *                               data, filled with a pattern kept for check
 *                   move        mremap of its first mapping elsewhere
 *                   dup         mremap(.., 0, ..) of it: a second mapping
 *                               of the same pages (the agent's stays: the
 *                               session goes on), then a thread that
 *                               publishes records there for ever (until
 *                               stop), which the attacher's last drain
 *                               after a detach never runs out of
 *   stop            stop that thread
 *   check           "hooked=0|1" (is the GOT slot of malloc patched?) and
 *                   "pattern ok|bad" (is the mapover memory, if any, intact?)
 *   quit            "bye kept=N"
 * stdout does not depend on the profiling; stderr says where the ring was. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ha_ring.h"

static void *keep[100000];
static int nkeep;
static unsigned char *pattern;
static size_t pattern_len;
static struct ha_ring_hdr *dup_hdr;
static uint64_t dup_size;
static int forging;
static pthread_t forger;

__attribute__((noinline)) void *leak_here(void)
{
	char *p = malloc(1000);
	if (p)
		memset(p, 1, 1000);
	__asm__ volatile("" ::: "memory");
	return p;
}

static int got_hooked(void)
{
	void *(*volatile m)(size_t) = malloc;
	return (void *)m != dlsym(RTLD_DEFAULT, "malloc");
}

/* The ring's first mapping (header and data) and its data size. */
static char *find_ring(uint64_t *ds)
{
	char line[512];
	unsigned long lo, hi, off;
	char *base = NULL;
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, "memfd:heapattach-ring") &&
		    sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) == 3 && off == 0) {
			base = (char *)lo;
			*ds = hi - lo - HA_RING_HDR_SIZE;
			break;
		}
	if (f)
		fclose(f);
	fprintf(stderr, base ? "ring at %p\n" : "no ring\n", (void *)base);
	return base;
}

static void *forge_forever(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&forging, __ATOMIC_ACQUIRE)) {
		uint64_t at;
		void *r = ha_ring_reserve(dup_hdr, dup_size, 4096, 0, &at, NULL);
		/* Never a pause longer than a spin: whatever the consumer
		 * gives back is full again before it looks. */
		if (r)
			ha_ring_publish(dup_hdr, &dup_hdr->consumer_waiting, r, at, 4096, HA_REC_PAD, 0);
		else
			__builtin_ia32_pause();
	}
	return NULL;
}

static void take(const char *mode)
{
	uint64_t ds = 0;
	char *r = find_ring(&ds);
	if (!r)
		return;
	size_t first = HA_RING_HDR_SIZE + ds;
	if (strcmp(mode, "munmap") == 0) {
		munmap(r, first + ds);
	} else if (strcmp(mode, "header") == 0) {
		munmap(r, HA_RING_HDR_SIZE);
	} else if (strcmp(mode, "mapover") == 0) {
		pattern_len = ds;
		pattern = mmap(r + HA_RING_HDR_SIZE, ds, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (pattern == MAP_FAILED)
			pattern = NULL;
		for (size_t i = 0; pattern && i < pattern_len; i += 4096)
			pattern[i] = (unsigned char)(i >> 12);
	} else if (strcmp(mode, "move") == 0) {
		void *to = mremap(r, first, first, MREMAP_MAYMOVE);
		fprintf(stderr, "moved to %p\n", to);
	} else if (strcmp(mode, "dup") == 0) {
		void *d = mremap(r, 0, first, MREMAP_MAYMOVE);
		if (d != MAP_FAILED) {
			dup_hdr = d;
			dup_size = ds;
			__atomic_store_n(&forging, 1, __ATOMIC_RELEASE);
			if (pthread_create(&forger, NULL, forge_forever, NULL) != 0)
				forging = 0;
		}
	}
}

int main(void)
{
	char line[256], word[64];
	long n;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready pid=%d\n", (int)getpid());
	while (fgets(line, sizeof line, stdin)) {
		if (sscanf(line, "leak %ld", &n) == 1) {
			/* A thread that allocated while no session was on
			 * looks for one again only after 1 MiB (sampler.c's
			 * DORMANT_COUNTDOWN): make it look now. */
			void *volatile wake = malloc(2u << 20);
			free(wake);
			for (long i = 0; i < n && nkeep < 100000; i++)
				keep[nkeep++] = leak_here();
			printf("done leak %ld\n", n);
		} else if (sscanf(line, "take %63s", word) == 1) {
			take(word);
			printf("done take %s\n", word);
		} else if (strncmp(line, "stop", 4) == 0) {
			if (__atomic_exchange_n(&forging, 0, __ATOMIC_ACQ_REL))
				pthread_join(forger, NULL);
			printf("done stop\n");
		} else if (strncmp(line, "check", 5) == 0) {
			int ok = 1;
			for (size_t i = 0; pattern && i < pattern_len; i += 4096)
				ok &= pattern[i] == (unsigned char)(i >> 12);
			printf("hooked=%d\npattern %s\n", got_hooked(), ok ? "ok" : "bad");
			printf("done check\n");
		} else if (strncmp(line, "quit", 4) == 0) {
			break;
		}
	}
	for (int i = 0; i < nkeep; i++)
		free(keep[i]);
	printf("bye kept=%d\n", nkeep);
	return 0;
}
