/* procmaps.h -- /proc/PID/maps of a target, parsed; modules and their bases. */
#ifndef HA_PROCMAPS_H
#define HA_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ha_map {
	uint64_t start, end;   /* [start, end) */
	uint64_t offset;       /* file offset of start */
	uint64_t inode;
	uint64_t dev;          /* major << 32 | minor, as printed in maps */
	unsigned prot;         /* PROT_READ | PROT_WRITE | PROT_EXEC */
	int shared;            /* 's' in the perms column */
	char *path;            /* "" for anonymous; "[stack]", "[vdso]" ...;
	                          without the " (deleted)" suffix */
	int deleted;           /* the path had a " (deleted)" suffix */
};

struct ha_maps {
	struct ha_map *v;
	size_t n;
};

/* Parse /proc/PID/maps.  0 or -errno.  Lines that do not parse are skipped. */
int ha_maps_read(pid_t pid, struct ha_maps *out);
void ha_maps_free(struct ha_maps *m);

/* The parser behind ha_maps_read, on the text of a maps file: len bytes at
 * text, followed by a NUL (text[len] == '\0'); its newlines are overwritten.
 * 0 or -ENOMEM (out is then empty). */
int ha_maps_parse(char *text, size_t len, struct ha_maps *out);

/* One NUL-terminated line of a maps file (or a mapping's first line in
 * smaps), without its newline: 0 (m->path malloc'ed), -1 if it is not such
 * a line (smaps' "Key: value" lines are not), -ENOMEM. */
int ha_maps_parse_line(const char *line, struct ha_map *m);

/* The name a module is known by: its path's basename; for the agent's
 * memfd ("/memfd:heapattach_agent.so (deleted)", how the maps write the
 * agent delivered into a container) the agent's soname and what follows.
 * Another memfd keeps its basename ("memfd:..."), whatever it is called. */
const char *ha_maps_module_name(const char *path);

/* The first mapping whose module name (ha_maps_module_name) starts with `prefix`
 * (e.g. "libc.so.6", "heapattach_agent.so") and whose offset is 0;
 * NULL if none.  One followed by an executable segment of the same file is
 * preferred (a loaded module, not the file mmap'ed as data). */
const struct ha_map *ha_maps_find_module(const struct ha_maps *m, const char *prefix);

/* The process's C library: glibc's libc.so.6 (libc-2.NN.so before 2.34),
 * else musl's, which is also its dynamic loader (ld-musl-ARCH.so.1, on Debian
 * a link to .../ARCH-linux-musl/libc.so;
 * Alpine's libc.musl-ARCH.so.1 is the same file); *musl says which (may
 * be NULL).  NULL if none (a static program). */
const struct ha_map *ha_maps_find_libc(const struct ha_maps *m, int *musl);

/* Is the module at path musl's libc (ld-musl-*, libc.musl-*, or Debian's
 * .../ARCH-linux-musl/libc.so)? */
int ha_maps_is_musl_path(const char *path);

/* The length of a path as the maps write it without its " (deleted)"
 * suffix, if it has one (the path ha_map.path holds). */
size_t ha_maps_path_len(const char *name);

/* The first mapping that starts in [lo, hi), maps the file name (as the
 * maps write it, " (deleted)" or not) and has every bit of prot: a
 * module's mapping, from the range and name libdwfl reports it by.  NULL
 * if none. */
const struct ha_map *ha_maps_module_mapping(const struct ha_maps *m, const char *name,
                                            uint64_t lo, uint64_t hi, unsigned prot);

/* The mapping containing addr, or NULL. */
const struct ha_map *ha_maps_find_addr(const struct ha_maps *m, uint64_t addr);

/* The offset-0 mapping of the file that e (an element of m) maps, i.e. the
 * `mod` argument ha_elf_symbol_at wants for an address inside e; NULL for
 * anonymous and pseudo mappings or if none is found. */
const struct ha_map *ha_maps_module_of(const struct ha_maps *m, const struct ha_map *e);

#endif
