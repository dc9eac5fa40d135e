/* trim.c -- heapattach --trim (issue 41): the allocator's own trim, called
 * on the agent's thread when the attacher asks (HA_MSG_TRIM): jemalloc's
 * purge of every arena (mallctl "arena.4096.purge", 4096 being
 * MALLCTL_ARENAS_ALL), tcmalloc's MallocExtension_ReleaseFreeMemory(),
 * mimalloc's mi_collect(true), else glibc's malloc_trim(0); the allocator
 * is found as for its statistics (alloc_stats.h), through the target's
 * dlsym at that moment (musl has no malloc_trim: the answer says so),
 * never from a hook, with no lock of ours held: the allocator locks its
 * arenas while it walks them, so the program's threads wait for their
 * allocations meanwhile (the cost the attacher reports). */
#define _GNU_SOURCE
#include "trim.h"

#include <dlfcn.h>
#include <stddef.h>
#include <time.h>

#include "alloc_stats.h"
#include "ha_proto.h"
#include "imports.h"
#include "msg.h"

void ha_trim_reply(int sock)
{
	struct ha_msg m;
	ha_msg_init(&m, HA_MSG_TRIMMED);
	struct ha_alloc_fns f;
	int kind = ha_alloc_find(&f);
	int (*trim)(size_t) = NULL;
	if (kind == HA_ALLOC_NONE && ha_imp.dlsym)
		trim = (int (*)(size_t))ha_imp.dlsym(RTLD_DEFAULT, "malloc_trim");
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (kind == HA_ALLOC_JEMALLOC) {
		m.u.trimmed.result = f.mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
	} else if (kind == HA_ALLOC_TCMALLOC && f.tc_release) {
		f.tc_release();
	} else if (kind == HA_ALLOC_MIMALLOC && f.mi_collect) {
		f.mi_collect(true);
	} else if (kind != HA_ALLOC_NONE) {
		m.u.trimmed.result = -1; /* its trim is not exported */
	} else {
		m.u.trimmed.result = trim ? trim(0) : -1;
	}
	m.u.trimmed.kind = (uint32_t)kind;
	clock_gettime(CLOCK_MONOTONIC, &b);
	m.u.trimmed.ns = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	(void)ha_msg_send(sock, &m);
}

void ha_alloc_serve(int sock, const struct ha_msg *m)
{
	if (m->type == HA_MSG_TRIM)
		ha_trim_reply(sock);
	else
		ha_alloc_stats_reply(sock, m->u.alloc_ask.seq);
}
