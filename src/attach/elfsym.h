/* elfsym.h -- symbol addresses inside a target, from its ELF files (libelf). */
#ifndef HA_ELFSYM_H
#define HA_ELFSYM_H

#include <stdint.h>
#include <sys/types.h>
#include "procmaps.h"

/* Address in the target of the dynamic symbol `sym` (.dynsym, defined,
 * STT_FUNC or STT_OBJECT, any version) of the module whose offset-0 mapping
 * is `mod` (from ha_maps_find_module).  The file is opened as
 * /proc/PID/root/<path> so the target's mount namespace is honoured.
 * Load base = mod->start - (p_vaddr of the first PT_LOAD, page-aligned down).
 * 0 on success, -ENOENT if the symbol is not there, other -errno on error. */
int ha_elf_symbol(pid_t pid, const struct ha_map *mod, const char *sym, uint64_t *addr);

/* For the executable at /proc/PID/exe: its ELF class (1 = 32-bit, 2 = 64-bit)
 * and e_machine, and whether it has a PT_INTERP (dynamically linked).
 * 0 or -errno. */
int ha_elf_exe_info(pid_t pid, int *elf_class, int *machine, int *has_interp);

/* The dynamic symbol whose [value, value+size) contains the target address
 * addr inside module mod; name copied into out.  0, -ENOENT, or -errno.
 * Used to classify frames of stopped threads. */
int ha_elf_symbol_at(pid_t pid, const struct ha_map *mod, uint64_t addr, char *out, size_t outlen);

/* The two lookups above keep each module's parsed .dynsym in a process-wide
 * cache (keyed by path, dev and inode; thread-safe).  Drop it all, e.g. at
 * the end of an injection. */
void ha_elf_cache_clear(void);

#endif
