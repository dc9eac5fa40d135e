/* reach_sym.c -- a global's name from its address: the module whose
 * writable segment (or the .bss mapping right after it) holds it, and the
 * object symbol (.symtab, else .dynsym) whose [value, value + size) holds
 * it, read from the module's file as the target's root sees it
 * (/proc/PID/root).  "g_cache [prog]" (the symbol, whatever element of
 * it holds the address); "prog+0x4a10" when no symbol has it.  A TLS
 * word's (reach_tls.c: its module and offset in the module's block) by
 * the STT_TLS symbol whose [value, value + size) holds the offset (a TLS
 * symbol's value is its offset in the block): "t_cache [prog] tid 42";
 * "tls+0x40 [prog] tid 42" when no symbol has it.  What the file says is
 * untrusted: names are cut and cleaned.
 * The file:line of the variable's definition is the writer's to add
 * (reach.h: reach_holder's addr and module; the symbolizer's DWARF). */
#define _GNU_SOURCE
#include "reach_int.h"
#include "util.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int find_symbol(Elf *elf, uint64_t off, int type, char *out, size_t outlen)
{
	for (int pass = 0; pass < 2; pass++) {
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) || sh.sh_entsize == 0)
				continue;
			Elf_Data *data = elf_getdata(scn, NULL);
			if (!data)
				continue;
			size_t n = sh.sh_size / sh.sh_entsize;
			for (size_t i = 0; i < n; i++) {
				GElf_Sym s;
				if (!gelf_getsym(data, (int)i, &s) || GELF_ST_TYPE(s.st_info) != type ||
				    s.st_shndx == SHN_UNDEF)
					continue;
				uint64_t size = s.st_size ? s.st_size : 1;
				if (off < s.st_value || off - s.st_value >= size)
					continue;
				const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
				if (!name || !*name)
					continue;
				snprintf(out, outlen, "%s", name);
				return 0;
			}
		}
	}
	return -1;
}

/* sym then tail into out[outlen], the symbol cut (a long C++ name) so
 * that tail (the module) stays; the symbol's length in out. */
static size_t sym_then(char *out, size_t outlen, const char *sym, const char *tail)
{
	size_t n = strlen(sym), t = strlen(tail);
	if (outlen == 0)
		return 0;
	if (t >= outlen)
		t = outlen - 1;
	if (n > outlen - 1 - t)
		n = outlen - 1 - t;
	memcpy(out, sym, n);
	memcpy(out + n, tail, t);
	out[n + t] = '\0';
	return n;
}

static uint64_t first_load_vaddr(Elf *elf)
{
	size_t n;
	if (elf_getphdrnum(elf, &n) != 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			return ph.p_vaddr & ~0xfffull;
	}
	return 0;
}

/* The modules' files opened during one scan (reach_sym_reset ends it):
 * the holders of a scan are many words of a few modules. */
#define CACHED 8
static struct cached {
	char path[4200];
	int fd;
	Elf *elf;
	uint64_t vaddr;
} cache[CACHED];
static size_t ncached, next_slot;

static struct cached *module_elf(const char *path)
{
	for (size_t i = 0; i < ncached; i++)
		if (strcmp(cache[i].path, path) == 0)
			return &cache[i];
	struct cached *c = &cache[next_slot];
	next_slot = (next_slot + 1) % CACHED;
	if (ncached < CACHED)
		ncached++;
	else {
		if (c->elf)
			elf_end(c->elf);
		if (c->fd >= 0)
			close(c->fd);
	}
	snprintf(c->path, sizeof c->path, "%s", path);
	elf_version(EV_CURRENT);
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	c->elf = c->fd >= 0 ? elf_begin(c->fd, ELF_C_READ_MMAP, NULL) : NULL;
	c->vaddr = c->elf ? first_load_vaddr(c->elf) : 0;
	return c;
}

void reach_sym_reset(void)
{
	for (size_t i = 0; i < ncached; i++) {
		if (cache[i].elf)
			elf_end(cache[i].elf);
		if (cache[i].fd >= 0)
			close(cache[i].fd);
	}
	ncached = next_slot = 0;
}

/* mod's name in a holder's, cut and cleaned; its file (cached), as pid's
 * root sees it. */
static struct cached *module_of_holder(pid_t pid, const struct ha_map *mod, char *modname,
                                       size_t modlen)
{
	snprintf(modname, modlen, "%.60s", ha_maps_module_name(mod->path));
	ha_clean_line(modname);
	char path[4200];
	snprintf(path, sizeof path, "/proc/%d/root%s", (int)pid, mod->path);
	return module_elf(path);
}

/* The symbol of type (STT_OBJECT, STT_TLS) in c's file whose range holds
 * off, then tail, into out (the symbol cut so that tail stays; *at: its
 * length).  0, or -1 if none has it (out untouched). */
static int symbol_then(struct cached *c, uint64_t off, int type, const char *tail, char *out,
                       size_t outlen, size_t *at)
{
	char sym[REACH_NAME_MAX];
	if (!c->elf || find_symbol(c->elf, off, type, sym, sizeof sym) != 0)
		return -1;
	ha_clean_line(sym);
	*at = sym_then(out, outlen, sym, tail);
	return 0;
}

void reach_sym_name(pid_t pid, const struct ha_maps *maps, uint64_t addr, char *out, size_t outlen,
                    uint64_t *module, size_t *at)
{
	snprintf(out, outlen, "0x%llx", (unsigned long long)addr);
	*module = 0;
	*at = strlen(out);
	const struct ha_map *e = ha_maps_find_addr(maps, addr);
	if (!e)
		return;
	if (e->path[0] == '\0' && e > maps->v && e[-1].path[0] == '/' && e[-1].end == e->start)
		e--; /* a .bss: the module before it */
	const struct ha_map *mod = ha_maps_module_of(maps, e);
	if (!mod)
		return;
	*module = mod->start;
	char modname[64], tail[96];
	struct cached *c = module_of_holder(pid, mod, modname, sizeof modname);
	uint64_t off = addr - mod->start + c->vaddr;
	snprintf(tail, sizeof tail, " [%s]", modname);
	if (symbol_then(c, off, STT_OBJECT, tail, out, outlen, at) != 0) {
		snprintf(out, outlen, "%s+0x%llx", modname, (unsigned long long)off);
		*at = 0;   /* no symbol: DWARF's name may come before it */
	}
}

void reach_sym_tls_name(pid_t pid, const struct ha_maps *maps, uint64_t module, uint64_t off,
                        pid_t tid, char *out, size_t outlen, size_t *at)
{
	snprintf(out, outlen, "tid %d", (int)tid);
	*at = strlen(out);
	const struct ha_map *e = ha_maps_find_addr(maps, module);
	const struct ha_map *mod = e ? ha_maps_module_of(maps, e) : NULL;
	if (!mod)
		return;
	char modname[64], tail[96];
	struct cached *c = module_of_holder(pid, mod, modname, sizeof modname);
	snprintf(tail, sizeof tail, " [%s] tid %d", modname, (int)tid);
	if (symbol_then(c, off, STT_TLS, tail, out, outlen, at) != 0) {
		snprintf(out, outlen, "tls+0x%llx [%s] tid %d", (unsigned long long)off, modname,
		         (int)tid);
		*at = 0;   /* no symbol: DWARF's name may take the first word's place */
	}
}
