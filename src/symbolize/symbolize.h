/* symbolize.h -- program counters of a target to function, file:line,
 * inlined frames and demangled names, with libdw (follows .gnu_debuglink and
 * build-id debug files).  Each frame keeps the module path, build-id and
 * module-relative pc so a profile can be re-symbolized later.  Owned by one
 * thread at a time (it may be created on one and handed to another). */
#ifndef HA_SYMBOLIZE_H
#define HA_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ha_symbolizer;

struct ha_sym_frame {
	const char *module;    /* path of the mapped file, "" if none        */
	const char *build_id;  /* lowercase hex, "" if none                  */
	uint64_t rel_pc;       /* pc relative to the module's load base      */
	const char *function;  /* demangled; "" if unknown                   */
	const char *file;      /* source file, "" if unknown                 */
	int line;              /* 0 if unknown                               */
	int inlined;           /* 1 for a frame inlined into the next one    */
};

/* Strings in the frames returned are owned by the symbolizer and stay valid
 * until ha_symbolizer_free.  The files of the target's modules of code are
 * opened by ha_symbolizer_new (and by later reports, for modules mapped
 * since; at most 1,024 modules, within the descriptors left): each ELF
 * file, and for one without DWARF of its own the debug file its
 * .gnu_debuglink finds (by build-id, debug files are looked up in our own
 * system directories when first needed, which needs no target).  So pcs
 * are still named after the target exited. */
struct ha_symbolizer *ha_symbolizer_new(pid_t pid, char *err, size_t errlen);
void ha_symbolizer_free(struct ha_symbolizer *s);
/* The modules of the target known now, and *prepared of them (if
 * prepared is not NULL) with their files opened already (0 for NULL). */
int ha_symbolizer_modules(struct ha_symbolizer *s, int *prepared);
void ha_symbolizer_maps_changed(struct ha_symbolizer *s);
/* At the end of a session: write the uncompressed copies of the compressed
 * debug files it read (debugcache.h); with verbose, say what the cache did
 * on stderr. */
void ha_symbolizer_store_cache(struct ha_symbolizer *s, int verbose);

/* fn(ctx, module path, build-id) for each module of code that has neither
 * DWARF nor a debug file on this machine (debugfind.h), those reported
 * already at once, later ones as they are reported (on the thread that
 * symbolizes).  fn must not block: heapattach queues a fetch
 * (debuginfod_fetch.h). */
typedef void (*ha_sym_missing_fn)(void *ctx, const char *module, const unsigned char *id,
                                  int len);
void ha_symbolizer_on_missing(struct ha_symbolizer *s, ha_sym_missing_fn fn, void *ctx);

/* Symbolize pc.  is_return_address: pc came from a caller's frame, so the
 * call instruction is at pc - 1.  Writes the inline chain innermost first
 * (at least one frame, even if unknown) into out[max]; returns the count. */
int ha_symbolize(struct ha_symbolizer *s, uint64_t pc, int is_return_address,
                 struct ha_sym_frame *out, int max);

/* The global variable whose storage holds addr (a word of .data or .bss),
 * from DWARF: its name, the file (as DWARF spells it, often a full path)
 * and line of its definition; module_addr: an address of the same module
 * (the start of its first mapping), for a .bss past the module's file.
 * 0, or -1 with "", "", 0 (no module, no DWARF, no variable there).
 * Strings live as long as s.  Each module's variables are read once. */
int ha_symbolize_var(struct ha_symbolizer *s, uint64_t addr, uint64_t module_addr,
                     const char **name, const char **file, int *line);

/* name demangled (a C++ symbol, "_ZN2ns7g_cacheE": "ns::g_cache"; others
 * as they are), interned in s; "" for NULL. */
const char *ha_symbolize_demangle(struct ha_symbolizer *s, const char *name);

/* The TLS variable at offset off of the static TLS block of the module
 * whose first mapping starts at module_addr (a TLS symbol's value: its
 * offset in the module's PT_TLS template), from DWARF; as
 * ha_symbolize_var. */
int ha_symbolize_tls_var(struct ha_symbolizer *s, uint64_t module_addr, uint64_t off,
                         const char **name, const char **file, int *line);

#endif
