/*
 * heapattach.c -- the heapattach command: attach to a running process, profile, detach.
 *
 * The order of events is the product's promise to the user:
 *   1. check the target by reading /proc only (refusals leave it untouched);
 *   2. open the socket and the ring the agent will use;
 *   3. inject: one thread briefly hijacked to dlopen the agent and call its
 *      init, then restored exactly (src/inject/inject.c);
 *   4. handshake with the agent (src/attach/session.c);
 *   5. stay attached until Ctrl-C, SIGTERM, --duration or the target's exit;
 *   6. detach: the agent restores what it changed and goes dormant.
 * Termination signals are blocked from the start and read from a signalfd,
 * so a Ctrl-C can never interrupt the injector half-way: one before step 3
 * ends the command there, saying nothing was done to the target (exit
 * 128+N); one during steps 3 and 4 is said, and detaches at once.
 *
 * This file is main: the process-wide settings, steps 1 and 2 with every
 * refusal, and the exit status.  The rest is one file a concern, each
 * called from here or from the one that drives it, never back
 * (heapattach_int.h draws the calls):
 *   heapattach_args.c     the options, their defaults, the ring split;
 *   heapattach_db.c       the database's name, checks, and its open beside
 *                         the injection;
 *   heapattach_session.c  the agent: which file, inject and handshake
 *                         (3, 4), detach (6);
 *   heapattach_record.c   one recording session: the pipeline started,
 *                         stopped and summed up;
 *   heapattach_stay.c     signals, timers and the loop while attached (5);
 *   heapattach_status.c   the status line and the closing lines;
 *   heapattach_live.c     the live model's queue and the --live view.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "debuginfod_get.h"
#include "heapattach_int.h"
#include "agent_file.h"
#include "pf_events.h"

#include "inject.h"
#include "session.h"
#include "target.h"
#include "util.h"

int main(int argc, char **argv)
{
	double t_start = ha_now_ms();
	/* Before any thread's scheduling attributes change (inject_sched.c). */
	ha_sched_note_default();
	struct options o;
	char agent[PATH_MAX], err[512], dbname[PATH_MAX];
	struct ha_target t;
	struct ha_session s;
	uint32_t rings;
	int status;

	ha_args_defaults(&o);
	if (ha_parse_args(argc, argv, &o))
		return EXIT_USAGE;
	ha_background_nice = (int)o.nice; /* before the threads that use it exist */
	/* debuginfod's cache beside ours (unless DEBUGINFOD_CACHE_PATH is set):
	 * the environment is changed here, before any thread exists.  The
	 * symbolizer never waits on the network: a fetcher thread asks the
	 * servers (debuginfod_fetch.h). */
	ha_debuginfod_setup();
	/* The symbolizer holds a descriptor for each file the target maps,
	 * and --rss one for each page-fault event. */
	ha_raise_fd_limit();
	if (ha_args_rings(&o, &rings))
		return EXIT_USAGE;
	int sigfd = cmd_setup_signals();
	if (sigfd < 0) {
		fprintf(stderr, "heapattach: signalfd: %s\n", strerror(errno));
		return EXIT_FAILED;
	}

	/* Everything that can refuse does so before the target is touched. */
	if (o.live && !(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))) {
		fprintf(stderr, "heapattach: --live needs a terminal on standard input and output\n");
		return EXIT_REFUSED;
	}
	if (cmd_find_agent(&o, agent, sizeof agent))
		return EXIT_REFUSED;
	ha_agent_file_set(agent);
	if (ha_target_check(o.pid, agent, &t, err, sizeof err)) {
		fprintf(stderr, "heapattach: %s\n", err);
		return EXIT_REFUSED;
	}
	double t_checked = ha_now_ms();
	if (o.verbose)
		fprintf(stderr, "heapattach: target %d (%s) checked in %.1f ms%s%s\n", (int)t.pid,
		        t.comm, t_checked - t_start, t.agent_loaded ? "; agent already loaded" : "",
		        t.seccomp_filter ? "; a seccomp filter is active" : "");
	if (o.trim) { /* no profile: heapattach_trim.c */
		ha_session_init(&s);
		s.own_pid = t.own_pid;
		/* the session is opened by cmd_trim when it attaches */
		status = cmd_trim(&o, &t, &s, t_start, t_checked);
		ha_session_close(&s);
		return status;
	}
	if (o.db)
		snprintf(dbname, sizeof dbname, "%s", o.db);
	else
		default_db_name(&t, dbname, sizeof dbname);
	if (db_path_usable(dbname, err, sizeof err)) {
		fprintf(stderr, "heapattach: %s\n", err);
		return EXIT_REFUSED;
	}
	struct db_open_job dbj = { .path = dbname };
	/* An existing file is opened (and so checked: a heapattach database of
	 * a version we know, not damaged) before the target is touched; only
	 * the creation of a new one, which can fail only in the ways
	 * db_path_usable looked at or for lack of space, runs alongside. */
	if (access(dbname, F_OK) == 0 && db_open_finish(&dbj)) {
		fprintf(stderr, "heapattach: %s\n", dbj.err);
		return EXIT_REFUSED;
	}
	ha_session_init(&s);
	s.own_pid = t.own_pid;
	if (ha_session_open(&s, t.pid, t.uid, t.gid, t.same_root, o.ring_bytes / rings, rings, err,
	                    sizeof err)) {
		fprintf(stderr, "heapattach: %s\n", err);
		ha_session_close(&s);
		return EXIT_REFUSED;
	}
	if (o.verbose && s.not_tmp[0])
		fprintf(stderr, "heapattach: the agent's socket is %s%s (%s)\n", s.dir,
		        s.abstract ? ", an abstract name" : "", s.not_tmp);

	/* --rss: the page-fault events are on before the agent is ready, so
	 * that the session samples page faults from the moment it says it is
	 * attached.  (They observe the target; they do not change it.) */
	struct ha_pf *pf = o.rss ? cmd_open_rss(&o, t.pid) : NULL;
	static struct cmd_python py;
	cmd_py_detect(&o, &t, &py);
	/* A Ctrl-C (SIGTERM, SIGHUP) while we prepared: the target is as it
	 * was once the socket's directory and the --rss events are gone, so
	 * stop here and say so.  Afterwards the injection runs to its end (it
	 * does not stop half-way), and the loop while attached reads the
	 * signal at once and detaches. */
	const char *stop_name = NULL;
	int stop = cmd_stop_pending(&stop_name);
	if (stop) {
		fprintf(stderr, "heapattach: interrupted (%s) before attaching: nothing was done to %d (%s)\n",
		        stop_name, (int)t.pid, t.comm);
		status = 128 + stop;
	} else {
		status = cmd_attach(&o, &t, &s, &py, &dbj, t_start, t_checked);
	}
	if (status) {
		db_open_abandon(&dbj);
		ha_pf_close(pf);
	} else {
		if (cmd_stop_pending(&stop_name))
			fprintf(stderr, "heapattach: interrupted (%s) while attaching: the injection does "
			        "not stop half-way; detaching at once\n", stop_name);
		status = cmd_profile(&o, &t, &s, &py, sigfd, &dbj, dbname, pf);
	}
	cmd_py_end(&py);
	ha_session_close(&s);
	close(sigfd);
	return status;
}
