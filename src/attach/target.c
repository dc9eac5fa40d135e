/*
 * target.c -- decide, by reading only, whether a process can be profiled.
 *
 * Every check here runs before any ptrace call, so a refusal leaves the
 * target exactly as it was.  The order matters: the cheapest and most
 * fundamental facts first (does it exist, is it a zombie or a kernel
 * thread), then permission, then the binary, then heapattach's own state.
 */
#define _GNU_SOURCE
#include "target.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define DEAD_ATTACHER_WAIT_MS 10000 /* for the agent of a killed attacher to restore */

#include "elfsym.h"
#include "ha_proto.h"
#include "proc.h"
#include "procmaps.h"
#include "util.h"

#define PF_KTHREAD_FLAG 0x00200000u /* include/linux/sched.h */
#define STATUS_MAX      HA_STATUS_MAX

/* /proc/PID/status is read once for all the checks (each read costs the
 * kernel a walk over the process; on a busy machine every bit of our CPU
 * time before the agent is ready shows in the attach latency). */
static int read_status(pid_t pid, char *buf, size_t len)
{
	return ha_proc_status(pid, 0, buf, len) < 0 ? -1 : 0;
}

static void read_comm(pid_t pid, char *out, size_t outlen)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	ssize_t n = ha_read_file(path, out, outlen);
	if (n < 0)
		snprintf(out, outlen, "?");
	/* The kernel's newline, not one of the comm's own. */
	else if (n > 0 && out[n - 1] == '\n')
		out[n - 1] = '\0';
	/* Any bytes but NUL (prctl PR_SET_NAME): the comm is printed. */
	ha_clean_line(out);
}

static int check_exists(pid_t pid, struct ha_target *t, char *status, char *err,
                        size_t errlen)
{
	char buf[64];
	char state;
	unsigned long flags;
	int rc;

	if (pid <= 0) {
		ha_err(err, errlen, "invalid PID %d", (int)pid);
		return -1;
	}
	rc = ha_proc_stat(pid, 0, &state, &flags);
	if (rc == -ENOENT || rc == -ESRCH) {
		ha_err(err, errlen, "no such process: %d", (int)pid);
		return -1;
	}
	if (rc < 0) {
		ha_err(err, errlen, "cannot read /proc/%d/stat: %s", (int)pid, strerror(-rc));
		return -1;
	}
	read_comm(pid, t->comm, sizeof t->comm);
	if (flags & PF_KTHREAD_FLAG) {
		ha_err(err, errlen, "%d (%s) is a kernel thread: it has no user-space heap",
		       (int)pid, t->comm);
		return -1;
	}
	if (state == 'Z' || state == 'X') {
		ha_err(err, errlen, "%d (%s) is a zombie: it has exited and waits for its parent",
		       (int)pid, t->comm);
		return -1;
	}
	/* A thread id is accepted: the whole process is what gets profiled. */
	if (read_status(pid, status, STATUS_MAX) < 0)
		status[0] = '\0';
	if (ha_status_field(status, "Tgid", buf, sizeof buf) == 0) {
		long tgid = strtol(buf, NULL, 10);
		if (tgid > 0 && tgid != pid) {
			pid = (pid_t)tgid;
			if (read_status(pid, status, STATUS_MAX) < 0)
				status[0] = '\0';
		}
	}
	/* Ourselves: our threads cannot be seized by one of them. */
	if (pid == getpid()) {
		ha_err(err, errlen, "invalid target PID %d", (int)pid);
		return -1;
	}
	t->pid = pid;
	t->own_pid = pid;
	/* "NSpid: 4242 7 1": the pid in each pid namespace from ours down
	 * to the target's own.  Only a whole line: a status cut at its
	 * buffer's end (thousands of supplementary groups come before it)
	 * could end inside it. */
	char nspid[512];
	const char *ns_line = strstr(status, "\nNSpid:");
	if (ns_line && strchr(ns_line + 1, '\n') &&
	    ha_status_field(status, "NSpid", nspid, sizeof nspid) == 0 &&
	    strlen(nspid) < sizeof nspid - 1) {
		int n = 0;
		long last = 0;
		for (char *p = nspid, *end; *p; p = end) {
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			last = v;
			n++;
		}
		if (n > 1 && last > 0 && last <= INT32_MAX) {
			t->own_pid = (pid_t)last;
			t->pid_ns_below = 1;
		}
	}
	if (ha_status_field(status, "Uid", buf, sizeof buf) == 0)
		t->uid = (uid_t)strtoul(buf, NULL, 10);
	if (ha_status_field(status, "Gid", buf, sizeof buf) == 0)
		t->gid = (gid_t)strtoul(buf, NULL, 10);
	return 0;
}

/* Opening /proc/PID/mem needs the same access as PTRACE_ATTACH (uid match
 * or CAP_SYS_PTRACE, dumpable, Yama), without stopping anything. */
static int check_permission(const struct ha_target *t, char *err, size_t errlen)
{
	char path[64], scope[16] = "";
	snprintf(path, sizeof path, "/proc/%d/mem", (int)t->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	int e = errno;
	if (e != EACCES && e != EPERM) {
		ha_err(err, errlen, "cannot open %s: %s", path, strerror(e));
		return -1;
	}
	ha_read_file("/proc/sys/kernel/yama/ptrace_scope", scope, sizeof scope);
	int yama = scope[0] ? (int)strtol(scope, NULL, 10) : 0;
	if (geteuid() != 0 && t->uid != geteuid())
		ha_err(err, errlen, "permission denied: %d (%s) belongs to uid %u and you are uid %u; "
		       "run heapattach as that user or as root (CAP_SYS_PTRACE)",
		       (int)t->pid, t->comm, (unsigned)t->uid, (unsigned)geteuid());
	else if (yama == 3)
		ha_err(err, errlen, "permission denied: kernel.yama.ptrace_scope is 3, ptrace is disabled "
		       "until reboot");
	else if (yama >= 1 && geteuid() != 0)
		ha_err(err, errlen, "permission denied: kernel.yama.ptrace_scope is %d; run as root "
		       "(CAP_SYS_PTRACE) or set it to 0", yama);
	else
		ha_err(err, errlen, "permission denied to ptrace %d (%s): not dumpable or no "
		       "CAP_SYS_PTRACE (%s)", (int)t->pid, t->comm, strerror(e));
	return -1;
}

static int check_binary(const struct ha_target *t, char *err, size_t errlen)
{
	int elf_class = 0, machine = 0, has_interp = 0;
	int rc = ha_elf_exe_info(t->pid, &elf_class, &machine, &has_interp);
	if (rc < 0) {
		ha_err(err, errlen, "cannot read the executable of %d (%s): %s", (int)t->pid,
		       t->comm, strerror(-rc));
		return -1;
	}
	if (elf_class == ELFCLASS32) {
		ha_err(err, errlen, "%d (%s) is a 32-bit program; only x86_64 programs are supported",
		       (int)t->pid, t->comm);
		return -1;
	}
	if (machine != EM_X86_64) {
		ha_err(err, errlen, "%d (%s) is not an x86_64 program (ELF machine %d)", (int)t->pid,
		       t->comm, machine);
		return -1;
	}
	if (!has_interp) {
		ha_err(err, errlen, "%d (%s) is a statically linked program: it has no dynamic loader "
		       "to load the agent with", (int)t->pid, t->comm);
		return -1;
	}
	return 0;
}

/* Seccomp strict mode allows read/write/exit only; a filter may or may not
 * allow what the agent needs, which the injector reports if it fails. */
static int check_seccomp(struct ha_target *t, const char *status, char *err, size_t errlen)
{
	char buf[32];
	if (ha_status_field(status, "Seccomp", buf, sizeof buf) != 0)
		return 0;
	if (strtol(buf, NULL, 10) == 1) {
		ha_err(err, errlen, "%d (%s) runs in seccomp strict mode: it may not open or map the "
		       "agent", (int)t->pid, t->comm);
		return -1;
	}
	t->seccomp_filter = strtol(buf, NULL, 10) == 2;
	return 0;
}

/* gdb, strace or an injecting heapattach hold the process: don't fight them. */
static int check_tracer(const struct ha_target *t, const char *status, char *err,
                        size_t errlen)
{
	char buf[32], comm[64];
	if (ha_status_field(status, "TracerPid", buf, sizeof buf) != 0)
		return 0;
	pid_t tracer = (pid_t)strtol(buf, NULL, 10);
	if (tracer == 0)
		return 0;
	read_comm(tracer, comm, sizeof comm);
	if (strcmp(comm, "heapattach") == 0)
		ha_err(err, errlen, "%d (%s) is already being profiled: heapattach %d is injecting "
		       "into it", (int)t->pid, t->comm, (int)tracer);
	else
		ha_err(err, errlen, "%d (%s) is being traced by %d (%s); detach that tracer first",
		       (int)t->pid, t->comm, (int)tracer, comm);
	return -1;
}

/* Is the agent loaded already?  Busy: refuse.  Dormant: reuse it. */
static int check_agent_state(struct ha_target *t, const struct ha_maps *maps,
                             char *err, size_t errlen)
{
	const struct ha_map *mod = ha_maps_find_module(maps, HA_AGENT_SONAME);
	struct ha_agent_state st;
	uint64_t addr;
	int rc;

	if (!mod)
		return 0;
	rc = ha_elf_symbol(t->pid, mod, HA_AGENT_STATE_SYMBOL, &addr);
	if (rc == 0)
		rc = ha_remote_read(t->pid, addr, &st, sizeof st);
	if (rc < 0) {
		ha_err(err, errlen, "%d (%s) has %s mapped but its state cannot be read: %s",
		       (int)t->pid, t->comm, mod->path, strerror(-rc));
		return -1;
	}
	if (st.magic != HA_PROTO_MAGIC || st.version != HA_PROTO_VERSION) {
		ha_err(err, errlen, "%d (%s) has an agent of another heapattach version loaded "
		       "(protocol %u, ours %u)", (int)t->pid, t->comm, st.version, HA_PROTO_VERSION);
		return -1;
	}
	/* The attacher of a session that is not over may have died (SIGKILL):
	 * its agent sees the hang-up and restores the process by itself,
	 * which takes until its in-flight hooks are out.  Wait for that
	 * (bounded) rather than refuse an attach that will work in a moment. */
	for (int waited_ms = 0; st.state != HA_STATE_DORMANT && waited_ms < DEAD_ATTACHER_WAIT_MS &&
	                        st.attacher_pid > 0 && kill(st.attacher_pid, 0) != 0 && errno == ESRCH;
	     waited_ms += 10) {
		struct timespec ts = { 0, 10 * 1000000L };
		nanosleep(&ts, NULL);
		if (ha_remote_read(t->pid, addr, &st, sizeof st) < 0)
			break;
	}
	if (st.state != HA_STATE_DORMANT) {
		ha_err(err, errlen, "%d (%s) is already being profiled by heapattach %d",
		       (int)t->pid, t->comm, (int)st.attacher_pid);
		return -1;
	}
	t->agent_loaded = 1;
	snprintf(t->agent_path, sizeof t->agent_path, "%s", mod->path);
	return 0;
}

/* How the agent reaches the target.  By its path when the file the target
 * finds there, inside its own mount namespace, is the very file we mean
 * (same device and inode): a host target, as fast as ever.  Otherwise (a
 * container) by delivery (inject_deliver.c): a memfd, or a copy under
 * the target's root; nothing to refuse here. */
static int check_agent_reachable(struct ha_target *t, const char *agent_path,
                                 char *err, size_t errlen)
{
	char theirs[PATH_MAX + 64];
	struct stat ours_st, theirs_st, root_st, slash_st;

	if (stat(agent_path, &ours_st) != 0) {
		ha_err(err, errlen, "agent not found: %s: %s", agent_path, strerror(errno));
		return -1;
	}
	/* Our "/" in our mount namespace: the same root directory seen through
	 * another namespace may have other mounts on it (a private /tmp) */
	snprintf(theirs, sizeof theirs, "/proc/%d/root", (int)t->pid);
	t->same_root = stat(theirs, &root_st) == 0 && stat("/", &slash_st) == 0 &&
	               root_st.st_dev == slash_st.st_dev && root_st.st_ino == slash_st.st_ino;
	snprintf(theirs, sizeof theirs, "/proc/%d/ns/mnt", (int)t->pid);
	if (stat(theirs, &root_st) != 0 || stat("/proc/self/ns/mnt", &slash_st) != 0 ||
	    root_st.st_ino != slash_st.st_ino)
		t->same_root = 0;
	snprintf(theirs, sizeof theirs, "/proc/%d/root%s", (int)t->pid, agent_path);
	t->agent_by_path = stat(theirs, &theirs_st) == 0 && theirs_st.st_dev == ours_st.st_dev &&
	                   theirs_st.st_ino == ours_st.st_ino;
	snprintf(t->agent_path, sizeof t->agent_path, "%s", agent_path);
	return 0;
}

/* A musl target takes the agent built for musl (agent/README.md): the file
 * of the same name in musl/ beside agent_path, unless agent_path is in a
 * directory musl/ already (--agent naming it). */
static int musl_agent(struct ha_target *t, const char *agent_path, char *err, size_t errlen)
{
	char dir[PATH_MAX], path[PATH_MAX + 64];
	const char *slash = strrchr(agent_path, '/');
	size_t dlen = slash ? (size_t)(slash - agent_path) : 0;

	if (dlen >= sizeof dir) {
		ha_err(err, errlen, "agent path too long: %s", agent_path);
		return -1;
	}
	memcpy(dir, agent_path, dlen);
	dir[dlen] = '\0';
	if (strcmp(ha_base_name(dir), "musl") == 0)
		snprintf(path, sizeof path, "%s", agent_path);
	else
		snprintf(path, sizeof path, "%s/musl/%s", dir, ha_base_name(agent_path));
	if (access(path, R_OK) != 0) {
		ha_err(err, errlen, "%d (%s) runs on musl, and the agent for musl is not there: "
		       "%s: %s (it is built when musl-gcc is installed)", (int)t->pid, t->comm, path,
		       strerror(errno));
		return -1;
	}
	return check_agent_reachable(t, path, err, errlen);
}

int ha_target_check(pid_t pid, const char *agent_path, struct ha_target *t,
                    char *err, size_t errlen)
{
	struct ha_maps maps = { 0 };
	char status[STATUS_MAX];
	int rc;

	memset(t, 0, sizeof *t);
	if (check_exists(pid, t, status, err, errlen) || check_permission(t, err, errlen) ||
	    check_binary(t, err, errlen) || check_seccomp(t, status, err, errlen) ||
	    check_tracer(t, status, err, errlen))
		return -1;
	rc = ha_maps_read(t->pid, &maps);
	if (rc < 0) {
		ha_err(err, errlen, "cannot read /proc/%d/maps: %s", (int)t->pid, strerror(-rc));
		return -1;
	}
	if (!ha_maps_find_libc(&maps, &t->musl)) {
		ha_err(err, errlen, "%d (%s) has no C library loaded (glibc's libc.so.6 or musl's "
		       "ld-musl-*.so.1): cannot load the agent without its dlopen (static program?)",
		       (int)t->pid, t->comm);
		ha_maps_free(&maps);
		return -1;
	}
	rc = check_agent_state(t, &maps, err, errlen);
	ha_maps_free(&maps);
	if (rc)
		return -1;
	if (t->agent_loaded)
		return 0; /* reuse what is mapped; nothing to open */
	if (t->musl)
		return musl_agent(t, agent_path, err, errlen);
	return check_agent_reachable(t, agent_path, err, errlen);
}
