/* perfmap.h -- the names a JIT gives its code, from the target's perf map
 * (/tmp/perf-PID.map: node --perf-basic-prof, the JVM's perf-map-agent,
 * LuaJIT, Python 3.12 -X perf, .NET's DOTNET_PerfMapEnabled).
 *
 * Contract.  The file is the target's, hence untrusted:
 *   - it is opened through /proc/PID/root (the target's view of /tmp) with
 *     O_NOFOLLOW | O_NONBLOCK, used only if it is a regular file owned by
 *     the target's uid or by root (the attacher may be root: it never reads
 *     for the target what the target could not), never blocks (a FIFO is
 *     refused);
 *   - a line is "START SIZE NAME", START and SIZE in hex (an optional 0x),
 *     NAME the rest of the line as bytes (cut at a NUL, at most
 *     HA_PERFMAP_NAME_MAX bytes; the report layer escapes them); a line that
 *     does not parse, is longer than 4 KiB, or whose range wraps or is empty
 *     is skipped;
 *   - at most HA_PERFMAP_MAX_BYTES of the file and HA_PERFMAP_MAX_ENTRIES
 *     entries are read.
 * Versions.  JITs reuse code addresses.  Each poll reads what was appended
 * since the last one (complete lines only) and gives its new entries the
 * next generation; a lookup at generation G takes the newest entry covering
 * the pc among those of generation <= G, else the oldest of a later one (the
 * code had been written when the sample was taken, we had not read it yet).
 * A file that shrank or was replaced is read again from its start.
 * Owned by one thread (the writer's). */
#ifndef HA_PERFMAP_H
#define HA_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HA_PERFMAP_MAX_BYTES (256u << 20)
#define HA_PERFMAP_MAX_ENTRIES (4u << 20)
#define HA_PERFMAP_NAME_MAX 1024

struct ha_perfmap;

/* For process pid (whose maps file may not exist yet), named by own_pid,
 * its pid in its own pid namespace (/tmp/perf-OWN_PID.map, in its root).
 * NULL if out of memory. */
struct ha_perfmap *ha_perfmap_new(pid_t pid, pid_t own_pid);
/* Same, for the file at path, owned by uid or root (tests). */
struct ha_perfmap *ha_perfmap_new_path(const char *path, uid_t uid);
void ha_perfmap_free(struct ha_perfmap *pm);

/* Read what was appended.  1 if new entries came, 0 if none, -1 if the
 * file is missing or refused. */
int ha_perfmap_poll(struct ha_perfmap *pm);
/* The generation of the last poll (0 before any entry). */
unsigned ha_perfmap_gen(const struct ha_perfmap *pm);
/* The name of the code holding pc as of generation gen (see above), and
 * its start address; NULL if none.  The name stays valid until
 * ha_perfmap_free. */
const char *ha_perfmap_lookup(struct ha_perfmap *pm, uint64_t pc, unsigned gen, uint64_t *start);
/* For the other sources of names (jitdump.c): open a file of the target
 * under the rules above (fd, *st filled; -1 if refused); add an entry of
 * the coming generation (name: len bytes, cut at a NUL; -1 if refused);
 * then commit the entries added since there were n0 (ha_perfmap_count):
 * 1 if there were any (they form the next generation). */
struct stat;
int ha_perfmap_open_file(const struct ha_perfmap *pm, const char *path, struct stat *st);
int ha_perfmap_add(struct ha_perfmap *pm, uint64_t start, uint64_t size, const char *name,
                   size_t len);
size_t ha_perfmap_count(const struct ha_perfmap *pm);
int ha_perfmap_commit(struct ha_perfmap *pm, size_t n0);
/* Entries held, lines skipped. */
void ha_perfmap_stats(const struct ha_perfmap *pm, uint64_t *entries, uint64_t *skipped);

#endif
