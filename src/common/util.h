/* util.h -- small helpers shared by the attacher's modules. */
#ifndef HA_UTIL_H
#define HA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* Format a one-line error message into err[errlen], cleaned as
 * ha_clean_line does (never a newline or another control). */
void ha_err(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Make s, in place, safe to print on a terminal: every C0 control
 * (newlines too), DEL, C1 control (U+0080..U+009F) and byte that is not
 * part of valid UTF-8 becomes '?'.  What a target names (its comm, module
 * paths, the agent's error text, dlerror) goes through it before it
 * reaches stderr. */
void ha_clean_line(char *s);

/* MurmurHash3's 64-bit finalizer: every input bit affects every output bit. */
static inline uint64_t ha_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* Lower the calling thread's priority by ha_background_nice (default
 * HA_BACKGROUND_NICE; --nice): its nice value, which matters only when the
 * CPUs are contended, and then the profiled program's threads get the
 * cores first.  Best effort. */
#define HA_BACKGROUND_NICE 10
extern int ha_background_nice;
void ha_background_thread(void);

/* The last component of a path: what follows its last '/', or all of it. */
static inline const char *ha_base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* Monotonic clock in milliseconds. */
double ha_now_ms(void);
/* Unix time in seconds (the database's times). */
double ha_unix_now(void);

/* The soft RLIMIT_NOFILE raised to the hard one (every page-fault event is
 * a descriptor, and so is every file the symbolizer holds); the limit now,
 * 0 if it cannot be read. */
unsigned long ha_raise_fd_limit(void);
/* The descriptors this process has open (an estimate of 64 if
 * /proc/self/fd cannot be read). */
unsigned long ha_open_fd_count(void);

/* Read a whole (small) file into buf, NUL-terminated.  Returns the number of
 * bytes read or -errno.  Content beyond buflen-1 bytes is cut. */
ssize_t ha_read_file(const char *path, char *buf, size_t buflen);

/* Read n bytes at addr from the target's memory (process_vm_readv, falling
 * back to /proc/PID/mem).  0 on success, -errno otherwise. */
int ha_remote_read(pid_t pid, uint64_t addr, void *buf, size_t n);

/* Write n bytes at addr into the target's memory through /proc/PID/mem
 * (works on a ptrace-stopped thread's stack).  0 or -errno. */
int ha_remote_write(pid_t pid, uint64_t addr, const void *buf, size_t n);

/* Length of the valid UTF-8 sequence at s (1..4; no overlong form,
 * surrogate, value past U+10FFFF or U+FFFE/U+FFFF), or 0.  s must have 4
 * readable bytes or a NUL before its end (a NUL is never a continuation). */
int ha_utf8_len(const unsigned char *s);

/* In n elements of stride bytes at base, sorted by the uint64_t at
 * key_off in each (offsetof), how many come first with a key <= key: the
 * index of the first above it (the last at or below is the one before).
 * The one binary search of the attacher's sorted tables. */
static inline size_t ha_count_le(const void *base, size_t n, size_t stride, size_t key_off,
                                 uint64_t key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, (const char *)base + mid * stride + key_off, sizeof k);
		if (k <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* arr (an array of *cap elements of size bytes) with room for n: arr
 * itself, or arr reallocated to twice its size (first at the least) until
 * n fit, with *cap updated; NULL when out of memory or when the size would
 * overflow (arr is kept, as it was).  The one growing array of the
 * attacher's layers (heapdiff's, which end on out of memory, have
 * hd_xrealloc). */
void *ha_grow(void *arr, size_t *cap, size_t n, size_t size, size_t first);

#endif
