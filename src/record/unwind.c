/* unwind.c -- unwind stacks copied out of the target with libunwind's remote
 * API and our own accessors (modelled on perf's unwind-libunwind-local.c).
 *
 * Where memory reads are served from, in this order:
 *   1. the copied stack window [regs.rsp, regs.rsp + stack_len);
 *   2. file-backed mappings: the mapped file itself (mmap'ed read-only,
 *      opened through /proc/PID/map_files or /proc/PID/root), at the
 *      mapping's file offset -- code, .eh_frame_hdr, .eh_frame;
 *      [vdso]: a copy of it read once from the process;
 *   3. anonymous memory only (heap, JIT, "[anon:...]"): the live process via
 *      process_vm_readv through a small cache of 4 KiB pages.
 * Never anything else: not the rest of the thread's own stack (stale by the
 * time we look), not [vvar]/[vsyscall], not unmapped or unreadable memory.
 *
 * find_proc_info locates the mapping of ip, the module's PT_GNU_EH_FRAME and
 * lets dwarf_search_unwind_table binary-search .eh_frame_hdr through
 * access_mem (UNW_INFO_FORMAT_REMOTE_TABLE).  With UNW_CACHE_GLOBAL libunwind
 * keeps the register-state of every pc it has seen, so a repeated call path
 * costs only the reads of the saved registers from the stack copy.
 *
 * In front of libunwind, a fast walk (fast_walk) with per-pc rules taken
 * from .eh_frame through libdw (unwind_cfi.c) and cached by pc: CFA =
 * register + offset, return address and callee-saved registers in
 * CFA-relative slots.  It follows libunwind's semantics step by step; where
 * a rule is not that simple, or a read leaves the copy for anything but the
 * thread's own stack, the whole stack goes to libunwind instead.
 *
 * All input (registers, stack bytes, the files, maps) is untrusted: every
 * read is bounds-checked, the number of frames is capped, and a frame whose
 * (pc, sp) repeats ends the walk. */
#define _GNU_SOURCE
#include "unwind.h"

#include "procmaps.h"
#include "unwind_cfi.h"
#include "util.h"

#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <libelf.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Not in the public headers, but exported by libunwind-x86_64 (perf uses it
 * the same way). */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip,
                                              unw_dyn_info_t *di, unw_proc_info_t *pi,
                                              int need_unwind_info, void *arg);
#define dwarf_search_unwind_table UNW_OBJ(dwarf_search_unwind_table)

#define PAGE_SZ 4096u
#define PCACHE_N 64              /* live pages cached (direct-mapped) */
#define PCACHE_TTL_MS 1000.0     /* live memory changes: refetch after this */
#define RS_CACHE_SIZE 8192       /* libunwind register-state cache entries */
#define REFRESH_MIN_MS 100.0     /* re-read maps at most this often on our own */
#define IMAGE_MAX_BYTES (4ull << 30)
#define RC_SIZE 16384            /* per-pc rule cache entries (direct-mapped) */

/* DWARF pointer encodings used by .eh_frame_hdr */
#define PE_OMIT 0xff
#define PE_FMT(e) ((e) & 0x0f)
#define PE_APP(e) ((e) & 0x70)
#define PE_DATAREL_SDATA4 0x3b

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
	int elf_state;           /* 0 not parsed, 1 ok, -1 not usable */
	uint64_t hdr_vaddr;      /* PT_GNU_EH_FRAME p_vaddr */
	uint64_t table_rel;      /* table start - hdr start */
	uint64_t fde_count;
	/* libdw's view of .eh_frame, for the fast walk's rules */
	int cfi_state;           /* 0 not opened, 1 ok, -1 none */
	Elf *elf;
	Dwarf_CFI *cfi;
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
};

/* A per-pc rule cache entry: valid iff gen == maps_gen. */
struct rc_ent {
	uint64_t addr;
	unsigned gen;
	struct ha_cfi_rule r;
};

struct page {
	uint64_t addr;           /* page address */
	unsigned gen;            /* valid iff == u->pc_gen */
	int ok;                  /* 1 data valid, 0 read failed */
	uint8_t data[PAGE_SZ];
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
	struct scache *sc;       /* whole-stack results, see scache_lookup */
	uint64_t sc_hits, sc_misses;
	int sc_off;              /* stack cache disabled (tests) */
	struct rc_ent *rc;       /* per-pc rules of the fast walk */
	int fast_off;            /* fast walk disabled (tests) */
	uint64_t fast_n, slow_n; /* walks done by the fast walk, by libunwind */
	int verify;              /* HA_UNWIND_VERIFY: check every fast walk */
	uint64_t verified, verify_bad;
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
};

/* A context for unwinding the stack copy of one sample. */
static void uctx_init(struct uctx *c, struct ha_unwinder *u, const struct ha_regs *regs,
                      const uint8_t *stack, size_t stack_len)
{
	memset(c, 0, sizeof *c);
	c->u = u;
	c->regs = regs;
	c->stack = stack;
	c->lo = regs->rsp;
	c->hi = regs->rsp + stack_len;
}

/* ------------------------------------------------------------------ stack cache
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
 * their checks from the copy and ended cleanly are stored.
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
	int nchk, uses_rbp, bad;
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

static struct sc_tmpl *sc_tmpl_of(struct scache *sc, uint64_t rip, uint64_t len)
{
	uint64_t h = (rip ^ (len << 17)) * 0x9E3779B97F4A7C15ULL;
	return &sc->t[(h >> 40) % SC_TMPLS];
}

static int sc_tmpl_valid(const struct ha_unwinder *u, const struct sc_tmpl *t, uint64_t rip,
                         uint64_t len)
{
	return t->gen == u->maps_gen && t->rip == rip && t->len == len;
}

/* The hash of a stack: rip, length and the words at the template's
 * offsets; its low bits pick the set, its high bits are the entry's
 * fingerprint. */
static uint64_t sc_hash(const struct sc_tmpl *t, uint64_t rip, uint64_t len, const uint8_t *stack)
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
static uint64_t sc_hash_of(const struct ha_unwinder *u, const struct ha_regs *regs, uint64_t len,
                           const uint8_t *stack, int take)
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
static int sc_holds(const struct ha_unwinder *u, const struct sc_ent *e,
                    const struct ha_regs *regs, uint64_t len, const uint8_t *stack, int max)
{
	if (e->gen != u->maps_gen || e->rip != regs->rip || e->len != len || e->max != max)
		return 0;
	if (e->uses_rbp && regs->rbp - regs->rsp != e->rbp_rel)
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
static void sc_add(struct sc_rec *rec, uint64_t off, int rel, uint64_t val)
{
	if (rec->nchk >= SC_CHECKS || off > UINT32_MAX) {
		rec->bad = 1;
		return;
	}
	rec->chk[rec->nchk++] = (struct sc_chk){ (uint32_t)off, (uint32_t)rel, val };
}

/* ------------------------------------------------------------------ images */

static void image_free(struct image *im)
{
	if (im->cfi)
		dwarf_cfi_end(im->cfi);
	if (im->elf)
		elf_end(im->elf);
	if (im->mmapped)
		munmap((void *)im->data, im->size);
	else
		free((void *)im->data);
	free(im);
}

static int is_pseudo(const char *path)
{
	return path[0] != '/';
}

/* Open the file a mapping maps, as the target sees it. */
static int open_mapped_file(struct ha_unwinder *u, const struct ha_map *m)
{
	char p[PATH_MAX + 64];
	struct stat st;
	int fd;

	/* map_files names exactly the mapped object (even deleted or replaced
	 * files, across mount namespaces); it needs CAP_SYS_ADMIN/CHECKPOINT. */
	snprintf(p, sizeof p, "/proc/%d/map_files/%llx-%llx", (int)u->pid,
	         (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == m->inode)
			return fd;
		close(fd);
	}
	if (m->deleted)
		return -1;
	if (snprintf(p, sizeof p, "/proc/%d/root%s", (int)u->pid, m->path) >= (int)sizeof p)
		return -1;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -1;
	/* Only a regular file, and the same one (not replaced since). */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_ino != m->inode ||
	    major(st.st_dev) != (m->dev >> 32) || minor(st.st_dev) != (m->dev & 0xffffffffu)) {
		close(fd);
		return -1;
	}
	return fd;
}

static struct image *image_for_file(struct ha_unwinder *u, const struct ha_map *m)
{
	struct image *im;
	struct stat st;
	void *p;
	int fd;

	for (im = u->images; im; im = im->next)
		if (!im->is_vdso && im->dev == m->dev && im->ino == m->inode)
			return im;
	fd = open_mapped_file(u, m);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || st.st_size <= 0 || (uint64_t)st.st_size > IMAGE_MAX_BYTES) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	im = calloc(1, sizeof *im);
	if (!im) {
		munmap(p, (size_t)st.st_size);
		return NULL;
	}
	im->dev = m->dev;
	im->ino = m->inode;
	im->data = p;
	im->size = (size_t)st.st_size;
	im->mmapped = 1;
	im->next = u->images;
	u->images = im;
	return im;
}

static struct image *image_for_vdso(struct ha_unwinder *u, const struct ha_map *m)
{
	struct image *im;
	uint8_t *buf;
	size_t len = m->end - m->start;

	for (im = u->images; im; im = im->next)
		if (im->is_vdso)
			return im;
	if (len == 0 || len > (1u << 20) || !(m->prot & PROT_READ))
		return NULL;
	buf = malloc(len);
	if (!buf)
		return NULL;
	if (ha_remote_read(u->pid, m->start, buf, len) != 0) {
		free(buf);
		return NULL;
	}
	im = calloc(1, sizeof *im);
	if (!im) {
		free(buf);
		return NULL;
	}
	im->is_vdso = 1;
	im->data = buf;
	im->size = len;
	im->next = u->images;
	u->images = im;
	return im;
}

/* Size of an encoded value with encoding enc at p (uleb/sleb scanned), or 0. */
static size_t enc_size(uint8_t enc, const uint8_t *p, const uint8_t *end)
{
	switch (PE_FMT(enc)) {
	case 0x00: return 8;           /* absptr */
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	case 0x01: case 0x09: {        /* uleb128 / sleb128 */
		size_t n = 0;
		while (p + n < end && n < 10)
			if (!(p[n++] & 0x80))
				return n;
		return 0;
	}
	default: return 0;
	}
}

/* Parse the ELF header and .eh_frame_hdr of an image once. */
static int image_parse(struct image *im)
{
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph = NULL;
	const uint8_t *h, *p, *end;
	uint64_t cnt = 0;
	size_t n;

	if (im->elf_state)
		return im->elf_state;
	im->elf_state = -1;
	if (im->size < sizeof *eh)
		return -1;
	eh = (const Elf64_Ehdr *)im->data;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != EM_X86_64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > im->size ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > im->size - eh->e_phoff)
		return -1;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *q = (const Elf64_Phdr *)(im->data + eh->e_phoff) + i;
		if (q->p_type == PT_GNU_EH_FRAME)
			ph = q;
	}
	if (!ph || ph->p_offset > im->size || ph->p_filesz > im->size - ph->p_offset ||
	    ph->p_filesz < 4)
		return -1;
	h = im->data + ph->p_offset;
	end = h + ph->p_filesz;
	/* version, eh_frame_ptr_enc, fde_count_enc, table_enc */
	if (h[0] != 1 || h[2] == PE_OMIT || PE_APP(h[2]) != 0 || h[3] != PE_DATAREL_SDATA4)
		return -1;
	p = h + 4;
	if (h[1] != PE_OMIT) {
		n = enc_size(h[1], p, end);
		if (!n || n > (size_t)(end - p))
			return -1;
		p += n;
	}
	n = enc_size(h[2], p, end);
	if (!n || n > (size_t)(end - p))
		return -1;
	switch (PE_FMT(h[2])) {
	case 0x03: case 0x0b: { uint32_t v; memcpy(&v, p, 4); cnt = v; break; }
	case 0x00: case 0x04: case 0x0c: memcpy(&cnt, p, 8); break;
	case 0x02: case 0x0a: { uint16_t v; memcpy(&v, p, 2); cnt = v; break; }
	case 0x01: {
		unsigned sh = 0;
		for (size_t i = 0; i < n && sh < 64; i++, sh += 7)
			cnt |= (uint64_t)(p[i] & 0x7f) << sh;
		break;
	}
	default: return -1;
	}
	p += n;
	if (cnt == 0 || cnt > (uint64_t)(end - p) / 8)
		return -1;
	im->hdr_vaddr = ph->p_vaddr;
	im->table_rel = (uint64_t)(p - h);
	im->fde_count = cnt;
	im->elf_state = 1;
	return 1;
}

/* runtime = vaddr + *bias for the module im mapped by m, from the PT_LOAD
 * holding ip's file offset.  0 if there is none (or im is not usable). */
static int image_bias(struct image *im, const struct ha_map *m, uint64_t ip, uint64_t *bias)
{
	uint64_t fofs = (im->is_vdso ? 0 : m->offset) + (ip - m->start);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)im->data;

	if (image_parse(im) != 1)
		return 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *q = (const Elf64_Phdr *)(im->data + eh->e_phoff) + i;
		if (q->p_type != PT_LOAD || fofs < q->p_offset || fofs - q->p_offset >= q->p_filesz)
			continue;
		*bias = m->start - (im->is_vdso ? 0 : m->offset) + q->p_offset - q->p_vaddr;
		return 1;
	}
	return 0;
}

/* libdw's CFI of an image (.eh_frame), opened once; NULL if none. */
static Dwarf_CFI *image_cfi(struct image *im)
{
	if (im->cfi_state == 0) {
		im->cfi_state = -1;
		elf_version(EV_CURRENT);
		/* read-only: libelf converts nothing for a native ELF file */
		im->elf = elf_memory((char *)im->data, im->size);
		im->cfi = im->elf ? dwarf_getcfi_elf(im->elf) : NULL;
		if (im->cfi)
			im->cfi_state = 1;
	}
	return im->cfi;
}

/* ------------------------------------------------------------------ maps */

static void drop_unused_images(struct ha_unwinder *u)
{
	struct image **pp = &u->images;
	while (*pp) {
		struct image *im = *pp;
		if (im->used_gen != u->maps_gen) {
			*pp = im->next;
			image_free(im);
		} else {
			pp = &im->next;
		}
	}
}

static int same_maps(const struct ha_maps *a, const struct ha_maps *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct ha_map *x = &a->v[i], *y = &b->v[i];
		if (x->start != y->start || x->end != y->end || x->offset != y->offset ||
		    x->inode != y->inode || x->dev != y->dev || x->prot != y->prot ||
		    strcmp(x->path, y->path) != 0)
			return 0;
	}
	return 1;
}

/* Read the maps again.  1 if they changed (caches must go), 0 if not,
 * -errno if they cannot be read (the old ones are kept: a process that
 * exited still has its samples in the ring). */
static int load_maps(struct ha_unwinder *u)
{
	struct ha_maps nm;
	int rc = ha_maps_read(u->pid, &nm);

	u->maps_ms = ha_now_ms();
	if (rc < 0)
		return rc;
	if (nm.n == 0) {                /* a zombie has no maps */
		ha_maps_free(&nm);
		return -ESRCH;
	}
	if (u->mi && same_maps(&u->maps, &nm)) {
		ha_maps_free(&nm);
		return 0;
	}
	ha_maps_free(&u->maps);
	free(u->mi);
	u->maps = nm;
	u->mi = calloc(nm.n ? nm.n : 1, sizeof *u->mi);
	u->maps_gen++;
	if (!u->mi) {
		ha_maps_free(&u->maps);
		return -ENOMEM;
	}
	/* Keep the images of files still mapped (same dev/inode), drop the others. */
	for (size_t i = 0; i < nm.n; i++) {
		const struct ha_map *m = &nm.v[i];
		for (struct image *im = u->images; im; im = im->next)
			if ((im->is_vdso && strcmp(m->path, "[vdso]") == 0) ||
			    (!im->is_vdso && m->inode && im->dev == m->dev && im->ino == m->inode))
				im->used_gen = u->maps_gen;
	}
	drop_unused_images(u);
	return 1;
}

/* 1 if the maps changed and every cache was flushed. */
static int refresh(struct ha_unwinder *u)
{
	if (load_maps(u) != 1)
		return 0;
	unw_flush_cache(u->as, 0, 0);
	u->pc_gen++;
	return 1;
}

/* What backs mapping m (index i), decided once per maps generation. */
static struct mapinfo *mapinfo_of(struct ha_unwinder *u, const struct ha_map *m)
{
	struct mapinfo *mi = &u->mi[m - u->maps.v];

	if (mi->kind != MI_UNKNOWN)
		return mi;
	mi->kind = MI_NONE;
	if (!(m->prot & PROT_READ))
		return mi;
	if (!is_pseudo(m->path) && m->inode != 0) {
		mi->img = image_for_file(u, m);
		if (mi->img) {
			mi->img->used_gen = u->maps_gen;
			mi->kind = MI_IMAGE;
		}
	} else if (strcmp(m->path, "[vdso]") == 0) {
		mi->img = image_for_vdso(u, m);
		if (mi->img) {
			mi->img->used_gen = u->maps_gen;
			mi->kind = MI_IMAGE;
		}
	} else if (m->path[0] == '\0' || strcmp(m->path, "[heap]") == 0 ||
	           strncmp(m->path, "[anon:", 6) == 0) {
		mi->kind = MI_LIVE;
	}
	/* everything else ([stack], [vvar], [vsyscall], devices...): MI_NONE */
	return mi;
}

static const struct ha_map *find_map(struct uctx *c, uint64_t addr)
{
	const struct ha_map *m = c->last;
	if (m && addr >= m->start && addr < m->end)
		return m;
	m = ha_maps_find_addr(&c->u->maps, addr);
	if (m)
		c->last = m;
	return m;
}

/* ------------------------------------------------------------------ reads */

static int read_live(struct ha_unwinder *u, uint64_t addr, uint8_t *out, size_t n)
{
	while (n > 0) {
		uint64_t pa = addr & ~(uint64_t)(PAGE_SZ - 1);
		size_t off = (size_t)(addr - pa), k = PAGE_SZ - off;
		struct page *pg = &u->pages[(pa / PAGE_SZ) % PCACHE_N];
		if (k > n)
			k = n;
		if (pg->gen != u->pc_gen || pg->addr != pa) {
			pg->addr = pa;
			pg->gen = u->pc_gen;
			pg->ok = ha_remote_read(u->pid, pa, pg->data, PAGE_SZ) == 0;
		}
		if (!pg->ok)
			return -1;
		memcpy(out, pg->data + off, k);
		out += k;
		addr += k;
		n -= k;
	}
	return 0;
}

/* Read one word at addr from anything but the stack copy. */
static int read_other(struct uctx *c, uint64_t addr, unw_word_t *valp)
{
	const struct ha_map *m;
	struct mapinfo *mi;
	uint8_t buf[8];

	if (addr >= c->smap_lo && addr < c->smap_hi)
		return -UNW_EINVAL;     /* the thread's stack outside the copy */
	m = find_map(c, addr);
	if (!m)
		return -UNW_EINVAL;
	mi = mapinfo_of(c->u, m);
	if (mi->kind == MI_IMAGE) {
		uint64_t off = (mi->img->is_vdso ? 0 : m->offset) + (addr - m->start);
		size_t k;
		if (off >= mi->img->size)
			return -UNW_EINVAL;
		k = mi->img->size - off < 8 ? (size_t)(mi->img->size - off) : 8;
		memset(buf, 0, sizeof buf);
		memcpy(buf, mi->img->data + off, k);
	} else if (mi->kind == MI_LIVE) {
		if (m->end - addr < 8 || read_live(c->u, addr, buf, 8) != 0)
			return -UNW_EINVAL;
	} else {
		return -UNW_EINVAL;
	}
	memcpy(valp, buf, 8);
	return 0;
}

/* ------------------------------------------------------------------ accessors */

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
                          void *arg)
{
	struct uctx *c = arg;
	(void)as;
	if (write)
		return -UNW_EINVAL;
	if (addr >= c->lo && addr < c->hi && c->hi - addr >= 8) {
		memcpy(valp, c->stack + (addr - c->lo), 8);
		return 0;
	}
	return read_other(c, addr, valp);
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *valp, int write,
                          void *arg)
{
	const struct ha_regs *r = ((struct uctx *)arg)->regs;
	(void)as;
	if (write)
		return -UNW_EREADONLYREG;
	switch (reg) {
	case UNW_X86_64_RIP: *valp = r->rip; return 0;
	case UNW_X86_64_RSP: *valp = r->rsp; return 0;
	case UNW_X86_64_RBP: *valp = r->rbp; return 0;
	case UNW_X86_64_RBX: *valp = r->rbx; return 0;
	case UNW_X86_64_R12: *valp = r->r12; return 0;
	case UNW_X86_64_R13: *valp = r->r13; return 0;
	case UNW_X86_64_R14: *valp = r->r14; return 0;
	case UNW_X86_64_R15: *valp = r->r15; return 0;
	default: return -UNW_EBADREG;
	}
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
                              int need_unwind_info, void *arg)
{
	struct uctx *c = arg;
	const struct ha_map *m = find_map(c, ip);
	struct mapinfo *mi;
	unw_dyn_info_t di;

	if (!m) {
		c->unknown_ip = 1;
		return -UNW_ENOINFO;
	}
	if (!(m->prot & PROT_EXEC))
		return -UNW_ENOINFO;
	mi = mapinfo_of(c->u, m);
	if (mi->kind != MI_IMAGE)
		return -UNW_ENOINFO;    /* JIT/anonymous code: frame-pointer fallback */
	if (mi->table_state == 0) {
		struct image *im = mi->img;
		uint64_t bias;
		mi->table_state = -1;
		if (!image_bias(im, m, ip, &bias))
			return -UNW_ENOINFO;
		mi->segbase = im->hdr_vaddr + bias;
		mi->table_addr = mi->segbase + im->table_rel;
		mi->fde_count = im->fde_count;
		mi->table_state = 1;
	}
	if (mi->table_state != 1)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof di);
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = mi->segbase;
	di.u.rti.table_data = mi->table_addr;
	di.u.rti.table_len = mi->fde_count * 8 / sizeof(unw_word_t);
	return dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	(void)as, (void)pi, (void)arg;
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dilap, void *arg)
{
	(void)as, (void)dilap, (void)arg;
	return -UNW_ENOINFO;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
                            void *arg)
{
	(void)as, (void)reg, (void)val, (void)write, (void)arg;
	return -UNW_EINVAL;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	(void)as, (void)cu, (void)arg;
	return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
                             unw_word_t *offp, void *arg)
{
	(void)as, (void)addr, (void)buf, (void)len, (void)offp, (void)arg;
	return -UNW_ENOINFO;    /* names come from the symbolizer */
}

static unw_accessors_t accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_get_proc_name,
};

/* ------------------------------------------------------------------ API */

struct ha_unwinder *ha_unwinder_new(pid_t pid, char *err, size_t errlen)
{
	struct ha_unwinder *u = calloc(1, sizeof *u);
	int rc;

	if (!u) {
		ha_err(err, errlen, "out of memory");
		return NULL;
	}
	u->pid = pid;
	u->pages = calloc(PCACHE_N, sizeof *u->pages);
	if (!u->pages) {
		free(u);
		ha_err(err, errlen, "out of memory");
		return NULL;
	}
	u->pc_gen = 1;           /* calloc'ed pages have gen 0: invalid */
	u->pc_epoch_ms = ha_now_ms();
	rc = load_maps(u);
	if (rc < 0 || !u->mi) {
		ha_err(err, errlen, "cannot read /proc/%d/maps: %s", (int)pid,
		       strerror(rc < 0 ? -rc : ENOMEM));
		ha_unwinder_free(u);
		return NULL;
	}
	u->as = unw_create_addr_space(&accessors, 0);
	if (!u->as) {
		ha_err(err, errlen, "unw_create_addr_space failed");
		ha_unwinder_free(u);
		return NULL;
	}
	const char *v = getenv("HA_UNWIND_VERIFY");
	u->verify = v && *v && strcmp(v, "0") != 0;
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	unw_set_cache_size(u->as, RS_CACHE_SIZE, 0);
	return u;
}

void ha_unwinder_free(struct ha_unwinder *u)
{
	if (!u)
		return;
	if (u->verify)
		fprintf(stderr, "heapattach: unwind verify: %llu fast walks compared with libunwind, "
		        "%llu differ; %llu walks by libunwind\n", (unsigned long long)u->verified,
		        (unsigned long long)u->verify_bad, (unsigned long long)u->slow_n);
	if (u->as)
		unw_destroy_addr_space(u->as);
	while (u->images) {
		struct image *im = u->images;
		u->images = im->next;
		image_free(im);
	}
	ha_maps_free(&u->maps);
	free(u->mi);
	free(u->pages);
	if (u->sc)
		for (int i = 0; i < SC_SETS; i++)
			for (int k = 0; k < SC_WAYS; k++)
				free(u->sc->s[i].e[k]);
	free(u->sc);
	free(u->rc);
	free(u);
}

void ha_unwinder_set_stack_cache(struct ha_unwinder *u, int on)
{
	if (u)
		u->sc_off = !on;
}

void ha_unwinder_cache_stats(const struct ha_unwinder *u, uint64_t *hits, uint64_t *misses)
{
	*hits = u ? u->sc_hits : 0;
	*misses = u ? u->sc_misses : 0;
}

/* Ask for the lines a cache lookup of this stack will read: stage 0 the
 * entries of its set, stage 1 (after stage 0 for the whole batch) the
 * checks and pcs of those entries. */
void ha_unwind_prefetch(const struct ha_unwinder *u, const struct ha_regs *regs,
                        const uint8_t *stack, size_t stack_len, int stage)
{
	if (!u || !u->sc || u->sc_off || !regs || !stack || !u->maps_gen)
		return;
	uint64_t h = sc_hash_of(u, regs, stack_len, stack, 0);
	const struct sc_set *st = &u->sc->s[SC_SET(h)];
	if (stage == 0) {
		__builtin_prefetch(st);
		return;
	}
	for (int i = 0; i < SC_WAYS; i++)
		if (st->fp[i] == SC_FP(h) && st->e[i]) {
			/* the key and the checks; the pcs are read on a hit only */
			const char *p = (const char *)st->e[i];
			size_t n = sizeof *st->e[i] + 16 * (size_t)SC_TMPL_WORDS;
			for (size_t k = 0; k < n; k += 64)
				__builtin_prefetch(p + k);
		}
}

void ha_unwinder_maps_changed(struct ha_unwinder *u)
{
	if (!u)
		return;
	refresh(u);
	u->pc_gen++;            /* live pages: refetch in any case */
}

/* The thread's stack mapping (reads there outside the copy fail, as
 * libunwind's would); looked up on first need only. */
static void find_stack_map(struct uctx *c)
{
	const struct ha_map *sm = ha_maps_find_addr(&c->u->maps, c->regs->rsp);
	c->smap_lo = sm ? sm->start : c->lo;
	c->smap_hi = sm ? sm->end : c->hi;
	c->smap_known = 1;
}

static int unwind_once(struct ha_unwinder *u, struct uctx *c, uint64_t *pcs, int max)
{
	unw_cursor_t cur;
	unw_word_t ip, sp, prev_ip, prev_sp;
	int n = 0;

	c->last = NULL;
	c->unknown_ip = 0;
	if (!c->smap_known)
		find_stack_map(c);
	if (unw_init_remote(&cur, u->as, c) < 0)
		return -1;
	pcs[n++] = c->regs->rip;
	prev_ip = c->regs->rip;
	prev_sp = c->regs->rsp;
	while (n < max) {
		int st = unw_step(&cur);
		if (st <= 0)
			break;
		if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0 ||
		    unw_get_reg(&cur, UNW_REG_SP, &sp) < 0)
			break;
		if (ip == prev_ip && sp == prev_sp)
			break;          /* no progress: a loop */
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = sp;
	}
	return n;
}

/* ------------------------------------------------------------------ fast walk */

/* The rule for the code address addr (a pc, or a return address - 1), from
 * the cache or from the module's CFI. */
static const struct ha_cfi_rule *rule_of(struct ha_unwinder *u, struct uctx *c, uint64_t addr)
{
	uint64_t h = addr * 0x9E3779B97F4A7C15ULL;
	struct rc_ent *e = &u->rc[(h >> 32) % RC_SIZE];
	const struct ha_map *m;
	struct mapinfo *mi;

	if (e->gen == u->maps_gen && e->addr == addr)
		return &e->r;
	e->addr = addr;
	e->gen = u->maps_gen;
	memset(&e->r, 0, sizeof e->r);
	e->r.kind = CFI_FALLBACK;
	/* as acc_find_proc_info: file-backed executable code only */
	m = find_map(c, addr);
	if (!m || !(m->prot & PROT_EXEC))
		return &e->r;
	mi = mapinfo_of(u, m);
	if (mi->kind != MI_IMAGE)
		return &e->r;
	if (mi->bias_state == 0)
		mi->bias_state = image_bias(mi->img, m, addr, &mi->bias) ? 1 : -1;
	if (mi->bias_state == 1 && image_cfi(mi->img))
		ha_cfi_rule(mi->img->cfi, addr - mi->bias, &e->r);
	return &e->r;
}

/* A register of the walk: known, unreadable (libunwind's read would fail:
 * the thread's stack outside the copy) or unknown (only libunwind knows). */
enum { FW_KNOWN, FW_FAIL, FW_UNKNOWN };
/* Where a known register's value came from, for the stack cache: already
 * accounted for relative to rsp (rsp itself, a CFA, a checked base), the
 * captured register, or the word at this offset of the copy (>= 0). */
enum { SRC_FREE = -1, SRC_INIT = -2 };
struct fw_reg {
	uint64_t v;
	int st;                  /* FW_* */
	int64_t src;             /* SRC_* or an offset */
};

/* Read the word at addr as libunwind's access_mem would see it. */
static inline int fw_read(struct uctx *c, uint64_t addr, uint64_t *v)
{
	if (addr - c->lo < c->hi - c->lo && c->hi - addr >= 8) {
		memcpy(v, c->stack + (addr - c->lo), 8);
		return FW_KNOWN;
	}
	if (!c->smap_known)
		find_stack_map(c);
	if (addr >= c->smap_lo && addr < c->smap_hi)
		return FW_FAIL;
	return FW_UNKNOWN;
}

/* The walk unwind_once does with libunwind, with the cached rules: the same
 * pcs, or 0 if this stack needs libunwind.  Every step: CFA from the rule's
 * register, the return address from its slot, the callee-saved registers
 * from theirs (or unchanged); the caller's rsp is the CFA.  Stops where
 * libunwind stops: an outermost frame, a read that fails, ip 0, no
 * progress.  With rec, notes what a stack cache hit must check (see
 * "stack cache"); rec->bad if the walk cannot be stored. */
static int fast_walk(struct ha_unwinder *u, struct uctx *c, uint64_t *pcs, int max,
                     struct sc_rec *rec)
{
	const uint64_t *init = &c->regs->rip;
	struct fw_reg r[CFI_NREG];
	uint64_t addr, prev_ip, prev_sp;
	int n = 0;

	for (int i = 0; i < CFI_NREG; i++)
		r[i] = (struct fw_reg){ .v = init[i], .st = FW_KNOWN,
		                        .src = i == CFI_RSP ? SRC_FREE : SRC_INIT };
	pcs[n++] = c->regs->rip;
	addr = prev_ip = c->regs->rip;   /* the first frame: its exact pc */
	prev_sp = c->regs->rsp;
	while (n < max) {
		const struct ha_cfi_rule *ru = rule_of(u, c, addr);
		uint64_t cfa, ip, ra;
		int st;

		if (ru->kind == CFI_FALLBACK)
			return 0;
		if (ru->kind == CFI_END)
			break;
		struct fw_reg *cr = &r[ru->cfa_reg];
		if (cr->st == FW_UNKNOWN)
			return 0;
		if (cr->st == FW_FAIL)
			goto failed;
		if (rec && cr->src != SRC_FREE) {
			if (cr->src >= 0)
				sc_add(rec, (uint64_t)cr->src, 1, cr->v - c->lo);
			else if (ru->cfa_reg == CFI_RBP)
				rec->uses_rbp = 1;
			else
				rec->bad = 1;   /* the key holds rsp and rbp only */
			cr->src = SRC_FREE;
		}
		cfa = cr->v + (uint64_t)(int64_t)ru->cfa_off;
		ra = cfa + (uint64_t)(int64_t)ru->save[CFI_RIP];
		st = fw_read(c, ra, &ip);
		if (st == FW_UNKNOWN)
			return 0;
		if (st == FW_FAIL)
			goto failed;
		if (rec)
			sc_add(rec, ra - c->lo, 0, ip);
		for (int i = CFI_RBP; i < CFI_NREG; i++) {
			int32_t s = ru->save[i];
			if (s == CFI_SAME)
				continue;
			if (s == CFI_LOST) {
				r[i].st = FW_UNKNOWN;
			} else {
				uint64_t at = cfa + (uint64_t)(int64_t)s;
				r[i].st = fw_read(c, at, &r[i].v);
				r[i].src = (int64_t)(at - c->lo);
			}
		}
		r[CFI_RSP] = (struct fw_reg){ .v = cfa, .st = FW_KNOWN, .src = SRC_FREE };
		if (ip == 0)
			break;
		if (ip == prev_ip && cfa == prev_sp)
			goto failed;    /* no progress: a loop */
		pcs[n++] = ip;
		prev_ip = ip;
		prev_sp = cfa;
		addr = ip - 1;          /* a return address: the call is before it */
	}
	return n;
failed:
	if (rec)
		rec->bad = 1;   /* an error, not the outermost frame */
	return n;
}

/* Debugging aid (HA_UNWIND_VERIFY=1): unwind again with libunwind and
 * report any difference on stderr. */
static void verify_walk(struct ha_unwinder *u, struct uctx *c, const uint64_t *pcs, int n,
                        int max)
{
	uint64_t *again = malloc((size_t)max * sizeof *again);
	if (!again)
		return;
	int m = unwind_once(u, c, again, max);
	u->verified++;
	if (m != n || memcmp(pcs, again, (size_t)n * sizeof *pcs) != 0) {
		if (u->verify_bad++ < 10) {
			fprintf(stderr, "heapattach: unwind verify: fast walk %d pcs, libunwind %d:", n, m);
			for (int i = 0; i < (n > m ? n : m); i++)
				fprintf(stderr, " %llx/%llx", i < n ? (unsigned long long)pcs[i] : 0ull,
				        i < m ? (unsigned long long)again[i] : 0ull);
			fprintf(stderr, "\n");
		}
	}
	free(again);
}

/* The fast walk if it can, else libunwind (and the maps refresh of an
 * unknown pc).  rec->bad unless the fast walk answered. */
static int walk(struct ha_unwinder *u, struct uctx *c, uint64_t *pcs, int max,
                struct sc_rec *rec)
{
	int n;

	c->last = NULL;
	c->unknown_ip = 0;
	if (!u->fast_off && !u->rc)
		u->rc = calloc(RC_SIZE, sizeof *u->rc);
	if (!u->fast_off && u->rc) {
		n = fast_walk(u, c, pcs, max, rec);
		if (n > 0) {
			u->fast_n++;
			if (u->verify)
				verify_walk(u, c, pcs, n, max);
			return n;
		}
	}
	if (rec)
		rec->bad = 1;
	u->slow_n++;
	/* Only libunwind reads live memory or needs the time: live pages age
	 * out (the process keeps running), maps are re-read at most so often. */
	double now = ha_now_ms();
	if (now - u->pc_epoch_ms > PCACHE_TTL_MS) {
		u->pc_gen++;
		u->pc_epoch_ms = now;
	}
	n = unwind_once(u, c, pcs, max);
	/* A pc in no mapping: something was mapped since we read maps (dlopen,
	 * JIT).  Re-read them (rate-limited) and try again. */
	if (c->unknown_ip && now - u->maps_ms >= REFRESH_MIN_MS && refresh(u))
		n = unwind_once(u, c, pcs, max);
	return n;
}

void ha_unwinder_set_fast(struct ha_unwinder *u, int on)
{
	if (u)
		u->fast_off = !on;
}

void ha_unwinder_fast_stats(const struct ha_unwinder *u, uint64_t *fast, uint64_t *slow)
{
	*fast = u ? u->fast_n : 0;
	*slow = u ? u->slow_n : 0;
}

/* Store the walk recorded in sc->scratch (its pcs: pcs[0..n)). */
static void sc_store(struct ha_unwinder *u, const struct ha_regs *regs, uint64_t len,
                     const uint8_t *stack, const uint64_t *pcs, int n, int max)
{
	struct scache *sc = u->sc;
	struct sc_rec *rec = &sc->scratch;
	struct sc_tmpl *t = sc_tmpl_of(sc, regs->rip, len);
	uint32_t off[SC_TMPL_WORDS];
	int no = 0;

	if (rec->bad || n < 1 || n > SC_FRAMES)
		return;
	/* This walk's shape: the offsets of its return addresses. */
	for (int k = 0; k < rec->nchk && no < SC_TMPL_WORDS; k++)
		if (!rec->chk[k].rel)
			off[no++] = rec->chk[k].off;
	if (!sc_tmpl_valid(u, t, regs->rip, len) ||
	    ((t->n != no || memcmp(t->off, off, (size_t)no * sizeof *off) != 0) &&
	     ++t->misses >= SC_TMPL_PATIENCE)) {
		/* entries stored under the old template age out */
		t->rip = regs->rip;
		t->len = len;
		t->gen = u->maps_gen;
		t->n = no;
		t->misses = 0;
		memcpy(t->off, off, (size_t)no * sizeof *off);
		sc->tver++;
	}
	uint64_t h = sc_hash(t, regs->rip, len, stack);
	unsigned set = SC_SET(h);
	struct sc_set *st = &sc->s[set];
	unsigned way = st->rr++ % SC_WAYS;
	struct sc_ent *e = st->e[way];
	size_t need = sizeof *e + (size_t)rec->nchk * sizeof *rec->chk + (size_t)n * sizeof *pcs;
	if (!e || e->cap < need) {
		free(e);
		e = st->e[way] = malloc(need);
		if (!e)
			return;
		e->cap = need;
	}
	e->gen = 0;
	st->fp[way] = SC_FP(h);
	e->rip = regs->rip;
	e->len = len;
	e->uses_rbp = rec->uses_rbp;
	e->rbp_rel = regs->rbp - regs->rsp;
	e->max = max;
	e->n = n;
	e->nchk = rec->nchk;
	memcpy(e->chk, rec->chk, (size_t)rec->nchk * sizeof *rec->chk);
	memcpy(SC_PCS(e), pcs, (size_t)n * sizeof *pcs);
	e->user[0] = e->user[1] = 0;
	e->stamp = ++sc->stamps;
	e->gen = u->maps_gen;
	sc->last_ref = e->stamp << SC_WAY_BITS | (set * SC_WAYS + way);
}

uint64_t ha_unwind_ref(const struct ha_unwinder *u)
{
	return u && u->sc ? u->sc->last_ref : 0;
}

uint32_t *ha_unwind_user(struct ha_unwinder *u, uint64_t ref)
{
	if (!u || !u->sc || !ref)
		return NULL;
	uint64_t i = ref & ((1u << SC_WAY_BITS) - 1);
	struct sc_ent *e = u->sc->s[i / SC_WAYS].e[i % SC_WAYS];
	return e && e->stamp == ref >> SC_WAY_BITS ? e->user : NULL;
}

int ha_unwind(struct ha_unwinder *u, const struct ha_regs *regs, const uint8_t *stack,
              size_t stack_len, uint64_t *pcs, int max)
{
	struct uctx c;
	int n;

	if (u && u->sc)
		u->sc->last_ref = 0;
	if (!u || !regs || !pcs || max <= 0 || regs->rip == 0)
		return -1;
	if (!stack)
		stack_len = 0;
	if (stack_len > UINT64_MAX - regs->rsp)
		stack_len = (size_t)(UINT64_MAX - regs->rsp);

	/* The whole-stack cache first: a hit reads no rules, no maps, no
	 * clock. */
	struct sc_rec *rec = NULL;
	if (!u->sc && !u->sc_off) {
		/* the sets are cache lines: 64-byte aligned */
		u->sc = aligned_alloc(_Alignof(struct scache), sizeof *u->sc);
		if (u->sc)
			memset(u->sc, 0, sizeof *u->sc);
	}
	if (u->sc && !u->sc_off && u->maps_gen) {
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
				u->sc->last_ref = e->stamp << SC_WAY_BITS | (set * SC_WAYS + (unsigned)i);
				if (tv)
					t->misses = 0;
				if (u->verify) {
					uctx_init(&c, u, regs, stack, stack_len);
					verify_walk(u, &c, pcs, e->n, max);
				}
				return e->n;
			}
		}
		rec = &u->sc->scratch;
		rec->nchk = 0;
		rec->uses_rbp = 0;
		rec->bad = 0;
	}
	u->sc_misses++;
	uctx_init(&c, u, regs, stack, stack_len);
	unsigned gen0 = u->maps_gen;
	n = walk(u, &c, pcs, max, rec);
	if (rec && !c.unknown_ip && gen0 == u->maps_gen)
		sc_store(u, regs, stack_len, stack, pcs, n, max);
	return n;
}
