/* jitdump.h -- JIT code names from the target's jitdump file (the format
 * perf inject reads: node --perf-prof, the JVM's -XX:+DumpPerfMapAtExit
 * agents, .NET's DOTNET_PerfMapEnabled=1, Wasmtime...), into the same table
 * as the perf map (perfmap.h), under the same rules for files and names.
 *
 * Contract.  The file is untrusted: /tmp/jit-PID.dump under /proc/PID/root,
 * else the first mapping of the target whose basename is jit-PID.dump (a
 * JIT mmaps its dump so that perf finds it; node writes it in its working
 * directory); opened and checked as perfmap.h says.  The header must have
 * the magic 'JiTD' in our byte order, version 1, a size of 40 to 4096; then
 * records of id, total size (16 bytes to 64 MiB), timestamp: a CODE_LOAD
 * (id 0) adds its code range with its name (NUL-terminated inside the
 * record), a CODE_MOVE (id 1) adds the new range under the name of the old
 * one if known; every other record is skipped.  Only complete records are
 * read; a record that does not fit its own size ends the reading of that
 * file for good.  The records' timestamps are not used: entries are
 * versioned by the read that found them, as the perf map's. */
#ifndef HA_JITDUMP_H
#define HA_JITDUMP_H

#include <sys/types.h>

#include "perfmap.h"

struct ha_jitdump;

/* For process pid, whose dump is named by own_pid (its pid in its own pid
 * namespace: jit-OWN_PID.dump); NULL if out of memory. */
struct ha_jitdump *ha_jitdump_new(pid_t pid, pid_t own_pid);
/* Same, for the file at path (tests). */
struct ha_jitdump *ha_jitdump_new_path(const char *path);
void ha_jitdump_free(struct ha_jitdump *jd);
/* Read the records appended since the last poll into pm.  1 if new
 * entries came, 0 if none, -1 if there is no usable file. */
int ha_jitdump_poll(struct ha_jitdump *jd, struct ha_perfmap *pm);

#endif
