/* push_queue.c -- heapattach's pushes: per receiver a bounded queue of
 * snapshot ids and a thread of its own that drains it.
 *
 * Ownership.  The writer thread hands a committed snapshot's id over
 * (ha_push_snapshot: under the queue's mutex, a few instructions, never
 * waiting for a receiver); each receiver's thread owns its HTTP handle
 * and, while it loads a profile, its own read-only database connection
 * (push_profile.c); the main thread reads the counters for the status
 * line and ends the threads.  No thread touches another's objects: the
 * queue (ids and counters, under its mutex) and the stop (a deadline,
 * under its own) are the only things shared.
 *
 * Bounded.  HA_PUSH_QUEUE ids per receiver: when a slow or dead receiver
 * lets them pile up, the oldest is dropped for the newest and counted;
 * memory stays what it was, and what is sent is the most recent state.
 * One thread per receiver, so that a dead one does not hold up another.
 *
 * The end.  ha_push_finish closes the queues and sets every stop's
 * deadline --push-timeout from now: each thread sends what is still
 * queued until then and counts the rest as not sent; a second Ctrl-C or
 * SIGTERM moves the deadline to now.  The threads run at the background
 * nice level, like the writer. */
#define _GNU_SOURCE
#include "push.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util.h"

struct receiver {
	struct ha_push *set;
	const char *url;
	pthread_t thread;
	int started;
	pthread_mutex_t lock;        /* ids, head, n, closing, st */
	pthread_cond_t more;
	int64_t ids[HA_PUSH_QUEUE];
	int head, n, closing;
	struct ha_push_stats st;
	struct ha_push_stop stop;
};

struct ha_push {
	const struct ha_push_conf *conf;
	char *db_path;
	int n;
	struct receiver *r;
	int done_fd;                 /* eventfd: one count per thread ended */
};

/* Load snapshot id and send it; the outcome goes into r's counters. */
static void push_one(struct receiver *r, struct ha_http *h, const char *http_err, int64_t id)
{
	struct ha_push_profile p;
	struct ha_push_meta m;
	char err[512] = "", *url = NULL;
	int attempts = 0;
	enum ha_push_result res = HA_PUSH_FAILED;

	if (!h)
		snprintf(err, sizeof err, "%s", http_err);
	else if (ha_push_profile_load(r->set->db_path, id, &p, err, sizeof err) == 0) {
		ha_push_profile_meta(&p, &m);
		url = ha_push_ingest_url(r->url, r->set->conf, &m);
		if (!url)
			snprintf(err, sizeof err, "out of memory");
		else
			res = ha_http_send(h, url, p.body, p.size, &r->stop, &attempts, err, sizeof err);
		free(url);
		ha_push_profile_free(&p);
	}
	pthread_mutex_lock(&r->lock);
	r->st.retries += attempts > 1 ? (uint64_t)(attempts - 1) : 0;
	if (res == HA_PUSH_SENT) {
		r->st.sent++;
	} else if (res == HA_PUSH_STOPPED) {
		r->st.unsent++;
	} else {
		r->st.failed++;
		snprintf(r->st.last_error, sizeof r->st.last_error, "snapshot %lld: %s%s",
		         (long long)id, err, attempts > 1 ? " (after 4 attempts)" : "");
	}
	pthread_mutex_unlock(&r->lock);
}

static void *receiver_main(void *arg)
{
	struct receiver *r = arg;
	char err[256] = "";
	ha_background_thread();
	struct ha_http *h = ha_http_new(r->set->conf, err, sizeof err);
	for (;;) {
		pthread_mutex_lock(&r->lock);
		while (!r->n && !r->closing)
			pthread_cond_wait(&r->more, &r->lock);
		if (!r->n) {
			pthread_mutex_unlock(&r->lock);
			break;
		}
		int64_t id = r->ids[r->head];
		r->head = (r->head + 1) % HA_PUSH_QUEUE;
		r->n--;
		pthread_mutex_unlock(&r->lock);
		if (ha_push_stop_left(&r->stop) <= 0) {
			/* Past the deadline: what is left is counted, not tried. */
			pthread_mutex_lock(&r->lock);
			r->st.unsent++;
			pthread_mutex_unlock(&r->lock);
			continue;
		}
		push_one(r, h, err, id);
	}
	ha_http_free(h);
	uint64_t one = 1;
	if (write(r->set->done_fd, &one, sizeof one) < 0) {
		/* an eventfd write of 1 cannot fail short of overflow */
	}
	return NULL;
}

struct ha_push *ha_push_start(const struct ha_push_conf *c, const char *db_path, char *err,
                              size_t errlen)
{
	struct ha_push *p = calloc(1, sizeof *p);
	if (!p || !(p->r = calloc((size_t)c->nurls, sizeof *p->r)) || !(p->db_path = strdup(db_path))) {
		ha_err(err, errlen, "--push: out of memory");
		goto fail;
	}
	p->conf = c;
	p->done_fd = eventfd(0, EFD_CLOEXEC);
	if (p->done_fd < 0) {
		ha_err(err, errlen, "--push: eventfd: %s", strerror(errno));
		goto fail;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		ha_err(err, errlen, "--push: libcurl cannot be initialized");
		goto fail;
	}
	for (int i = 0; i < c->nurls; i++) {
		struct receiver *r = &p->r[i];
		r->set = p;
		r->url = c->urls[i];
		pthread_mutex_init(&r->lock, NULL);
		pthread_cond_init(&r->more, NULL);
		ha_push_stop_init(&r->stop);
		p->n++;
		if (pthread_create(&r->thread, NULL, receiver_main, r) != 0) {
			ha_err(err, errlen, "--push: cannot start a thread");
			ha_push_finish(p, -1);
			ha_push_free(p);
			return NULL;
		}
		r->started = 1;
	}
	return p;
fail:
	if (p && p->done_fd > 0)
		close(p->done_fd);
	if (p)
		free(p->db_path), free(p->r);
	free(p);
	return NULL;
}

void ha_push_snapshot(void *push, int64_t id, const char *reason)
{
	struct ha_push *p = push;
	if (strcmp(reason, "attach") == 0)
		return; /* the baseline: every value zero, a zero-length period */
	for (int i = 0; i < p->n; i++) {
		struct receiver *r = &p->r[i];
		pthread_mutex_lock(&r->lock);
		r->st.queued++;
		if (r->n == HA_PUSH_QUEUE) {
			r->head = (r->head + 1) % HA_PUSH_QUEUE;
			r->n--;
			r->st.dropped++;
		}
		r->ids[(r->head + r->n) % HA_PUSH_QUEUE] = id;
		r->n++;
		pthread_cond_signal(&r->more);
		pthread_mutex_unlock(&r->lock);
	}
}

void ha_push_totals(struct ha_push *p, struct ha_push_stats *out)
{
	memset(out, 0, sizeof *out);
	for (int i = 0; i < p->n; i++) {
		struct receiver *r = &p->r[i];
		pthread_mutex_lock(&r->lock);
		out->queued += r->st.queued;
		out->sent += r->st.sent;
		out->failed += r->st.failed;
		out->dropped += r->st.dropped;
		out->unsent += r->st.unsent;
		out->retries += r->st.retries;
		if (r->st.last_error[0])
			snprintf(out->last_error, sizeof out->last_error, "%s", r->st.last_error);
		pthread_mutex_unlock(&r->lock);
	}
}

void ha_push_finish(struct ha_push *p, int sigfd)
{
	double deadline = ha_now_ms() + p->conf->timeout_s * 1e3;
	int running = 0;
	for (int i = 0; i < p->n; i++) {
		struct receiver *r = &p->r[i];
		ha_push_stop_at(&r->stop, deadline);
		pthread_mutex_lock(&r->lock);
		r->closing = 1;
		pthread_cond_signal(&r->more);
		pthread_mutex_unlock(&r->lock);
		running += r->started;
	}
	/* Each thread ends by the deadline by itself; a signal meanwhile
	 * (a second Ctrl-C) moves it to now. */
	while (running > 0) {
		struct pollfd fds[2] = { { .fd = p->done_fd, .events = POLLIN },
		                         { .fd = sigfd, .events = POLLIN } };
		if (poll(fds, sigfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			break;
		uint64_t ended;
		if ((fds[0].revents & POLLIN) && read(p->done_fd, &ended, sizeof ended) == sizeof ended)
			running -= (int)ended;
		if (sigfd >= 0 && (fds[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo != SIGUSR1)
				for (int i = 0; i < p->n; i++)
					ha_push_stop_at(&p->r[i].stop, ha_now_ms());
		}
	}
	for (int i = 0; i < p->n; i++)
		if (p->r[i].started) {
			pthread_join(p->r[i].thread, NULL);
			p->r[i].started = 0;
		}
}

int ha_push_receivers(const struct ha_push *p)
{
	return p->n;
}

const char *ha_push_receiver(const struct ha_push *p, int i, struct ha_push_stats *out)
{
	*out = p->r[i].st; /* the threads are joined */
	return p->r[i].url;
}

void ha_push_free(struct ha_push *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n; i++) {
		pthread_mutex_destroy(&p->r[i].lock);
		pthread_cond_destroy(&p->r[i].more);
		ha_push_stop_destroy(&p->r[i].stop);
	}
	close(p->done_fd);
	free(p->r);
	free(p->db_path);
	free(p);
	curl_global_cleanup();
}
