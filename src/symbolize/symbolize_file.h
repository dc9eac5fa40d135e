/* symbolize_file.h -- naming module-relative pcs with a file alone (a
 * module's debug file, or the module itself), no process: what heapdiff
 * uses to name the frames a session could not (their module's build-id
 * and rel_pc are in the database), once a debug file can be had.  The
 * same naming as the live symbolizer's (symbolize_int.h): the inline
 * chain from DWARF, else the ELF symbol.  Owned by one thread. */
#ifndef HA_SYMBOLIZE_FILE_H
#define HA_SYMBOLIZE_FILE_H

#include <stdint.h>

#include "symbolize.h"

struct ha_filesym;

/* A namer for the ELF file at fd (taken: closed with it), path its name;
 * NULL with why in err. */
struct ha_filesym *ha_filesym_open(int fd, const char *path, char *err, size_t errlen);
void ha_filesym_free(struct ha_filesym *fs);

/* The inline chain at rel_pc (an ELF virtual address, as the frames table
 * keeps it; is_ret: a return address, the call before it is named) into
 * out[max], innermost first; strings valid until ha_filesym_free.  The
 * count, 0 when the file names nothing there. */
int ha_filesym_name(struct ha_filesym *fs, uint64_t rel_pc, int is_ret, struct ha_sym_frame *out,
                    int max);

#endif
