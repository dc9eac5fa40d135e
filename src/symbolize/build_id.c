/* build_id.c -- a build-id as text (see build_id.h). */
#define _GNU_SOURCE
#include "build_id.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_ID 64

int ha_build_id_hex(const unsigned char *id, int len, char *hex, size_t size)
{
	if (len <= 0 || len > MAX_ID || 2 * (size_t)len + 1 > size)
		return -1;
	for (size_t i = 0; i < (size_t)len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return 0;
}

int ha_build_id_path(char *out, size_t size, const char *dir, size_t dirlen,
                     const unsigned char *id, int len)
{
	char hex[2 * MAX_ID + 1];
	if (len < 2 || ha_build_id_hex(id, len, hex, sizeof hex) < 0 || dirlen > INT32_MAX)
		return -1;
	int k = snprintf(out, size, "%.*s/.build-id/%.2s/%s.debug", (int)dirlen, dir, hex, hex + 2);
	return k > 0 && (size_t)k < size ? 0 : -1;
}

int ha_build_id_from_hex(const char *hex, unsigned char *id, int max)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = strlen(hex);
	int n = 0;
	if (len == 0 || len % 2 || len / 2 > (size_t)max)
		return -1;
	for (size_t i = 0; i < len; i += 2) {
		const char *hi = strchr(digits, hex[i] | 0x20), *lo = strchr(digits, hex[i + 1] | 0x20);
		if (!hex[i] || !hex[i + 1] || !hi || !lo)
			return -1;
		id[n++] = (unsigned char)((hi - digits) << 4 | (lo - digits));
	}
	return n;
}
