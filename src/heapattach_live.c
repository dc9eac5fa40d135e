/*
 * heapattach_live.c -- the command's wiring of src/live/: the live model
 * that the collector and the writer feed through a queue (behind both the
 * status line and the view), and the --live view with the stderr it holds
 * while it owns the terminal.
 *
 * Separate because it is the plumbing between threads and the terminal:
 * when there is a model, how its messages are taken, and how nothing said on
 * stderr is lost or drawn over the view.  What the view shows is src/live/'s
 * and when it is redrawn is heapattach_stay.c's.  It calls only src/live/,
 * src/common/ and libc.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "heapattach_int.h"
#include "live_model.h"
#include "live_view.h"
#include "queue.h"
#include "target.h"
#include "util.h"

/* The live model, when the view or the status line on a terminal will show
 * what it knows, with q (which the caller hands the collector and the
 * writer) ready for its messages; otherwise, or if it cannot be made, NULL. */
struct ha_live *cmd_live_start(const struct options *o, const struct ha_target *t,
                               double start_time, struct ha_queue *q)
{
	struct ha_live *live;
	if (!(o->live || (!o->quiet && isatty(STDERR_FILENO))))
		return NULL;
	live = ha_live_new(t->pid, t->comm, start_time);
	if (live)
		ha_queue_init(q);
	return live;
}

/* Take every message the collector and the writer sent the live model;
 * with wait_ms > 0, wait that long at most for a frame (just asked for). */
void cmd_live_feed(struct ha_queue *q, struct ha_live *live, int wait_ms)
{
	struct ha_qmsg *m;
	double until = ha_now_ms() + wait_ms;
	int left = wait_ms;
	while ((m = ha_queue_get(q, left > 0 ? left : 0)) != NULL) {
		int frame = m->type == HA_LMSG_FRAME;
		ha_live_take(live, m);
		left = frame ? 0 : (int)(until - ha_now_ms());
	}
}

/* While the view owns the terminal, what heapattach says on stderr (an
 * interval raised, a warning) goes to a memory file, and is said after the
 * view is gone: nothing is lost, nothing is drawn over the view. */
static int hold_stderr(int *saved)
{
	int mem = memfd_create("heapattach-stderr", MFD_CLOEXEC);
	*saved = mem >= 0 ? dup(STDERR_FILENO) : -1;
	if (*saved < 0 || dup2(mem, STDERR_FILENO) < 0) {
		if (mem >= 0)
			close(mem);
		if (*saved >= 0)
			close(*saved);
		*saved = -1;
		return -1;
	}
	return mem;
}

static void release_stderr(int saved, int mem)
{
	char buf[4096];
	ssize_t n;
	if (saved < 0)
		return;
	dup2(saved, STDERR_FILENO);
	close(saved);
	for (off_t off = 0; (n = pread(mem, buf, sizeof buf, off)) > 0; off += n)
		if (write(STDERR_FILENO, buf, (size_t)n) < 0)
			break;
	close(mem);
}

/* After the collector and the writer stopped: the model takes what they
 * sent last, and goes with its queue. */
void cmd_live_end(struct ha_queue *q, struct ha_live *live)
{
	if (!live)
		return;
	cmd_live_feed(q, live, 0);
	ha_live_free(live);
	ha_queue_destroy(q);
}

/* --live with a model: the view, which from now on holds stderr; or one line
 * saying why not, and the session goes on without it. */
void cmd_view_open(const struct options *o, struct ha_live *live, struct cmd_view *v)
{
	char err[512];
	v->view = NULL;
	v->saved_stderr = -1;
	v->held = -1;
	if (!o->live || !live)
		return;
	v->view = ha_view_open(err, sizeof err);
	if (!v->view)
		fprintf(stderr, "heapattach: --live: %s; going on without the view\n", err);
	else
		v->held = hold_stderr(&v->saved_stderr);
}

/* The view gone, and what was said meanwhile said now. */
void cmd_view_close(struct cmd_view *v)
{
	if (!v->view)
		return;
	ha_view_close(v->view);
	release_stderr(v->saved_stderr, v->held);
	v->view = NULL;
}
