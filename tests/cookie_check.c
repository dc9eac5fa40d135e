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
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ha_proto.h"
#include "session.h"
#include "unit.h"

/* The child: for each struct ha_init_args read from in, init the agent
 * with it and write back init's result (args.result). */
static void agent_host(const char *agent, int in, int out)
{
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
	struct ha_init_args a = { .magic = HA_PROTO_MAGIC, .version = HA_PROTO_VERSION,
	                          .attacher_pid = (int32_t)getpid(),
	                          .attacher_uid = (uint32_t)geteuid(), .flags = args_flags };
	snprintf(a.sock_path, sizeof a.sock_path, "%s", s.sock_target);
	struct ha_msg_config cfg = { .sample_interval = 512u << 10, .stack_bytes = 64u << 10 };
	if (getrandom(a.cookie, sizeof a.cookie, 0) != (ssize_t)sizeof a.cookie)
		abort();
	memcpy(cfg.cookie, a.cookie, sizeof cfg.cookie);
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

/* A host of the agent, in a pid namespace of its own if pidns: its pid in
 * ours into *pid.  Its stdin and stdout are the two pipes' ends. */
static pid_t start_host(const char *agent, int pidns, int *to_host, int *from_host)
{
	int down[2], up[2];
	if (pipe(down) || pipe(up))
		abort();
	pid_t child = fork();
	if (child < 0)
		abort();
	if (child == 0) {
		close(down[1]);
		close(up[0]);
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
	*to_host = down[1];
	*from_host = up[0];
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
	int to_host, from_host, st;

	pid_t host = start_host(argv[1], 0, &to_host, &from_host);
	rounds("in our pid namespace", host, 0, 0, to_host, from_host);
	close(to_host);
	close(from_host);
	EXPECT(waitpid(host, &st, 0) == host && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the agent's host did not exit cleanly (%#x)", st);

	host = start_host(argv[1], 1, &to_host, &from_host);
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
	/* Its parent (our child) waits for it and exits with its status. */
	EXPECT(waitpid(-1, &st, 0) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the namespaced agent's host did not exit cleanly (%#x)", st);
	return UNIT_RESULT("another cookie refused before the descriptor was looked at, the right one "
	                   "attached and detached, in our pid namespace and as pid 1 of another");
}
