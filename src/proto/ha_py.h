/*
 * ha_py.h -- the wire contract for Python frames (issue 37), for both
 * sides: what the attacher tells the agent about the target's CPython
 * (struct ha_py_walk, inside HA_MSG_CONFIG), and what the agent writes
 * after a sample when it walked the sampling thread's frame chain
 * (struct ha_rec_py and its frames, flag HA_REC_F_PY).
 *
 * Why in the agent, at sample time: the thread's frame chain changes as
 * soon as the allocation returns, and only the thread itself changes it,
 * so read in the hook it is consistent, even when the thread runs without
 * the GIL (a C extension in sqlite3_step).  The agent takes the thread's
 * own state (PyGILState_GetThisThreadState, a lock-free TSS lookup), never
 * the GIL holder's.
 *
 * What the agent records is raw and small: the code object's address, the
 * instruction offset, and two words to tell a code object from a later one
 * at the same address (co_firstlineno, and a hash of its name's and file
 * name's characters: ha_py_ident below).  The attacher reads names, file
 * names and line tables from the target's memory (src/pyframes/) and
 * merges the frames into the native stack:
 * each eval-loop frame (_PyEval_EvalFrameDefault) takes one run of Python
 * frames (HA_PY_RUN_END closes a run), innermost first.
 *
 * The chain's shapes (DESIGN.md, "CPython frames"):
 *   HA_PY_CHAIN_FRAMEOBJ (3.8-3.10): tstate->frame, PyFrameObject.f_back,
 *       f_code, int f_lasti (bytes in 3.8/3.9, code units in 3.10: the
 *       agent records bytes); every frame is a run of its own.
 *   HA_PY_CHAIN_CFRAME (3.11, 3.12): tstate->cframe->current_frame,
 *       _PyInterpreterFrame.previous, f_code, prev_instr (a pointer into
 *       the code object at code_code_adaptive); 3.11: is_entry closes a
 *       run; 3.12: a frame owned by the C stack (owner == 3, the eval
 *       loop's shim frame) closes the run before it and is not recorded
 *       (an empty run is: see struct ha_py_frame).
 *   HA_PY_CHAIN_DIRECT (3.13+): tstate->current_frame, f_executable
 *       (checked to be a code object), instr_ptr, owner as in 3.12.
 */
#ifndef HA_PY_H
#define HA_PY_H

#include <stdint.h>

enum ha_py_chain {
	HA_PY_CHAIN_NONE = 0,      /* no CPython in the target: walk nothing */
	HA_PY_CHAIN_FRAMEOBJ = 1,
	HA_PY_CHAIN_CFRAME = 2,
	HA_PY_CHAIN_DIRECT = 3,
};

/* Frame owner that marks the eval loop's shim frame (3.12+). */
#define HA_PY_OWNER_CSTACK 3
/* No such field in this version. */
#define HA_PY_NO_FIELD 0xffffu

/* What the agent needs to walk a thread's chain: target addresses (the
 * attacher resolved them in the target's CPython module) and field
 * offsets (bytes).  72 bytes, inside struct ha_msg_config. */
struct ha_py_walk {
	uint64_t get_tstate;      /* PyGILState_GetThisThreadState          */
	uint64_t code_type;       /* &PyCode_Type                             */
	uint64_t unicode_type;    /* &PyUnicode_Type                          */
	uint64_t finalizing;      /* &_PyRuntime._finalizing: a pointer word,
	                           * non-zero once the interpreter finalizes:
	                           * the agent then walks nothing */
	uint8_t  chain;           /* enum ha_py_chain                         */
	uint8_t  depth_max;       /* frames recorded at most (<= HA_PY_DEPTH_MAX) */
	uint16_t lasti_units;     /* FRAMEOBJ: bytes per f_lasti unit (1 or 2); else unused */
	uint16_t tstate_frame;    /* FRAMEOBJ: frame; CFRAME: cframe; DIRECT: current_frame */
	uint16_t cframe_current;  /* CFRAME: _PyCFrame.current_frame           */
	uint16_t frame_back;      /* f_back / previous                        */
	uint16_t frame_code;      /* f_code / f_executable                    */
	uint16_t frame_lasti;     /* f_lasti (int) / prev_instr / instr_ptr (pointer) */
	uint16_t frame_is_entry;  /* 3.11: is_entry (char); else HA_PY_NO_FIELD */
	uint16_t frame_owner;     /* 3.12+: owner (char); else HA_PY_NO_FIELD   */
	uint16_t code_adaptive;   /* CFRAME/DIRECT: offsetof co_code_adaptive  */
	uint16_t code_name;       /* co_name                                  */
	uint16_t code_firstlineno; /* co_firstlineno (int)                     */
	uint16_t object_type;     /* ob_type (8 in every version)             */
	uint16_t code_qualname;   /* 3.11+: co_qualname; else HA_PY_NO_FIELD   */
	uint16_t code_filename;   /* co_filename                              */
	/* A str (PyASCIIObject): its length (characters), its state word (4
	 * bytes) and the bit-fields there, where its characters start (compact
	 * ASCII: sizeof PyASCIIObject; other compact: sizeof
	 * PyCompactUnicodeObject) */
	uint8_t  str_length, str_state, str_ascii_size, str_compact_size;
	uint8_t  str_kind_shift, str_kind_mask, str_compact_bit, str_ascii_bit;
	uint8_t  pad[2];
};

#define HA_PY_DEPTH_MAX 128u

/* One Python frame, innermost first.  lasti: the instruction's offset in
 * bytes from the start of the code (what PyCode_Addr2Line takes), with
 * HA_PY_RUN_END set on the last frame of a run (the one its eval loop was
 * entered with).
 *
 * code 0 (lasti HA_PY_RUN_END, the rest 0): an empty run, an eval loop
 * with no Python frame of its own on the chain.  3.11 and later unlink a
 * returning frame before they clear it (GH-99729), so an allocation made
 * by that clear (a frame object made for the caller when a traceback
 * holds the dying frame, a finalizer's) comes from an eval loop whose
 * frames are all gone; from 3.12 its shim frame is still there and says
 * so (two shims in a row, or a shim first).  (3.11 clears an entry
 * frame in _PyEval_Vector, after its eval loop returned.) */
#define HA_PY_RUN_END 0x80000000u
struct ha_py_frame {
	uint64_t code;            /* PyCodeObject *                            */
	uint64_t ident;           /* ha_py_ident of it: with firstlineno, tells
	                           * a code object from a later one at the same
	                           * address */
	uint32_t lasti;           /* | HA_PY_RUN_END                           */
	int32_t  firstlineno;
};

/* A code object's identity by content, what the agent computes at sample
 * time and the attacher's reader again when it names the frame: a hash of
 * the characters of its name (co_qualname from 3.11, else co_name), then
 * of its file name (co_filename), the last HA_PY_IDENT_TAIL bytes of each
 * with its length and kind.  Pointers cannot tell: a code object freed and
 * the next one made alike (exec, compile, a module's body after its
 * import) take the same address, and so do their name and file name
 * strings, in pymalloc's last-freed-first order; if the object the reader
 * finds there has another name or file, the frame is "(code object gone)",
 * never named after it.  Start from HA_PY_IDENT_SEED; a pointer that is
 * not a compact str adds only HA_PY_IDENT_NOSTR as its length
 * (ha_py_ident_nostr). */
#define HA_PY_IDENT_TAIL 64u
#define HA_PY_IDENT_SEED 0xcbf29ce484222325ull
#define HA_PY_IDENT_NOSTR (-1ll)
#define HA_PY_IDENT_LENGTH_MAX (1ll << 30)

/* A pointer either side follows (the agent) or takes for one (the
 * reader): a user-space address, aligned. */
static inline int ha_py_ptr_ok(uint64_t p)
{
	return p >= 4096 && p < (1ull << 47) && (p & 7) == 0;
}

/* Of a str whose length and state word are these: its characters' bytes
 * (and where they start, in *data_off, and its kind) if it is a compact
 * string of a known kind, else -1. */
static inline int64_t ha_py_str_bytes(const struct ha_py_walk *w, int64_t length, uint32_t state,
                                      uint32_t *data_off, uint32_t *kind)
{
	uint32_t k = state >> w->str_kind_shift & w->str_kind_mask;
	int ascii = (state >> w->str_ascii_bit & 1) != 0;
	if (length < 0 || length > HA_PY_IDENT_LENGTH_MAX || !(state >> w->str_compact_bit & 1) ||
	    (k != 1 && k != 2 && k != 4) || (ascii && k != 1))
		return -1;
	*kind = k;
	*data_off = ascii ? w->str_ascii_size : w->str_compact_size;
	return length * (int64_t)k;
}

#define HA_PY_IDENT_PRIME 0x100000001b3ull

/* h with a string's length and kind, after its bytes. */
static inline uint64_t ha_py_ident_end(uint64_t h, int64_t length, uint32_t kind)
{
	h = (h ^ (uint64_t)length) * HA_PY_IDENT_PRIME;
	h = (h ^ kind) * HA_PY_IDENT_PRIME;
	return h ^ h >> 31;
}

/* h with a string's last n (<= HA_PY_IDENT_TAIL) bytes at tail, its
 * length and kind. */
static inline uint64_t ha_py_ident_add(uint64_t h, const uint8_t *tail, uint32_t n, int64_t length,
                                       uint32_t kind)
{
	uint32_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v;
		__builtin_memcpy(&v, tail + i, sizeof v);
		h = (h ^ v) * HA_PY_IDENT_PRIME;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ tail[i]) * HA_PY_IDENT_PRIME;
	return ha_py_ident_end(h, length, kind);
}

/* h with a pointer that is not a compact str. */
static inline uint64_t ha_py_ident_nostr(uint64_t h)
{
	return ha_py_ident_end(h, HA_PY_IDENT_NOSTR, 0);
}

/* ha_rec_py.flags */
#define HA_PY_F_TRUNCATED 0x1u    /* more frames than depth_max: outer ones left out */
#define HA_PY_F_INVALID   0x2u    /* the walk met a frame that failed a check:
                                   * the frames before it are recorded */

/* Follows a sample record with HA_REC_F_PY, after its stack copy (rounded
 * up to HA_RING_ALIGN) or its struct ha_rec_sref; n frames follow it. */
struct ha_rec_py {
	uint32_t n;
	uint32_t flags;           /* HA_PY_F_* */
};

_Static_assert(sizeof(struct ha_py_walk) == 72, "py walk layout");
_Static_assert(sizeof(struct ha_py_frame) == 24, "py frame layout");

#endif /* HA_PY_H */
