/* reach_scan.c -- one reachability scan, start to end: refuse what is not
 * glibc's malloc; find the agent's memory (never a root); freeze and copy
 * (reach_freeze.c); walk the copy's chunks, mark from its roots; classify
 * each sampled block and name its holder (a stack's by the frame holding
 * the word, reach_frames.c; a TLS word's by the module's block holding
 * it, reach_tls.c); measure what the copy cost; end
 * the copy.  Every path out ends the copy (reach_copy_end). */
#define _GNU_SOURCE
#include "reach_int.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const reg_names[] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx",
	"rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base",
	"ds", "es", "fs", "gs",
};

const char *reach_root_name(int kind)
{
	switch (kind) {
	case REACH_ROOT_GLOBAL: return "global";
	case REACH_ROOT_TLS: return "tls";
	case REACH_ROOT_STACK: return "stack";
	case REACH_ROOT_REGISTER: return "register";
	case REACH_ROOT_ANON: return "anon";
	default: return "";
	}
}

void reach_result_free(struct reach_result *r)
{
	free(r->holders);
	r->holders = NULL;
	r->nholders = r->capholders = 0;
}

/* Another allocator than glibc's: its name, else NULL. */
static const char *other_allocator(const struct ha_maps *maps)
{
	static const char *const names[] = { "libjemalloc", "libtcmalloc", "libmimalloc" };
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (ha_maps_find_module(maps, names[i]))
			return names[i];
	int musl = 0;
	if (!ha_maps_find_libc(maps, &musl))
		return "no C library";
	return musl ? "musl" : NULL;
}

struct skips {
	uint64_t *v; /* pairs */
	size_t n, cap;
};

static void skip_add(struct skips *s, uint64_t lo, uint64_t hi)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		uint64_t *v = realloc(s->v, cap * 2 * sizeof *v);
		if (!v)
			return;
		s->v = v;
		s->cap = cap;
	}
	s->v[2 * s->n] = lo;
	s->v[2 * s->n + 1] = hi;
	s->n++;
}

/* Where the agent's .bss, maps->v[i], ends: the kernel merges an
 * anonymous mapping that was there before (the main thread's TLS and what
 * ld.so allocated sit right after it when the agent is mapped below them)
 * with the agent's .bss, and only the .bss is the agent's (reach_bss_end,
 * its module's headers read from the target). */
static uint64_t agent_bss_end(pid_t pid, const struct ha_maps *maps, size_t i)
{
	const struct ha_map *mod = ha_maps_module_of(maps, &maps->v[i - 1]);
	if (!mod)
		return maps->v[i].end;
	struct reach_range rg = { mod->start, mod->end, 0 };
	struct reach_mem m = { .read = reach_mem_read_pid, .ctx = &pid, .ranges = &rg, .nranges = 1 };
	uint64_t end = reach_bss_end(&m, maps, i);
	reach_mem_free(&m);
	return end;
}

/* The agent's memory: its module's mappings (its .bss up to the module's
 * end only), and every anonymous mapping whose start one of the agent's
 * writable words holds (the live set's table, which it mmaps once). */
static void agent_memory(pid_t pid, const struct ha_maps *maps, struct skips *s)
{
	for (size_t i = 0; i < maps->n; i++) {
		const struct ha_map *e = &maps->v[i];
		int agent = strstr(ha_maps_module_name(e->path), "heapattach_agent") != NULL;
		int bss = e->path[0] == '\0' && i > 0 && maps->v[i - 1].end == e->start &&
		          strstr(ha_maps_module_name(maps->v[i - 1].path), "heapattach_agent");
		if (!agent && !bss)
			continue;
		uint64_t hi = bss ? agent_bss_end(pid, maps, i) : e->end;
		skip_add(s, e->start, hi);
		if ((e->prot & 3) != 3)
			continue;
		struct reach_range rg = { e->start, hi, 0 };
		struct reach_mem m = { .read = reach_mem_read_pid, .ctx = &pid, .ranges = &rg,
		                       .nranges = 1 };
		for (uint64_t a = e->start; a + 8 <= hi; a += 8) {
			uint64_t v;
			if (reach_mem_word(&m, a, &v) != 0 || v < 4096)
				continue;
			for (size_t j = 0; j < maps->n; j++)
				if (maps->v[j].start == v && maps->v[j].path[0] == '\0')
					skip_add(s, maps->v[j].start, maps->v[j].end);
		}
		reach_mem_free(&m);
	}
}

static uint64_t status_kb(const char *path, const char *key)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return 0;
	char line[256];
	uint64_t sum = 0;
	size_t kl = strlen(key);
	while (fgets(line, sizeof line, fp))
		if (strncmp(line, key, kl) == 0)
			sum += strtoull(line + kl, NULL, 10);
	(void)fclose(fp);   /* read only: nothing to lose */
	return sum;
}

/* The copy's own pages (those the target wrote since, copied) and its page tables. */
static uint64_t cow_cost(pid_t copy)
{
	char p1[64], p2[64];
	snprintf(p1, sizeof p1, "/proc/%d/smaps_rollup", (int)copy);
	snprintf(p2, sizeof p2, "/proc/%d/status", (int)copy);
	return (status_kb(p1, "Private_Dirty:") + status_kb(p2, "VmPTE:")) * 1024;
}

static int build_ranges(const struct ha_maps *maps, struct reach_range **out, size_t *n)
{
	*out = calloc(maps->n ? maps->n : 1, sizeof **out);
	if (!*out)
		return -1;
	*n = 0;
	for (size_t i = 0; i < maps->n; i++)
		if ((maps->v[i].prot & 1) && strcmp(maps->v[i].path, "[vvar]") != 0)
			(*out)[(*n)++] = (struct reach_range){ maps->v[i].start, maps->v[i].end,
			                                       maps->v[i].path[0] == '/' };
	return 0;
}

/* What names the holders of one scan: the copy, its maps and memory, the
 * threads and their frames (walked on a first holder on their stack). */
struct naming {
	pid_t copy;
	const struct ha_maps *maps;
	struct reach_mem *m;
	const struct reach_frozen *f;
	const struct reach_opts *o;
	struct reach_frames *frames;  /* f->nth of them, or NULL */
	struct reach_tls *tls;        /* the modules' static TLS, found on a first TLS holder */
};

/* The frame of thread tid's stack holding the word at o->at: its pc in hd. */
static void stack_frame(const struct naming *nm, const struct reach_origin *o,
                        struct reach_holder *hd)
{
	for (size_t t = 0; nm->frames && t < nm->f->nth; t++) {
		if (nm->f->th[t].tid != o->tid)
			continue;
		struct reach_frames *fr = &nm->frames[t];
		if (!fr->walked)
			reach_frames_walk(nm->m, nm->maps, &nm->f->th[t], nm->o, fr);
		int i = reach_frame_of(fr, o->at);
		if (i >= 0) {
			hd->pc = fr->pc[i];
			hd->pc_is_ret = i > 0;
		}
		return;
	}
}

/* A TLS word's holder: its variable where the module's static block
 * holding it can be told (reach_tls.c), else its thread. */
static void tls_holder(const struct naming *nm, const struct reach_origin *o,
                       struct reach_holder *hd)
{
	snprintf(hd->name, sizeof hd->name, "tid %d", (int)o->tid);
	hd->at = strlen(hd->name);
	if (!nm->tls->done)
		reach_tls_find(nm->tls, nm->m, nm->maps);
	for (size_t t = 0; t < nm->f->nth; t++) {
		if (nm->f->th[t].tid != o->tid)
			continue;
		uint64_t module, off;
		if (reach_tls_locate(nm->tls, nm->m, nm->f->th[t].regs.fs_base, o->at, &module,
		                     &off) != 0)
			return;
		reach_sym_tls_name(nm->copy, nm->maps, module, off, o->tid, hd->name,
		                   sizeof hd->name, &hd->at);
		hd->module = module;
		hd->addr = off;
		hd->tls = 1;
		return;
	}
}

/* Name origin o; the holder's index (a new one or the same one's). */
static uint32_t holder_of(struct reach_result *r, const struct reach_origin *o,
                          const struct naming *nm)
{
	struct reach_holder hd = { .kind = o->kind };
	switch (o->kind) {
	case REACH_ROOT_GLOBAL:
		reach_sym_name(nm->copy, nm->maps, o->at, hd.name, sizeof hd.name, &hd.module, &hd.at);
		hd.addr = hd.module ? o->at : 0;
		break;
	case REACH_ROOT_REGISTER:
		snprintf(hd.name, sizeof hd.name, "tid %d %s", (int)o->tid,
		         o->reg < sizeof reg_names / sizeof reg_names[0] ? reg_names[o->reg] : "?");
		break;
	case REACH_ROOT_ANON: {
		const struct ha_map *e = ha_maps_find_addr(nm->maps, o->at);
		snprintf(hd.name, sizeof hd.name, "mapping 0x%llx",
		         (unsigned long long)(e ? e->start : o->at));
		break;
	}
	case REACH_ROOT_STACK:
		snprintf(hd.name, sizeof hd.name, "tid %d", (int)o->tid);
		stack_frame(nm, o, &hd);
		break;
	case REACH_ROOT_TLS:
		tls_holder(nm, o, &hd);
		break;
	default:
		snprintf(hd.name, sizeof hd.name, "tid %d", (int)o->tid);
	}
	if (hd.kind != REACH_ROOT_GLOBAL && hd.kind != REACH_ROOT_TLS)
		hd.at = strlen(hd.name);
	/* One holder per name, and per frame on a stack (the same global's
	 * other words give the same definition). */
	for (size_t i = 0; i < r->nholders; i++)
		if (r->holders[i].kind == hd.kind && r->holders[i].pc == hd.pc &&
		    strcmp(r->holders[i].name, hd.name) == 0)
			return (uint32_t)i;
	if (r->nholders == r->capholders) {
		/* doubled: a holder is 1 KiB with its name, thousands of them
		 * grown one at a time were copied n^2 / 2 times */
		size_t cap = r->capholders ? 2 * r->capholders : 16;
		struct reach_holder *v = realloc(r->holders, cap * sizeof *v);
		if (!v)
			return 0;
		r->holders = v;
		r->capholders = cap;
	}
	r->holders[r->nholders] = hd;
	return (uint32_t)r->nholders++;
}

static void classify(struct reach_block *blocks, size_t n, const struct reach_marker *k,
                     struct reach_result *r, const struct naming *nm)
{
	uint32_t *named = calloc(k->norig + 1, sizeof *named); /* origin -> holder + 1 */
	for (size_t i = 0; i < n; i++) {
		struct reach_block *b = &blocks[i];
		const struct reach_chunk *c = reach_heap_find(k->h, b->addr);
		b->state = REACH_UNKNOWN;
		b->root_kind = 0;
		b->hops = 0;
		b->holder = 0;
		if (!c)
			continue;
		if (!c->origin) {
			b->state = REACH_UNREACHABLE;
			continue;
		}
		const struct reach_origin *o = &k->orig[c->origin - 1];
		b->state = REACH_REACHABLE;
		b->root_kind = o->kind;
		b->hops = c->hops;
		if (named && named[c->origin]) {
			b->holder = named[c->origin] - 1;
		} else {
			b->holder = holder_of(r, o, nm);
			if (named)
				named[c->origin] = b->holder + 1;
		}
	}
	free(named);
}

int reach_scan(pid_t pid, struct reach_block *blocks, size_t n, const struct reach_opts *o,
               struct reach_result *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	double t0 = ha_now_ms();
	struct ha_maps maps = { 0 };
	if (ha_maps_read(pid, &maps) != 0) {
		ha_err(err, errlen, "cannot read the maps of %d", (int)pid);
		return -1;
	}
	const char *other = other_allocator(&maps);
	if (other) {
		ha_err(err, errlen, "the allocator is not glibc's malloc (%s): no scan", other);
		ha_maps_free(&maps);
		return -1;
	}
	struct skips sk = { 0 };
	agent_memory(pid, &maps, &sk);
	for (size_t i = 0; o && i < o->nskip; i++)
		skip_add(&sk, o->skip[2 * i], o->skip[2 * i + 1]);

	struct reach_frozen f;
	int rc = reach_freeze(pid, &maps, o && o->safe_tries ? o->safe_tries : 100,
	                      o ? o->verbose : 0, o ? o->park : NULL, &f, err, errlen);
	r->pause_ms = f.pause_ms;
	ha_maps_free(&maps);
	if (rc != 0) {
		reach_frozen_free(&f);
		free(sk.v);
		return -1;
	}
	struct ha_maps cm = { 0 };
	struct reach_range *ranges = NULL;
	size_t nranges = 0;
	struct reach_heap h = { 0 };
	struct reach_marker k = { 0 };
	/* Through /proc/COPY/mem, not process_vm_readv: a pin of a page the
	 * copy shares with the target unshares it (a copy of every page read,
	 * Linux 5.19+); the mem file's reads do not pin.  Pages never touched
	 * are not read (the pagemap), so that none is made. */
	char mem_path[64], pm_path[64];
	snprintf(mem_path, sizeof mem_path, "/proc/%d/mem", (int)f.copy);
	snprintf(pm_path, sizeof pm_path, "/proc/%d/pagemap", (int)f.copy);
	struct reach_fds fds = { open(mem_path, O_RDONLY | O_CLOEXEC),
	                         open(pm_path, O_RDONLY | O_CLOEXEC) };
	struct reach_mem m = { .read = reach_mem_read_fd, .ctx = &fds };
	rc = -1;
	if (fds.mem < 0 || fds.pagemap < 0 || ha_maps_read(f.copy, &cm) != 0 ||
	    build_ranges(&cm, &ranges, &nranges) != 0) {
		ha_err(err, errlen, "cannot read the copy's memory or maps");
		goto out;
	}
	m.ranges = ranges;
	m.nranges = nranges;
	if (reach_heap_walk(&m, &cm, &h) != 0) {
		ha_err(err, errlen, "out of memory walking the heap");
		goto out;
	}
	k.h = &h;
	k.m = &m;
	reach_roots_mark(&k, &cm, &f, sk.v, sk.n);
	if (k.oom) {
		ha_err(err, errlen, "out of memory in the mark");
		goto out;
	}
	struct reach_tls tls = { 0 };
	struct naming nm = { f.copy, &cm, &m, &f, o, calloc(f.nth ? f.nth : 1, sizeof *nm.frames),
	                     &tls };
	double t_named = ha_now_ms();
	classify(blocks, n, &k, r, &nm);
	r->holders_ms = ha_now_ms() - t_named;
	for (size_t t = 0; nm.frames && t < f.nth; t++)
		r->stacks_walked += nm.frames[t].walked;
	free(nm.frames);
	reach_tls_free(&tls);
	reach_sym_reset();
	r->chunks = h.n;
	r->bytes_scanned = k.bytes_scanned;
	r->cow_bytes = cow_cost(f.copy);

	rc = 0;
out:
	if (fds.mem >= 0)
		close(fds.mem);
	if (fds.pagemap >= 0)
		close(fds.pagemap);
	reach_frozen_free(&f);
	reach_marker_free(&k);
	reach_heap_free(&h);
	reach_mem_free(&m);
	free(ranges);
	ha_maps_free(&cm);
	free(sk.v);
	r->scan_ms = ha_now_ms() - t0;
	return rc;
}
