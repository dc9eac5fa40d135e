/* py_offsets.c -- the offsets of each CPython version: the generated table
 * (py_offsets_table.h), the ones a 3.13 target publishes in its
 * _Py_DebugOffsets, and the agent's struct ha_py_walk made of them.
 *
 * 3.13's _Py_DebugOffsets is read as the plain array of 64-bit words it is
 * (struct debug313 below mirrors CPython 3.13's Include/internal/
 * pycore_runtime.h field for field; tests/t_py_offsets.sh checks on a live
 * 3.13 that what it gives equals the table's entry, which comes from the
 * headers).  Everything in it is the target's, hence untrusted: each
 * offset used must lie inside the size its struct claims, and below
 * 64 KiB, or the whole is refused. */
#include "py_offsets.h"
#include "util.h"

#include <string.h>

const struct ha_py_offsets ha_py_offsets_all[] = {
#include "py_offsets_table.h"
};
const size_t ha_py_offsets_count = sizeof ha_py_offsets_all / sizeof ha_py_offsets_all[0];

const struct ha_py_offsets *ha_py_offsets_table(int major, int minor)
{
	for (size_t i = 0; i < ha_py_offsets_count; i++)
		if (ha_py_offsets_all[i].major == major && ha_py_offsets_all[i].minor == minor)
			return &ha_py_offsets_all[i];
	return NULL;
}

/* CPython 3.13's _Py_DebugOffsets, every field a uint64_t. */
struct debug313 {
	char cookie[8];
	uint64_t version, free_threaded;
	struct { uint64_t size, finalizing, interpreters_head; } runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules, sysdict, builtins,
		        ceval_gil, gil_runtime_state, gil_enabled, gil_locked, gil_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id, native_thread_id,
		        datastack_chunk, status;
	} thread_state;
	struct { uint64_t size, previous, executable, instr_ptr, localsplus, owner; } interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno, argcount,
		        localsplusnames, localspluskinds, co_code_adaptive;
	} code_object;
	struct { uint64_t size, ob_type; } pyobject;
	struct { uint64_t size, tp_name, tp_repr, tp_flags; } type_object;
	struct { uint64_t size, ob_item, ob_size; } tuple_object, list_object;
	struct { uint64_t size, ma_keys, ma_values; } dict_object;
	struct { uint64_t size, ob_fval; } float_object;
	struct { uint64_t size, lv_tag, ob_digit; } long_object;
	struct { uint64_t size, ob_size, ob_sval; } bytes_object;
	struct { uint64_t size, state, length, asciiobject_size; } unicode_object;
	struct { uint64_t size, collecting; } gc;
};
_Static_assert(sizeof(struct debug313) == 584, "3.13 _Py_DebugOffsets");
_Static_assert(sizeof(struct debug313) <= HA_PY_DEBUG_OFFSETS_BYTES, "read enough");

/* off (of a field of width bytes) inside a struct of size bytes, and
 * below 64 KiB (_PyRuntime is larger, its fields heapattach reads are
 * not): into *dst. */
static int take(uint64_t off, unsigned width, uint64_t size, uint16_t *dst)
{
	if (off >= size || size - off < width || off + width >= HA_PY_NO_FIELD)
		return -1;
	*dst = (uint16_t)off;
	return 0;
}

int ha_py_offsets_debug(const void *buf, size_t len, struct ha_py_offsets *out,
                        uint32_t *hexversion, char *err, size_t errlen)
{
	struct debug313 d;
	const struct ha_py_offsets *base = ha_py_offsets_table(3, 13);
	int bad = 0;

	if (len < sizeof d || !base) {
		ha_err(err, errlen, "CPython's debug offsets: %zu bytes read", len);
		return -1;
	}
	memcpy(&d, buf, sizeof d);
	if (memcmp(d.cookie, HA_PY_DEBUG_COOKIE, 8) != 0) {
		ha_err(err, errlen, "CPython's debug offsets: no cookie \"%s\"", HA_PY_DEBUG_COOKIE);
		return -1;
	}
	if ((d.version >> 16) != 0x030d) {
		ha_err(err, errlen, "CPython's debug offsets: version %#llx, not 3.13",
		       (unsigned long long)d.version);
		return -1;
	}
	if (d.free_threaded) {
		ha_err(err, errlen, "a free-threaded CPython 3.13 (not supported)");
		return -1;
	}
	*out = *base;
	bad |= take(d.runtime_state.finalizing, 8, d.runtime_state.size, &out->runtime_finalizing);
	bad |= take(d.thread_state.current_frame, 8, d.thread_state.size, &out->tstate_frame);
	bad |= take(d.interpreter_frame.previous, 8, d.interpreter_frame.size, &out->frame_back);
	bad |= take(d.interpreter_frame.executable, 8, d.interpreter_frame.size, &out->frame_code);
	bad |= take(d.interpreter_frame.instr_ptr, 8, d.interpreter_frame.size, &out->frame_lasti);
	bad |= take(d.interpreter_frame.owner, 1, d.interpreter_frame.size, &out->frame_owner);
	/* co_code_adaptive is the code object's last field: its offset is
	 * the struct's size less a code unit's padding, at most. */
	bad |= take(d.code_object.co_code_adaptive, 2, d.code_object.size, &out->code_adaptive);
	bad |= take(d.code_object.name, 8, d.code_object.size, &out->code_name);
	bad |= take(d.code_object.qualname, 8, d.code_object.size, &out->code_qualname);
	bad |= take(d.code_object.filename, 8, d.code_object.size, &out->code_filename);
	bad |= take(d.code_object.firstlineno, 4, d.code_object.size, &out->code_firstlineno);
	bad |= take(d.code_object.linetable, 8, d.code_object.size, &out->code_linetable);
	bad |= take(d.pyobject.ob_type, 8, d.pyobject.size, &out->object_type);
	bad |= take(d.bytes_object.ob_size, 8, d.bytes_object.size, &out->var_size);
	bad |= take(d.bytes_object.ob_sval, 1, d.bytes_object.size, &out->bytes_sval);
	bad |= take(d.unicode_object.length, 8, d.unicode_object.size, &out->str_length);
	bad |= take(d.unicode_object.state, 4, d.unicode_object.size, &out->str_state);
	/* a size, not an offset: the header an ASCII string's characters follow */
	if (d.unicode_object.asciiobject_size <= out->str_state ||
	    d.unicode_object.asciiobject_size > d.unicode_object.size ||
	    d.unicode_object.asciiobject_size > 1024)
		bad = -1;
	if (bad || d.code_object.size > 1024) {
		ha_err(err, errlen, "CPython's debug offsets: an offset outside its struct");
		return -1;
	}
	out->code_size = (uint16_t)d.code_object.size;
	out->str_ascii_size = (uint16_t)d.unicode_object.asciiobject_size;
	*hexversion = (uint32_t)d.version;
	return 0;
}

const char *ha_py_offsets_diff(const struct ha_py_offsets *a, const struct ha_py_offsets *b)
{
#define SAME(f) \
	if (a->f != b->f) \
		return #f
	SAME(major); SAME(minor); SAME(chain); SAME(lasti_units); SAME(line_format);
	SAME(runtime_finalizing); SAME(tstate_frame); SAME(cframe_current);
	SAME(frame_back); SAME(frame_code); SAME(frame_lasti); SAME(frame_is_entry);
	SAME(frame_owner); SAME(code_size); SAME(code_adaptive); SAME(code_name);
	SAME(code_qualname); SAME(code_filename); SAME(code_firstlineno); SAME(code_linetable);
	SAME(object_type); SAME(var_size); SAME(bytes_sval); SAME(str_length); SAME(str_state);
	SAME(str_ascii_size); SAME(str_compact_size); SAME(str_kind_shift); SAME(str_kind_bits);
	SAME(str_compact_bit); SAME(str_ascii_bit); SAME(str_ready_bit);
#undef SAME
	return NULL;
}

void ha_py_walk_fill(struct ha_py_walk *w, const struct ha_py_offsets *o, uint64_t get_tstate,
                     uint64_t code_type, uint64_t unicode_type, uint64_t runtime)
{
	memset(w, 0, sizeof *w);
	w->get_tstate = get_tstate;
	w->code_type = code_type;
	w->unicode_type = unicode_type;
	w->finalizing = runtime + o->runtime_finalizing;
	w->chain = o->chain;
	w->depth_max = (uint8_t)HA_PY_DEPTH_MAX;
	w->lasti_units = o->lasti_units;
	w->tstate_frame = o->tstate_frame;
	w->cframe_current = o->cframe_current;
	w->frame_back = o->frame_back;
	w->frame_code = o->frame_code;
	w->frame_lasti = o->frame_lasti;
	w->frame_is_entry = o->frame_is_entry;
	w->frame_owner = o->frame_owner;
	w->code_adaptive = o->code_adaptive;
	w->code_name = o->code_name;
	w->code_firstlineno = o->code_firstlineno;
	w->object_type = o->object_type;
	w->code_qualname = o->code_qualname;
	w->code_filename = o->code_filename;
	/* (each under 256 in every version; one that is not makes the agent
	 * walk nothing, as it checks the string's layout) */
	w->str_length = (uint8_t)o->str_length;
	w->str_state = (uint8_t)o->str_state;
	w->str_ascii_size = (uint8_t)o->str_ascii_size;
	w->str_compact_size = (uint8_t)o->str_compact_size;
	w->str_kind_shift = o->str_kind_shift;
	w->str_kind_mask = (uint8_t)((1u << (o->str_kind_bits & 7)) - 1);
	w->str_compact_bit = o->str_compact_bit;
	w->str_ascii_bit = o->str_ascii_bit;
}
