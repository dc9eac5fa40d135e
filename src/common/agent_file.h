/* agent_file.h -- our own agent file, read in place of a target's mapping
 * of the agent we delivered through a memfd.
 *
 * Such a mapping ("/memfd:heapattach_agent.so (deleted)") has no path in
 * any file system; the only way to the mapped file itself is
 * /proc/PID/map_files, which needs CAP_SYS_ADMIN (or
 * CAP_CHECKPOINT_RESTORE) in the initial user namespace -- root in a
 * `kubectl debug` container or a restricted node agent has neither.  But
 * we wrote that memfd from a file of ours: its symbols (the init call, the
 * state a reattach reads) and unwind tables are read from that file,
 * once the target's memory shows it is the very same one (the mapping's
 * first page -- ELF header, program headers, build-id note -- byte for
 * byte: a memfd left by another heapattach build differs there). */
#ifndef HA_AGENT_FILE_H
#define HA_AGENT_FILE_H

#include <sys/types.h>

#include "procmaps.h"

/* The agent file this attacher delivers (an absolute path), set once
 * before any thread reads it; "" (the default): none. */
void ha_agent_file_set(const char *path);
const char *ha_agent_file(void);

/* base: the offset-0 mapping of a module of pid.  When it is an agent
 * memfd whose first page is our agent file's, a read-only descriptor of
 * our file (O_CLOEXEC); else -1. */
int ha_agent_file_open(pid_t pid, const struct ha_map *base);

#endif
