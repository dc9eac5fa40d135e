/* push_profile.c -- one snapshot of a database as the profile a store
 * receives: what `heapdiff --format pprof DB S` writes (report_pprof.c,
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
 * writer has just committed.  The report library ends the process on an
 * error (a corrupt file, no memory); here a trap (hd_trap_set) turns that
 * into -1 and one line, because heapattach is still attached. */
#define _GNU_SOURCE
#include "push.h"

#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "util.h"

/* Everything the load builds, on the heap: after hd_die's longjmp the
 * caller's locals changed since setjmp would be indeterminate, this is
 * not. */
struct job {
	struct hd_trap trap;
	struct hd_source src;
	struct hd_snap b, prev;
	struct hd_report r;
	struct hd_buf body;
	int rc;
};

static void build(struct job *j, const char *path, int64_t id)
{
	char spec[32];
	struct hd_filter flt = { .kind = HD_KIND_ALLOC };
	hd_source_open(&j->src, path, 0);
	snprintf(spec, sizeof spec, "%" PRId64, id);
	hd_resolve(&j->src, spec, 0, &j->b);
	j->r.b = &j->b;
	if (hd_prev_snapshot(&j->b, &j->prev))
		j->r.alloc_from = &j->prev;
	hd_build_rows(&j->r, &flt);
	hd_pprof_encode(&j->r, &j->body);
}

int ha_push_profile_load(const char *path, int64_t id, struct ha_push_profile *p, char *err,
                         size_t errlen)
{
	struct job *j = calloc(1, sizeof *j);
	int rc;
	memset(p, 0, sizeof *p);
	if (!j) {
		ha_err(err, errlen, "out of memory");
		return -1;
	}
	if (setjmp(j->trap.jb) == 0) {
		hd_trap_set(&j->trap);
		build(j, path, id);
		hd_trap_set(NULL);
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
		/* hd_die: the trap is off again.  The statement that failed
		 * is still prepared, and SQLite closes no connection with one:
		 * left open, its read transaction would keep the writer's
		 * checkpoints from ever reaching the end of the WAL file. */
		ha_err(err, errlen, "%s", j->trap.msg);
		sqlite3_stmt *q;
		while (j->src.h && (q = sqlite3_next_stmt(j->src.h, NULL)))
			sqlite3_finalize(q);
		j->rc = -1;
	}
	rc = j->rc;
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
