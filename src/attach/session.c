/*
 * session.c -- the attacher's end of the agent protocol (ha_proto.h).
 *
 * The socket is SOCK_SEQPACKET: every message arrives whole or not at all,
 * so a message is valid only if it has exactly sizeof(struct ha_msg) bytes
 * and the right magic and version.  The peer is checked with SO_PEERCRED:
 * only the target process itself may speak for the agent.
 */
#define _GNU_SOURCE
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ha_ring_map.h"
#include "target_fs.h"
#include "util.h"

void ha_session_init(struct ha_session *s)
{
	memset(s, 0, sizeof *s);
	s->listen_fd = s->conn_fd = s->ring_fd = s->tmp_fd = s->dir_fd = -1;
	s->io_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
}

/* The socket's names go once the agent is connected (or the session
 * ends): removed through the descriptors of the directories, never by a
 * path the target could have changed since. */
static void remove_names(struct ha_session *s)
{
	if (s->dir_fd >= 0) {
		(void)unlinkat(s->dir_fd, "agent.sock", 0);
		close(s->dir_fd);
	}
	if (s->tmp_fd >= 0) {
		if (s->dir_name[0])
			(void)unlinkat(s->tmp_fd, s->dir_name, AT_REMOVEDIR);
		close(s->tmp_fd);
	}
	s->dir_fd = s->tmp_fd = -1;
	s->dir_name[0] = s->dir[0] = s->sock[0] = '\0';
}

/* Where the socket's directory may go, under the target's root, in this
 * order: its /tmp (what every host target gets, at once), then the other
 * directories a read-only root usually leaves writable (a socket needs
 * neither exec nor suid).  After them, an abstract socket, when the target
 * shares our network namespace (make_abstract). */
static const char *const sock_dirs[] = { "tmp", "dev/shm", "var/tmp", "run" };

/* rel (components under rfd), walked without following a link.  O_PATH
 * fd, or -1 with errno (ELOOP for a link). */
static int open_under(int rfd, const char *rel)
{
	char buf[32], *save = NULL;
	int fd = dup(rfd);
	snprintf(buf, sizeof buf, "%s", rel);
	for (char *c = strtok_r(buf, "/", &save); c && fd >= 0; c = strtok_r(NULL, "/", &save)) {
		struct stat st;
		int next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), e = errno;
		if (next < 0 && fstatat(fd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			e = ELOOP;
		close(fd);
		fd = next;
		errno = e;
	}
	return fd;
}

/* mkdtemp in s->tmp_fd: as ourselves, or -- when the file system has no
 * mapping for our uid (EOVERFLOW: a tmpfs of a rootless container's user
 * namespace) -- as the target's uid and gid (s->as_owner), which it has.
 * 0 or -1 with errno. */
static int make_dir_in(struct ha_session *s, pid_t pid, uid_t uid, gid_t gid, char *tmpl,
                       size_t len)
{
	struct ha_fsid was;
	snprintf(tmpl, len, "/proc/self/fd/%d/heapattach-%d-XXXXXX", s->tmp_fd, (int)pid);
	if (mkdtemp(tmpl))
		return 0;
	if (errno != EOVERFLOW || uid == geteuid() || ha_fsid_take(uid, gid, &was) != 0)
		return -1;
	snprintf(tmpl, len, "/proc/self/fd/%d/heapattach-%d-XXXXXX", s->tmp_fd, (int)pid);
	char *ok = mkdtemp(tmpl);
	int e = errno;
	ha_fsid_put_back(&was);
	s->as_owner = ok != NULL;
	errno = e;
	return ok ? 0 : -1;
}

/* The socket directory in sock_dirs[i] of the target's root.  Another root
 * than ours is reached through /proc/PID/root, and whoever owns that root
 * (maybe the target's user) could make its tmp a symbolic link, which
 * would be followed back into OUR file system (absolute links resolve
 * against our root): the directory is made only in a real directory,
 * reached without following a link, and everything after goes through
 * descriptors (/proc/self/fd/N/... for the names bind(2) and mkdtemp(3)
 * need).  It is root's and 0700 until the socket is in it and handed to
 * the target's user: nobody can swap an entry in between (made as that
 * user in a rootless container's own file system, it is theirs from the
 * start: they could only break their own session).  0, or -1 with why. */
static int make_dir_at(struct ha_session *s, pid_t pid, uid_t uid, gid_t gid, int rfd,
                       const char *rel, const char *where, char *why, size_t whylen)
{
	char tmpl[96];
	s->tmp_fd = rfd < 0 ? -1 : open_under(rfd, rel);
	if (s->tmp_fd < 0) {
		snprintf(why, whylen, "%s: %s", where,
		         errno == ELOOP ? "it is a symbolic link" : strerror(errno));
		return -1;
	}
	if (make_dir_in(s, pid, uid, gid, tmpl, sizeof tmpl) != 0) {
		snprintf(why, whylen, "%s: %s", where, strerror(errno));
		close(s->tmp_fd);
		s->tmp_fd = -1;
		return -1;
	}
	snprintf(s->dir_name, sizeof s->dir_name, "%.40s", ha_base_name(tmpl));
	snprintf(s->dir, sizeof s->dir, "%s/%s", where, s->dir_name);
	s->dir_fd = openat(s->tmp_fd, s->dir_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->dir_fd < 0) {
		snprintf(why, whylen, "cannot open %.120s: %s", s->dir, strerror(errno));
		return -1;
	}
	snprintf(s->sock, sizeof s->sock, "/proc/self/fd/%d/agent.sock", s->dir_fd);
	if ((size_t)snprintf(s->sock_target, sizeof s->sock_target, "/%s/%s/agent.sock", rel,
	                     s->dir_name) >= sizeof s->sock_target) {
		snprintf(why, whylen, "socket path too long: /%s/%s/agent.sock", rel, s->dir_name);
		return -1;
	}
	return 0;
}

/* An abstract socket name ("@heapattach-PID-RANDOM"): no file at all, but
 * one namespace per network namespace, so only for a target in ours.
 * Anyone there may connect to it: accept_agent takes only the target (its
 * pid), the agent only the session's cookie.  0, or -1 with why. */
static int make_abstract(struct ha_session *s, pid_t pid, char *why, size_t whylen)
{
	char path[64];
	struct stat theirs, ours;
	unsigned rnd = 0;
	snprintf(path, sizeof path, "/proc/%d/ns/net", (int)pid);
	if (stat(path, &theirs) != 0 || stat("/proc/self/ns/net", &ours) != 0 ||
	    theirs.st_ino != ours.st_ino || theirs.st_dev != ours.st_dev) {
		snprintf(why, whylen, "an abstract socket: the target is in another network namespace");
		return -1;
	}
	if (getentropy(&rnd, sizeof rnd) != 0)
		rnd = (unsigned)(ha_now_ms() * 1e3);
	s->abstract = 1;
	snprintf(s->dir, sizeof s->dir, "@heapattach-%d-%08x", (int)pid, rnd);
	snprintf(s->sock, sizeof s->sock, "%s", s->dir);
	memset(s->sock_target, 0, sizeof s->sock_target);
	snprintf(s->sock_target + 1, sizeof s->sock_target - 1, "%s", s->dir + 1);
	return 0;
}

static int make_socket_dir(struct ha_session *s, pid_t pid, uid_t uid, gid_t gid, int same_root,
                           char *err, size_t errlen)
{
	char root[64] = "/", where[96], why[5][200];
	const size_t n = sizeof sock_dirs / sizeof sock_dirs[0];
	if (!same_root)
		snprintf(root, sizeof root, "/proc/%d/root", (int)pid);
	int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC), e = errno;
	for (size_t i = 0; i < n; i++) {
		snprintf(where, sizeof where, "%s/%s", same_root ? "" : root, sock_dirs[i]);
		errno = e;
		if (make_dir_at(s, pid, uid, gid, rfd, sock_dirs[i], where, why[i], sizeof why[i]) == 0) {
			if (rfd >= 0)
				close(rfd);
			if (i > 0)
				snprintf(s->not_tmp, sizeof s->not_tmp, "%s", why[0]);
			return 0;
		}
		remove_names(s);
		s->as_owner = 0;
	}
	if (rfd >= 0)
		close(rfd);
	if (make_abstract(s, pid, why[n], sizeof why[n]) == 0) {
		snprintf(s->not_tmp, sizeof s->not_tmp, "%s; %s; %s; %s", why[0], why[1], why[2],
		         why[3]);
		return 0;
	}
	ha_err(err, errlen, "cannot create a socket directory in %s; %s; %s; %s; nor %s", why[0],
	       why[1], why[2], why[3], why[4]);
	return -1;
}

static int make_listener(struct ha_session *s, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t salen = sizeof sa;
	struct ha_fsid was;
	if (strlen(s->sock) >= sizeof sa.sun_path) {
		ha_err(err, errlen, "socket path too long: %s", s->sock);
		return -1;
	}
	strcpy(sa.sun_path, s->sock);
	if (s->abstract) {
		sa.sun_path[0] = '\0';
		/* '\0' and the name, as the agent connects (no NUL after it) */
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(s->sock));
	}
	s->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int owner = s->as_owner && ha_fsid_take(uid, gid, &was) == 0;
	int ok = s->listen_fd >= 0 && bind(s->listen_fd, (struct sockaddr *)&sa, salen) == 0;
	int e = errno;
	if (owner)
		ha_fsid_put_back(&was);
	if (!ok || listen(s->listen_fd, 4) != 0) {
		ha_err(err, errlen, "cannot listen on %s%s: %s", s->dir, s->abstract ? "" : "/agent.sock",
		       strerror(ok ? errno : e));
		return -1;
	}
	/* The agent runs as the target's user; root may be profiling someone
	 * else's process.  The directory stays 0700: that user and root only.
	 * The socket first, while the directory is still root's alone. */
	if (!s->abstract && uid != geteuid() &&
	    (fchownat(s->dir_fd, "agent.sock", uid, gid, AT_SYMLINK_NOFOLLOW) != 0 ||
	     fchownat(s->dir_fd, "", uid, gid, AT_EMPTY_PATH) != 0)) {
		ha_err(err, errlen, "cannot hand %s to uid %u: %s", s->dir, (unsigned)uid,
		       strerror(errno));
		return -1;
	}
	return 0;
}

static int make_ring(struct ha_session *s, uint64_t data_size, uint32_t rings, char *err,
                     size_t errlen)
{
	if (!ha_ring_size_ok(data_size) || !ha_rings_ok(rings)) {
		ha_err(err, errlen, "ring size %llu is not a power of two between 64 KiB and 1 GiB, "
		       "or %u rings not a power of two up to %u", (unsigned long long)data_size,
		       (unsigned)rings, HA_RINGS_MAX);
		return -1;
	}
	uint64_t file_size = ha_rings_file_size(data_size, rings);
	s->ring_fd = memfd_create("heapattach-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	/* Sealed at its size: the target writes into its mapping from inside
	 * malloc, and a shrunk file would make those writes fault. */
	if (s->ring_fd < 0 || ftruncate(s->ring_fd, (off_t)file_size) != 0 ||
	    fcntl(s->ring_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
		ha_err(err, errlen, "cannot create the ring (%llu bytes): %s",
		       (unsigned long long)file_size, strerror(errno));
		return -1;
	}
	void *ring = ha_ring_map(s->ring_fd, data_size, rings);
	if (ring == MAP_FAILED) {
		ha_err(err, errlen, "cannot map the ring: %s", strerror(errno));
		return -1;
	}
	s->ring = ring;
	s->ring_data_size = data_size;
	s->ring_count = rings;
	for (uint32_t i = 0; i < rings; i++) {
		struct ha_ring_hdr *h = ha_ring_at(ring, data_size, i);
		h->magic = HA_RING_MAGIC;
		h->version = HA_PROTO_VERSION;
		h->data_size = data_size;
	}
	return 0;
}

int ha_session_open(struct ha_session *s, pid_t pid, uid_t uid, gid_t gid, int same_root,
                    uint64_t ring_data_size, uint32_t rings, char *err, size_t errlen)
{
	s->pid = pid;
	if (make_socket_dir(s, pid, uid, gid, same_root, err, errlen) ||
	    make_listener(s, uid, gid, err, errlen) ||
	    make_ring(s, ring_data_size, rings, err, errlen))
		return -1;
	return 0;
}

/* Wait until fd is readable, or the deadline passes.  1, 0 (timeout), -1. */
static int wait_readable(int fd, double deadline_ms)
{
	for (;;) {
		double left = deadline_ms - ha_now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n = poll(&p, 1, (int)left + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n > 0)
			return 1;
	}
}

static int send_msg(struct ha_session *s, const struct ha_msg *m, int fd_to_pass,
                    char *err, size_t errlen)
{
	struct iovec iov = { (void *)m, sizeof *m };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd_to_pass >= 0) {
		memset(&ctl, 0, sizeof ctl);
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof ctl.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd_to_pass, sizeof(int));
	}
	for (;;) {
		ssize_t n = sendmsg(s->conn_fd, &mh, MSG_NOSIGNAL);
		if (n == (ssize_t)sizeof *m)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		ha_err(err, errlen, "cannot send to the agent: %s",
		       n < 0 ? strerror(errno) : "short write");
		return -1;
	}
}

/* Receive one message into *m (*len bytes, *trunc if cut): 0, 1 when
 * nothing is there yet and deadline_ms < 0 (do not wait), -1 with err.
 * Any file descriptor that comes along uninvited is closed: the agent
 * never sends one. */
static int recv_one(struct ha_session *s, struct ha_msg *m, double deadline_ms, long *len,
                    int *trunc, char *err, size_t errlen)
{
	if (deadline_ms >= 0) {
		int r = wait_readable(s->conn_fd, deadline_ms);
		if (r <= 0) {
			ha_err(err, errlen, r == 0 ? "the agent did not answer in time"
			                           : "waiting for the agent failed");
			return -1;
		}
	}
	struct iovec iov = { m, sizeof *m };
	char ctl[CMSG_SPACE(4 * sizeof(int))];
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
	                     .msg_controllen = sizeof ctl };
	ssize_t n;
	do
		n = recvmsg(s->conn_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
				close(fd);
			}
	if (n < 0 && deadline_ms < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 1;
	if (n == 0) {
		ha_err(err, errlen, "the agent closed the connection");
		return -1;
	}
	if (n < 0) {
		ha_err(err, errlen, "cannot read from the agent: %s", strerror(errno));
		return -1;
	}
	*len = (long)n;
	*trunc = (mh.msg_flags & MSG_TRUNC) != 0;
	return 0;
}

/* One message of type want (1: none yet, when deadline_ms < 0).  An
 * ALLOC_STATS answer is dropped unless it is what is wanted: the late
 * answer to an ask that timed out (ha_session_alloc_stats). */
static int recv_msg(struct ha_session *s, struct ha_msg *m, uint16_t want, double deadline_ms,
                    char *err, size_t errlen)
{
	for (;;) {
		long n = 0;
		int trunc = 0, r = recv_one(s, m, deadline_ms, &n, &trunc, err, errlen);
		if (r != 0)
			return r;
		if (want != HA_MSG_ALLOC_STATS && !trunc && ha_msg_valid(m, n) &&
		    m->type == HA_MSG_ALLOC_STATS)
			continue;
		r = ha_session_check_msg(m, n, trunc, want, err, errlen);
		if (r && want && !trunc && ha_msg_valid(m, n) && m->type == HA_MSG_ERROR &&
		    !s->agent_err[0])
			snprintf(s->agent_err, sizeof s->agent_err, "%s", err);
		return r;
	}
}

int ha_session_check_msg(struct ha_msg *m, long n, int truncated, uint16_t want, char *err,
                         size_t errlen)
{
	if (!ha_msg_valid(m, n) || truncated) {
		ha_err(err, errlen, "malformed message from the agent (%ld bytes)", n);
		return -1;
	}
	if (m->type == HA_MSG_ERROR) {
		/* The text is the target's bytes: ha_err cleans the line for
		 * the terminal (no control characters, valid UTF-8 only). */
		m->u.error.text[sizeof m->u.error.text - 1] = '\0';
		ha_err(err, errlen, "the agent failed: %s (%s)", m->u.error.text,
		       strerror(m->u.error.code > 0 ? m->u.error.code : EIO));
		return -1;
	}
	if (m->type != want) {
		ha_err(err, errlen, "unexpected message %u from the agent (wanted %u)",
		       (unsigned)m->type, (unsigned)want);
		return -1;
	}
	return 0;
}

/* Accept the agent if it is there: 0 connected, 1 not yet, -1 error. */
static int accept_agent(struct ha_session *s, char *err, size_t errlen)
{
	for (;;) {
		int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 1;
			ha_err(err, errlen, "accept on %s/agent.sock: %s", s->dir, strerror(errno));
			return -1;
		}
		struct ucred cred;
		socklen_t len = sizeof cred;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid == s->pid) {
			s->conn_fd = fd;
			/* Connected: nobody needs the name any more.  Removing it
			 * now means even a kill -9 of the attacher leaves nothing
			 * behind in the target's /tmp. */
			remove_names(s);
			return 0;
		}
		/* Somebody else found the socket: not our agent.  Ignore it. */
		close(fd);
	}
}

void ha_session_handshake_begin(struct ha_session *s, const struct ha_msg_config *cfg)
{
	s->hs_state = HA_HS_ACCEPT;
	s->hs_cfg = *cfg;
	s->hs_err[0] = '\0';
	s->t_ready = 0;
}

int ha_session_handshake_fd(const struct ha_session *s)
{
	switch (s->hs_state) {
	case HA_HS_ACCEPT:
		return s->listen_fd;
	case HA_HS_HELLO:
	case HA_HS_READY:
		return s->conn_fd;
	default:
		return -1;
	}
}

int ha_session_handshake_step(struct ha_session *s)
{
	struct ha_msg m;
	int r;

	for (;;) {
		switch (s->hs_state) {
		case HA_HS_ACCEPT:
			r = accept_agent(s, s->hs_err, sizeof s->hs_err);
			if (r != 0)
				goto out;
			s->hs_state = HA_HS_HELLO;
			break;
		case HA_HS_HELLO:
			r = recv_msg(s, &m, HA_MSG_HELLO, -1, s->hs_err, sizeof s->hs_err);
			if (r != 0)
				goto out;
			pid_t want = s->own_pid ? s->own_pid : s->pid;
			if (m.u.hello.pid != want) {
				ha_err(s->hs_err, sizeof s->hs_err, "the agent says it runs in pid %d, "
				       "not %d", (int)m.u.hello.pid, (int)want);
				r = -1;
				goto out;
			}
			if (m.u.hello.agent_version != HA_PROTO_VERSION) {
				ha_err(s->hs_err, sizeof s->hs_err, "the agent speaks protocol %u, not %u",
				       (unsigned)m.u.hello.agent_version, HA_PROTO_VERSION);
				r = -1;
				goto out;
			}
			s->hello = m.u.hello;
			ha_msg_init(&m, HA_MSG_CONFIG);
			m.u.config = s->hs_cfg;
			m.u.config.ring_size = ha_rings_file_size(s->ring_data_size, s->ring_count);
			m.u.config.rings = s->ring_count;
			if (send_msg(s, &m, s->ring_fd, s->hs_err, sizeof s->hs_err)) {
				r = -1;
				goto out;
			}
			s->hs_state = HA_HS_READY;
			break;
		case HA_HS_READY:
			r = recv_msg(s, &m, HA_MSG_READY, -1, s->hs_err, sizeof s->hs_err);
			if (r != 0)
				goto out;
			s->ready = m.u.counters;
			s->t_ready = ha_now_ms();
			s->hs_state = HA_HS_DONE;
			return 1;
		case HA_HS_DONE:
			return 1;
		default:
			return -1;
		}
	}
out:
	if (r < 0)
		s->hs_state = HA_HS_FAILED;
	return r < 0 ? -1 : 0;
}

int ha_session_handshake(struct ha_session *s, int timeout_ms, char *err, size_t errlen)
{
	double deadline = ha_now_ms() + timeout_ms;

	for (;;) {
		int r = ha_session_handshake_step(s);
		if (r == 1)
			return 0;
		if (r < 0) {
			ha_err(err, errlen, "%s", s->hs_err);
			return -1;
		}
		r = wait_readable(ha_session_handshake_fd(s), deadline);
		if (r <= 0) {
			ha_err(err, errlen, r < 0 ? "waiting for the agent failed"
			                    : s->hs_state == HA_HS_ACCEPT
			                        ? "the agent did not connect within the time limit"
			                        : "the agent did not answer in time");
			return -1;
		}
	}
}

int ha_session_detach(struct ha_session *s, int timeout_ms, struct ha_counters *final,
                      char *err, size_t errlen)
{
	struct ha_msg m;
	double deadline = ha_now_ms() + timeout_ms;
	if (s->conn_fd < 0) {
		ha_err(err, errlen, "no agent connected");
		return -1;
	}
	ha_msg_init(&m, HA_MSG_DETACH);
	pthread_mutex_lock(&s->io_mu);
	int r = send_msg(s, &m, -1, err, errlen) ||
	        recv_msg(s, &m, HA_MSG_DETACHED, deadline, err, errlen);
	pthread_mutex_unlock(&s->io_mu);
	if (r)
		return -1;
	if (final)
		*final = m.u.counters;
	return 0;
}

int ha_session_trim(struct ha_session *s, int timeout_ms, int *result, uint64_t *ns, int *kind, char *err,
                    size_t errlen)
{
	struct ha_msg m;
	double deadline = ha_now_ms() + timeout_ms;
	if (s->conn_fd < 0) {
		ha_err(err, errlen, "no agent connected");
		return -1;
	}
	ha_msg_init(&m, HA_MSG_TRIM);
	pthread_mutex_lock(&s->io_mu);
	int r = send_msg(s, &m, -1, err, errlen) ||
	        recv_msg(s, &m, HA_MSG_TRIMMED, deadline, err, errlen);
	pthread_mutex_unlock(&s->io_mu);
	if (r)
		return -1;
	/* From the target: only its three values are used, each bounded. */
	*result = m.u.trimmed.result < -1 ? -1 : m.u.trimmed.result > 1 ? 1 : m.u.trimmed.result;
	*ns = m.u.trimmed.ns;
	*kind = m.u.trimmed.kind < HA_ALLOC_KINDS ? (int)m.u.trimmed.kind : -1;
	return 0;
}

int ha_session_alloc_stats(struct ha_session *s, int timeout_ms, struct ha_msg *parts,
                           size_t *nparts, char *err, size_t errlen)
{
	struct ha_msg m;
	double deadline = ha_now_ms() + timeout_ms;
	*nparts = 0;
	if (s->conn_fd < 0) {
		ha_err(err, errlen, "no agent connected");
		return -1;
	}
	pthread_mutex_lock(&s->io_mu);
	uint32_t seq = ++s->alloc_seq;
	ha_msg_init(&m, HA_MSG_ALLOC_ASK);
	m.u.alloc_ask.seq = seq;
	int r = send_msg(s, &m, -1, err, errlen);
	size_t want = 1;
	while (r == 0 && *nparts < want) {
		r = recv_msg(s, &parts[*nparts], HA_MSG_ALLOC_STATS, deadline, err, errlen);
		if (r)
			break;
		const struct ha_msg_alloc_stats *a = &parts[*nparts].u.alloc;
		if (a->seq != seq)
			continue; /* an answer to an ask that timed out */
		if (a->part != *nparts || a->parts == 0 || a->parts > HA_ALLOC_PARTS_MAX ||
		    (*nparts && a->parts != want)) {
			ha_err(err, errlen, "allocator stats from the agent out of order (part %u of %u)",
			       (unsigned)a->part, (unsigned)a->parts);
			r = -1;
			break;
		}
		want = a->parts;
		++*nparts;
	}
	pthread_mutex_unlock(&s->io_mu);
	if (r)
		*nparts = 0;
	return r ? -1 : 0;
}

int ha_session_spurious_wake(struct ha_session *s)
{
	int spurious = 0;
	pthread_mutex_lock(&s->io_mu);
	for (;;) {
		struct pollfd p = { .fd = s->conn_fd, .events = POLLIN };
		if (s->conn_fd < 0 || poll(&p, 1, 0) < 0 || (p.revents & (POLLHUP | POLLERR | POLLNVAL)))
			break;
		if (!(p.revents & POLLIN)) {
			spurious = 1;
			break;
		}
		struct ha_msg m;
		ssize_t n = recv(s->conn_fd, &m, sizeof m, MSG_PEEK | MSG_DONTWAIT);
		if (n != (ssize_t)sizeof m || !ha_msg_valid(&m, n) || m.type != HA_MSG_ALLOC_STATS)
			break; /* left for ha_session_last_word: the agent speaks only when asked */
		long len = 0;
		int trunc = 0;
		char err[64];
		if (recv_one(s, &m, -1, &len, &trunc, err, sizeof err) != 0)
			break;
	}
	pthread_mutex_unlock(&s->io_mu);
	return spurious;
}

int ha_session_last_word(struct ha_session *s, char *err, size_t errlen)
{
	struct ha_msg m;
	memset(&m, 0, sizeof m); /* a hang-up leaves it as it is */
	pthread_mutex_lock(&s->io_mu);
	int r = s->conn_fd < 0 ? 0 : recv_msg(s, &m, 0, -1, err, errlen);
	int said = r == -1 && ha_msg_valid(&m, sizeof m) && m.type == HA_MSG_ERROR;
	if (!said && s->agent_err[0]) { /* read earlier by an exchange that wanted another answer */
		snprintf(err, errlen, "%s", s->agent_err);
		said = 1;
	}
	pthread_mutex_unlock(&s->io_mu);
	return said;
}

void ha_session_close(struct ha_session *s)
{
	if (s->conn_fd >= 0)
		close(s->conn_fd);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	if (s->ring_fd >= 0)
		close(s->ring_fd);
	ha_ring_unmap(s->ring, s->ring_data_size, s->ring_count);
	remove_names(s);
	ha_session_init(s);
}
