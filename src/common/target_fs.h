/* target_fs.h -- opening a file the target named, with the target's own
 * right to it.
 *
 * Paths in /proc/PID/maps, the files under /proc/PID/root and
 * /proc/PID/map_files, and the debug files a module's .gnu_debuglink
 * names are chosen by the target.  heapattach usually runs as root; opened
 * with root's rights, such a path could make it read a file the target's
 * user may not read (a module path replaced by a symbolic link to
 * /etc/shadow), or block it for good (a FIFO put at the path after the
 * module was mapped), or open a device.  So every such file is opened
 * here: on the calling thread only, its filesystem uid and gid and its
 * supplementary groups are the target's for the time of the open(2) (the
 * kernel then checks the target's permissions, and root's file
 * capabilities are dropped meanwhile), with O_NONBLOCK and O_NOCTTY; the
 * result must be a regular file. */
#ifndef HA_TARGET_FS_H
#define HA_TARGET_FS_H

#include <sys/stat.h>
#include <stddef.h>
#include <sys/types.h>

/* Open path read-only as target pid could (its fsuid, fsgid and groups,
 * read from /proc/PID/status at this call).  Only a regular file is kept
 * (anything else is closed again: -ENXIO); st gets its fstat when not
 * NULL.  When we cannot take the target's identity (not privileged, and
 * not its user) nothing is opened: -EPERM.  fd (O_CLOEXEC, blocking again
 * once open) or -errno. */
int ha_target_open(pid_t pid, const char *path, struct stat *st);

/* stat(2) of path with the same rights (no open, so no FIFO or device is
 * ever opened by it).  0 or -errno. */
int ha_target_stat(pid_t pid, const char *path, struct stat *st);

/* The descriptors of process pid whose link (/proc/PID/fd/N) reads exactly
 * name, up to max in v; their number.  ha_target_fd_new: the first one not
 * among old[0..nold) (made since they were listed), or -1. */
int ha_target_fds_named(pid_t pid, const char *name, int *v, int max);
int ha_target_fd_new(pid_t pid, const char *name, const int *old, int nold);

/* The directory at dir, a path in the target's file system, under its root
 * (/proc/PID/root), walked one component at a time without following a
 * symbolic link (absolute links would resolve against OUR root) nor going
 * up.  O_PATH fd or -errno. */
int ha_target_dir_open(pid_t pid, const char *dir);

/* The target's working directory as a path in its file system, if that
 * path leads to it (ha_target_dir_open); "" otherwise. */
void ha_target_cwd(pid_t pid, char *out, size_t outlen);

/* The calling thread's filesystem uid and gid become uid and gid (its
 * supplementary groups stay), to create files where ours cannot be: a file
 * system mounted in a user namespace of the target's (a rootless
 * container's tmpfs) refuses an owner it has no mapping for (EOVERFLOW),
 * root's included.  0 with *was to give back to ha_fsid_put_back, or
 * -EPERM (nothing changed). */
struct ha_fsid {
	uid_t uid;
	gid_t gid;
};
int ha_fsid_take(uid_t uid, gid_t gid, struct ha_fsid *was);
void ha_fsid_put_back(const struct ha_fsid *was);

#endif
