/* push_url.c -- what the user says about the receivers, checked, and the
 * ingest URL of one profile.
 *
 * Everything the user gives is refused with one line naming the option
 * and the problem, before the target is touched: a URL that is not http or
 * https, or has a query, a fragment or credentials in it (credentials come
 * from the environment, never from the command line, where ps shows them);
 * an --app or a --label name outside Pyroscope's characters; a label value
 * or a header that would break the request.
 *
 * What comes from the target (its comm) or from a database (the host
 * name) is untrusted and never refused: it is cleaned.  Pyroscope parses
 * name=APP{k=v,k=v} by hand (api/model/labelset): the app ends at '{', a
 * value at ',' or '}', values are trimmed, the app may hold only letters,
 * digits and "._-/", and a value must be valid UTF-8.  So a value has
 * those characters, controls and invalid bytes replaced by '_', and the
 * whole name is then percent-encoded for the query. */
#define _GNU_SOURCE
#include "push.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "report.h" /* hd_utf8_len */
#include "util.h"

#define MAX_URL 2048
#define MAX_VALUE 1024

/* ------------------------------------------------------------ characters */

static int label_name_char(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.';
}

static int app_char(int c)
{
	return label_name_char(c) || c == '-' || c == '/';
}

/* The valid UTF-8 sequence of len bytes at p is a control (C0, DEL, C1). */
static int control(const unsigned char *p, int len)
{
	return (len == 1 && (*p < 0x20 || *p == 0x7f)) || (len == 2 && p[0] == 0xc2 && p[1] < 0xa0);
}

/* ... or a character that would end a value. */
static int breaks_value(const unsigned char *p, int len)
{
	return control(p, len) || (len == 1 && (*p == ',' || *p == '{' || *p == '}'));
}

void ha_push_clean_value(const char *s, int app, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	if (outlen == 0)
		return;
	while (*p) {
		int len = hd_utf8_len(p);
		int bad = len == 0 || (app ? len > 1 || !app_char(*p) : breaks_value(p, len));
		size_t add = bad ? 1 : (size_t)len;
		if (n + add >= outlen)
			break;
		if (bad)
			out[n++] = '_';
		else
			memcpy(out + n, p, add), n += add;
		p += len ? len : 1;
	}
	out[n] = '\0';
	/* Pyroscope trims a value: blanks at its ends would be lost. */
	if (n && (out[0] == ' '))
		out[0] = '_';
	if (n && (out[n - 1] == ' '))
		out[n - 1] = '_';
	if (n == 0 && outlen > 1)
		snprintf(out, outlen, "_");
}

/* ------------------------------------------------------------ checks */

int ha_push_add(struct ha_push_conf *c, const char *opt, const char *s, char *err, size_t errlen)
{
	int label = strcmp(opt, "--label") == 0, url = strcmp(opt, "--push") == 0;
	const char **v = url ? c->urls : label ? c->labels : c->headers;
	int *n = url ? &c->nurls : label ? &c->nlabels : &c->nheaders;
	int max = url ? HA_PUSH_MAX_URLS : label ? HA_PUSH_MAX_LABELS : HA_PUSH_MAX_HEADERS;
	if (*n == max) {
		ha_err(err, errlen, "%s: at most %d of them%s", opt, max,
		       label ? " (Pyroscope keeps 30 labels per series)" : "");
		return -1;
	}
	v[(*n)++] = s;
	return 0;
}

int ha_push_check_url(const char *url, char *err, size_t errlen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *part = NULL;
	int rc = -1;
	if (!u) {
		ha_err(err, errlen, "--push: out of memory");
		return -1;
	}
	for (const unsigned char *p = (const unsigned char *)url; *p; p++)
		if (*p <= ' ' || *p == 0x7f) {
			ha_err(err, errlen, "--push '%s': not a URL (a blank or a control character in it)",
			       url);
			goto out;
		}
	if (strlen(url) > MAX_URL) {
		ha_err(err, errlen, "--push: a URL of more than %d characters", MAX_URL);
		goto out;
	}
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
		ha_err(err, errlen, "--push '%s': not a URL (http://HOST[:PORT][/PATH] or https://...)",
		       url);
		goto out;
	}
	if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
		ha_err(err, errlen, "--push '%s': the scheme must be http or https, not %s", url, scheme);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
		ha_err(err, errlen, "--push '%s': no host in the URL", url);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PASSWORD, &part, 0) == CURLUE_OK) {
		ha_err(err, errlen, "--push: credentials in the URL are refused (the command line is "
		       "visible to every user): set HEAPATTACH_PUSH_USER and HEAPATTACH_PUSH_PASSWORD, "
		       "or HEAPATTACH_PUSH_TOKEN");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK) {
		ha_err(err, errlen, "--push '%s': the URL has a query: give the receiver's base URL "
		       "(heapattach adds /ingest?name=...)", url);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK) {
		ha_err(err, errlen, "--push '%s': the URL has a fragment (#...)", url);
		goto out;
	}
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(part);
	curl_url_cleanup(u);
	return rc;
}

int ha_push_check_app(const char *app, char *err, size_t errlen)
{
	size_t n = strlen(app);
	if (n == 0 || n > 256) {
		ha_err(err, errlen, "--app wants a name of 1 to 256 characters");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (!app_char((unsigned char)app[i])) {
			ha_err(err, errlen, "--app '%s': Pyroscope takes letters, digits and . _ - / only",
			       app);
			return -1;
		}
	return 0;
}

/* A value the user gave (a --label's, a credential) is refused where an
 * untrusted one would be cleaned. */
static const char *value_problem(const char *v)
{
	const unsigned char *p = (const unsigned char *)v;
	if (!*p)
		return "it is empty";
	if (strlen(v) > MAX_VALUE)
		return "it is longer than 1024 bytes";
	if (*p == ' ' || p[strlen(v) - 1] == ' ')
		return "it starts or ends with a blank (Pyroscope trims those)";
	while (*p) {
		int len = hd_utf8_len(p);
		if (!len)
			return "it is not valid UTF-8";
		if (breaks_value(p, len))
			return control(p, len) ? "it holds a control character" : "it holds ',', '{' or '}'";
		p += len;
	}
	return NULL;
}

int ha_push_check_label(const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '='), *why;
	if (!eq || eq == kv) {
		ha_err(err, errlen, "--label '%s': wants NAME=VALUE", kv);
		return -1;
	}
	for (const char *p = kv; p < eq; p++)
		if (!label_name_char((unsigned char)*p)) {
			ha_err(err, errlen, "--label '%s': a label name holds letters, digits, _ and . only",
			       kv);
			return -1;
		}
	if (eq - kv >= 2 && kv[0] == '_' && kv[1] == '_') {
		ha_err(err, errlen, "--label '%s': names starting with __ are Pyroscope's own", kv);
		return -1;
	}
	if ((why = value_problem(eq + 1))) {
		ha_err(err, errlen, "--label '%.*s=...': bad value: %s", (int)(eq - kv), kv, why);
		return -1;
	}
	return 0;
}

int ha_push_check_header(const char *h, char *err, size_t errlen)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";
	static const char *const credential[] = { "authorization", "proxy-authorization", "cookie", NULL };
	static const char *const ours[] = { "host", "content-length", "content-type",
	                                    "transfer-encoding", "expect", NULL };
	const char *colon = strchr(h, ':');
	if (!colon || colon == h) {
		ha_err(err, errlen, "--push-header '%s': wants 'Name: value'", h);
		return -1;
	}
	for (const char *p = h; p < colon; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr(tchar, *p))) {
			ha_err(err, errlen, "--push-header '%s': not a header name before the ':'", h);
			return -1;
		}
	const char *v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (!*v) {
		ha_err(err, errlen, "--push-header '%.*s': no value", (int)(colon - h), h);
		return -1;
	}
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f) {
			ha_err(err, errlen, "--push-header '%.*s: ...': a control character in the value "
			       "(a line break would start another header)", (int)(colon - h), h);
			return -1;
		}
	for (int i = 0; credential[i]; i++)
		if ((size_t)(colon - h) == strlen(credential[i]) &&
		    strncasecmp(h, credential[i], (size_t)(colon - h)) == 0) {
			ha_err(err, errlen, "--push-header %.*s: credentials never come from the command line "
			       "(every user can read it): set HEAPATTACH_PUSH_TOKEN, or "
			       "HEAPATTACH_PUSH_USER and HEAPATTACH_PUSH_PASSWORD", (int)(colon - h), h);
			return -1;
		}
	for (int i = 0; ours[i]; i++)
		if ((size_t)(colon - h) == strlen(ours[i]) &&
		    strncasecmp(h, ours[i], (size_t)(colon - h)) == 0) {
			ha_err(err, errlen, "--push-header %.*s: heapattach sets that header itself",
			       (int)(colon - h), h);
			return -1;
		}
	return 0;
}

/* A credential from the environment: unset and empty are the same; it
 * goes into a header, so no control characters.  0 or -1 with err. */
static int env_value(const char *name, const char **out, char *err, size_t errlen)
{
	const char *v = getenv(name);
	*out = v && *v ? v : NULL;
	for (const unsigned char *p = (const unsigned char *)(*out ? *out : ""); *p; p++)
		if (*p < 0x20 || *p == 0x7f) {
			ha_err(err, errlen, "$%s holds a control character", name);
			return -1;
		}
	return 0;
}

int ha_push_env(struct ha_push_conf *c, char *err, size_t errlen)
{
	if (env_value("HEAPATTACH_PUSH_USER", &c->user, err, errlen) ||
	    env_value("HEAPATTACH_PUSH_PASSWORD", &c->password, err, errlen) ||
	    env_value("HEAPATTACH_PUSH_TOKEN", &c->token, err, errlen))
		return -1;
	if (!c->user != !c->password) {
		ha_err(err, errlen, "$HEAPATTACH_PUSH_%s is set without $HEAPATTACH_PUSH_%s: basic "
		       "authentication wants both", c->user ? "USER" : "PASSWORD",
		       c->user ? "PASSWORD" : "USER");
		return -1;
	}
	if (c->user && c->token) {
		ha_err(err, errlen, "both $HEAPATTACH_PUSH_TOKEN and $HEAPATTACH_PUSH_USER are set: "
		       "one way to authenticate, bearer token or basic");
		return -1;
	}
	if (c->user && strchr(c->user, ':')) {
		ha_err(err, errlen, "$HEAPATTACH_PUSH_USER holds a ':' (basic authentication cannot "
		       "carry it)");
		return -1;
	}
	return 0;
}

int ha_push_check_conf(struct ha_push_conf *c, char *err, size_t errlen)
{
	for (int i = 0; i < c->nurls; i++)
		if (ha_push_check_url(c->urls[i], err, errlen) < 0)
			return -1;
	if (c->app && ha_push_check_app(c->app, err, errlen) < 0)
		return -1;
	for (int i = 0; i < c->nlabels; i++)
		if (ha_push_check_label(c->labels[i], err, errlen) < 0)
			return -1;
	for (int i = 0; i < c->nheaders; i++)
		if (ha_push_check_header(c->headers[i], err, errlen) < 0)
			return -1;
	if (c->cacert && access(c->cacert, R_OK) != 0) {
		ha_err(err, errlen, "--push-cacert %s: %s", c->cacert, strerror(errno));
		return -1;
	}
	return ha_push_env(c, err, errlen);
}

/* ------------------------------------------------------------ the URL */

/* s percent-encoded: everything but RFC 3986's unreserved characters. */
static void put_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '.' || *p == '_' || *p == '~')
			fputc(*p, f);
		else
			fprintf(f, "%%%02X", *p);
}

/* Is label "K=V" named name? */
static int named(const char *label, const char *name)
{
	size_t len = strlen(name);
	return strncmp(label, name, len) == 0 && label[len] == '=';
}

/* The value of the last --label named name, or NULL. */
static const char *user_label(const struct ha_push_conf *c, const char *name)
{
	for (int i = c->nlabels - 1; i >= 0; i--)
		if (named(c->labels[i], name))
			return c->labels[i] + strlen(name) + 1;
	return NULL;
}

char *ha_push_ingest_url(const char *base, const struct ha_push_conf *c,
                         const struct ha_push_meta *m)
{
	char app[257], pid[32], value[MAX_VALUE + 1];
	char *name = NULL, *url = NULL;
	size_t nlen, ulen;
	const char *const defaults[4][2] = { { "hostname", m->host }, { "pid", pid },
	                                     { "comm", m->comm }, { "kind", m->kind } };
	const char *sep = "";

	snprintf(pid, sizeof pid, "%" PRId64, m->pid);
	if (c->app)
		snprintf(app, sizeof app, "%s", c->app);
	else
		ha_push_clean_value(m->comm, 1, app, sizeof app);
	/* The name, APP{k=v,...}, unescaped: the defaults (a --label of the
	 * same name replaces one), then the user's other labels (the last of
	 * two of one name). */
	FILE *f = open_memstream(&name, &nlen);
	if (!f)
		return NULL;
	fprintf(f, "%s{", app);
	for (int i = 0; i < 4; i++) {
		const char *v = user_label(c, defaults[i][0]);
		if (!v && i == 0 && !defaults[i][1][0])
			continue; /* the host is not known: no such label */
		if (!v) {
			ha_push_clean_value(defaults[i][1], 0, value, sizeof value);
			v = value;
		}
		fprintf(f, "%s%s=%s", sep, defaults[i][0], v);
		sep = ",";
	}
	for (int i = 0; i < c->nlabels; i++) {
		size_t klen = (size_t)(strchr(c->labels[i], '=') - c->labels[i]);
		int skip = 0;
		for (int k = 0; k < 4; k++)
			skip |= named(c->labels[i], defaults[k][0]);
		for (int j = i + 1; j < c->nlabels; j++)
			skip |= strncmp(c->labels[j], c->labels[i], klen + 1) == 0;
		if (!skip) {
			fprintf(f, "%s%s", sep, c->labels[i]);
			sep = ",";
		}
	}
	fputc('}', f);
	if (fclose(f) != 0) {
		free(name);
		return NULL;
	}
	/* base without its trailing slashes, /ingest and the query. */
	size_t blen = strlen(base);
	while (blen > 0 && base[blen - 1] == '/')
		blen--;
	f = open_memstream(&url, &ulen);
	if (!f) {
		free(name);
		return NULL;
	}
	fprintf(f, "%.*s/ingest?name=", (int)blen, base);
	put_escaped(f, name);
	fprintf(f, "&from=%" PRId64 "&until=%" PRId64 "&format=pprof&spyName=heapattach", m->from,
	        m->until);
	free(name);
	if (fclose(f) != 0) {
		free(url);
		return NULL;
	}
	return url;
}
