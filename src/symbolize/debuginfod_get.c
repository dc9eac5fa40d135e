/* debuginfod_get.c -- debug files by build-id through libdebuginfod (see
 * debuginfod_get.h). */
#define _GNU_SOURCE
#include "debuginfod_get.h"

#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debugcache.h"
#include "build_id.h"
#include "util.h"

#define MAX_ID 64

void ha_debuginfod_setup(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	const char *set = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR);
	if ((set && *set) || !ha_debugcache_dir(dir, sizeof dir))
		return;
	if (snprintf(path, sizeof path, "%s/debuginfod", dir) < (int)sizeof path)
		setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, path, 1);
}

int ha_debuginfod_enabled(void)
{
	const char *urls = getenv(DEBUGINFOD_URLS_ENV_VAR);
	return urls && urls[strspn(urls, " \t")] != '\0';
}

int ha_debuginfod_cached(const unsigned char *id, int len, char **path)
{
	char hex[2 * MAX_ID + 1], p[PATH_MAX + 2 * MAX_ID + 32];
	const char *dir = getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR);
	struct stat st;

	*path = NULL;
	if (!dir || !*dir || ha_build_id_hex(id, len, hex, sizeof hex) < 0 ||
	    snprintf(p, sizeof p, "%s/%s/debuginfo", dir, hex) >= (int)sizeof p)
		return -1;
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	/* libdebuginfod keeps an empty file for a negative answer. */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 ||
	    !(*path = strdup(p))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* mkdir -p path (0700: debug files can tell what a program is made of). */
static void make_dirs(const char *path)
{
	char p[PATH_MAX];
	if (!path || path[0] != '/' || snprintf(p, sizeof p, "%s", path) >= (int)sizeof p)
		return;
	for (char *s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdir(p, 0700) != 0 && errno != EEXIST)
				return;
			*s = c;
			if (!c)
				return;
		}
	}
}

struct deadline {
	double end_ms;
	int expired;
	const int *cancel;
};

static int progress(debuginfod_client *c, long a, long b)
{
	(void)a;
	(void)b;
	struct deadline *d = debuginfod_get_user_data(c);
	if (d && (ha_now_ms() >= d->end_ms ||
	          (d->cancel && __atomic_load_n(d->cancel, __ATOMIC_RELAXED)))) {
		d->expired = 1;
		return 1; /* cancel */
	}
	return 0;
}

int ha_debuginfod_fetch(const unsigned char *id, int len, double timeout_s, const int *cancel,
                        char **path, char *err, size_t errlen)
{
	int fd = ha_debuginfod_cached(id, len, path);
	if (fd >= 0)
		return fd;
	if (!ha_debuginfod_enabled()) {
		snprintf(err, errlen, "DEBUGINFOD_URLS is not set");
		return -1;
	}
	if (len <= 0 || len > MAX_ID) {
		snprintf(err, errlen, "no build-id");
		return -1;
	}
	/* libdebuginfod makes the cache directory, not its parents
	 * (-ENOENT, as if the servers had no such file). */
	make_dirs(getenv(DEBUGINFOD_CACHE_PATH_ENV_VAR));
	debuginfod_client *c = debuginfod_begin();
	if (!c) {
		snprintf(err, errlen, "libdebuginfod could not start");
		return -1;
	}
	struct deadline d = { ha_now_ms() + timeout_s * 1e3, 0, cancel };
	debuginfod_set_user_data(c, &d);
	debuginfod_set_progressfn(c, progress);
	char *got = NULL;
	int rc = debuginfod_find_debuginfo(c, id, len, &got);
	const char *url = debuginfod_get_url(c);
	if (rc >= 0) {
		*path = got;
		debuginfod_end(c);
		return rc;
	}
	free(got);
	if (cancel && __atomic_load_n(cancel, __ATOMIC_RELAXED))
		snprintf(err, errlen, "cancelled at the session's end");
	else if (d.expired || progress(c, 0, 0))
		snprintf(err, errlen, "no answer within %.0f s", timeout_s);
	else if (rc == -ENOENT)
		snprintf(err, errlen, "not on the servers");
	else
		snprintf(err, errlen, "%s%s%s", strerror(-rc), url ? " at " : "", url ? url : "");
	debuginfod_end(c);
	return -1;
}
