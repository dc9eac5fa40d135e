/* perfmap.c -- the target's perf map (perfmap.h has the contract): read in
 * increments of complete lines, entries kept sorted by start address with
 * the generation of the read that found them. */
#define _GNU_SOURCE
#include "perfmap.h"

#include "strpool.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096
#define BUF_BYTES ((size_t)LINE_MAX_BYTES * 16)
#define BACK_SCAN 64             /* overlapping older entries looked at */

struct pm_ent {
	uint64_t start, size;
	unsigned gen;
	uint32_t seq;            /* order in the file, within a generation */
	const char *name;
};

struct ha_perfmap {
	char path[128];
	uid_t uid;
	int uid_known;
	pid_t pid;
	uint64_t done;           /* bytes of the file consumed (complete lines) */
	uint64_t dev, ino;
	unsigned gen;
	struct pm_ent *v;
	size_t n, cap;
	uint64_t skipped, read_total;
	int in_long_line;        /* dropping the rest of a line too long to hold */
	struct ha_strpool names;
};

struct ha_perfmap *ha_perfmap_new_path(const char *path, uid_t uid)
{
	struct ha_perfmap *pm = calloc(1, sizeof *pm);
	if (!pm)
		return NULL;
	snprintf(pm->path, sizeof pm->path, "%s", path);
	pm->uid = uid;
	pm->uid_known = 1;
	return pm;
}

struct ha_perfmap *ha_perfmap_new(pid_t pid, pid_t own_pid)
{
	char path[128];
	snprintf(path, sizeof path, "/proc/%d/root/tmp/perf-%d.map", (int)pid, (int)own_pid);
	struct ha_perfmap *pm = ha_perfmap_new_path(path, 0);
	if (pm) {
		pm->uid_known = 0;   /* the process's, looked up at each poll */
		pm->pid = pid;
	}
	return pm;
}

void ha_perfmap_free(struct ha_perfmap *pm)
{
	if (!pm)
		return;
	ha_strpool_free(&pm->names);
	free(pm->v);
	free(pm);
}

unsigned ha_perfmap_gen(const struct ha_perfmap *pm)
{
	return pm ? pm->gen : 0;
}

void ha_perfmap_stats(const struct ha_perfmap *pm, uint64_t *entries, uint64_t *skipped)
{
	*entries = pm ? pm->n : 0;
	*skipped = pm ? pm->skipped : 0;
}

/* A hex number at *p (optional 0x), at most 16 digits; advances *p. */
static int hex(const char **p, const char *end, uint64_t *v)
{
	const char *s = *p;
	int nd = 0;
	*v = 0;
	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, nd++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			break;
		if (nd >= 16)
			return 0;
		*v = *v << 4 | (uint64_t)d;
	}
	*p = s;
	return nd > 0;
}

int ha_perfmap_add(struct ha_perfmap *pm, uint64_t start, uint64_t size, const char *s, size_t len)
{
	char name[HA_PERFMAP_NAME_MAX + 1];

	if (size == 0 || start + size < start)
		return -1;
	const char *nul = memchr(s, '\0', len);
	if (nul)
		len = (size_t)(nul - s);
	if (len > HA_PERFMAP_NAME_MAX)
		len = HA_PERFMAP_NAME_MAX;
	if (len == 0 || pm->n >= HA_PERFMAP_MAX_ENTRIES)
		return -1;
	memcpy(name, s, len);
	name[len] = '\0';
	struct pm_ent *v = ha_grow(pm->v, &pm->cap, pm->n + 1, sizeof *v, 1024);
	if (!v)
		return -1;
	pm->v = v;
	const char *nm = ha_strpool_intern(&pm->names, name);
	if (!nm[0])
		return -1;
	pm->v[pm->n] = (struct pm_ent){ start, size, pm->gen + 1, (uint32_t)pm->n, nm };
	pm->n++;
	return 0;
}

/* One line [s, end) without its newline. */
static void parse_line(struct ha_perfmap *pm, const char *s, const char *end)
{
	uint64_t start, size;

	if (!hex(&s, end, &start) || s == end || *s != ' ')
		goto skip;
	while (s < end && *s == ' ')
		s++;
	if (!hex(&s, end, &size) || s == end || *s != ' ')
		goto skip;
	s++;
	if (ha_perfmap_add(pm, start, size, s, (size_t)(end - s)) == 0)
		return;
skip:
	pm->skipped++;
}

static int ent_cmp(const void *a, const void *b)
{
	const struct pm_ent *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The uid a file must have (besides root): the target's. */
static int owner_ok(const struct ha_perfmap *pm, uid_t owner)
{
	if (owner == 0)
		return 1;
	if (!pm->uid_known) {
		char p[64];
		struct stat st;
		snprintf(p, sizeof p, "/proc/%d", (int)pm->pid);
		if (stat(p, &st) != 0)
			return 0;
		return owner == st.st_uid;
	}
	return owner == pm->uid;
}

int ha_perfmap_open_file(const struct ha_perfmap *pm, const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || !owner_ok(pm, st->st_uid)) {
		close(fd);
		return -1;
	}
	return fd;
}

int ha_perfmap_poll(struct ha_perfmap *pm)
{
	struct stat st;
	if (!pm)
		return -1;
	int fd = ha_perfmap_open_file(pm, pm->path, &st);
	if (fd < 0)
		return -1;
	if ((uint64_t)st.st_dev != pm->dev || (uint64_t)st.st_ino != pm->ino ||
	    (uint64_t)st.st_size < pm->done) {
		pm->dev = (uint64_t)st.st_dev;   /* replaced or truncated: from the start */
		pm->ino = (uint64_t)st.st_ino;
		pm->done = 0;
		pm->in_long_line = 0;
	}
	size_t n0 = pm->n;
	uint64_t size = (uint64_t)st.st_size;
	char *buf = malloc(BUF_BYTES);
	size_t have = 0;
	while (buf && pm->done + have < size && pm->read_total < HA_PERFMAP_MAX_BYTES) {
		ssize_t k = pread(fd, buf + have, BUF_BYTES - have, (off_t)(pm->done + have));
		if (k <= 0)
			break;
		pm->read_total += (uint64_t)k;
		have += (size_t)k;
		size_t pos = 0;
		for (;;) {
			char *nl = memchr(buf + pos, '\n', have - pos);
			if (!nl)
				break;
			size_t len = (size_t)(nl - (buf + pos));
			if (pm->in_long_line)
				pm->in_long_line = 0;   /* its end: counted already */
			else if (len <= LINE_MAX_BYTES)
				parse_line(pm, buf + pos, nl);
			else
				pm->skipped++;
			pos += len + 1;
		}
		if (pos == 0 && have == BUF_BYTES) {
			if (!pm->in_long_line)
				pm->skipped++;  /* a line too long to hold: drop it */
			pm->in_long_line = 1;
			pos = have;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
		pm->done += pos;
	}
	free(buf);
	close(fd);
	return ha_perfmap_commit(pm, n0);
}

int ha_perfmap_commit(struct ha_perfmap *pm, size_t n0)
{
	if (pm->n == n0)
		return 0;
	pm->gen++;
	qsort(pm->v, pm->n, sizeof *pm->v, ent_cmp);
	return 1;
}

size_t ha_perfmap_count(const struct ha_perfmap *pm)
{
	return pm->n;
}

const char *ha_perfmap_lookup(struct ha_perfmap *pm, uint64_t pc, unsigned gen, uint64_t *start)
{
	if (!pm || pm->n == 0)
		return NULL;
	/* the last entry starting at or below pc */
	size_t lo = ha_count_le(pm->v, pm->n, sizeof *pm->v, offsetof(struct pm_ent, start), pc);
	const struct pm_ent *best = NULL, *later = NULL;
	for (size_t i = lo, k = 0; i > 0 && k < BACK_SCAN; i--, k++) {
		const struct pm_ent *e = &pm->v[i - 1];
		if (pc - e->start >= e->size)
			continue;
		if (e->gen <= gen) {
			if (!best || e->gen > best->gen || (e->gen == best->gen && e->seq > best->seq))
				best = e;
		} else if (!later || e->gen < later->gen ||
		           (e->gen == later->gen && e->seq < later->seq)) {
			later = e;
		}
	}
	if (!best)
		best = later;
	if (!best)
		return NULL;
	*start = best->start;
	return best->name;
}
