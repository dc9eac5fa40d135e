/*
 * agent.c -- the injected agent: init entry point, agent thread, session
 * protocol (src/proto/ha_proto.h) and fork handling.
 *
 * heapattach_agent_init() runs on a hijacked thread of the target: it checks
 * the arguments, claims the state word (DORMANT -> STARTING), copies the
 * arguments, connects to the attacher, checks SO_PEERCRED and sends HELLO.
 * The attacher answers at once from its injector thread, so init waits a
 * little (HA_INIT_WAIT_MS) for CONFIG and, when it comes, completes the
 * handshake right there: map the ring, resolve the real allocator
 * functions, patch the GOT, ACTIVE, READY.  That thread is on a CPU already;
 * a new thread on a busy machine waits tens of ms for its first time slice,
 * so the handshake is no longer on that path.  Only then is the agent thread
 * started (every signal blocked), to wait for DETACH or a hang-up while it
 * patches newly loaded modules once a second; then restore the GOT, unmap
 * the ring, DETACHED, close, DORMANT, exit.  If CONFIG does not come in time, the agent thread takes over the
 * rest of the handshake and init returns.  No stdio, no allocation of ours
 * (pthread_create allocates the thread's TLS and the first call registers
 * the atfork handlers; both are glibc's); nothing waits for longer than
 * HA_INIT_WAIT_MS or a send timeout, and no lock is taken that a thread of
 * the program may hold for long (the fork lock is held only around short
 * calls, and the hijacked thread is never inside fork()).  Every step of the
 * handshake has a timeout.  On failure: clean up everything, send ERROR
 * when the peer is the attacher and the socket is up, DORMANT.
 *
 * This is the top of the agent's chain of modules (tls.h draws it): it
 * includes everything below, nothing includes it.  Its messages go
 * through msg.c.
 *
 * fork(): a pthread_atfork child handler restores the GOT in the child's
 * memory, forgets the ring (mapped MADV_DONTFORK, so the child never had it)
 * and closes the socket; the prepare handler takes the fork lock so that the
 * child never sees a half-patched table, a half-made mapping or our thread
 * inside dl_iterate_phdr.
 */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "counters.h"
#include "forklock.h"
#include "got.h"
#include "imports.h"
#include "ha_proto.h"
#include "ha_ring_map.h"
#include "msg.h"
#include "pymem.h"
#include "pywalk.h"
#include "resolve.h"
#include "slices.h"
#include "trim.h"
#include "sampler.h"
#include "tls.h"

#define HA_HANDSHAKE_TIMEOUT_S 5
#define HA_INIT_WAIT_MS 100          /* init waits this long for CONFIG */
#define HA_INIT_SEND_TIMEOUT_MS 1000 /* connect and sends on the hijacked thread */
#define HA_TICK_MS 1000              /* look for newly loaded modules */
#define HA_AGENT_STACK ((size_t)256 * 1024)

/* ------------------------------------------------------------------ */
/* Exported state                                                      */
/* ------------------------------------------------------------------ */

struct ha_agent_state heapattach_agent_state = {
	.magic = HA_PROTO_MAGIC,
	.version = HA_PROTO_VERSION,
	.state = HA_STATE_DORMANT,
	.attacher_pid = 0,
	.sessions = 0,
};

static void set_state(uint32_t s)
{
	__atomic_store_n(&heapattach_agent_state.state, s, __ATOMIC_RELEASE);
}

static uint32_t get_state(void)
{
	return __atomic_load_n(&heapattach_agent_state.state, __ATOMIC_ACQUIRE);
}

/* ------------------------------------------------------------------ */
/* Session resources                                                   */
/* ------------------------------------------------------------------ */

/* Copy of the init arguments: written by init while the state is STARTING
 * and before the thread exists, read by the thread. */
static struct ha_init_args g_args;

/* Changed only under the fork lock, so a fork() child sees all or nothing. */
static int g_sock = -1;           /* connected socket */
static int g_ring_fd = -1;        /* memfd between recvmsg and close */
static dev_t g_sock_dev, g_ring_dev;  /* identity of those two, for a   */
static ino_t g_sock_ino, g_ring_ino;  /* child that must verify them    */
static pid_t g_owner_pid;         /* process of the session, 0 if none */
static void *g_ring;              /* mapping (header first), or NULL */
static uint64_t g_ring_data;      /* each ring's data_size */
static uint32_t g_ring_count;     /* rings in the mapping (ha_ring_map.h) */
static int g_ring_inherited;      /* MADV_DONTFORK failed: a child has it */
static struct ha_msg_config g_cfg;

static int g_atfork_once;       /* ha_once */
static int g_atfork_ok;

/* Close a session descriptor: forget it first (under the lock), then close,
 * so that no fork child ever closes a number the host reused meanwhile. */
static void close_fd(int *fdp)
{
	ha_fork_lock();
	int fd = *fdp;
	*fdp = -1;
	if (fd >= 0)
		(void)close(fd);  /* Linux releases the fd even on EINTR */
	ha_fork_unlock();
}

/* Close a descriptor a peer not yet known to be the attacher passed:
 * forgotten under the lock, closed after it -- its file may block the
 * close (a FUSE file's flush waits for its server), and every fork() of
 * the host would wait with it.  A fork() in between leaves the child a
 * copy, closed at its exec (MSG_CMSG_CLOEXEC). */
static void close_foreign_fd(int *fdp)
{
	ha_fork_lock();
	int fd = *fdp;
	*fdp = -1;
	ha_fork_unlock();
	if (fd >= 0)
		(void)close(fd);
}

/* Forget the ring mapping (unmapped, lost to the program, or never in
 * this fork() child).  Under the fork lock. */
static void ring_forget(void)
{
	g_ring = NULL;
	g_ring_data = 0;
	g_ring_inherited = 0;
}

/* Unmap [lo, hi) of our ring mapping if it is not empty. */
static void unmap_part(uintptr_t lo, uintptr_t hi)
{
	if (lo < hi)
		(void)munmap((void *)lo, hi - lo);
}

static void ring_unmap(void)
{
	uintptr_t lo = 0, hi = 0;
	ha_fork_lock();
	int lost = ha_sampler_ring_lost(&lo, &hi);
	if (g_ring && lost) {
		/* The program unmapped, moved or mapped over part of it: that
		 * part is the program's now.  The rest, when we know it, is
		 * still ours to unmap. */
		uintptr_t r0 = (uintptr_t)g_ring, r1 = r0 + ha_rings_map_len(g_ring_data, g_ring_count);
		if (lost == HA_RING_TAKEN_ONCE) {
			unmap_part(r0, lo < r1 ? lo : r1);
			unmap_part(hi > r0 ? hi : r0, r1);
		}
		ring_forget();
	}
	if (g_ring) {
		ha_ring_unmap(g_ring, g_ring_data, g_ring_count);
		ring_forget();
	}
	ha_fork_unlock();
}

/* ------------------------------------------------------------------ */
/* fork                                                                */
/* ------------------------------------------------------------------ */

static void atfork_prepare(void)
{
	int e = errno;
	ha_fork_lock();
	errno = e;
}

static void atfork_parent(void)
{
	int e = errno;
	ha_fork_unlock();
	errno = e;
}

/* Close *fdp.  verify: only if it is still the file we recorded (a child
 * whose atfork handler did not run may have reused the number). */
static void child_close(int *fdp, dev_t dev, ino_t ino, int verify)
{
	int fd = *fdp;
	struct stat st;
	*fdp = -1;
	if (fd < 0)
		return;
	if (verify && (ino == 0 || ha_fstat(fd, &st) != 0 || st.st_dev != dev || st.st_ino != ino))
		return;
	(void)close(fd);
}

/* Forget the session of the parent in a fork() child: the agent thread does
 * not exist here.  verify: we are not in the atfork handler but in a later
 * init (see heapattach_agent_init), so the child has run arbitrary code
 * since the fork: check before closing, never unmap. */
static void forget_parent_session(int verify)
{
	ha_sampler_fork_child();
	ha_got_restore_child();
	if (g_ring) {
		/* Normally MADV_DONTFORK kept it out of the child. */
		if (g_ring_inherited && !verify)
			ha_ring_unmap(g_ring, g_ring_data, g_ring_count);
		ring_forget();
	}
	child_close(&g_ring_fd, g_ring_dev, g_ring_ino, verify);
	child_close(&g_sock, g_sock_dev, g_sock_ino, verify);
	g_owner_pid = 0;
	heapattach_agent_state.attacher_pid = 0;
	set_state(HA_STATE_DORMANT);
}

/* In the child: one thread (the one that called fork), no agent thread.
 * The fork lock was taken by that thread's prepare handler, so the table,
 * the descriptors and the mapping are in a consistent state. */
static void atfork_child(void)
{
	int e = errno;
	if (get_state() != HA_STATE_DORMANT)
		forget_parent_session(0);
	ha_fork_unlock();
	errno = e;
}

static void register_atfork_once(void)
{
	g_atfork_ok = pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0;
}

static void register_atfork(void)
{
	ha_once(&g_atfork_once, register_atfork_once);
}

/* Register the fork handlers at dlopen time, long before init can start a
 * session: glibc runs neither the prepare nor the child handler of a
 * registration that happened while that fork() was already under way. */
__attribute__((constructor)) static void agent_ctor(void)
{
	register_atfork();
}

/* ------------------------------------------------------------------ */
/* Messages                                                            */
/* ------------------------------------------------------------------ */

static void fill_counters(struct ha_counters *c)
{
	memset(c, 0, sizeof *c);
	uint64_t frees, untracked;
	ha_counters_read(c);
	ha_got_counts(&c->slots_patched, &c->modules_patched);
	ha_sampler_counters(&c->samples, &frees, &untracked);
	/* Samples not taken because the ring was full, or because the live set
	 * had no room for the block, are both drops. */
	c->drops = untracked;
	if (g_ring && !ha_sampler_ring_lost(NULL, NULL))
		c->drops += ha_rings_drops(g_ring, g_ring_data, g_ring_count);
}

static int send_counters(int fd, uint16_t type)
{
	struct ha_msg m;
	ha_msg_init(&m, type);
	fill_counters(&m.u.counters);
	return ha_msg_send(fd, &m);
}

/* ------------------------------------------------------------------ */
/* Handshake steps                                                     */
/* ------------------------------------------------------------------ */

struct failure {
	int code;
	const char *what;
	char detail[64];
};

static int fail(struct failure *f, int code, const char *what)
{
	f->code = code < 0 ? -code : code;
	f->what = what;
	return -1;
}

/* Bound connect() and every send on g_sock to ms (receives wait in poll). */
static int set_send_timeout(int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000L };
	return setsockopt(g_sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

static int connect_attacher(struct failure *f, int *verified, int send_timeout_ms)
{
	struct sockaddr_un sa;
	socklen_t salen;
	size_t len;

	memset(&sa, 0, sizeof sa);
	sa.sun_family = AF_UNIX;
	if (g_args.sock_path[0] == '\0') {
		/* Abstract name: '\0' then the name, NUL-terminated in the array. */
		len = strnlen(g_args.sock_path + 1, sizeof g_args.sock_path - 1);
		if (len == 0 || len + 1 > sizeof sa.sun_path)
			return fail(f, EINVAL, "bad socket name");
		memcpy(sa.sun_path, g_args.sock_path, len + 1);
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	} else {
		len = strnlen(g_args.sock_path, sizeof g_args.sock_path);
		if (len >= sizeof sa.sun_path)
			return fail(f, ENAMETOOLONG, "socket path too long");
		memcpy(sa.sun_path, g_args.sock_path, len);
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
	}

	ha_fork_lock();
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int err = errno;
	if (fd >= 0) {
		struct stat st;
		g_sock = fd;
		g_sock_dev = 0;
		g_sock_ino = 0;
		if (ha_fstat(fd, &st) == 0) {
			g_sock_dev = st.st_dev;
			g_sock_ino = st.st_ino;
		}
	}
	ha_fork_unlock();
	if (fd < 0)
		return fail(f, err, "socket");

	if (set_send_timeout(send_timeout_ms) != 0)
		return fail(f, errno, "setsockopt");
	if (connect(fd, (const struct sockaddr *)&sa, salen) != 0)
		return fail(f, errno, "connect");

	struct ucred cred;
	socklen_t clen = sizeof cred;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || clen != sizeof cred)
		return fail(f, errno ? errno : EPROTO, "SO_PEERCRED");
	/* An attacher outside our pid namespace has no pid here: 0, as every
	 * process outside shows; the cookie in CONFIG then tells it from
	 * them (recv_config). */
	int32_t peer = g_args.flags & HA_INIT_PEER_OUTSIDE ? 0 : g_args.attacher_pid;
	if (cred.pid != peer)
		return fail(f, EPERM, "peer is not the attacher");
	*verified = 1;
	return 0;
}

static int send_hello(struct failure *f)
{
	struct ha_msg m;
	ha_msg_init(&m, HA_MSG_HELLO);
	m.u.hello.pid = (int32_t)getpid();
	m.u.hello.agent_version = HA_PROTO_VERSION;
	m.u.hello.sessions = __atomic_load_n(&heapattach_agent_state.sessions, __ATOMIC_RELAXED);
	int r = ha_msg_send(g_sock, &m);
	return r ? fail(f, r, "send HELLO") : 0;
}

/* Read the ring header through process_vm_readv: a memfd shrunk under us
 * makes the read fail instead of raising SIGBUS in the host. */
static int read_ring_hdr(const void *ring, struct ha_ring_hdr *h)
{
	struct iovec local = { h, sizeof *h };
	struct iovec remote = { (void *)ring, sizeof *h };
	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof *h ? 0 : -1;
}

static int recv_config(struct failure *f, int timeout_ms)
{
	struct ha_msg m;
	ssize_t n = ha_msg_recv(g_sock, &m, &g_ring_fd, timeout_ms);
	int rfd = g_ring_fd;

	if (n == 0)
		return fail(f, ECONNRESET, "attacher closed before CONFIG");
	if (n < 0)
		return fail(f, (int)-n, n == -EAGAIN ? "timeout waiting for CONFIG" : "receive CONFIG");
	if (!ha_msg_valid(&m, n) || m.type != HA_MSG_CONFIG) {
		close_foreign_fd(&g_ring_fd);
		return fail(f, EPROTO, "expected CONFIG");
	}
	if (rfd < 0)
		return fail(f, EPROTO, "CONFIG without ring descriptor");
	/* Only the process that wrote our arguments knows the cookie: where
	 * SO_PEERCRED cannot name the attacher (HA_INIT_PEER_OUTSIDE), this
	 * is what does, and nothing of the peer's is mapped before it (nor
	 * is its descriptor closed under the fork lock). */
	uint8_t diff = 0;
	for (size_t i = 0; i < sizeof g_args.cookie; i++)
		diff |= (uint8_t)(m.u.config.cookie[i] ^ g_args.cookie[i]);
	if (diff) {
		close_foreign_fd(&g_ring_fd);
		return fail(f, EPERM, "CONFIG without the session's cookie");
	}

	g_cfg = m.u.config;
	long ps = sysconf(_SC_PAGESIZE);
	if (ps <= 0)
		ps = 4096;
	uint32_t rings = g_cfg.rings;
	if (!ha_rings_ok(rings))
		return fail(f, EINVAL, "bad ring count");
	if (g_cfg.ring_size % rings || g_cfg.ring_size / rings <= HA_RING_HDR_SIZE)
		return fail(f, EINVAL, "ring too small");
	uint64_t data_size = g_cfg.ring_size / rings - HA_RING_HDR_SIZE;
	if (!ha_ring_size_ok(data_size) || data_size % (uint64_t)ps != 0 ||
	    HA_RING_HDR_SIZE % (uint64_t)ps != 0)
		return fail(f, EINVAL, "bad ring size");

	struct stat st;
	if (ha_fstat(rfd, &st) != 0)
		return fail(f, errno, "fstat ring");
	ha_fork_lock();
	g_ring_dev = st.st_dev;
	g_ring_ino = st.st_ino;
	ha_fork_unlock();
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size != g_cfg.ring_size)
		return fail(f, EINVAL, "ring descriptor size mismatch");

	ha_fork_lock();
	void *ring = ha_ring_map(rfd, data_size, rings);
	int err = errno;
	if (ring != MAP_FAILED) {
		g_ring = ring;
		g_ring_data = data_size;
		g_ring_count = rings;
		/* Keep the rings out of fork() children altogether. */
		g_ring_inherited =
			madvise(ring, ha_rings_map_len(data_size, rings), MADV_DONTFORK) != 0;
	}
	ha_fork_unlock();
	if (ring == MAP_FAILED)
		return fail(f, err, "map ring");

	for (uint32_t i = 0; i < rings; i++) {
		struct ha_ring_hdr h;
		if (read_ring_hdr(ha_ring_at(ring, data_size, i), &h) != 0)
			return fail(f, EFAULT, "read ring header");
		if (h.magic != HA_RING_MAGIC || h.version != HA_PROTO_VERSION ||
		    h.data_size != data_size)
			return fail(f, EPROTO, "bad ring header");
	}

	close_fd(&g_ring_fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The agent thread                                                    */
/* ------------------------------------------------------------------ */

enum end_reason { END_DETACH, END_HANGUP, END_RING_LOST };


/* Serve the attacher until DETACH or hang-up: no other message is
 * expected; modules loaded meanwhile are patched once a second. */
static enum end_reason serve(void)
{
	for (;;) {
		struct pollfd p = { .fd = g_sock, .events = POLLIN, .revents = 0 };
		/* Sooner while the wrap of CPython's allocators waits: the
		 * attacher learns it is in place within 0.1 s of it. */
		int r = poll(&p, 1, ha_pymem_state() == HA_PYW_WAITING ? HA_TICK_MS / 10 : HA_TICK_MS);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return END_HANGUP;
		}
		if (r == 0) {
			/* The program took the ring away (sampler.h): no session
			 * without it. */
			if (ha_sampler_ring_lost(NULL, NULL))
				return END_RING_LOST;
			/* Modules loaded since: patch them (no-op if none). */
			(void)ha_got_patch();
			ha_pymem_publish(g_ring);
			continue;
		}
		if (p.revents & POLLIN) {
			struct ha_msg m;
			/* Nothing after CONFIG carries a descriptor: close any. */
			ssize_t n = ha_msg_recv(g_sock, &m, NULL, 0);
			if (n == 0)
				return END_HANGUP;
			if (n < 0) {
				if (n == -EAGAIN || n == -EWOULDBLOCK || n == -EMSGSIZE)
					continue;
				return END_HANGUP;
			}
			if (!ha_msg_valid(&m, n))
				continue;  /* not a message of ours: ignore */
			switch (m.type) {
			case HA_MSG_DETACH:
				return END_DETACH;
			case HA_MSG_TRIM:
			case HA_MSG_ALLOC_ASK:
				ha_alloc_serve(g_sock, &m);
				break;
			default:
				ha_msg_send_error(g_sock, EPROTO, "unexpected message", NULL);
				break;
			}
			continue;
		}
		if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
			return END_HANGUP;
	}
}

/* Undo everything of the session; reply with `reply` (DETACHED) or an error
 * if the socket is still up; the state goes DORMANT last. */
static void end_session(uint16_t reply, const struct failure *f)
{
	set_state(HA_STATE_STOPPING);
	ha_got_restore();
	/* Threads may still be inside a hook: no ring write after this. */
	ha_sampler_stop();
	ha_pymem_stop();
	/* The final counters, while the ring (and its drop count) is mapped. */
	struct ha_msg m;
	ha_msg_init(&m, reply);
	fill_counters(&m.u.counters);
	ring_unmap();
	close_fd(&g_ring_fd);
	if (g_sock >= 0) {
		if (f)
			ha_msg_send_error(g_sock, f->code, f->what, f->detail);
		else if (reply)
			(void)ha_msg_send(g_sock, &m);
	}
	close_fd(&g_sock);
	__atomic_store_n(&g_owner_pid, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&heapattach_agent_state.attacher_pid, 0, __ATOMIC_RELAXED);
	set_state(HA_STATE_DORMANT);
	/* From here on the next init may start a new session: touch nothing. */
}

/* After CONFIG: resolve the real allocator functions, start sampling into
 * the ring, patch the GOT; ACTIVE.  0 or -1 with *f set. */
static int activate(struct failure *f)
{
	if (ha_resolve_real(f->detail, sizeof f->detail) != 0)
		return fail(f, ENOENT, "resolve allocator");
	struct ha_sampler_cfg scfg = {
		.ring = g_ring,
		.data_size = g_ring_data,
		.rings = g_ring_count,
		.interval = g_cfg.sample_interval == 0 ? 1
		          : g_cfg.sample_interval > HA_INTERVAL_MAX ? HA_INTERVAL_MAX
		                                                    : g_cfg.sample_interval,
		/* A record must fit in half the ring with its header. */
		.stack_bytes = (uint32_t)(g_cfg.stack_bytes < g_ring_data / 4 ? g_cfg.stack_bytes
		                                                               : g_ring_data / 4),
		.block = (g_cfg.flags & HA_CFG_BLOCK) != 0,
		.py = g_cfg.py,
	};
	ha_sampler_start(&scfg);
	int r = ha_got_patch();
	if (r != 0)
		return fail(f, r, "patch GOT");
	if (ha_pywalk_on() && !(g_cfg.flags & HA_CFG_PY_NO_WRAP))
		ha_pymem_start();
	ha_pymem_publish(g_ring);
	/* Handshake done.  From now on the loop polls (a quiet attacher is
	 * fine) and reads with MSG_DONTWAIT; SO_SNDTIMEO still bounds replies. */
	set_state(HA_STATE_ACTIVE);
	return 0;
}

/* The handshake's tail, after HELLO, on whichever thread has it (init's
 * or, when CONFIG was late, the agent thread's): CONFIG within timeout_ms,
 * activate, READY.  0, or -1 with the session ended (an ERROR sent when
 * the attacher is still there to read it). */
static int finish_handshake(struct failure *f, int timeout_ms)
{
	if (recv_config(f, timeout_ms) != 0 || activate(f) != 0) {
		end_session(0, f);
		return -1;
	}
	if (send_counters(g_sock, HA_MSG_READY) != 0) {
		end_session(0, NULL);  /* attacher gone: nobody to tell */
		return -1;
	}
	return 0;
}

/* What the agent thread starts with. */
enum agent_phase { PHASE_CONFIG, PHASE_SERVE };

static void *agent_main(void *arg)
{
	struct failure f;

	memset(&f, 0, sizeof f);
	/* The agent thread's own allocations are never the profile's business
	 * (the sampler samples only outside the guard). */
	ha_hook_guard = 1;
	/* Visible in top/ps as the agent; failure is harmless. */
	(void)prctl(PR_SET_NAME, "heapattach", 0, 0, 0);
	ha_ask_short_slices(g_args.flags);
	/* init used a shorter bound on the hijacked thread */
	(void)set_send_timeout(HA_HANDSHAKE_TIMEOUT_S * 1000);

	if ((enum agent_phase)(intptr_t)arg == PHASE_CONFIG) {
		/* init did not get CONFIG in time: the rest of the handshake */
		if (finish_handshake(&f, HA_HANDSHAKE_TIMEOUT_S * 1000) != 0)
			return NULL;
	}

	/* DETACH or hang-up: restore either way; DETACHED reaches the attacher
	 * only if it is still there (the send fails quietly otherwise). */
	if (serve() == END_RING_LOST) {
		/* Said to the attacher as an error, then the same end. */
		fail(&f, EFAULT, "the program unmapped or mapped over the ring");
		end_session(0, &f);
		return NULL;
	}
	end_session(HA_MSG_DETACHED, NULL);
	return NULL;
}

/* Start the agent thread with every signal blocked (it starts with the
 * creator's mask: block everything around the creation).  No signal of the
 * host is ever delivered to it.  0 or an error number. */
static int start_thread(enum agent_phase phase)
{
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc != 0)
		return rc;
	if (pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) != 0 ||
	    ha_imp.pthread_attr_setstacksize(&attr, HA_AGENT_STACK) != 0)
		rc = EINVAL;
	if (rc == 0) {
		sigset_t all, old;
		sigfillset(&all);
		/* sigprocmask is this thread's mask in glibc (as pthread_sigmask,
		 * which is libpthread's before 2.32), minus glibc's own signals */
		rc = sigprocmask(SIG_SETMASK, &all, &old) == 0 ? 0 : errno;
		if (rc == 0) {
			pthread_t tid;
			rc = ha_imp.pthread_create(&tid, &attr, agent_main, (void *)(intptr_t)phase);
			(void)sigprocmask(SIG_SETMASK, &old, NULL);
		}
	}
	(void)pthread_attr_destroy(&attr);
	return rc;
}

/* The agent thread started for phase: HA_INIT_STARTED; or, when it cannot
 * be, the session ended (the ERROR says pthread_create) and
 * HA_INIT_NOTHREAD. */
static int start_agent(enum agent_phase phase, struct failure *f)
{
	int rc = start_thread(phase);
	if (rc == 0)
		return HA_INIT_STARTED;
	fail(f, rc, "pthread_create");
	end_session(0, f);
	return HA_INIT_NOTHREAD;
}

/* The session from init, on the hijacked thread (see the top of the file).
 * A HA_INIT_* code. */
static int init_session(void)
{
	struct failure f;
	int verified = 0, rc;

	memset(&f, 0, sizeof f);
	ha_counters_reset();
	ha_got_session_start();
	if (connect_attacher(&f, &verified, HA_INIT_SEND_TIMEOUT_MS) != 0 || send_hello(&f) != 0)
		goto failed;

	struct pollfd p = { .fd = g_sock, .events = POLLIN, .revents = 0 };
	do
		rc = poll(&p, 1, HA_INIT_WAIT_MS);
	while (rc < 0 && errno == EINTR);
	if (rc == 0) {
		/* The attacher is slow (or an older one, which answers only
		 * after init returned): leave the rest to the agent thread. */
		return start_agent(PHASE_CONFIG, &f);
	}
	/* Past connect_attacher, the peer is verified: a failure here is
	 * said to it (finish_handshake ends the session). */
	if (finish_handshake(&f, 0) != 0)
		return HA_INIT_FAILED;
	/* The thread only now: started before READY, it could end the
	 * session (a hang-up) while this thread still uses the socket.  A
	 * DETACH that comes meanwhile waits in the socket.  If it cannot be
	 * started, the attacher has READY and sees the ERROR as a hang-up;
	 * the process is restored before init returns. */
	return start_agent(PHASE_SERVE, &f);

failed:
	if (!verified)
		close_fd(&g_sock);  /* never talk to a stranger */
	end_session(0, &f);
	return HA_INIT_FAILED;
}

/* ------------------------------------------------------------------ */
/* Entry point                                                         */
/* ------------------------------------------------------------------ */

static int agent_init(const struct ha_init_args *args)
{
	if (!args || args->magic != HA_PROTO_MAGIC || args->version != HA_PROTO_VERSION)
		return HA_INIT_BADARGS;

	/* What the agent takes from the target's own libc (imports.h). */
	const char *missing;
	if (ha_imports_init((uintptr_t)args->dlsym_addr, &missing) != 0)
		return HA_INIT_NOIMPORT;

	/* Normally done by the constructor already. */
	register_atfork();
	if (!g_atfork_ok)
		return HA_INIT_NOTHREAD;

	uint32_t expect = HA_STATE_DORMANT;
	if (!__atomic_compare_exchange_n(&heapattach_agent_state.state, &expect,
	                                 HA_STATE_STARTING, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		/* A session of another process: we are a fork() child that was
		 * forked while the handlers were being registered (glibc skips
		 * them for a fork already under way), so nobody cleaned up.  No
		 * agent thread exists here; the fork lock may have been copied
		 * locked.  (In the owner process g_owner_pid is its pid, or 0 for
		 * an instant after the claim: never another pid.) */
		pid_t owner = __atomic_load_n(&g_owner_pid, __ATOMIC_ACQUIRE);
		if (owner == 0 || owner == getpid())
			return HA_INIT_BUSY;
		if (ha_fork_lock_reinit() != 0)
			return HA_INIT_BUSY;
		ha_fork_lock();
		forget_parent_session(1);
		ha_fork_unlock();
		expect = HA_STATE_DORMANT;
		if (!__atomic_compare_exchange_n(&heapattach_agent_state.state, &expect,
		                                 HA_STATE_STARTING, 0, __ATOMIC_ACQ_REL,
		                                 __ATOMIC_ACQUIRE))
			return HA_INIT_BUSY;
	}
	__atomic_store_n(&g_owner_pid, getpid(), __ATOMIC_RELEASE);

	g_args = *args;
	__atomic_store_n(&heapattach_agent_state.attacher_pid, args->attacher_pid, __ATOMIC_RELAXED);
	__atomic_fetch_add(&heapattach_agent_state.sessions, 1, __ATOMIC_RELAXED);

	/* Our own allocations on this thread (pthread_create's, after the GOT
	 * is patched) are not the profile's business either. */
	ha_hook_guard++;
	int rc = init_session();
	ha_hook_guard--;
	return rc;
}

int heapattach_agent_init(struct ha_init_args *args)
{
	int rc = agent_init(args);
	if (args)   /* the attacher reads it there (ha_proto.h) */
		__atomic_store_n(&args->result, rc, __ATOMIC_RELEASE);
	return rc;
}
