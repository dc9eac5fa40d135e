/* trim.c -- heapattach --trim (issue 41): the target's own malloc_trim(0),
 * called on the agent's thread when the attacher asks (HA_MSG_TRIM).  It
 * is found through the target's dlsym at that moment (musl has none: the
 * answer says so), never from a hook, with no lock of ours held: glibc
 * locks each arena while it walks it, so the program's threads wait for
 * their allocations meanwhile (the cost the attacher reports). */
#define _GNU_SOURCE
#include "trim.h"

#include <dlfcn.h>
#include <stddef.h>
#include <time.h>

#include "ha_proto.h"
#include "imports.h"
#include "msg.h"

void ha_trim_reply(int sock)
{
	struct ha_msg m;
	ha_msg_init(&m, HA_MSG_TRIMMED);
	int (*trim)(size_t) = NULL;
	if (ha_imp.dlsym)
		trim = (int (*)(size_t))ha_imp.dlsym(RTLD_DEFAULT, "malloc_trim");
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	m.u.trimmed.result = trim ? trim(0) : -1;
	clock_gettime(CLOCK_MONOTONIC, &b);
	m.u.trimmed.ns = (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	(void)ha_msg_send(sock, &m);
}
