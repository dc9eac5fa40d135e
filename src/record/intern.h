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
#include "procmaps.h"
#include "queue.h"

#define HA_MAX_PCS 128        /* pcs of one callstack, at most */

/* The cap on distinct call paths: a session keeps at most this many
 * buckets of its own (--max-callpaths; 0: no cap).  Past it, a sample of a
 * call path not seen before is booked to one bucket per kind and module of
 * its leaf (the code that called the allocation function): a single frame,
 * HA_OVER_CAP_FUNCTION of that module (writer.h, HA_PC_OVER_CAP), counted
 * (folded).  So a target that makes endless distinct stacks (recursion
 * patterns, JIT code, a hostile one forging them) cannot grow the
 * attacher's book, the writer's or the database's stacks without bound,
 * while what it allocates is still counted, under its module. */
#define HA_MAX_CALLPATHS_DEFAULT 50000

struct ha_intern {
	struct ha_book *book;
	struct ha_queue *to_writer;   /* new buckets' callstacks go there */
	uint64_t agent_lo, agent_hi;  /* the agent's mappings: its frames are skipped */
	uint64_t *new_buckets;        /* counted here (the collector's stats) */
	uint64_t cap;                 /* buckets of the session's own, at most (0: none) */
	uint64_t *folded;             /* samples booked past the cap (stats) */
	pid_t pid;
	struct ha_maps maps;          /* the target's, for a leaf's module (past the cap) */
	double maps_ms;               /* when they were last read */
};

/* Find the agent's mappings in the target's maps.  cap: --max-callpaths
 * (0: none); folded: where samples past it are counted. */
void ha_intern_init(struct ha_intern *in, pid_t pid, struct ha_book *book,
                    struct ha_queue *to_writer, uint64_t *new_buckets, uint64_t cap,
                    uint64_t *folded);
void ha_intern_free(struct ha_intern *in);

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
