/* reach_names.c -- the holders of a reachability scan named where frames
 * are named: the scan runs on the collector's thread and leaves, per
 * holder, the pc of the stack frame holding the word or the address of
 * the global (db_write.h); the writer, which owns the symbolizer, adds
 * before writing the scan:
 *   a stack:  "tid 4242" -> "tid 4242 in holder_thread (reach_truth.c:145)",
 *             the function that owns the frame (the outermost of the pc's
 *             inline chain) and the line it is at in it (a call's, for
 *             every frame but the innermost); "in libfoo.so+0x1a2b" when
 *             no symbol names it;
 *   a global: "g_held [reach_truth]" -> "g_held (reach_truth.c:34)
 *             [reach_truth]", the file:line of the variable's definition
 *             from DWARF (ha_symbolize_var); a module whose own file has
 *             no symbol for it (stripped, its debug file found):
 *             "prog+0x4040" -> "g_held (reach_truth.c:34) [prog+0x4040]";
 *   TLS:      "t_held [reach_truth] tid 42" -> "t_held (reach_truth.c:41)
 *             [reach_truth] tid 42", the TLS variable at the word's offset in
 *             its module's static TLS block (ha_symbolize_tls_var; the scan
 *             told the block, src/reach/reach_tls.c); without an ELF
 *             symbol, "tls+0x40 [prog] tid 42" -> "t_held (reach_truth.c:41)
 *             [prog] tid 42".
 * A global's or TLS variable's ELF symbol is demangled (C++: "_ZN2ns7g_cacheE"
 * -> "ns::g_cache"), and DWARF's name is the linkage name's, demangled,
 * where there is one (symbolize_var.c), so that C++ variables keep their
 * namespaces and template arguments.  Files by their base name.  What the
 * target's files say is untrusted: cleaned (ha_clean_line) and cut to
 * HA_DB_REACH_NAME_MAX - 1 bytes (the name, 1,023: a long C++ name
 * survives), the detail cut first, so that the module after it stays. */
#define _GNU_SOURCE
#include "reach_names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"
#include "util.h"

#define CHAIN_MAX 64
#define NAME_MAX_ HA_DB_REACH_NAME_MAX

static const char *base_name(const char *path)
{
	const char *b = strrchr(path, '/');
	return b ? b + 1 : path;
}

static void stack_detail(struct ha_symbolizer *sym, const struct ha_db_reach_holder *h,
                         char *out, size_t outlen)
{
	struct ha_sym_frame f[CHAIN_MAX];
	int n = ha_symbolize(sym, h->pc, h->pc_is_ret, f, CHAIN_MAX);
	if (n <= 0)
		return;
	const struct ha_sym_frame *o = &f[n - 1];
	if (o->function[0] && o->file[0] && o->line > 0)
		snprintf(out, outlen, " in %.700s (%.200s:%d)", o->function, base_name(o->file),
		         o->line);
	else if (o->function[0])
		snprintf(out, outlen, " in %.900s", o->function);
	else if (o->module[0])
		snprintf(out, outlen, " in %.200s+0x%llx", base_name(o->module),
		         (unsigned long long)o->rel_pc);
}

/* src into dst[n], cut (a cut UTF-8 character is cleaned later). */
static void put(char *dst, size_t n, const char *src)
{
	size_t l = strlen(src);
	if (l >= n)
		l = n - 1;
	memcpy(dst, src, l);
	dst[l] = '\0';
}

/* " (FILE:LINE)" of a definition, or "". */
static void where_of(const char *file, int line, char *out, size_t outlen)
{
	out[0] = '\0';
	if (file[0] && line > 0)
		snprintf(out, outlen, " (%.200s:%d)", base_name(file), line);
}

/* A global's definition; for a name no ELF symbol gave (at 0: a stripped
 * module whose debug file has DWARF), the variable's name too: the whole
 * name is then made here ("VAR (FILE:LINE) [prog+0x4040]"). */
static void global_detail(struct ha_symbolizer *sym, const struct ha_db_reach_holder *h,
                          char *name, size_t at, char *out, size_t outlen)
{
	const char *var, *file;
	int line;
	if (ha_symbolize_var(sym, h->addr, h->module, &var, &file, &line) != 0)
		return;
	char where[240];
	where_of(file, line, where, sizeof where);
	if (at > 0 || !var[0]) {
		snprintf(out, outlen, "%s", where);
		return;
	}
	char whole[2 * NAME_MAX_ + 256];
	snprintf(whole, sizeof whole, "%.*s%s [%s]", NAME_MAX_ / 2, var, where, name);
	put(name, NAME_MAX_, whole);
}

/* A TLS variable's definition; for a name no ELF symbol gave (at 0),
 * DWARF's variable takes the first word's place ("tls+0x40"). */
static void tls_detail(struct ha_symbolizer *sym, const struct ha_db_reach_holder *h,
                       char *name, size_t at, char *out, size_t outlen)
{
	const char *var, *file;
	int line;
	if (ha_symbolize_tls_var(sym, h->module, h->addr, &var, &file, &line) != 0)
		return;
	char where[240];
	where_of(file, line, where, sizeof where);
	const char *rest = strchr(name, ' ');
	if (at > 0 || !var[0] || !rest) {
		snprintf(out, outlen, "%s", where);
		return;
	}
	char whole[2 * NAME_MAX_ + 256];
	snprintf(whole, sizeof whole, "%.*s%s%s", NAME_MAX_ / 2, var, where, rest);
	put(name, NAME_MAX_, whole);
}

/* A C++ symbol ([0, *at) of name: "_ZN2ns7g_cacheE") demangled in place. */
static void demangle_symbol(struct ha_symbolizer *sym, char *name, size_t *at)
{
	if (*at < 3 || name[0] != '_' || name[1] != 'Z')
		return;
	char mangled[NAME_MAX_];
	snprintf(mangled, sizeof mangled, "%.*s", (int)*at, name);
	const char *d = ha_symbolize_demangle(sym, mangled);
	if (!d[0] || strcmp(d, mangled) == 0)
		return;
	char whole[2 * NAME_MAX_];
	snprintf(whole, sizeof whole, "%s%s", d, name + *at);
	size_t dl = strlen(d), tail = strlen(name + *at);
	if (dl + tail >= NAME_MAX_)   /* the symbol cut, the module after it kept */
		dl = NAME_MAX_ - 1 - tail;
	snprintf(name, NAME_MAX_, "%.*s%s", (int)dl, d, whole + strlen(d));
	*at = dl;
}

void ha_reach_name_holders(struct ha_symbolizer *sym, struct ha_db_reach *r)
{
	for (size_t i = 0; sym && r && i < r->nholders; i++) {
		struct ha_db_reach_holder *h = &r->holders[i];
		if (!h->name)
			continue;
		char name[NAME_MAX_];
		snprintf(name, sizeof name, "%s", h->name);
		size_t at = h->at < strlen(name) ? h->at : strlen(name);
		char detail[NAME_MAX_] = "";
		if (h->pc) {
			stack_detail(sym, h, detail, sizeof detail);
		} else if (h->tls || h->addr) {
			demangle_symbol(sym, name, &at);
			if (h->tls)
				tls_detail(sym, h, name, at, detail, sizeof detail);
			else
				global_detail(sym, h, name, at, detail, sizeof detail);
		}
		size_t len = strlen(name);
		if (detail[0] && at <= len) {
			ha_clean_line(detail);
			size_t room = sizeof name - 1 - len, dl = strlen(detail);
			if (dl > room)
				dl = room;
			char whole[2 * NAME_MAX_];
			snprintf(whole, sizeof whole, "%.*s%.*s%s", (int)at, name, (int)dl, detail,
			         name + at);
			put(name, sizeof name, whole);
		}
		ha_clean_line(name);
		if (strcmp(name, h->name) == 0)
			continue;
		char *dup = strdup(name);
		if (!dup)
			continue;
		free(h->name);
		h->name = dup;
	}
}
