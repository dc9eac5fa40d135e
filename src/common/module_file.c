/* module_file.c -- a target's module file and its ELF image's start (see
 * module_file.h). */
#define _GNU_SOURCE
#include "module_file.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent_file.h"
#include "target_fs.h"

static int file_matches(int fd, const struct ha_map *mod)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return 0;
	return (uint64_t)st.st_ino == mod->inode &&
	       (uint64_t)major(st.st_dev) == (mod->dev >> 32) &&
	       (uint64_t)minor(st.st_dev) == (mod->dev & 0xffffffffu);
}

int ha_module_file_open(pid_t pid, const struct ha_map *mod)
{
	char path[4200];
	int fd = mod->deleted ? ha_agent_file_open(pid, mod) : -1;

	if (fd >= 0)
		return fd;      /* the agent we delivered through a memfd: our file */
	fd = -ENOENT;
	if (!mod->deleted && mod->path[0] == '/') {
		snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, mod->path);
		fd = ha_target_open(pid, path, NULL);
		if (fd >= 0 && file_matches(fd, mod))
			return fd;
	}
	snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", (int)pid,
	         (unsigned long long)mod->start, (unsigned long long)mod->end);
	int fd2 = ha_target_open(pid, path, NULL);
	if (fd2 >= 0) {
		if (fd >= 0)
			close(fd);
		return fd2;
	}
	return fd;
}

int ha_elf_first_load_vaddr(Elf *elf, uint64_t *out)
{
	size_t nph;
	long pg = sysconf(_SC_PAGESIZE);

	if (elf_getphdrnum(elf, &nph) != 0)
		return -ENOEXEC;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type == PT_LOAD) {
			*out = ph.p_vaddr & ~(uint64_t)(pg > 0 ? pg - 1 : 4095);
			return 0;
		}
	}
	return -ENOEXEC;
}
