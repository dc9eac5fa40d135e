/* target_fs.c -- opening a file the target named, with the target's own
 * right to it (see target_fs.h).
 *
 * Why the target's identity rather than checks of owner and mode: the
 * kernel's permission check, done by open(2) itself, is the only one
 * without a window between check and use, and it counts everything
 * (ACLs, groups, every directory on the way, the symbolic links followed
 * at that very moment).  setfsuid(2), setfsgid(2) and the raw setgroups
 * system call change the calling thread alone (glibc's setgroups() would
 * change every thread of heapattach), so the other threads keep their
 * rights meanwhile; going from fsuid 0 to another drops root's
 * filesystem capabilities (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH...) and
 * going back raises them again.  O_NONBLOCK makes the open of a FIFO
 * return at once (and of a device not wait for a carrier); O_NOCTTY keeps
 * a terminal from becoming ours. */
#define _GNU_SOURCE
#include "target_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc.h"

#define STATUS_BYTES (64u << 10) /* with a long Groups: line */
#define MAX_GROUPS 65536         /* NGROUPS_MAX */

struct ids {
	uid_t fsuid;
	gid_t fsgid;
	gid_t *groups;
	int ngroups;
};

/* The 4th number of a "Uid:" or "Gid:" value: real, effective, saved,
 * filesystem. */
static int fourth(const char *v, unsigned long *out)
{
	char *end;
	for (int i = 0; i < 4; i++) {
		errno = 0;
		unsigned long x = strtoul(v, &end, 10);
		if (end == v || errno)
			return -1;
		*out = x;
		v = end;
	}
	return 0;
}

static int read_ids(pid_t pid, struct ids *id)
{
	char *st = malloc(STATUS_BYTES), v[64];
	unsigned long u, g;
	int rc = -ESRCH;

	memset(id, 0, sizeof *id);
	if (!st)
		return -ENOMEM;
	if (ha_proc_status(pid, 0, st, STATUS_BYTES) < 0 ||
	    ha_status_field(st, "Uid", v, sizeof v) != 0 || fourth(v, &u) != 0 ||
	    ha_status_field(st, "Gid", v, sizeof v) != 0 || fourth(v, &g) != 0)
		goto out;
	id->fsuid = (uid_t)u;
	id->fsgid = (gid_t)g;
	rc = -ENOMEM;
	id->groups = malloc(MAX_GROUPS * sizeof *id->groups);
	if (!id->groups)
		goto out;
	/* "Groups:\t1 2 3 \n"; an empty list is fine (no supplementary
	 * group); a list cut by the buffer only gives fewer rights. */
	const char *p = strstr(st, "\nGroups:");
	if (p) {
		p += strlen("\nGroups:");
		for (;;) {
			char *end;
			p += strspn(p, " \t");
			unsigned long x = strtoul(p, &end, 10);
			if (end == p || id->ngroups == MAX_GROUPS)
				break;
			id->groups[id->ngroups++] = (gid_t)x;
			p = end;
		}
	}
	rc = 0;
out:
	free(st);
	return rc;
}

/* The calling thread's file identity, to go back to. */
struct saved {
	uid_t fsuid;
	gid_t fsgid;
	gid_t *groups;
	int ngroups;
};

static void put_back(struct saved *s)
{
	(void)syscall(SYS_setfsuid, s->fsuid);
	(void)syscall(SYS_setfsgid, s->fsgid);
	if (s->groups)
		(void)syscall(SYS_setgroups, (size_t)s->ngroups, s->groups);
	free(s->groups);
	s->groups = NULL;
}

/* Take id's file identity on this thread.  0, or -EPERM (nothing changed). */
static int become(const struct ids *id, struct saved *s)
{
	memset(s, 0, sizeof *s);
	s->groups = malloc(MAX_GROUPS * sizeof *s->groups);
	if (!s->groups)
		return -ENOMEM;
	long n = syscall(SYS_getgroups, MAX_GROUPS, s->groups);
	if (n < 0) {
		free(s->groups);
		return -EPERM;
	}
	s->ngroups = (int)n;
	if (syscall(SYS_setgroups, (size_t)id->ngroups, id->groups) != 0) {
		free(s->groups);
		return -EPERM;
	}
	/* setfsuid/setfsgid say no error: they return the previous value,
	 * and the next call shows whether it changed. */
	s->fsgid = (gid_t)syscall(SYS_setfsgid, id->fsgid);
	s->fsuid = (uid_t)syscall(SYS_setfsuid, id->fsuid);
	if ((gid_t)syscall(SYS_setfsgid, (gid_t)-1) != id->fsgid ||
	    (uid_t)syscall(SYS_setfsuid, (uid_t)-1) != id->fsuid) {
		put_back(s);
		return -EPERM;
	}
	return 0;
}

/* Run the open (or stat) as the target could.  0 or -errno. */
static int as_target(pid_t pid, const char *path, struct stat *st, int *fdp)
{
	struct ids id;
	struct saved sv;
	int rc = read_ids(pid, &id), fd = -1, e = 0;
	if (rc < 0) {
		free(id.groups);
		return rc;
	}
	/* The same user (a user profiling their own program, or root a
	 * program of root's): nothing to change.  (A user's own program in
	 * another group of theirs is theirs all the same.) */
	int same = id.fsuid == geteuid() && (geteuid() != 0 || id.fsgid == getegid());
	if (!same && (rc = become(&id, &sv)) < 0) {
		free(id.groups);
		return rc;
	}
	if (fdp) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		e = errno;
	} else {
		rc = stat(path, st);
		e = errno;
	}
	if (!same)
		put_back(&sv);
	free(id.groups);
	if (!fdp)
		return rc == 0 ? 0 : -e;
	if (fd < 0)
		return -e;
	*fdp = fd;
	return 0;
}

int ha_target_open(pid_t pid, const char *path, struct stat *st)
{
	struct stat buf;
	int fd = -1, rc = as_target(pid, path, NULL, &fd);
	if (rc < 0)
		return rc;
	if (!st)
		st = &buf;
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		return -ENXIO;
	}
	/* A regular file: O_NONBLOCK means nothing for it, but libelf and
	 * libdw read it as they like. */
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int ha_target_stat(pid_t pid, const char *path, struct stat *st)
{
	return as_target(pid, path, st, NULL);
}

int ha_target_fds_named(pid_t pid, const char *name, int *v, int max)
{
	char dir[64], path[96], link[256];
	size_t nlen = strlen(name);
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL && n < max) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		ssize_t l;
		if (*end || end == de->d_name || fd > INT_MAX)
			continue;
		snprintf(path, sizeof path, "%s/%ld", dir, fd);
		l = readlink(path, link, sizeof link);
		if ((size_t)l == nlen && memcmp(link, name, nlen) == 0)
			v[n++] = (int)fd;
	}
	closedir(d);
	return n;
}

int ha_target_fd_new(pid_t pid, const char *name, const int *old, int nold)
{
	int now[64], n = ha_target_fds_named(pid, name, now, 64);

	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int k = 0; k < nold && !seen; k++)
			seen = now[i] == old[k];
		if (!seen)
			return now[i];
	}
	return -1;
}

int ha_target_dir_open(pid_t pid, const char *dir)
{
	char root[64], buf[PATH_MAX], *save = NULL;
	int fd;

	snprintf(root, sizeof root, "/proc/%d/root", (int)pid);
	if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf)
		return -ENAMETOOLONG;
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	for (char *c = strtok_r(buf, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
		int next = strcmp(c, "..") == 0 ? -1 :
		           openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = strcmp(c, "..") == 0 ? EINVAL : errno;
		close(fd);
		fd = next < 0 ? -1 : next;
		errno = e;
	}
	return fd < 0 ? -errno : fd;
}

void ha_target_cwd(pid_t pid, char *out, size_t outlen)
{
	char link[64];
	struct stat want, got;
	ssize_t n;
	int fd;

	out[0] = '\0';
	snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
	n = readlink(link, out, outlen - 1);
	if (n <= 0 || out[0] != '/' || stat(link, &want) != 0) {
		out[0] = '\0';
		return;
	}
	out[n] = '\0';
	fd = ha_target_dir_open(pid, out);
	if (fd < 0 || fstat(fd, &got) != 0 || got.st_dev != want.st_dev || got.st_ino != want.st_ino)
		out[0] = '\0';
	if (fd >= 0)
		close(fd);
}

int ha_fsid_take(uid_t uid, gid_t gid, struct ha_fsid *was)
{
	was->gid = (gid_t)syscall(SYS_setfsgid, gid);
	was->uid = (uid_t)syscall(SYS_setfsuid, uid);
	if ((gid_t)syscall(SYS_setfsgid, (gid_t)-1) != gid ||
	    (uid_t)syscall(SYS_setfsuid, (uid_t)-1) != uid) {
		ha_fsid_put_back(was);
		return -EPERM;
	}
	return 0;
}

void ha_fsid_put_back(const struct ha_fsid *was)
{
	(void)syscall(SYS_setfsuid, was->uid);
	(void)syscall(SYS_setfsgid, was->gid);
}
