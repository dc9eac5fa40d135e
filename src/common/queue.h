/* queue.h -- a message queue between two threads.  A message is a heap
 * block whose ownership moves with it: the sender never touches it again
 * after ha_queue_put.  (Threads hand work over as messages and never share
 * the objects they own.) */
#ifndef HA_QUEUE_H
#define HA_QUEUE_H

#include <pthread.h>

struct ha_qmsg {
	struct ha_qmsg *next;
	int type;
};

struct ha_queue {
	pthread_mutex_t lock;
	pthread_cond_t nonempty;
	struct ha_qmsg *head, *tail;
};

void ha_queue_init(struct ha_queue *q);
void ha_queue_destroy(struct ha_queue *q);
void ha_queue_put(struct ha_queue *q, struct ha_qmsg *m);
/* Wait up to timeout_ms (-1 = forever) for a message; NULL on timeout. */
struct ha_qmsg *ha_queue_get(struct ha_queue *q, int timeout_ms);

#endif
