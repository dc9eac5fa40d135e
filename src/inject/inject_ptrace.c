/* inject_ptrace.c -- every ptrace request of the injector, through one
 * checked call that names the request.
 *
 * Contract: inj_ptrace makes the request and tells how it went, as a
 * named outcome the caller must handle:
 *   PT_OK      done;
 *   PT_GONE    ESRCH: the thread is not, or no longer, a stopped tracee of
 *              ours -- it exited or is being killed (after a stop we saw),
 *              or it is running (a request that needs a stop);
 *   PT_FAILED  any other error.
 * On failure errno is what ptrace left and j->pt_err names the request and
 * the error ("PTRACE_CONT: Input/output error"), for the caller's message;
 * j->err is never touched here: what a failure means is the caller's to
 * say.  (A resume whose failure went unnoticed used to show up later as a
 * misleading timeout.)  Calls nothing of the other inject files. */
#define _GNU_SOURCE
#include "inject_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *request_name(enum __ptrace_request req)
{
	switch (req) {
	case PTRACE_SEIZE:      return "PTRACE_SEIZE";
	case PTRACE_INTERRUPT:  return "PTRACE_INTERRUPT";
	case PTRACE_DETACH:     return "PTRACE_DETACH";
	case PTRACE_CONT:       return "PTRACE_CONT";
	case PTRACE_SYSCALL:    return "PTRACE_SYSCALL";
	case PTRACE_GETREGS:    return "PTRACE_GETREGS";
	case PTRACE_SETREGS:    return "PTRACE_SETREGS";
	case PTRACE_GETREGSET:  return "PTRACE_GETREGSET";
	case PTRACE_SETREGSET:  return "PTRACE_SETREGSET";
	case PTRACE_GETSIGMASK: return "PTRACE_GETSIGMASK";
	case PTRACE_SETSIGMASK: return "PTRACE_SETSIGMASK";
	case PTRACE_GETSIGINFO: return "PTRACE_GETSIGINFO";
	case PTRACE_SETOPTIONS: return "PTRACE_SETOPTIONS";
	default:                return "ptrace request";
	}
}

enum pt_rc inj_ptrace(struct injection *j, enum __ptrace_request req, pid_t tid, uint64_t addr,
                      uint64_t data)
{
	int e;

	/* glibc's ptrace() reads addr and data as void * varargs: pass them
	 * as such (a plain int would leave the upper half undefined) */
	if (ptrace(req, tid, (void *)(uintptr_t)addr, (void *)(uintptr_t)data) != -1)
		return PT_OK;
	e = errno;
	snprintf(j->pt_err, sizeof j->pt_err, "%s: %s", request_name(req), strerror(e));
	errno = e;
	return e == ESRCH ? PT_GONE : PT_FAILED;
}
