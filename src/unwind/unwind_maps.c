/* unwind_maps.c -- the target as the unwinder sees it: its maps (re-read
 * when they change), what backs each mapping, and the ELF files (and the
 * vdso) they map as images in our memory: the file itself mmap'ed
 * read-only, opened through /proc/PID/map_files or /proc/PID/root at the
 * mapping's file offset (code, .eh_frame_hdr, .eh_frame); [vdso] a copy of
 * it read once from the process.  Anonymous memory (heap, JIT,
 * "[anon:...]") is read live (unwind_access.c); everything else ([stack],
 * [vvar], [vsyscall], devices) is never read. */
#define _GNU_SOURCE
#include "unwind_int.h"
#include "agent_file.h"
#include "target_fs.h"
#include "unwind_elfsym.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define IMAGE_MAX_BYTES (4ull << 30)

/* DWARF pointer encodings used by .eh_frame_hdr */
#define PE_OMIT 0xff
#define PE_FMT(e) ((e) & 0x0f)
#define PE_APP(e) ((e) & 0x70)
#define PE_DATAREL_SDATA4 0x3b

/* ------------------------------------------------------------------ images */

static void image_free(struct image *im)
{
	if (im->cfi)
		dwarf_cfi_end(im->cfi);
	if (im->elf)
		elf_end(im->elf);
	uw_syms_free(im->syms);
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

/* May reads of mapping m be served from an image (uw_mapinfo_of)? */
static int image_backed(const struct ha_map *m)
{
	return (!is_pseudo(m->path) && m->inode != 0) || strcmp(m->path, "[vdso]") == 0;
}

/* Open the file a mapping maps, as the target sees it and with its right
 * to it (target_fs.h: no file its user may not read, no FIFO, no device). */
static int open_mapped_file(struct ha_unwinder *u, const struct ha_map *m)
{
	char p[PATH_MAX + 64];
	struct stat st;
	int fd;

	/* The agent we delivered through a memfd: from our own file. */
	if (m->deleted && (fd = ha_agent_file_open(u->pid, ha_maps_module_of(&u->maps, m))) >= 0)
		return fd;
	/* map_files names exactly the mapped object (even deleted or replaced
	 * files, across mount namespaces); it needs CAP_SYS_ADMIN/CHECKPOINT. */
	snprintf(p, sizeof p, "/proc/%d/map_files/%llx-%llx", (int)u->pid,
	         (unsigned long long)m->start, (unsigned long long)m->end);
	fd = ha_target_open(u->pid, p, &st);
	if (fd >= 0) {
		if (st.st_ino == m->inode)
			return fd;
		close(fd);
	}
	if (m->deleted)
		return -1;
	if (snprintf(p, sizeof p, "/proc/%d/root%s", (int)u->pid, m->path) >= (int)sizeof p)
		return -1;
	fd = ha_target_open(u->pid, p, &st);
	if (fd < 0)
		return -1;
	/* The same file (not replaced since). */
	if (st.st_ino != m->inode || major(st.st_dev) != (m->dev >> 32) ||
	    minor(st.st_dev) != (m->dev & 0xffffffffu)) {
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

/* Is the image an x86-64 ELF64 file whose program headers are in it?
 * Checked once. */
static int image_header_ok(struct image *im)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)im->data;
	if (im->hdr_state)
		return im->hdr_state == 1;
	im->hdr_state = -1;
	if (im->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_machine != EM_X86_64 || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    eh->e_phoff > im->size ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > im->size - eh->e_phoff)
		return 0;
	im->hdr_state = 1;
	return 1;
}

/* Parse the .eh_frame_hdr of an image once (libunwind's table; a file
 * linked without --eh-frame-hdr, as musl-gcc links, has none: its
 * .eh_frame still serves the fast walk through libdw). */
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
	if (!image_header_ok(im))
		return -1;
	eh = (const Elf64_Ehdr *)im->data;
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

/* runtime = vaddr + *bias for the module im mapped by the executable
 * mapping m, from the executable PT_LOAD holding ip's file offset.  1; 0 if
 * ip is in none (the rest of the mapping may well be); -1 if im is not
 * usable at all. */
int uw_image_bias(struct image *im, const struct ha_map *m, uint64_t ip, uint64_t *bias)
{
	uint64_t fofs = (im->is_vdso ? 0 : m->offset) + (ip - m->start);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)im->data;

	if (!image_header_ok(im))
		return -1;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *q = (const Elf64_Phdr *)(im->data + eh->e_phoff) + i;
		/* Executable only: the last page of a text mapping may hold the
		 * start of the next segment, whose bias can differ. */
		if (q->p_type != PT_LOAD || !(q->p_flags & PF_X) || fofs < q->p_offset ||
		    fofs - q->p_offset >= q->p_filesz)
			continue;
		*bias = m->start - (im->is_vdso ? 0 : m->offset) + q->p_offset - q->p_vaddr;
		return 1;
	}
	return 0;
}

int uw_image_table(struct image *im)
{
	return image_parse(im) == 1;
}

/* libdw's CFI of an image (.eh_frame), opened once; NULL if none. */
Dwarf_CFI *uw_image_cfi(struct image *im)
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
int uw_load_maps(struct ha_unwinder *u)
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
	for (size_t i = nm.n; i-- > 0;)
		u->mi[i].next_file = image_backed(&nm.v[i]) ? i : i + 1 < nm.n ? u->mi[i + 1].next_file
		                                                               : nm.n;
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
int uw_refresh(struct ha_unwinder *u)
{
	if (uw_load_maps(u) != 1)
		return 0;
	unw_flush_cache(u->as, 0, 0);
	u->pc_gen++;
	return 1;
}

/* What backs mapping m (index i), decided once per maps generation. */
struct mapinfo *uw_mapinfo_of(struct ha_unwinder *u, const struct ha_map *m)
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

/* The end uw_copy_end wants for rsp's page with the maps as they are. */
static uint64_t copy_end_now(const struct ha_unwinder *u, uint64_t pg)
{
	uint64_t end = UINT64_MAX;
	/* the first mapping that ends above rsp's page */
	size_t lo = ha_count_le(u->maps.v, u->maps.n, sizeof *u->maps.v, offsetof(struct ha_map, end), pg);
	if (lo < u->maps.n && u->mi[lo].next_file < u->maps.n) {
		uint64_t start = u->maps.v[u->mi[lo].next_file].start;
		end = start > pg ? start : pg;
	}
	return end;
}

uint64_t uw_copy_end(struct ha_unwinder *u, uint64_t rsp)
{
	uint64_t pg = rsp & ~(uint64_t)(PAGE_SZ - 1), end = copy_end_now(u, pg);

	/* rsp inside a file's mapping: no thread's stack is, so the maps may
	 * be old (a stack mapped since where a file was, a dlclose'd
	 * library's hole): read again, at most every UW_REFRESH_MIN_MS, and
	 * not remembered while it holds, so that the thread's copies are
	 * whole again at the next read. */
	if (end == pg) {
		if (ha_now_ms() - u->maps_ms >= UW_REFRESH_MIN_MS && uw_refresh(u))
			end = copy_end_now(u, pg);
		if (end == pg)
			return end;
	}
	u->cend[(rsp / PAGE_SZ) % CEND_N] = (struct copy_end){ rsp / PAGE_SZ, end, u->maps_gen };
	return end;
}

void ha_unwinder_maps_changed(struct ha_unwinder *u)
{
	if (!u)
		return;
	uw_refresh(u);
	u->pc_gen++;            /* live pages: refetch in any case */
}

void uw_images_free(struct ha_unwinder *u)
{
	while (u->images) {
		struct image *im = u->images;
		u->images = im->next;
		image_free(im);
	}
}
