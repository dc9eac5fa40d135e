/* procmaps.c -- /proc/PID/maps of a target, parsed; modules and their bases.
 *
 * The content comes from another process's view of the world and is treated
 * as untrusted: every field is bounds-checked, a line that does not parse is
 * skipped, and nothing is assumed about line or path lengths. */
#define _GNU_SOURCE
#include "procmaps.h"
#include "ha_proto.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A maps file of a big process (JVM, browsers) can be several MiB; refuse
 * anything beyond this instead of allocating without bound. */
#define MAPS_MAX_BYTES (256u << 20)

static const char DELETED_SUFFIX[] = " (deleted)";
static const char MEMFD_PREFIX[] = "/memfd:";   /* a memfd's path, as the maps write it */

size_t ha_maps_path_len(const char *name)
{
	size_t n = strlen(name);
	if (n >= sizeof DELETED_SUFFIX - 1 &&
	    strcmp(name + n - (sizeof DELETED_SUFFIX - 1), DELETED_SUFFIX) == 0)
		n -= sizeof DELETED_SUFFIX - 1;
	return n;
}

const struct ha_map *ha_maps_module_mapping(const struct ha_maps *m, const char *name,
                                            uint64_t lo, uint64_t hi, unsigned prot)
{
	size_t n = ha_maps_path_len(name);
	for (size_t i = 0; i < m->n; i++) {
		const struct ha_map *e = &m->v[i];
		if (e->start >= lo && e->start < hi && (e->prot & prot) == prot &&
		    strlen(e->path) == n && strncmp(e->path, name, n) == 0)
			return e;
	}
	return NULL;
}

/* Read the whole file at path into a NUL-terminated heap buffer.  /proc files
 * report size 0, so grow as we go.  0 or -errno. */
static int read_all(const char *path, char **out, size_t *outlen)
{
	size_t cap = (size_t)64 * 1024, len = 0;
	char *buf = malloc(cap);
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		free(buf);
		return -e;
	}
	for (;;) {
		ssize_t n;
		if (cap - len < 4096) {
			char *nb;
			if (cap >= MAPS_MAX_BYTES) {
				close(fd);
				free(buf);
				return -EFBIG;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				close(fd);
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			free(buf);
			return -e;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;
}

/* Parse a hexadecimal number at *p, advance *p.  Requires at least one digit
 * and at most 16 (no overflow).  0 on success, -1 otherwise. */
static int parse_hex(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;

	for (;; s++, nd++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (nd == 16)
			return -1;
		x = (x << 4) | d;
	}
	if (nd == 0)
		return -1;
	*v = x;
	*p = s;
	return 0;
}

static int parse_dec(const char **p, uint64_t *v)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0;

	for (; *s >= '0' && *s <= '9'; s++, nd++) {
		unsigned d = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	if (nd == 0)
		return -1;
	*v = x;
	*p = s;
	return 0;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return -1;
	(*p)++;
	return 0;
}

static void skip_blanks(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* The grammar of a line (ha_maps_parse_line, procmaps.h):
 *   start-end perms offset dev:dev inode [path]
 * The path is everything after the blanks that follow the inode: it may
 * contain spaces.  A " (deleted)" suffix is cut and remembered. */
int ha_maps_parse_line(const char *line, struct ha_map *m)
{
	const char *p = line;
	uint64_t devmaj, devmin;
	size_t plen;

	memset(m, 0, sizeof *m);
	if (parse_hex(&p, &m->start) || expect(&p, '-') || parse_hex(&p, &m->end) ||
	    m->end < m->start || expect(&p, ' '))
		return -1;

	/* perms: exactly four characters, e.g. "r-xp" */
	if (!p[0] || !p[1] || !p[2] || !p[3] || p[4] != ' ')
		return -1;
	if (p[0] == 'r')
		m->prot |= PROT_READ;
	if (p[1] == 'w')
		m->prot |= PROT_WRITE;
	if (p[2] == 'x')
		m->prot |= PROT_EXEC;
	m->shared = p[3] == 's';
	p += 5;

	if (parse_hex(&p, &m->offset) || expect(&p, ' ') ||
	    parse_hex(&p, &devmaj) || expect(&p, ':') || parse_hex(&p, &devmin) ||
	    expect(&p, ' ') || parse_dec(&p, &m->inode))
		return -1;
	m->dev = (devmaj << 32) | devmin;
	if (*p != '\0' && *p != ' ' && *p != '\t')
		return -1;
	skip_blanks(&p);

	plen = ha_maps_path_len(p);
	m->deleted = plen != strlen(p);
	m->path = strndup(p, plen);
	return m->path ? 0 : -ENOMEM;
}

static int cmp_start(const void *a, const void *b)
{
	const struct ha_map *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

int ha_maps_parse(char *text, size_t len, struct ha_maps *out)
{
	char *line;
	size_t cap = 0, n = 0;
	struct ha_map *v = NULL;
	int rc, sorted = 1;

	out->v = NULL;
	out->n = 0;
	for (line = text; line < text + len;) {
		char *nl = memchr(line, '\n', (size_t)(text + len - line));
		struct ha_map m;
		if (nl)
			*nl = '\0';
		rc = ha_maps_parse_line(line, &m);
		line = nl ? nl + 1 : text + len;
		if (rc == -1)
			continue;           /* malformed: skip, as documented */
		if (rc < 0)
			goto fail;
		struct ha_map *nv = ha_grow(v, &cap, n + 1, sizeof *v, 256);
		if (!nv) {
			free(m.path);
			rc = -ENOMEM;
			goto fail;
		}
		v = nv;
		if (n > 0 && m.start < v[n - 1].start)
			sorted = 0;
		v[n++] = m;
	}
	/* The kernel prints in address order; ha_maps_find_addr relies on it,
	 * so make sure rather than trust. */
	if (!sorted)
		qsort(v, n, sizeof *v, cmp_start);
	out->v = v;
	out->n = n;
	return 0;

fail:
	out->v = v;
	out->n = n;
	ha_maps_free(out);
	return rc;
}

int ha_maps_read(pid_t pid, struct ha_maps *out)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	int rc;

	out->v = NULL;
	out->n = 0;
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	rc = read_all(path, &buf, &len);
	if (rc < 0)
		return rc;
	rc = ha_maps_parse(buf, len, out);
	free(buf);
	return rc;
}

void ha_maps_free(struct ha_maps *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

static int same_file(const struct ha_map *a, const struct ha_map *b)
{
	return a->inode == b->inode && a->dev == b->dev && strcmp(a->path, b->path) == 0;
}

/* Is the offset-0 mapping m[i] followed by an executable mapping of the same
 * file?  That tells a module mapped by the loader from the same file mapped
 * read-only by the program for some other reason. */
static int has_exec_segment(const struct ha_maps *m, size_t i)
{
	for (size_t j = i; j < m->n && j < i + 16; j++) {
		if (j > i && m->v[j].offset == 0 && same_file(&m->v[i], &m->v[j]))
			break;          /* the next copy of the file starts */
		if (same_file(&m->v[i], &m->v[j]) && (m->v[j].prot & PROT_EXEC))
			return 1;
	}
	return 0;
}

const char *ha_maps_module_name(const char *path)
{
	const char *base = ha_base_name(path);
	const char *name = base + sizeof MEMFD_PREFIX - 2;

	/* Only the agent's own memfd: a memfd the program named "libc.so.6"
	 * must not pass for a module of that name. */
	return strncmp(path, MEMFD_PREFIX, sizeof MEMFD_PREFIX - 1) == 0 && base == path + 1 &&
	               strncmp(name, HA_AGENT_SONAME, sizeof HA_AGENT_SONAME - 1) == 0 ? name : base;
}

const struct ha_map *ha_maps_find_module(const struct ha_maps *m, const char *prefix)
{
	const struct ha_map *fallback = NULL;
	size_t plen = strlen(prefix);

	for (size_t i = 0; i < m->n; i++) {
		const struct ha_map *e = &m->v[i];
		if (e->offset != 0 || e->path[0] != '/' ||
		    strncmp(ha_maps_module_name(e->path), prefix, plen) != 0)
			continue;
		if (has_exec_segment(m, i))
			return e;
		if (!fallback)
			fallback = e;
	}
	return fallback;
}

const struct ha_map *ha_maps_find_libc(const struct ha_maps *m, int *musl)
{
	const struct ha_map *e = ha_maps_find_module(m, "libc.so.6");
	int is_musl = 0;

	if (!e)
		e = ha_maps_find_module(m, "libc-");
	if (!e && (e = ha_maps_find_module(m, "ld-musl-")) == NULL)
		e = ha_maps_find_module(m, "libc.musl-");
	/* Debian's musl: /lib/ld-musl-x86_64.so.1 is a link to
	 * /usr/lib/x86_64-linux-musl/libc.so, the name the maps show. */
	for (size_t i = 0; !e && i < m->n; i++)
		if (m->v[i].offset == 0 && ha_maps_is_musl_path(m->v[i].path))
			e = &m->v[i];
	if (e)
		is_musl = ha_maps_is_musl_path(e->path);
	if (musl)
		*musl = is_musl;
	return e;
}

int ha_maps_is_musl_path(const char *path)
{
	const char *b = ha_maps_module_name(path);
	if (strncmp(b, "ld-musl-", 8) == 0 || strncmp(b, "libc.musl-", 10) == 0)
		return 1;
	/* .../x86_64-linux-musl/libc.so (Debian's musl package) */
	if (strcmp(b, "libc.so") != 0 || b - path < 6)
		return 0;
	return memcmp(b - 6, "-musl/", 6) == 0;
}

const struct ha_map *ha_maps_find_addr(const struct ha_maps *m, uint64_t addr)
{
	/* the last mapping with start <= addr */
	size_t lo = ha_count_le(m->v, m->n, sizeof *m->v, offsetof(struct ha_map, start), addr);
	if (lo == 0)
		return NULL;
	return addr < m->v[lo - 1].end ? &m->v[lo - 1] : NULL;
}

const struct ha_map *ha_maps_module_of(const struct ha_maps *m, const struct ha_map *e)
{
	size_t i;

	if (!e || e < m->v || e >= m->v + m->n || e->path[0] != '/')
		return NULL;
	/* Segments of one module are mapped in ascending order from offset 0:
	 * walk back to the nearest offset-0 mapping of the same file. */
	for (i = (size_t)(e - m->v) + 1; i-- > 0;) {
		const struct ha_map *c = &m->v[i];
		if (!same_file(c, e))
			continue;
		if (c->offset == 0)
			return c;
		if (c->offset > e->offset)
			break;          /* an older copy of the file: stop */
	}
	return NULL;
}
