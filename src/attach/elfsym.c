/* elfsym.c -- symbol addresses inside a target, from its ELF files (libelf).
 *
 * A module's .dynsym is read once into a small table (sorted by address) and
 * kept in a process-wide cache keyed by (path, dev, inode), so that the
 * dozens of lookups one injection makes -- several per frame of every thread
 * it inspects while the thread is stopped -- cost a binary search, not an
 * open + parse of libc.  ha_elf_cache_clear() drops the cache.
 *
 * The files are read from disk, never from the target's memory: a hostile
 * target cannot feed us crafted tables, only a crafted file it owns, and
 * libelf bounds-checks that. */
#define _GNU_SOURCE
#include "elfsym.h"
#include "module_file.h"
#include "target_fs.h"
#include "util.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE_MAX 64
#define VERSYM_HIDDEN 0x8000

struct sym {
	uint64_t value;         /* link-time address */
	uint64_t size;
	uint32_t name;          /* offset into strtab */
	unsigned char type;     /* STT_* */
	unsigned char hidden;   /* non-default version (name@VER, not @@) */
};

struct symtab {
	char *path;             /* path in the target's mount namespace */
	uint64_t dev, inode;    /* as /proc/PID/maps shows them */
	uint64_t link_base;     /* first PT_LOAD p_vaddr, page-aligned down */
	struct sym *v;          /* sorted by value; aliases in .dynsym order */
	size_t n;
	char *str;              /* NUL-terminated copy of .dynstr */
	size_t strsz;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct symtab *cache[CACHE_MAX];
static size_t cache_next;       /* round-robin eviction slot */

static pthread_once_t elf_once = PTHREAD_ONCE_INIT;
static int elf_ok;

static void elf_init(void)
{
	elf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static void symtab_free(struct symtab *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->v);
	free(t->str);
	free(t);
}

void ha_elf_cache_clear(void)
{
	pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < CACHE_MAX; i++) {
		symtab_free(cache[i]);
		cache[i] = NULL;
	}
	cache_next = 0;
	pthread_mutex_unlock(&cache_lock);
}

/* Sort by value: a stable LSD radix sort, a byte at a time, skipping the
 * bytes that are the same in every key (most of them).  qsort's callback
 * made loading libstdc++'s table take a millisecond, and a table may be
 * loaded while a thread of the target is stopped. */
static int sort_by_value(struct sym *v, size_t n)
{
	struct sym *tmp, *src = v, *dst;

	if (n < 2)
		return 0;
	tmp = malloc(n * sizeof *v);
	if (!tmp)
		return -ENOMEM;
	dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[257] = { 0 };
		for (size_t i = 0; i < n; i++)
			count[((src[i].value >> shift) & 0xff) + 1]++;
		if (count[((src[0].value >> shift) & 0xff) + 1] == n)
			continue;               /* one bucket: already in order */
		for (size_t b = 1; b <= 256; b++)
			count[b] += count[b - 1];   /* count[b]: start of bucket b */
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].value >> shift) & 0xff]++] = src[i];
		struct sym *x = src;
		src = dst;
		dst = x;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *v);
	free(tmp);
	return 0;
}

/* Copy .dynsym (defined functions and objects) and .dynstr into t. */
static int load_dynsym(Elf *elf, struct symtab *t)
{
	Elf_Scn *scn = NULL, *dyn = NULL, *ver = NULL;
	GElf_Shdr dynsh = { 0 }, sh;
	Elf_Data *syms, *strs, *vers = NULL;
	size_t nsyms;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		if (sh.sh_type == SHT_DYNSYM && !dyn) {
			dyn = scn;
			dynsh = sh;
		} else if (sh.sh_type == SHT_GNU_versym) {
			ver = scn;
		}
	}
	if (!dyn || dynsh.sh_entsize == 0)
		return -ENOENT;         /* no dynamic symbols at all */

	syms = elf_getdata(dyn, NULL);
	scn = elf_getscn(elf, dynsh.sh_link);
	strs = scn ? elf_getdata(scn, NULL) : NULL;
	if (!syms || !strs || !strs->d_buf || strs->d_size == 0)
		return -ENOEXEC;
	if (ver)
		vers = elf_getdata(ver, NULL);

	t->strsz = strs->d_size;
	t->str = malloc(t->strsz + 1);
	nsyms = syms->d_size / dynsh.sh_entsize;
	t->v = calloc(nsyms ? nsyms : 1, sizeof *t->v);
	if (!t->str || !t->v)
		return -ENOMEM;
	memcpy(t->str, strs->d_buf, t->strsz);
	t->str[t->strsz] = '\0';        /* a last name cannot run off the end */

	for (size_t i = 1; i < nsyms; i++) {  /* entry 0 is the null symbol */
		GElf_Sym s;
		GElf_Versym vs = 0;
		int type;
		if (!gelf_getsym(syms, (int)i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF || s.st_name == 0 || s.st_name >= t->strsz ||
		    (type != STT_FUNC && type != STT_OBJECT))
			continue;
		if (vers && vers->d_buf && (i + 1) * sizeof vs <= vers->d_size)
			gelf_getversym(vers, (int)i, &vs);
		t->v[t->n].value = s.st_value;
		t->v[t->n].size = s.st_size;
		t->v[t->n].name = (uint32_t)s.st_name;
		t->v[t->n].type = (unsigned char)type;
		t->v[t->n].hidden = (vs & VERSYM_HIDDEN) != 0;
		t->n++;
	}
	return sort_by_value(t->v, t->n);
}

/* Build the table of module mod.  0 or -errno. */
static int symtab_load(pid_t pid, const struct ha_map *mod, struct symtab **out)
{
	struct symtab *t = calloc(1, sizeof *t);
	Elf *elf = NULL;
	int fd, rc;

	if (!t)
		return -ENOMEM;
	pthread_once(&elf_once, elf_init);
	if (!elf_ok) {
		free(t);
		return -ENOSYS;
	}
	fd = ha_module_file_open(pid, mod);
	if (fd < 0) {
		free(t);
		return fd;
	}
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		rc = -ENOEXEC;
		goto out;
	}
	rc = ha_elf_first_load_vaddr(elf, &t->link_base);
	if (rc == 0)
		rc = load_dynsym(elf, t);
	if (rc == 0) {
		t->path = strdup(mod->path);
		t->dev = mod->dev;
		t->inode = mod->inode;
		if (!t->path)
			rc = -ENOMEM;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (rc < 0) {
		symtab_free(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* The cached table for mod, loading it if needed.  Call with cache_lock
 * held; the table stays valid until the lock is released. */
static int symtab_get(pid_t pid, const struct ha_map *mod, struct symtab **out)
{
	struct symtab *t;
	int rc;

	if (!mod || !mod->path || mod->path[0] != '/')
		return -EINVAL;
	for (size_t i = 0; i < CACHE_MAX; i++) {
		t = cache[i];
		if (t && t->inode == mod->inode && t->dev == mod->dev &&
		    strcmp(t->path, mod->path) == 0) {
			*out = t;
			return 0;
		}
	}
	rc = symtab_load(pid, mod, &t);
	if (rc < 0)
		return rc;
	symtab_free(cache[cache_next]);
	cache[cache_next] = t;
	cache_next = (cache_next + 1) % CACHE_MAX;
	*out = t;
	return 0;
}

static uint64_t load_bias(const struct symtab *t, const struct ha_map *mod)
{
	return mod->start - t->link_base;   /* wraps correctly for ET_EXEC */
}

int ha_elf_symbol(pid_t pid, const struct ha_map *mod, const char *sym, uint64_t *addr)
{
	struct symtab *t;
	const struct sym *best = NULL;
	int rc;

	pthread_mutex_lock(&cache_lock);
	rc = symtab_get(pid, mod, &t);
	if (rc == 0) {
		for (size_t i = 0; i < t->n; i++) {
			const struct sym *s = &t->v[i];
			if (strcmp(t->str + s->name, sym) != 0)
				continue;
			/* name@@VER (the default) wins over name@OLDVER */
			if (!best || (best->hidden && !s->hidden))
				best = s;
		}
		if (best)
			*addr = load_bias(t, mod) + best->value;
		else
			rc = -ENOENT;
	}
	pthread_mutex_unlock(&cache_lock);
	return rc;
}

/* Rank of an alias as the name to show: the default version, then a
 * public name (malloc rather than __libc_malloc), then the shorter one
 * (free rather than cfree).  Lower is better. */
static size_t alias_rank(const struct symtab *t, const struct sym *s)
{
	const char *name = t->str + s->name;
	return (size_t)s->hidden * 1000000 + (size_t)(name[0] == '_') * 100000 + strlen(name);
}

/* Among the functions at the same address as t->v[i], the best name. */
static const struct sym *best_alias(const struct symtab *t, size_t i)
{
	const struct sym *best = &t->v[i];
	size_t lo = i, rank = alias_rank(t, best);

	while (lo > 0 && t->v[lo - 1].value == best->value)
		lo--;
	for (size_t j = lo; j < t->n && t->v[j].value == t->v[i].value; j++) {
		if (t->v[j].type == STT_FUNC && alias_rank(t, &t->v[j]) < rank) {
			best = &t->v[j];
			rank = alias_rank(t, best);
		}
	}
	return best;
}

int ha_elf_symbol_at(pid_t pid, const struct ha_map *mod, uint64_t addr, char *out, size_t outlen)
{
	struct symtab *t;
	int rc;

	pthread_mutex_lock(&cache_lock);
	rc = symtab_get(pid, mod, &t);
	if (rc == 0) {
		uint64_t rel = addr - load_bias(t, mod);
		rc = -ENOENT;
		/* last symbol with value <= rel */
		size_t lo = ha_count_le(t->v, t->n, sizeof *t->v, offsetof(struct sym, value), rel);
		/* Look back a little: aliases share a value, and a zero-sized or
		 * object symbol may sit between a function and the address. */
		for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++) {
			const struct sym *s = &t->v[i];
			if (s->type == STT_FUNC && rel - s->value < s->size) {
				s = best_alias(t, i);
				if (out && outlen)
					snprintf(out, outlen, "%s", t->str + s->name);
				rc = 0;
				break;
			}
		}
	}
	pthread_mutex_unlock(&cache_lock);
	return rc;
}

int ha_elf_exe_info(pid_t pid, int *elf_class, int *machine, int *has_interp)
{
	char path[64];
	Elf *elf;
	GElf_Ehdr eh;
	size_t nph;
	int fd, rc = 0;

	pthread_once(&elf_once, elf_init);
	if (!elf_ok)
		return -ENOSYS;
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	/* An executable its user may only run, not read (mode 0711), is not
	 * read for them either. */
	fd = ha_target_open(pid, path, NULL);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &nph) != 0) {
		rc = -ENOEXEC;
		goto out;
	}
	*elf_class = eh.e_ident[EI_CLASS];
	*machine = eh.e_machine;
	*has_interp = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP)
			*has_interp = 1;
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}
