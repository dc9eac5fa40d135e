/* symbolize_name.c -- an address inside a module libdwfl holds, named:
 * the inline chain from DWARF, else the ELF symbol (see symbolize_int.h).
 * Shared by the live symbolizer (symbolize.c) and the one of a file alone
 * (symbolize_file.c).
 *
 * The inline chain is dwarf_getscopes + dwarf_getscopes_die, as
 * eu-addr2line -i does: the innermost frame takes its file:line from the
 * line table, each outer one the DW_AT_call_file/call_line of the inlined
 * instance it contains.  Without DWARF the ELF symbol table names the
 * function. */
#define _GNU_SOURCE
#include "symbolize_int.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stddef.h>
#include <stdlib.h>

#include "dwarf_names.h"

static int is_func_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* Fill f[0..] with the inline chain at addr from DWARF, innermost first.
 * f[*] already hold module/build_id/rel_pc in f[0].  Returns the count, 0
 * if there is no DWARF function at addr. */
static int dwarf_chain(struct ha_strpool *pool, Dwfl_Module *mod, Dwarf_Addr addr,
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
		f[n].function = ha_dwarf_func_name(pool, d, is_cxx,
		                         tag == DW_TAG_inlined_subroutine ? NULL : sym);
		f[n].file = ha_strpool_intern(pool, file);
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

int ha_sym_name_in(struct ha_strpool *pool, Dwfl_Module *mod, Dwarf_Addr addr,
                   struct ha_sym_frame *f, int max)
{
	const char *file = NULL, *sname;
	GElf_Off off = 0;
	GElf_Sym sym;
	Dwfl_Line *ln;
	int line = 0, n;

	/* Only inside the ranges of the CU libdw finds for addr: for code no CU
	 * covers (crt1.o's _start, assembly), libdw can take the nearest CU's
	 * line table, whose last row before addr is some other function's
	 * (_start named as the last line of main's file). */
	Dwarf_Addr cu_bias = 0;
	Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &cu_bias);
	ln = cu && dwarf_haspc(cu, addr - cu_bias) == 1 ? dwfl_module_getsrc(mod, addr) : NULL;
	if (ln)
		file = dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL);
	if (!file)
		line = 0;

	/* The ELF symbol covering addr (.symtab from the file or its debug
	 * file, else .dynsym). */
	sname = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
	if (sname && sym.st_size > 0 && off >= sym.st_size)
		sname = NULL;

	n = dwarf_chain(pool, mod, addr, file, line, sname, f, max);
	if (n > 0)
		return n;

	/* No DWARF function: the symbol alone. */
	f[0].function = sname ? ha_demangled_name(pool, sname) : "";
	f[0].file = ha_strpool_intern(pool, file);
	f[0].line = line;
	return 1;
}
