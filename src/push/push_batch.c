/* push_batch.c -- heapdiff --push: snapshots recorded earlier (a database
 * copied off a host, say) sent to the receivers, in order, on the calling
 * thread.
 *
 * Each snapshot is loaded once (push_profile.c: the profile of
 * `heapdiff -f pprof DB S`, labelled with the host, pid and comm its
 * session recorded) and sent to every receiver, with the retries of
 * push_http.c and no deadline but --push-timeout per request.  One line
 * per receiver says what it accepted; a profile it refused is named with
 * the answer. */
#define _GNU_SOURCE
#include "push.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int ha_push_batch(const struct ha_push_conf *c, const char *path, const int64_t *ids, size_t n)
{
	struct ha_http *h;
	char err[512];
	size_t *sent = calloc((size_t)c->nurls, sizeof *sent);
	int rc = 0;

	if (!sent || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "heapdiff: --push: cannot initialize libcurl\n");
		free(sent);
		return -1;
	}
	if (!(h = ha_http_new(c, err, sizeof err))) {
		fprintf(stderr, "heapdiff: --push: %s\n", err);
		curl_global_cleanup();
		free(sent);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct ha_push_profile p;
		struct ha_push_meta m;
		if (ha_push_profile_load(path, ids[i], &p, err, sizeof err) < 0) {
			fprintf(stderr, "heapdiff: --push: %s\n", err);
			rc = -1;
			continue;
		}
		ha_push_profile_meta(&p, &m);
		for (int u = 0; u < c->nurls; u++) {
			int attempts = 0;
			char *url = ha_push_ingest_url(c->urls[u], c, &m);
			enum ha_push_result res = url ? ha_http_send(h, url, p.body, p.size, NULL, &attempts,
			                                             err, sizeof err)
			                              : HA_PUSH_FAILED;
			if (res == HA_PUSH_SENT) {
				sent[u]++;
			} else {
				fprintf(stderr, "heapdiff: --push %s: snapshot %" PRId64 " not accepted: %s%s\n",
				        c->urls[u], ids[i], url ? err : "out of memory",
				        attempts > 1 ? " (after 4 attempts)" : "");
				rc = -1;
			}
			free(url);
		}
		ha_push_profile_free(&p);
	}
	for (int u = 0; u < c->nurls; u++)
		fprintf(stderr, "heapdiff: --push %s: %zu of %zu profiles sent\n", c->urls[u], sent[u], n);
	ha_http_free(h);
	curl_global_cleanup();
	free(sent);
	return rc;
}
