/*
 * heapattach_record.c -- one recording session, from the agent's READY to
 * the last line said: the collector, the writer and the database, --rss's
 * page-fault events, --push's threads and the live model wired together;
 * then stay attached, detach, drain the rings into the final snapshot and
 * say what was recorded.
 *
 * Separate because it owns the recording pipeline's life: what is started
 * in which order, what is stopped, closed and freed in which order (the
 * collector before the writer, the writer's database after the push
 * threads), and the exit status that follows.  It drives heapattach_stay.c
 * (the loop), heapattach_session.c (the detach), heapattach_live.c,
 * heapattach_status.c and heapattach_db.c; none of them calls it.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "debuginfod_fetch.h"
#include "heapattach_int.h"
#include "collector.h"
#include "db_write.h"
#include "live_model.h"
#include "pf_events.h"
#include "push.h"
#include "queue.h"
#include "session.h"
#include "target.h"
#include "util.h"
#include "writer.h"

/* --push at the end: what is still queued gets --push-timeout at most (a
 * signal on sigfd ends the wait), then db, which the writer left open, is
 * closed (after the push threads' readers: the writer's handle stays the
 * last on the WAL file), and each receiver's line is said. */
static void end_push(struct ha_push *push, int sigfd, struct ha_db *db)
{
	if (!push)
		return;
	ha_push_finish(push, sigfd);
	ha_db_close(db);
	cmd_print_push(push);
	ha_push_free(push);
}

/* --rss: the page-fault events on every thread of the target, or NULL
 * after one line saying why not (the heap profile goes on without). */
struct ha_pf *cmd_open_rss(const struct options *o, pid_t pid)
{
	char err[512];
	struct ha_pf_report rep;
	double t0 = ha_now_ms();
	struct ha_pf *pf = ha_pf_open(pid, o->rss_period, &rep, err, sizeof err);
	if (!pf) {
		fprintf(stderr, "heapattach: --rss: %s; going on without resident memory\n", err);
		return NULL;
	}
	if (rep.threads_left_out)
		fprintf(stderr, "heapattach: --rss: %d of %d threads left out: each thread needs one "
		        "event per CPU (%d CPUs) and the open files limit is %lu; their page faults "
		        "are not sampled\n", rep.threads_left_out, rep.threads + rep.threads_left_out,
		        rep.cpus, rep.fd_limit);
	if (o->verbose)
		fprintf(stderr, "heapattach: --rss: %d threads x %d CPUs of page-fault events in %.1f ms, "
		        "rings of %zu KiB per CPU%s\n", rep.threads, rep.cpus, ha_now_ms() - t0,
		        rep.ring_bytes / 1024,
		        rep.inherit_thread ? "" : " (kernel without inherit_thread: forked children's "
		                                  "samples are dropped)");
	return pf;
}

/* The live session: start the collector, then (once the database is
 * open) the writer, stay attached, detach, and say what was recorded.  The
 * writer owns the database from its start (it closes it).  Returns the exit
 * status. */
int cmd_profile(const struct options *o, const struct ha_target *t, struct ha_session *s,
                struct cmd_python *py, int sigfd, struct db_open_job *dbj, const char *dbname,
                struct ha_pf *pf)
{
	char err[512];
	char exe_link[64], exe[PATH_MAX] = "";
	snprintf(exe_link, sizeof exe_link, "/proc/%d/exe", (int)t->pid);
	ssize_t n = readlink(exe_link, exe, sizeof exe - 1);
	exe[n > 0 ? n : 0] = '\0';
	char host[256] = "";
	if (gethostname(host, sizeof host - 1) != 0)
		host[0] = '\0';
	struct ha_db_session info = { .pid = t->pid, .comm = t->comm, .exe = exe,
	                              .interval = o->interval, .start_time = ha_unix_now(),
	                              .hostname = host };
	static struct ha_writer writer;
	static struct ha_collector coll;
	static struct ha_queue live_q;
	/* The view, or the status line on a terminal, shows what the live
	 * model knows. */
	struct ha_live *live = cmd_live_start(o, t, info.start_time, &live_q);
	if (live)
		coll.to_live = writer.to_live = &live_q;
	/* --push: its threads are told of each snapshot the writer commits;
	 * the writer leaves the database to us to close after them. */
	struct ha_push *push = NULL;
	if (o->push.nurls) {
		push = ha_push_start(&o->push, dbname, err, sizeof err);
		if (!push) {
			fprintf(stderr, "heapattach: %s; going on without pushing\n", err);
		} else {
			writer.on_snapshot = ha_push_snapshot;
			writer.on_snapshot_arg = push;
			writer.keep_db = 1;
		}
	}
	coll.pf = pf;
	coll.rss_period = coll.pf ? o->rss_period : 0;
	info.rss_period = coll.rss_period;
	writer.pid = t->pid;
	writer.own_pid = t->own_pid;
	writer.verbose = o->verbose;
	writer.snapshot_period = o->snapshot_every_s;
	/* The collector drains the ring from the moment the agent is ready;
	 * what it sends the writer waits in the writer's inbox until the
	 * database is open.  (The agent samples from READY on: a collector
	 * started after the open, 30-70 ms later on a busy machine, found
	 * the rings of a 2-thread malloc loop half full and dropped
	 * samples.) */
	ha_writer_init(&writer);
	coll.pid = t->pid;
	coll.ring = s->ring;
	coll.data_size = s->ring_data_size;
	coll.rings = s->ring_count;
	coll.interval = o->interval;
	coll.adaptive = !o->block;
	coll.no_stack_refs = o->no_stack_refs;
	coll.no_memory_view = o->no_memory_view;
	coll.max_callpaths = o->max_callpaths;
	coll.snapshot_period = o->snapshot_every_s;
	coll.writer_done = &writer.snapshots_written;
	coll.verbose = o->verbose;
	coll.to_writer = &writer.inbox;
	cmd_py_collector(py, &coll, t->pid);
	struct cmd_reach reach = { .pid = t->pid, .ring = s->ring, .at_end = o->reach,
	                           .verbose = o->verbose, .lock = PTHREAD_MUTEX_INITIALIZER,
	                           .cond = PTHREAD_COND_INITIALIZER };
	coll.reach = cmd_reach_hook;
	coll.reach_ctx = &reach;
	static struct cmd_alloc alloc; /* 4 KiB of figures: not on this stack */
	cmd_alloc_init(&alloc, s, o->verbose);
	coll.alloc_ask = cmd_alloc_hook;
	coll.alloc_ctx = &alloc;
	int coll_failed = ha_collector_start(&coll);
	if (coll_failed)
		fprintf(stderr, "heapattach: %s\n", coll.err);
	/* The files the symbols come from, opened now, while the open of the
	 * database goes on: a target that exits before then is still named. */
	struct ha_fetcher *fetch = o->no_debuginfod ? NULL : ha_fetcher_start(30.0, o->verbose);
	if (fetch) {
		writer.on_missing = ha_fetcher_want;
		writer.missing_ctx = fetch;
	}
	cmd_fetcher = fetch;
	if (!coll_failed)
		ha_writer_prepare(&writer);
	int db_failed = db_open_finish(dbj);
	if (db_failed)
		fprintf(stderr, "heapattach: %s\n", dbj->err);
	else if (o->verbose)
		fprintf(stderr, "heapattach: database %s opened in %.1f ms\n", dbname, dbj->ms);
	writer.db = dbj->db;
	if (!coll_failed && !db_failed &&
	    (ha_db_begin_session(writer.db, &info, &writer.session_id, err, sizeof err) ||
	     ha_writer_start(&writer))) {
		fprintf(stderr, "heapattach: %s: %s\n", dbname, writer.err[0] ? writer.err : err);
		db_failed = 1;
	}
	if (coll_failed || db_failed) {
		/* The agent restores itself when the caller hangs up. */
		if (!coll_failed)
			ha_collector_stop(&coll, "detach");
		ha_writer_discard(&writer);
		cmd_fetcher = NULL;
		ha_fetcher_stop(fetch);
		ha_pf_close(coll.pf);
		dbj->db = writer.db;
		db_open_abandon(dbj);
		end_push(push, -1, NULL);
		return EXIT_FAILED;
	}

	int signo = 0;
	struct cmd_view view;
	cmd_view_open(o, live, &view);
	enum stop_reason why = cmd_stay_attached(o, s, sigfd, &coll, live, view.view, push, &signo);
	cmd_view_close(&view);
	if (why != STOP_TARGET_EXIT && why != STOP_AGENT_LOST && why != STOP_TARGET_EXEC) {
		cmd_reach_last(&coll);
		cmd_alloc_last(&alloc);
	}
	int status = cmd_detach(o, t, s, why, signo);

	/* What the agent wrote before it left is still in our mapping of the
	 * ring: the collector drains it into the final snapshot. */
	ha_collector_stop(&coll, why == STOP_TARGET_EXIT   ? "exit"
	                         : why == STOP_TARGET_EXEC ? "exec"
	                                                   : "detach");
	cmd_py_note(py, &coll, &writer);
	ha_writer_finish(&writer, ha_unix_now());
	cmd_fetcher = NULL;
	ha_fetcher_stop(fetch);
	cmd_live_end(&live_q, live);
	cmd_print_summary(o, s, &coll, &writer, &info, dbname);
	/* The target is detached and the database complete: only the
	 * receivers are waited for. */
	end_push(push, sigfd, writer.db);
	return writer.failed ? EXIT_FAILED : status;
}
