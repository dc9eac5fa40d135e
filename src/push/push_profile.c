/* push_profile.c -- one snapshot of a database as the profile a store
 * receives: what `heapdiff --format pprof DB S` writes (src/render/report_pprof.c,
 * not a second encoder), with the facts its URL needs.
 *
 * The profile has the inuse_* values at S and the alloc_* values of S's
 * period, since the snapshot before it by time (a Go heap profile in
 * Pyroscope is that: the store sums alloc over time and averages inuse);
 * from and until are that period.  Heap and mmap, folded, unfiltered.
 *
 * It is read through a read-only connection of the calling thread's own,
 * opened and closed here: in heapattach the push thread never touches the
 * writer's handle, and a fresh read transaction sees the snapshot the
 * writer has just committed.  The report library returns its errors
 * (report.h): one line, and -1, because heapattach is still attached;
 * each step frees what it built, and every statement is finalized before
 * it returns, so the connection closes and its read transaction ends
 * (left open, it would keep the writer's checkpoints from ever reaching
 * the end of the WAL file). */
#define _GNU_SOURCE
#include "push.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"
#include "util.h"

/* Everything the load builds, on the heap: struct hd_err alone is 8 KiB,
 * and a push thread's stack is the attacher's to size. */
struct job {
	struct hd_err err;
	struct hd_source src;
	struct hd_snap b, prev;
	struct hd_report r;
	struct hd_buf body;
};

static int build(struct job *j, const char *path, int64_t id)
{
	char spec[32];
	struct hd_filter flt = { .kind = HD_KIND_ALLOC };
	int found;
	if (hd_source_open(&j->src, path, 0, &j->err) < 0)
		return HD_ERR;
	snprintf(spec, sizeof spec, "%" PRId64, id);
	if (hd_resolve(&j->src, spec, 0, &j->b) < 0 || (found = hd_prev_snapshot(&j->b, &j->prev)) < 0)
		return HD_ERR;
	j->r.b = &j->b;
	if (found)
		j->r.alloc_from = &j->prev;
	if (hd_build_rows(&j->r, &flt) < 0)
		return HD_ERR;
	return hd_pprof_encode(&j->r, &j->body);
}

int ha_push_profile_load(const char *path, int64_t id, struct ha_push_profile *p, char *err,
                         size_t errlen)
{
	struct job *j = calloc(1, sizeof *j);
	int rc = 0;
	memset(p, 0, sizeof *p);
	if (!j) {
		ha_err(err, errlen, "out of memory");
		return -1;
	}
	if (build(j, path, id) == HD_OK) {
		p->body = j->body.p;
		p->size = j->body.n;
		j->body.p = NULL;
		p->snapshot_id = j->b.id;
		p->pid = j->b.pid;
		snprintf(p->comm, sizeof p->comm, "%s", j->b.comm);
		snprintf(p->host, sizeof p->host, "%s", j->b.host);
		snprintf(p->reason, sizeof p->reason, "%s", j->b.reason);
		p->until = (int64_t)floor(j->b.time);
		p->from = j->r.alloc_from ? (int64_t)floor(j->prev.time) : p->until;
	} else {
		ha_err(err, errlen, "%s", j->err.msg);
		rc = -1;
	}
	hd_free_rows(&j->r);
	hd_buf_free(&j->body);
	hd_source_close(&j->src);
	free(j);
	return rc;
}

void ha_push_profile_free(struct ha_push_profile *p)
{
	free(p->body);
	p->body = NULL;
	p->size = 0;
}

void ha_push_profile_meta(const struct ha_push_profile *p, struct ha_push_meta *m)
{
	*m = (struct ha_push_meta){ .comm = p->comm, .host = p->host, .pid = p->pid,
	                            .kind = strcmp(p->reason, "peak") == 0 ? "peak" : "snapshot",
	                            .from = p->from, .until = p->until };
}
