/* reach.h -- the reachability scan of a live target (issue 40): which of
 * the sampled live blocks nothing points to any more (leaked), and who
 * holds the rest.
 *
 * One scan: the target's threads are stopped at a safe point (none inside
 * the allocator or the loader, inject_safe.h), their registers read, and
 * one of them is made to run a raw clone syscall: a frozen copy of the
 * process, born stopped under our ptrace with PTRACE_O_EXITKILL (it dies
 * with us, it never runs).  The target resumes at once; the copy is read
 * from outside (glibc's chunks, the roots, the mark), then killed, and its
 * zombie reaped by one of the target's threads (reach_freeze.c).
 *
 * Only glibc's malloc is walked (main heap, thread arenas, mmapped chunks,
 * reach_heap.c); on another allocator the scan says so in one line and
 * does nothing. */
#ifndef HA_REACH_H
#define HA_REACH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

/* Kinds of root, in the order they are scanned (the first root to reach a
 * block is its holder). */
enum reach_root_kind {
	REACH_ROOT_NONE = 0,
	REACH_ROOT_GLOBAL = 1,   /* a module's writable segment (.data, .bss) */
	REACH_ROOT_TLS = 2,      /* a thread's static TLS and thread block */
	REACH_ROOT_STACK = 3,    /* a thread's stack, from SP - 128 up */
	REACH_ROOT_REGISTER = 4, /* a thread's general registers */
	REACH_ROOT_ANON = 5,     /* another anonymous writable mapping */
};

/* The name each kind is stored and printed by ("global", "tls", "stack",
 * "register", "anon"); "" for NONE. */
const char *reach_root_name(int kind);

/* Reachability of one sampled block. */
enum reach_state {
	REACH_UNKNOWN = 0,     /* not a chunk the walk found (not scanned) */
	REACH_REACHABLE = 1,
	REACH_UNREACHABLE = 2,
};

/* One sampled live block: the caller fills addr, size and tag (its own
 * use: a bucket id); the scan fills the rest. */
struct reach_block {
	uint64_t addr, size;
	uint32_t tag;
	uint8_t state;        /* enum reach_state */
	uint8_t root_kind;    /* enum reach_root_kind of its holder */
	uint16_t hops;        /* heap blocks between the root and it (0: the root points at it) */
	uint32_t holder;      /* index into reach_result.holders (when reachable) */
};

/* A holder: a root kind and its name ("g_cache [prog]", "tid 1234",
 * "t_cache [prog] tid 1234", "tid 1234 rsp"...), at most 1,023 bytes,
 * cleaned (no control bytes).
 * What a symbolizer may add to the name, at name[at] (the scan runs on
 * the collector's thread, which names nothing: the writer's symbolizer
 * does, reach_names.c in src/record): for a stack, the frame holding the
 * word (its pc; 0 when no frame could be told); for a global, the word's
 * address and an address of its module (where its definition is, from
 * DWARF); for TLS, the word's module and offset in the module's static
 * TLS block (the TLS variable there, from DWARF). */
#define REACH_NAME_MAX 1024
struct reach_holder {
	int kind;
	char name[REACH_NAME_MAX];
	uint64_t pc;          /* STACK: the holding frame's pc (0: none told) */
	int pc_is_ret;        /* ...a return address (every frame but the innermost) */
	uint64_t addr;        /* GLOBAL: the root word's address (0: none);
	                       * TLS (tls set): the word's offset in its module's block */
	uint64_t module;      /* GLOBAL, TLS: the start of its module's first mapping */
	int tls;              /* TLS: the module's static block holding the word was told */
	size_t at;            /* where in name a detail goes (<= strlen(name));
	                       * GLOBAL: 0 when no ELF symbol names it
	                       * ("prog+0x4a10"), DWARF's name may then lead;
	                       * TLS: 0 when none does ("tls+0x40 [prog] tid N"),
	                       * DWARF's name may then take the first word's place */
};

struct reach_result {
	double pause_ms;        /* the target's threads stopped, first stop to last resume */
	double scan_ms;         /* the whole scan, freeze to the copy reaped */
	uint64_t bytes_scanned; /* roots and heap blocks read */
	uint64_t cow_bytes;     /* what the copy cost: its private pages and page tables at the end */
	uint64_t chunks;        /* glibc chunks in use found */
	double holders_ms;      /* classifying the blocks and naming their holders */
	int stacks_walked;      /* threads' stacks walked for the frames of holders */
	struct reach_holder *holders; /* malloc'ed, nholders of them (room for capholders) */
	size_t nholders, capholders;
};

void reach_result_free(struct reach_result *r);

struct ha_ring_hdr;
struct reach_opts {
	int safe_tries;  /* rounds to let unsafe threads run on (0: 100) */
	int verbose;
	/* Address ranges never roots (the agent's own memory): [lo, hi) pairs. */
	const uint64_t *skip;
	size_t nskip;
	/* The walk of a thread's stack in the copy, for the frames of the
	 * holders on stacks (the caller's unwinder, on the scan's thread):
	 * regs as the thread stopped, len bytes of its stack from regs->rsp;
	 * up to max frames' pcs (pcs[0] = rip, then return addresses) and
	 * stack pointers (sps[0] = rsp, then each caller's), their number or
	 * -1.  NULL: stacks are named by their thread alone. */
	int (*walk)(void *ctx, const struct user_regs_struct *regs, const uint8_t *stack,
	            size_t len, uint64_t *pcs, uint64_t *sps, int max);
	void *walk_ctx;
	/* The first ring's header as we map it: the agent's threads are asked
	 * to park there (reach_park.c).  NULL: no park. */
	struct ha_ring_hdr *park;
};

/* Scan target pid.  0 with every block classified, -1 with one line in err
 * (no safe point, clone refused, not glibc...): the target is then running
 * as before and no copy is left. */
int reach_scan(pid_t pid, struct reach_block *blocks, size_t n, const struct reach_opts *o,
               struct reach_result *r, char *err, size_t errlen);

#endif
