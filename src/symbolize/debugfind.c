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
