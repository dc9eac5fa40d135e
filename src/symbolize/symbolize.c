/* symbolize.c -- pcs of a target to function, file:line, inlined frames and
 * demangled names with libdw's Dwfl.
 *
 * - Modules come from dwfl_linux_proc_report (the target's maps); ELF files
 *   are opened as the target sees them (through /proc/PID/map_files, or
 *   /proc/PID/root when the target lives in another mount namespace) and
 *   only as it could open them, and so is debug info: by build-id under
 *   our /usr/lib/debug (and HEAPATTACH_DEBUG_DIR's), then under the
 *   target's own (a container's), or by .gnu_debuglink (modfiles.h).  Both are opened when
 *   a module is first reported, while the target lives, so that a target
 *   that exited is still symbolized (prepare_module).  debuginfod is never
 *   asked here (no wait on the writer's thread): its cache is looked in,
 *   which a fetcher thread fills (debuginfod_fetch.h), and a module still
 *   missing its debug file is handed to the fetcher (on_missing).
 * - For each pc: module path, build-id (hex), module-relative pc (pc minus
 *   the module's load bias, i.e. the ELF virtual address a later
 *   eu-addr2line -e FILE would take), then the inline chain from DWARF,
 *   else the ELF symbol (symbolize_name.c).
 * - Results are cached per (pc, is_return_address); every string is
 *   interned in a pool that lives as long as the symbolizer (strpool.h);
 *   C++ names are demangled or, for functions without a linkage name,
 *   spelled from DWARF (dwarf_names.h). */
#define _GNU_SOURCE
#include "symbolize.h"

#include "debugcache.h"
#include "build_id.h"
#include "dwarf_names.h"
#include "modfiles.h"
#include "strpool.h"
#include "symbolize_int.h"
#include "target_fs.h"
#include "util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CHAIN 64              /* inline depth we keep per pc */
#define PC_CACHE_MAX (1u << 20)   /* entries before the cache is cleared */
#define REPORT_MIN_MS 100.0       /* re-read maps at most this often on our own */
#define PREPARE_MAX 1024          /* modules whose files are opened when reported
                                   * (~2 descriptors each); the rest when used */
#define FD_SPARE 512              /* descriptors left to everything else */

/* ------------------------------------------------------------------ pc cache */

struct pcent {            /* a slot of the pc cache (hashtab.h) */
	uint64_t pc;
	uint32_t first;          /* index into frames */
	uint16_t count;
	uint8_t is_ret;
	uint8_t used;
};

struct ha_symbolizer {
	pid_t pid;
	Dwfl *dwfl;
	Dwfl_Callbacks cb;
	char *debuginfo_path;
	char root[64];           /* "/proc/PID/root" if another mount ns, else "" */
	struct ha_maps maps;     /* the target's, as of the last report (find_elf) */
	int stale;               /* maps changed: report again before use */
	int prepared;            /* modules prepare_module opened the files of */
	int prepare_max;         /* ...at most (the descriptors they hold) */
	double report_ms;
	struct ha_strpool pool;
	struct ha_hashtab tab;   /* struct pcent by pc and is_ret (pc_type) */
	struct ha_sym_frame *frames;
	size_t fn, fcap;
	/* The debug-info cache (debugcache.h): its directory ("" = none), the
	 * files read from it, and the compressed files opened instead, to be
	 * stored when the session ends (ha_symbolizer_store_cache).  Each is
	 * held open from the moment it is noted (fd, a descriptor of our own):
	 * a session often ends because the target exited, and its files can
	 * then no longer be opened through /proc/PID/root, as they must be. */
	char cache_dir[PATH_MAX];
	int cache_hits;
	struct to_cache {
		unsigned char id[64];
		int id_len;
		char *path;
		int fd;
	} to_cache[16];
	int n_to_cache;
	ha_sym_missing_fn on_missing; /* a module lacks its debug file */
	void *missing_ctx;
	struct ha_sym_vars *vars;     /* global variables by module (symbolize_var.c) */
};

static uint64_t hash_pc(uint64_t pc, int is_ret)
{
	uint64_t h = (pc << 1 | (uint64_t)(is_ret != 0)) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static uint64_t pc_hash(const void *ctx, const void *slot)
{
	const struct pcent *e = slot;
	(void)ctx;
	return hash_pc(e->pc, e->is_ret);
}

static inline int pc_eq(const void *ctx, const void *slot, const void *key)
{
	const struct pcent *e = slot, *k = key;
	(void)ctx;
	return e->pc == k->pc && e->is_ret == k->is_ret;
}

static int pc_used(const void *slot)
{
	return ((const struct pcent *)slot)->used;
}

static const struct ha_ht_type pc_type = {
	.size = sizeof(struct pcent), .first_cap = 4096, .load = 3, .hash = pc_hash, .eq = pc_eq,
	.used = pc_used,
};

static struct pcent *cache_find(struct ha_symbolizer *s, uint64_t pc, int is_ret)
{
	struct pcent k = { .pc = pc, .is_ret = (uint8_t)(is_ret != 0) };
	struct pcent *e = ha_ht_find(&s->tab, &pc_type, NULL, hash_pc(pc, is_ret), &k);
	return e->used ? e : NULL;
}

static void cache_clear(struct ha_symbolizer *s)
{
	ha_ht_free(&s->tab);
	s->fn = 0;
}

static void cache_put(struct ha_symbolizer *s, uint64_t pc, int is_ret,
                      const struct ha_sym_frame *f, int n)
{
	if (s->tab.n >= PC_CACHE_MAX)
		cache_clear(s);
	if (ha_ht_fit(&s->tab, &pc_type, NULL) < 0)
		return;
	struct ha_sym_frame *nf = ha_grow(s->frames, &s->fcap, s->fn + (size_t)n, sizeof *nf, 8192);
	if (!nf)
		return;
	s->frames = nf;
	struct pcent *e = ha_ht_add_new(&s->tab, &pc_type, NULL, hash_pc(pc, is_ret));
	*e = (struct pcent){ pc, (uint32_t)s->fn, (uint16_t)n, (uint8_t)(is_ret != 0), 1 };
	memcpy(s->frames + s->fn, f, (size_t)n * sizeof *f);
	s->fn += (size_t)n;
}

/* ------------------------------------------------------------------ Dwfl */

/* The symbolizer whose Dwfl is in use on this thread (find_elf has no user
 * pointer to the Dwfl it serves). */
static __thread struct ha_symbolizer *cur_sym;

static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
	struct ha_symbolizer *s = cur_sym;

	/* A file: only as the target could open it (modfiles.h).  Anything
	 * else ("[vdso: PID]") libdwfl reads from the process's memory. */
	if (name[0] == '/') {
		*elfp = NULL;
		return s ? ha_modfile_open_elf(s->pid, s->root, &s->maps, mod, name, file_name) : -1;
	}
	return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
}

/* A module's debug file, opened while the target lived (prepare_module),
 * for find_debuginfo to hand to libdwfl when it first asks, which may be
 * after the target exited: a session often ends that way, and its files
 * cannot be opened through /proc/PID/... once PID is gone.  Kept in the
 * module's userdata slot; freed when the module goes (module_removed) or
 * with the symbolizer. */
struct held_debug {
	int fd;                  /* -1: none found, or handed over */
	char *name;              /* its path (handed over with fd) */
	char *link;              /* the .gnu_debuglink it was found by ("": by build-id) */
	int missing;             /* no DWARF, no debug file anywhere on this machine */
};

/* Its file closed: the module's debug file came from elsewhere. */
static void held_drop(struct held_debug *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	free(h->name);
	h->name = NULL;
}

/* The userdata of a module without code (has_code), looked at once. */
static struct held_debug no_code = { .fd = -1 };

static void held_free(struct held_debug *h)
{
	if (!h || h == &no_code)
		return;
	held_drop(h);
	free(h->link);
	free(h);
}

/* Debug files: the cached uncompressed copy if there is one, else by
 * build-id in the system directories, else by the debug link (the file
 * held since the module was reported, if any); a compressed one is noted
 * for the cache. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
                          const char *file_name, const char *debuglink_file,
                          GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct ha_symbolizer *s = cur_sym;
	const unsigned char *id = NULL;
	GElf_Addr id_vaddr;
	int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	int cache = s && s->cache_dir[0] && id_len > 0 && id_len <= 64;
	/* The file held since the module was reported, if this call is for
	 * the debug link it was found by (a dwz file's .gnu_debugaltlink
	 * comes here too, and is looked up).  Handed over, or closed when the
	 * file comes from elsewhere. */
	struct held_debug *h = userdata && *userdata != &no_code ? *userdata : NULL;
	int own = h && h->fd >= 0 && h->link && (h->link[0] ? debuglink_file &&
	          strcmp(h->link, debuglink_file) == 0 : !debuglink_file || debuglink_file[0] != '/');

	(void)modname;
	(void)base;
	*debuginfo_file_name = NULL;
	if (cache) {
		int fd = ha_debugcache_open(s->cache_dir, id, id_len, debuginfo_file_name);
		if (fd >= 0) {
			s->cache_hits++;
			if (own)
				held_drop(h);
			return fd;
		}
	}
	/* As ha_modfile_open_debug searches: by build-id in our system
	 * directories first (which needs no target), then through the target
	 * (by build-id in its root, or by the debug link), whose file was
	 * found when the module was reported. */
	int fd, by_id;
	if (!s)
		return -1;
	if (!h)
		fd = ha_modfile_open_debug(s->pid, s->root, s->debuginfo_path, mod, file_name,
		                           debuglink_file, debuglink_crc, debuginfo_file_name);
	else if ((fd = ha_modfile_open_debug_local(s->debuginfo_path, mod,
	                                           debuginfo_file_name)) >= 0) {
		if (own)
			held_drop(h);
	} else if (own) {
		fd = h->fd;
		*debuginfo_file_name = h->name;
		h->fd = -1;
		h->name = NULL;
	} else {
		fd = ha_modfile_open_debug_target(s->pid, s->root, mod, file_name, debuglink_file,
		                                  debuglink_crc, debuginfo_file_name, &by_id);
	}
	/* (A module reported again after its maps changed comes back here.) */
	for (int i = 0; cache && i < s->n_to_cache; i++)
		if (s->to_cache[i].id_len == id_len && memcmp(s->to_cache[i].id, id, (size_t)id_len) == 0)
			cache = 0;
	if (fd >= 0 && cache && *debuginfo_file_name &&
	    s->n_to_cache < (int)(sizeof s->to_cache / sizeof s->to_cache[0]) &&
	    ha_debugcache_compressed(fd)) {
		struct to_cache *t = &s->to_cache[s->n_to_cache];
		t->path = strdup(*debuginfo_file_name);
		t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		if (!t->path || t->fd < 0) {
			free(t->path);
			t->path = NULL;
			if (t->fd >= 0)
				close(t->fd);
		}
		if (t->path) {
			memcpy(t->id, id, (size_t)id_len);
			t->id_len = id_len;
			s->n_to_cache++;
		}
	}
	return fd;
}

/* Whether elf holds DWARF of its own (then libdwfl looks no further). */
static int has_dwarf(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		const char *n = elf_strptr(elf, shstrndx, sh.sh_name);
		if (n && (strcmp(n, ".debug_info") == 0 || strcmp(n, ".zdebug_info") == 0))
			return 1;
	}
	return 0;
}

/* Whether the module named name has an executable mapping in the maps:
 * the modules pcs can be in.  (libdwfl makes a module of every mapped file;
 * a data file, a memfd or a file on a hung network filesystem is opened
 * only if a pc is ever looked up in it, as before.) */
static int has_code(const struct ha_symbolizer *s, Dwfl_Module *mod, const char *name)
{
	Dwarf_Addr lo = 0, hi = 0;
	if (name[0] != '/')
		return name[0] == '[';   /* [vdso: PID]: read from memory */
	return dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL) &&
	       ha_maps_module_mapping(&s->maps, name, lo, hi, PROT_EXEC);
}

/* A module without a debug file on this machine, to whoever fetches them
 * (ha_symbolizer_on_missing). */
static void tell_missing(struct ha_symbolizer *s, Dwfl_Module *mod, const char *name)
{
	const unsigned char *id;
	GElf_Addr id_vaddr;
	int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	if (s->on_missing && id_len > 0 && id_len <= 64)
		s->on_missing(s->missing_ctx, name, id, id_len);
}

static int replay_missing(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                          void *arg)
{
	struct held_debug *h = *userdata;
	(void)start;
	if (h && h != &no_code && h->missing)
		tell_missing(arg, mod, name);
	return DWARF_CB_OK;
}

void ha_symbolizer_on_missing(struct ha_symbolizer *s, ha_sym_missing_fn fn, void *ctx)
{
	if (!s)
		return;
	s->on_missing = fn;
	s->missing_ctx = ctx;
	if (fn && s->dwfl)
		dwfl_getmodules(s->dwfl, replay_missing, s, 0);
}

/* A module reported for the first time: its files are opened now, while
 * the target lives -- the ELF file (libdwfl keeps it) and the debug file
 * (held_debug) -- not when a pc in it is first symbolized, which may be
 * after the target exited (the stacks of its last moments reach the
 * writer after it, all the more while the database is created). */
static int prepare_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                          void *arg)
{
	struct ha_symbolizer *s = arg;
	Dwarf_Addr bias;
	(void)start;
	if (*userdata || s->prepared >= s->prepare_max)
		return DWARF_CB_OK;     /* reported before, unchanged; or too many */
	if (!has_code(s, mod, name)) {
		*userdata = &no_code;
		return DWARF_CB_OK;
	}
	struct held_debug *h = calloc(1, sizeof *h);
	if (!h)
		return DWARF_CB_OK;
	h->fd = -1;
	*userdata = h;
	s->prepared++;
	Elf *elf = dwfl_module_getelf(mod, &bias);
	if (!elf || name[0] != '/' || has_dwarf(elf))
		return DWARF_CB_OK;
	const char *mainfile = NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, &mainfile, NULL);
	GElf_Word crc = 0;
	const char *link = dwelf_elf_gnu_debuglink(elf, &crc);
	int by_id;
	h->fd = ha_modfile_open_debug_target(s->pid, s->root, mod, mainfile, link, crc, &h->name,
	                                     &by_id);
	if (h->fd >= 0 && !(h->link = strdup(by_id ? "" : link)))  /* (found by link: it is set) */
		held_drop(h);
	if (h->fd < 0) {
		char *local = NULL;
		int fd = ha_modfile_open_debug_local(s->debuginfo_path, mod, &local);
		if (fd >= 0)
			close(fd);
		free(local);
		h->missing = fd < 0;
		if (h->missing)
			tell_missing(s, mod, name);
	}
	return DWARF_CB_OK;
}

/* (libdwfl passes the module's userdata slot, a void **, as its void *.) */
static int module_removed(Dwfl_Module *mod, void *slot, const char *name, Dwarf_Addr base,
                          void *arg)
{
	void **userdata = slot;
	struct ha_symbolizer *s = arg;
	(void)mod;
	(void)name;
	(void)base;
	if (*userdata && *userdata != &no_code)
		s->prepared--;
	held_free(*userdata);
	*userdata = NULL;
	return DWARF_CB_OK;
}

static int module_free_held(Dwfl_Module *mod, void **userdata, const char *name,
                            Dwarf_Addr start, void *arg)
{
	(void)mod;
	(void)name;
	(void)start;
	(void)arg;
	held_free(*userdata);
	*userdata = NULL;
	return DWARF_CB_OK;
}

/* The modules as they are before a report (kept_add), to be reported
 * again if the target exits during it. */
struct kept {
	struct kept_mod {
		char *name;
		Dwarf_Addr lo, hi;
	} *v;
	size_t n, cap;
};

static int kept_add(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                    void *arg)
{
	struct kept *k = arg;
	Dwarf_Addr lo = 0, hi = 0;
	(void)userdata;
	(void)start;
	if (!dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL))
		return DWARF_CB_OK;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		struct kept_mod *v = realloc(k->v, cap * sizeof *v);
		if (!v)
			return DWARF_CB_ABORT;
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n].name = strdup(name);
	if (!k->v[k->n].name)
		return DWARF_CB_ABORT;
	k->v[k->n].lo = lo;
	k->v[k->n++].hi = hi;
	return DWARF_CB_OK;
}

static void kept_free(struct kept *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i].name);
	free(k->v);
}

static int report(struct ha_symbolizer *s)
{
	char path[64], probe[2];
	int rc;

	s->report_ms = ha_now_ms();
	s->stale = 0;
	/* A process that exited (or a zombie: empty maps) would leave us with
	 * no modules at all: keep the ones we have. */
	snprintf(path, sizeof path, "/proc/%d/maps", (int)s->pid);
	if (ha_read_file(path, probe, sizeof probe) <= 0)
		return ESRCH;
	struct kept kept = { 0 };
	int have_kept = dwfl_getmodules(s->dwfl, kept_add, &kept, 0) == 0;
	dwfl_report_begin(s->dwfl);
	rc = dwfl_linux_proc_report(s->dwfl, s->pid);
	/* The maps find_elf opens the reported modules' files by (read after
	 * the report: a module mapped in between is in both).  If they cannot
	 * be read, the target exited during the report, which may then have
	 * found nothing: the modules we had are reported again (each the same
	 * module, with its files), not dropped. */
	struct ha_maps maps = { 0 };
	int alive = ha_maps_read(s->pid, &maps) == 0 && maps.n > 0;
	if (!alive && have_kept)
		for (size_t i = 0; i < kept.n; i++)
			(void)dwfl_report_module(s->dwfl, kept.v[i].name, kept.v[i].lo, kept.v[i].hi);
	kept_free(&kept);
	/* Modules reported again unchanged keep their loaded ELF and DWARF. */
	if (dwfl_report_end(s->dwfl, module_removed, s) != 0 && rc == 0)
		rc = -1;
	if (alive) {
		ha_maps_free(&s->maps);
		s->maps = maps;
	} else {
		ha_maps_free(&maps);
		return ESRCH;
	}
	if (rc == 0)
		dwfl_getmodules(s->dwfl, prepare_module, s, 0);
	return rc;
}

/* "/proc/PID/root" if the target sees another filesystem than we do
 * (another mount namespace or root directory): paths in its maps are then
 * looked up through it. */
static void set_root(struct ha_symbolizer *s)
{
	struct stat a, b;
	char p[64];
	int other = 0;

	s->root[0] = '\0';
	snprintf(p, sizeof p, "/proc/%d/ns/mnt", (int)s->pid);
	if (stat(p, &a) == 0 && stat("/proc/self/ns/mnt", &b) == 0)
		other = a.st_dev != b.st_dev || a.st_ino != b.st_ino;
	snprintf(p, sizeof p, "/proc/%d/root", (int)s->pid);
	if (stat(p, &a) == 0 && stat("/", &b) == 0)
		other |= a.st_dev != b.st_dev || a.st_ino != b.st_ino;
	if (other)
		snprintf(s->root, sizeof s->root, "%s", p);
}

struct ha_symbolizer *ha_symbolizer_new(pid_t pid, char *err, size_t errlen)
{
	struct ha_symbolizer *s = calloc(1, sizeof *s);
	int rc;

	if (!s) {
		ha_err(err, errlen, "out of memory");
		return NULL;
	}
	s->pid = pid;
	/* Within the descriptors left (--rss may have taken most of them). */
	long budget = ((long)ha_raise_fd_limit() - (long)ha_open_fd_count() - FD_SPARE) / 2;
	s->prepare_max = budget < 0 ? 0 : budget > PREPARE_MAX ? PREPARE_MAX : (int)budget;
	set_root(s);
	s->cb.find_elf = find_elf;
	s->cb.find_debuginfo = find_debuginfo;
	if (!ha_debugcache_dir(s->cache_dir, sizeof s->cache_dir))
		s->cache_dir[0] = '\0';
	s->debuginfo_path = ha_modfile_debug_path();  /* NULL: the default path */
	s->cb.debuginfo_path = &s->debuginfo_path;
	s->dwfl = dwfl_begin(&s->cb);
	if (!s->dwfl) {
		ha_err(err, errlen, "dwfl_begin: %s", dwfl_errmsg(-1));
		free(s);
		return NULL;
	}
	cur_sym = s;
	rc = report(s);
	/* (A target that exited during the report may have left modules.) */
	if (rc == ESRCH && ha_symbolizer_modules(s, NULL) > 0)
		rc = 0;
	if (rc != 0) {
		if (rc > 0)
			ha_err(err, errlen, "cannot report the modules of %d: %s", (int)pid, strerror(rc));
		else
			ha_err(err, errlen, "cannot report the modules of %d: %s", (int)pid,
			       dwfl_errmsg(-1));
		ha_symbolizer_free(s);
		return NULL;
	}
	return s;
}

void ha_symbolizer_free(struct ha_symbolizer *s)
{
	if (!s)
		return;
	if (cur_sym == s)
		cur_sym = NULL;
	if (s->dwfl) {
		dwfl_getmodules(s->dwfl, module_free_held, NULL, 0);
		dwfl_end(s->dwfl);
	}
	ha_maps_free(&s->maps);
	free(s->debuginfo_path);
	cache_clear(s);
	for (int i = 0; i < s->n_to_cache; i++) {
		free(s->to_cache[i].path);
		close(s->to_cache[i].fd);
	}
	free(s->frames);
	ha_sym_vars_free(s->vars);
	ha_strpool_free(&s->pool);
	free(s);
}

static int count_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                        void *arg)
{
	(void)mod;
	(void)userdata;
	(void)name;
	(void)start;
	++*(int *)arg;
	return DWARF_CB_OK;
}

int ha_symbolizer_modules(struct ha_symbolizer *s, int *prepared)
{
	int n = 0;
	if (s && s->dwfl)
		dwfl_getmodules(s->dwfl, count_module, &n, 0);
	if (prepared)
		*prepared = s ? s->prepared : 0;
	return n;
}

void ha_symbolizer_store_cache(struct ha_symbolizer *s, int verbose)
{
	if (!s || (!s->n_to_cache && !s->cache_hits))
		return;
	double t0 = ha_now_ms();
	int stored = 0;
	for (int i = 0; i < s->n_to_cache; i++) {
		char err[PATH_MAX + 100];
		struct to_cache *t = &s->to_cache[i];
		/* Held since it was opened, with the target's rights. */
		int rc = ha_debugcache_store(s->cache_dir, t->id, t->id_len, t->fd, t->path, err,
		                             sizeof err);
		if (rc == 0)
			stored++;
		else if (verbose)
			fprintf(stderr, "heapattach: debug info cache: %s\n", err);
	}
	if (verbose)
		fprintf(stderr,
		        "heapattach: debug info cache %s: %d files read from it, %d stored in %.1f ms\n",
		        s->cache_dir, s->cache_hits, stored, ha_now_ms() - t0);
}

void ha_symbolizer_maps_changed(struct ha_symbolizer *s)
{
	if (s)
		s->stale = 1;
}

static int lookup(struct ha_symbolizer *s, uint64_t pc, int is_ret, struct ha_sym_frame *f,
                  int max)
{
	Dwarf_Addr addr = is_ret && pc > 0 ? pc - 1 : pc;
	Dwfl_Module *mod;
	const char *name;
	Dwarf_Addr start = 0, bias = 0;
	const unsigned char *bid;
	GElf_Addr bid_vaddr;
	int blen;

	f[0] = (struct ha_sym_frame){ "", "", pc, "", "", 0, 0 };
	mod = dwfl_addrmodule(s->dwfl, addr);
	if (!mod && ha_now_ms() - s->report_ms >= REPORT_MIN_MS) {
		/* mapped since we last looked (dlopen)? */
		report(s);
		mod = dwfl_addrmodule(s->dwfl, addr);
	}
	if (!mod)
		return -1;      /* unknown: not cached, it may be mapped later */

	name = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	if (name && strncmp(name, "[vdso", 5) == 0)
		name = "[vdso]";
	f[0].module = ha_strpool_intern(&s->pool, name);
	if (dwfl_module_getelf(mod, &bias))
		f[0].rel_pc = pc - bias;
	else
		f[0].rel_pc = pc - start;
	blen = dwfl_module_build_id(mod, &bid, &bid_vaddr);
	char hex[129];
	if (ha_build_id_hex(bid, blen, hex, sizeof hex) == 0)
		f[0].build_id = ha_strpool_intern(&s->pool, hex);
	return ha_sym_name_in(&s->pool, mod, addr, f, max);
}

/* The module holding addr, else the one holding also (an address of the
 * same module: a .bss past the file's mappings is in no module libdwfl
 * reports); the modules reported again first if they changed. */
static Dwfl_Module *module_at(struct ha_symbolizer *s, uint64_t addr, uint64_t also)
{
	if (!s || !s->dwfl)
		return NULL;
	cur_sym = s;
	if (s->stale) {
		report(s);
		cache_clear(s);
	}
	for (int again = 0; again < 2; again++) {
		Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
		if (!mod && also)
			mod = dwfl_addrmodule(s->dwfl, also);
		if (mod || again || ha_now_ms() - s->report_ms < REPORT_MIN_MS)
			return mod;
		report(s);   /* mapped since we last looked (dlopen)? */
	}
	return NULL;
}

int ha_symbolize_var(struct ha_symbolizer *s, uint64_t addr, uint64_t module_addr,
                     const char **name, const char **file, int *line)
{
	*name = *file = "";
	*line = 0;
	Dwfl_Module *mod = module_at(s, addr, module_addr);
	return mod ? ha_sym_var_in(&s->vars, &s->pool, mod, addr, 0, name, file, line) : -1;
}

const char *ha_symbolize_demangle(struct ha_symbolizer *s, const char *name)
{
	return s && name ? ha_demangled_name(&s->pool, name) : "";
}

int ha_symbolize_tls_var(struct ha_symbolizer *s, uint64_t module_addr, uint64_t off,
                         const char **name, const char **file, int *line)
{
	*name = *file = "";
	*line = 0;
	Dwfl_Module *mod = module_at(s, module_addr, 0);
	return mod ? ha_sym_var_in(&s->vars, &s->pool, mod, off, 1, name, file, line) : -1;
}

int ha_symbolize(struct ha_symbolizer *s, uint64_t pc, int is_return_address,
                 struct ha_sym_frame *out, int max)
{
	struct ha_sym_frame f[MAX_CHAIN];
	struct pcent *e;
	int n;

	if (!s || !out || max <= 0)
		return 0;
	cur_sym = s;
	if (s->stale) {
		report(s);
		cache_clear(s);
	}
	e = cache_find(s, pc, is_return_address);
	if (e) {
		n = e->count < max ? e->count : max;
		memcpy(out, s->frames + e->first, (size_t)n * sizeof *out);
		return n;
	}
	n = lookup(s, pc, is_return_address, f, MAX_CHAIN);
	if (n < 0) {
		out[0] = f[0];
		return 1;
	}
	cache_put(s, pc, is_return_address, f, n);
	if (n > max)
		n = max;
	memcpy(out, f, (size_t)n * sizeof *out);
	return n;
}
