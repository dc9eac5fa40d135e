/* inject_safe.h -- is a ptrace-stopped thread at a safe point to be made to
 * call dlopen?  (Not inside the allocator, the dynamic loader,
 * dl_iterate_phdr or pthread_create.) */
#ifndef HA_INJECT_SAFE_H
#define HA_INJECT_SAFE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "procmaps.h"

/* A first look, without unwinding: 0 if code address ip (a stopped
 * thread's rip) is inside one of the functions ha_thread_is_safe_ex refuses
 * (why[] names it), 1 otherwise -- which proves nothing about the callers. */
int ha_addr_is_safe(pid_t pid, const struct ha_maps *maps, uint64_t ip,
                    char *why, size_t whylen);

/* Where a thread found unsafe will be out of every unsafe frame, as far as
 * its stack tells: the return address of the outermost unsafe frame and the
 * stack pointer right after that return.  Both 0 if unknown (signal frame,
 * stack ends inside an unsafe frame). */
struct ha_safe_exit {
	uint64_t ip;
	uint64_t sp;
};

/* Unwind the stopped thread tid of pid with libunwind-ptrace.  Returns 1 if
 * safe, 0 if not (why[] names the frame, e.g. "in malloc"), -1 if the stack
 * could not be read at all (treated as unsafe by the caller).  When the
 * answer is 0, *ex (if ex is not NULL) tells where it will be safe. */
int ha_thread_is_safe_ex(pid_t pid, pid_t tid, const struct ha_maps *maps,
                         struct ha_safe_exit *ex, char *why, size_t whylen);

/* Load the unwind tables of the named modules (ha_maps_find_module names,
 * e.g. "libc.so.6") of pid, so that inspections find them ready.  Reads
 * only the files and the process's memory; nothing needs to be stopped. */
void ha_thread_safe_warm(pid_t pid, const struct ha_maps *maps, const char *const *modnames,
                         size_t n);

/* ha_thread_is_safe_ex keeps one libunwind address space (and its cache of
 * unwind info) for the last target it saw.  Drop it: call when done with a
 * target, since the target's mappings may change before the next use. */
void ha_thread_safe_reset(void);

#endif
