/* unwind_elfsym.h -- a module's function starts and PLT/GOT slots, read
 * from its ELF file's bytes for the call-site scan (unwind_scan.c).  All
 * addresses are the file's virtual addresses (runtime minus the load
 * bias).  Names point into the file's bytes: valid while its image is. */
#ifndef HA_UNWIND_ELFSYM_H
#define HA_UNWIND_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

struct uw_syms;

/* Parse data[size] (untrusted); empty tables for a file that is not a
 * usable ELF64 file; NULL only when out of memory. */
struct uw_syms *uw_syms_parse(const uint8_t *data, size_t size);
void uw_syms_free(struct uw_syms *s);

/* 1 and *start: the greatest function start <= vaddr; 0: none. */
int uw_syms_func_le(const struct uw_syms *s, uint64_t vaddr, uint64_t *start);

/* 1 and *start: the (lowest) start of the defined function name. */
int uw_syms_func_named(const struct uw_syms *s, const char *name, uint64_t *start);

/* The symbol a JUMP_SLOT or GLOB_DAT relocation at slot_vaddr is for. */
const char *uw_syms_slot_name(const struct uw_syms *s, uint64_t slot_vaddr);

#endif
