/* intern.c -- a sample's pcs into its bucket (see intern.h). */
#define _GNU_SOURCE
#include "intern.h"

#include <stdlib.h>
#include <string.h>

#include "ha_proto.h"
#include "procmaps.h"
#include "util.h"
#include "writer.h"

#define MAPS_MIN_MS 1000.0   /* read the maps again at most this often */

void ha_intern_init(struct ha_intern *in, pid_t pid, struct ha_book *book,
                    struct ha_queue *to_writer, uint64_t *new_buckets, uint64_t cap,
                    uint64_t *folded)
{
	memset(in, 0, sizeof *in);
	in->book = book;
	in->to_writer = to_writer;
	in->new_buckets = new_buckets;
	in->cap = cap;
	in->folded = folded;
	in->pid = pid;
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

void ha_intern_free(struct ha_intern *in)
{
	ha_maps_free(&in->maps);
}

/* The lowest address of the module whose code holds pc (0: none known,
 * anonymous code): what names the leaf's module past the cap.  The maps
 * are read again for a pc in none of them, at most once a second. */
static uint64_t module_base(struct ha_intern *in, uint64_t pc)
{
	const struct ha_map *m = in->maps.n ? ha_maps_find_addr(&in->maps, pc) : NULL;
	if (!m && ha_now_ms() - in->maps_ms >= MAPS_MIN_MS) {
		ha_maps_free(&in->maps);
		if (ha_maps_read(in->pid, &in->maps) < 0)
			memset(&in->maps, 0, sizeof in->maps);
		in->maps_ms = ha_now_ms();
		m = in->maps.n ? ha_maps_find_addr(&in->maps, pc) : NULL;
	}
	if (!m || !m->path[0] || m->path[0] == '[')
		return 0;
	uint64_t base = m->start;
	for (size_t i = 0; i < in->maps.n; i++)
		if (in->maps.v[i].start < base && strcmp(in->maps.v[i].path, m->path) == 0)
			base = in->maps.v[i].start;
	return base;
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
	if (in->cap && ha_book_count(in->book) >= in->cap &&
	    !ha_book_find(in->book, pcs + skip, n - skip, kind)) {
		/* Past the cap: the leaf module's bucket (intern.h). */
		uint64_t key[2] = { HA_PC_OVER_CAP, n > skip ? module_base(in, pcs[skip]) : 0 };
		uint32_t id = ha_book_bucket(in->book, key, 2, kind, &is_new);
		if (!id)
			return 0;
		(*in->folded)++;
		if (is_new) {
			(*in->new_buckets)++;
			send_callstack(in, id, key, 2, 1);
		}
		if (ids)
			ids[kind] = id;
		return id;
	}
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
