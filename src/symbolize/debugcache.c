/* debugcache.c -- decompressed copies of compressed debug files, by
 * build-id (see debugcache.h). */
#define _GNU_SOURCE
#include "debugcache.h"
#include "build_id.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_ID 64

int ha_debugcache_dir(char *dir, size_t size)
{
	const char *e = getenv("HEAPATTACH_CACHE");
	int n;

	if (e) {
		if (!*e)
			return 0; /* set and empty: no cache */
		n = snprintf(dir, size, "%s", e);
	} else if ((e = getenv("XDG_CACHE_HOME")) && *e == '/') {
		n = snprintf(dir, size, "%s/heapattach", e);
	} else if ((e = getenv("HOME")) && *e == '/') {
		n = snprintf(dir, size, "%s/.cache/heapattach", e);
	} else {
		return 0;
	}
	return n > 0 && (size_t)n < size;
}

static int path_for(char *out, size_t size, const char *dir, const unsigned char *id, int n)
{
	char hex[2 * MAX_ID + 1];

	if (ha_build_id_hex(id, n, hex, sizeof hex) < 0)
		return -1;
	int k = snprintf(out, size, "%s/debug/%s.debug", dir, hex);
	return k > 0 && (size_t)k < size ? 0 : -1;
}

/* The build-id note of an ELF file (into id, *idlen bytes; 0 if none) and
 * whether any section is compressed; *inflated: the sum of the sections'
 * sizes once inflated.  -1 if the section headers cannot be read. */
static int inspect(Elf *elf, unsigned char *id, size_t *idlen, int *compressed,
                   unsigned long long *inflated)
{
	Elf_Scn *scn = NULL;

	*idlen = 0;
	*compressed = 0;
	*inflated = 0;
	if (elf_kind(elf) != ELF_K_ELF)
		return -1;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return -1;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;
			*compressed = 1;
			if (!gelf_getchdr(scn, &ch))
				return -1;
			*inflated += ch.ch_size;
		} else if (sh.sh_type != SHT_NOBITS) {
			*inflated += sh.sh_size;
		}
		if (sh.sh_type != SHT_NOTE || *idlen || (sh.sh_flags & SHF_COMPRESSED))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((const char *)d->d_buf + name_off, "GNU", 4) == 0 &&
			    nh.n_descsz > 0 && nh.n_descsz <= MAX_ID) {
				memcpy(id, (const char *)d->d_buf + desc_off, nh.n_descsz);
				*idlen = nh.n_descsz;
				break;
			}
		}
	}
	return 0;
}

int ha_debugcache_open(const char *dir, const unsigned char *build_id, int id_len, char **path)
{
	char p[PATH_MAX];
	struct stat st;
	unsigned char got[MAX_ID];
	size_t got_len;
	int compressed, ok = 0;
	unsigned long long inflated;

	if (path_for(p, sizeof p, dir, build_id, id_len) != 0)
		return -1;
	/* our own directory (0700); still, no symlink, FIFO or device */
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		elf_version(EV_CURRENT);
		Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		if (e) {
			ok = inspect(e, got, &got_len, &compressed, &inflated) == 0 && !compressed &&
			     got_len == (size_t)id_len && memcmp(got, build_id, got_len) == 0 &&
			     inflated <= (unsigned long long)st.st_size;
			elf_end(e);
		}
	}
	if (ok)
		ok = (*path = strdup(p)) != NULL;
	if (!ok) {
		close(fd);
		return -1;
	}
	return fd;
}

int ha_debugcache_compressed(int fd)
{
	unsigned char id[MAX_ID];
	size_t id_len;
	int compressed = 0;
	unsigned long long inflated;

	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return 0;
	if (inspect(e, id, &id_len, &compressed, &inflated) != 0 || inflated > HA_DEBUGCACHE_MAX_BYTES)
		compressed = 0;
	elf_end(e);
	return compressed;
}

/* mkdir -p for the cache directory (the last levels are ours: 0700). */
static int make_dirs(const char *dir)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof p)
		return -1;
	memcpy(p, dir, n + 1);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* pread from offset 0: in may be a descriptor libdw reads too, whose
 * offset is not ours to move. */
static int copy_fd(int in, int out)
{
	char buf[1 << 16];
	for (off_t at = 0;;) {
		ssize_t r = pread(in, buf, sizeof buf, at);
		if (r == 0)
			return 0;
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		at += r;
		for (ssize_t w = 0; w < r;) {
			ssize_t k = write(out, buf + w, (size_t)(r - w));
			if (k < 0) {
				if (errno == EINTR)
					continue;
				return -1;
			}
			w += k;
		}
	}
}

int ha_debugcache_store(const char *dir, const unsigned char *build_id, int id_len, int in,
                        const char *src, char *err, size_t errlen)
{
	char final[PATH_MAX], sub[PATH_MAX], tmp[PATH_MAX];
	const char *why = NULL;
	int out = -1;
	Elf *e = NULL;

	if (path_for(final, sizeof final, dir, build_id, id_len) != 0 ||
	    snprintf(sub, sizeof sub, "%s/debug", dir) >= (int)sizeof sub ||
	    snprintf(tmp, sizeof tmp, "%s/.new-XXXXXX", sub) >= (int)sizeof tmp) {
		ha_err(err, errlen, "cache path too long");
		return -1;
	}
	if (make_dirs(sub) != 0) {
		ha_err(err, errlen, "cannot create %s: %s", sub, strerror(errno));
		return -1;
	}
	/* A copy of the file, inflated in place by libelf, renamed into place
	 * only once complete: a reader never sees half a file. */
	out = mkstemp(tmp);
	if (out < 0) {
		ha_err(err, errlen, "cannot create a file in %s: %s", sub, strerror(errno));
		return -1;
	}
	if (copy_fd(in, out) != 0) {
		why = strerror(errno);
		goto fail;
	}
	elf_version(EV_CURRENT);
	e = elf_begin(out, ELF_C_RDWR, NULL);
	unsigned char id[MAX_ID];
	size_t id_len_got;
	int compressed;
	unsigned long long inflated;
	if (!e || inspect(e, id, &id_len_got, &compressed, &inflated) != 0) {
		why = elf_errmsg(-1);
		goto fail;
	}
	if (id_len_got != (size_t)id_len || memcmp(id, build_id, id_len_got) != 0) {
		why = "its build-id is not the module's";
		goto fail;
	}
	if (inflated > HA_DEBUGCACHE_MAX_BYTES) {
		why = "too large";
		goto fail;
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn)) != NULL;) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
		    elf_compress(scn, 0, 0) < 0) {
			why = elf_errmsg(-1);
			goto fail;
		}
	}
	if (elf_update(e, ELF_C_WRITE) < 0) {
		why = elf_errmsg(-1);
		goto fail;
	}
	elf_end(e);
	e = NULL;
	if (close(out) != 0) {
		out = -1;
		why = strerror(errno);
		goto fail;
	}
	out = -1;
	if (rename(tmp, final) != 0) {
		why = strerror(errno);
		goto fail;
	}
	return 0;
fail:
	ha_err(err, errlen, "cannot store %s: %s", src, why ? why : "error");
	if (e)
		elf_end(e);
	if (out >= 0)
		close(out);
	unlink(tmp);
	return -1;
}
