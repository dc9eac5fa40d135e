/* symbolize_int.h -- what symbolize.c shares with symbolize_file.c: the
 * naming of an address inside a module libdwfl holds. */
#ifndef HA_SYMBOLIZE_INT_H
#define HA_SYMBOLIZE_INT_H

#include <elfutils/libdwfl.h>

#include "strpool.h"
#include "symbolize.h"

/* The inline chain at addr (the call itself for a return address: addr is
 * pc - 1 then) in mod, innermost first, into f[0..max); f[0] already holds
 * module, build_id and rel_pc, copied to every frame.  Strings interned in
 * pool.  Returns the count (1 with function "" when nothing names it). */
int ha_sym_name_in(struct ha_strpool *pool, Dwfl_Module *mod, Dwarf_Addr addr,
                   struct ha_sym_frame *f, int max);

/* The global variable of mod whose storage holds the runtime address
 * addr, or (tls) the TLS variable at offset addr of mod's TLS block
 * (symbolize_var.c): name, file, line as ha_symbolize_var gives them;
 * *vs: the index of the modules' variables, made on first use (NULL
 * before), freed by ha_sym_vars_free; strings interned in pool. */
struct ha_sym_vars;
int ha_sym_var_in(struct ha_sym_vars **vs, struct ha_strpool *pool, Dwfl_Module *mod,
                  uint64_t addr, int tls, const char **name, const char **file, int *line);
void ha_sym_vars_free(struct ha_sym_vars *vs);

#endif
