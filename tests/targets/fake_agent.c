/* fake_agent.c -- a lying agent for tests/t_hostile_handshake.sh, built by
 * the test as a shared object and injected with heapattach --agent.  It
 * exports heapattach_agent_init like the real agent (src/proto/ha_proto.h)
 * and then answers the attacher's handshake with lies, to exercise the
 * attacher's real parsing of everything the target's side sends.
 *
 * Which lie: the first word of the file named by $FAKE_AGENT_MODE_FILE in
 * the target's environment, read at each init (the test rewrites it before
 * each attach; the library stays loaded and init is called again):
 *   bad_magic, bad_version   HELLO with another magic / message version
 *   agent_version            HELLO saying another agent protocol version
 *   wrong_pid                HELLO naming pid 1
 *   short, huge              a message of 10 bytes / of 100000
 *   fds                      every message carries 200 descriptors (of
 *                            $FAKE_AGENT_MODE_FILE.fd); otherwise honest
 *   error_text               after CONFIG an ERROR whose text holds
 *                            terminal escapes, markup, a newline and
 *                            invalid UTF-8, no NUL, and code INT_MIN
 *   wrong_type               after CONFIG a message of type 999
 *   ready_huge               READY and DETACHED with every counter 2^64-1
 *   unsolicited_error        READY, then an ERROR like error_text's
 *                            without being asked
 *   silent                   HELLO, then never a word
 *   no_connect               init says it started, nothing connects
 *   child_first              a forked child connects first and sends a
 *                            HELLO with our pid; then the honest session
 *   initret                  init returns 77
 * An honest session (fds, ready_huge, child_first) waits for DETACH and
 * answers DETACHED, answering the collector's ALLOC_ASKs on the way as
 * a glibc agent does (allocator "none").  Nothing here touches the program's allocator hooks:
 * the program runs on unchanged. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ha_proto.h"

#define NFDS 200

/* Dormant, as the real agent's between sessions: after the first attach
 * heapattach finds this library loaded (the test names it
 * heapattach_agent.so), reads this word and calls init again. */
struct ha_agent_state heapattach_agent_state = { HA_PROTO_MAGIC, HA_PROTO_VERSION,
                                                 HA_STATE_DORMANT, 0, 0 };

static struct ha_init_args args;
static char mode[64];

static const char HOSTILE_TEXT[] =
	"\x1b[2J\x1b]52;c;aGVsbG8=\x07<script>alert(1)</script>&\"'\n\xff\xfe\xc2\x9b"
	"31mred AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";

static void read_mode(void)
{
	const char *f = getenv("FAKE_AGENT_MODE_FILE");
	int fd = f ? open(f, O_RDONLY | O_CLOEXEC) : -1;
	ssize_t n = fd >= 0 ? read(fd, mode, sizeof mode - 1) : -1;
	mode[n > 0 ? n : 0] = '\0';
	mode[strcspn(mode, " \n")] = '\0';
	if (fd >= 0)
		close(fd);
}

static int is(const char *m)
{
	return strcmp(mode, m) == 0;
}

static int connect_attacher(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", args.sock_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Send len bytes of m, with NFDS descriptors when the mode says so. */
static void send_raw(int fd, const void *m, size_t len)
{
	struct iovec iov = { (void *)m, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(NFDS * sizeof(int))];
	} ctl;
	int fds[NFDS], pass = -1;
	if (is("fds")) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s.fd", getenv("FAKE_AGENT_MODE_FILE"));
		pass = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (pass >= 0) {
		for (int i = 0; i < NFDS; i++)
			fds[i] = pass;
		memset(&ctl, 0, sizeof ctl);
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof ctl.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(NFDS * sizeof(int));
		memcpy(CMSG_DATA(c), fds, sizeof fds);
	}
	(void)sendmsg(fd, &mh, MSG_NOSIGNAL);
	if (pass >= 0)
		close(pass);
}

static void send_msg(int fd, const struct ha_msg *m)
{
	send_raw(fd, m, sizeof *m);
}

/* The next message (its type), closing any descriptor that came with it;
 * -1 on hang-up or after timeout_ms. */
static int recv_type_msg(int fd, int timeout_ms, struct ha_msg *out)
{
	struct ha_msg m;
	char ctl[CMSG_SPACE(8 * sizeof(int))];
	struct iovec iov = { &m, sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl,
	                     .msg_controllen = sizeof ctl };
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, timeout_ms) <= 0)
		return -1;
	ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n > 0 && c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
				int x;
				memcpy(&x, CMSG_DATA(c) + i * sizeof(int), sizeof x);
				close(x);
			}
	if (out)
		*out = m;
	return n == (ssize_t)sizeof m ? m.type : -1;
}

static int recv_type(int fd, int timeout_ms)
{
	return recv_type_msg(fd, timeout_ms, NULL);
}

/* Wait for DETACH, answering the collector's allocator asks (ALLOC_ASK)
 * as a glibc agent does: allocator "none", nothing read. */
static int wait_detach(int fd, int timeout_ms)
{
	struct ha_msg m;
	int t;
	while ((t = recv_type_msg(fd, timeout_ms, &m)) == HA_MSG_ALLOC_ASK) {
		struct ha_msg a;
		ha_msg_init(&a, HA_MSG_ALLOC_STATS);
		a.u.alloc.seq = m.u.alloc_ask.seq;
		a.u.alloc.kind = HA_ALLOC_NONE;
		a.u.alloc.parts = 1;
		send_msg(fd, &a);
	}
	return t;
}

static void hello(int fd, pid_t pid)
{
	struct ha_msg m;
	ha_msg_init(&m, HA_MSG_HELLO);
	m.u.hello.pid = pid;
	m.u.hello.agent_version = HA_PROTO_VERSION;
	if (is("bad_magic"))
		m.magic = 0xdeadbeef;
	if (is("bad_version"))
		m.version = 99;
	if (is("agent_version"))
		m.u.hello.agent_version = 99;
	if (is("wrong_pid"))
		m.u.hello.pid = 1;
	send_msg(fd, &m);
}

static void hostile_error(int fd)
{
	struct ha_msg m;
	ha_msg_init(&m, HA_MSG_ERROR);
	m.u.error.code = INT_MIN;
	memcpy(m.u.error.text, HOSTILE_TEXT, sizeof m.u.error.text); /* no NUL */
	send_msg(fd, &m);
}

static void counters(int fd, uint16_t type)
{
	struct ha_msg m;
	ha_msg_init(&m, type);
	if (is("ready_huge"))
		memset(&m.u.counters, 0xff, sizeof m.u.counters);
	send_msg(fd, &m);
}

static void *session(void *arg)
{
	(void)arg;
	if (is("no_connect"))
		return NULL;
	if (is("child_first")) {
		pid_t c = fork();
		if (c == 0) {
			int fd = connect_attacher();
			if (fd >= 0)
				hello(fd, getppid()); /* the lie: the parent's pid */
			_exit(0);
		}
		if (c > 0)
			waitpid(c, NULL, 0);
	}
	int fd = connect_attacher();
	if (fd < 0)
		return NULL;
	if (is("short") || is("huge")) {
		size_t n = is("short") ? 10 : 100000;
		char *junk = calloc(1, n);
		if (junk)
			send_raw(fd, junk, n);
		free(junk);
	} else {
		hello(fd, getpid());
	}
	if (is("silent") || is("short") || is("huge") || is("bad_magic") || is("bad_version") ||
	    is("wrong_pid") || is("agent_version")) {
		/* Stay connected until the attacher gives up. */
		(void)recv_type(fd, 30000);
		(void)recv_type(fd, 30000);
		close(fd);
		return NULL;
	}
	if (recv_type(fd, 10000) != HA_MSG_CONFIG) {
		close(fd);
		return NULL;
	}
	if (is("error_text")) {
		hostile_error(fd);
	} else if (is("wrong_type")) {
		struct ha_msg m;
		ha_msg_init(&m, 999);
		send_msg(fd, &m);
	} else {
		counters(fd, HA_MSG_READY);
		if (is("unsolicited_error")) {
			hostile_error(fd);
		} else if (wait_detach(fd, 60000) == HA_MSG_DETACH) {
			counters(fd, HA_MSG_DETACHED);
		}
	}
	(void)recv_type(fd, 10000);
	close(fd);
	return NULL;
}

/* Like the real agent, the result goes into a->result too: that is where
 * the attacher reads it (its calls return through a signal frame). */
static int init(void)
{
	pthread_t th;
	pthread_attr_t attr;
	read_mode();
	if (is("initret"))
		return 77;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&th, &attr, session, NULL);
	pthread_attr_destroy(&attr);
	return rc == 0 ? HA_INIT_STARTED : HA_INIT_NOTHREAD;
}

int heapattach_agent_init(struct ha_init_args *a)
{
	args = *a;
	a->result = init();
	return a->result;
}
