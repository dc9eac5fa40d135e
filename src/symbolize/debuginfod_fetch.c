/* debuginfod_fetch.c -- the attacher's fetcher thread (see
 * debuginfod_fetch.h). */
#define _GNU_SOURCE
#include "debuginfod_fetch.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfod_get.h"
#include "queue.h"
#include "util.h"

#define MAX_ID 64

struct want {
	struct ha_qmsg q;          /* type 1: a module; 0: stop */
	unsigned char id[MAX_ID];
	int len;
	char module[];
};

/* What became of a module (the fetcher thread's; read after the join). */
struct outcome {
	unsigned char id[MAX_ID];
	int len;
	char *module;
	int found;
	double secs;
	char why[160];
};

struct ha_fetcher {
	pthread_t thread;
	struct ha_queue inbox;
	double timeout_s;
	int verbose;
	int stop;                  /* atomic: cancel what is under way */
	struct outcome *out;       /* the thread's until joined */
	size_t n, cap;
	/* For the status line (lock: the current name and its start). */
	pthread_mutex_t lock;
	uint32_t wanted, done, found;
	double started_ms;
	char current[128];
};

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int seen(const struct ha_fetcher *f, const struct want *w)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->out[i].len == w->len && memcmp(f->out[i].id, w->id, (size_t)w->len) == 0)
			return 1;
	return 0;
}

static void fetch_one(struct ha_fetcher *f, const struct want *w)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		struct outcome *o = realloc(f->out, cap * sizeof *o);
		if (!o)
			return;
		f->out = o;
		f->cap = cap;
	}
	struct outcome *o = &f->out[f->n];
	memset(o, 0, sizeof *o);
	memcpy(o->id, w->id, (size_t)w->len);
	o->len = w->len;
	if (!(o->module = strdup(w->module)))
		return;
	f->n++;
	double t0 = ha_now_ms();
	pthread_mutex_lock(&f->lock);
	snprintf(f->current, sizeof f->current, "%s", base_name(w->module));
	f->started_ms = t0;
	pthread_mutex_unlock(&f->lock);
	char *path = NULL;
	int fd = ha_debuginfod_fetch(w->id, w->len, f->timeout_s, &f->stop, &path, o->why,
	                             sizeof o->why);
	o->secs = (ha_now_ms() - t0) / 1e3;
	o->found = fd >= 0;
	if (fd >= 0)
		close(fd);
	free(path);
	pthread_mutex_lock(&f->lock);
	f->current[0] = '\0';
	f->done++;
	f->found += (uint32_t)o->found;
	pthread_mutex_unlock(&f->lock);
}

static void *run(void *arg)
{
	struct ha_fetcher *f = arg;
	pthread_setname_np(pthread_self(), "ha-debuginfod");
	for (;;) {
		struct want *w = (struct want *)ha_queue_get(&f->inbox, -1);
		if (!w)
			continue;
		if (w->q.type == 0) {
			free(w);
			break;
		}
		if (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED) && !seen(f, w))
			fetch_one(f, w);
		else {
			pthread_mutex_lock(&f->lock);
			f->done++;
			pthread_mutex_unlock(&f->lock);
		}
		free(w);
	}
	return NULL;
}

struct ha_fetcher *ha_fetcher_start(double timeout_s, int verbose)
{
	if (!ha_debuginfod_enabled())
		return NULL;
	struct ha_fetcher *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->timeout_s = timeout_s;
	f->verbose = verbose;
	ha_queue_init(&f->inbox);
	pthread_mutex_init(&f->lock, NULL);
	if (pthread_create(&f->thread, NULL, run, f) != 0) {
		ha_queue_destroy(&f->inbox);
		pthread_mutex_destroy(&f->lock);
		free(f);
		return NULL;
	}
	return f;
}

void ha_fetcher_want(void *fetcher, const char *module, const unsigned char *id, int len)
{
	struct ha_fetcher *f = fetcher;
	size_t ml = strlen(module);
	if (!f || len <= 0 || len > MAX_ID)
		return;
	struct want *w = malloc(sizeof *w + ml + 1);
	if (!w)
		return;
	w->q.type = 1;
	memcpy(w->id, id, (size_t)len);
	w->len = len;
	memcpy(w->module, module, ml + 1);
	pthread_mutex_lock(&f->lock);
	f->wanted++;
	pthread_mutex_unlock(&f->lock);
	ha_queue_put(&f->inbox, &w->q);
}

void ha_fetcher_status(struct ha_fetcher *f, struct ha_fetch_status *st)
{
	memset(st, 0, sizeof *st);
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	st->wanted = f->wanted;
	st->done = f->done;
	st->found = f->found;
	if (f->current[0]) {
		st->busy_s = (ha_now_ms() - f->started_ms) / 1e3;
		snprintf(st->current, sizeof st->current, "%s", f->current);
	}
	pthread_mutex_unlock(&f->lock);
}

void ha_fetcher_stop(struct ha_fetcher *f)
{
	if (!f)
		return;
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELAXED);
	struct want *w = calloc(1, sizeof *w);
	if (w) {
		w->q.type = 0;
		ha_queue_put(&f->inbox, &w->q);
		pthread_join(f->thread, NULL);
	} else {
		pthread_detach(f->thread); /* (out of memory: it ends by itself) */
		return;
	}
	for (size_t i = 0; i < f->n; i++) {
		const struct outcome *o = &f->out[i];
		if (f->verbose || !o->found)
			fprintf(stderr, "heapattach: debuginfod: %s: %s (%.1f s)\n", o->module,
			        o->found ? "debug file fetched" : o->why, o->secs);
		free(o->module);
	}
	/* Dropped before their turn. */
	struct ha_qmsg *m;
	while ((m = ha_queue_get(&f->inbox, 0)))
		free(m);
	free(f->out);
	ha_queue_destroy(&f->inbox);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
