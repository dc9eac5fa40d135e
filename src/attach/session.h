/* session.h -- the attacher's side of one agent session: the Unix socket the
 * agent connects to, the shared ring, and the control protocol of
 * ha_proto.h (hello, config, ready, stats, detach). */
#ifndef HA_SESSION_H
#define HA_SESSION_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ha_proto.h"

struct ha_session {
	pid_t pid;                 /* target */
	pid_t own_pid;             /* its pid in its own pid namespace, what HELLO
	                            * says (0: pid) */
	int listen_fd;
	int conn_fd;
	int ring_fd;               /* memfd, sent to the agent */
	void *ring;                /* our mapping of it */
	uint64_t ring_data_size;   /* each ring's data area */
	uint32_t ring_count;       /* rings in the memfd (ha_proto.h, section 4) */
	int tmp_fd, dir_fd;        /* the target's /tmp and our directory in it
	                            * (O_PATH), to make and remove the names */
	char dir_name[64];         /* the directory's name in tmp */
	char dir[PATH_MAX];        /* the directory, as we reach it (messages) */
	char sock[PATH_MAX];       /* socket path for bind: /proc/self/fd/N/... */
	char sock_target[HA_SOCK_PATH_MAX]; /* socket path inside the target
	                            * ("\0name" when abstract) */
	int as_owner;              /* the directory was made as the target's uid
	                            * (its file system has no mapping for ours) */
	int abstract;              /* an abstract socket (dir and sock: "@name") */
	char not_tmp[1024];        /* why not in the target's /tmp ("": it is) */
	struct ha_msg_hello hello; /* what the agent said */
	/* The handshake, as a state machine that never blocks (it may run on
	 * the injector's thread while the agent's init call is under way). */
	int hs_state;              /* HA_HS_* */
	struct ha_msg_config hs_cfg;
	struct ha_counters ready;  /* what READY said */
	double t_ready;            /* ha_now_ms() when READY came */
	char hs_err[512];          /* why it failed */
	char agent_err[512];       /* an ERROR the agent sent while another
	                            * answer was awaited (the collector's ask):
	                            * kept for ha_session_last_word */
	/* After the handshake the main thread (trim, detach, a hang-up) and
	 * the collector (the allocator's stats at a snapshot) both talk to
	 * the agent: one exchange, a request and its answer, at a time. */
	pthread_mutex_t io_mu;
	uint32_t alloc_seq;        /* the last ALLOC_ASK's seq (under io_mu) */
};

enum { HA_HS_NONE, HA_HS_ACCEPT, HA_HS_HELLO, HA_HS_READY, HA_HS_DONE, HA_HS_FAILED };

void ha_session_init(struct ha_session *s);

/* Create the socket directory (mode 0700, owned by the target's uid/gid so
 * only that user and root can reach it; created through /proc/PID/root when
 * the target has another root), listen, and create the ring memfd. */
int ha_session_open(struct ha_session *s, pid_t pid, uid_t uid, gid_t gid, int same_root,
                    uint64_t ring_data_size, uint32_t rings, char *err, size_t errlen);

/* The handshake: accept, check that the peer is the target (SO_PEERCRED),
 * receive HELLO, send CONFIG (cfg, with the ring), receive READY.
 * ha_session_handshake_begin starts it; ha_session_handshake_step does
 * whatever can be done without waiting: 1 done (s->ready, s->t_ready), 0 to
 * be continued when ha_session_handshake_fd(s) is readable, -1 failed
 * (s->hs_err).  ha_session_handshake completes it, waiting up to timeout_ms:
 * 0, or -1 with err. */
void ha_session_handshake_begin(struct ha_session *s, const struct ha_msg_config *cfg);
int ha_session_handshake_fd(const struct ha_session *s);
int ha_session_handshake_step(struct ha_session *s);
int ha_session_handshake(struct ha_session *s, int timeout_ms, char *err, size_t errlen);

/* Tell the agent to restore everything and leave; wait for its last word.
 * 0, or -1 with err (the agent restores by itself on hang-up anyway). */
int ha_session_detach(struct ha_session *s, int timeout_ms, struct ha_counters *final,
                      char *err, size_t errlen);

/* heapattach --trim: ask the agent for the allocator's trim on its thread
 * (malloc_trim(0), or jemalloc's, tcmalloc's, mimalloc's: ha_proto.h,
 * TRIMMED) and wait for TRIMMED: *result is what it returned (-1: no trim
 * in the target), *ns how long it took there, *kind whose (enum
 * ha_alloc_kind, -1 out of range).  0, or -1 with err. */
int ha_session_trim(struct ha_session *s, int timeout_ms, int *result, uint64_t *ns, int *kind,
                    char *err, size_t errlen);

/* A snapshot's allocator statistics: ask the agent (ALLOC_ASK) and collect
 * its answer's parts into parts[0 .. HA_ALLOC_PARTS_MAX), in order, their
 * count in *nparts.  Only the framing is checked here (seq, part order):
 * the figures are the target's, checked where they are read
 * (src/rss/mem_alloc.c).  Any thread; 0, or -1 with err. */
int ha_session_alloc_stats(struct ha_session *s, int timeout_ms, struct ha_msg *parts,
                           size_t *nparts, char *err, size_t errlen);

/* The agent's socket woke a poller that asked nothing: 1 if it is still
 * up with nothing left to read (another thread's exchange took what came,
 * or only late ALLOC_STATS answers were there, dropped), 0 if it is
 * hanging up (what is there is left for ha_session_last_word). */
int ha_session_spurious_wake(struct ha_session *s);

/* The agent's socket became readable while it was not asked anything: it
 * is hanging up, maybe after an ERROR saying why (the program unmapped the
 * ring).  1 with that ERROR's text (cleaned) in err, else 0. */
int ha_session_last_word(struct ha_session *s, char *err, size_t errlen);

/* What the attacher does with a message of n bytes it received from the
 * agent (truncated: the kernel cut it, MSG_TRUNC), which must be one of
 * type want: 0 if it is; -1 with one line in err if it is malformed (not
 * exactly sizeof *m bytes, another magic or version), an ERROR (the line
 * then holds the agent's text, cleaned as ha_clean_line cleans a line,
 * and its code) or of another type.  The agent is inside the target:
 * every byte of m is untrusted. */
int ha_session_check_msg(struct ha_msg *m, long n, int truncated, uint16_t want, char *err,
                         size_t errlen);

/* Close everything and remove the socket and its directory.  Idempotent. */
void ha_session_close(struct ha_session *s);

#endif
