/*
 * heapattach_session.c -- the command's dealings with the agent: which
 * agent file to inject, the injection with the handshake riding on the
 * injector's thread (steps 3 and 4 of heapattach.c's order of events), and
 * the detach with the lines that say how the session ended (step 6).
 *
 * Separate because it is where the target is changed: everything here
 * either puts the agent in or has it leave, and says so in the words a user
 * reads.  What happens while attached (heapattach_stay.c) and what is
 * recorded (heapattach_record.c) are not its business.  It calls
 * src/attach/ (inject.c, session.c) and, to start the database's open at
 * the right moment, heapattach_db.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "heapattach_int.h"
#include "ha_proto.h"
#include "inject.h"
#include "proc.h"
#include "session.h"
#include "target.h"
#include "util.h"

#ifndef HA_PKGLIBDIR
#define HA_PKGLIBDIR "/usr/local/lib/heapattach"
#endif

/* The agent to inject: --agent, $HEAPATTACH_AGENT, the build tree next to
 * this binary (src/../agent/.libs), then the installed one. */
int cmd_find_agent(const struct options *o, char *out, size_t outlen)
{
	const char *cand = o->agent ? o->agent : getenv("HEAPATTACH_AGENT");
	const char *from = o->agent ? "--agent" : "HEAPATTACH_AGENT";
	char self[PATH_MAX], built[PATH_MAX + 64];

	if (!cand || !*cand) {
		from = NULL;
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		cand = HA_PKGLIBDIR "/" HA_AGENT_SONAME;
		if (n > 0) {
			self[n] = '\0';
			snprintf(built, sizeof built, "%s/../agent/.libs/%s", dirname(self),
			         HA_AGENT_SONAME);
			if (access(built, R_OK) == 0)
				cand = built;
		}
	}
	if (!realpath(cand, out)) {
		/* Where it was looked for, and how to say where it is. */
		if (from)
			fprintf(stderr, "heapattach: agent not found: %s (from %s): %s\n", cand, from,
			        strerror(errno));
		else
			fprintf(stderr, "heapattach: agent not found: %s: %s (not installed there: give "
			        "its path with --agent PATH or HEAPATTACH_AGENT)\n", cand, strerror(errno));
		return -1;
	}
	(void)outlen;
	return 0;
}

static void print_counters(const char *what, pid_t pid, double ms, const struct ha_counters *c)
{
	fprintf(stderr,
	        "heapattach: %s %d in %.1f ms: malloc=%llu calloc=%llu realloc=%llu "
	        "slots=%llu\n",
	        what, (int)pid, ms, (unsigned long long)c->malloc_calls,
	        (unsigned long long)c->calloc_calls,
	        (unsigned long long)c->realloc_calls, (unsigned long long)c->slots_patched);
}

/* The handshake runs on the injector's thread while the agent's init call
 * is under way (see ha_inject_opts.watch): the agent answers from the
 * hijacked thread, which is on a CPU already, and the injector is awake. */
static int handshake_watch(void *ctx)
{
	return ha_session_handshake_fd(ctx);
}

static void handshake_step(void *ctx)
{
	(void)ha_session_handshake_step(ctx);
}

/* Inject the agent and complete the handshake.  Returns 0, or an exit
 * status after printing the reason. */
int cmd_attach(const struct options *o, const struct ha_target *t, struct ha_session *s,
               const struct cmd_python *py, struct db_open_job *dbj, double t_start,
               double t_checked)
{
	double t_prepared = ha_now_ms();
	char err[512];
	struct ha_init_args args = { .magic = HA_PROTO_MAGIC, .version = HA_PROTO_VERSION,
	                             .attacher_pid = (int32_t)getpid(),
	                             .attacher_uid = (uint32_t)geteuid(),
	                             .flags = (t->seccomp_filter ? 0 : HA_INIT_SHORT_SLICES) |
	                                      (t->pid_ns_below ? HA_INIT_PEER_OUTSIDE : 0) };
	memcpy(args.sock_path, s->sock_target, sizeof args.sock_path); /* may be "\0name" */
	struct ha_msg_config cfg = { .sample_interval = o->interval,
	                             .stack_bytes = (uint32_t)o->stack_bytes,
	                             .flags = (o->block ? HA_CFG_BLOCK : 0) |
	                                      (o->python == HA_PYTHON_FRAMES ? HA_CFG_PY_NO_WRAP : 0) };
	if (getrandom(args.cookie, sizeof args.cookie, 0) != (ssize_t)sizeof args.cookie) {
		fprintf(stderr, "heapattach: cannot draw the session's cookie: %s\n", strerror(errno));
		return EXIT_FAILED;
	}
	memcpy(cfg.cookie, args.cookie, sizeof cfg.cookie);
	if (py->found)
		cfg.py = py->t.walk;
	ha_session_handshake_begin(s, &cfg);
	struct ha_inject_opts io = { .target = t, .args = &args,
	                             .timeout_ms = (int)(o->timeout_s * 1e3), .verbose = o->verbose,
	                             .watch = handshake_watch, .step = handshake_step, .ctx = s };
	struct ha_inject_result ir = { 0 };
	struct ha_injection *in = ha_inject_start(&io, &ir, err, sizeof err);
	/* Only now: a new thread may take the CPU from this one, and it had
	 * better be the injector's. */
	db_open_start(dbj);
	if (!in || ha_inject_wait(in)) {
		fprintf(stderr, "heapattach: %s\n", err);
		return EXIT_REFUSED;
	}
	double t_resumed = ha_now_ms();
	if (o->verbose)
		fprintf(stderr, "heapattach: injected through thread %d in %.1f ms (%d tries)\n",
		        (int)ir.tid, ir.ms, ir.tries);
	if (ir.init_ret == HA_INIT_BUSY) {
		fprintf(stderr, "heapattach: %d (%s) is already being profiled by another heapattach\n",
		        (int)t->pid, t->comm);
		return EXIT_REFUSED;
	}
	if (ir.init_ret == HA_INIT_FAILED) {
		/* The agent undid everything before its init returned. */
		fprintf(stderr, "heapattach: handshake with the agent in %d failed: %s\n", (int)t->pid,
		        s->hs_state == HA_HS_FAILED ? s->hs_err
		        : s->hs_state == HA_HS_ACCEPT ? "it could not connect to the attacher's socket"
		                                       : "it gave up");
		return EXIT_FAILED;
	}
	if (ir.init_ret == HA_INIT_NOIMPORT) {
		fprintf(stderr, "heapattach: the agent in %d (%s) found no pthread_create, dladdr "
		        "or dlinfo through the target's dlsym\n", (int)t->pid, t->comm);
		return EXIT_REFUSED;
	}
	if (ir.init_ret != HA_INIT_STARTED) {
		fprintf(stderr, "heapattach: the agent in %d (%s) refused to start (code %d)\n",
		        (int)t->pid, t->comm, ir.init_ret);
		return EXIT_REFUSED;
	}
	/* Done on the injector's thread already, normally; otherwise the
	 * agent's own thread finishes it. */
	if (ha_session_handshake(s, (int)(o->timeout_s * 1e3), err, sizeof err)) {
		/* The agent restores itself when we hang up. */
		fprintf(stderr, "heapattach: handshake with the agent in %d failed: %s\n", (int)t->pid,
		        err);
		return EXIT_FAILED;
	}
	/* Ready: READY received and the hijacked thread restored, both seen
	 * by the attacher's threads when they happened (this thread may only
	 * get the CPU back later on a busy machine: t_resumed). */
	double t_ready = s->t_ready > ir.t_done ? s->t_ready : ir.t_done;
	double t_init = ir.t_init > 0 ? ir.t_init : t_ready;
	fprintf(stderr, "heapattach: attached to %d (%s): agent ready in %.1f ms\n", (int)t->pid,
	        t->comm, t_ready - t_start);
	if (o->verbose)
		fprintf(stderr, "heapattach: checks %.1f ms, socket and ring %.1f ms, injection "
		        "%.1f ms, handshake %.1f ms; %llu GOT slots patched in %llu modules; READY "
		        "%.1f ms %s the thread was restored; main thread resumed %.1f ms later\n",
		        t_checked - t_start, t_prepared - t_checked, t_init - t_prepared,
		        t_ready - t_init, (unsigned long long)s->ready.slots_patched,
		        (unsigned long long)s->ready.modules_patched,
		        fabs(ir.t_done - s->t_ready), s->t_ready <= ir.t_done ? "before" : "after",
		        t_resumed > t_ready ? t_resumed - t_ready : 0.0);
	return 0;
}

/* Tell the agent to leave and report what it says.  Returns the exit status. */
int cmd_detach(const struct options *o, const struct ha_target *t, struct ha_session *s,
               enum stop_reason why, int signo)
{
	char err[512];
	if (why == STOP_TARGET_EXIT) {
		fprintf(stderr, "heapattach: target %d exited\n", (int)t->pid);
		return 0;
	}
	if (why == STOP_TARGET_EXEC) {
		fprintf(stderr, "heapattach: target %d replaced its program (exec): the session ended "
		        "with the old one\n", (int)t->pid);
		return 0;
	}
	if (why == STOP_AGENT_LOST) {
		fprintf(stderr, "heapattach: lost the agent in %d: it hung up; it restores the process "
		        "by itself\n", (int)t->pid);
		return EXIT_FAILED;
	}
	if (o->verbose)
		fprintf(stderr, "heapattach: detaching (%s)\n",
		        why == STOP_SIGNAL ? strsignal(signo) : "duration reached");
	struct ha_counters final;
	double t_detach = ha_now_ms();
	if (ha_session_detach(s, (int)(o->timeout_s * 1e3), &final, err, sizeof err) == 0) {
		print_counters("detached from", t->pid, ha_now_ms() - t_detach, &final);
		if (o->verbose)
			fprintf(stderr, "heapattach: the agent took %llu samples, dropped %llu\n",
			        (unsigned long long)final.samples, (unsigned long long)final.drops);
		return 0;
	}
	if (!ha_proc_alive(t->pid)) {
		fprintf(stderr, "heapattach: target %d exited\n", (int)t->pid);
		return 0;
	}
	fprintf(stderr, "heapattach: detach from %d failed: %s\n", (int)t->pid, err);
	return EXIT_FAILED;
}
