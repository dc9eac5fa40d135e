/* inject.h -- load the agent into a running process with ptrace and call its
 * init on one hijacked thread; restore that thread exactly. */
#ifndef HA_INJECT_H
#define HA_INJECT_H

#include <stddef.h>
#include <sys/types.h>
#include "ha_proto.h"
#include "target.h"

struct ha_inject_opts {
	/* The target as ha_target_check found it: its pid; agent_path, the
	 * agent .so as the target will open it (the dlopen argument);
	 * agent_loaded, the agent is mapped already (skip dlopen, call init);
	 * seccomp_filter (named when dlopen fails). */
	const struct ha_target *target;
	const struct ha_init_args *args;
	int timeout_ms;       /* overall budget to find a safe thread and call */
	int verbose;          /* progress lines on stderr */
	/* Optional: work for the injector's thread while the agent's init call
	 * runs (the agent talks to the attacher from inside it, and this
	 * thread is the one awake then).  Whenever the descriptor watch(ctx)
	 * returns is readable, step(ctx) is called; it must not block.  watch
	 * returns -1 when nothing more is wanted. */
	int (*watch)(void *ctx);
	void (*step)(void *ctx);
	void *ctx;
};

struct ha_inject_result {
	pid_t tid;            /* the hijacked thread */
	int init_ret;         /* return value of heapattach_agent_init */
	int tries;            /* threads seized (see inject_pick.c, "Probes") */
	double ms;            /* from ha_inject_start to the end of ha_inject_wait */
	double t_init;        /* ha_now_ms() when the init call started (0: never) */
	double t_done;        /* ha_now_ms() when the injection was over, thread
	                       * restored (before the caller's wait returned) */
};

/* ha_inject_start returns as soon as the injection is under way on its own
 * thread (NULL, with err set, if it could not start), so that the caller
 * can do other work meanwhile; ha_inject_wait waits for it to end.  r and
 * err belong to the injection until then (and o->target, o->args must stay
 * valid; o itself is copied).  ha_inject_wait returns 0 when the agent's
 * init ran (its return value in r->init_ret), -1 with a one-line reason in
 * err otherwise.  In every case the target's threads are left running with
 * their registers, FP state and signal mask exactly as they were, and no
 * ptrace attachment remains. */
struct ha_injection;
struct ha_injection *ha_inject_start(const struct ha_inject_opts *o, struct ha_inject_result *r,
                                     char *err, size_t errlen);
int ha_inject_wait(struct ha_injection *in);

/* Read this process's default time slice (see inject_sched.c):
 * call it first thing, before any thread's attributes change. */
void ha_sched_note_default(void);

#endif
