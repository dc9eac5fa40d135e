/*
 * ha_proto.h -- the one definition of everything that crosses the boundary
 * between the injected agent (agent/) and the attacher (src/):
 *
 *   1. the arguments of the remote init call the injector makes;
 *   2. the agent's exported state word the attacher reads before injecting;
 *   3. the control messages on the Unix socket (SOCK_SEQPACKET, fixed size);
 *   4. the layout of the shared-memory ring (a memfd passed with SCM_RIGHTS).
 *
 * Both sides include this file; nothing here may be defined a second time
 * anywhere else.  Everything the attacher reads from the target (messages,
 * ring header, ring records) is untrusted and must be bounds-checked there.
 *
 * Only fixed-width types; every struct has its size asserted below so that a
 * change of layout is a compile error on both sides, not a silent mismatch.
 */
#ifndef HA_PROTO_H
#define HA_PROTO_H

#include <stdint.h>
#include <stddef.h>
#include "ha_py.h"

#define HA_PROTO_MAGIC   0x48415450u /* "HATP" */
#define HA_PROTO_VERSION 15u

/* Name of the agent's shared object as installed and built. */
#define HA_AGENT_SONAME "heapattach_agent.so"

/* ------------------------------------------------------------------ */
/* 1. Remote init call                                                 */
/* ------------------------------------------------------------------ */

/* Exported by the agent with C linkage:
 *     int heapattach_agent_init(struct ha_init_args *args);
 * Called on a hijacked thread of the target.  It copies *args, connects,
 * sends HELLO and waits briefly for CONFIG: the attacher should answer while
 * the call runs, and then init completes the handshake (READY) itself;
 * otherwise the agent thread does.  It returns one of these values and also
 * writes it into args->result, which is where the attacher reads it (its
 * calls return through a signal frame that overwrites rax; see
 * src/inject/inject_frame.c): */
#define HA_AGENT_INIT_SYMBOL "heapattach_agent_init"
#define HA_INIT_STARTED   0   /* session under way (maybe READY already)  */
#define HA_INIT_BUSY      1   /* an agent session is already active       */
#define HA_INIT_BADARGS   2   /* magic/version mismatch                    */
#define HA_INIT_NOTHREAD  3   /* pthread_create failed                     */
#define HA_INIT_FAILED    4   /* handshake failed (ERROR sent if it could) */
#define HA_INIT_NOIMPORT  5   /* dlsym_addr is 0, or found no pthread_create... */

/* ha_init_args.flags */
#define HA_INIT_SHORT_SLICES 0x1u /* no seccomp filter: the agent thread may
                                   * ask for short time slices (sched_setattr) */
#define HA_INIT_PEER_OUTSIDE 0x2u /* the target is in a pid namespace below
                                   * the attacher's, where the attacher has no
                                   * pid: SO_PEERCRED shows it as 0, as it
                                   * shows every process outside (attacher_pid
                                   * stays its own, for ha_agent_state; the
                                   * cookie tells the attacher from them), and
                                   * HELLO's pid is the target's own there */

#define HA_SOCK_PATH_MAX 108  /* sizeof(sun_path) */

struct ha_init_args {
	uint32_t magic;                     /* HA_PROTO_MAGIC */
	uint32_t version;                   /* HA_PROTO_VERSION */
	int32_t  attacher_pid;              /* agent checks SO_PEERCRED.pid against it
	                                     * (against 0 with HA_INIT_PEER_OUTSIDE) */
	uint32_t attacher_uid;
	char     sock_path[HA_SOCK_PATH_MAX]; /* path as seen inside the target */
	uint32_t flags;                     /* HA_INIT_* */
	int32_t  result;                    /* written by init: HA_INIT_* */
	uint8_t  cookie[8];                 /* random, of this session: CONFIG
	                                     * must carry it (only who wrote
	                                     * these arguments into the target
	                                     * knows it) */
	uint32_t pad;
	uint64_t dlsym_addr;                /* dlsym in the target's own libc (glibc
	                                     * 2.34 on) or libdl: the agent asks it
	                                     * for what it imports from neither
	                                     * (agent/imports.h); 0 when the agent
	                                     * is loaded already (it kept its own) */
};

/* ------------------------------------------------------------------ */
/* 2. Agent state word                                                 */
/* ------------------------------------------------------------------ */

/* Exported by the agent:  struct ha_agent_state heapattach_agent_state;
 * The attacher reads it from the target (process_vm_readv) to find out,
 * without touching the target, whether an agent is loaded and busy. */
#define HA_AGENT_STATE_SYMBOL "heapattach_agent_state"
#define HA_STATE_DORMANT  0u  /* loaded, no session: init may be called */
#define HA_STATE_STARTING 1u  /* init called, agent thread connecting   */
#define HA_STATE_ACTIVE   2u  /* handshake done, hooks installed        */
#define HA_STATE_STOPPING 3u  /* restoring hooks, leaving                */

struct ha_agent_state {
	uint32_t magic;         /* HA_PROTO_MAGIC once the agent is loaded */
	uint32_t version;       /* HA_PROTO_VERSION of the loaded agent   */
	uint32_t state;         /* HA_STATE_*                              */
	int32_t  attacher_pid;  /* pid of the attacher of the session      */
	uint64_t sessions;      /* number of sessions started so far       */
};

/* ------------------------------------------------------------------ */
/* 3. Socket messages                                                  */
/* ------------------------------------------------------------------ */

/* Sequence of one session:
 *   agent    -> attacher  HA_MSG_HELLO
 *   attacher -> agent     HA_MSG_CONFIG   (+ ring memfd via SCM_RIGHTS)
 *   agent    -> attacher  HA_MSG_READY    (hooks installed) or HA_MSG_ERROR
 *   attacher -> agent     HA_MSG_TRIM     (heapattach --trim, any number)
 *   agent    -> attacher  HA_MSG_TRIMMED  (the allocator's trim done on its thread)
 *   attacher -> agent     HA_MSG_ALLOC_ASK  (a snapshot: the allocator's stats)
 *   agent    -> attacher  HA_MSG_ALLOC_STATS (1 + arena parts, see below)
 *   attacher -> agent     HA_MSG_DETACH
 *   agent    -> attacher  HA_MSG_DETACHED (hooks restored, ring unmapped)
 * A hang-up at any point makes the agent restore everything by itself.
 * Every message is exactly sizeof(struct ha_msg) bytes.  5 and 6 (a
 * counters request and its answer, never used) are retired: not to be
 * given to another message, so that no peer of another version mistakes
 * one for the other. */
enum ha_msg_type {
	HA_MSG_HELLO = 1,
	HA_MSG_CONFIG = 2,
	HA_MSG_READY = 3,
	HA_MSG_ERROR = 4,
	/* 5, 6: retired (see above) */
	HA_MSG_DETACH = 7,
	HA_MSG_DETACHED = 8,
	HA_MSG_TRIM = 9,
	HA_MSG_TRIMMED = 10,
	HA_MSG_ALLOC_ASK = 11,
	HA_MSG_ALLOC_STATS = 12,
};

#define HA_CFG_BLOCK 0x1u /* ring full: wait instead of dropping */
#define HA_CFG_PY_NO_WRAP 0x2u /* Python frames, but no wrap of CPython's
                                * allocators (heapattach --python frames) */

/* The largest sampling interval either side uses (1 TiB): the configured
 * one is refused above it, the adaptive one never goes beyond it. */
#define HA_INTERVAL_MAX (1ull << 40)

struct ha_msg_hello {
	int32_t  pid;          /* getpid() of the target, as the agent sees it */
	uint32_t agent_version;
	uint64_t sessions;
};

struct ha_msg_config {
	uint64_t ring_size;       /* total memfd size, bytes: rings units    */
	uint64_t sample_interval; /* mean bytes between samples              */
	uint32_t stack_bytes;     /* cap of the raw stack copy                */
	uint32_t flags;           /* HA_CFG_*                                */
	uint32_t rings;           /* rings in the memfd (section 4)          */
	uint32_t pad;
	uint8_t  cookie[8];       /* ha_init_args.cookie: the agent maps the
	                           * ring of a peer that knows it only */
	struct ha_py_walk py;     /* the target's CPython, if any (ha_py.h):
	                           * chain HA_PY_CHAIN_NONE when there is none */
};

/* Counters the agent keeps.  Cumulative over the session. */
struct ha_counters {
	uint64_t malloc_calls;
	uint64_t calloc_calls;
	uint64_t realloc_calls;
	uint64_t samples;
	uint64_t drops;
	uint64_t slots_patched;  /* GOT slots currently pointing at hooks */
	uint64_t modules_patched;
};

/* TRIMMED: what the trim returned on the agent's thread and how long it
 * took.  kind (HA_ALLOC_*) says whose: NONE is glibc's malloc_trim(0)
 * (result 1 memory given back, 0 none, -1 the target's libc has none;
 * it holds each arena's lock while it walks it); JEMALLOC mallctl
 * "arena.4096.purge" (result its return, 0 done); TCMALLOC
 * MallocExtension_ReleaseFreeMemory() and MIMALLOC mi_collect(true)
 * (result 0: called).  The allocator is chosen as for ALLOC_STATS. */
struct ha_msg_trimmed {
	int32_t result;
	uint32_t kind;
	uint64_t ns;
};

/* The allocator's own statistics, read on the agent's thread by calling it
 * (agent/alloc_stats.c): another allocator than glibc's serves the program
 * (LD_PRELOAD'ed, or linked as redis-server links libjemalloc), found by
 * the target's dlsym in this order.  glibc's arenas are read from outside
 * (src/rss/mem_glibc.c): NONE. */
enum ha_alloc_kind {
	HA_ALLOC_NONE = 0,       /* none of these: glibc (or unknown) */
	HA_ALLOC_JEMALLOC = 1,   /* mallctl */
	HA_ALLOC_TCMALLOC = 2,   /* gperftools: MallocExtension_GetNumericProperty */
	HA_ALLOC_MIMALLOC = 3,   /* mi_process_info */
	HA_ALLOC_KINDS
};

/* ALLOC_ASK: seq, echoed by every part of the answer (a late answer to an
 * earlier ask is told apart and dropped). */
struct ha_msg_alloc_ask {
	uint32_t seq;
	uint32_t pad;
};

/* ALLOC_STATS: part 0 holds the totals, v[] indexed by the kind's HA_J_*,
 * HA_T_*, HA_M_* below, bit i of `have` set when v[i] was read; parts 1 ..
 * parts-1 hold jemalloc's arenas, HA_ALLOC_ARENAS_PER_MSG to a part, each
 * HA_JA_VALUES values from v[part_arena * HA_JA_VALUES].  Every figure is
 * in bytes (page counts multiplied by the page size on the agent's side).
 * Bounded: at most HA_ALLOC_ARENAS_MAX arenas are sent (the totals are of
 * them all), so parts <= 1 + HA_ALLOC_ARENAS_MAX / HA_ALLOC_ARENAS_PER_MSG. */
#define HA_ALLOC_VALUES 12
#define HA_ALLOC_ARENAS_PER_MSG 2
#define HA_ALLOC_ARENAS_MAX 64
#define HA_ALLOC_PARTS_MAX (1 + HA_ALLOC_ARENAS_MAX / HA_ALLOC_ARENAS_PER_MSG)
struct ha_msg_alloc_stats {
	uint32_t seq;            /* the ask's */
	uint16_t kind;           /* enum ha_alloc_kind */
	uint16_t part;
	uint16_t parts;          /* of this answer, 1 with no arena */
	uint16_t count;          /* arenas in this part (0 in part 0) */
	uint32_t narenas;        /* part 0: the allocator's arenas (jemalloc's
	                          * arenas.narenas, maybe more than sent) */
	uint32_t have;           /* part 0: bit i, v[i] read */
	uint32_t pad;
	uint64_t ns;             /* part 0: the reading's time on the agent's thread */
	uint64_t v[HA_ALLOC_VALUES];
};
/* jemalloc's totals (stats.*, after "epoch" is written): */
enum { HA_J_ALLOCATED, HA_J_ACTIVE, HA_J_RESIDENT, HA_J_MAPPED, HA_J_RETAINED, HA_J_METADATA,
       HA_J_DIRTY, HA_J_MUZZY, HA_J_PAGE, HA_J_LARGE_PAD, HA_J_COUNT };
/* HA_J_LARGE_PAD: with opt.cache_oblivious (the default), each large
 * block's extent has a page more than its size, its start at a random
 * cache line of it: active counts that page, which is never touched
 * (large.nmalloc - large.ndalloc pages).  Each arena's active is sent
 * without its pad. */
/* ...and each arena's (stats.arenas.<i>.*): */
enum { HA_JA_INDEX, HA_JA_THREADS, HA_JA_ACTIVE, HA_JA_ALLOCATED, HA_JA_DIRTY, HA_JA_MUZZY,
       HA_JA_VALUES };
/* tcmalloc's (generic.* and tcmalloc.* numeric properties): */
enum { HA_T_ALLOCATED, HA_T_HEAP_SIZE, HA_T_PAGEHEAP_FREE, HA_T_PAGEHEAP_UNMAPPED,
       HA_T_CENTRAL_FREE, HA_T_TRANSFER_FREE, HA_T_THREAD_FREE, HA_T_PHYSICAL, HA_T_COUNT };
/* mimalloc's (mi_process_info): */
enum { HA_M_COMMIT, HA_M_PEAK_COMMIT, HA_M_RSS, HA_M_PEAK_RSS, HA_M_COUNT };
_Static_assert(HA_J_COUNT <= HA_ALLOC_VALUES && HA_T_COUNT <= HA_ALLOC_VALUES &&
               HA_ALLOC_ARENAS_PER_MSG * HA_JA_VALUES <= HA_ALLOC_VALUES, "alloc stats fit");

struct ha_msg_error {
	int32_t code;            /* errno-style */
	char    text[120];       /* NUL-terminated inside the array */
};

struct ha_msg {
	uint32_t magic;          /* HA_PROTO_MAGIC */
	uint16_t version;        /* HA_PROTO_VERSION */
	uint16_t type;           /* enum ha_msg_type */
	union {
		struct ha_msg_hello hello;
		struct ha_msg_config config;
		struct ha_counters counters;   /* READY, DETACHED */
		struct ha_msg_error error;
		struct ha_msg_trimmed trimmed;
		struct ha_msg_alloc_ask alloc_ask;
		struct ha_msg_alloc_stats alloc;
		uint8_t pad[128];
	} u;
};

/* ------------------------------------------------------------------ */
/* 4. Shared-memory ring                                               */
/* ------------------------------------------------------------------ */

/* memfd layout: HA_CONFIG.rings rings (a power of two, at most
 * HA_RINGS_MAX), one after the other, each one header page and its table
 * (HA_RING_HDR_SIZE bytes) followed by data_size bytes of record data (a
 * power of two, a multiple of the page size), and each a ring of its own
 * as described below.  A record goes to the ring of the address it is
 * about (ha_ring_route): every record of one block, its sample and its
 * free, is in one ring and in the order it happened, which is all the
 * consumer needs to keep the live set; glibc gives each thread an arena
 * of its own, 64 MiB aligned, so threads write to rings of their own and
 * do not take each other's lines (doc/design.md, "Rings by address").  A
 * modules record goes to every ring.  The first ring's header is also the
 * session's: its interval, modules_gen and stack-reference table are the
 * ones both sides use, and its consumer_waiting is the word the consumer
 * sleeps on for all rings.
 *
 * Within one ring: both sides map the data area twice, back to back, right after the
 * header, so a record that runs past the end of the data area continues in
 * the second mapping and is always contiguous in memory:
 *
 *   [hdr][data 0..size)[data 0..size again]
 *
 * Positions (prod, cons) are byte offsets that only grow; a record lives at
 * data + (pos & (size - 1)).  Multiple producers (target threads) reserve
 * space with a CAS on prod; the single consumer (the attacher) advances cons.
 * A record is published by storing its header's stamp, a function of its
 * position (ha_ring_stamp), with release semantics; the consumer loads the
 * stamp at cons with acquire and takes the record only when it is the stamp
 * of that very position.  Whatever an earlier lap left there (an older
 * record's stamp is that of another position; stack words match a given
 * 64-bit stamp with odds of 2^-64) reads as "not ready", so the consumer
 * never has to write to the data area (it used to zero every byte it
 * consumed: memory traffic on both sides). */
#define HA_RING_MAGIC    0x48415247u /* "HARG" */
/* The header page, then the table of stack references (struct ha_sref). */
#define HA_SREF_OFF      4096u
#define HA_SREF_SLOTS    64u
#define HA_RING_HDR_SIZE (HA_SREF_OFF + HA_SREF_SLOTS * 512u)
#define HA_RING_ALIGN    8u          /* every record length is a multiple */
#define HA_RINGS_MAX     16u         /* rings in one memfd, at most */
/* Addresses are routed in 64 MiB blocks: the size and alignment of a
 * glibc thread arena's heap. */
#define HA_RING_ROUTE_SHIFT 26

/* The ring of the records about the block at addr (rings: a power of two). */
static inline uint32_t ha_ring_route(uint64_t addr, uint32_t rings)
{
	return (uint32_t)(addr >> HA_RING_ROUTE_SHIFT) & (rings - 1);
}

/* The furthest ahead a park's deadline may be (ha_ring_hdr.park_deadline):
 * a thread of the target waits in the park at most this long, also when
 * the attacher died asking. */
#define HA_PARK_MAX_MS 100

struct ha_ring_hdr {
	uint32_t magic;          /* HA_RING_MAGIC */
	uint32_t version;        /* HA_PROTO_VERSION */
	uint64_t data_size;      /* bytes, power of two */
	uint64_t interval;       /* mean bytes between samples in effect now:
	                          * written by the consumer (it raises it while
	                          * the ring overflows, see collector.c), read by
	                          * the producers whenever they draw a countdown;
	                          * 0 = the configured interval */
	uint32_t modules_gen;    /* the agent's: bumped before every modules
	                          * record, which carries it (low 16 bits, in
	                          * h.flags); see struct ha_sref */
	uint32_t py_wrap;        /* the agent's: enum ha_py_wrap, where its
	                          * wrap of CPython's allocators stands */
	/* The park: the reachability scan's cooperative safe point
	 * (agent/park.c, src/reach/reach_park.c).  A line nobody writes
	 * but during a scan. */
	uint32_t park_gen;       /* futex word (shared): odd while the attacher
	                          * asks the threads to park, bumped to end it */
	uint32_t park_parked;    /* the agent's: threads waiting in the park now */
	uint64_t park_deadline;  /* CLOCK_MONOTONIC ns: no thread parks or waits
	                          * past it (at most HA_PARK_MAX_MS ahead) */
	uint64_t park_flag;      /* the agent's: the address, in the target, of
	                          * the word its hooks look at (the attacher
	                          * writes 1 there to ask, 0 after); 0: no park */
	uint64_t copy_stub;      /* the agent's: the address, in the target, of
	                          * its copy stub (ha_copy_stub.h), which the
	                          * scan's system calls run in; 0: none */
	uint64_t prod;           /* producers: next free position (CAS)  */
	uint8_t  pad1[56];
	uint64_t cons;           /* consumer: first unconsumed position  */
	uint8_t  pad2[56];
	uint64_t drops;          /* records not written because full     */
	uint32_t consumer_waiting; /* futex word: consumer sleeps on it   */
	uint32_t producers_waiting; /* --block: producers asleep on cons   */
	uint8_t  pad4[48];
};

/* Record header.  len includes the header and is a multiple of
 * HA_RING_ALIGN; the record is published once stamp is
 * ha_ring_stamp(its position). */
struct ha_rec_hdr {
	uint64_t stamp;
	uint32_t len;
	uint16_t type;           /* enum ha_rec_type */
	uint16_t flags;
};

/* The stamp of a record at position pos: one-to-one (xor, then a multiply
 * by an odd constant), never 0 for a position a ring reaches, and unlike
 * the small integers programs keep on their stacks. */
static inline uint64_t ha_ring_stamp(uint64_t pos)
{
	return (pos ^ 0x9e3779b97f4a7c15ull) * 0xbf58476d1ce4e5b9ull;
}

enum ha_rec_type {
	HA_REC_SAMPLE = 1,       /* struct ha_rec_sample + stack bytes       */
	HA_REC_FREE = 2,         /* struct ha_rec_free: a sampled block freed */
	HA_REC_MODULES = 3,      /* header only: modules were loaded or unloaded
	                          * (dlopen, libc's own loads): re-read the maps
	                          * before unwinding or symbolizing what follows */
	HA_REC_PAD = 0x7fff,     /* filler; consumer skips it */
};

/* ha_rec_hdr.flags */
#define HA_REC_F_TRUNCATED 0x1u  /* the stack copy was cut at stack_bytes */
#define HA_REC_F_SREF      0x2u  /* no copy: struct ha_rec_sref names the stack */
#define HA_REC_F_PY        0x4u  /* Python frames at the record's end (ha_py.h) */

/* Stack references: the attacher's whole-stack cache entries
 * (src/unwind/unwind_int.h), published for the agent.  An entry says: a
 * stack copy of len bytes taken at rsp unwinds to the pcs the attacher
 * keeps for (slot, seq) if every check holds -- the word at rsp + off
 * (minus rsp if rel) is val; rbp - rsp is rbp_rel if uses_rbp; rsp & 7 is
 * rsp_low unless that is 0xff.  The agent checks its live stack against
 * the entry for its length and, when it holds, writes a sample with
 * HA_REC_F_SREF and struct ha_rec_sref instead of the copy: a few loads
 * instead of a kilobyte or more written to the ring (doc/design.md, "The
 * sampling path's cost").
 *
 * Written by the attacher only, as a seqlock: seq odd while it writes,
 * then a new even value (never 0: 0 is an empty slot); the agent reads
 * seq (acquire), the entry, a fence, seq again, and uses the entry only
 * if seq was even, non-zero and unchanged.  gen is the modules generation
 * the entry holds for: the agent bumps ha_ring_hdr.modules_gen when
 * modules come or go and ignores entries of another one until the
 * attacher, having read the modules record, publishes new ones.  Nothing
 * the agent reads here is trusted to stay in bounds: offsets beyond the
 * copy's length, or more than HA_SREF_CHECKS checks, mean no hit. */
#define HA_SREF_CHECKS 30u
struct ha_sref_chk {
	uint32_t off;            /* offset of the word from rsp */
	uint32_t rel;            /* 1: compare word - rsp, 0: the word */
	uint64_t val;
};
struct ha_sref {
	uint32_t seq;
	uint16_t gen;            /* ha_ring_hdr.modules_gen, low 16 bits */
	uint8_t  uses_rbp;
	uint8_t  rsp_low;        /* 0xff: any */
	uint32_t len;            /* the stack copy's length */
	uint32_t nchk;
	uint64_t rip;            /* the capture pc (checked by the attacher) */
	uint64_t rbp_rel;
	struct ha_sref_chk chk[HA_SREF_CHECKS];
};

/* The first of the HA_SREF_WAYS slots an entry for a stack length may
 * take (call paths of the same length share them). */
#define HA_SREF_WAYS 4u
static inline uint32_t ha_sref_group(uint64_t len)
{
	return (uint32_t)(((len >> 3) * 0x9E3779B97F4A7C15ull) >> 58) % HA_SREF_SLOTS &
	       ~(HA_SREF_WAYS - 1);
}

/* Follows a sample record with HA_REC_F_SREF (its stack_len is 0). */
struct ha_rec_sref {
	uint32_t slot;
	uint32_t seq;
};

/* Which call made the allocation (ha_rec_sample.func). */
enum ha_alloc_func {
	HA_FN_MALLOC = 1, HA_FN_CALLOC, HA_FN_REALLOC, HA_FN_OTHER,
	HA_FN_REALLOCARRAY, HA_FN_POSIX_MEMALIGN, HA_FN_ALIGNED_ALLOC, HA_FN_MEMALIGN,
	HA_FN_VALLOC, HA_FN_PVALLOC,
	HA_FN_NEW, HA_FN_NEW_ARRAY,         /* C++ operator new / new[], every variant */
	HA_FN_MALLOCX, HA_FN_RALLOCX, HA_FN_XALLOCX, /* jemalloc's *allocx */
	HA_FN_MMAP, HA_FN_MREMAP,           /* anonymous mappings (kind HA_REC_KIND_MMAP) */
	HA_FN_PYMALLOC,                     /* CPython's object and mem allocators (pymalloc) */
};

/* ha_ring_hdr.py_wrap: CPython's object and mem allocators, wrapped by the
 * agent (agent/pymem.h) so that objects served from pymalloc's arenas,
 * which malloc never sees, are sampled too.  The wrap is installed and
 * removed holding the GIL, by a pending call the main thread runs. */
enum ha_py_wrap {
	HA_PYW_NONE = 0,         /* no CPython, or not asked */
	HA_PYW_WAITING = 1,      /* asked: the main thread has not run Python since */
	HA_PYW_ON = 2,           /* installed: small objects are sampled */
	HA_PYW_NOT_PYMALLOC = 3, /* the allocators are malloc's (PYTHONMALLOC=malloc):
	                          * the malloc hooks see every object */
	HA_PYW_FAILED = 4,       /* the pending call could not be queued, or the
	                          * functions are not exported */
};

/* Which kind of memory a sample is (ha_rec_sample.kind); the same numbers
 * as the database's kinds table (src/db/db.h enum ha_mem_kind). */
#define HA_REC_KIND_HEAP 0u
#define HA_REC_KIND_MMAP 1u

/* Registers captured in the hook, enough for DWARF unwinding on x86_64:
 * the hook's own pc and sp and every callee-saved register. */
struct ha_regs {
	uint64_t rip, rsp, rbp, rbx, r12, r13, r14, r15;
};

/* A sampled allocation.  The raw stack copy (stack_len bytes, taken from
 * regs.rsp upward) follows the struct; h.len covers both, rounded up to
 * HA_RING_ALIGN. */
struct ha_rec_sample {
	struct ha_rec_hdr h;
	uint64_t seq;            /* the thread's records so far (tid, seq)   */
	uint64_t time_ns;        /* CLOCK_MONOTONIC                         */
	uint64_t addr;           /* the block returned to the program       */
	uint64_t size;           /* bytes requested                         */
	uint32_t tid;
	uint16_t func;           /* enum ha_alloc_func                      */
	uint16_t kind;           /* HA_REC_KIND_*                            */
	uint32_t stack_len;      /* bytes of stack copy that follow          */
	uint32_t pad2;
	uint64_t interval;       /* mean interval the sampling countdown that
	                          * took this sample was drawn with (<= 1: every
	                          * allocation): its weight is
	                          * 1 / (1 - exp(-size / interval)) */
	uint64_t caller;         /* the program's return address from the
	                          * allocation function (the first one up the
	                          * agent's own frame-pointer chain outside the
	                          * agent), 0 if not found: the leaf the attacher
	                          * keeps when the stack cannot be unwound */
	struct ha_regs regs;
};

/* A block that was sampled has been freed (or moved by realloc); for a
 * sampled mapping, munmap of its first page or mremap of it. */
struct ha_rec_free {
	struct ha_rec_hdr h;
	uint64_t seq;            /* as in ha_rec_sample                     */
	uint64_t time_ns;
	uint64_t addr;
	uint32_t tid;
	uint32_t pad;
};

_Static_assert(sizeof(struct ha_init_args) == 4 * 4 + HA_SOCK_PATH_MAX + 28, "init args layout");
_Static_assert(offsetof(struct ha_init_args, dlsym_addr) % 8 == 0, "init args: dlsym_addr aligned");
_Static_assert(sizeof(struct ha_agent_state) == 24, "agent state layout");
_Static_assert(sizeof(struct ha_msg) == 8 + 128, "message layout");
_Static_assert(sizeof(struct ha_ring_hdr) == 256, "ring header layout");
_Static_assert(offsetof(struct ha_ring_hdr, prod) == 64, "prod on its own line");
_Static_assert(offsetof(struct ha_ring_hdr, park_flag) == 48, "the park in the first line");
_Static_assert(offsetof(struct ha_ring_hdr, copy_stub) == 56, "the copy stub in the first line");
_Static_assert(offsetof(struct ha_ring_hdr, cons) == 128, "cons on its own line");
_Static_assert(sizeof(struct ha_rec_hdr) == 16, "record header layout");
_Static_assert(sizeof(struct ha_regs) == 64, "regs layout");
_Static_assert(sizeof(struct ha_rec_sample) == 16 + 64 + 64, "sample record layout");
_Static_assert(sizeof(struct ha_rec_free) == 16 + 32, "free record layout");
_Static_assert(sizeof(struct ha_sref) == 512, "stack reference layout");
_Static_assert(HA_RING_HDR_SIZE % 4096 == 0, "the data area starts on a page");

/* Fill the fixed part of a message. */
static inline void ha_msg_init(struct ha_msg *m, uint16_t type)
{
	__builtin_memset(m, 0, sizeof *m);
	m->magic = HA_PROTO_MAGIC;
	m->version = HA_PROTO_VERSION;
	m->type = type;
}

/* Check the fixed part of a received message of n bytes. */
static inline int ha_msg_valid(const struct ha_msg *m, long n)
{
	return n == (long)sizeof *m && m->magic == HA_PROTO_MAGIC &&
	       m->version == HA_PROTO_VERSION;
}

#endif /* HA_PROTO_H */
