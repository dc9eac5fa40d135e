/* intern.c -- a sample's pcs into its bucket (see intern.h). */
#define _GNU_SOURCE
#include "intern.h"

#include <stdlib.h>
#include <string.h>

#include "ha_proto.h"
#include "procmaps.h"
#include "util.h"
#include "writer.h"

void ha_intern_init(struct ha_intern *in, pid_t pid, struct ha_book *book,
                    struct ha_queue *to_writer, uint64_t *new_buckets)
{
	memset(in, 0, sizeof *in);
	in->book = book;
	in->to_writer = to_writer;
	in->new_buckets = new_buckets;
	struct ha_maps maps = { 0 };
	if (ha_maps_read(pid, &maps) < 0)
		return;
	in->agent_lo = UINT64_MAX;
	in->agent_hi = 0;
	for (size_t i = 0; i < maps.n; i++) {
		if (strcmp(ha_maps_module_name(maps.v[i].path), HA_AGENT_SONAME) == 0) {
			if (maps.v[i].start < in->agent_lo)
				in->agent_lo = maps.v[i].start;
			if (maps.v[i].end > in->agent_hi)
				in->agent_hi = maps.v[i].end;
		}
	}
	ha_maps_free(&maps);
}

/* Hand a new bucket's callstack to the writer, which symbolizes and
 * stores it. */
static void send_callstack(struct ha_intern *in, uint32_t id, const uint64_t *pcs, int n,
                           int first_is_return)
{
	struct ha_wmsg_stack *m = malloc(sizeof *m + (size_t)n * sizeof m->pcs[0]);
	if (!m)
		return;
	m->q.type = HA_WMSG_STACK;
	m->local_id = id;
	m->n = n;
	m->first_is_return = first_is_return;
	memcpy(m->pcs, pcs, (size_t)n * sizeof *pcs);
	ha_queue_put(in->to_writer, &m->q);
}

uint32_t ha_intern_bucket(struct ha_intern *in, uint64_t *pcs, int n, int kind, uint32_t *ids,
                          int first_is_return)
{
	int is_new;
	if (ids && ids[kind])
		return ids[kind];
	/* The innermost frames are the agent's own hook and capture code.  Hook
	 * frames further out (operator new's hook around libstdc++'s new, whose
	 * malloc took the sample) are dropped too: the stack reads as if the
	 * program ran without the agent. */
	int skip = 0;
	while (skip < n && ha_intern_in_agent(in, pcs[skip]))
		skip++;
	int kept = skip;
	for (int i = skip; i < n; i++)
		if (!ha_intern_in_agent(in, pcs[i]))
			pcs[kept++] = pcs[i];
	n = kept;
	uint32_t id = ha_book_bucket(in->book, pcs + skip, n - skip, kind, &is_new);
	if (!id)
		return 0;
	if (is_new) {
		(*in->new_buckets)++;
		/* When agent frames were skipped, the first pc kept is a
		 * return address. */
		send_callstack(in, id, pcs + skip, n - skip, skip > 0 || first_is_return);
	}
	if (ids)
		ids[kind] = id;
	return id;
}
