/* debuginfod_get.h -- a module's debug file by build-id from the servers
 * DEBUGINFOD_URLS names (elfutils' libdebuginfod), with a deadline.
 *
 * Used by the attacher (a thread of its own fetches while the session
 * goes on: src/symbolize/debuginfod_fetch.h) and by heapdiff (at report
 * time, for frames a session could not name).  Files land in
 * libdebuginfod's cache: $DEBUGINFOD_CACHE_PATH when the user set it,
 * else beside heapattach's own debug cache (ha_debuginfod_setup), where
 * both programs, and a later run, find them without the network
 * (ha_debuginfod_cached).
 *
 * A server that is down, slow or does not have the file costs one call
 * bounded by the deadline, never a hang: libdebuginfod's progress callback
 * cancels the transfer when the time is up (it is called while connecting
 * too). */
#ifndef HA_DEBUGINFOD_GET_H
#define HA_DEBUGINFOD_GET_H

#include <stddef.h>

/* Call once at the start of main, before any thread: points
 * libdebuginfod's cache beside heapattach's debug cache unless
 * DEBUGINFOD_CACHE_PATH is set. */
void ha_debuginfod_setup(void);

/* Servers are configured (DEBUGINFOD_URLS set and not empty). */
int ha_debuginfod_enabled(void);

/* The debug file of build-id id[len] already in the cache: an open fd
 * (and *path, malloc'd), or -1.  No network. */
int ha_debuginfod_cached(const unsigned char *id, int len, char **path);

/* Fetch it (or take it from the cache): an open fd and *path (malloc'd),
 * or -1 with why in err ("not on the servers", "no answer within 10 s",
 * the server's or the system's word).  At most timeout_s seconds, less if
 * *cancel (when not NULL) becomes non-zero meanwhile. */
int ha_debuginfod_fetch(const unsigned char *id, int len, double timeout_s, const int *cancel,
                        char **path, char *err, size_t errlen);

#endif
