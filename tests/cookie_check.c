/* cookie_check -- the agent maps the ring of a peer that knows the
 * session's cookie only (ha_init_args.cookie, ha_msg_config.cookie).
 *
 *   cookie_check AGENT.so
 *
 * A child loads the real agent and calls its init, as an injection would,
 * with the arguments this process hands it through a pipe; this process
 * is the attacher, with the attacher's own session code (src/attach/
 * session.c).  Three rounds:
 *  1. CONFIG with another cookie: the handshake fails with the agent's
 *     ERROR naming the cookie, and the child never maps the ring;
 *  2. the same, with HA_INIT_PEER_OUTSIDE set in the child's arguments
 *     (its SO_PEERCRED check of pid 0 fails first: the attacher of this
 *     test is in the child's pid namespace): the session still fails and
 *     nothing is mapped;
 *  3. the right cookie: READY, then a clean detach.
 * The child is the agent's host only: its own code does nothing else.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	struct ha_init_args a;
	while (read(in, &a, sizeof a) == (ssize_t)sizeof a) {
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

/* One session with the child: its init gets args_flags and the cookie
 * drawn here; CONFIG carries that cookie, or another one if wrong.
 * Returns the handshake's result (0 or -1), err filled. */
static int round_trip(pid_t child, int to_child, int from_child, uint32_t args_flags, int wrong,
                      char *err, size_t errlen, int *mapped)
{
	struct ha_session s;
	ha_session_init(&s);
	if (ha_session_open(&s, child, getuid(), getgid(), 1, 1u << 20, 1, err, errlen)) {
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
	if (wrong)
		cfg.cookie[3] ^= 0x5a;
	ha_session_handshake_begin(&s, &cfg);
	if (write(to_child, &a, sizeof a) != (ssize_t)sizeof a)
		abort();
	int rc = ha_session_handshake(&s, 5000, err, errlen);
	int32_t result;
	if (read(from_child, &result, sizeof result) != (ssize_t)sizeof result)
		abort();
	*mapped = ring_mapped(child);
	if (rc == 0) {
		struct ha_counters fin;
		char derr[256];
		if (ha_session_detach(&s, 5000, &fin, derr, sizeof derr) != 0) {
			snprintf(err, errlen, "detach: %s", derr);
			rc = -3;
		}
	}
	ha_session_close(&s);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cookie_check AGENT.so\n");
		return 2;
	}
	int down[2], up[2];
	if (pipe(down) || pipe(up))
		return 2;
	pid_t child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		close(down[1]);
		close(up[0]);
		agent_host(argv[1], down[0], up[1]);
	}
	close(down[0]);
	close(up[1]);

	char err[600];
	int mapped;
	int rc = round_trip(child, down[1], up[0], 0, 1, err, sizeof err, &mapped);
	EXPECT(rc == -1, "a CONFIG with another cookie: handshake %d (%s)", rc, err);
	EXPECT(rc != -1 || strstr(err, "cookie"), "the refusal does not name the cookie: %s", err);
	EXPECT(!mapped, "the agent mapped the ring of a CONFIG with another cookie");
	printf("wrong cookie: %s\n", err);

	rc = round_trip(child, down[1], up[0], HA_INIT_PEER_OUTSIDE, 1, err, sizeof err, &mapped);
	EXPECT(rc == -1, "peer outside, wrong cookie: handshake %d (%s)", rc, err);
	EXPECT(!mapped, "peer outside, wrong cookie: the agent mapped the ring");
	printf("peer outside, wrong cookie: %s\n", err);

	rc = round_trip(child, down[1], up[0], 0, 0, err, sizeof err, &mapped);
	EXPECT(rc == 0, "the right cookie: handshake or detach failed (%d): %s", rc, err);
	EXPECT(mapped, "the right cookie: the ring was not mapped during the session");

	close(down[1]);
	int st;
	EXPECT(waitpid(child, &st, 0) == child && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	       "the agent's host did not exit cleanly (%#x)", st);
	return UNIT_RESULT("another cookie refused (the ring never mapped), twice; the right one attached and detached");
}
