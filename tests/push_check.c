/* push_check.c -- the parts of src/push that need no network
 * (tests/t_push_unit.sh): the cleaning of untrusted names for Pyroscope's
 * name{k=v} syntax, the ingest URL, and ha_push_profile_load's errors,
 * which must come back as -1 and a line, never end the process, and leave
 * no statement or transaction open (the database is read again after).
 *
 *   push_check DB CORRUPT   (DB: a db_fill --attacher file; CORRUPT: a copy
 *                            with the buckets table's root page overwritten:
 *                            it opens, and the query of the values fails) */
#define _GNU_SOURCE
#include "push.h"

#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

static void clean(const char *in, int app, const char *want)
{
	char out[64];
	ha_push_clean_value(in, app, out, sizeof out);
	EXPECT(strcmp(out, want) == 0, "clean(\"%s\", %d) = \"%s\", want \"%s\"", in, app, out, want);
}

/* The descriptors open in this process: a connection left open by an error
 * would hold one. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	char err[512];
	if (argc != 3) {
		fprintf(stderr, "usage: push_check DB CORRUPT\n");
		return 2;
	}
	const char *db = argv[1];

	/* Label values: what ends a value or is a control becomes '_', the
	 * rest (UTF-8 included) stays; blanks at the ends would be trimmed. */
	clean("web-1", 0, "web-1");
	clean("a,b{c}d", 0, "a_b_c_d");
	clean("x=y+z%&#", 0, "x=y+z%&#");
	clean(" padded ", 0, "_padded_");
	clean("tab\there\x7f", 0, "tab_here_");
	clean("caf\xc3\xa9", 0, "caf\xc3\xa9");
	clean("c1\xc2\x9b", 0, "c1_");              /* U+009B, CSI */
	clean("bad\xff\xc3", 0, "bad__");            /* invalid bytes */
	clean("\xe0\x80\xaf", 0, "___");             /* overlong '/' */
	clean("\xed\xa0\x80", 0, "___");             /* a surrogate */
	clean("", 0, "_");
	/* Service names: letters, digits and ._-/ only, one '_' a character. */
	clean("python3.11", 1, "python3.11");
	clean("my app/v2", 1, "my_app/v2");
	clean("caf\xc3\xa9!", 1, "caf__");
	/* Cut at a character, never inside one. */
	char small[5];
	ha_push_clean_value("ab\xc3\xa9\xc3\xa9", 0, small, sizeof small);
	EXPECT(strcmp(small, "ab\xc3\xa9") == 0, "cut: \"%s\"", small);

	/* The URL: base without its trailing slashes, the name escaped, a
	 * --label replacing a default of its name, the last of two winning. */
	struct ha_push_conf c = { .nlabels = 3, .labels = { "hostname=h1", "team=a", "team=b" } };
	struct ha_push_meta m = { .comm = "sh,x", .host = "ignored", .pid = 42, .kind = "peak",
	                          .from = 100, .until = 160 };
	char *url = ha_push_ingest_url("http://p:4040/base//", &c, &m);
	const char *want = "http://p:4040/base/ingest?name=sh_x%7Bhostname%3Dh1%2Cpid%3D42%2C"
	                   "comm%3Dsh_x%2Ckind%3Dpeak%2Cteam%3Db%7D&from=100&until=160"
	                   "&format=pprof&spyName=heapattach";
	EXPECT(url && strcmp(url, want) == 0, "url:\n  %s\nwant\n  %s", url ? url : "(null)", want);
	free(url);
	/* An unknown host: no hostname label; --app over the comm. */
	struct ha_push_conf c2 = { .app = "svc" };
	m.host = "";
	url = ha_push_ingest_url("https://p", &c2, &m);
	want = "https://p/ingest?name=svc%7Bpid%3D42%2Ccomm%3Dsh_x%2Ckind%3Dpeak%7D&from=100&until=160"
	       "&format=pprof&spyName=heapattach";
	EXPECT(url && strcmp(url, want) == 0, "url:\n  %s\nwant\n  %s", url ? url : "(null)", want);
	free(url);

	/* Loading: errors come back, the process goes on, the file is read as
	 * well as before after each, and nothing stays open (the statement
	 * that failed is finalized, the connection closed). */
	struct ha_push_profile p;
	int fds = open_fds();
	for (int round = 0; round < 3; round++) {
		EXPECT(ha_push_profile_load(argv[2], 5, &p, err, sizeof err) == -1, "the corrupt file loaded");
		EXPECT(strstr(err, "corrupt database") != NULL, "the corrupt file: %s", err);
		EXPECT(ha_push_profile_load("/nonexistent/x.db", 2, &p, err, sizeof err) == -1,
		       "a missing file loaded");
		EXPECT(strstr(err, "/nonexistent/x.db") != NULL, "the error: %s", err);
		EXPECT(ha_push_profile_load(db, 999, &p, err, sizeof err) == -1, "snapshot 999 loaded");
		EXPECT(strstr(err, "no snapshot 999") != NULL, "the error: %s", err);
		EXPECT(ha_push_profile_load(db, 8, &p, err, sizeof err) == 0, "snapshot 8: %s", err);
		EXPECT(p.size > 20 && p.body[0] == 0x1f && p.body[1] == 0x8b, "not gzip (%zu bytes)",
		       p.size);
		EXPECT(strcmp(p.reason, "peak") == 0 && p.pid == 6161 && strcmp(p.comm, "srv") == 0,
		       "snapshot 8: %s %lld %s", p.reason, (long long)p.pid, p.comm);
		EXPECT(p.from == 1700000180 && p.until == 1700000210, "period %lld..%lld",
		       (long long)p.from, (long long)p.until);
		ha_push_profile_free(&p);
	}
	EXPECT(open_fds() == fds, "%d descriptors open after the errors, %d before", open_fds(), fds);
	/* A file that is not a database. */
	char junk[] = "/tmp/push_check.XXXXXX";
	int fd = mkstemp(junk);
	EXPECT(fd >= 0 && write(fd, "not a database, not at all, really not", 38) == 38, "mkstemp");
	close(fd);
	EXPECT(ha_push_profile_load(junk, 2, &p, err, sizeof err) == -1, "junk loaded");
	EXPECT(strstr(err, "not a heapattach database") || strstr(err, "not a database"), "junk: %s",
	       err);
	unlink(junk);
	return UNIT_RESULT("push: cleaning, URL, profile loading and its errors");
}
