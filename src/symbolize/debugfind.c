/* debugfind.c -- debug files by build-id on this machine (see
 * debugfind.h). */
#define _GNU_SOURCE
#include "debugfind.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debuginfod_get.h"

#define MAX_ID 64

/* fd's build-id note is id[len]. */
static int id_matches(int fd, const unsigned char *id, int len)
{
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &got) : -1;
	int ok = n == len && memcmp(got, id, (size_t)n) == 0;
	if (e)
		elf_end(e);
	return ok;
}

int ha_debugfind_file(const char *path, const unsigned char *id, int len, char **out)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !id_matches(fd, id, len) ||
	    !(*out = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

int ha_build_id_hex(const unsigned char *id, int len, char *hex, size_t size)
{
	if (len <= 0 || len > MAX_ID || 2 * (size_t)len + 1 > size)
		return -1;
	for (size_t i = 0; i < (size_t)len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return 0;
}

int ha_build_id_path(char *out, size_t size, const char *dir, size_t dirlen,
                     const unsigned char *id, int len)
{
	char hex[2 * MAX_ID + 1];
	if (len < 2 || ha_build_id_hex(id, len, hex, sizeof hex) < 0 || dirlen > INT32_MAX)
		return -1;
	int k = snprintf(out, size, "%.*s/.build-id/%.2s/%s.debug", (int)dirlen, dir, hex, hex + 2);
	return k > 0 && (size_t)k < size ? 0 : -1;
}

int ha_debugfind(const char *dirs, const unsigned char *id, int len, char **path)
{
	char p[PATH_MAX];
	*path = NULL;
	if (len < 2 || len > MAX_ID)
		return -1;
	if (!dirs || !*dirs)
		dirs = "/usr/lib/debug";
	for (const char *d = dirs; *d;) {
		size_t dl = strcspn(d, ":");
		if (d[0] == '/' && ha_build_id_path(p, sizeof p, d, dl, id, len) == 0) {
			int fd = ha_debugfind_file(p, id, len, path);
			if (fd >= 0)
				return fd;
		}
		d += dl;
		if (*d == ':')
			d++;
	}
	int fd = ha_debuginfod_cached(id, len, path);
	if (fd >= 0 && !id_matches(fd, id, len)) {
		close(fd);
		free(*path);
		*path = NULL;
		return -1;
	}
	return fd;
}

int ha_build_id_from_hex(const char *hex, unsigned char *id, int max)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = strlen(hex);
	int n = 0;
	if (len == 0 || len % 2 || len / 2 > (size_t)max)
		return -1;
	for (size_t i = 0; i < len; i += 2) {
		const char *hi = strchr(digits, hex[i] | 0x20), *lo = strchr(digits, hex[i + 1] | 0x20);
		if (!hex[i] || !hex[i + 1] || !hi || !lo)
			return -1;
		id[n++] = (unsigned char)((hi - digits) << 4 | (lo - digits));
	}
	return n;
}
