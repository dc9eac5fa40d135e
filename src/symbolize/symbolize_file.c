/* symbolize_file.c -- module-relative pcs named with a file alone (see
 * symbolize_file.h).
 *
 * The file is reported to an offline Dwfl of its own (one module: libdwfl
 * lays offline modules out at addresses of its choosing, so two would need
 * their biases kept apart for nothing); a pc of the file is its ELF
 * virtual address plus the bias libdwfl gives the module.  A debug file
 * made by objcopy --only-keep-debug names as the module would: its
 * sections keep their addresses, its code is NOBITS. */
#define _GNU_SOURCE
#include "symbolize_file.h"

#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strpool.h"
#include "symbolize_int.h"

struct ha_filesym {
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	struct ha_strpool pool;
	const char *path;
};

/* No other file is looked for: the one given holds what there is. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
                        const char *file_name, const char *debuglink_file,
                        GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name;
	(void)debuglink_file, (void)debuglink_crc;
	*debuginfo_file_name = NULL;
	return -1;
}

static const Dwfl_Callbacks offline_cb = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

struct ha_filesym *ha_filesym_open(int fd, const char *path, char *err, size_t errlen)
{
	struct ha_filesym *fs = calloc(1, sizeof *fs);
	if (!fs || !(fs->dwfl = dwfl_begin(&offline_cb))) {
		snprintf(err, errlen, "%s", fs ? dwfl_errmsg(-1) : "out of memory");
		free(fs);
		close(fd);
		return NULL;
	}
	/* libdwfl owns fd from here (it closes it with the Dwfl). */
	fs->mod = dwfl_report_offline(fs->dwfl, path, path, fd);
	dwfl_report_end(fs->dwfl, NULL, NULL);
	if (!fs->mod || !dwfl_module_getelf(fs->mod, &fs->bias)) {
		snprintf(err, errlen, "%s", dwfl_errmsg(-1));
		ha_filesym_free(fs);
		return NULL;
	}
	fs->path = ha_strpool_intern(&fs->pool, path);
	return fs;
}

void ha_filesym_free(struct ha_filesym *fs)
{
	if (!fs)
		return;
	if (fs->dwfl)
		dwfl_end(fs->dwfl);
	ha_strpool_free(&fs->pool);
	free(fs);
}

int ha_filesym_name(struct ha_filesym *fs, uint64_t rel_pc, int is_ret, struct ha_sym_frame *out,
                    int max)
{
	if (!fs || max <= 0)
		return 0;
	uint64_t at = is_ret && rel_pc > 0 ? rel_pc - 1 : rel_pc;
	out[0] = (struct ha_sym_frame){ fs->path, "", rel_pc, "", "", 0, 0 };
	int n = ha_sym_name_in(&fs->pool, fs->mod, at + fs->bias, out, max);
	return n > 0 && out[0].function[0] ? n : 0;
}
