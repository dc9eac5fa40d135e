/* inject_resolve.c -- where the injection's calls go: dlopen (and dlerror)
 * in the target's own libc, and the agent's init function once the agent is
 * mapped.
 *
 * Contract: every address comes from the ELF files on disk (elfsym.c) and
 * the target's current /proc/PID/maps, never from the target's data; the
 * rt_sigreturn sequence our calls return through is looked for in libc's
 * code as mapped (what will run).  Only files and /proc are read: nothing needs to be stopped, and
 * inj_warm_up loads ahead what the thread inspections will need, so that
 * they cost little while a thread is stopped. */
#define _GNU_SOURCE
#include "inject_int.h"
#include "elfsym.h"
#include "ha_proto.h"
#include "proc.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A library of glibc by its soname, else by its file (libdl-2.31.so).
 * (The C library itself, glibc's or musl's: ha_maps_find_libc.) */
const struct ha_map *inj_find_lib(const struct ha_maps *maps, const char *so, const char *file)
{
	const struct ha_map *m = ha_maps_find_module(maps, so);
	return m ? m : ha_maps_find_module(maps, file);
}

/* The address of the byte sequence seq in libc's executable mappings (as
 * mapped: what will run), looked for first in the 8 KiB around `near` when
 * that is in one of them; 0 if none. */
static uint64_t find_code(struct injection *j, const struct ha_map *libc, uint64_t near,
                          const unsigned char *seq, size_t len)
{
	static unsigned char buf[64 << 10];   /* the helper thread's only: one injection at a time */
	uint64_t at = 0;

	for (size_t i = 0; i < j->maps.n && !at; i++) {
		const struct ha_map *m = &j->maps.v[i];
		if (!(m->prot & PROT_EXEC) || m->inode != libc->inode || m->dev != libc->dev)
			continue;
		int around = near >= m->start + 4096 && near + 4096 <= m->end;
		for (int pass = around ? 0 : 1; pass < 2 && !at; pass++) {
			uint64_t from = pass ? m->start : near - 4096;
			uint64_t to = pass ? m->end : near + 4096;
			for (uint64_t p = from; p < to && !at; p += sizeof buf - len) {
				size_t n = to - p < sizeof buf ? to - p : sizeof buf;
				void *hit;
				if (n < len || ha_remote_read(j->pid, p, buf, n) < 0)
					break;
				hit = memmem(buf, n, seq, len);
				if (hit)
					at = p + (uint64_t)((unsigned char *)hit - buf);
			}
		}
	}
	return at;
}

/* Where `mov $15,%rax; syscall` is in libc's code: __restore_rt, the
 * return address glibc gives every signal handler, right after
 * __libc_sigaction; else anywhere in libc's executable mappings.  Also a
 * `pop %rdi; ret` and raise, for the mark our calls end with
 * (inject_frame.c; without them the calls run on syscall stops). */
int inj_resolve_sigreturn(struct injection *j)
{
	static const unsigned char seq[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	static const unsigned char pop_rdi_ret[2] = { 0x5f, 0xc3 };
	const struct ha_map *libc = ha_maps_find_libc(&j->maps, NULL);
	uint64_t near = 0;

	j->sigreturn_fn = j->pop_rdi_ret = j->raise_fn = 0;
	if (!libc) {
		ha_err(j->err, j->errlen, "no libc found in process %d "
		       "(neither glibc nor musl: statically linked?)", (int)j->pid);
		return -1;
	}
	if (ha_elf_symbol(j->pid, libc, "__libc_sigaction", &near) < 0)
		ha_elf_symbol(j->pid, libc, "sigaction", &near);
	j->sigreturn_fn = find_code(j, libc, near, seq, sizeof seq);
	if (!j->sigreturn_fn) {
		ha_err(j->err, j->errlen, "no rt_sigreturn sequence (__restore_rt) in %s of "
		       "process %d", libc->path, (int)j->pid);
		return -1;
	}
	if (ha_elf_symbol(j->pid, libc, "raise", &j->raise_fn) < 0)
		j->raise_fn = 0;
	else   /* any will do: first looked for near raise */
		j->pop_rdi_ret = find_code(j, libc, j->raise_fn, pop_rdi_ret, sizeof pop_rdi_ret);
	inj_log(j, "rt_sigreturn sequence at 0x%llx; raise at 0x%llx, pop-rdi-ret at 0x%llx",
	        (unsigned long long)j->sigreturn_fn, (unsigned long long)j->raise_fn,
	        (unsigned long long)j->pop_rdi_ret);
	return 0;
}

/* The signal of the mark (inject_frame.c): one whose default action is to
 * ignore it, that the target has no handler for (so that if we die it is
 * dropped as it is sent) and that the thread does not block (blocked, it
 * may be read through signalfd or sigwait: unblocking it during our calls
 * could take one from the program).  Read from the target's status once
 * thread tid is stopped (its mask in `blocked`).  None (0) if there is no
 * such signal, if a seccomp filter of that thread (filters are per thread)
 * might refuse raise's system calls (gettid, getpid, tgkill), or if a test
 * point of ours needs the syscall stops (HEAPATTACH_TEST_DIE_AT=syscall@...):
 * the calls then run on syscall stops. */
void inj_choose_mark(struct injection *j, pid_t tid, uint64_t blocked)
{
	static const int cand[] = { SIGURG, SIGWINCH, SIGCHLD };
	char buf[64];
	unsigned long long caught;

	j->mark_sig = 0;
	if (!j->raise_fn || !j->pop_rdi_ret || j->target->seccomp_filter ||
	    strncmp(j->die_at, "syscall@", 8) == 0 ||
	    ha_proc_status_field(j->pid, tid, "Seccomp", buf, sizeof buf) != 0 ||
	    strtol(buf, NULL, 10) != 0 ||
	    ha_proc_status_field(j->pid, 0, "SigCgt", buf, sizeof buf) != 0)
		return;
	errno = 0;
	caught = strtoull(buf, NULL, 16);
	if (errno)
		return;
	for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
		if (!(((caught | blocked) >> (cand[i] - 1)) & 1)) {
			j->mark_sig = cand[i];
			return;
		}
}

/* How to call dlopen in the target: libc's (glibc 2.34 on, and musl's, which
 * is its loader too), else libdl's if loaded, else libc's __libc_dlopen_mode
 * (it wants __RTLD_DLOPEN; no dlerror).  And dlsym for the agent
 * (agent/imports.h): libc's, or libdl's with libpthread loaded (pthread_create);
 * when glibc before 2.34 has not loaded them, both are loaded first
 * (plan_libs, inject_libs.c), then this is asked again. */
int inj_resolve_dlsym(struct injection *j)
{
	const struct ha_map *libc = ha_maps_find_libc(&j->maps, NULL);
	const struct ha_map *libdl = inj_find_lib(&j->maps, "libdl.so", "libdl-2");

	j->dlsym_fn = 0;
	if (libc && ha_elf_symbol(j->pid, libc, "dlsym", &j->dlsym_fn) == 0)
		return 0;
	if (libdl && ha_elf_symbol(j->pid, libdl, "dlsym", &j->dlsym_fn) == 0 &&
	    inj_find_lib(&j->maps, "libpthread.so", "libpthread-2"))
		return 0;
	j->dlsym_fn = 0;
	return -1;
}

/* glibc before 2.34 without libdl or libpthread (dlsym not found): the
 * libraries to load first with libc's __libc_dlopen_mode (inject_libs.c)
 * into j->libs_need, its address into j->libs_fn.  0, or -1 when there is
 * none (then nothing is planned). */
static int plan_libs(struct injection *j, const struct ha_map *libc)
{
	j->libs_need = 0;
	if (ha_elf_symbol(j->pid, libc, "__libc_dlopen_mode", &j->libs_fn) < 0)
		return -1;
	if (!inj_find_lib(&j->maps, "libdl.so", "libdl-2"))
		j->libs_need |= INJ_LIB_DL;
	if (!inj_find_lib(&j->maps, "libpthread.so", "libpthread-2"))
		j->libs_need |= INJ_LIB_PTHREAD;
	if (!j->libs_need)
		return -1;      /* both there, and still no dlsym */
	inj_log(j, "glibc before 2.34 without%s%s: to load first with __libc_dlopen_mode at 0x%llx",
	        j->libs_need & INJ_LIB_DL ? " libdl" : "",
	        j->libs_need & INJ_LIB_PTHREAD ? " libpthread" : "",
	        (unsigned long long)j->libs_fn);
	return 0;
}

int inj_resolve_dlopen(struct injection *j)
{
	const struct ha_map *libc = ha_maps_find_libc(&j->maps, NULL), *libdl;
	int rc;

	j->libs_need = 0;
	if (!libc) {
		ha_err(j->err, j->errlen, "no libc found in process %d "
		       "(neither glibc nor musl: statically linked?)", (int)j->pid);
		return -1;
	}
	libdl = inj_find_lib(&j->maps, "libdl.so", "libdl-2");
	j->dlopen_flags = RTLD_NOW;
	j->dlopen_name = "dlopen";
	j->dlerror_fn = 0;
	rc = ha_elf_symbol(j->pid, libc, "dlopen", &j->dlopen_fn);
	if (rc == 0 || (rc == -ENOENT && libdl &&
	                ha_elf_symbol(j->pid, libdl, "dlopen", &j->dlopen_fn) == 0)) {
		(void)ha_elf_symbol(j->pid, rc == 0 ? libc : libdl, "dlerror", &j->dlerror_fn);
	} else if (rc == -ENOENT &&
	           ha_elf_symbol(j->pid, libc, "__libc_dlopen_mode", &j->dlopen_fn) == 0) {
		j->dlopen_name = "__libc_dlopen_mode";
		j->dlopen_flags = RTLD_NOW | (int)RTLD_DLOPEN_FLAG;
	} else if (rc == -ENOENT) {
		ha_err(j->err, j->errlen, "libc in target (%s) has no dlopen or "
		       "__libc_dlopen_mode (static binary?)", libc->path);
		return -1;
	} else {
		ha_err(j->err, j->errlen, "cannot read the symbols of %s in process %d: %s",
		       libc->path, (int)j->pid, strerror(-rc));
		return -1;
	}
	if (inj_resolve_dlsym(j) < 0 && (j->libs_tried || plan_libs(j, libc) < 0)) {
		ha_err(j->err, j->errlen, "process %d: glibc before 2.34 (%s) without libdl and "
		       "libpthread loaded%s (the agent needs dlsym, pthread_create)", (int)j->pid,
		       libc->path, j->libs_tried ? j->libs_why :
		       "; no __libc_dlopen_mode in its libc to load them");
		return -1;
	}
	inj_log(j, "libc %s at 0x%llx: %s at 0x%llx, dlerror at 0x%llx, dlsym at 0x%llx", libc->path,
	        (unsigned long long)libc->start, j->dlopen_name, (unsigned long long)j->dlopen_fn,
	        (unsigned long long)j->dlerror_fn, (unsigned long long)j->dlsym_fn);
	return 0;
}

/* The agent module in the current maps: the offset-0 mapping of
 * agent_path as the target opened it, else by name (its basename, then the
 * agent's soname).  (Our calls cannot hand back dlopen's handle: see
 * inject_frame.c.) */
static const struct ha_map *find_agent(struct injection *j)
{
	const struct ha_map *m;

	for (size_t i = 0; i < j->maps.n && j->target->agent_path[0]; i++) {
		m = &j->maps.v[i];
		if (m->offset == 0 && !m->deleted && strcmp(m->path, j->target->agent_path) == 0)
			return m;
	}
	m = NULL;
	if (*ha_base_name(j->target->agent_path))
		m = ha_maps_find_module(&j->maps, ha_base_name(j->target->agent_path));
	return m ? m : ha_maps_find_module(&j->maps, HA_AGENT_SONAME);
}

int inj_resolve_init(struct injection *j, int reread)
{
	const struct ha_map *agent;
	int rc;

	if (reread) {   /* dlopen just mapped it: the maps we have predate it */
		ha_maps_free(&j->maps);
		rc = ha_maps_read(j->pid, &j->maps);
		if (rc < 0) {
			ha_err(j->err, j->errlen, "cannot read /proc/%d/maps: %s", (int)j->pid,
			       strerror(-rc));
			return -1;
		}
	}
	agent = find_agent(j);
	if (!agent) {
		ha_err(j->err, j->errlen, "the agent (%s) is not mapped in process %d",
		       j->target->agent_path[0] ? j->target->agent_path : HA_AGENT_SONAME,
		       (int)j->pid);
		return -1;
	}
	rc = ha_elf_symbol(j->pid, agent, HA_AGENT_INIT_SYMBOL, &j->init_fn);
	if (rc < 0) {
		ha_err(j->err, j->errlen, "cannot find %s in %s: %s", HA_AGENT_INIT_SYMBOL,
		       agent->path, rc == -ENOENT ? "no such symbol" : strerror(-rc));
		return -1;
	}
	inj_log(j, "agent %s at 0x%llx, init at 0x%llx", agent->path,
	        (unsigned long long)agent->start, (unsigned long long)j->init_fn);
	return 0;
}

/* Load what the thread inspections will need most -- the symbol tables and
 * unwind tables of libc, libstdc++ and the executable -- while no thread
 * is stopped (before the thread search starts; files and /proc are only
 * read).  Failures do not matter here. */
void inj_warm_up(pid_t pid, const struct ha_maps *maps)
{
	static const char *const common[] = { "libc.so.6", "libc-", "ld-musl-", "libc.musl-",
	                                      "libstdc++.so" };
	const char *names[6];
	char path[64], exe[4096];
	const struct ha_map *m;
	uint64_t addr;
	size_t n = 0;
	ssize_t len;

	for (size_t i = 0; i < sizeof common / sizeof common[0]; i++) {
		m = ha_maps_find_module(maps, common[i]);
		if (m) {
			ha_elf_symbol(pid, m, "malloc", &addr);
			names[n++] = common[i];
		}
	}
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	len = readlink(path, exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = '\0';
		m = ha_maps_find_module(maps, ha_base_name(exe));
		if (m) {
			ha_elf_symbol(pid, m, "main", &addr);
			names[n++] = ha_base_name(exe);
		}
	}
	ha_thread_safe_warm(pid, maps, names, n);
}
