/* cookie_check -- the agent maps the ring of a peer that knows the
 * session's cookie only (ha_init_args.cookie, ha_msg_config.cookie).
 *
 *   cookie_check AGENT.so
 *
 * A process loads the real agent and calls its init, as an injection
 * would, with the arguments this one hands it through a pipe; this
 * process is the attacher, with the attacher's own session code
 * (src/attach/session.c).  Two such hosts: one in our pid namespace, and
 * one as pid 1 of a namespace of its own (the case the cookie is for:
 * there the agent's SO_PEERCRED check can only want pid 0, which every
 * process outside shows; HA_INIT_PEER_OUTSIDE).  With each:
 *  1. CONFIG with another cookie, and a pipe where the ring's memfd should
 *     be: the handshake fails with the agent's ERROR naming the cookie --
 *     not the descriptor, which it would have named had it looked at it
 *     first -- and init says FAILED or STARTED (the agent thread then
 *     failed it);
 *  2. the right cookie: READY, the ring mapped, then a clean detach.
 * And with the first host:
 *  3. a descriptor whose close blocks (a TCP socket lingering with unsent
 *     data, the agent's copy the last) as the ring of CONFIG with another
 *     cookie, as the ring of a CONFIG cut for being too long, and as the
 *     12th descriptor of CONFIG: while the agent is in that close, a fork()
 *     of the host returns at once -- the descriptor is not closed under the
 *     fork lock, which every fork() of the host takes (a FUSE file's close
 *     can wait for ever on its server).
 * Before each init the host waits until the agent is dormant again.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ha_proto.h"
#include "proc.h"
#include "session.h"
#include "unit.h"
#include "util.h"

/* The host's other thread: for each byte read from fork_in, fork() a
 * child that exits at once, and write back how long fork() took, in ms (a
 * double). */
static int fork_in = -1, fork_out = -1;
static void *forker(void *arg)
{
	char c;
	(void)arg;
	while (read(fork_in, &c, 1) == 1) {
		double t0 = ha_now_ms();
		pid_t child = fork();
		if (child == 0)
			_exit(0);
		double ms = ha_now_ms() - t0;
		if (child > 0)
			waitpid(child, NULL, 0);
		if (write(fork_out, &ms, sizeof ms) != (ssize_t)sizeof ms)
			break;
	}
	return NULL;
}

/* The child: for each struct ha_init_args read from in, init the agent
 * with it and write back init's result (args.result).  Meanwhile its
 * forker thread forks when asked. */
static void agent_host(const char *agent, int in, int out)
{
	pthread_t th;
	if (pthread_create(&th, NULL, forker, NULL) != 0)
		_exit(2);
	void *h = dlopen(agent, RTLD_NOW);
	int (*init)(struct ha_init_args *) = h ? (int (*)(struct ha_init_args *))dlsym(h, HA_AGENT_INIT_SYMBOL) : NULL;
	if (!init) {
		fprintf(stderr, "cookie_check: cannot load %s: %s\n", agent, dlerror());
		_exit(2);
	}
	const struct ha_agent_state *state = dlsym(h, HA_AGENT_STATE_SYMBOL);
	if (!state) {
		fprintf(stderr, "cookie_check: %s has no %s\n", agent, HA_AGENT_STATE_SYMBOL);
		_exit(2);
	}
	struct ha_init_args a;
	while (read(in, &a, sizeof a) == (ssize_t)sizeof a) {
		/* The last session's agent thread may still be leaving. */
		for (int i = 0; i < 5000 && __atomic_load_n(&state->state, __ATOMIC_ACQUIRE) !=
		                                 HA_STATE_DORMANT; i++)
			usleep(1000);
		/* What heapattach resolves in the target: its dlsym. */
		a.dlsym_addr = (uint64_t)(uintptr_t)dlsym;
		(void)init(&a);
		int32_t r = a.result;
		if (write(out, &r, sizeof r) != (ssize_t)sizeof r)
			_exit(3);
	}
	_exit(0);
}

/* Is the session's memfd mapped in pid? */
static int ring_mapped(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "r");
	int found = 0;
	while (f && fgets(line, sizeof line, f))
		found |= strstr(line, "memfd:heapattach-ring") != NULL;
	if (f)
		fclose(f);
	return found;
}

/* The arguments of an init for session s (args_flags), and its CONFIG,
 * with a cookie drawn here in both. */
static void session_args(const struct ha_session *s, uint32_t args_flags, struct ha_init_args *a,
                         struct ha_msg_config *cfg)
{
	*a = (struct ha_init_args){ .magic = HA_PROTO_MAGIC, .version = HA_PROTO_VERSION,
	                            .attacher_pid = (int32_t)getpid(),
	                            .attacher_uid = (uint32_t)geteuid(), .flags = args_flags };
	snprintf(a->sock_path, sizeof a->sock_path, "%s", s->sock_target);
	*cfg = (struct ha_msg_config){ .sample_interval = 512u << 10, .stack_bytes = 64u << 10 };
	if (getrandom(a->cookie, sizeof a->cookie, 0) != (ssize_t)sizeof a->cookie)
		abort();
	memcpy(cfg->cookie, a->cookie, sizeof cfg->cookie);
}

/* One session with the host (pid, own_pid in its namespace): its init
 * gets args_flags and the cookie drawn here.  wrong: CONFIG carries
 * another cookie, and a pipe instead of the ring's memfd.  Returns the
 * handshake's result (0 or -1; then detached), err filled, *result what
 * init returned, *mapped whether the ring was in the host's maps once the
 * handshake was over. */
static int round_trip(pid_t pid, pid_t own_pid, int to_host, int from_host, uint32_t args_flags,
                      int wrong, char *err, size_t errlen, int32_t *result, int *mapped)
{
	struct ha_session s;
	ha_session_init(&s);
	s.own_pid = own_pid;
	if (ha_session_open(&s, pid, getuid(), getgid(), 1, 1u << 20, 1, err, errlen)) {
		ha_session_close(&s);
		return -2;
	}
	struct ha_init_args a;
	struct ha_msg_config cfg;
	session_args(&s, args_flags, &a, &cfg);
	int memfd = -1, p[2] = { -1, -1 };
	if (wrong) {
		cfg.cookie[3] ^= 0x5a;
		if (pipe(p))
			abort();
		memfd = s.ring_fd;
		s.ring_fd = p[0];
	}
	ha_session_handshake_begin(&s, &cfg);
	if (write(to_host, &a, sizeof a) != (ssize_t)sizeof a)
		abort();
	int rc = ha_session_handshake(&s, 5000, err, errlen);
	if (read(from_host, result, sizeof *result) != (ssize_t)sizeof *result)
		abort();
	*mapped = ring_mapped(pid);
	if (rc == 0) {
		struct ha_counters fin;
		char derr[256];
		if (ha_session_detach(&s, 5000, &fin, derr, sizeof derr) != 0) {
			snprintf(err, errlen, "detach: %s", derr);
			rc = -3;
		}
	}
	if (wrong) {
		s.ring_fd = memfd;
		close(p[0]);
		close(p[1]);
	}
	ha_session_close(&s);
	return rc;
}

/* Is a thread of pid in close(2)? */
static int in_close(pid_t pid)
{
	char path[64], buf[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	struct dirent *e;
	int found = 0;
	while (d && !found && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/%d/task/%.16s/syscall", (int)pid, e->d_name);
		if (ha_read_file(path, buf, sizeof buf) < 0)
			buf[0] = '\0';
		found = strtol(buf, NULL, 10) == SYS_close && strchr(buf, ' ');
	}
	if (d)
		closedir(d);
	return found;
}

/* Is pid stopped (state T in /proc/PID/stat)? */
static int stopped(pid_t pid)
{
	char state = 0;
	return ha_proc_stat(pid, 0, &state, NULL) == 0 && state == 'T';
}

#define LINGER_S 2

/* A connected TCP socket over loopback whose close(2) blocks for LINGER_S
 * seconds: its send buffer and the peer's receive buffer full (*peer,
 * never read), SO_LINGER on. */
static int lingering_socket(int *peer)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &alen) || connect(c, (struct sockaddr *)&a, alen))
		abort();
	*peer = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (*peer < 0)
		abort();
	close(l);
	static char junk[1 << 16];
	while (send(c, junk, sizeof junk, MSG_DONTWAIT) > 0)
		;
	struct linger lg = { 1, LINGER_S };
	if (setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg))
		abort();
	return c;
}

/* Round 3 (see the top): a stranger's descriptor whose close blocks, as
 * CONFIG's ring with another cookie (BC_COOKIE), as the ring of a CONFIG
 * longer than any message (BC_CUT: cut, refused), or as the twelfth
 * descriptor of a CONFIG with another cookie (BC_MANY: more than a small
 * buffer would take; the kernel would drop and release the rest inside
 * recvmsg). */
enum { BC_COOKIE, BC_CUT, BC_MANY };
#define BC_MANY_FDS 12

static void blocking_close_round(int variant, pid_t pid, int to_host, int from_host,
                                 int to_forker, int from_forker)
{
	static const char *const names[] = { "another cookie", "a cut CONFIG",
	                                     "the 12th descriptor" };
	static const char *const want[] = { "cookie", "receive CONFIG", "cookie" };
	const char *what = names[variant];
	struct ha_session s;
	char err[600] = "";
	ha_session_init(&s);
	if (ha_session_open(&s, pid, getuid(), getgid(), 1, 1u << 20, 1, err, sizeof err)) {
		EXPECT(0, "%s: cannot open a session: %s", what, err);
		ha_session_close(&s);
		return;
	}
	struct ha_init_args a;
	struct ha_msg_config cfg;
	session_args(&s, 0, &a, &cfg);
	if (variant != BC_CUT)
		cfg.cookie[5] ^= 0xa5;
	int peer, sock = lingering_socket(&peer);
	int fds[BC_MANY_FDS], nfds = 1, pp[2];
	fds[0] = sock;
	if (variant == BC_MANY) {
		if (pipe(pp))
			abort();
		for (nfds = 0; nfds < BC_MANY_FDS - 1; nfds++)
			fds[nfds] = pp[0];
		fds[nfds++] = sock;
	}
	if (write(to_host, &a, sizeof a) != (ssize_t)sizeof a)
		abort();
	/* The handshake by hand, up to HELLO: the agent then waits for
	 * CONFIG.  (The session's own steps would send CONFIG at once.) */
	struct pollfd p = { .fd = s.listen_fd, .events = POLLIN };
	int conn = poll(&p, 1, 10000) == 1 ? accept4(s.listen_fd, NULL, NULL, SOCK_CLOEXEC) : -1;
	struct ha_msg m;
	p = (struct pollfd){ .fd = conn, .events = POLLIN };
	ssize_t n = conn >= 0 && poll(&p, 1, 10000) == 1 ? recv(conn, &m, sizeof m, 0) : -1;
	if (n <= 0 || m.type != HA_MSG_HELLO) {
		EXPECT(0, "%s: no HELLO (%zd)", what, n);
		exit(UNIT_RESULT(""));
	}
	/* CONFIG goes out while the host is stopped, and our copy of the
	 * socket is closed before the agent can take its own: the agent's
	 * close is the last, the one that lingers. */
	double t_end = ha_now_ms() + 10000;
	kill(pid, SIGSTOP);
	while (!stopped(pid) && ha_now_ms() < t_end)
		sched_yield();
	ha_msg_init(&m, HA_MSG_CONFIG);
	m.u.config = cfg;
	m.u.config.ring_size = 1u << 20;
	m.u.config.rings = 1;
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * BC_MANY_FDS)];
	} cb;
	static char longer[sizeof m + 64];
	memcpy(longer, &m, sizeof m);
	struct iovec iov = { longer, variant == BC_CUT ? sizeof longer : sizeof m };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cb.buf,
	                     .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	EXPECT(sendmsg(conn, &mh, 0) == (ssize_t)iov.iov_len, "%s: cannot send CONFIG", what);
	close(sock);
	if (variant == BC_MANY) {
		close(pp[0]);
		close(pp[1]);
	}
	kill(pid, SIGCONT);
	while (!in_close(pid) && ha_now_ms() < t_end)
		sched_yield();
	double t_close = ha_now_ms();
	EXPECT(in_close(pid), "%s: the agent was never seen in close()", what);
	/* A fork() of the host's while the agent is in that close. */
	double fork_ms = -1;
	if (write(to_forker, "f", 1) != 1 ||
	    read(from_forker, &fork_ms, sizeof fork_ms) != (ssize_t)sizeof fork_ms)
		abort();
	double fork_end = ha_now_ms() - t_close;
	/* The agent's ERROR comes once its close is over. */
	p = (struct pollfd){ .fd = conn, .events = POLLIN };
	n = poll(&p, 1, 10000) == 1 ? recv(conn, &m, sizeof m, 0) : -1;
	double close_ms = ha_now_ms() - t_close;
	int32_t result;
	if (read(from_host, &result, sizeof result) != (ssize_t)sizeof result)
		abort();
	m.u.error.text[sizeof m.u.error.text - 1] = '\0';
	EXPECT(n > 0 && m.type == HA_MSG_ERROR && strstr(m.u.error.text, want[variant]),
	       "%s: no ERROR naming '%s' (%zd, type %d: %s)", what, want[variant], n,
	       n > 0 ? m.type : -1, n > 0 ? m.u.error.text : "");
	/* The close did block (else this round shows nothing), and fork()
	 * did not wait for it. */
	EXPECT(close_ms >= LINGER_S * 1000 * 0.6,
	       "%s: the agent's ERROR came %.0f ms after its close began (no linger?)", what,
	       close_ms);
	EXPECT(fork_end < close_ms - LINGER_S * 1000 * 0.25,
	       "%s: the host's fork() was over %.0f ms after the close began, not "
	       "during it (%.0f ms)", what, fork_end, close_ms);
	EXPECT(fork_ms >= 0 && fork_ms < LINGER_S * 1000 * 0.5,
	       "%s: the host's fork() took %.0f ms while the agent closed the "
	       "stranger's descriptor (%.0f ms)", what, fork_ms, close_ms);
	printf("%s: the agent's close took %.0f ms, the host's fork() meanwhile %.1f "
	       "ms; %s\n", what, close_ms, fork_ms, n > 0 ? m.u.error.text : "");
	close(conn);
	close(peer);
	ha_session_close(&s);
}

/* A host of the agent, in a pid namespace of its own if pidns: its pid in
 * ours into *pid.  Its stdin and stdout are the two pipes' ends. */
static pid_t start_host(const char *agent, int pidns, int *to_host, int *from_host,
                        int *to_forker, int *from_forker)
{
	int down[2], up[2], fdown[2], fup[2];
	if (pipe(down) || pipe(up) || pipe(fdown) || pipe(fup))
		abort();
	pid_t child = fork();
	if (child < 0)
		abort();
	if (child == 0) {
		close(down[1]);
		close(up[0]);
		close(fdown[1]);
		close(fup[0]);
		fork_in = fdown[0];
		fork_out = fup[1];
		if (!pidns)
			agent_host(agent, down[0], up[1]);
		/* The host is the child of ours in the new namespace: pid 1. */
		if (unshare(CLONE_NEWPID) != 0) {
			fprintf(stderr, "cookie_check: unshare(CLONE_NEWPID): %s\n", strerror(errno));
			_exit(77);
		}
		pid_t g = fork();
		if (g == 0)
			agent_host(agent, down[0], up[1]);
		int32_t gp = (int32_t)g;
		if (g < 0 || write(up[1], &gp, sizeof gp) != (ssize_t)sizeof gp)
			_exit(2);
		close(down[0]);
		close(up[1]);
		int st;
		_exit(waitpid(g, &st, 0) == g && WIFEXITED(st) ? WEXITSTATUS(st) : 2);
	}
	close(down[0]);
	close(up[1]);
	close(fdown[0]);
	close(fup[1]);
	*to_host = down[1];
	*from_host = up[0];
	*to_forker = fdown[1];
	*from_forker = fup[0];
	if (pidns) {
		int32_t gp;
		if (read(up[0], &gp, sizeof gp) != (ssize_t)sizeof gp)
			return -child; /* it could not make the namespace */
		return (pid_t)gp;
	}
	return child;
}

/* Both rounds with one host; pid is its pid in ours, own_pid in its own. */
static void rounds(const char *what, pid_t pid, pid_t own_pid, uint32_t flags, int to_host,
                   int from_host)
{
	char err[600];
	int mapped;
	int32_t result;
	int rc = round_trip(pid, own_pid, to_host, from_host, flags, 1, err, sizeof err, &result,
	                    &mapped);
	EXPECT(rc == -1, "%s, another cookie: handshake %d (%s)", what, rc, err);
	EXPECT(rc != -1 || strstr(err, "cookie"),
	       "%s, another cookie: the refusal does not name the cookie: %s", what, err);
	EXPECT(result == HA_INIT_FAILED || result == HA_INIT_STARTED,
	       "%s, another cookie: init returned %d", what, result);
	EXPECT(!mapped, "%s, another cookie: the ring stayed mapped", what);
	printf("%s, another cookie: %s\n", what, err);

	rc = round_trip(pid, own_pid, to_host, from_host, flags, 0, err, sizeof err, &result,
	                &mapped);
	EXPECT(rc == 0, "%s, the right cookie: handshake or detach failed (%d): %s", what, rc, err);
	EXPECT(result == HA_INIT_STARTED, "%s, the right cookie: init returned %d", what, result);
	EXPECT(mapped, "%s, the right cookie: the ring was not mapped during the session", what);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cookie_check AGENT.so\n");
		return 2;
	}
	int to_host, from_host, to_forker, from_forker, st;

	pid_t host = start_host(argv[1], 0, &to_host, &from_host, &to_forker, &from_forker);
	rounds("in our pid namespace", host, 0, 0, to_host, from_host);
	for (int v = BC_COOKIE; v <= BC_MANY; v++)
		blocking_close_round(v, host, to_host, from_host, to_forker, from_forker);
	close(to_host);
	close(from_host);
	close(to_forker);
	close(from_forker);
	EXPECT(waitpid(host, &st, 0) == host && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the agent's host did not exit cleanly (%#x)", st);

	host = start_host(argv[1], 1, &to_host, &from_host, &to_forker, &from_forker);
	if (host < 0) {
		waitpid(-host, &st, 0);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			printf("skip: no pid namespace here\n");
			return 77;
		}
		EXPECT(0, "the namespaced host did not start (%#x)", st);
		return UNIT_RESULT("");
	}
	rounds("as pid 1 of a pid namespace of its own", host, 1, HA_INIT_PEER_OUTSIDE, to_host,
	       from_host);
	close(to_host);
	close(from_host);
	close(to_forker);
	close(from_forker);
	/* Its parent (our child) waits for it and exits with its status. */
	EXPECT(waitpid(-1, &st, 0) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the namespaced agent's host did not exit cleanly (%#x)", st);
	return UNIT_RESULT("another cookie refused before the descriptor was looked at, the right one "
	                   "attached and detached, in our pid namespace and as pid 1 of another; "
	                   "a fork() of the host meanwhile the agent's blocking close of a stranger's "
	                   "descriptor");
}
