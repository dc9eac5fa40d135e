/* target.h -- everything heapattach checks about a process before it
 * touches it.  Each refusal is one line naming the problem; the target is
 * only read (through /proc and process_vm_readv), never stopped. */
#ifndef HA_TARGET_H
#define HA_TARGET_H

#include <stddef.h>
#include <sys/types.h>

struct ha_target {
	pid_t pid;              /* the thread-group id */
	pid_t own_pid;          /* its pid in its own pid namespace (NSpid's last) */
	int pid_ns_below;       /* in a pid namespace below ours: we have no pid
	                         * there (its SO_PEERCRED shows us as pid 0) */
	uid_t uid;              /* real uid of the target */
	gid_t gid;
	char comm[64];
	int seccomp_filter;     /* a seccomp filter is installed (may refuse calls) */
	int agent_loaded;       /* heapattach_agent.so is mapped and dormant */
	int same_root;          /* /proc/PID/root is our "/", in our mount namespace */
	int agent_by_path;      /* the target sees agent_path as our very file: it
	                         * dlopens that path; else the agent is delivered
	                         * (inject_deliver.c) */
	char agent_path[4096];  /* the agent: our file (the target's path to it
	                         * when agent_by_path; the mapped path when
	                         * agent_loaded) */
	int musl;               /* the target runs on musl: agent_path is the
	                         * agent built for it (musl/ beside the other) */
};

/* Check pid and fill *t.  agent_path is the agent file on our side (an
 * absolute, resolved path); for a musl target, the one in musl/ beside it
 * is taken (unless agent_path is in a directory musl/ already).  0 when the target may be injected; -1 with a
 * one-line reason in err otherwise. */
int ha_target_check(pid_t pid, const char *agent_path, struct ha_target *t,
                    char *err, size_t errlen);

#endif
