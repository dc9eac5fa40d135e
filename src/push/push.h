/* push.h -- heapattach --push and heapdiff --push: each snapshot's heap
 * profile sent to a continuous profiling store over HTTP(S), Grafana
 * Pyroscope's ingest API (or Grafana Alloy's pyroscope.receive_http, which
 * relays it):
 *
 *     POST URL/ingest?name=APP{hostname=H,pid=P,comm=C,kind=K,...}
 *                    &from=UNIX&until=UNIX&format=pprof&spyName=heapattach
 *
 * with the gzipped pprof profile that `heapdiff --format pprof DB S` writes
 * as the body (inuse_* at the snapshot, alloc_* over its period).
 *
 *   push_url.c      the checks of what the user gives (URL, --app, --label,
 *                   --push-header, the credentials in the environment) and
 *                   the ingest URL of one profile, every name escaped
 *   push_profile.c  one snapshot of a database as that profile and the
 *                   facts its URL needs (its own read-only connection)
 *   push_http.c     one profile POSTed with libcurl, retried with backoff
 *   push_queue.c    heapattach's side: per receiver a bounded queue of
 *                   snapshot ids and the thread that drains it
 *   push_batch.c    heapdiff's side: snapshots of a database sent in order
 *
 * Nothing here runs in or talks to the target: the push threads read the
 * database heapattach's writer has committed, and nothing else. */
#ifndef HA_PUSH_H
#define HA_PUSH_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* The receivers and how to talk to them, checked (ha_push_check_*) before
 * anything else happens; the strings are the caller's (argv, environ).
 * Pyroscope keeps 30 labels per series by default: 4 of ours, its own
 * service_name and __name__, and at most 24 of the user's. */
#define HA_PUSH_MAX_URLS 16
#define HA_PUSH_MAX_LABELS 24
#define HA_PUSH_MAX_HEADERS 32
struct ha_push_conf {
	const char *urls[HA_PUSH_MAX_URLS]; /* --push, each checked by ha_push_check_url */
	int nurls;
	const char *app;           /* --app, or NULL: each profile's comm */
	const char *labels[HA_PUSH_MAX_LABELS]; /* --label K=V */
	int nlabels;
	const char *headers[HA_PUSH_MAX_HEADERS]; /* --push-header 'Name: value' */
	int nheaders;
	const char *cacert;        /* --push-cacert FILE, or NULL: the system's */
	double timeout_s;          /* --push-timeout: of one request; at the
	                            * end, for what is still queued */
	/* From the environment (ha_push_env), never the command line. */
	const char *user, *password; /* HEAPATTACH_PUSH_USER, _PASSWORD */
	const char *token;         /* HEAPATTACH_PUSH_TOKEN */
};

#define HA_PUSH_TIMEOUT_DEFAULT 10.0

/* ------------------------------------------------------------ push_url.c */

/* Adds the argument s of option opt (--push, --label, --push-header) to
 * c; 0, or -1 with err when there are too many. */
int ha_push_add(struct ha_push_conf *c, const char *opt, const char *s, char *err, size_t errlen);
/* 0, or -1 with one line in err naming the problem. */
int ha_push_check_url(const char *url, char *err, size_t errlen);
int ha_push_check_app(const char *app, char *err, size_t errlen);
int ha_push_check_label(const char *kv, char *err, size_t errlen);
int ha_push_check_header(const char *header, char *err, size_t errlen);
/* The credentials of c from the environment: 0, or -1 with err. */
int ha_push_env(struct ha_push_conf *c, char *err, size_t errlen);
/* All of c (the URLs, --app, the labels, the headers, --push-cacert) and
 * the credentials of the environment (into c): 0, or -1 with err. */
int ha_push_check_conf(struct ha_push_conf *c, char *err, size_t errlen);

/* What the URL of one profile says of it. */
struct ha_push_meta {
	const char *comm;          /* the target's, untrusted */
	const char *host;          /* the recording host's ('' unknown), untrusted */
	int64_t pid;
	const char *kind;          /* "snapshot" or "peak" */
	int64_t from, until;       /* unix seconds */
};
/* The ingest URL of a profile: base (checked) + "/ingest?name=..." with
 * the app (c->app, else m->comm made a valid service name), the labels
 * hostname, pid, comm, kind, then c's --label ones (which replace a
 * default of the same name), every value cleaned of what would end it in
 * Pyroscope's name{k=v,...} syntax and then percent-encoded.  malloc'ed,
 * or NULL (out of memory). */
char *ha_push_ingest_url(const char *base, const struct ha_push_conf *c,
                         const struct ha_push_meta *m);
/* s as a label value (or with app, a service name) of Pyroscope's name
 * syntax: the characters that would end or break it replaced by '_';
 * into out (at most outlen - 1 bytes, cut at a character). */
void ha_push_clean_value(const char *s, int app, char *out, size_t outlen);

/* ------------------------------------------------------------ push_profile.c */

struct ha_push_profile {
	unsigned char *body;       /* the gzipped pprof profile, malloc'ed */
	size_t size;
	int64_t snapshot_id, pid;
	char comm[64], host[256], reason[32];
	int64_t from, until;       /* the snapshot's period, unix seconds */
};
/* Snapshot id of the database at path, through a read-only connection of
 * the calling thread's own (never exits the process: an error is -1 with
 * err).  Free with ha_push_profile_free. */
int ha_push_profile_load(const char *path, int64_t id, struct ha_push_profile *p, char *err,
                         size_t errlen);
void ha_push_profile_free(struct ha_push_profile *p);
/* The URL facts of p (pointing into p). */
void ha_push_profile_meta(const struct ha_push_profile *p, struct ha_push_meta *m);

/* ------------------------------------------------------------ push_http.c */

/* When to give up: the end of heapattach, or a signal.  Shared by the
 * thread that sends (reads it, waits on it) and the one that ends it. */
struct ha_push_stop {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	double deadline_ms;        /* ha_now_ms() clock; 0: none */
};
void ha_push_stop_init(struct ha_push_stop *s);
void ha_push_stop_destroy(struct ha_push_stop *s);
/* From now, give up at deadline_ms (now or earlier: at once). */
void ha_push_stop_at(struct ha_push_stop *s, double deadline_ms);
/* ms left before the deadline (a large number without one; <= 0: past). */
double ha_push_stop_left(struct ha_push_stop *s);

/* A connection to receivers (a libcurl handle and the headers of c):
 * one thread's.  NULL with err. */
struct ha_http;
struct ha_http *ha_http_new(const struct ha_push_conf *c, char *err, size_t errlen);
void ha_http_free(struct ha_http *h);

enum ha_push_result { HA_PUSH_SENT, HA_PUSH_FAILED, HA_PUSH_STOPPED };
/* POST body to url; retried with backoff (0.5 s, 1 s, 2 s, or as a
 * Retry-After says) while the answer is a 5xx, 408 or 429, or the request
 * timed out or the connection failed; four attempts at most, none after
 * stop's deadline.  *attempts gets how many were made; why (FAILED,
 * STOPPED) the last answer or error. */
enum ha_push_result ha_http_send(struct ha_http *h, const char *url, const void *body,
                                 size_t size, struct ha_push_stop *stop, int *attempts,
                                 char *why, size_t whylen);

/* ------------------------------------------------------------ push_queue.c */

/* What happened to the profiles of one receiver (or of all, summed). */
struct ha_push_stats {
	uint64_t queued;           /* snapshots handed to it */
	uint64_t sent;             /* accepted (2xx) */
	uint64_t failed;           /* given up after the attempts, or refused */
	uint64_t dropped;          /* the oldest, for a newer one, the queue full */
	uint64_t unsent;           /* still queued, or being sent, at the deadline */
	uint64_t retries;          /* attempts after the first */
	char last_error[256];      /* of the last failure ('' none) */
};

/* heapattach's pushes: per receiver a queue of HA_PUSH_QUEUE snapshot ids
 * and a thread (at the background nice level) that takes the oldest,
 * loads its profile from the database at db_path and sends it.  NULL with
 * err (a thread could not be started). */
#define HA_PUSH_QUEUE 16
struct ha_push;
struct ha_push *ha_push_start(const struct ha_push_conf *c, const char *db_path, char *err,
                              size_t errlen);
/* Snapshot id was committed (the writer thread calls this; it never
 * blocks on a receiver: a mutex held for a few instructions).  The
 * baseline ('attach', every value zero) is not sent. */
void ha_push_snapshot(void *push, int64_t id, const char *reason);
/* The sums over the receivers (with all, any thread). */
void ha_push_totals(struct ha_push *p, struct ha_push_stats *out);
/* No more snapshots: what is queued is sent within c->timeout_s from now,
 * or as soon as sigfd (-1: none) is readable (a second Ctrl-C), whichever
 * comes first; then the threads are joined. */
void ha_push_finish(struct ha_push *p, int sigfd);
/* Receiver i's URL and stats, after ha_push_finish. */
int ha_push_receivers(const struct ha_push *p);
const char *ha_push_receiver(const struct ha_push *p, int i, struct ha_push_stats *out);
void ha_push_free(struct ha_push *p);

/* ------------------------------------------------------------ push_batch.c */

/* heapdiff --push: snapshots ids[0..n) of the database at path sent in
 * that order to every receiver of c; one line on stderr per receiver.
 * 0 if every receiver accepted every profile, else -1. */
int ha_push_batch(const struct ha_push_conf *c, const char *path, const int64_t *ids, size_t n);

#endif
