/*
 * msg.c -- the agent's side of the socket (see msg.h): one struct ha_msg
 * per send or receive, descriptors taken under the fork lock, error text
 * built without stdio.
 */
#define _GNU_SOURCE
#include "msg.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "forklock.h"

/* The kernel's SCM_MAX_FD: no message carries more, so the buffer below
 * holds every descriptor one can (those that do not fit would be dropped
 * by the kernel, and released inside recvmsg, under the fork lock). */
#define HA_MAX_RX_FDS 253

struct text {
	char *buf;
	size_t cap, len;
};

static void text_add(struct text *t, const char *s)
{
	for (; s && *s && t->len + 1 < t->cap; s++)
		t->buf[t->len++] = *s;
	t->buf[t->len] = '\0';
}

static void text_num(struct text *t, long long v)
{
	char tmp[24];
	int n = 0;
	unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u && n < (int)sizeof tmp);
	if (v < 0)
		text_add(t, "-");
	while (n > 0 && t->len + 1 < t->cap) {
		t->buf[t->len++] = tmp[--n];
		t->buf[t->len] = '\0';
	}
}

int ha_msg_send(int fd, const struct ha_msg *m)
{
	for (;;) {
		ssize_t n = send(fd, m, sizeof *m, MSG_NOSIGNAL);
		if (n == (ssize_t)sizeof *m)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		return n < 0 ? -errno : -EIO;
	}
}

void ha_msg_send_error(int fd, int code, const char *what, const char *detail)
{
	struct ha_msg m;
	struct text t;
	if (fd < 0)
		return;
	ha_msg_init(&m, HA_MSG_ERROR);
	m.u.error.code = code;
	t = (struct text){ m.u.error.text, sizeof m.u.error.text, 0 };
	text_add(&t, "agent: ");
	text_add(&t, what);
	if (detail && *detail) {
		text_add(&t, ": ");
		text_add(&t, detail);
	}
	if (code) {
		text_add(&t, " (errno ");
		text_num(&t, code);
		text_add(&t, ")");
	}
	(void)ha_msg_send(fd, &m);
}

/* (See msg.h.)  Static buffers: 2 KiB is more than the stack of the
 * hijacked thread that runs the handshake should lend, and there is one
 * receiver at a time (the session's thread). */
ssize_t ha_msg_recv(int fd, struct ha_msg *m, int *fd_slot, int timeout_ms)
{
	static union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * HA_MAX_RX_FDS)];
	} cbuf;
	static int extra[HA_MAX_RX_FDS + 1];
	struct iovec iov = { m, sizeof *m };
	struct msghdr mh;
	struct pollfd p = { .fd = fd, .events = POLLIN, .revents = 0 };
	ssize_t n;
	int r;

	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	if (r == 0)
		return -EAGAIN;

	memset(&mh, 0, sizeof mh);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cbuf.buf;
	mh.msg_controllen = sizeof cbuf.buf;
	size_t n_extra = 0;
	int took_slot = 0;
	ha_fork_lock();
	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	int err = errno;
	if (n >= 0) {
		/* NOLINTNEXTLINE(clang-diagnostic-sign-compare): musl's CMSG_NXTHDR compares size_t with ptrdiff_t */
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
			    c->cmsg_len < CMSG_LEN(0))
				continue;
			size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			const unsigned char *data = CMSG_DATA(c);
			for (size_t i = 0; i < nfd; i++) {
				int rfd;
				memcpy(&rfd, data + i * sizeof(int), sizeof rfd);
				if (fd_slot && *fd_slot < 0) {
					*fd_slot = rfd;
					took_slot = 1;
				} else if (n_extra < HA_MAX_RX_FDS) {
					extra[n_extra++] = rfd;
				} else {
					(void)close(rfd);  /* (never: the buffer holds them all) */
				}
			}
		}
		/* A cut message is refused: its descriptor with it. */
		if (took_slot && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			extra[n_extra++] = *fd_slot;
			*fd_slot = -1;
		}
	}
	ha_fork_unlock();
	/* Not under the lock: closing a file the peer chose can block (a
	 * FUSE file's flush waits for its server), and every fork() of the
	 * host would wait with it.  A fork() meanwhile leaves the child a
	 * copy, closed at its exec (MSG_CMSG_CLOEXEC). */
	for (size_t i = 0; i < n_extra; i++)
		(void)close(extra[i]);
	if (n < 0)
		return -err;
	if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
		return -EMSGSIZE;
	return n;
}
