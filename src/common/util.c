/* util.c -- small helpers shared by the attacher's modules. */
#define _GNU_SOURCE
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

int ha_utf8_len(const unsigned char *s)
{
	int n;
	uint32_t c;
	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, c = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, c = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates, values past U+10FFFF and the
	 * noncharacters U+FFFE/U+FFFF are invalid (XML and JSON parsers
	 * reject them). */
	if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff || c == 0xfffe || c == 0xffff)
		return 0;
	return n;
}

void ha_clean_line(char *s)
{
	unsigned char *r = (unsigned char *)s, *w = r;
	while (*r) {
		int n = ha_utf8_len(r);
		if (n == 0 || (n == 1 && (*r < 0x20 || *r == 0x7f)) ||
		    (n == 2 && r[0] == 0xc2 && r[1] < 0xa0)) {
			/* an invalid byte, a C0 control or DEL, a C1 control
			 * (U+0080..U+009F: U+009B is CSI to some terminals) */
			*w++ = '?';
			r += n ? n : 1;
		} else {
			memmove(w, r, (size_t)n);
			w += n;
			r += n;
		}
	}
	*w = '\0';
}

void ha_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	/* Messages name paths, comms and texts the target chose. */
	ha_clean_line(err);
}

double ha_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

unsigned long ha_raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 0;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	return (unsigned long)rl.rlim_cur;
}

unsigned long ha_open_fd_count(void)
{
	unsigned long n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return 64;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

double ha_unix_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

ssize_t ha_read_file(const char *path, char *buf, size_t buflen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;
	if (fd < 0)
		return -errno;
	while (got + 1 < buflen) {
		ssize_t n = read(fd, buf + got, buflen - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return (ssize_t)got;
}

static int mem_rw(pid_t pid, uint64_t addr, void *buf, size_t n, int write)
{
	char path[64];
	int fd;
	size_t done = 0;
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	fd = open(path, (write ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (done < n) {
		ssize_t r = write ? pwrite(fd, (const char *)buf + done, n - done, (off_t)(addr + done))
		                  : pread(fd, (char *)buf + done, n - done, (off_t)(addr + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;
			close(fd);
			return -e;
		}
		done += (size_t)r;
	}
	close(fd);
	return 0;
}

int ha_remote_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };
	ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (r == (ssize_t)n)
		return 0;
	return mem_rw(pid, addr, buf, n, 0);
}

int ha_remote_write(pid_t pid, uint64_t addr, const void *buf, size_t n)
{
	return mem_rw(pid, addr, (void *)buf, n, 1);
}

int ha_background_nice = HA_BACKGROUND_NICE;

void ha_background_thread(void)
{
	/* On Linux the nice value is per thread: PRIO_PROCESS with a tid. */
	id_t tid = (id_t)syscall(SYS_gettid);
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, tid);
	if (nice == -1 && errno)
		return;
	if (ha_background_nice > 0)
		(void)setpriority(PRIO_PROCESS, tid,
		                  nice + ha_background_nice > 19 ? 19 : nice + ha_background_nice);
}

void *ha_grow(void *arr, size_t *cap, size_t n, size_t size, size_t first)
{
	if (n <= *cap)
		return arr;
	size_t c = *cap ? *cap : first ? first : 1;
	while (c < n) {
		if (c > SIZE_MAX / 2)
			return NULL;
		c *= 2;
	}
	if (size && c > SIZE_MAX / size)
		return NULL;
	void *a = realloc(arr, c * size);
	if (a)
		*cap = c;
	return a;
}
