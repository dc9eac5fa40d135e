/* modfiles.c -- the files the symbolizer reads for a module of the target:
 * the module's own file and its detached debug file (see modfiles.h).
 *
 * libdwfl's own callbacks open whatever path the target's maps and its
 * modules' .gnu_debuglink sections name, with our rights and blocking:
 * dwfl_linux_proc_find_elf stat()s the path and then open()s it (a FIFO
 * put there in between blocks the writer thread for good, a symbolic link
 * to /etc/shadow is opened as root), and the debuglink search opens and
 * reads (for its CRC) every candidate in the module's directory, which the
 * target may own.  Here every such file is opened through target_fs.h (the
 * target's rights, O_NONBLOCK, a regular file only), the module's own file
 * preferably through /proc/PID/map_files (the mapped inode itself,
 * whatever became of its path).  The build-id lookup in our own
 * directories (debugfind.h) searches only absolute directories
 * (/usr/lib/debug, after those of HEAPATTACH_DEBUG_DIR, which whoever runs
 * heapattach chose), which the target cannot write, then debuginfod's
 * cache, and validates what it finds by build-id.  (Not libdwfl's
 * dwfl_build_id_find_debuginfo: with DEBUGINFOD_URLS set it would ask the
 * servers, on the writer's thread, for as long as they take.)  A target in a container has a /usr/lib/debug of its own,
 * where its image put its debug files: its .build-id tree is searched
 * through /proc/PID/root, as the target could (target_fs.h), and what is
 * found there is checked by build-id too.  (An absolute symbolic link in
 * it resolves in our root, not the target's: then the build-id decides.) */
#define _GNU_SOURCE
#include "modfiles.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

#include "agent_file.h"
#include "debugfind.h"
#include "procmaps.h"
#include "target_fs.h"

#define SYSTEM_DEBUG_DIR "/usr/lib/debug"

static int same_inode(const struct stat *st, const struct ha_map *m)
{
	return (uint64_t)st->st_ino == m->inode && (uint64_t)major(st->st_dev) == (m->dev >> 32) &&
	       (uint64_t)minor(st->st_dev) == (m->dev & 0xffffffffu);
}

int ha_modfile_open_elf(pid_t pid, const char *root, const struct ha_maps *maps,
                        Dwfl_Module *mod, const char *name, char **file_name)
{
	char path[PATH_MAX + 64];
	struct stat st;
	Dwarf_Addr lo = 0, hi = 0;
	int fd = -1;

	if (name[0] != '/' || !dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL))
		return -1;
	const struct ha_map *m = ha_maps_module_mapping(maps, name, lo, hi, 0);
	if (!m)
		return -1;
	/* The agent we delivered through a memfd: our own file, where its
	 * debug link search starts too. */
	if (m->deleted && (fd = ha_agent_file_open(pid, m)) >= 0) {
		*file_name = strdup(ha_agent_file());
		if (!*file_name) {
			close(fd);
			fd = -1;
		}
		return fd;
	}
	snprintf(path, sizeof path, "/proc/%d/map_files/%llx-%llx", (int)pid,
	         (unsigned long long)m->start, (unsigned long long)m->end);
	fd = ha_target_open(pid, path, &st);
	if (fd >= 0 && !same_inode(&st, m)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0 && !m->deleted &&
	    snprintf(path, sizeof path, "%s%s", root, m->path) < (int)sizeof path) {
		fd = ha_target_open(pid, path, &st);
		/* Only the mapped file itself, not what the path is now. */
		if (fd >= 0 && !same_inode(&st, m)) {
			close(fd);
			fd = -1;
		}
	}
	/* The name as the target sees it, through root: where the debug
	 * link search starts. */
	if (fd >= 0) {
		snprintf(path, sizeof path, "%s%s", root, m->path);
		*file_name = strdup(path);
		if (!*file_name) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

/* Does the debug file at fd belong to mod?  By build-id when the module
 * has one, else by the debug link's CRC (0: unchecked, as libdwfl does). */
static int debug_matches(Dwfl_Module *mod, int fd, uint32_t crc)
{
	const unsigned char *id;
	GElf_Addr id_vaddr;
	int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	if (id_len > 0) {
		Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
		const void *got = NULL;
		ssize_t n = e ? dwelf_elf_gnu_build_id(e, &got) : -1;
		int ok = n == id_len && memcmp(got, id, (size_t)n) == 0;
		if (e)
			elf_end(e);
		return ok;
	}
	if (crc == 0)
		return 1;
	unsigned char buf[1 << 16];
	uLong c = crc32(0L, Z_NULL, 0);
	for (off_t off = 0;;) {
		ssize_t r = pread(fd, buf, sizeof buf, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return 0;
		if (r == 0)
			break;
		c = crc32(c, buf, (uInt)r);
		off += r;
	}
	return (uint32_t)c == crc;
}

/* Try one candidate: fd (and *out its name) or -1. */
static int try_debug(pid_t pid, Dwfl_Module *mod, const struct stat *main_st, const char *path,
                     uint32_t crc, char **out)
{
	struct stat st;
	int fd = ha_target_open(pid, path, &st);
	if (fd < 0)
		return -1;
	/* The main file by another name is not its debug file. */
	if ((main_st && st.st_dev == main_st->st_dev && st.st_ino == main_st->st_ino) ||
	    !debug_matches(mod, fd, crc) || !(*out = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

int ha_modfile_open_debug_local(const char *dirs, Dwfl_Module *mod, char **debuginfo_file_name)
{
	const unsigned char *id;
	GElf_Addr id_vaddr;
	int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	*debuginfo_file_name = NULL;
	return id_len > 0 ? ha_debugfind(dirs, id, id_len, debuginfo_file_name) : -1;
}

int ha_modfile_open_debug(pid_t pid, const char *root, const char *dirs, Dwfl_Module *mod,
                          const char *file_name, const char *debuglink, uint32_t crc,
                          char **debuginfo_file_name)
{
	int by_id;

	/* Our system directories (and HEAPATTACH_DEBUG_DIR's), by build-id. */
	int fd = ha_modfile_open_debug_local(dirs, mod, debuginfo_file_name);
	if (fd >= 0)
		return fd;
	return ha_modfile_open_debug_target(pid, root, mod, file_name, debuglink, crc,
	                                    debuginfo_file_name, &by_id);
}

/* By build-id under the target's own /usr/lib/debug, when it sees another
 * file system than ours (root "/proc/PID/root"; else that directory is
 * ours, searched by libdwfl): .build-id/NN/REST.debug. */
static int by_id_in_root(pid_t pid, const char *root, Dwfl_Module *mod,
                         const struct stat *main_st, char **out)
{
	const unsigned char *id;
	GElf_Addr id_vaddr;
	int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	char dir[PATH_MAX], path[PATH_MAX];
	int k;

	if (!root[0] || id_len < 2 || id_len > 64)
		return -1;
	k = snprintf(dir, sizeof dir, "%s" SYSTEM_DEBUG_DIR, root);
	if (k <= 0 || (size_t)k >= sizeof dir ||
	    ha_build_id_path(path, sizeof path, dir, (size_t)k, id, id_len) < 0)
		return -1;
	return try_debug(pid, mod, main_st, path, 0, out);
}

int ha_modfile_open_debug_target(pid_t pid, const char *root, Dwfl_Module *mod,
                                 const char *file_name, const char *debuglink, uint32_t crc,
                                 char **debuginfo_file_name, int *by_id)
{
	char dir[PATH_MAX], path[2 * PATH_MAX + 64];
	struct stat main_st, *mst = NULL;
	size_t rootlen = strlen(root);
	int fd;

	*debuginfo_file_name = NULL;
	*by_id = 0;
	if (file_name && file_name[0] == '/') {
		int mfd = ha_target_open(pid, file_name, &main_st);
		if (mfd >= 0) {
			close(mfd);
			mst = &main_st;
		}
	}
	/* (An absolute link: a dwz file's, whose build-id is not the module's.) */
	if (!(debuglink && debuglink[0] == '/') &&
	    (fd = by_id_in_root(pid, root, mod, mst, debuginfo_file_name)) >= 0) {
		*by_id = 1;
		return fd;
	}
	if (!debuglink || !*debuglink)
		return -1;
	/* An absolute link is a dwz file's .gnu_debugaltlink: taken only
	 * under the system directory (found by build-id above otherwise). */
	if (debuglink[0] == '/') {
		if (strncmp(debuglink, SYSTEM_DEBUG_DIR "/", sizeof SYSTEM_DEBUG_DIR) != 0 ||
		    strstr(debuglink, "/../"))
			return -1;
		return try_debug(pid, mod, NULL, debuglink, crc, debuginfo_file_name);
	}
	/* A .gnu_debuglink names a file, never a path. */
	if (strchr(debuglink, '/') || strcmp(debuglink, "..") == 0 || !file_name ||
	    file_name[0] != '/')
		return -1;
	const char *slash = strrchr(file_name, '/');
	if ((size_t)(slash - file_name) >= sizeof dir)
		return -1;
	memcpy(dir, file_name, (size_t)(slash - file_name));
	dir[slash - file_name] = '\0';
	/* libdwfl's default path ":.debug:/usr/lib/debug": the module's own
	 * directory, its .debug, and the system directory under the module's
	 * directory and each of its tails; then, in a container, the
	 * target's own system directory under the module's directory there. */
	snprintf(path, sizeof path, "%s/%s", dir, debuglink);
	if ((fd = try_debug(pid, mod, mst, path, crc, debuginfo_file_name)) >= 0)
		return fd;
	snprintf(path, sizeof path, "%s/.debug/%s", dir, debuglink);
	if ((fd = try_debug(pid, mod, mst, path, crc, debuginfo_file_name)) >= 0)
		return fd;
	for (const char *sub = dir; sub && *sub;) {
		snprintf(path, sizeof path, SYSTEM_DEBUG_DIR "%s/%s", sub, debuglink);
		if ((fd = try_debug(pid, mod, mst, path, crc, debuginfo_file_name)) >= 0)
			return fd;
		sub = strchr(sub + 1, '/');
	}
	if (rootlen && strncmp(dir, root, rootlen) == 0 && dir[rootlen] == '/') {
		snprintf(path, sizeof path, "%s" SYSTEM_DEBUG_DIR "%s/%s", root, dir + rootlen, debuglink);
		return try_debug(pid, mod, mst, path, crc, debuginfo_file_name);
	}
	return -1;
}

char *ha_modfile_debug_path(void)
{
	const char *dirs = getenv("HEAPATTACH_DEBUG_DIR");
	char *path = NULL;

	if (!dirs || !*dirs || asprintf(&path, "%s:" SYSTEM_DEBUG_DIR, dirs) < 0)
		return NULL;
	return path;
}
