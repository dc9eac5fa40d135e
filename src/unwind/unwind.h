/* unwind.h -- unwind stacks copied out of the target (ring sample records)
 * with libunwind's remote API: the copied stack window serves memory reads
 * at and above the captured sp, the mapped ELF files serve code and unwind
 * tables, and only anonymous/JIT memory is read from the live process
 * through a page cache.  One unwinder per target address space; owned by
 * one thread. */
#ifndef HA_UNWIND_H
#define HA_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ha_proto.h"

struct ha_unwinder;

/* Create the unwinder for process pid (reads /proc/PID/maps).  NULL with
 * err on failure. */
struct ha_unwinder *ha_unwinder_new(pid_t pid, char *err, size_t errlen);
void ha_unwinder_free(struct ha_unwinder *u);

/* The target's mappings changed (dlopen/munmap): re-read maps, flush caches. */
void ha_unwinder_maps_changed(struct ha_unwinder *u);

/* Unwind one copied stack: regs as captured, stack bytes starting at
 * address regs->rsp.  Writes up to max pcs, innermost first (pcs[0] =
 * regs->rip; later entries are return addresses as found on the stack).
 * Returns the number of pcs (>= 1), or -1 if not even the first step could
 * be taken.  Untrusted input: never reads outside the copy, the files or
 * the process's mappings.  The copy is used up to the first module's (or
 * the vdso's) mapping at or above rsp: no stack lies there, and those
 * bytes are the module's file, read from it. */
int ha_unwind(struct ha_unwinder *u, const struct ha_regs *regs, const uint8_t *stack,
              size_t stack_len, uint64_t *pcs, int max);

/* As ha_unwind, never through the whole-stack cache (nothing stored), with
 * each frame's stack pointer: sps[i] is frame i's (sps[0] = regs->rsp,
 * then each caller's: the CFA of the frame before), so frame i's own words
 * are [sps[i], sps[i + 1]).  For the holders of a reachability scan
 * (a stack word's frame). */
int ha_unwind_frames(struct ha_unwinder *u, const struct ha_regs *regs, const uint8_t *stack,
                     size_t stack_len, uint64_t *pcs, uint64_t *sps, int max);

/* Optional, before ha_unwind with the same arguments: start loading what
 * a whole-stack cache lookup will read, so that a batch of samples waits
 * for memory once, not once per sample: stage 0 for every sample of the
 * batch, then stage 1 (which reads what stage 0 asked for) for every one. */
void ha_unwind_prefetch(const struct ha_unwinder *u, const struct ha_regs *regs,
                        const uint8_t *stack, size_t stack_len, int stage);

/* The whole-stack cache entry that answered or stored the last ha_unwind
 * (0: none), and two words of the caller's kept with it (zero when it was
 * stored): the collector keeps there the callstack ids of those pcs, so a
 * repeated stack is not hashed and compared again.  NULL once the entry has
 * been reused for another stack. */
uint64_t ha_unwind_ref(const struct ha_unwinder *u);
uint32_t *ha_unwind_user(struct ha_unwinder *u, uint64_t ref);

/* The cache entry ref, walked with at most max pcs, as a stack reference
 * for the agent (struct ha_sref: its key and checks; seq and gen left to
 * the caller), its pcs (room for cap) and in *nfp how many of them the
 * frame-pointer rule found.  Returns their number, or 0 when
 * it cannot be one: gone, stored under older maps, walked with another
 * max, more than cap pcs, or more checks than an entry holds. */
int ha_unwind_export(const struct ha_unwinder *u, uint64_t ref, struct ha_sref *out,
                     uint64_t *pcs, int max, int cap, int *nfp);

/* Whole-stack cache: unwinds answered from it, and walked. */
/* Turn the whole-stack cache off (0) or on (1, the default). */
void ha_unwinder_set_stack_cache(struct ha_unwinder *u, int on);
void ha_unwinder_cache_stats(const struct ha_unwinder *u, uint64_t *hits, uint64_t *misses);

/* The fast walk (per-pc CFI rules, see unwind_walk.c) in front of libunwind:
 * off (0) or on (1, the default); walks it did, walks left to libunwind
 * (stack cache hits are neither). */
void ha_unwinder_set_fast(struct ha_unwinder *u, int on);
void ha_unwinder_fast_stats(const struct ha_unwinder *u, uint64_t *fast, uint64_t *slow);

/* Frames returned so far (cache hits included), and how many of them were
 * found by following the frame pointer through code without CFI
 * (unwind_fp.c). */
void ha_unwinder_fp_stats(const struct ha_unwinder *u, uint64_t *fp_frames, uint64_t *frames);
/* Frames found by the call-site scan (unwind_scan.c: code without unwind
 * tables or frame pointer, musl's libc), not among fp_frames. */
uint64_t ha_unwinder_scan_frames(const struct ha_unwinder *u);

#endif
