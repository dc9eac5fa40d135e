/* unwind_int.h -- what the files of the unwinder share; the rest of the
 * attacher sees unwind.h only.
 *
 *   unwind.c         the public entry: an unwinder per target; ha_unwind
 *                    asks the whole-stack cache, else walks and stores
 *   unwind_scache.c  the whole-stack cache (its layout and its hit path,
 *                    sc_lookup, are at the end of this header: ha_unwind
 *                    inlines them)
 *   unwind_walk.c    the walk: the fast walk over per-pc CFI rules, else
 *                    libunwind; HA_UNWIND_VERIFY's comparison of the two
 *   unwind_cfi.c     the simple CFI rule of one pc, through libdw
 *   unwind_fp.c      the frame-pointer rule for pcs without CFI, its checks
 *   unwind_access.c  libunwind's remote API over a copied stack: the
 *                    accessors, the reads they serve, the libunwind walk
 *   unwind_maps.c    the target as the unwinder sees it: its maps, and the
 *                    ELF files (and the vdso) they map, as images in our
 *                    memory
 *
 * All input (registers, stack bytes, the files, maps) is untrusted: every
 * read is bounds-checked, the number of frames is capped, and a frame whose
 * (pc, sp) repeats ends the walk. */
#ifndef HA_UNWIND_INT_H
#define HA_UNWIND_INT_H

#include "unwind.h"

#include "procmaps.h"
#include "unwind_cfi.h"
#include "util.h"

#include <elfutils/libdw.h>
#include <libelf.h>
#include <libunwind.h>
#include <stdint.h>
#include <string.h>

#define PAGE_SZ 4096u
#define PCACHE_N 64              /* live pages cached (direct-mapped) */
#define UW_REFRESH_MIN_MS 100.0  /* re-read maps at most this often on our own */
#define CEND_N 64                /* copy ends cached (direct-mapped by rsp's page) */

/* An ELF file (or the vdso) as bytes in our memory. */
struct image {
	struct image *next;
	uint64_t dev, ino;       /* 0,0 for the vdso */
	int is_vdso;
	const uint8_t *data;
	size_t size;
	int mmapped;             /* else malloc'ed */
	unsigned used_gen;       /* maps generation that last referenced it */
	/* parsed on first use for unwinding */
	int hdr_state;           /* ELF header: 0 not checked, 1 ok, -1 not usable */
	int elf_state;           /* .eh_frame_hdr: 0 not parsed, 1 ok, -1 none */
	uint64_t hdr_vaddr;      /* PT_GNU_EH_FRAME p_vaddr */
	uint64_t table_rel;      /* table start - hdr start */
	uint64_t fde_count;
	/* libdw's view of .eh_frame, for the fast walk's rules */
	int cfi_state;           /* 0 not opened, 1 ok, -1 none */
	Elf *elf;
	Dwarf_CFI *cfi;
	/* its symbols, for the call-site scan (unwind_elfsym.h) */
	int syms_state;          /* 0 not parsed, 1 ok, -1 out of memory */
	struct uw_syms *syms;
};

enum { MI_UNKNOWN = 0, MI_IMAGE, MI_LIVE, MI_NONE };

/* What we know about one element of u->maps.v (same index). */
struct mapinfo {
	int kind;                /* MI_* */
	struct image *img;
	int table_state;         /* 0 unknown, 1 ok, -1 none */
	uint64_t segbase, table_addr, fde_count;
	int bias_state;          /* 0 unknown, 1 ok, -1 none */
	uint64_t bias;           /* runtime address - ELF vaddr */
	size_t next_file;        /* the first mapping from this one on that may be
	                          * served from an image (file, vdso); maps.n if none */
};

struct page {
	uint64_t addr;           /* page address */
	unsigned gen;            /* valid iff == u->pc_gen */
	int ok;                  /* 1 data valid, 0 read failed */
	uint8_t data[PAGE_SZ];
};

/* Where the stack copy of an rsp in page `page` must end, see uw_copy_len. */
struct copy_end {
	uint64_t page;           /* rsp / PAGE_SZ */
	uint64_t end;
	unsigned gen;            /* valid iff == u->maps_gen */
};

struct ha_unwinder {
	pid_t pid;
	unw_addr_space_t as;
	struct ha_maps maps;
	struct mapinfo *mi;
	unsigned maps_gen;
	double maps_ms;          /* when maps were read */
	struct image *images;
	struct page *pages;
	unsigned pc_gen;
	double pc_epoch_ms;
	struct scache *sc;       /* whole-stack results, see sc_lookup */  
	uint64_t sc_hits, sc_misses;
	int sc_off;              /* stack cache disabled (tests) */
	struct rc_ent *rc;       /* per-pc rules of the fast walk */
	int fast_off;            /* fast walk disabled (tests) */
	uint64_t fast_n, slow_n; /* walks done by the fast walk, by libunwind */
	int verify;              /* HA_UNWIND_VERIFY: check every fast walk */
	uint64_t verified, verify_bad;
	uint64_t frames, fp_frames; /* pcs returned, of which found by frame pointer */
	uint64_t scan_frames;    /* ...and by a call-site scan */
	struct copy_end cend[CEND_N]; /* see uw_copy_len */
};

/* Per-call context, the `arg` of every accessor. */
struct uctx {
	struct ha_unwinder *u;
	const struct ha_regs *regs;
	const uint8_t *stack;
	uint64_t lo, hi;         /* the stack copy covers [lo, hi) */
	uint64_t smap_lo, smap_hi; /* the mapping holding regs->rsp: no live reads */
	int smap_known;          /* smap_lo/hi looked up */
	const struct ha_map *last; /* last mapping hit */
	int unknown_ip;          /* find_proc_info met a pc outside every mapping */
	int scan_at;             /* the fast walk's first pc found by a call-site
	                          * scan (unwind_scan.c), -1: none */
	uint64_t *sps;           /* NULL, or each frame's stack pointer beside its
	                          * pc (ha_unwind_frames) */
};

/* Frame i of the walk has stack pointer sp (kept if the caller asked). */
static inline void uctx_sp(struct uctx *c, int i, uint64_t sp)
{
	if (c->sps)
		c->sps[i] = sp;
}

/* A context for unwinding the stack copy of one sample. */
static inline void uctx_init(struct uctx *c, struct ha_unwinder *u, const struct ha_regs *regs,
                             const uint8_t *stack, size_t stack_len)
{
	memset(c, 0, sizeof *c);
	c->u = u;
	c->regs = regs;
	c->stack = stack;
	c->lo = regs->rsp;
	c->hi = regs->rsp + stack_len;
	c->scan_at = -1;
}

/* The mapping holding addr (the last one hit first). */
static inline const struct ha_map *find_map(struct uctx *c, uint64_t addr)
{
	const struct ha_map *m = c->last;
	if (m && addr >= m->start && addr < m->end)
		return m;
	m = ha_maps_find_addr(&c->u->maps, addr);
	if (m)
		c->last = m;
	return m;
}

/* The thread's stack mapping (reads there outside the copy fail, as
 * libunwind's would); looked up on first need only. */
static inline void find_stack_map(struct uctx *c)
{
	const struct ha_map *sm = ha_maps_find_addr(&c->u->maps, c->regs->rsp);
	c->smap_lo = sm ? sm->start : c->lo;
	c->smap_hi = sm ? sm->end : c->hi;
	c->smap_known = 1;
}

/* ------------------------------------------------------------------ unwind_maps.c */

/* Read the maps again.  1 if they changed (caches must go), 0 if not,
 * -errno if they cannot be read (the old ones are kept). */
int uw_load_maps(struct ha_unwinder *u);
/* 1 if the maps changed and every cache was flushed. */
int uw_refresh(struct ha_unwinder *u);
/* What backs mapping m, decided once per maps generation. */
struct mapinfo *uw_mapinfo_of(struct ha_unwinder *u, const struct ha_map *m);
/* runtime = vaddr + *bias for the module im mapped by the executable
 * mapping m, from the executable PT_LOAD holding ip's file offset.  1; 0
 * if ip is in none (a pc past the segment's bytes, in the mapping's last
 * page: it says nothing about the rest of the mapping, so nothing may be
 * concluded for the mapping from it); -1 if im is not usable at all. */
int uw_image_bias(struct image *im, const struct ha_map *m, uint64_t ip, uint64_t *bias);
/* Has the image an .eh_frame_hdr (libunwind's table)? */
int uw_image_table(struct image *im);
/* libdw's CFI of an image (.eh_frame), opened once; NULL if none. */
Dwarf_CFI *uw_image_cfi(struct image *im);
void uw_images_free(struct ha_unwinder *u);

/* The start of the first mapping at or above rsp's page that may be
 * served from an image (rsp's page if it lies in one), UINT64_MAX if none;
 * remembered in u->cend, for uw_copy_len. */
uint64_t uw_copy_end(struct ha_unwinder *u, uint64_t rsp);

/* How many bytes of a stack copy of len bytes at rsp the walks may use: up
 * to the first mapping whose bytes may be served from an image (a module's
 * file or the vdso: code, .eh_frame_hdr, .eh_frame), none if rsp lies in
 * one.  A thread's stack is never such a mapping, so a real copy loses
 * nothing but bytes past its stack; and no address is then both in the copy
 * and in an image, which libunwind's accessors (copy first) would otherwise
 * serve from the copy: its unwind tables too, where the fast walk reads the
 * file (libdw).  tests/fuzz/fuzz_unwind found it: a copy said to start in a
 * module's text ran over its .eh_frame_hdr.  Cached by rsp's page
 * (mappings are page-aligned). */
static inline size_t uw_copy_len(struct ha_unwinder *u, uint64_t rsp, size_t len)
{
	const struct copy_end *ce = &u->cend[(rsp / PAGE_SZ) % CEND_N];
	uint64_t end = ce->gen == u->maps_gen && ce->page == rsp / PAGE_SZ ? ce->end
	                                                                     : uw_copy_end(u, rsp);
	/* a branch, not a select: the cache's hash need not wait for it */
	if (__builtin_expect(end > rsp && end - rsp >= len, 1))
		return len;
	return end > rsp ? (size_t)(end - rsp) : 0;
}

/* ------------------------------------------------------------------ unwind_access.c */

/* The accessors of u->as: memory from the copy, the images, live pages. */
extern unw_accessors_t uw_accessors;
/* The walk with libunwind: pcs innermost first, their number (or -1). */
int uw_unwind_once(struct ha_unwinder *u, struct uctx *c, uint64_t *pcs, int max);

/* ------------------------------------------------------------------ unwind_walk.c */

struct sc_rec;
/* The fast walk if it can, else libunwind (and the maps refresh of an
 * unknown pc).  With rec, notes what a stack cache hit must check;
 * rec->bad unless the fast walk answered. */
int uw_walk(struct ha_unwinder *u, struct uctx *c, uint64_t *pcs, int max, struct sc_rec *rec);
/* HA_UNWIND_VERIFY: unwind again with libunwind, report any difference. */
void uw_verify_walk(struct ha_unwinder *u, struct uctx *c, const uint64_t *pcs, int n, int max);

/* ------------------------------------------------------------------ unwind_fp.c */

/* The frame-pointer rule (CFA = rbp + 16), for a return address without CFI. */
/* unwind_scan.c: the step over a frame without CFI or frame pointer by the
 * return address of a call proven to reach its function. */
struct uw_saved {
	int reg;                 /* CFI_* */
	uint64_t at;             /* where its caller's value was pushed */
};
struct uw_scan {
	uint64_t slot, ra;       /* the return address's slot, and it */
	int npush;
	struct uw_saved saved[16];
};
int uw_scan_frame(struct uctx *c, uint64_t pc, uint64_t sp, struct uw_scan *out);
/* Is the instruction before ra a call (1 too where its bytes are not at
 * hand: JIT code)? */
int uw_call_before(struct uctx *c, uint64_t ra);

extern const struct ha_cfi_rule uw_fp_rule;
/* May the walk follow rbp from a frame whose sp is sp: aligned, moving up,
 * both words inside the copy. */
int uw_fp_chain_ok(const struct uctx *c, uint64_t rbp, uint64_t sp);
/* Is a return address found through rbp in an executable mapping. */
int uw_fp_ra_ok(struct uctx *c, uint64_t ra);

/* ------------------------------------------------------------------ unwind_scache.c */

/* Allocate u->sc (left NULL if out of memory: no cache). */
void uw_sc_new(struct ha_unwinder *u);
/* Store the walk recorded in u->sc->scratch (its pcs: pcs[0..n)). */
void uw_sc_store(struct ha_unwinder *u, const struct ha_regs *regs, uint64_t len,
                 const uint8_t *stack, const uint64_t *pcs, int n, int max);
void uw_sc_free(struct ha_unwinder *u);

/* ------------------------------------------------------------------ stack cache
 *
 * Its layout and its hit path, inlined into ha_unwind; the rest of it is
 * unwind_scache.c.
 *
 * In front of the fast walk, a cache of whole results.  The fast walk is a
 * function of the code (fixed while the maps do not change), the captured
 * rip, the copy's length and the few words its CFA rules make it use: each
 * return address, and each word (or captured register) that served as the
 * base of a CFA.  Everything else it reads (a saved rbx, an rbp holding
 * data) can hold anything without changing the pcs.  And the walk only
 * ever compares and offsets addresses: with every CFA base taken relative
 * to rsp, the same stack in another thread unwinds alike.
 * So an entry holds the checks (offset, expected value; a base relative to
 * rsp) and the pcs; a hit is the checks holding, word by word (untrusted
 * input costs a miss, never a wrong answer).  Only fast walks that read
 * their checks from the copy and ended cleanly are stored.  The one
 * absolute property a walk tests is the frame-pointer rule's rbp 8-aligned
 * (unwind_fp.c): a walk through it also holds only for an rsp of the same
 * alignment.  (Where rsp is decides how much of the copy may be used,
 * uw_copy_len; the length in the key is that one.)
 *
 * The set is picked by rip, length and the words at the return-address
 * offsets of a recent walk with the same rip and length (its template):
 * call paths that differ only further out still land in different sets. */
#define SC_SETS 4096
#define SC_WAYS 4
#define SC_WAY_BITS 14           /* log2(SC_SETS * SC_WAYS): entry index in a ref */
#define SC_FRAMES 64             /* deeper walks are not stored */
#define SC_CHECKS 128
#define SC_TMPLS 256             /* templates (direct-mapped by rip, length) */
#define SC_TMPL_WORDS 12
#define SC_TMPL_PATIENCE 8       /* misses of another shape before a template moves */
#define SC_HINTS 128
struct sc_chk {
	uint32_t off;            /* offset from rsp of the word */
	uint32_t rel;            /* 1: compare word - rsp (a CFA base), 0: the word */
	uint64_t val;
};
/* An entry, allocated to its size (most stacks are short, a few very
 * deep): the key, then its checks, then its pcs. */
struct sc_ent {
	uint64_t rip, len;
	uint64_t rbp_rel;        /* rbp - rsp, if the captured rbp was a CFA base */
	uint64_t stamp;          /* which store this is (refs to older ones are stale) */
	unsigned gen;            /* maps_gen when stored; 0 = empty */
	int max, n, nchk, uses_rbp;
	int nfp;                 /* frames of it found by frame pointer */
	int rsp_low;             /* rsp & 7 when stored (checked if nfp) */
	uint32_t user[2];        /* the caller's, see ha_unwind_user */
	size_t cap;              /* bytes allocated */
	struct sc_chk chk[];     /* chk[nchk], then pcs[n] */
};
#define SC_PCS(e) ((uint64_t *)((e)->chk + (e)->nchk))
/* A set: one cache line, so that a lookup reads it and one entry. */
struct sc_set {
	uint32_t fp[SC_WAYS];    /* fingerprints (sc_hash) of the entries */
	struct sc_ent *e[SC_WAYS];
	unsigned rr;
} __attribute__((aligned(64)));
/* The walk being recorded. */
struct sc_rec {
	int nchk, uses_rbp, bad, nfp;
	struct sc_chk chk[SC_CHECKS];
};
struct sc_tmpl {
	uint64_t rip, len;
	unsigned gen;            /* 0 = empty */
	int n, misses;
	uint32_t off[SC_TMPL_WORDS];
};
struct scache {
	struct sc_set s[SC_SETS];
	struct sc_tmpl t[SC_TMPLS];
	struct sc_rec scratch;
	/* sc_hash of the stacks of a batch, from ha_unwind_prefetch to ha_unwind */
	struct sc_hint {
		const uint8_t *stack;
		uint64_t rip, len, h, tver;
		unsigned gen;
	} hint[SC_HINTS];
	uint64_t tver;           /* templates rewritten so far */
	uint64_t stamps;
	uint64_t last_ref;       /* of the last ha_unwind, 0: none */
};
_Static_assert(SC_SETS * SC_WAYS == 1 << SC_WAY_BITS, "entry index bits");

static inline struct sc_tmpl *sc_tmpl_of(struct scache *sc, uint64_t rip, uint64_t len)
{
	uint64_t h = (rip ^ (len << 17)) * 0x9E3779B97F4A7C15ULL;
	return &sc->t[(h >> 40) % SC_TMPLS];
}

static inline int sc_tmpl_valid(const struct ha_unwinder *u, const struct sc_tmpl *t, uint64_t rip,
                                uint64_t len)
{
	return t->gen == u->maps_gen && t->rip == rip && t->len == len;
}

/* The hash of a stack: rip, length and the words at the template's
 * offsets; its low bits pick the set, its high bits are the entry's
 * fingerprint. */
static inline uint64_t sc_hash(const struct sc_tmpl *t, uint64_t rip, uint64_t len,
                               const uint8_t *stack)
{
	uint64_t h = (rip * 0x9E3779B97F4A7C15ULL) ^ (len * 0xC2B2AE3D27D4EB4FULL);
	if (t)
		for (int k = 0; k < t->n; k++) {
			uint64_t w = 0;
			if (t->off[k] < len && len - t->off[k] >= 8)
				memcpy(&w, stack + t->off[k], 8);
			h = (h ^ w) * 0x9fb21c651e98df25ULL;
		}
	return ha_mix64(h);
}

/* sc_hash of a stack with the template in effect, remembered from the
 * prefetch stages to the lookup; the lookup (take) forgets it, as the
 * ring's bytes will hold other stacks. */
static inline uint64_t sc_hash_of(const struct ha_unwinder *u, const struct ha_regs *regs,
                                  uint64_t len, const uint8_t *stack, int take)
{
	struct scache *sc = u->sc;
	struct sc_hint *hi = &sc->hint[((uintptr_t)stack >> 3) % SC_HINTS];
	uint64_t h;
	if (hi->stack == stack && hi->rip == regs->rip && hi->len == len && hi->tver == sc->tver &&
	    hi->gen == u->maps_gen) {
		h = hi->h;
	} else {
		const struct sc_tmpl *t = sc_tmpl_of(sc, regs->rip, len);
		h = sc_hash(sc_tmpl_valid(u, t, regs->rip, len) ? t : NULL, regs->rip, len, stack);
		*hi = (struct sc_hint){ stack, regs->rip, len, h, sc->tver, u->maps_gen };
	}
	if (take)
		hi->stack = NULL;
	return h;
}

#define SC_SET(h) ((unsigned)((h) % SC_SETS))
#define SC_FP(h) ((uint32_t)((h) >> 32))

/* Does the stored walk hold for this stack? */
static inline int sc_holds(const struct ha_unwinder *u, const struct sc_ent *e,
                           const struct ha_regs *regs, uint64_t len, const uint8_t *stack, int max)
{
	if (e->gen != u->maps_gen || e->rip != regs->rip || e->len != len || e->max != max)
		return 0;
	if (e->uses_rbp && regs->rbp - regs->rsp != e->rbp_rel)
		return 0;
	if (e->nfp && (int)(regs->rsp & 7) != e->rsp_low)
		return 0;
	const struct sc_chk *chk = e->chk;
	for (int k = 0; k < e->nchk; k++) {
		uint64_t v;
		memcpy(&v, stack + chk[k].off, 8);
		if (chk[k].rel)
			v -= regs->rsp;
		if (v != chk[k].val)
			return 0;
	}
	return 1;
}

/* Note a check of the walk being recorded. */
static inline void sc_add(struct sc_rec *rec, uint64_t off, int rel, uint64_t val)
{
	if (rec->nchk >= SC_CHECKS || off > UINT32_MAX) {
		rec->bad = 1;
		return;
	}
	rec->chk[rec->nchk++] = (struct sc_chk){ (uint32_t)off, (uint32_t)rel, val };
}

/* The hit path of ha_unwind, for every sample: the pcs of a stored walk
 * that holds for this stack (returns their number, > 0), or 0 and *recp is
 * the record for the walk to make (uw_walk), then to store (uw_sc_store). */
static inline int sc_lookup(struct ha_unwinder *u, const struct ha_regs *regs,
                            const uint8_t *stack, size_t stack_len, uint64_t *pcs, int max,
                            struct sc_rec **recp)
{
	struct sc_tmpl *t = sc_tmpl_of(u->sc, regs->rip, stack_len);
	int tv = sc_tmpl_valid(u, t, regs->rip, stack_len);
	uint64_t h = sc_hash_of(u, regs, stack_len, stack, 1);
	unsigned set = SC_SET(h);
	const struct sc_set *st = &u->sc->s[set];
	for (int i = 0; i < SC_WAYS; i++) {
		const struct sc_ent *e = st->e[i];
		if (st->fp[i] == SC_FP(h) && e && sc_holds(u, e, regs, stack_len, stack, max)) {
			memcpy(pcs, SC_PCS(e), (size_t)e->n * sizeof *pcs);
			u->sc_hits++;
			u->frames += (uint64_t)e->n;
			u->fp_frames += (uint64_t)e->nfp;
			u->sc->last_ref = e->stamp << SC_WAY_BITS | (set * SC_WAYS + (unsigned)i);
			if (tv)
				t->misses = 0;
			if (u->verify) {
				struct uctx c;
				uctx_init(&c, u, regs, stack, stack_len);
				uw_verify_walk(u, &c, pcs, e->n, max);
			}
			return e->n;
		}
	}
	struct sc_rec *rec = &u->sc->scratch;
	rec->nchk = 0;
	rec->uses_rbp = 0;
	rec->bad = 0;
	rec->nfp = 0;
	*recp = rec;
	return 0;
}

#endif
