/* dwarf_names.h -- the name of a function from its DWARF entry or its ELF
 * symbol, demangled, interned in the caller's pool. */
#ifndef HA_DWARF_NAMES_H
#define HA_DWARF_NAMES_H

#include <elfutils/libdw.h>

#include "strpool.h"

/* name demangled (C++ names start with _Z; a " [clone .xxx]" suffix is
 * dropped) and interned; "" for NULL. */
const char *ha_demangled_name(struct ha_strpool *pool, const char *name);

/* The name of a function DIE: its linkage name demangled; for C++ (is_cxx)
 * without one, sym (the ELF symbol at the address, for an out-of-line
 * frame) or the signature built from DWARF; else DW_AT_name; "" if none. */
const char *ha_dwarf_func_name(struct ha_strpool *pool, Dwarf_Die *die, int is_cxx,
                               const char *sym);

#endif
