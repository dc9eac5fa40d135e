/* modfiles.h -- the files the symbolizer reads for a module of the target:
 * its own ELF file and its detached debug file, opened only as the target
 * itself could open them (target_fs.h), never blocking on what the target
 * put at a path.  The two are the bodies of the symbolizer's libdwfl
 * callbacks find_elf and find_debuginfo. */
#ifndef HA_MODFILES_H
#define HA_MODFILES_H

#include <elfutils/libdwfl.h>
#include <stdint.h>
#include <sys/types.h>

#include "procmaps.h"

/* The file of module mod (name: its path in the target's maps, maybe with
 * " (deleted)"; maps: the target's, read when the modules were reported),
 * as mapped: through /proc/PID/map_files, else through root ("" or
 * "/proc/PID/root") and the path if that is still the mapped file.  fd,
 * with *file_name (malloc'ed: root and the path), or -1. */
int ha_modfile_open_elf(pid_t pid, const char *root, const struct ha_maps *maps,
                        Dwfl_Module *mod, const char *name, char **file_name);

/* The debug file of mod by build-id in our directories (dirs:
 * ha_modfile_debug_path's, NULL for /usr/lib/debug) or debuginfod's cache
 * (debugfind.h).  fd, with *debuginfo_file_name (malloc'ed), or -1. */
int ha_modfile_open_debug_local(const char *dirs, Dwfl_Module *mod, char **debuginfo_file_name);

/* The debug file of mod: ha_modfile_open_debug_local, else as
 * ha_modfile_open_debug_target finds it.  root: "" or "/proc/PID/root"
 * (the target sees another file system).  fd, with *debuginfo_file_name
 * (malloc'ed), or -1. */
int ha_modfile_open_debug(pid_t pid, const char *root, const char *dirs, Dwfl_Module *mod,
                          const char *file_name, const char *debuglink, uint32_t crc,
                          char **debuginfo_file_name);

/* The second half of ha_modfile_open_debug, the part that opens files
 * through the target (and so only while it lives): by build-id under the
 * target's own /usr/lib/debug when root is not "" (.build-id/NN/REST.debug,
 * *by_id = 1), else by its .gnu_debuglink (debuglink, crc) next to
 * file_name, in its .debug directory and under /usr/lib/debug (ours, then
 * the target's), checked by build-id or CRC. */
int ha_modfile_open_debug_target(pid_t pid, const char *root, Dwfl_Module *mod,
                                 const char *file_name, const char *debuglink, uint32_t crc,
                                 char **debuginfo_file_name, int *by_id);

/* The directories of the build-id search of our own: HEAPATTACH_DEBUG_DIR
 * (':'-separated absolute directories, each with a .build-id tree, as
 * /usr/lib/debug has), then /usr/lib/debug; malloc'ed, or NULL (unset:
 * /usr/lib/debug alone). */
char *ha_modfile_debug_path(void);

#endif
