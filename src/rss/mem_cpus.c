/* mem_cpus.c -- the CPUs a target may use (mem_cpus.h).  The quota: each
 * line of /proc/PID/cgroup that names the cpu controller (v1:
 * "N:cpu,cpuacct:/path") or the unified hierarchy ("0::/path"), then
 * cpu.max (v2: "max 100000" or "QUOTA PERIOD") or cpu.cfs_quota_us and
 * cpu.cfs_period_us (v1) of that cgroup and each of its parents under the
 * hierarchy's mount in /sys/fs/cgroup; the lowest counts.  A path with a
 * ".." or too long is not followed. */
#define _GNU_SOURCE
#include "mem_cpus.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define LINE_MAX_ 4096

/* dir/name into path: 0, or -1 when it does not fit. */
static int join(char *path, size_t len, const char *dir, const char *name)
{
	int n = snprintf(path, len, "%s/%s", dir, name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The quota in CPUs of one cgroup directory, 0 if none. */
static double quota_of(const char *dir, int v2)
{
	char path[LINE_MAX_ + 64], buf[128];
	if (v2) {
		if (join(path, sizeof path, dir, "cpu.max") || ha_read_file(path, buf, sizeof buf) <= 0)
			return 0;
		char *end;
		double q = strtod(buf, &end), p = *end == ' ' ? strtod(end + 1, NULL) : 0;
		return end != buf && q > 0 && p > 0 ? q / p : 0; /* "max ...": none */
	}
	if (join(path, sizeof path, dir, "cpu.cfs_quota_us") ||
	    ha_read_file(path, buf, sizeof buf) <= 0)
		return 0;
	double q = strtod(buf, NULL);
	if (join(path, sizeof path, dir, "cpu.cfs_period_us") ||
	    ha_read_file(path, buf, sizeof buf) <= 0)
		return 0;
	double p = strtod(buf, NULL);
	return q > 0 && p > 0 ? q / p : 0;
}

/* The lowest quota on the path of cgroup rel under the mount base. */
static double quota_on_path(const char *base, const char *rel, int v2)
{
	char dir[LINE_MAX_ + 64];
	int n = snprintf(dir, sizeof dir, "%s%s", base, rel);
	if (strstr(rel, "..") || rel[0] != '/' || n < 0 || (size_t)n >= sizeof dir)
		return 0;
	size_t stop = strlen(base);
	double low = 0;
	for (;;) {
		double q = quota_of(dir, v2);
		if (q > 0 && (low == 0 || q < low))
			low = q;
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < stop)
			break;
		*slash = '\0';
	}
	return low;
}

static int has_controller(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

static double cgroup_quota(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	char *line = malloc(LINE_MAX_);
	double low = 0;
	while (line && fgets(line, LINE_MAX_, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctl = c1 + 1, *rel = c2 + 1;
		double q = 0;
		if (!*ctl) { /* the unified hierarchy */
			q = quota_on_path(access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0
			                  ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified", rel, 1);
		} else if (has_controller(ctl, "cpu")) {
			char base[128];
			snprintf(base, sizeof base, "/sys/fs/cgroup/%s", ctl);
			q = quota_on_path(access(base, F_OK) == 0 ? base : "/sys/fs/cgroup/cpu", rel, 0);
		}
		if (q > 0 && (low == 0 || q < low))
			low = q;
	}
	free(line);
	(void)fclose(f); /* read only */
	return low;
}

void ha_mem_cpus_read(pid_t pid, struct ha_mem_cpus *out)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	out->online = n > 0 && n < 1 << 20 ? (int)n : 0;
	cpu_set_t set;
	out->allowed = sched_getaffinity(pid, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
	out->quota = cgroup_quota(pid);
}
