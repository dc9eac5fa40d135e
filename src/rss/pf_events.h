/* pf_events.h -- the page-fault events of heapattach --rss: a software
 * minor-fault event (PERF_COUNT_SW_PAGE_FAULTS_MIN) on every thread of the
 * target, sampling every Nth fault of each thread with its address, the
 * user registers and a bounded copy of the user stack.
 *
 * Layout: one event per (thread, CPU), inherited by the threads a thread
 * creates after its events were opened, so that threads created later are
 * covered from their first fault with no rescan; the events of one CPU all
 * write into one ring (PERF_EVENT_IOC_SET_OUTPUT), so the pinned memory is
 * one ring per CPU whatever the number of threads.  The cost is one file
 * descriptor per (thread, CPU) that exists at the attach.
 *
 * Opened by the main thread (ha_pf_open: its refusals are said before the
 * session starts), then owned by the collector thread, which reads the
 * samples (ha_pf_next) and closes everything (ha_pf_close: closing an
 * inherited event's parent removes its children, so nothing of ours stays
 * in the target). */
#ifndef HA_PF_EVENTS_H
#define HA_PF_EVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ha_proto.h"

#define HA_PF_STACK_BYTES 16384   /* user stack copied per sample */

struct ha_pf;

/* One sampled fault, copied out of the ring (valid until the next call). */
struct ha_pf_sample {
	uint32_t pid, tid;
	uint64_t time_ns;             /* CLOCK_MONOTONIC */
	uint64_t addr;                /* the byte faulted on */
	uint64_t ip;                  /* may be a kernel address (copy_to_user) */
	struct ha_regs regs;          /* user registers (at the system call, for a
	                               * fault inside one) */
	const uint8_t *stack;         /* user stack from regs.rsp up */
	size_t stack_len;
};

/* What ha_pf_open found and did, for the lines the user reads. */
struct ha_pf_report {
	int cpus;
	int threads;                  /* threads with their events */
	int threads_left_out;         /* ...and without (file descriptor limit) */
	unsigned long fd_limit;       /* RLIMIT_NOFILE after raising it */
	size_t ring_bytes;            /* per CPU */
	int inherit_thread;           /* the kernel has attr.inherit_thread */
};

/* Open and enable the events on every thread of pid, at one sample per
 * period faults.  NULL with one line in err when no event could be opened
 * (perf_event_paranoid, capabilities, seccomp, no such process): the
 * caller goes on without --rss. */
struct ha_pf *ha_pf_open(pid_t pid, uint64_t period, struct ha_pf_report *rep, char *err,
                         size_t errlen);

/* The next sample of any CPU's ring: 1 and *s, or 0 when every ring is
 * empty.  Other records (lost samples, throttling) are counted on the
 * way; a record that does not parse is skipped and counted. */
int ha_pf_next(struct ha_pf *pf, struct ha_pf_sample *s);

/* One record as ha_pf_next finds it in a ring (len bytes at rec, copied
 * out whole): HA_PF_REC_SAMPLE with *id (the event's) and *s (s->stack
 * points into rec), HA_PF_REC_LOST with the count of samples the kernel
 * lost in *lost, HA_PF_REC_OTHER for a record of no interest, or
 * HA_PF_REC_BAD for one that does not parse (too short, a sample without
 * user registers or with a stack longer than it or HA_PF_STACK_BYTES). */
enum { HA_PF_REC_OTHER, HA_PF_REC_SAMPLE, HA_PF_REC_LOST, HA_PF_REC_BAD };
int ha_pf_parse_record(const void *rec, size_t len, uint64_t *id, struct ha_pf_sample *s,
                       uint64_t *lost);

/* The framing of a perf ring, what ha_pf_next runs on each CPU's ring:
 * meta its control page, data its size bytes (a power of two).  Copies
 * the record at data_tail into rec (RECORD_MAX, 64 KiB: a record's size
 * is 16 bits), joined when it wraps, and moves data_tail past it.  Returns its size (a multiple of 8, at least a header, at most
 * head - tail); 0 when the ring is empty (head == tail); (uint64_t)-1 when
 * the ring cannot be trusted (a record size that is not one, head more
 * than the ring ahead of tail or behind it, an unaligned tail): data_tail
 * is then set to head, dropping what the ring held. */
struct perf_event_mmap_page;
uint64_t ha_pf_ring_take(struct perf_event_mmap_page *meta, const char *data, uint64_t size,
                         char *rec);

/* Samples read, lost by the kernel (a full ring), records that did not
 * parse. */
void ha_pf_counts(const struct ha_pf *pf, uint64_t *samples, uint64_t *lost, uint64_t *bad);

void ha_pf_close(struct ha_pf *pf);

#endif
