/* intern.h -- a sample's pcs into its bucket: the callstack (the agent's
 * own frames taken out) and the kind, interned in the book; a bucket new to
 * the book goes to the writer, which symbolizes and stores its callstack.
 *
 * A bucket is a (callstack, kind) pair: the same pcs allocated by malloc
 * and by mmap are two buckets, as are the pages they first touched (kind
 * rss) and those swapped out (kind swap) (book.h, ha_book_bucket). */
#ifndef HA_INTERN_H
#define HA_INTERN_H

#include <stdint.h>
#include <sys/types.h>
#include "book.h"
#include "queue.h"

#define HA_MAX_PCS 128        /* pcs of one callstack, at most */

struct ha_intern {
	struct ha_book *book;
	struct ha_queue *to_writer;   /* new buckets' callstacks go there */
	uint64_t agent_lo, agent_hi;  /* the agent's mappings: its frames are skipped */
	uint64_t *new_buckets;        /* counted here (the collector's stats) */
};

/* Find the agent's mappings in the target's maps. */
void ha_intern_init(struct ha_intern *in, pid_t pid, struct ha_book *book,
                    struct ha_queue *to_writer, uint64_t *new_buckets);

/* Is pc the agent's own code? */
static inline int ha_intern_in_agent(const struct ha_intern *in, uint64_t pc)
{
	return pc >= in->agent_lo && pc < in->agent_hi;
}

/* The bucket of n pcs (leaf first, changed in place) of kind (0: out of
 * memory); a new one goes to the writer.  ids: the words the unwinder's
 * cache entry keeps for the heap and mmap buckets of those pcs (NULL:
 * none), read and filled.  first_is_return: pcs[0] is a return address
 * (as it is when agent frames are skipped). */
uint32_t ha_intern_bucket(struct ha_intern *in, uint64_t *pcs, int n, int kind, uint32_t *ids,
                          int first_is_return);

#endif
