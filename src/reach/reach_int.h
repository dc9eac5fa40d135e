/* reach_int.h -- what the scan's files share: the frozen target and its
 * copy (reach_freeze.c), the copy's memory read through a window cache
 * (reach_mem.c), glibc's chunks (reach_heap.c), the roots and the mark
 * (reach_roots.c, reach_mark.c), the names of globals (reach_sym.c).
 * reach_scan.c drives them in that order; none calls back into it. */
#ifndef HA_REACH_INT_H
#define HA_REACH_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>
#include "procmaps.h"
#include "reach.h"

/* ---- the frozen target and its copy (reach_freeze.c) ---- */
struct reach_thread {
	pid_t tid;
	struct user_regs_struct regs; /* as it was stopped */
	int sig;                      /* a signal it stopped with, given back at detach */
};

struct reach_frozen {
	pid_t pid;        /* the target */
	pid_t copy;       /* the frozen copy (0: none) */
	pid_t reaper;     /* the target's thread that ran the clone */
	uint64_t stub;    /* the agent's copy stub in the target (reach_syscall.c) */
	struct reach_thread *th;
	size_t nth;
	double pause_ms;
	int parked;       /* threads found stopped in the agent's park */
};

/* Stop every thread of pid at a safe point, read their registers, make
 * one of them clone the process in the agent's copy stub (the copy born
 * stopped under us, then EXITKILL), restore it and resume them all.  0, or
 * -1 with err (nothing left stopped, no copy). */
int reach_freeze(pid_t pid, const struct ha_maps *maps, int safe_tries, int verbose,
                 struct ha_ring_hdr *park, struct reach_frozen *f, char *err, size_t errlen);
/* Kill the copy, reap it as its tracer, and have one of the target's
 * threads reap its zombie (a raw wait4 on it, the thread restored). */
void reach_copy_end(struct reach_frozen *f);
void reach_frozen_free(struct reach_frozen *f);

/* ---- a system call made by a stopped thread (reach_syscall.c) ---- */
struct ha_ring_hdr;
/* The agent's copy stub (ha_copy_stub.h) that h publishes, if its bytes are
 * there in an executable mapping of pid; 0 if not. */
uint64_t reach_stub_find(pid_t pid, const struct ha_maps *maps, const struct ha_ring_hdr *h);
/* Make the stopped thread t of pid run system call nr (SYS_clone: the
 * stub's clone entry, the copy traced from birth) with args a, under a
 * signal frame of its own context, syscall stop to syscall stop, and put
 * its registers back as they were.  0 with *ret (and *child for a clone),
 * -1 if it could not (the thread gone, no room for the frame). */
int reach_syscall(pid_t pid, struct reach_thread *t, uint64_t stub, long nr, const uint64_t a[5],
                  long *ret, pid_t *child);
/* Wait for the next stop of tid, a tracee of ours: 0 with *st, -1 if it
 * is gone. */
int reach_wait_stop(pid_t tid, int *st);
/* The signal a stop status stands for (0: an interrupt, group, event or
 * syscall stop). */
int reach_stop_signal(int st);
/* Tests only: HEAPATTACH_TEST_REACH_DIE_AT=STEP makes the attacher SIGKILL
 * itself at that step of a scan (tests/t_reach_safety.sh). */
void reach_test_die_at(const char *step);

/* ---- the park: threads asked to wait at a hook's entry (reach_park.c) ---- */
struct reach_park {
	struct ha_ring_hdr *h;  /* the ring header we map (NULL: no park) */
	pid_t pid;
	uint64_t flag;          /* the agent's word, in the target */
	uint64_t deadline;      /* CLOCK_MONOTONIC ns */
	uint32_t gen;           /* the generation asked (odd) */
	int on;
};
/* Ask the agent's threads to park for ms (at most HA_PARK_MAX_MS): 1 asked,
 * 0 not (h NULL, an agent without the park, the word not writable). */
int reach_park_ask(struct reach_park *p, struct ha_ring_hdr *h, pid_t pid,
                   const struct ha_maps *maps, int ms);
/* Set the agent's word again (it clears one it sees with no request). */
void reach_park_poke(const struct reach_park *p);
/* Threads waiting in the park now. */
uint32_t reach_park_parked(const struct reach_park *p);
/* Wait until want threads are parked (1), or until_ms (ha_now_ms) or the
 * deadline passes (0). */
int reach_park_wait(const struct reach_park *p, uint32_t want, double until_ms);
/* End the park: the word cleared, the generation moved on, all woken. */
void reach_park_end(struct reach_park *p);

/* ---- memory read through windows (reach_mem.c) ---- */
struct reach_range {
	uint64_t lo, hi;
	int file;          /* a file's mapping: its pages read whether present or not */
};

#define REACH_WIN_BITS 18
#define REACH_NWIN     64

struct reach_win {
	uint64_t lo, hi;   /* bytes [lo, hi) are in buf (hi == lo: empty) */
	int bad;           /* [lo, hi) could not be read */
	uint8_t *buf;
};

struct reach_mem {
	/* Read len bytes at addr into buf: bytes read, -1 on error; whole:
	 * every page (a file's), else those present (see reach_mem_read_fd). */
	long (*read)(void *ctx, uint64_t addr, void *buf, size_t len, int whole);
	void *ctx;
	const struct reach_range *ranges; /* readable ranges, sorted, disjoint */
	size_t nranges;
	struct reach_win win[REACH_NWIN];
	uint64_t bytes_read;
};

/* The bytes from addr on, as many as one window holds (*len, at most
 * want); NULL if addr is in no range or cannot be read (then *len is how
 * far to skip, at least 1). */
const uint8_t *reach_mem_get(struct reach_mem *m, uint64_t addr, size_t want, size_t *len);
/* One aligned word at addr; 0 if unreadable. */
int reach_mem_word(struct reach_mem *m, uint64_t addr, uint64_t *v);
void reach_mem_free(struct reach_mem *m);
/* A reader of another process's memory (process_vm_readv); ctx is a pid_t *. */
long reach_mem_read_pid(void *ctx, uint64_t addr, void *buf, size_t len, int whole);
/* A reader of /proc/PID/mem, the pages its pagemap says are there. */
struct reach_fds {
	int mem, pagemap;
};
long reach_mem_read_fd(void *ctx, uint64_t addr, void *buf, size_t len, int whole);

/* ---- glibc's chunks (reach_heap.c) ---- */
struct reach_chunk {
	uint64_t lo, hi;   /* the user bytes [lo, hi) */
	uint32_t origin;   /* index + 1 into the marker's origins (0: not reached) */
	uint16_t hops;
	uint8_t noscan;    /* the allocator's own (a tcache): never scanned */
	uint8_t pad;
};

struct reach_heap {
	struct reach_chunk *v;
	size_t n, cap;
	struct reach_range *areas; /* the heaps' mappings: never roots */
	size_t nareas, capareas;
};

/* Walk the main heap ([heap]), the thread arenas (64 MiB-aligned
 * mappings with a heap_info) and the mmapped chunks of the anonymous
 * mappings in maps; the chunks in use go into h, sorted. 0, -1 on no
 * memory. */
int reach_heap_walk(struct reach_mem *m, const struct ha_maps *maps, struct reach_heap *h);
/* Walk one contiguous heap's chunks from its first chunk at first up to
 * end (exported for the unit test). */
void reach_heap_walk_one(struct reach_mem *m, uint64_t first, uint64_t end, struct reach_heap *h);
int reach_heap_add(struct reach_heap *h, uint64_t lo, uint64_t hi, int noscan);
void reach_heap_sort(struct reach_heap *h);
/* The chunk whose user bytes hold addr, or NULL. */
struct reach_chunk *reach_heap_find(const struct reach_heap *h, uint64_t addr);
void reach_heap_free(struct reach_heap *h);

/* ---- the mark (reach_mark.c) ---- */
struct reach_origin {
	uint8_t kind;      /* enum reach_root_kind */
	uint8_t reg;       /* REGISTER: the register's index in user_regs_struct */
	pid_t tid;         /* STACK, TLS, REGISTER */
	uint64_t at;       /* the root word's address (GLOBAL, ANON, STACK, TLS) */
};

struct reach_marker {
	struct reach_heap *h;
	struct reach_mem *m;
	struct reach_origin *orig;
	size_t norig, caporig;
	uint32_t *queue;
	size_t qhead, qtail, qcap;
	uint64_t bytes_scanned;
	int oom;
};

/* Each word of [lo, hi) (aligned) that points into a chunk not reached
 * yet reaches it from a root of that kind. */
void reach_mark_range(struct reach_marker *k, uint64_t lo, uint64_t hi, int kind, pid_t tid);
void reach_mark_value(struct reach_marker *k, uint64_t v, int kind, pid_t tid, int reg);
/* Follow the chunks reached so far to everything they reach (breadth
 * first: a chunk's hops are the fewest from its root). */
void reach_mark_drain(struct reach_marker *k);
void reach_marker_free(struct reach_marker *k);

/* ---- the roots (reach_roots.c) ---- */
/* Mark from every root of the copy: globals, TLS, stacks, registers,
 * other anonymous writable mappings; never the heaps, the shared
 * mappings, or skip's ranges. */
void reach_roots_mark(struct reach_marker *k, const struct ha_maps *maps,
                      const struct reach_frozen *f, const uint64_t *skip, size_t nskip);

/* ---- the frames of a thread's stack (reach_frames.c) ---- */
#define REACH_RED_ZONE 128            /* below a thread's SP, still its leaf frame's */
#define REACH_FRAMES_MAX 256
#define REACH_STACK_READ (1u << 20)  /* bytes of a stack handed to the walk, at most */

/* Frame i's words are [sp[i], sp[i + 1]) (frame 0's from sp[0] less the
 * red zone); the last frame's end is not known. */
struct reach_frames {
	int walked;          /* tried (once per thread and scan) */
	int n;               /* frames kept (0: none told) */
	uint64_t pc[REACH_FRAMES_MAX], sp[REACH_FRAMES_MAX];
};

/* Walk thread th's stack in the copy with o->walk: the bytes from its SP
 * to its mapping's end (REACH_STACK_READ at most, up to the first that
 * cannot be read).  Nothing told without a walker or a mapping. */
void reach_frames_walk(struct reach_mem *m, const struct ha_maps *maps,
                       const struct reach_thread *th, const struct reach_opts *o,
                       struct reach_frames *fr);
/* Keep n frames of a walk, up to the first whose SP does not rise (a walk
 * gone wrong says nothing past it). */
void reach_frames_set(struct reach_frames *fr, const uint64_t *pcs, const uint64_t *sps, int n);
/* The frame holding the word at, or -1 (none told, below the red zone, or
 * at or past the last frame's SP: its end is not known). */
int reach_frame_of(const struct reach_frames *fr, uint64_t at);

/* ---- the modules' static TLS blocks (reach_tls.c) ---- */
struct reach_tls_mod {
	uint64_t module;   /* the start of the module's first mapping */
	uint64_t offset;   /* its block is at tp - offset in every thread */
	uint64_t size;     /* PT_TLS's memsz */
	uint64_t modid;    /* its dtv index */
};
struct reach_tls {
	int done;          /* reach_tls_find ran */
	struct reach_tls_mod *v;
	size_t n, cap;
};
/* The static TLS blocks of the copy's modules, from glibc's link_maps
 * (none found: t->n == 0). */
void reach_tls_find(struct reach_tls *t, struct reach_mem *m, const struct ha_maps *maps);
/* The module (*module: its first mapping's start) and the offset in its
 * TLS block (*off) of the word at, below the thread pointer tp of a
 * thread, the thread's dtv agreeing: 0, or -1 (not a static TLS block's). */
int reach_tls_locate(const struct reach_tls *t, struct reach_mem *m, uint64_t tp, uint64_t at,
                     uint64_t *module, uint64_t *off);
void reach_tls_free(struct reach_tls *t);
/* Where the .bss maps->v[i] (an anonymous mapping right after a module's
 * file mapping) ends: at its module's end (the last PT_LOAD's vaddr +
 * memsz, relocated, page-rounded, read through m) when that lies inside
 * it -- the kernel may have merged the .bss with the anonymous mapping
 * after it (a thread's TLS, ld.so's memory) -- else at the mapping's end. */
uint64_t reach_bss_end(struct reach_mem *m, const struct ha_maps *maps, size_t i);

/* ---- names of globals (reach_sym.c) ---- */
/* "SYMBOL [module]" or "module+0xOFF" for a global's address, read from
 * the module's ELF symbols as pid's root sees them; *module: the start of
 * the module's first mapping (0: none), *at: where a detail goes in out
 * (after the symbol, before " [module]"; 0 when no symbol names it). */
void reach_sym_name(pid_t pid, const struct ha_maps *maps, uint64_t addr, char *out, size_t outlen,
                    uint64_t *module, size_t *at);
/* A TLS word's name: "SYMBOL [module] tid N" (an STT_TLS symbol of the
 * module whose first mapping starts at module holds offset off of its
 * block), "tls+0xOFF [module] tid N" when none does (*at 0: DWARF's name
 * may take the first word's place), "tid N" when no module is there;
 * *at: where a detail goes (after the symbol). */
void reach_sym_tls_name(pid_t pid, const struct ha_maps *maps, uint64_t module, uint64_t off,
                        pid_t tid, char *out, size_t outlen, size_t *at);
/* Close the files reach_sym_name kept open during a scan. */
void reach_sym_reset(void);

#endif
