/* proc.c -- the one reader of /proc/PID/status and /proc/PID/stat (see
 * proc.h). */
#define _GNU_SOURCE
#include "proc.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* PF_EXITING (include/linux/sched.h): the task is in do_exit.  It has
 * closed its files (our socket hangs up) and dropped its memory map a
 * moment before it becomes a zombie; without this a process killed at that
 * moment would look alive with no agent mapped, i.e. exec'd. */
#define HA_PF_EXITING 0x4ul

static void proc_path(char *buf, size_t len, pid_t pid, pid_t tid, const char *file)
{
	if (tid > 0)
		snprintf(buf, len, "/proc/%d/task/%d/%s", (int)pid, (int)tid, file);
	else
		snprintf(buf, len, "/proc/%d/%s", (int)pid, file);
}

int ha_proc_status(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[96];
	proc_path(path, sizeof path, pid, tid, "status");
	ssize_t n = ha_read_file(path, buf, len);
	return n < 0 ? (int)n : 0;
}

int ha_status_field(const char *status, const char *name, char *out, size_t outlen)
{
	size_t len = strlen(name);

	for (const char *line = status; line && *line;) {
		const char *nl = strchr(line, '\n');
		if (strncmp(line, name, len) == 0 && line[len] == ':') {
			const char *v = line + len + 1;
			v += strspn(v, " \t");
			snprintf(out, outlen, "%.*s", (int)strcspn(v, "\n"), v);
			return 0;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

int ha_proc_status_field(pid_t pid, pid_t tid, const char *name, char *out, size_t outlen)
{
	char buf[HA_STATUS_MAX];
	int rc = ha_proc_status(pid, tid, buf, sizeof buf);
	return rc < 0 ? rc : ha_status_field(buf, name, out, outlen);
}

/* A status field in kB, as bytes (0 when missing). */
static uint64_t status_kb_bytes(const char *status, const char *name)
{
	char v[64];
	if (ha_status_field(status, name, v, sizeof v) != 0)
		return 0;
	return strtoull(v, NULL, 10) * 1024;
}

int ha_proc_mem(pid_t pid, int with_status, struct ha_proc_mem *out)
{
	char path[64], buf[256], *p, *end;
	unsigned long long size, resident;
	memset(out, 0, sizeof *out);
	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	/* "size resident ...", in pages.  A process without a memory map (a
	 * zombie, or one in exit past exit_mm) reads all zeros: gone, not
	 * empty. */
	if (ha_read_file(path, buf, sizeof buf) <= 0)
		return -1;
	size = strtoull(buf, &p, 10);
	if (p == buf || size == 0)
		return -1;
	resident = strtoull(p, &end, 10);
	if (end == p)
		return -1;
	out->rss = resident * (uint64_t)sysconf(_SC_PAGESIZE);
	if (!with_status)
		return 0;
	/* The Vm and Rss lines are there only while it has a memory map: it
	 * may have lost it since statm was read. */
	char status[HA_STATUS_MAX], v[64];
	if (ha_proc_status(pid, 0, status, sizeof status) < 0 ||
	    ha_status_field(status, "VmRSS", v, sizeof v) != 0) {
		memset(out, 0, sizeof *out);
		return -1;
	}
	out->rss_anon = status_kb_bytes(status, "RssAnon");
	out->swap = status_kb_bytes(status, "VmSwap");
	return 0;
}

int ha_parse_stat(const char *line, char *state, unsigned long *flags)
{
	/* comm may hold anything, ')' and spaces too: parse after the last ')'.
	 * The state, five numbers (ppid, pgrp, session, tty, tpgid), the flags:
	 * what sscanf's " %c %d %d %d %d %d %lu" took, with strtol, whose
	 * result is defined for a number out of range. */
	const char *p = strrchr(line, ')');
	char *end;
	if (!p)
		return -EINVAL;
	for (p++; isspace((unsigned char)*p); p++)
		;
	char st = *p++;
	if (!st)
		return -EINVAL;
	for (int i = 0; i < 5; i++, p = end)
		if (strtol(p, &end, 10) == 0 && end == p)
			return -EINVAL;
	unsigned long fl = strtoul(p, &end, 10);
	if (end == p)
		return -EINVAL;
	if (state)
		*state = st;
	if (flags)
		*flags = fl;
	return 0;
}

int ha_proc_stat(pid_t pid, pid_t tid, char *state, unsigned long *flags)
{
	char path[96], buf[1024];
	proc_path(path, sizeof path, pid, tid, "stat");
	ssize_t n = ha_read_file(path, buf, sizeof buf);
	if (n < 0)
		return (int)n;
	return ha_parse_stat(buf, state, flags);
}

int ha_proc_alive(pid_t pid)
{
	char state;
	unsigned long flags;
	return ha_proc_stat(pid, 0, &state, &flags) == 0 && state != 'Z' && state != 'X' &&
	       !(flags & HA_PF_EXITING);
}
