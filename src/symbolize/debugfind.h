/* debugfind.h -- a debug file by build-id on this machine, for a module
 * of a target (the attacher's symbolizer) or of a recorded session
 * (heapdiff naming frames after the fact).
 *
 * Looked up, in order: each absolute directory of dirs (':'-separated;
 * NULL: /usr/lib/debug) as a .build-id tree (DIR/.build-id/NN/REST.debug,
 * what Debian's -dbgsym packages install), then libdebuginfod's cache
 * (debuginfod_get.h).  Our own directories, opened as ourselves: nothing
 * here is the target's.  A file is taken only if its build-id note is the
 * one asked for. */
#ifndef HA_DEBUGFIND_H
#define HA_DEBUGFIND_H

#include <stddef.h>

#include "build_id.h"

/* An open fd and *path (malloc'd), or -1. */
int ha_debugfind(const char *dirs, const unsigned char *id, int len, char **path);

/* The file at path if it is a regular file with build-id id[len]: fd and
 * *out (malloc'd), or -1. */
int ha_debugfind_file(const char *path, const unsigned char *id, int len, char **out);

#endif
