/* perfmap_check.c -- src/symbolize/perfmap.c on files made here: the format
 * (hex with or without 0x, the name as the rest of the line, bytes kept),
 * lines refused (bad numbers, empty or wrapping ranges, too long, no name),
 * incremental reads of complete lines only, the generation rule for reused
 * addresses, a truncated file read again, and the files refused: a FIFO
 * (without blocking), a symlink, another user's file.  Prints what it
 * checks; exits 0 if all passed. */
#define _GNU_SOURCE
#include "jitdump.h"
#include "perfmap.h"
#include "unit.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/perfmap_check.XXXXXX";

static void put(const char *path, const char *mode, const void *data, size_t n)
{
	FILE *f = fopen(path, mode);
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
		printf("cannot write %s\n", path);
		exit(2);
	}
}

static const char *name_at(struct ha_perfmap *pm, uint64_t pc, unsigned gen);

/* jitdump records, little-endian as on x86-64 */
static size_t jd_rec(uint8_t *out, uint32_t id, const uint64_t *w, int nw, const char *name)
{
	size_t nl = name ? strlen(name) + 1 : 0, n = 16 + 8 + 8 * (size_t)nw + nl;
	uint32_t h[2] = { id, (uint32_t)n }, pt[2] = { 1, 1 };
	uint64_t ts = 1;
	memcpy(out, h, 8);
	memcpy(out + 8, &ts, 8);
	memcpy(out + 16, pt, 8);
	memcpy(out + 24, w, 8 * (size_t)nw);
	if (name)
		memcpy(out + 24 + 8 * (size_t)nw, name, nl);
	return n;
}

static void jitdump_checks(void)
{
	char path[256];
	uint8_t buf[4096];
	size_t n = 0;
	uint32_t h32[6] = { 0x4A695444u, 1, 40, 62, 0, 1 };
	uint64_t h64[2] = { 0, 0 };
	memcpy(buf, h32, 24);
	memcpy(buf + 24, h64, 16);
	n = 40;
	uint64_t load1[4] = { 0x10000, 0x10000, 0x40, 0 }, load2[4] = { 0x20000, 0x20000, 0x40, 1 };
	uint64_t move[5] = { 0x10000, 0x10000, 0x30000, 0x40, 0 };
	n += jd_rec(buf + n, 0, load1, 4, "JS:*first");
	n += jd_rec(buf + n, 5, load1, 4, NULL);        /* unknown record: skipped */
	n += jd_rec(buf + n, 0, load2, 4, "second");
	snprintf(path, sizeof path, "%s/jit-1.dump", dir);
	put(path, "w", buf, n);
	struct ha_perfmap *pm = ha_perfmap_new_path("/nonexistent", getuid());
	struct ha_jitdump *jd = ha_jitdump_new_path(path);
	/* the perf map's checks apply: pm's uid is ours */
	EXPECT(ha_jitdump_poll(jd, pm) == 1, "jitdump: first poll");
	EXPECT(strcmp(name_at(pm, 0x10010, 9), "JS:*first") == 0, "jitdump 10010: %s",
	       name_at(pm, 0x10010, 9));
	EXPECT(strcmp(name_at(pm, 0x2003f, 9), "second") == 0, "jitdump 2003f: %s",
	       name_at(pm, 0x2003f, 9));
	/* a move, then half a record: only the move is read */
	n = jd_rec(buf, 1, move, 5, NULL);
	size_t half = jd_rec(buf + n, 0, load2, 4, "later");
	put(path, "a", buf, n + half / 2);
	EXPECT(ha_jitdump_poll(jd, pm) == 1, "jitdump: the move");
	EXPECT(strcmp(name_at(pm, 0x30000, 9), "JS:*first") == 0, "moved code: %s",
	       name_at(pm, 0x30000, 9));
	put(path, "a", buf + n + half / 2, half - half / 2);
	EXPECT(ha_jitdump_poll(jd, pm) == 1 && strcmp(name_at(pm, 0x20000, 99), "later") == 0,
	       "the completed record: %s", name_at(pm, 0x20000, 99));
	/* a record whose size is below its header's: the file is given up */
	uint32_t bad[4] = { 0, 8, 0, 0 };
	put(path, "a", bad, sizeof bad);
	n = jd_rec(buf, 0, load1, 4, "after bad");
	put(path, "a", buf, n);
	EXPECT(ha_jitdump_poll(jd, pm) <= 0, "a bad record size was read past");
	ha_jitdump_free(jd);
	/* a wrong magic */
	h32[0] = 0x4454694Au;       /* the other byte order */
	put(path, "w", h32, 24);
	put(path, "a", h64, 16);
	jd = ha_jitdump_new_path(path);
	EXPECT(ha_jitdump_poll(jd, pm) == -1, "a dump of the other byte order was read");
	ha_jitdump_free(jd);
	ha_perfmap_free(pm);
	unlink(path);
}

static const char *name_at(struct ha_perfmap *pm, uint64_t pc, unsigned gen)
{
	uint64_t start;
	const char *s = ha_perfmap_lookup(pm, pc, gen, &start);
	return s ? s : "(none)";
}

int main(void)
{
	char path[256], big[8192];
	uint64_t n, skipped;

	if (!mkdtemp(dir))
		return 2;
	snprintf(path, sizeof path, "%s/perf-1.map", dir);
	const char text[] =
		"1000 100 JS:*leakBuffers /app/grow.js:5\n"
		"0x2000 0x10 with 0x prefix\n"
		"3000 0 empty range\n"
		"ffffffffffffff00 1000 wraps\n"
		"zz 10 bad start\n"
		"4000 10\n"
		"5000 10 name\twith\xff bytes \n"
		"6000 10 half a li";
	put(path, "w", text, sizeof text - 1);
	struct ha_perfmap *pm = ha_perfmap_new_path(path, getuid());
	EXPECT(ha_perfmap_poll(pm) == 1, "first poll: new entries");
	ha_perfmap_stats(pm, &n, &skipped);
	EXPECT(n == 3 && skipped == 4, "entries %llu skipped %llu, expected 3 and 4",
	       (unsigned long long)n, (unsigned long long)skipped);
	EXPECT(strcmp(name_at(pm, 0x1080, 1), "JS:*leakBuffers /app/grow.js:5") == 0, "1080: %s",
	       name_at(pm, 0x1080, 1));
	EXPECT(strcmp(name_at(pm, 0x1100, 1), "(none)") == 0, "1100 (end): %s", name_at(pm, 0x1100, 1));
	EXPECT(strcmp(name_at(pm, 0x200f, 1), "with 0x prefix") == 0, "200f: %s", name_at(pm, 0x200f, 1));
	EXPECT(strcmp(name_at(pm, 0x5000, 1), "name\twith\xff bytes ") == 0, "5000: bytes not kept");
	EXPECT(strcmp(name_at(pm, 0x6000, 1), "(none)") == 0, "an incomplete line was read");
	EXPECT(ha_perfmap_poll(pm) == 0, "poll of an unchanged file found entries");

	/* the line completed, and the address 1000 reused by new code */
	put(path, "a", "ne\n1000 80 JS:~other /app/b.js:1\n", 33);
	EXPECT(ha_perfmap_poll(pm) == 1 && ha_perfmap_gen(pm) == 2, "second poll: gen %u",
	       ha_perfmap_gen(pm));
	EXPECT(strcmp(name_at(pm, 0x6000, 2), "half a line") == 0, "6000: %s", name_at(pm, 0x6000, 2));
	EXPECT(strcmp(name_at(pm, 0x1010, 1), "JS:*leakBuffers /app/grow.js:5") == 0,
	       "1010 at gen 1: %s", name_at(pm, 0x1010, 1));
	EXPECT(strcmp(name_at(pm, 0x1010, 2), "JS:~other /app/b.js:1") == 0, "1010 at gen 2: %s",
	       name_at(pm, 0x1010, 2));
	EXPECT(strcmp(name_at(pm, 0x10a0, 2), "JS:*leakBuffers /app/grow.js:5") == 0,
	       "10a0 (only the old code covers it): %s", name_at(pm, 0x10a0, 2));
	EXPECT(strcmp(name_at(pm, 0x6000, 1), "half a line") == 0,
	       "a pc known only from a later read: %s", name_at(pm, 0x6000, 1));

	/* a line longer than 4 KiB is skipped, the next one read */
	memset(big, 'x', sizeof big);
	memcpy(big, "7000 10 ", 8);
	big[sizeof big - 1] = '\n';
	put(path, "a", big, sizeof big);
	put(path, "a", "8000 10 after\n", 14);
	ha_perfmap_poll(pm);
	EXPECT(strcmp(name_at(pm, 0x7000, 9), "(none)") == 0, "a long line was taken");
	EXPECT(strcmp(name_at(pm, 0x8000, 9), "after") == 0, "the line after a long one: %s",
	       name_at(pm, 0x8000, 9));

	/* a line longer than the read buffer (64 KiB): its tail is no line */
	char *huge = malloc(65600);
	if (!huge)
		return 2;
	memset(huge, 'y', 65600);
	memcpy(huge, "a000 10 ", 8);
	memcpy(huge + 65536, "b000 10 tail of a long line", 27); /* where a 2nd read starts */
	huge[65599] = '\n';
	put(path, "a", huge, 65600);
	put(path, "a", "c000 10 after huge\n", 19);
	free(huge);
	ha_perfmap_poll(pm);
	EXPECT(strcmp(name_at(pm, 0xa000, 99), "(none)") == 0, "a huge line was taken");
	EXPECT(strcmp(name_at(pm, 0xb000, 99), "(none)") == 0, "the tail of a huge line was taken");
	EXPECT(strcmp(name_at(pm, 0xc000, 99), "after huge") == 0, "the line after a huge one: %s",
	       name_at(pm, 0xc000, 99));

	/* truncated and rewritten: read again from the start */
	put(path, "w", "9000 10 rewritten\n", 18);
	ha_perfmap_poll(pm);
	EXPECT(strcmp(name_at(pm, 0x9000, 99), "rewritten") == 0, "rewritten file: %s",
	       name_at(pm, 0x9000, 99));
	ha_perfmap_free(pm);

	/* refused: another user's file (root's is fine) */
	if (getuid() == 0) {
		EXPECT(chown(path, 4242, 4242) == 0, "chown");
		pm = ha_perfmap_new_path(path, 1000);
		EXPECT(ha_perfmap_poll(pm) == -1, "a file of uid 4242 read for uid 1000");
		ha_perfmap_free(pm);
		pm = ha_perfmap_new_path(path, 4242);
		EXPECT(ha_perfmap_poll(pm) == 1, "the target's own file refused");
		ha_perfmap_free(pm);
	}
	/* refused: a symlink, a FIFO (no writer: an open that blocked would hang here) */
	char link[256], fifo[256];
	snprintf(link, sizeof link, "%s/link.map", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo.map", dir);
	EXPECT(symlink(path, link) == 0 && mkfifo(fifo, 0600) == 0, "symlink, mkfifo");
	pm = ha_perfmap_new_path(link, getuid());
	EXPECT(ha_perfmap_poll(pm) == -1, "a symlink was followed");
	ha_perfmap_free(pm);
	pm = ha_perfmap_new_path(fifo, getuid());
	EXPECT(ha_perfmap_poll(pm) == -1, "a FIFO was read");
	ha_perfmap_free(pm);
	pm = ha_perfmap_new_path("/nonexistent/perf-1.map", 0);
	EXPECT(ha_perfmap_poll(pm) == -1 && !ha_perfmap_lookup(pm, 1, 1, &n), "a missing file");
	ha_perfmap_free(pm);
	jitdump_checks();
	unlink(link);
	unlink(fifo);
	unlink(path);
	rmdir(dir);
	return UNIT_RESULT("perf map and jitdump: format, bounds, increments, generations, refusals");
}
