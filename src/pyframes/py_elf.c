/* py_elf.c -- a handful of named symbols of one module (py_elf.h).
 *
 * One pass over each symbol table for all the names wanted (a dozen, once
 * per session), no cache: the CPython module is looked at once, when a
 * session starts.  The file is the target's; libelf bounds-checks what it
 * parses, and a name offset past the string table is skipped. */
#define _GNU_SOURCE
#include "py_elf.h"
#include "module_file.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Fill from one symbol table what is still missing (or only local). */
static void scan(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t bias,
                 struct ha_py_sym *want, size_t n, unsigned char *local)
{
	Elf_Data *syms = elf_getdata(scn, NULL), *strs;
	Elf_Scn *sscn = elf_getscn(elf, sh->sh_link);
	size_t nsyms;

	strs = sscn ? elf_getdata(sscn, NULL) : NULL;
	if (!syms || !strs || !strs->d_buf || sh->sh_entsize == 0)
		return;
	nsyms = syms->d_size / sh->sh_entsize;
	for (size_t i = 1; i < nsyms; i++) {
		GElf_Sym s;
		int type;
		const char *name;
		if (!gelf_getsym(syms, (int)i, &s))
			break;
		type = GELF_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF || s.st_name == 0 || s.st_name >= strs->d_size ||
		    (type != STT_FUNC && type != STT_OBJECT))
			continue;
		name = (const char *)strs->d_buf + s.st_name;
		if (!memchr(name, '\0', strs->d_size - s.st_name))
			continue;
		for (size_t k = 0; k < n; k++) {
			int is_local = GELF_ST_BIND(s.st_info) == STB_LOCAL;
			if (strcmp(name, want[k].name) != 0 || (want[k].addr && (local[k] <= is_local)))
				continue;
			want[k].addr = bias + s.st_value;
			want[k].size = s.st_size;
			local[k] = (unsigned char)is_local;
		}
	}
}

int ha_py_elf_lookup(pid_t pid, const struct ha_map *mod, struct ha_py_sym *want, size_t n)
{
	unsigned char local[64];
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	uint64_t link_base = 0;
	int fd, rc = 0;

	if (n > sizeof local || !mod->path)
		return -EINVAL;
	for (size_t k = 0; k < n; k++) {
		want[k].addr = want[k].size = 0;
		local[k] = 1;
	}
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = ha_module_file_open(pid, mod);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || ha_elf_first_load_vaddr(elf, &link_base) < 0) {
		rc = -ENOEXEC;
		goto out;
	}
	/* .dynsym, then .symtab: what the first gave is kept unless local */
	for (int pass = 0; pass < 2; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh))
				break;
			if (sh.sh_type == (pass ? SHT_SYMTAB : SHT_DYNSYM))
				scan(elf, scn, &sh, mod->start - link_base, want, n, local);
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}
