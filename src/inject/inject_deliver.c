/* inject_deliver.c -- how the agent file reaches the target's dlopen.
 *
 * By its path when the target sees our very file there (same device and
 * inode through /proc/PID/root: target.c decides): a target in our mount
 * namespace, or one that has the file mounted in.  One dlopen, as fast as
 * ever.  Otherwise -- a container, whose file system has no path to our
 * file -- the agent is delivered, and nothing of it is left behind:
 *
 *   1. memfd.  The hijacked thread calls libc's syscall(SYS_memfd_create,
 *      "heapattach_agent.so", MFD_CLOEXEC | MFD_EXEC) (again without
 *      MFD_EXEC, which kernels before 6.3 refuse, and with MFD_NOEXEC_SEAL,
 *      the only way 6.3 to 6.5 allow under vm.memfd_noexec = 2; from 6.6
 *      that sysctl refuses MFD_EXEC and seals a memfd made without it).
 *      A memfd sealed so cannot be exec'd, but mmap'd executable it can:
 *      dlopen works.  Our calls lose their
 *      return value (inject_call.c), so the new descriptor N is found in
 *      /proc/PID/fd by its name.  We write the agent into it through
 *      /proc/PID/fd/N, the target dlopens /proc/self/fd/N, then closes N
 *      (syscall(SYS_close, N)): only the mapping keeps the file.  The maps
 *      read "/memfd:heapattach_agent.so (deleted)", which
 *      ha_maps_module_name knows as the agent.  This fails when a memfd may
 *      not be mapped executable (SELinux) or /proc is not mounted inside.
 *   2. copy.  In the first directory of the target's root that is not
 *      mounted noexec or read-only and lets us in -- /tmp, /var/tmp,
 *      /dev/shm, its working directory -- a fresh directory (mkdtemp:
 *      unguessable, 0700) holding heapattach_agent.so, both owned by the
 *      target's user; the target dlopens it, and both are removed right
 *      after, whatever the result.  In a file system of a rootless
 *      container's user namespace, which has no mapping for root's uid
 *      (EOVERFLOW), both are made as the target's uid and gid (their
 *      fsuid/fsgid on our thread).  Directories under the target's root
 *      are walked one component at a time without following a symbolic
 *      link (absolute links would resolve against OUR root).
 *
 * When no way works, j->err is one line naming what was tried and why each
 * failed.  The agent's soname stays its module name either way, so that the
 * collector, the checks of a reattach and the tests find it by name. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "elfsym.h"
#include "ha_proto.h"
#include "target_fs.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MFD_EXEC
#define MFD_EXEC         0x10U      /* Linux 6.3 */
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL  0x08U      /* Linux 6.3 */
#endif

#define ROOM             1024       /* the delivery's strings, on the stack */
#define MAX_OLD          16         /* memfds of our name there before (at most 64) */
#define MEMFD_LINK       "/memfd:" HA_AGENT_SONAME " (deleted)"
#define DLOPEN_FAILED    "dlopen in target failed: "

size_t inj_deliver_room(const struct injection *j)
{
	return j->target->agent_by_path ? strlen(j->target->agent_path) + 1 : ROOM;
}

/* The string s into the room on the target's stack.  0 or -errno. */
static int put_string(struct injection *j, uint64_t room, size_t len, const char *s)
{
	size_t n = strlen(s) + 1;

	return n > len ? -ENAMETOOLONG : ha_remote_write(j->pid, room, s, n);
}

/* j->err after a failed dlopen, without its prefix: "dlopen " + dlerror's text. */
static const char *dlopen_why(const struct injection *j)
{
	return strncmp(j->err, DLOPEN_FAILED, sizeof DLOPEN_FAILED - 1) == 0 ?
	       j->err + sizeof DLOPEN_FAILED - 1 : j->err;
}

/* Copy our agent file into out.  0, or 1 with why set. */
static int copy_agent(struct injection *j, int out, char *why, size_t whylen)
{
	int in = open(j->target->agent_path, O_RDONLY | O_CLOEXEC);
	struct stat st = { 0 };
	off_t off = 0;
	int rc = 0;
	if (in < 0 || fstat(in, &st) < 0) {
		snprintf(why, whylen, "cannot read the agent: %s", strerror(errno));
		rc = 1;
	}
	while (rc == 0 && off < st.st_size) {
		ssize_t n = sendfile(out, in, &off, (size_t)(st.st_size - off));
		if (n <= 0) {
			snprintf(why, whylen, "cannot write the agent: %s", n < 0 ? strerror(errno) :
			         "short write");
			rc = 1;
		}
	}
	if (in >= 0)
		close(in);
	return rc;
}

/* libc's syscall(nr, a0, a1) on the hijacked thread (its result lost). */
static int remote_syscall(struct injection *j, struct hijack *h, const char *what, long nr,
                          uint64_t a0, uint64_t a1)
{
	uint64_t args[3] = { (uint64_t)nr, a0, a1 };
	return inj_call(j, h, what, j->syscall_fn, args, 3);
}

/* The agent through a memfd (see the top).  0 loaded; 1 not, why set; -1
 * a call failed (j->err). */
static int try_memfd(struct injection *j, struct hijack *h, uint64_t room, size_t len,
                     char *why, size_t whylen)
{
	static const unsigned flags[] = { MFD_CLOEXEC | MFD_EXEC, MFD_CLOEXEC,
	                                  MFD_CLOEXEC | MFD_NOEXEC_SEAL };
	const struct ha_map *libc = ha_maps_find_libc(&j->maps, NULL);
	int old[MAX_OLD], nold, fd = -1, out, rc;
	char path[64];

	rc = libc ? ha_elf_symbol(j->pid, libc, "syscall", &j->syscall_fn) : -ENOENT;
	if (rc < 0) {
		snprintf(why, whylen, "no syscall() in the target's libc: %s", strerror(-rc));
		return 1;
	}
	rc = put_string(j, room, len, HA_AGENT_SONAME);
	if (rc < 0) {
		ha_err(j->err, j->errlen, "cannot write to the stack of thread %d: %s", (int)h->tid,
		       strerror(-rc));
		return -1;
	}
	nold = ha_target_fds_named(j->pid, MEMFD_LINK, old, MAX_OLD);
	for (size_t i = 0; i < sizeof flags / sizeof flags[0] && fd < 0; i++) {
		if (remote_syscall(j, h, "memfd_create", SYS_memfd_create, room, flags[i]) < 0)
			return -1;
		fd = ha_target_fd_new(j->pid, MEMFD_LINK, old, nold);
	}
	if (fd < 0) {
		snprintf(why, whylen, "memfd_create failed in the target");
		return 1;
	}
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)j->pid, fd);
	out = open(path, O_WRONLY | O_CLOEXEC);
	rc = 1;
	if (out < 0)
		snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
	else if (copy_agent(j, out, why, whylen) == 0)
		rc = 0;
	if (out >= 0)
		close(out);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (rc == 0 && put_string(j, room, len, path) == 0) {
		inj_log(j, "agent written into memfd %d of process %d (from %s)", fd, (int)j->pid,
		        j->target->agent_path);
		rc = inj_load_agent(j, h, room);
		if (rc == 1)
			snprintf(why, whylen, "dlopen %.200s", dlopen_why(j));
	}
	/* nothing of ours stays in its descriptor table */
	if (rc >= 0 && remote_syscall(j, h, "close", SYS_close, (uint64_t)fd, 0) < 0)
		return -1;
	return rc;
}

/* Why the directory at dfd cannot hold the copy, or NULL. */
static const char *unfit(int dfd)
{
	struct statvfs sv;

	if (fstatvfs(dfd, &sv) != 0)
		return NULL;        /* mkdtemp will say */
	return (sv.f_flag & ST_NOEXEC) ? "noexec" : (sv.f_flag & ST_RDONLY) ? "read-only" : NULL;
}

/* mkdtemp(tmpl): as ourselves, or -- when the file system has no mapping
 * for our uid (EOVERFLOW: a tmpfs of a rootless container's user
 * namespace) -- as the target's uid and gid (*owner), which it has.  tmpl
 * or NULL with errno. */
static char *make_dir(const struct injection *j, char *tmpl, int *owner)
{
	const struct ha_target *t = j->target;
	size_t len = strlen(tmpl);
	struct ha_fsid was;
	char *ok = mkdtemp(tmpl);

	if (ok || errno != EOVERFLOW || t->uid == geteuid() || ha_fsid_take(t->uid, t->gid, &was))
		return ok;
	memcpy(tmpl + len - 6, "XXXXXX", 7); /* the template again, with its NUL */
	ok = mkdtemp(tmpl);
	int e = errno;
	ha_fsid_put_back(&was);
	*owner = ok != NULL;
	errno = e;
	return ok;
}

/* The agent through a copy in dir (see the top).  0 loaded; 1 not, why
 * set; -1 a call failed (j->err). */
static int try_copy(struct injection *j, struct hijack *h, uint64_t room, size_t len,
                    const char *dir, char *why, size_t whylen)
{
	const struct ha_target *t = j->target;
	char tmpl[96], name[48], path[ROOM + 64];
	const char *bad;
	struct ha_fsid was;
	int dfd = ha_target_dir_open(j->pid, dir), sub = -1, out = -1, rc = 1, owner = 0;
	if (dfd < 0) {
		snprintf(why, whylen, "%.100s %s", dir, strerror(-dfd));
		return 1;
	}
	snprintf(tmpl, sizeof tmpl, "/proc/self/fd/%d/heapattach-XXXXXX", dfd);
	if ((bad = unfit(dfd)) != NULL || !make_dir(j, tmpl, &owner)) {
		snprintf(why, whylen, "%.100s %s", dir, bad ? bad : strerror(errno));
		close(dfd);
		return 1;
	}
	snprintf(name, sizeof name, "%.40s", ha_base_name(tmpl));
	sub = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub >= 0 && (!owner || ha_fsid_take(t->uid, t->gid, &was) == 0)) {
		out = openat(sub, HA_AGENT_SONAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		             0500);
		if (owner)
			ha_fsid_put_back(&was);
	}
	if (out < 0)
		snprintf(why, whylen, "%.100s %s", dir, strerror(errno));
	else if (copy_agent(j, out, why, whylen) == 0 && fchown(out, t->uid, t->gid) == 0 &&
	         fchownat(sub, "", t->uid, t->gid, AT_EMPTY_PATH) == 0)
		rc = 0;
	else if (!why[0])
		snprintf(why, whylen, "%.100s chown: %s", dir, strerror(errno));
	if (out >= 0)
		close(out);
	snprintf(path, sizeof path, "%s%s%s/%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name,
	         HA_AGENT_SONAME);
	if (rc == 0 && put_string(j, room, len, path) < 0) {
		snprintf(why, whylen, "%.100s path too long", dir);
		rc = 1;
	}
	if (rc == 0) {
		inj_log(j, "agent copied to %s in the root of process %d", path, (int)j->pid);
		rc = inj_load_agent(j, h, room);
		if (rc == 1)
			snprintf(why, whylen, "%.100s dlopen %.120s", dir, dlopen_why(j));
	}
	/* nothing left in its file system, whatever the result */
	if (sub >= 0) {
		(void)unlinkat(sub, HA_AGENT_SONAME, 0);
		close(sub);
	}
	(void)unlinkat(dfd, name, AT_REMOVEDIR);
	close(dfd);
	return rc;
}

int inj_deliver_agent(struct injection *j, struct hijack *h, uint64_t room, size_t len)
{
	static const char *const dirs[] = { "/tmp", "/var/tmp", "/dev/shm", NULL };
	char mwhy[256] = "", cwhy[320] = "", one[240], cwd[ROOM];
	size_t used = 0;
	int rc;

	if (j->target->agent_by_path) {
		rc = put_string(j, room, len, j->target->agent_path);
		if (rc < 0) {
			ha_err(j->err, j->errlen, "cannot write to the stack of thread %d: %s",
			       (int)h->tid, strerror(-rc));
			return -1;
		}
		return inj_load_agent(j, h, room) == 0 ? 0 : -1;
	}
	rc = try_memfd(j, h, room, len, mwhy, sizeof mwhy);
	if (rc <= 0)
		return rc;
	inj_log(j, "memfd: %s; trying a copy", mwhy);
	ha_target_cwd(j->pid, cwd, sizeof cwd - 64);
	for (int i = 0; i < 4; i++) {
		const char *dir = i < 3 ? dirs[i] : cwd;
		if (!dir[0])
			continue;
		one[0] = '\0';
		rc = try_copy(j, h, room, len, dir, one, sizeof one);
		if (rc <= 0)
			return rc;
		inj_log(j, "copy: %s", one);
		if (used < sizeof cwhy)
			used += (size_t)snprintf(cwhy + used, sizeof cwhy - used, "%s%s%s",
			                         used ? ", " : "", i < 3 ? "" : "cwd ", one);
	}
	ha_err(j->err, j->errlen, "cannot load the agent in %d (%s): memfd: %s; copy: %s",
	       (int)j->pid, j->target->comm, mwhy, cwhy[0] ? cwhy : "no directory to try");
	return -1;
}
