/* agent_file.c -- our own agent file for a target's memfd of it (see
 * agent_file.h). */
#define _GNU_SOURCE
#include "agent_file.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ha_proto.h"
#include "util.h"

#define FIRST_PAGE 4096
#define MEMFD_NAME "/memfd:" HA_AGENT_SONAME

static char g_path[4096];

void ha_agent_file_set(const char *path)
{
	snprintf(g_path, sizeof g_path, "%s", path ? path : "");
}

const char *ha_agent_file(void)
{
	return g_path;
}

/* Has the page p (n bytes, an ELF file's start) a GNU build-id note within
 * it?  Then equal pages mean the same build. */
static int has_build_id(const unsigned char *p, size_t n)
{
	Elf64_Ehdr eh;
	if (n < sizeof eh)
		return 0;
	memcpy(&eh, p, sizeof eh);
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phoff > n || eh.e_phnum > (n - eh.e_phoff) / sizeof(Elf64_Phdr))
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, p + eh.e_phoff + i * sizeof ph, sizeof ph);
		if (ph.p_type != PT_NOTE || ph.p_offset > n || ph.p_filesz > n - ph.p_offset)
			continue;
		for (size_t off = ph.p_offset, end = ph.p_offset + ph.p_filesz;
		     off + sizeof(Elf64_Nhdr) <= end;) {
			Elf64_Nhdr nh;
			memcpy(&nh, p + off, sizeof nh);
			size_t name = off + sizeof nh, desc = name + ((nh.n_namesz + 3u) & ~3u);
			if (desc > end)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp(p + name, "GNU", 4) == 0 && nh.n_descsz > 0 && nh.n_descsz <= end - desc)
				return 1;
			off = desc + ((nh.n_descsz + 3u) & ~3u);
		}
	}
	return 0;
}

int ha_agent_file_open(pid_t pid, const struct ha_map *base)
{
	unsigned char ours[FIRST_PAGE], theirs[FIRST_PAGE];
	if (!g_path[0] || !base || base->offset != 0 || strcmp(base->path, MEMFD_NAME) != 0)
		return -1;
	int fd = open(g_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, ours, sizeof ours, 0);
	if (n > 0 && (uint64_t)n > base->end - base->start)
		n = (ssize_t)(base->end - base->start);
	if (n <= 0 || !has_build_id(ours, (size_t)n) ||
	    ha_remote_read(pid, base->start, theirs, (size_t)n) != 0 ||
	    memcmp(ours, theirs, (size_t)n) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}
