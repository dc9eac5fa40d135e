/* queue.c -- a message queue between two threads (see queue.h). */
#define _GNU_SOURCE
#include "queue.h"

#include <errno.h>
#include <time.h>

void ha_queue_init(struct ha_queue *q)
{
	pthread_condattr_t ca;
	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->nonempty, &ca);
	pthread_condattr_destroy(&ca);
	q->head = q->tail = NULL;
}

void ha_queue_destroy(struct ha_queue *q)
{
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->nonempty);
}

void ha_queue_put(struct ha_queue *q, struct ha_qmsg *m)
{
	m->next = NULL;
	pthread_mutex_lock(&q->lock);
	if (q->tail)
		q->tail->next = m;
	else
		q->head = m;
	q->tail = m;
	pthread_cond_signal(&q->nonempty);
	pthread_mutex_unlock(&q->lock);
}

struct ha_qmsg *ha_queue_get(struct ha_queue *q, int timeout_ms)
{
	struct timespec deadline;
	struct ha_qmsg *m;
	if (timeout_ms >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&q->lock);
	while (!q->head) {
		int rc = timeout_ms < 0 ? pthread_cond_wait(&q->nonempty, &q->lock)
		                        : pthread_cond_timedwait(&q->nonempty, &q->lock, &deadline);
		if (rc == ETIMEDOUT)
			break;
	}
	m = q->head;
	if (m) {
		q->head = m->next;
		if (!q->head)
			q->tail = NULL;
	}
	pthread_mutex_unlock(&q->lock);
	return m;
}
