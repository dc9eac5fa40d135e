/* py_detect.c -- the target's CPython: its module, version, offsets and
 * the addresses the agent and the merge need (py_detect.h).
 *
 * Order of the candidates: the executable first (symbol lookup in the
 * process starts there, so its _PyRuntime is the one everything uses),
 * then every libpython* module.  Only these are opened: a libc or a
 * library of the program is never parsed for this.
 *
 * What is read from the target (Py_Version, the bytes of Py_GetVersion
 * and the string it points at, 3.13's _Py_DebugOffsets) is checked before
 * use: a version must be 3.N with N < 100, a string must parse, the debug
 * offsets pass ha_py_offsets_debug's bounds. */
#define _GNU_SOURCE
#include "py_detect.h"
#include "py_elf.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

enum {
	S_RUNTIME, S_VERSION, S_GETVERSION, S_TSTATE, S_CODE, S_UNICODE, S_BYTES, S_EVAL,
	S_EVAL_COLD, S_REFTOTAL, S_GETREFTOTAL, S_GLOBALREFTOTAL, S_NEGREF, S_MERGEZERO, S_N
};

static const char *const sym_names[S_N] = {
	[S_RUNTIME] = "_PyRuntime",
	[S_VERSION] = "Py_Version",
	[S_GETVERSION] = "Py_GetVersion",
	[S_TSTATE] = "PyGILState_GetThisThreadState",
	[S_CODE] = "PyCode_Type",
	[S_UNICODE] = "PyUnicode_Type",
	[S_BYTES] = "PyBytes_Type",
	[S_EVAL] = "_PyEval_EvalFrameDefault",
	[S_EVAL_COLD] = "_PyEval_EvalFrameDefault.cold",
	/* Py_REF_DEBUG (every debug build) */
	[S_REFTOTAL] = "_Py_RefTotal",
	[S_GETREFTOTAL] = "_Py_GetRefTotal",
	[S_GLOBALREFTOTAL] = "_Py_GetGlobalRefTotal",
	[S_NEGREF] = "_Py_NegativeRefcount",
	/* Py_GIL_DISABLED (3.13t) */
	[S_MERGEZERO] = "_Py_MergeZeroLocalRefcount",
};

int ha_py_version_from_name(const char *path, int *major, int *minor, char *flags, size_t flagslen)
{
	const char *b = ha_base_name(path), *p;
	size_t k = 0;
	long n;
	char *end;

	if (strncmp(b, "libpython", 9) == 0)
		p = b + 9;
	else if (strncmp(b, "python", 6) == 0)
		p = b + 6;
	else
		return -1;
	if (p[0] < '2' || p[0] > '9' || p[1] != '.' || !isdigit((unsigned char)p[2]))
		return -1;
	n = strtol(p + 2, &end, 10);
	if (n < 0 || n > 99)
		return -1;
	while (isalpha((unsigned char)*end) && k + 1 < flagslen && k < 7)
		flags[k++] = *end++;
	if (flagslen)
		flags[k] = '\0';
	/* what may follow: nothing (the executable), ".so...", "-..." */
	if (*end != '\0' && *end != '.' && *end != '-')
		return -1;
	*major = p[0] - '0';
	*minor = (int)n;
	return 0;
}

/* "M.N." at s (M a digit from 2, N up to 3 digits): M and N. */
static int parse_version(const char *s, size_t len, int *major, int *minor)
{
	size_t i = 2;
	int n = 0;

	if (len < 4 || s[0] < '2' || s[0] > '9' || s[1] != '.')
		return -1;
	while (i < len && i < 5 && isdigit((unsigned char)s[i]))
		n = n * 10 + (s[i++] - '0');
	if (i == 2 || i >= len || s[i] != '.')
		return -1;
	*major = s[0] - '0';
	*minor = n;
	return 0;
}

/* Does the string at addr in pid read "M.N."? */
static int version_at(pid_t pid, uint64_t addr, int *major, int *minor)
{
	char s[16];
	return ha_remote_read(pid, addr, s, sizeof s) == 0 ? parse_version(s, sizeof s, major, minor)
	                                                   : -1;
}

int ha_py_version_from_code(pid_t pid, uint64_t fn, uint64_t size, int *major, int *minor)
{
	unsigned char code[256];
	size_t n = size < sizeof code ? (size_t)size : sizeof code;

	if (n < 5 || ha_remote_read(pid, fn, code, n) < 0)
		return -1;
	for (size_t i = 0; i + 5 <= n; i++) {
		int32_t disp;
		uint32_t imm;
		int found = 0;
		/* REX.W lea reg, [rip + disp32] (position-independent code) */
		if (i + 7 <= n && (code[i] & 0xf8) == 0x48 && code[i + 1] == 0x8d &&
		    (code[i + 2] & 0xc7) == 0x05) {
			memcpy(&disp, code + i + 3, 4);
			found = version_at(pid, fn + i + 7 + (uint64_t)(int64_t)disp, major, minor) == 0;
		}
		/* mov $imm32, %r32 (a non-PIE executable: an absolute address) */
		if ((code[i] & 0xf8) == 0xb8) {
			memcpy(&imm, code + i + 1, 4);
			found = found || version_at(pid, imm, major, minor) == 0;
		}
		if (found)
			return 0;
	}
	return -1;
}

/* The offset-0 mapping of the executable (/proc/PID/exe's inode), or NULL. */
static const struct ha_map *exe_module(pid_t pid, const struct ha_maps *maps)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	if (stat(path, &st) < 0)
		return NULL;
	for (size_t i = 0; i < maps->n; i++) {
		const struct ha_map *m = &maps->v[i];
		if (m->offset == 0 && m->path[0] == '/' && m->inode == (uint64_t)st.st_ino &&
		    (m->dev >> 32) == (uint64_t)major(st.st_dev) &&
		    (m->dev & 0xffffffffu) == (uint64_t)minor(st.st_dev))
			return m;
	}
	return NULL;
}

/* Is m a libpython module's offset-0 mapping? */
static int is_libpython(const struct ha_map *m)
{
	return m->offset == 0 && m->path[0] == '/' &&
	       strncmp(ha_maps_module_name(m->path), "libpython", 9) == 0;
}

/* The data objects the executable may hold a copy of (copy relocations). */
static const int copied[] = { S_RUNTIME, S_VERSION, S_CODE, S_UNICODE, S_BYTES };

/* The module defining _PyRuntime and PyGILState_GetThisThreadState (a
 * function: the interpreter's code, not a copy of its data), its symbols
 * in syms; NULL if none (then *old: a CPython without _PyRuntime, before
 * 3.7, if one was seen, its symbols in syms).  When the module is a
 * libpython and the executable defines one of its data objects too, the
 * executable's copy (a copy relocation of a non-PIC or PIE program) is the
 * one in use. */
static const struct ha_map *find_module(pid_t pid, const struct ha_maps *maps,
                                        struct ha_py_sym *syms, int *opened,
                                        const struct ha_map **old)
{
	const struct ha_map *exe = exe_module(pid, maps), *mod = NULL;
	struct ha_py_sym exe_syms[S_N], old_syms[S_N];
	int exe_read = 0;
	const char *seen = "";

	*opened = 0;
	*old = NULL;
	memcpy(exe_syms, syms, sizeof exe_syms);
	if (exe && ha_py_elf_lookup(pid, exe, exe_syms, S_N) == 0) {
		(*opened)++;
		exe_read = 1;
		if (exe_syms[S_TSTATE].addr && exe_syms[S_RUNTIME].addr) {
			memcpy(syms, exe_syms, sizeof exe_syms);
			return exe;
		}
		if (exe_syms[S_TSTATE].addr) {
			*old = exe;
			memcpy(old_syms, exe_syms, sizeof old_syms);
		}
	}
	for (size_t i = 0; i < maps->n && !mod; i++) {
		const struct ha_map *m = &maps->v[i];
		if (m == exe || !is_libpython(m) || strcmp(seen, m->path) == 0)
			continue;   /* (or the same file's mapping again) */
		seen = m->path;
		if (ha_py_elf_lookup(pid, m, syms, S_N) == 0) {
			(*opened)++;
			if (syms[S_TSTATE].addr && syms[S_RUNTIME].addr) {
				mod = m;
			} else if (syms[S_TSTATE].addr && !*old) {
				*old = m;
				memcpy(old_syms, syms, sizeof old_syms);
			}
		}
	}
	if (!mod && *old)
		memcpy(syms, old_syms, sizeof old_syms);
	for (size_t k = 0; mod && exe_read && k < sizeof copied / sizeof copied[0]; k++)
		if (exe_syms[copied[k]].addr)
			syms[copied[k]] = exe_syms[copied[k]];
	return mod;
}

/* Which version: Py_Version, else the name, else Py_GetVersion's string. */
static int find_version(pid_t pid, const struct ha_map *mod, const struct ha_py_sym *syms,
                        struct ha_py_target *out, char *flags, size_t flagslen)
{
	int major, minor;

	if (ha_py_version_from_name(mod->path, &major, &minor, flags, flagslen) < 0) {
		flags[0] = '\0';
		major = minor = -1;
	}
	if (syms[S_VERSION].addr && syms[S_VERSION].size >= 4) {
		uint32_t v;
		if (ha_remote_read(pid, syms[S_VERSION].addr, &v, sizeof v) == 0 && (v >> 24) == 3) {
			out->hexversion = v;
			out->major = 3;
			out->minor = (int)(v >> 16 & 0xff);
			out->version_from = HA_PY_VERSION_SYMBOL;
			return 0;
		}
	}
	if (major > 0) {
		out->major = major;
		out->minor = minor;
		out->version_from = HA_PY_VERSION_NAME;
		return 0;
	}
	if (syms[S_GETVERSION].addr &&
	    ha_py_version_from_code(pid, syms[S_GETVERSION].addr, syms[S_GETVERSION].size, &major,
	                            &minor) == 0) {
		out->major = major;
		out->minor = minor;
		out->version_from = HA_PY_VERSION_STRING;
		return 0;
	}
	return -1;
}

/* The offsets: the table's, or from 3.13 on the target's own. */
static int find_offsets(pid_t pid, struct ha_py_target *out, char *err, size_t errlen)
{
	const struct ha_py_offsets *t = ha_py_offsets_table(out->major, out->minor);
	unsigned char buf[HA_PY_DEBUG_OFFSETS_BYTES];
	uint32_t hex;

	if (!t) {
		ha_err(err, errlen, "CPython %d.%d in %s is not supported (3.8 to 3.13)", out->major,
		       out->minor, out->module);
		return 1;
	}
	out->off = *t;
	if (out->minor < 13)
		return 0;
	if (ha_remote_read(pid, out->runtime, buf, sizeof buf) < 0) {
		ha_err(err, errlen, "cannot read CPython's _PyRuntime at %#llx in %s",
		       (unsigned long long)out->runtime, out->module);
		return -1;
	}
	if (ha_py_offsets_debug(buf, sizeof buf, &out->off, &hex, err, errlen) < 0)
		return 1;
	if (out->hexversion && (hex >> 16) != (out->hexversion >> 16)) {
		ha_err(err, errlen, "CPython in %s: Py_Version %#x but debug offsets of %#x",
		       out->module, out->hexversion, hex);
		return 1;
	}
	out->hexversion = hex;
	out->debug_offsets = 1;
	out->table_diff = ha_py_offsets_diff(t, &out->off);
	return 0;
}

int ha_py_detect(pid_t pid, const struct ha_maps *maps, struct ha_py_target *out, char *err,
                 size_t errlen)
{
	struct ha_py_sym syms[S_N];
	const struct ha_map *mod, *old;
	char flags[8];
	int opened, rc;

	memset(out, 0, sizeof *out);
	for (int k = 0; k < S_N; k++)
		syms[k].name = sym_names[k];
	mod = find_module(pid, maps, syms, &opened, &old);
	if (!mod && old) {
		snprintf(out->module, sizeof out->module, "%s", old->path);
		if (find_version(pid, old, syms, out, flags, sizeof flags) == 0)
			ha_err(err, errlen, "CPython %d.%d in %s is not supported (3.8 to 3.13)",
			       out->major, out->minor, out->module);
		else
			ha_err(err, errlen, "a CPython older than 3.7 in %s (not supported: 3.8 to 3.13)",
			       out->module);
		return 1;
	}
	if (!mod) {
		ha_err(err, errlen, "no CPython: no module of the target defines _PyRuntime and "
		                    "PyGILState_GetThisThreadState (%d looked at)", opened);
		return 1;
	}
	snprintf(out->module, sizeof out->module, "%s", mod->path);
	if (find_version(pid, mod, syms, out, flags, sizeof flags) < 0) {
		ha_err(err, errlen, "CPython in %s: its version is unknown (no Py_Version, no "
		                    "version in its name or in Py_GetVersion)", out->module);
		return 1;
	}
	if (strchr(flags, 'd') || syms[S_REFTOTAL].addr || syms[S_GETREFTOTAL].addr ||
	    syms[S_GLOBALREFTOTAL].addr || syms[S_NEGREF].addr) {
		ha_err(err, errlen, "CPython %d.%d in %s is a debug build (not supported)", out->major,
		       out->minor, out->module);
		return 1;
	}
	if (strchr(flags, 't') || syms[S_MERGEZERO].addr) {
		ha_err(err, errlen, "CPython %d.%d in %s is free-threaded (not supported)",
		       out->major, out->minor, out->module);
		return 1;
	}
	out->runtime = syms[S_RUNTIME].addr;
	rc = find_offsets(pid, out, err, errlen);
	if (rc != 0)
		return rc;
	for (int k = S_TSTATE; k <= S_EVAL; k++) {
		if (!syms[k].addr) {
			ha_err(err, errlen, "CPython %d.%d in %s: no symbol %s", out->major, out->minor,
			       out->module, sym_names[k]);
			return 1;
		}
	}
	if (syms[S_EVAL].size == 0 || syms[S_EVAL].size > (64u << 20)) {
		ha_err(err, errlen, "CPython %d.%d in %s: _PyEval_EvalFrameDefault's size is %llu",
		       out->major, out->minor, out->module, (unsigned long long)syms[S_EVAL].size);
		return 1;
	}
	out->code_type = syms[S_CODE].addr;
	out->unicode_type = syms[S_UNICODE].addr;
	out->bytes_type = syms[S_BYTES].addr;
	out->eval_start = syms[S_EVAL].addr;
	out->eval_end = syms[S_EVAL].addr + syms[S_EVAL].size;
	if (syms[S_EVAL_COLD].addr && syms[S_EVAL_COLD].size < (64u << 20)) {
		out->eval_cold_start = syms[S_EVAL_COLD].addr;
		out->eval_cold_end = syms[S_EVAL_COLD].addr + syms[S_EVAL_COLD].size;
	}
	ha_py_walk_fill(&out->walk, &out->off, syms[S_TSTATE].addr, out->code_type,
	                out->unicode_type, out->runtime);
	return 0;
}
