/* dwarf_names.c -- function names as a C++ programmer reads them (see
 * dwarf_names.h): linkage names demangled with libstdc++'s demangler, GCC's
 * " [clone .xxx]" copies folded into one name, and for C++ functions with
 * internal linkage (no linkage name in DWARF) the signature spelled from
 * their DWARF the way the demangler would print it. */
#define _GNU_SOURCE
#include "dwarf_names.h"

#include <dwarf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler (C linkage, declared in <cxxabi.h> for C++). */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* Demangle (C++ names start with _Z) and intern.  A " [clone .xxx]" suffix
 * (GCC's specialised copies) is dropped so that every copy of a function
 * has one name. */
const char *ha_demangled_name(struct ha_strpool *pool, const char *name)
{
	if (name && name[0] == '_' && name[1] == 'Z') {
		int status = -1;
		char *d = __cxa_demangle(name, NULL, NULL, &status);
		if (d && status == 0) {
			char *c = strstr(d, " [clone ");
			if (c)
				*c = '\0';
			const char *r = ha_strpool_intern(pool, d);
			free(d);
			return r;
		}
		free(d);
	}
	return ha_strpool_intern(pool, name);
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
static const char *cxx_qualified_name(struct ha_strpool *pool, Dwarf_Die *die)
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
	return b.bad ? NULL : ha_strpool_intern(pool, b.b);
}

/* Name of a function DIE: its linkage name demangled; for C++ without one,
 * sym (the ELF symbol at the address, for an out-of-line frame) or the
 * DWARF-built signature; else DW_AT_name. */
const char *ha_dwarf_func_name(struct ha_strpool *pool, Dwarf_Die *die, int is_cxx, const char *sym)
{
	Dwarf_Attribute a;
	const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (n)
		return ha_demangled_name(pool, n);
	if (is_cxx) {
		const char *q;
		if (sym && sym[0] == '_' && sym[1] == 'Z')
			return ha_demangled_name(pool, sym);
		/* main, extern "C": the plain name is the whole name */
		if (!sym && !dwarf_hasattr_integrate(die, DW_AT_external)) {
			q = cxx_qualified_name(pool, die);
			if (q)
				return q;
		}
	}
	n = dwarf_diename(die);
	return n ? ha_demangled_name(pool, n) : "";
}
