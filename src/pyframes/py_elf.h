/* py_elf.h -- the few symbols heapattach needs of a target's CPython
 * module, read from its ELF file (libelf), as src/attach/elfsym.c reads
 * them (which this layer may not call; both open the file the target
 * mapped with src/common/module_file.h): .dynsym first, then .symtab if
 * the file has one.  Each symbol's address in the target and its
 * st_size. */
#ifndef HA_PY_ELF_H
#define HA_PY_ELF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "procmaps.h"

struct ha_py_sym {
	const char *name;     /* in: the symbol's name */
	uint64_t addr;        /* out: its address in the target; 0 if not defined */
	uint64_t size;        /* out: st_size */
};

/* Look up want[0..n) (defined functions and objects; a global binding
 * wins over a local one of the same name) in the module whose offset-0
 * mapping is mod.  0 (each found one filled), or -errno when the file
 * cannot be opened or is not ELF. */
int ha_py_elf_lookup(pid_t pid, const struct ha_map *mod, struct ha_py_sym *want, size_t n);

#endif
