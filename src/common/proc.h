/* proc.h -- the one reader of /proc/PID/status and /proc/PID/stat.
 *
 * Everything in these files is written by the kernel but describes a
 * process that may be hostile (its comm is any 16 bytes, ')' and newlines
 * included), so every parser here bounds what it reads and parses stat
 * after the last ')'.  A missing process reads as -ENOENT or -ESRCH.
 * (statm, read here too, is numbers only.) */
#ifndef HA_PROC_H
#define HA_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HA_STATUS_MAX 8192  /* /proc/PID/status is well below this */

/* /proc/PID/status (or /proc/PID/task/TID/status when tid > 0) into buf,
 * NUL-terminated: 0 or -errno. */
int ha_proc_status(pid_t pid, pid_t tid, char *buf, size_t len);

/* The value of "name:" in the text of a status file (read once, looked up
 * many times), leading blanks skipped, the newline cut: 0 or -ENOENT. */
int ha_status_field(const char *status, const char *name, char *out, size_t outlen);

/* ha_proc_status then ha_status_field, for a single field. */
int ha_proc_status_field(pid_t pid, pid_t tid, const char *name, char *out, size_t outlen);

/* From /proc/PID/stat (or /proc/PID/task/TID/stat when tid > 0): the state
 * letter (3rd field) and the flags (9th; either pointer may be NULL).
 * 0, -errno, or -EINVAL for a line that does not parse. */
int ha_proc_stat(pid_t pid, pid_t tid, char *state, unsigned long *flags);

/* The process's memory now, in bytes.  0, or -1 (*out all zero) when it
 * could not be read whole: the process is gone, a zombie or exiting (it
 * has no memory map any more), which is an unknown figure, not a zero. */
struct ha_proc_mem {
	uint64_t rss;           /* resident: /proc/PID/statm */
	uint64_t rss_anon;      /* with_status: RssAnon of /proc/PID/status */
	uint64_t swap;          /* with_status: VmSwap */
};
int ha_proc_mem(pid_t pid, int with_status, struct ha_proc_mem *out);

/* Does the process still exist, neither a zombie nor exiting? */
int ha_proc_alive(pid_t pid);

/* Parse the text of a stat line (for tests and the functions above). */
int ha_parse_stat(const char *line, char *state, unsigned long *flags);

#endif
