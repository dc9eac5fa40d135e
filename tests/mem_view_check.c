/* mem_view_check -- src/rss/mem_view.c on a live process: `mem_view_check
 * PID` prints RssAnon, each term ("term NAME BYTES"), each arena ("arena
 * I main=M heaps=N system=B in_use=B free=B top=B resident=B trimmable=B
 * pinned=B complete=C") and the cost (t_memory.sh).  `mem_view_check PID
 * pages`: with the pages' accounting of --by-stack (mem_pin.h) on, no
 * block given: its cost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_view.h"

static void no_blocks(void *arg, ha_mem_each_fn each, void *ctx)
{
	(void)arg;
	(void)each;
	(void)ctx;
}

int main(int argc, char **argv)
{
	if (argc != 2 && !(argc == 3 && strcmp(argv[2], "pages") == 0)) {
		fprintf(stderr, "usage: mem_view_check PID [pages]\n");
		return 2;
	}
	struct ha_mem_view v;
	if (ha_mem_view_read((pid_t)atoi(argv[1]), argc == 3 ? no_blocks : NULL, NULL, NULL, &v) != 0) {
		fprintf(stderr, "mem_view_check: cannot read pid %s\n", argv[1]);
		return 1;
	}
	printf("rss_anon %llu\nallocator %s\n", (unsigned long long)v.rss_anon, v.allocator);
	for (int t = 0; t < HA_MT_COUNT; t++)
		printf("term %s %lld\n", ha_mem_term_name(t), (long long)v.terms[t]);
	for (size_t i = 0; i < v.narenas; i++) {
		const struct ha_mem_arena *a = &v.arenas[i];
		printf("arena %zu main=%d heaps=%u system=%llu in_use=%llu free=%llu top=%llu "
		       "resident=%llu trimmable=%llu pinned=%llu complete=%d\n",
		       i, a->is_main, a->heaps, (unsigned long long)a->system,
		       (unsigned long long)a->in_use, (unsigned long long)a->free_bins,
		       (unsigned long long)a->top, (unsigned long long)a->resident,
		       (unsigned long long)a->trimmable, (unsigned long long)a->pinned, a->complete);
	}
	printf("cost_ns %llu walk_ns %llu arenas %zu\n", (unsigned long long)v.cost_ns,
	       (unsigned long long)v.walk_ns, v.narenas);
	ha_mem_view_free(&v);
	return 0;
}
