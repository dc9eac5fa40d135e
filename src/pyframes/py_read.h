/* py_read.h -- Python frames named: a code object the agent recorded
 * (struct ha_py_frame, src/proto/ha_py.h) read from the target's memory
 * into its function, file and line.
 *
 * Contract.
 *   - Everything is read with process_vm_readv from a live target, and is
 *     untrusted: each object's type is checked (the code object's against
 *     &PyCode_Type, its strings' against &PyUnicode_Type, its line table's
 *     against &PyBytes_Type), sizes are bounded (a name or file name is
 *     cut at HA_PY_STR_MAX characters, a line table over
 *     HA_PY_LINETABLE_MAX bytes is refused), strings come out as valid
 *     UTF-8 (what is not a character becomes U+FFFD; control characters
 *     are kept: the report layer escapes them).
 *   - A code object can be freed and its address reused, and so can its
 *     strings': the record's ident (the hash of its name's and file
 *     name's characters, ha_py_ident in src/proto/ha_py.h) and
 *     co_firstlineno must still be the object's, else HA_PY_CODE_GONE (the
 *     caller says "(code object gone)").
 *   - The cache: per (code, ident, firstlineno), the names and
 *     the decoded line table, so each code object is read once (a gone or
 *     unreadable one is remembered as such too).  Past HA_PY_CACHE_MAX
 *     entries or HA_PY_CACHE_BYTES of line tables the cache is emptied
 *     and fills again.  Strings go to a pool kept until the reader is
 *     freed (they are few: one per function and file; past
 *     HA_PY_POOL_BYTES, new ones come out as "?").
 *   - Owned by one thread; no locking. */
#ifndef HA_PY_READ_H
#define HA_PY_READ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "py_detect.h"

#define HA_PY_STR_MAX 1024                 /* characters of a name kept */
#define HA_PY_CACHE_MAX (1u << 18)         /* code objects cached */
#define HA_PY_CACHE_BYTES (64u << 20)      /* bytes of decoded line tables cached */
#define HA_PY_POOL_BYTES (64u << 20)       /* bytes of names and file names */

struct ha_py_reader;

/* A reader of process pid's CPython, as ha_py_detect found it (t is
 * copied).  NULL if out of memory. */
struct ha_py_reader *ha_py_reader_new(pid_t pid, const struct ha_py_target *t);
void ha_py_reader_free(struct ha_py_reader *r);

struct ha_py_loc {
	const char *func;        /* co_qualname (3.11+), else co_name */
	const char *file;        /* co_filename */
	int32_t line;            /* CPython's line of lasti; -1: none */
	int32_t firstlineno;     /* co_firstlineno */
};

enum {
	HA_PY_CODE_OK = 0,
	HA_PY_CODE_GONE = 1,     /* the address holds another object now */
	HA_PY_CODE_UNREADABLE = -1,  /* the memory could not be read, or held
	                              * no object of the right types */
};

/* The location of the frame the agent recorded as (code, ident,
 * firstlineno, lasti); lasti in bytes, HA_PY_RUN_END ignored.  HA_PY_CODE_OK
 * with *out filled (its strings live as long as r), or one of the others
 * with *out's strings "?" and line -1. */
int ha_py_code_resolve(struct ha_py_reader *r, uint64_t code, uint64_t ident,
                       int32_t firstlineno, uint32_t lasti, struct ha_py_loc *out);

/* The ident of the code object at code now, as the agent would record it
 * (the check programs' frames): 0, or -1 if it is not a readable code
 * object. */
int ha_py_code_ident(struct ha_py_reader *r, uint64_t code, uint64_t *ident);

/* The str object at addr in UTF-8 (cut at HA_PY_STR_MAX characters),
 * NUL-terminated in buf (4 * HA_PY_STR_MAX + 1 bytes suffice).  Its
 * length, or -1 if it is not a compact str (a string of 3.8-3.11 not
 * "ready" is not read). */
int ha_py_read_str(struct ha_py_reader *r, uint64_t addr, char *buf, size_t buflen);

/* The bytes object at addr: its size (at most max), the bytes in buf.
 * -1 if it is not a bytes object or is larger than max. */
long ha_py_read_bytes(struct ha_py_reader *r, uint64_t addr, uint8_t *buf, size_t max);

/* Statistics: code objects read, cache hits. */
void ha_py_reader_stats(const struct ha_py_reader *r, uint64_t *reads, uint64_t *hits);

#endif
