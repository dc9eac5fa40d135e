/* module_file.h -- the file a target's module was mapped from, opened as
 * the target sees it, and where its ELF image starts: what the attacher's
 * ELF symbol readers (src/attach/elfsym.c, src/pyframes/py_elf.c) share.
 * (The unwinder's and the symbolizer's opens differ on purpose: they take
 * only the mapped inode itself, never what the path gives now.) */
#ifndef HA_MODULE_FILE_H
#define HA_MODULE_FILE_H

#include <gelf.h>
#include <stdint.h>
#include <sys/types.h>
#include "procmaps.h"

/* Open the file the module whose offset-0 mapping is mod was mapped from,
 * with the target's right to it (target_fs.h: a path it chose must not
 * make us open what its user may not, nor block on a FIFO).  The path goes
 * through /proc/PID/root (the target's mount namespace).  If the file there
 * is not the mapped one (deleted, replaced by an upgrade), try
 * /proc/PID/map_files/, which reaches the mapped inode itself (needs
 * CAP_SYS_ADMIN); failing that, use what the path gave.  The agent we
 * delivered through a memfd is read from our own file (agent_file.h).
 * fd or -errno. */
int ha_module_file_open(pid_t pid, const struct ha_map *mod);

/* p_vaddr of an ELF image's first PT_LOAD, page-aligned down: what its
 * offset-0 mapping's start corresponds to.  0, or -ENOEXEC. */
int ha_elf_first_load_vaddr(Elf *elf, uint64_t *out);

#endif
