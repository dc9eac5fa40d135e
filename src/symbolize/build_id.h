/* build_id.h -- a build-id as text: its hex, and where a .build-id tree
 * keeps its debug file.  A leaf: calls nothing of the symbolizer's. */
#ifndef HA_BUILD_ID_H
#define HA_BUILD_ID_H

#include <stddef.h>

/* id[len] (1..64 bytes) as lowercase hex into hex[size]: 0, or -1 when it
 * does not fit. */
int ha_build_id_hex(const unsigned char *id, int len, char *hex, size_t size);

/* dir[dirlen]/.build-id/NN/REST.debug, where a .build-id tree keeps the
 * debug file of build-id id[len] (2..64 bytes): 0, or -1 when it does not
 * fit in out[size]. */
int ha_build_id_path(char *out, size_t size, const char *dir, size_t dirlen,
                     const unsigned char *id, int len);

/* id[len] from hex (lowercase or not); the length, or -1. */
int ha_build_id_from_hex(const char *hex, unsigned char *id, int max);

#endif
