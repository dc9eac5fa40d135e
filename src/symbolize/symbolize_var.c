/* symbolize_var.c -- where a global variable is defined: the name and
 * file:line (DW_AT_decl_file/decl_line, through DW_AT_specification and
 * abstract origins; DWARF 5's file 0, clang's, is the unit's name; a C++
 * variable's name is its linkage name demangled, with its namespaces and
 * template arguments) of the DWARF variable whose static storage holds an
 * address, for the holders of a reachability scan (a word of .data or
 * .bss).  The module and its debug file are the symbolizer's own
 * (symbolize.c, modfiles.c: build-id, debug link, our and the target's
 * /usr/lib/debug), so no second finder: symbolize.c finds the module
 * (ha_symbolize_var) and hands it here.
 *
 * Per module, once: every DW_TAG_variable whose location is one address
 * (DW_OP_addr, or DW_OP_addrx through .debug_addr) with its size (its
 * type's), sorted; and apart, every TLS variable (an offset in the
 * module's TLS block, DW_OP_const8u/const4u/constu/addr or constx, then
 * DW_OP_form_tls_address or DW_OP_GNU_push_tls_address), sorted by that
 * offset, for a block held only in TLS (reach_tls.c told the module's
 * block and the offset in it).  Only scopes that hold variables are entered (units,
 * namespaces, functions and blocks for their static locals), at most
 * DEPTH_MAX deep and DIE_BUDGET DIEs a module: DWARF is the target's,
 * untrusted; libdw checks every read, and a unit it cannot read ends that
 * unit's walk.  Strings are interned in the symbolizer's pool. */
#define _GNU_SOURCE
#include "dwarf_names.h"
#include "symbolize_int.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#define VARS_MODULES 16          /* modules indexed at once (round robin) */
#define DEPTH_MAX 32
#define DIE_BUDGET (8u << 20)    /* DIEs read per module at most */
#define VAR_SIZE_MAX (1ull << 32)

struct var {
	uint64_t lo, hi;         /* [lo, hi) in the module's DWARF addresses */
	const char *name, *file;
	int line;
};

struct modvars {
	Dwfl_Module *mod;
	uint64_t start;          /* the module's, with mod: its identity */
	Dwarf_Addr bias;         /* runtime address = DWARF address + bias */
	struct var *v;           /* static storage, by DWARF address */
	size_t n, cap;
	struct var *t;           /* TLS, by offset in the module's block */
	size_t tn, tcap;
};

struct ha_sym_vars {
	struct modvars m[VARS_MODULES];
	size_t n, next;
};

void ha_sym_vars_free(struct ha_sym_vars *vs)
{
	if (!vs)
		return;
	for (size_t i = 0; i < vs->n; i++) {
		free(vs->m[i].v);
		free(vs->m[i].t);
	}
	free(vs);
}

static int scope_holds_vars(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_subprogram ||
	       tag == DW_TAG_lexical_block || tag == DW_TAG_module;
}

/* The value op pushes, if it is a constant or an address (an index into
 * .debug_addr read there). */
static int op_value(Dwarf_Attribute *a, Dwarf_Op *op, uint64_t *v)
{
	switch (op->atom) {
	case DW_OP_addr: case DW_OP_const8u: case DW_OP_const4u: case DW_OP_constu:
		*v = op->number;
		return 0;
	case DW_OP_addrx: case DW_OP_GNU_addr_index: case DW_OP_constx: case DW_OP_GNU_const_index: {
		Dwarf_Attribute at;
		Dwarf_Addr x;
		if (dwarf_getlocation_attr(a, op, &at) == 0 && dwarf_formaddr(&at, &x) == 0) {
			*v = x;
			return 0;
		}
		Dwarf_Word w;
		if (dwarf_getlocation_attr(a, op, &at) == 0 && dwarf_formudata(&at, &w) == 0) {
			*v = w;
			return 0;
		}
		return -1;
	}
	default:
		return -1;
	}
}

/* Variable die's storage: one static address (*tls 0), or an offset in
 * the module's TLS block (*tls 1). */
static int var_location(Dwarf_Die *die, uint64_t *addr, int *tls)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	if (!dwarf_attr(die, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &nops) != 0)
		return -1;
	if (nops == 1 && (ops[0].atom == DW_OP_addr || ops[0].atom == DW_OP_addrx ||
	                  ops[0].atom == DW_OP_GNU_addr_index)) {
		*tls = 0;
		return op_value(&a, &ops[0], addr);
	}
	if (nops == 2 && (ops[1].atom == DW_OP_form_tls_address ||
	                  ops[1].atom == DW_OP_GNU_push_tls_address)) {
		*tls = 1;
		return op_value(&a, &ops[0], addr);
	}
	return -1;
}

/* The file of die's declaration.  DWARF 5 numbers the unit's primary
 * source file 0, which clang gives its variables and libdw (0.188)
 * answers with nothing: that file is the unit's name. */
static const char *decl_file(Dwarf_Die *die)
{
	const char *file = dwarf_decl_file(die);
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Die cu;
	Dwarf_Half version;
	if (file || !dwarf_attr_integrate(die, DW_AT_decl_file, &a) || dwarf_formudata(&a, &idx) != 0 ||
	    idx != 0 || !dwarf_cu_die(die->cu, &cu, &version, NULL, NULL, NULL, NULL, NULL) ||
	    version < 5)
		return file;
	return dwarf_diename(&cu);
}

static void add_var(struct ha_strpool *pool, struct modvars *mv, Dwarf_Die *die)
{
	uint64_t lo;
	int tls;
	if (var_location(die, &lo, &tls) != 0)
		return;
	Dwarf_Word size = 0;
	Dwarf_Attribute a;
	Dwarf_Die type;
	if (dwarf_attr_integrate(die, DW_AT_type, &a) && dwarf_formref_die(&a, &type) &&
	    dwarf_aggregate_size(&type, &size) != 0)
		size = 0;
	if (size == 0 || size > VAR_SIZE_MAX || lo > UINT64_MAX - size)
		size = 1;
	/* C++: the linkage name demangled ("ns::cache<int>::g"), else the name */
	const char *link = dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ? dwarf_formstring(&a) :
	                   dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a) ?
	                   dwarf_formstring(&a) : NULL;
	const char *name = dwarf_attr_integrate(die, DW_AT_name, &a) ? dwarf_formstring(&a) : NULL;
	const char *shown = link ? ha_demangled_name(pool, link) : ha_strpool_intern(pool, name);
	const char *file = decl_file(die);
	int line = 0;
	if (dwarf_decl_line(die, &line) != 0 || line < 0)
		line = 0;
	struct var **vp = tls ? &mv->t : &mv->v;
	size_t *n = tls ? &mv->tn : &mv->n, *cap = tls ? &mv->tcap : &mv->cap;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct var *v = realloc(*vp, c * sizeof *v);
		if (!v)
			return;
		*vp = v;
		*cap = c;
	}
	(*vp)[(*n)++] = (struct var){ lo, lo + size, shown, ha_strpool_intern(pool, file), line };
}

/* The variables of one unit, depth first, within *budget DIEs. */
static void walk_unit(struct ha_strpool *pool, struct modvars *mv, Dwarf_Die *cu,
                      size_t *budget)
{
	Dwarf_Die st[DEPTH_MAX];
	int d = 0;
	if (dwarf_child(cu, &st[0]) != 0)
		return;
	for (;;) {
		if (*budget == 0)
			return;
		--*budget;
		int tag = dwarf_tag(&st[d]);
		if (tag == DW_TAG_variable)
			add_var(pool, mv, &st[d]);
		if (scope_holds_vars(tag) && d + 1 < DEPTH_MAX && dwarf_haschildren(&st[d]) > 0 &&
		    dwarf_child(&st[d], &st[d + 1]) == 0) {
			d++;
			continue;
		}
		/* the next sibling, or the parent's (its children done) */
		for (;;) {
			Dwarf_Die next;
			if (dwarf_siblingof(&st[d], &next) == 0) {
				st[d] = next;
				break;
			}
			if (d == 0)
				return;
			d--;
		}
	}
}

static int by_lo(const void *a, const void *b)
{
	const struct var *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void index_module(struct ha_strpool *pool, struct modvars *mv)
{
	Dwarf *dw = dwfl_module_getdwarf(mv->mod, &mv->bias);
	if (!dw)
		return;
	size_t budget = DIE_BUDGET;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie;
	uint8_t unit_type;
	while (budget > 0 && dwarf_get_units(dw, cu, &cu, NULL, &unit_type, &cudie, NULL) == 0)
		if (unit_type == DW_UT_compile || unit_type == DW_UT_partial)
			walk_unit(pool, mv, &cudie, &budget);
	if (mv->n)
		qsort(mv->v, mv->n, sizeof *mv->v, by_lo);
	if (mv->tn)
		qsort(mv->t, mv->tn, sizeof *mv->t, by_lo);
}

/* The module's index, made on first use. */
static struct modvars *vars_of(struct ha_sym_vars *vs, struct ha_strpool *pool, Dwfl_Module *mod)
{
	Dwarf_Addr start = 0;
	dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
	for (size_t i = 0; i < vs->n; i++)
		if (vs->m[i].mod == mod && vs->m[i].start == start)
			return &vs->m[i];
	struct modvars *mv = &vs->m[vs->next];
	vs->next = (vs->next + 1) % VARS_MODULES;
	if (vs->n < VARS_MODULES)
		vs->n++;
	else {
		free(mv->v);
		free(mv->t);
	}
	*mv = (struct modvars){ .mod = mod, .start = start };
	index_module(pool, mv);
	return mv;
}

int ha_sym_var_in(struct ha_sym_vars **vs, struct ha_strpool *pool, Dwfl_Module *mod,
                  uint64_t addr, int tls, const char **name, const char **file, int *line)
{
	*name = *file = "";
	*line = 0;
	if (!*vs && !(*vs = calloc(1, sizeof **vs)))
		return -1;
	const struct modvars *mv = vars_of(*vs, pool, mod);
	/* modulo 2^64: a module loaded below its link address (a bias that
	 * wraps, as libdwfl gives for a first segment not page-aligned) too */
	uint64_t a = tls ? addr : addr - mv->bias;
	const struct var *vv = tls ? mv->t : mv->v;
	/* the last variable starting at or before a, and a few before it
	 * (one may lie inside another: a union's, a section's symbol) */
	size_t lo = 0, hi = tls ? mv->tn : mv->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (vv[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo, tries = 0; k > 0 && tries < 8; k--, tries++) {
		const struct var *v = &vv[k - 1];
		if (a < v->hi) {
			*name = v->name;
			*file = v->file;
			*line = v->line;
			return 0;
		}
	}
	return -1;
}
