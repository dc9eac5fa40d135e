/* symbolize.c -- pcs of a target to function, file:line, inlined frames and
 * demangled names with libdw's Dwfl.
 *
 * - Modules come from dwfl_linux_proc_report (the target's maps); ELF files
 *   are opened as the target sees them (through /proc/PID/root when the
 *   target lives in another mount namespace), debug info is found by
 *   dwfl_standard_find_debuginfo (.gnu_debuglink, /usr/lib/debug,
 *   build-id).  debuginfod is never asked: DEBUGINFOD_URLS is removed from
 *   the environment when the first symbolizer is created.
 * - For each pc: module path, build-id (hex), module-relative pc (pc minus
 *   the module's load bias, i.e. the ELF virtual address a later
 *   eu-addr2line -e FILE would take), then the inline chain from DWARF
 *   (dwarf_getscopes + dwarf_getscopes_die, as eu-addr2line -i does): the
 *   innermost frame takes its file:line from the line table, each outer one
 *   the DW_AT_call_file/call_line of the inlined instance it contains.
 *   Without DWARF the ELF symbol table names the function.
 * - Results are cached per (pc, is_return_address); every string is
 *   interned in a pool that lives as long as the symbolizer. */
#define _GNU_SOURCE
#include "symbolize.h"

#include "debugcache.h"
#include "util.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* libstdc++'s demangler (C linkage, declared in <cxxabi.h> for C++). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define MAX_CHAIN 64              /* inline depth we keep per pc */
#define PC_CACHE_MAX (1u << 20)   /* entries before the cache is cleared */
#define REPORT_MIN_MS 100.0       /* re-read maps at most this often on our own */

/* ------------------------------------------------------------------ strings */

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

struct strpool {
	struct chunk *chunks;
	const char **slots;      /* open addressing, NULL = free */
	size_t cap, n;
};

static uint64_t hash_str(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;       /* FNV-1a */
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static char *pool_alloc(struct strpool *p, size_t len)
{
	struct chunk *c = p->chunks;
	if (!c || c->cap - c->used < len) {
		size_t cap = len > 65536 ? len : 65536;
		c = malloc(sizeof *c + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = p->chunks;
		p->chunks = c;
	}
	c->used += len;
	return c->data + c->used - len;
}

static int pool_grow(struct strpool *p)
{
	size_t ncap = p->cap ? p->cap * 2 : 1024;
	const char **ns = calloc(ncap, sizeof *ns);
	if (!ns)
		return -1;
	for (size_t i = 0; i < p->cap; i++) {
		const char *s = p->slots[i];
		if (!s)
			continue;
		size_t j = hash_str(s, strlen(s)) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = s;
	}
	free(p->slots);
	p->slots = ns;
	p->cap = ncap;
	return 0;
}

/* The interned copy of s (never NULL: "" on failure or for NULL). */
static const char *intern(struct strpool *p, const char *s)
{
	size_t len, j;
	char *d;

	if (!s || !*s)
		return "";
	len = strlen(s);
	if ((p->n + 1) * 2 > p->cap && pool_grow(p) != 0)
		return "";
	j = hash_str(s, len) & (p->cap - 1);
	while (p->slots[j]) {
		if (strcmp(p->slots[j], s) == 0)
			return p->slots[j];
		j = (j + 1) & (p->cap - 1);
	}
	d = pool_alloc(p, len + 1);
	if (!d)
		return "";
	memcpy(d, s, len + 1);
	p->slots[j] = d;
	p->n++;
	return d;
}

static void pool_free(struct strpool *p)
{
	while (p->chunks) {
		struct chunk *c = p->chunks;
		p->chunks = c->next;
		free(c);
	}
	free(p->slots);
	memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------ pc cache */

struct pcent {
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
	int stale;               /* maps changed: report again before use */
	double report_ms;
	struct strpool pool;
	struct pcent *tab;
	size_t tcap, tn;
	struct ha_sym_frame *frames;
	size_t fn, fcap;
	/* The debug-info cache (debugcache.h): its directory ("" = none), the
	 * files read from it, and the compressed files opened instead, to be
	 * stored when the session ends (ha_symbolizer_store_cache). */
	char cache_dir[PATH_MAX];
	int cache_hits;
	struct to_cache {
		unsigned char id[64];
		int id_len;
		char *path;
	} to_cache[16];
	int n_to_cache;
};

static uint64_t hash_pc(uint64_t pc, int is_ret)
{
	uint64_t h = (pc << 1 | (uint64_t)(is_ret != 0)) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static struct pcent *cache_find(struct ha_symbolizer *s, uint64_t pc, int is_ret)
{
	if (!s->tcap)
		return NULL;
	for (size_t j = hash_pc(pc, is_ret) & (s->tcap - 1);; j = (j + 1) & (s->tcap - 1)) {
		struct pcent *e = &s->tab[j];
		if (!e->used)
			return NULL;
		if (e->pc == pc && e->is_ret == (is_ret != 0))
			return e;
	}
}

static void cache_clear(struct ha_symbolizer *s)
{
	free(s->tab);
	s->tab = NULL;
	s->tcap = s->tn = 0;
	s->fn = 0;
}

static int cache_grow(struct ha_symbolizer *s)
{
	size_t ncap = s->tcap ? s->tcap * 2 : 4096;
	struct pcent *nt = calloc(ncap, sizeof *nt);
	if (!nt)
		return -1;
	for (size_t i = 0; i < s->tcap; i++) {
		struct pcent *e = &s->tab[i];
		if (!e->used)
			continue;
		size_t j = hash_pc(e->pc, e->is_ret) & (ncap - 1);
		while (nt[j].used)
			j = (j + 1) & (ncap - 1);
		nt[j] = *e;
	}
	free(s->tab);
	s->tab = nt;
	s->tcap = ncap;
	return 0;
}

static void cache_put(struct ha_symbolizer *s, uint64_t pc, int is_ret,
                      const struct ha_sym_frame *f, int n)
{
	if (s->tn >= PC_CACHE_MAX)
		cache_clear(s);
	if ((s->tn + 1) * 4 > s->tcap * 3 && cache_grow(s) != 0)
		return;
	if (s->fn + (size_t)n > s->fcap) {
		size_t ncap = s->fcap ? s->fcap * 2 : 8192;
		while (ncap < s->fn + (size_t)n)
			ncap *= 2;
		struct ha_sym_frame *nf = realloc(s->frames, ncap * sizeof *nf);
		if (!nf)
			return;
		s->frames = nf;
		s->fcap = ncap;
	}
	size_t j = hash_pc(pc, is_ret) & (s->tcap - 1);
	while (s->tab[j].used)
		j = (j + 1) & (s->tcap - 1);
	s->tab[j] = (struct pcent){ pc, (uint32_t)s->fn, (uint16_t)n, (uint8_t)(is_ret != 0), 1 };
	memcpy(s->frames + s->fn, f, (size_t)n * sizeof *f);
	s->fn += (size_t)n;
	s->tn++;
}

/* ------------------------------------------------------------------ Dwfl */

/* The symbolizer whose Dwfl is in use on this thread (find_elf has no user
 * pointer to the Dwfl it serves). */
static __thread struct ha_symbolizer *cur_sym;

static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
                    char **file_name, Elf **elfp)
{
	struct ha_symbolizer *s = cur_sym;

	if (s && s->root[0] && name[0] == '/' && !strstr(name, " (deleted)")) {
		char path[PATH_MAX];
		struct stat st;
		if (snprintf(path, sizeof path, "%s%s", s->root, name) < (int)sizeof path &&
		    stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd >= 0) {
				*file_name = strdup(path);
				*elfp = NULL;
				return fd;
			}
		}
	}
	return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
}

/* Debug files: the cached uncompressed copy if there is one, else where
 * libdwfl finds them; a compressed one is noted for the cache. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
                          const char *file_name, const char *debuglink_file,
                          GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct ha_symbolizer *s = cur_sym;
	const unsigned char *id = NULL;
	GElf_Addr id_vaddr;
	int id_len = dwfl_module_build_id(mod, &id, &id_vaddr);
	int cache = s && s->cache_dir[0] && id_len > 0 && id_len <= 64;

	if (cache) {
		int fd = ha_debugcache_open(s->cache_dir, id, id_len, debuginfo_file_name);
		if (fd >= 0) {
			s->cache_hits++;
			return fd;
		}
	}
	int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
	                                      debuglink_crc, debuginfo_file_name);
	/* (A module reported again after its maps changed comes back here.) */
	for (int i = 0; cache && i < s->n_to_cache; i++)
		if (s->to_cache[i].id_len == id_len && memcmp(s->to_cache[i].id, id, (size_t)id_len) == 0)
			cache = 0;
	if (fd >= 0 && cache && *debuginfo_file_name &&
	    s->n_to_cache < (int)(sizeof s->to_cache / sizeof s->to_cache[0]) &&
	    ha_debugcache_compressed(fd)) {
		struct to_cache *t = &s->to_cache[s->n_to_cache];
		t->path = strdup(*debuginfo_file_name);
		if (t->path) {
			memcpy(t->id, id, (size_t)id_len);
			t->id_len = id_len;
			s->n_to_cache++;
		}
	}
	return fd;
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
	dwfl_report_begin(s->dwfl);
	rc = dwfl_linux_proc_report(s->dwfl, s->pid);
	/* Modules reported again unchanged keep their loaded ELF and DWARF. */
	if (dwfl_report_end(s->dwfl, NULL, NULL) != 0 && rc == 0)
		rc = -1;
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
	/* Never fetch debug info over the network (and never wait for it). */
	if (getenv("DEBUGINFOD_URLS"))
		unsetenv("DEBUGINFOD_URLS");
	s->pid = pid;
	set_root(s);
	s->cb.find_elf = find_elf;
	s->cb.find_debuginfo = find_debuginfo;
	if (!ha_debugcache_dir(s->cache_dir, sizeof s->cache_dir))
		s->cache_dir[0] = '\0';
	s->cb.debuginfo_path = &s->debuginfo_path;  /* NULL: the default path */
	s->dwfl = dwfl_begin(&s->cb);
	if (!s->dwfl) {
		ha_err(err, errlen, "dwfl_begin: %s", dwfl_errmsg(-1));
		free(s);
		return NULL;
	}
	cur_sym = s;
	rc = report(s);
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
	if (s->dwfl)
		dwfl_end(s->dwfl);
	cache_clear(s);
	for (int i = 0; i < s->n_to_cache; i++)
		free(s->to_cache[i].path);
	free(s->frames);
	pool_free(&s->pool);
	free(s);
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
		if (ha_debugcache_store(s->cache_dir, t->id, t->id_len, t->path, err, sizeof err) == 0)
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

/* ------------------------------------------------------------------ names */

/* Demangle (C++ names start with _Z) and intern.  A " [clone .xxx]" suffix
 * (GCC's specialised copies) is dropped so that every copy of a function
 * has one name. */
static const char *intern_name(struct ha_symbolizer *s, const char *name)
{
	if (name && name[0] == '_' && name[1] == 'Z') {
		int status = -1;
		char *d = __cxa_demangle(name, NULL, NULL, &status);
		if (d && status == 0) {
			char *c = strstr(d, " [clone ");
			if (c)
				*c = '\0';
			const char *r = intern(&s->pool, d);
			free(d);
			return r;
		}
		free(d);
	}
	return intern(&s->pool, name);
}

/* A growing string; bad is set when something cannot be spelled the way
 * the demangler would. */
struct sbuf {
	char b[1024];
	size_t len;
	int bad;
};

static void sb_add(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (b->len + n >= sizeof b->b) {
		b->bad = 1;
		return;
	}
	memcpy(b->b + b->len, s, n + 1);
	b->len += n;
}

static Dwarf_Die *ref_attr(Dwarf_Die *die, unsigned name, Dwarf_Die *mem)
{
	Dwarf_Attribute a;
	return dwarf_formref_die(dwarf_attr(die, name, &a), mem);
}

/* "ns::Class<int>::" for the scopes that contain die. */
static void add_scope_prefix(struct sbuf *b, Dwarf_Die *die)
{
	Dwarf_Die *sc = NULL;
	int n = dwarf_getscopes_die(die, &sc);

	for (int i = n - 1; i >= 1; i--) {
		int tag = dwarf_tag(&sc[i]);
		const char *name = dwarf_diename(&sc[i]);
		if (tag == DW_TAG_compile_unit || tag == DW_TAG_partial_unit ||
		    tag == DW_TAG_type_unit || tag == DW_TAG_lexical_block)
			continue;
		if (tag == DW_TAG_namespace) {
			sb_add(b, name ? name : "(anonymous namespace)");
		} else if ((tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		            tag == DW_TAG_union_type || tag == DW_TAG_enumeration_type) && name) {
			sb_add(b, name);
		} else {
			b->bad = 1;     /* local classes, unnamed types, ... */
			break;
		}
		sb_add(b, "::");
	}
	if (n < 0)
		b->bad = 1;
	free(sc);
}

/* DWARF base type names as the demangler spells them. */
static const char *base_type_name(const char *n)
{
	static const char *const map[][2] = {
		{ "long int", "long" },
		{ "long unsigned int", "unsigned long" },
		{ "short int", "short" },
		{ "short unsigned int", "unsigned short" },
		{ "long long int", "long long" },
		{ "long long unsigned int", "unsigned long long" },
		{ "__int128 unsigned", "unsigned __int128" },
		{ "_Bool", "bool" },
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (strcmp(n, map[i][0]) == 0)
			return map[i][1];
	return n;
}

/* A parameter type in the demangler's spelling ("char const*"). */
static void add_type(struct sbuf *b, Dwarf_Die *t, int depth)
{
	Dwarf_Die mem, *in;
	const char *name;

	if (depth > 12 || b->bad) {
		b->bad = 1;
		return;
	}
	in = ref_attr(t, DW_AT_type, &mem);
	switch (dwarf_tag(t)) {
	case DW_TAG_base_type:
		name = dwarf_diename(t);
		if (!name)
			b->bad = 1;
		else
			sb_add(b, base_type_name(name));
		return;
	case DW_TAG_typedef:        /* mangled names see through typedefs */
		if (in)
			add_type(b, in, depth + 1);
		else
			b->bad = 1;
		return;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		if (in)
			add_type(b, in, depth + 1);
		else
			sb_add(b, "void");
		switch (dwarf_tag(t)) {
		case DW_TAG_const_type: sb_add(b, " const"); break;
		case DW_TAG_volatile_type: sb_add(b, " volatile"); break;
		case DW_TAG_pointer_type: sb_add(b, "*"); break;
		case DW_TAG_reference_type: sb_add(b, "&"); break;
		default: sb_add(b, "&&"); break;
		}
		return;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
	case DW_TAG_enumeration_type:
		name = dwarf_diename(t);
		if (!name) {
			b->bad = 1;
			return;
		}
		add_scope_prefix(b, t);
		sb_add(b, name);
		return;
	default:                    /* arrays, function pointers, ... */
		b->bad = 1;
		return;
	}
}

/* The declaration a function DIE stands for: through abstract_origin and
 * specification (an out-of-class member definition points at the
 * declaration inside its class). */
static void decl_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Die cur = *die, next;
	for (int i = 0; i < 8; i++) {
		if (ref_attr(&cur, DW_AT_abstract_origin, &next) ||
		    ref_attr(&cur, DW_AT_specification, &next))
			cur = next;
		else
			break;
	}
	*out = cur;
}

/* C++ function without a linkage name (internal linkage: static, anonymous
 * namespace): "ns::Class::name(type, type) const" from DWARF, as the
 * demangler would print it; NULL if some part cannot be spelled. */
static const char *cxx_qualified_name(struct ha_symbolizer *s, Dwarf_Die *die)
{
	struct sbuf b = { .len = 0, .bad = 0 };
	Dwarf_Die decl, child, mem;
	const char *name, *suffix = "";
	int first = 1;

	decl_of(die, &decl);
	name = dwarf_diename(&decl);
	if (!name)
		return NULL;
	b.b[0] = '\0';
	add_scope_prefix(&b, &decl);
	sb_add(&b, name);
	sb_add(&b, "(");
	if (dwarf_child(&decl, &child) == 0) {
		do {
			int tag = dwarf_tag(&child);
			Dwarf_Attribute a;
			bool art = false;
			if (tag == DW_TAG_unspecified_parameters) {
				sb_add(&b, first ? "..." : ", ...");
				first = 0;
				continue;
			}
			if (tag != DW_TAG_formal_parameter)
				continue;
			Dwarf_Die *t = ref_attr(&child, DW_AT_type, &mem);
			if (dwarf_formflag(dwarf_attr(&child, DW_AT_artificial, &a), &art) == 0 && art) {
				/* "this": a pointer to const makes a const member */
				Dwarf_Die cm, *pt = t ? ref_attr(t, DW_AT_type, &cm) : NULL;
				if (pt && dwarf_tag(pt) == DW_TAG_const_type)
					suffix = " const";
				continue;
			}
			if (!t) {
				b.bad = 1;
				break;
			}
			/* top-level cv-qualifiers are not part of the signature */
			while (t && (dwarf_tag(t) == DW_TAG_const_type ||
			             dwarf_tag(t) == DW_TAG_volatile_type))
				t = ref_attr(t, DW_AT_type, t);
			if (!first)
				sb_add(&b, ", ");
			first = 0;
			if (t)
				add_type(&b, t, 0);
			else
				b.bad = 1;
		} while (!b.bad && dwarf_siblingof(&child, &child) == 0);
	}
	sb_add(&b, ")");
	sb_add(&b, suffix);
	return b.bad ? NULL : intern(&s->pool, b.b);
}

/* Name of a function DIE: its linkage name demangled; for C++ without one,
 * sym (the ELF symbol at the address, for an out-of-line frame) or the
 * DWARF-built signature; else DW_AT_name. */
static const char *die_name(struct ha_symbolizer *s, Dwarf_Die *die, int is_cxx, const char *sym)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (n)
		return intern_name(s, n);
	if (is_cxx) {
		const char *q;
		if (sym && sym[0] == '_' && sym[1] == 'Z')
			return intern_name(s, sym);
		/* main, extern "C": the plain name is the whole name */
		if (!sym && !dwarf_hasattr_integrate(die, DW_AT_external)) {
			q = cxx_qualified_name(s, die);
			if (q)
				return q;
		}
	}
	n = dwarf_diename(die);
	return n ? intern_name(s, n) : "";
}

static int is_func_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* Fill f[0..] with the inline chain at addr from DWARF, innermost first.
 * f[*] already hold module/build_id/rel_pc in f[0].  Returns the count, 0
 * if there is no DWARF function at addr. */
static int dwarf_chain(struct ha_symbolizer *s, Dwfl_Module *mod, Dwarf_Addr addr,
                       const char *file0, int line0, const char *sym, struct ha_sym_frame *f,
                       int max)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(mod, addr, &bias);
	Dwarf_Die *scopes = NULL, die0;
	Dwarf_Files *files = NULL;
	const char *file = file0;
	int line = line0, n = 0, ns, i, lang, is_cxx;

	if (!cudie)
		return 0;
	lang = dwarf_srclang(cudie);
	is_cxx = lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	         lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14 ||
	         lang == 0x2a || lang == 0x2b;   /* C++17, C++20 (DWARF 6) */
	ns = dwarf_getscopes(cudie, addr - bias, &scopes);
	if (ns <= 0) {
		free(scopes);
		return 0;
	}
	/* The physical nesting of the innermost scope (eu-addr2line -i). */
	die0 = scopes[0];
	free(scopes);
	scopes = NULL;
	ns = dwarf_getscopes_die(&die0, &scopes);
	if (ns <= 0) {
		free(scopes);
		return 0;
	}
	if (dwarf_getsrcfiles(cudie, &files, NULL) != 0)
		files = NULL;
	for (i = 0; i < ns && n < max; i++) {
		Dwarf_Die *d = &scopes[i];
		Dwarf_Attribute a;
		Dwarf_Word v;
		int tag = dwarf_tag(d);

		if (!is_func_tag(tag))
			continue;
		f[n] = f[0];
		f[n].function = die_name(s, d, is_cxx,
		                         tag == DW_TAG_inlined_subroutine ? NULL : sym);
		f[n].file = intern(&s->pool, file);
		f[n].line = line;
		f[n].inlined = tag == DW_TAG_inlined_subroutine;
		n++;
		if (tag != DW_TAG_inlined_subroutine)
			break;
		/* the next (outer) frame is where this instance was inlined */
		file = NULL;
		line = 0;
		if (files && dwarf_formudata(dwarf_attr(d, DW_AT_call_file, &a), &v) == 0)
			file = dwarf_filesrc(files, (size_t)v, NULL, NULL);
		if (dwarf_formudata(dwarf_attr(d, DW_AT_call_line, &a), &v) == 0 && v <= 0x7fffffff)
			line = (int)v;
	}
	/* Scopes exhausted without an enclosing function (odd DWARF): the last
	 * frame is not inlined into anything we know of. */
	if (n > 0 && i >= ns)
		f[n - 1].inlined = 0;
	free(scopes);
	return n;
}

static int lookup(struct ha_symbolizer *s, uint64_t pc, int is_ret, struct ha_sym_frame *f,
                  int max)
{
	Dwarf_Addr addr = is_ret && pc > 0 ? pc - 1 : pc;
	Dwfl_Module *mod;
	const char *name, *file = NULL, *sname;
	Dwarf_Addr start = 0, bias = 0;
	GElf_Off off = 0;
	GElf_Sym sym;
	const unsigned char *bid;
	GElf_Addr bid_vaddr;
	Dwfl_Line *ln;
	int line = 0, n, blen;

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
	f[0].module = intern(&s->pool, name);
	if (dwfl_module_getelf(mod, &bias))
		f[0].rel_pc = pc - bias;
	else
		f[0].rel_pc = pc - start;
	blen = dwfl_module_build_id(mod, &bid, &bid_vaddr);
	if (blen > 0 && blen <= 64) {
		char hex[129];
		for (int i = 0; i < blen; i++)
			snprintf(hex + 2 * i, 3, "%02x", bid[i]);
		f[0].build_id = intern(&s->pool, hex);
	}

	ln = dwfl_module_getsrc(mod, addr);
	if (ln)
		file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);
	if (!file)
		line = 0;

	/* The ELF symbol covering addr (.symtab from the file or its debug
	 * file, else .dynsym). */
	sname = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (sname && sym.st_size > 0 && off >= sym.st_size)
		sname = NULL;

	n = dwarf_chain(s, mod, addr, file, line, sname, f, max);
	if (n > 0)
		return n;

	/* No DWARF function: the symbol alone. */
	f[0].function = sname ? intern_name(s, sname) : "";
	f[0].file = intern(&s->pool, file);
	f[0].line = line;
	return 1;
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
