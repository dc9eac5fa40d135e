/* py_detect.h -- is there a CPython in the target, which, and where.
 *
 * The module that defines _PyRuntime is the interpreter: the executable
 * itself (Debian's python3.11, linked statically against libpython and
 * exporting it in .dynsym) or a libpython3.N.so it loaded.  Its version:
 * Py_Version read from the target's memory (3.11+), else the module's
 * file name (libpython3.N, python3.N), else the version string whose
 * address Py_GetVersion's code loads.  Supported: 3.8-3.13, neither a
 * debug build (Py_REF_DEBUG's symbols, a "d" in the name) nor a
 * free-threaded one (3.13t); anything else is "not a Python target" with
 * the reason, for the caller to say once.
 *
 * The offsets: the generated table's entry (py_offsets.h); from 3.13 on
 * those the target publishes in its _Py_DebugOffsets, compared with the
 * table (a difference is kept in table_diff, not an error: the target's
 * own word wins).  Nothing of the target is written; its memory is read
 * with process_vm_readv (the attacher needs ptrace rights to it anyway). */
#ifndef HA_PY_DETECT_H
#define HA_PY_DETECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ha_py.h"
#include "procmaps.h"
#include "py_offsets.h"

/* How the version was found. */
enum ha_py_version_from {
	HA_PY_VERSION_SYMBOL = 1,    /* Py_Version (3.11+) */
	HA_PY_VERSION_NAME = 2,      /* the module's file name */
	HA_PY_VERSION_STRING = 3,    /* the string Py_GetVersion formats */
};

struct ha_py_target {
	int major, minor;
	uint32_t hexversion;         /* PY_VERSION_HEX; 0 when known by name only */
	int version_from;            /* enum ha_py_version_from */
	char module[512];            /* path of the module defining _PyRuntime */
	struct ha_py_offsets off;    /* every offset the attacher and the agent use */
	int debug_offsets;           /* 1: off came from the target's _Py_DebugOffsets */
	const char *table_diff;      /* then: the first field where the table
	                              * differs (NULL: it agrees) */
	struct ha_py_walk walk;      /* for HA_MSG_CONFIG */
	uint64_t runtime;            /* &_PyRuntime */
	uint64_t code_type, unicode_type, bytes_type; /* &PyCode_Type, &PyUnicode_Type, &PyBytes_Type */
	/* _PyEval_EvalFrameDefault in the target: [start, end) from its
	 * symbol's value and st_size; its .cold part too when the module has
	 * a .symtab that names it (else 0, 0). */
	uint64_t eval_start, eval_end;
	uint64_t eval_cold_start, eval_cold_end;
};

/* Find the CPython of process pid, whose maps are maps.  0: found, *out
 * filled; 1: no CPython, or one that is not supported (err says which and
 * why, one line); -1: an error (err says it). */
int ha_py_detect(pid_t pid, const struct ha_maps *maps, struct ha_py_target *out, char *err,
                 size_t errlen);

/* Is addr inside _PyEval_EvalFrameDefault (its main or .cold part)?  For
 * a return address, pass it less 1 (a call may end the function). */
static inline int ha_py_in_eval(const struct ha_py_target *t, uint64_t addr)
{
	return (addr >= t->eval_start && addr < t->eval_end) ||
	       (addr >= t->eval_cold_start && addr < t->eval_cold_end);
}

/* The version in a module's file name: libpythonM.N[flags].so...,
 * pythonM.N[flags] (M a digit from 2: a CPython 2 is named, then refused);
 * *flags gets the ABI letters after N ("d" debug, "t" free-threaded, "m"
 * pymalloc before 3.8; "" none; at most 7).  0, or -1 if the name says
 * none. */
int ha_py_version_from_name(const char *path, int *major, int *minor, char *flags, size_t flagslen);

/* The version string Py_GetVersion's code (at fn, size bytes, in pid)
 * loads the address of: the first rip-relative lea (or, in a non-PIE
 * executable, mov of an absolute address) whose target reads "M.N."
 * (PY_VERSION, or the buffer it formats into).  0, or -1. */
int ha_py_version_from_code(pid_t pid, uint64_t fn, uint64_t size, int *major, int *minor);

#endif
