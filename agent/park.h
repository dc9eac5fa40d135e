/*
 * park.h -- the park: a reachability scan's safe point on a busy target
 * (park.c).  The hooks (hooks.c) test their word with ha_park_asked, one
 * relaxed load and a branch not taken, and only then call ha_park_wait.
 */
#ifndef HA_AGENT_PARK_H
#define HA_AGENT_PARK_H

#include <stdint.h>

#include "tls.h"

/* A park is asked: word is the hooks' (the attacher writes it).  Never in
 * bench/run's floor agent (HA_BENCH_FLOOR). */
static inline int ha_park_asked(const uint32_t *word)
{
#ifdef HA_BENCH_FLOOR
	(void)word;
	return 0;
#else
	return __builtin_expect(__atomic_load_n(word, __ATOMIC_RELAXED) != 0, 0) != 0;
#endif
}

/* Wait in the park if one is asked and this thread may (park.c).
 * new_or_delete: called at operator new's or delete's entry, which is the
 * program's call; any other hook first honours ha_tls.park_skip. */
HA_HIDDEN void ha_park_wait(uint32_t *word, int new_or_delete);

/* At a hook's entry (new_or_delete 1: operator new or delete, which then
 * mark the thread so that the malloc or free their real function calls
 * does not park inside them; set only while a park is asked: a race with
 * the request costs one park refused, src/reach/README.md). */
#define HA_PARK_POINT(word, new_or_delete)              \
	do {                                                \
		if (ha_park_asked(word)) {                      \
			ha_park_wait((word), (new_or_delete));      \
			if (new_or_delete)                          \
				ha_tls.park_skip = 1;                   \
		}                                               \
	} while (0)

/* Publish word's address in the session's ring header (no session: do
 * nothing); end: clear the word, end any park asked, wake the parked. */
HA_HIDDEN void ha_park_publish(uint32_t *word);
HA_HIDDEN void ha_park_end(uint32_t *word);

#endif /* HA_AGENT_PARK_H */
