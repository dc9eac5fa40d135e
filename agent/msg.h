/*
 * msg.h -- the agent's messages on the attacher's socket (msg.c): fixed-size
 * struct ha_msg (src/proto/ha_proto.h) over SOCK_SEQPACKET.  No stdio, no
 * allocation; the receive takes passed descriptors under the fork lock.
 */
#ifndef HA_AGENT_MSG_H
#define HA_AGENT_MSG_H

#include <sys/types.h>

#include "ha_proto.h"
#include "tls.h"

/* Send one message (EINTR retried, no SIGPIPE).  0 or -errno. */
HA_HIDDEN int ha_msg_send(int fd, const struct ha_msg *m);

/* Send HA_MSG_ERROR "agent: what[: detail][ (errno code)]"; nothing if
 * fd < 0, failures ignored. */
HA_HIDDEN void ha_msg_send_error(int fd, int code, const char *what, const char *detail);

/* Receive one message, waiting at most timeout_ms for it.  The descriptors
 * passed with it are taken under the fork lock, so that a fork() child
 * never inherits one we have recorded without knowing of it: the first
 * goes to *fd_slot if fd_slot is given and *fd_slot < 0, every other one is
 * closed at once, after the lock is released (the peer's file may block
 * its close), and so is the first when the message was cut.  One caller
 * at a time (static buffers).  Returns the
 * byte count, 0 at end of stream, or -errno (-EAGAIN: nothing in time,
 * -EMSGSIZE: truncated message or descriptors). */
HA_HIDDEN ssize_t ha_msg_recv(int fd, struct ha_msg *m, int *fd_slot, int timeout_ms);

#endif /* HA_AGENT_MSG_H */
