/*
 * pymerge.h -- a sample's Python frames into its native stack (issue 37;
 * the contract of what the agent records is src/proto/ha_py.h).
 *
 * Each eval-loop frame of the native stack (a pc inside
 * _PyEval_EvalFrameDefault, or its .cold part the compiler split off) takes one run of Python frames, innermost
 * first, the way memray and py-spy merge.  A Python frame becomes a pc of
 * its own, HA_PC_PY_BASE + id, where id names (function, file, line) in
 * this session; the first time an id is made it goes to the writer
 * (HA_WMSG_PYFRAME), before any stack that holds it, and the writer
 * stores it as a frame of module "py".
 *
 * An empty run (a frame of code 0, ha_py.h: an eval loop whose frames
 * are gone, clearing the one it returns from; 3.12 and later) puts nothing
 * in place of its eval frame, which stays as it is: the allocation came
 * from the eval loop itself.
 *
 * When the counts do not agree the native frames are kept as
 * they are and the sample is counted (py_unmatched).  Where one
 * side was cut (the stack copy at its cap, or the Python walk at its
 * depth), the runs that can be matched from the inside are, and what is
 * left over is kept: further Python runs go outside the last native frame
 * when the native walk was cut, further eval frames stay native when the
 * Python walk was.
 *
 * Owned by the collector thread.  Names come through a resolver (the
 * reader of code objects in the target, src/pyframes/), cached here by
 * what the agent recorded: (code, ident, firstlineno, lasti).
 */
#ifndef HA_PYMERGE_H
#define HA_PYMERGE_H

#include <stdint.h>
#include "ha_py.h"
#include "hashtab.h"
#include "queue.h"

/* Pcs of Python frames: above every user-space address, below
 * HA_PC_NOT_UNWOUND (writer.h). */
#define HA_PC_PY_BASE 0xffff800000000000ull
#define HA_PC_PY_MAX  0xfffffffffffff000ull
static inline int ha_pc_is_py(uint64_t pc)
{
	return pc >= HA_PC_PY_BASE && pc < HA_PC_PY_MAX;
}

/* What a frame names.  Returns 0 (func, file, line set; strings valid
 * until the resolver goes), or -1: the code object is gone (freed, its
 * address reused) or unreadable. */
typedef int (*ha_py_resolve_fn)(void *ctx, const struct ha_py_frame *f, const char **func,
                                const char **file, int *line);

struct ha_pymerge_stats {
	uint64_t samples;      /* samples with Python frames */
	uint64_t merged;       /* ...merged into their native stack */
	uint64_t unmatched;    /* ...whose runs and eval frames did not agree */
	uint64_t frames_gone;  /* frames whose code object could not be read */
};

struct ha_pymerge {
	uint64_t eval[2][2];         /* _PyEval_EvalFrameDefault in the target:
	                              * [lo, hi) of its code and of its .cold part */
	ha_py_resolve_fn resolve;
	void *resolve_ctx;
	struct ha_queue *to_writer;
	struct ha_hashtab by_rec;    /* (code, name, firstlineno, lasti) -> id */
	struct ha_hashtab by_name;   /* (function, file, line) -> id */
	struct pyf_entry *names;     /* id - 1 -> entry */
	uint32_t n_names;
	size_t cap_names;
	struct ha_pymerge_stats st;
};

void ha_pymerge_init(struct ha_pymerge *m, const uint64_t eval[2][2], ha_py_resolve_fn resolve,
                     void *ctx, struct ha_queue *to_writer);
void ha_pymerge_free(struct ha_pymerge *m);

/* Merge nf frames (innermost first; HA_PY_RUN_END closes a run; pyflags
 * HA_PY_F_*) into pcs[n] (innermost first, room for max).  native_cut: the
 * native walk did not reach the thread's start (stack copy cut).  Returns
 * the new count. */
int ha_pymerge(struct ha_pymerge *m, uint64_t *pcs, int n, int max, int native_cut,
               const struct ha_py_frame *f, uint32_t nf, uint32_t pyflags);

/* Where the agent's wrap of CPython's allocators stands (ha_proto.h, enum
 * ha_py_wrap, as the ring header says), in the user's words. */
const char *ha_py_wrap_words(uint32_t state);

/* To the writer, before the stacks that use it: what pc HA_PC_PY_BASE + id
 * names.  Strings follow the struct. */
struct ha_wmsg_pyframe {
	struct ha_qmsg q;
	uint32_t id;
	int line;
	uint32_t func_len, file_len;  /* without their NULs */
	char text[];                  /* func NUL file NUL */
};

#endif
