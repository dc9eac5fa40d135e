/* debugcache.h -- decompressed copies of compressed debug files, kept on
 * disk by build-id so that later sessions do not inflate them again.
 *
 * Debian's detached debug files (libc6-dbg, the *-dbgsym packages) keep
 * their DWARF sections zlib-compressed; libdw inflates all of them when it
 * first opens one: for libc, ~60 ms of the attacher's CPU at the start of
 * every session, taken from a target that may keep every core busy.  The
 * first session that opens such a file notes it; when that session ends,
 * an uncompressed copy is written (outside the profiled time), and from then
 * on it is opened instead.
 *
 * The directory: $HEAPATTACH_CACHE if set (empty: no cache), else
 * $XDG_CACHE_HOME/heapattach, else $HOME/.cache/heapattach; the files are
 * DIR/debug/BUILDID.debug.  A file is used only when it is an ELF file
 * without compressed sections whose build-id note matches. */
#ifndef HA_DEBUGCACHE_H
#define HA_DEBUGCACHE_H

#include <stddef.h>

/* Largest copy written (sum of the sizes of the file's sections, inflated). */
#define HA_DEBUGCACHE_MAX_BYTES (512ull << 20)

/* The cache directory into dir[size]; 0 when there is none (disabled, or
 * no HOME). */
int ha_debugcache_dir(char *dir, size_t size);

/* Open the cached copy for this build-id: a read-only descriptor and its
 * path (malloc'ed, into *path), or -1. */
int ha_debugcache_open(const char *dir, const unsigned char *build_id, int id_len, char **path);

/* Does the ELF file open at fd have compressed sections (a copy worth
 * keeping)?  The file offset is not used. */
int ha_debugcache_compressed(int fd);

/* Write the uncompressed copy of the debug file open at in (named src,
 * for messages; the caller opened it, with the target's rights, and closes
 * it) for this build-id.  0 on success; -1 with err filled. */
int ha_debugcache_store(const char *dir, const unsigned char *build_id, int id_len, int in,
                        const char *src, char *err, size_t errlen);

#endif
