/* push_http.c -- one profile POSTed to one receiver with libcurl, retried
 * with backoff.
 *
 * A handle (struct ha_http) belongs to the thread that made it: its libcurl
 * easy handle keeps the connection to the receiver open between profiles.
 * The request: the body as application/octet-stream, the user's
 * --push-header lines, basic or bearer authentication from the
 * environment, https verified against the system's certificates (or
 * --push-cacert), no redirect followed (credentials never go elsewhere),
 * http and https only, no signals (CURLOPT_NOSIGNAL: threads).
 *
 * What is retried is what may go away by itself: an answer 5xx (the
 * store is overloaded or restarting), 408 or 429, a timeout, a refused or
 * broken connection (a receiver that restarts, or closed the connection
 * mid-body).  A 4xx says the request is wrong and would be wrong again;
 * a certificate that does not verify stays so.  Four attempts, 0.5, 1 and
 * 2 s apart (a quarter either way at random, so that a fleet of hosts
 * does not come back in step), or what a Retry-After says (30 s at most).
 *
 * Every wait -- the request itself (CURLOPT_TIMEOUT_MS), the backoff --
 * ends at the stop's deadline, which heapattach sets when it ends (and
 * moves to now on a second Ctrl-C): nothing here can keep it longer. */
#define _GNU_SOURCE
#include "push.h"

#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

#define ATTEMPTS 4
#define BACKOFF_MS 500.0
#define RETRY_AFTER_MAX_S 30
#define NO_DEADLINE 1e12

struct ha_http {
	CURL *curl;
	struct curl_slist *headers;
	double timeout_ms;
	struct ha_push_stop *stop;   /* of the request in progress, or NULL */
	char answer[160];            /* the start of the answer's body */
	size_t answer_n;
	unsigned seed;               /* the backoff's jitter */
	char errbuf[CURL_ERROR_SIZE];
};

/* ------------------------------------------------------------ the stop */

void ha_push_stop_init(struct ha_push_stop *s)
{
	pthread_condattr_t a;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC); /* ha_now_ms's clock */
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, &a);
	pthread_condattr_destroy(&a);
	s->deadline_ms = 0;
}

void ha_push_stop_destroy(struct ha_push_stop *s)
{
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
}

void ha_push_stop_at(struct ha_push_stop *s, double deadline_ms)
{
	pthread_mutex_lock(&s->lock);
	s->deadline_ms = deadline_ms > 0 ? deadline_ms : 1e-3;
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
}

double ha_push_stop_left(struct ha_push_stop *s)
{
	if (!s)
		return NO_DEADLINE;
	pthread_mutex_lock(&s->lock);
	double d = s->deadline_ms;
	pthread_mutex_unlock(&s->lock);
	return d ? d - ha_now_ms() : NO_DEADLINE;
}

/* Wait ms, or until the deadline: 0 when the wait ran out, -1 at the
 * deadline. */
static int stop_wait(struct ha_push_stop *s, double ms)
{
	double until = ha_now_ms() + ms;
	if (!s) {
		struct timespec ts = { (time_t)(ms / 1e3), (long)(fmod(ms, 1e3) * 1e6) };
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		return 0;
	}
	pthread_mutex_lock(&s->lock);
	for (;;) {
		double now = ha_now_ms(), end = until;
		if (s->deadline_ms && now >= s->deadline_ms) {
			pthread_mutex_unlock(&s->lock);
			return -1;
		}
		if (now >= until) {
			pthread_mutex_unlock(&s->lock);
			return 0;
		}
		if (s->deadline_ms && s->deadline_ms < end)
			end = s->deadline_ms;
		struct timespec ts = { (time_t)(end / 1e3), (long)(fmod(end, 1e3) * 1e6) };
		pthread_cond_timedwait(&s->wake, &s->lock, &ts);
	}
}

/* ------------------------------------------------------------ the handle */

static size_t keep_answer(char *p, size_t size, size_t n, void *arg)
{
	struct ha_http *h = arg;
	size_t len = size * n, room = sizeof h->answer - 1 - h->answer_n;
	memcpy(h->answer + h->answer_n, p, len < room ? len : room);
	h->answer_n += len < room ? len : room;
	h->answer[h->answer_n] = '\0';
	return len;
}

/* libcurl calls this about once a second and while data moves: a
 * deadline moved to now (a second Ctrl-C) aborts the request. */
static int progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt, (void)dn, (void)ut, (void)un;
	return ha_push_stop_left(((struct ha_http *)arg)->stop) <= 0;
}

struct ha_http *ha_http_new(const struct ha_push_conf *c, char *err, size_t errlen)
{
	struct ha_http *h = calloc(1, sizeof *h);
	struct curl_slist *l = NULL;
	if (!h || !(h->curl = curl_easy_init())) {
		free(h);
		ha_err(err, errlen, "cannot make an HTTP client (libcurl)");
		return NULL;
	}
	h->timeout_ms = (c->timeout_s > 0 ? c->timeout_s : HA_PUSH_TIMEOUT_DEFAULT) * 1e3;
	h->seed = (unsigned)getpid() ^ (unsigned)(uintptr_t)h;
	/* No 100-continue round trip before the body; the user's headers. */
	l = curl_slist_append(l, "Content-Type: application/octet-stream");
	l = l ? curl_slist_append(l, "Expect:") : NULL;
	for (int i = 0; l && i < c->nheaders; i++)
		l = curl_slist_append(l, c->headers[i]);
	if (!l) {
		curl_easy_cleanup(h->curl);
		free(h);
		ha_err(err, errlen, "out of memory");
		return NULL;
	}
	h->headers = l;
	CURL *k = h->curl;
	curl_easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(k, CURLOPT_POST, 1L);
	curl_easy_setopt(k, CURLOPT_HTTPHEADER, h->headers);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(k, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(k, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(k, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(k, CURLOPT_USERAGENT, "heapattach");
	curl_easy_setopt(k, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(k, CURLOPT_WRITEFUNCTION, keep_answer);
	curl_easy_setopt(k, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(k, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(k, CURLOPT_XFERINFOFUNCTION, progress);
	curl_easy_setopt(k, CURLOPT_XFERINFODATA, h);
	curl_easy_setopt(k, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(k, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->cacert)
		curl_easy_setopt(k, CURLOPT_CAINFO, c->cacert);
	if (c->token) {
		curl_easy_setopt(k, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
		curl_easy_setopt(k, CURLOPT_XOAUTH2_BEARER, c->token);
	} else if (c->user) {
		/* Basic alone: sent with the first request, no challenge. */
		curl_easy_setopt(k, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(k, CURLOPT_USERNAME, c->user);
		curl_easy_setopt(k, CURLOPT_PASSWORD, c->password);
	}
	return h;
}

void ha_http_free(struct ha_http *h)
{
	if (!h)
		return;
	curl_easy_cleanup(h->curl);
	curl_slist_free_all(h->headers);
	free(h);
}

/* ------------------------------------------------------------ sending */

enum outcome { OK, RETRY, FAIL, STOPPED };

/* The answer's first line, made printable, after "HTTP N". */
static void say_answer(struct ha_http *h, long code, char *why, size_t whylen)
{
	char *s = h->answer;
	s[strcspn(s, "\r\n")] = '\0';
	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			*p = '?';
	if (*s)
		snprintf(why, whylen, "HTTP %ld: %.120s", code, s);
	else
		snprintf(why, whylen, "HTTP %ld", code);
}

static enum outcome post_once(struct ha_http *h, const char *url, const void *body, size_t size,
                              long *retry_after_s, char *why, size_t whylen)
{
	double left = ha_push_stop_left(h->stop);
	double t = h->timeout_ms < left ? h->timeout_ms : left;
	long code = 0;
	curl_off_t ra = 0;
	if (t < 1)
		return STOPPED;
	h->answer_n = 0;
	h->answer[0] = '\0';
	h->errbuf[0] = '\0';
	curl_easy_setopt(h->curl, CURLOPT_URL, url);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)size);
	curl_easy_setopt(h->curl, CURLOPT_TIMEOUT_MS, (long)ceil(t));
	curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, (long)ceil(t));
	CURLcode rc = curl_easy_perform(h->curl);
	*retry_after_s = 0;
	if (rc == CURLE_OK) {
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
		if (code >= 200 && code < 300)
			return OK;
		say_answer(h, code, why, whylen);
#if LIBCURL_VERSION_NUM >= 0x074200
		if (curl_easy_getinfo(h->curl, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK && ra > 0)
			*retry_after_s = ra < RETRY_AFTER_MAX_S ? (long)ra : RETRY_AFTER_MAX_S;
#endif
		return code >= 500 || code == 408 || code == 429 ? RETRY : FAIL;
	}
	snprintf(why, whylen, "%s", h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
	if (rc == CURLE_ABORTED_BY_CALLBACK || ha_push_stop_left(h->stop) <= 0)
		return STOPPED;
	switch (rc) {
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return RETRY;
	default:
		return FAIL;
	}
}

enum ha_push_result ha_http_send(struct ha_http *h, const char *url, const void *body,
                                 size_t size, struct ha_push_stop *stop, int *attempts,
                                 char *why, size_t whylen)
{
	enum outcome o = FAIL;
	long retry_after = 0;
	h->stop = stop;
	*attempts = 0;
	why[0] = '\0';
	for (int i = 0; i < ATTEMPTS; i++) {
		if (i > 0) {
			/* 0.5, 1, 2 s, each within a quarter either way. */
			double ms = BACKOFF_MS * (double)(1 << (i - 1));
			ms *= 0.75 + 0.5 * (double)rand_r(&h->seed) / RAND_MAX;
			if (retry_after * 1e3 > ms)
				ms = (double)retry_after * 1e3;
			if (stop_wait(stop, ms) < 0) {
				o = STOPPED;
				break;
			}
		}
		++*attempts;
		o = post_once(h, url, body, size, &retry_after, why, whylen);
		if (o != RETRY)
			break;
	}
	h->stop = NULL;
	if (o == STOPPED)
		snprintf(why, whylen, "not sent before heapattach ended (--push-timeout)");
	return o == OK ? HA_PUSH_SENT : o == STOPPED ? HA_PUSH_STOPPED : HA_PUSH_FAILED;
}
