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
 * Files by their base name.  What the target's files say is untrusted:
 * cleaned (ha_clean_line) and cut to the name's 127 bytes, the detail
 * cut first, so that the module after it stays. */
#define _GNU_SOURCE
#include "reach_names.h"

#include <stdio.h>
#include <string.h>

#include "symbolize.h"
#include "util.h"

#define CHAIN_MAX 64

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
		snprintf(out, outlen, " in %.80s (%.60s:%d)", o->function, base_name(o->file), o->line);
	else if (o->function[0])
		snprintf(out, outlen, " in %.80s", o->function);
	else if (o->module[0])
		snprintf(out, outlen, " in %.60s+0x%llx", base_name(o->module),
		         (unsigned long long)o->rel_pc);
}

/* A global's definition; for a name no ELF symbol gave (h->at 0: a
 * stripped module whose debug file has DWARF), the variable's name too:
 * the whole name is then made here. */
static void global_detail(struct ha_symbolizer *sym, struct ha_db_reach_holder *h, char *out,
                          size_t outlen)
{
	const char *name, *file;
	int line;
	if (ha_symbolize_var(sym, h->addr, h->module, &name, &file, &line) != 0)
		return;
	char where[100] = "";
	if (file[0] && line > 0)
		snprintf(where, sizeof where, " (%.60s:%d)", base_name(file), line);
	if (h->at > 0 || !name[0]) {
		snprintf(out, outlen, "%s", where);
		return;
	}
	char whole[sizeof h->name + 200];
	snprintf(whole, sizeof whole, "%.80s%s [%s]", name, where, h->name);
	ha_clean_line(whole);
	size_t len = strlen(whole) < sizeof h->name ? strlen(whole) : sizeof h->name - 1;
	memcpy(h->name, whole, len);
	h->name[len] = '\0';
}

/* A TLS variable's definition; for a name no ELF symbol gave (h->at 0),
 * DWARF's variable takes the first word's place ("tls+0x40"). */
static void tls_detail(struct ha_symbolizer *sym, struct ha_db_reach_holder *h, char *out,
                       size_t outlen)
{
	const char *name, *file;
	int line;
	if (ha_symbolize_tls_var(sym, h->module, h->addr, &name, &file, &line) != 0)
		return;
	char where[100] = "";
	if (file[0] && line > 0)
		snprintf(where, sizeof where, " (%.60s:%d)", base_name(file), line);
	const char *rest = strchr(h->name, ' ');
	if (h->at > 0 || !name[0] || !rest) {
		snprintf(out, outlen, "%s", where);
		return;
	}
	char whole[sizeof h->name + 200];
	snprintf(whole, sizeof whole, "%.80s%s%s", name, where, rest);
	ha_clean_line(whole);
	size_t len = strlen(whole) < sizeof h->name ? strlen(whole) : sizeof h->name - 1;
	memcpy(h->name, whole, len);
	h->name[len] = '\0';
}

void ha_reach_name_holders(struct ha_symbolizer *sym, struct ha_db_reach *r)
{
	for (size_t i = 0; sym && r && i < r->nholders; i++) {
		struct ha_db_reach_holder *h = &r->holders[i];
		char detail[200] = "";
		if (h->pc)
			stack_detail(sym, h, detail, sizeof detail);
		else if (h->tls)
			tls_detail(sym, h, detail, sizeof detail);
		else if (h->addr)
			global_detail(sym, h, detail, sizeof detail);
		size_t len = strlen(h->name);
		if (!detail[0] || h->at > len)
			continue;
		ha_clean_line(detail);
		size_t room = sizeof h->name - 1 - len, dl = strlen(detail);
		if (dl > room)
			dl = room;
		char name[sizeof h->name];
		snprintf(name, sizeof name, "%.*s%.*s%s", (int)h->at, h->name, (int)dl, detail,
		         h->name + h->at);
		memcpy(h->name, name, sizeof name);
	}
}
