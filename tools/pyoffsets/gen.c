/*
 * gen.c -- one entry of src/pyframes/py_offsets_table.h, from the headers
 * of the CPython it is compiled against (tools/pyoffsets/generate.sh
 * compiles it once per version, with -DPy_BUILD_CORE and the version's
 * include and include/internal directories, and runs it).
 *
 * What it prints: a designated initializer of struct ha_py_offsets
 * (src/pyframes/py_offsets.h), every field an offsetof() or sizeof() of
 * that version's own structures, never a number typed by hand.  The few
 * facts that are not offsets come from the headers too: the bits of a
 * string's state word are found by setting each bit-field in a zeroed
 * PyASCIIObject and looking where it landed, and the frame owner that
 * marks the eval loop's shim frame (3.12+) is the header's
 * FRAME_OWNED_BY_CSTACK, which must equal the wire contract's
 * HA_PY_OWNER_CSTACK (3).
 *
 * The chains (src/proto/ha_py.h): 3.8-3.10 PyFrameObject, 3.11-3.12
 * tstate->cframe->current_frame, 3.13 tstate->current_frame.  Run on the
 * build machine only; it never looks at a process.
 */
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX < 0x03080000 || PY_VERSION_HEX >= 0x030e0000
#error "CPython 3.8 to 3.13 only"
#endif

#if PY_VERSION_HEX < 0x030b0000
#include <frameobject.h>
#endif
#if PY_VERSION_HEX < 0x03090000
#include <internal/pycore_pystate.h>
#else
#include <internal/pycore_runtime.h>
#endif
#if PY_VERSION_HEX >= 0x030b0000
#include <internal/pycore_frame.h>
#endif

#define NO_FIELD 0xffffu
#define OFF(type, field) ((unsigned)offsetof(type, field))

/* The lowest set bit of the state word after f set one bit-field of a
 * zeroed string to all ones, and how many bits it took. */
struct bits {
	unsigned shift, width;
};

static struct bits state_bits(void (*f)(PyASCIIObject *))
{
	PyASCIIObject o;
	unsigned char w[sizeof o.state];
	uint32_t v = 0;
	struct bits b = { 0, 0 };

	memset(&o, 0, sizeof o);
	f(&o);
	memcpy(w, &o.state, sizeof w);
	for (size_t i = 0; i < sizeof w && i < 4; i++)
		v |= (uint32_t)w[i] << (8 * i);
	while (b.shift < 32 && !(v >> b.shift & 1))
		b.shift++;
	while (b.shift + b.width < 32 && (v >> (b.shift + b.width) & 1))
		b.width++;
	return b;
}

static void set_kind(PyASCIIObject *o) { o->state.kind = 7; }
static void set_compact(PyASCIIObject *o) { o->state.compact = 1; }
static void set_ascii(PyASCIIObject *o) { o->state.ascii = 1; }
#if PY_VERSION_HEX < 0x030c0000
static void set_ready(PyASCIIObject *o) { o->state.ready = 1; }
#endif

int main(void)
{
	struct bits kind = state_bits(set_kind), compact = state_bits(set_compact),
	            ascii = state_bits(set_ascii);
#if PY_VERSION_HEX < 0x030c0000
	struct bits ready = state_bits(set_ready);
#endif
	unsigned chain, lasti_units = 0, tstate_frame, cframe_current = NO_FIELD;
	unsigned frame_back, frame_code, frame_lasti, frame_is_entry = NO_FIELD;
	unsigned frame_owner = NO_FIELD, code_adaptive = NO_FIELD, code_qualname = NO_FIELD;
	unsigned code_linetable, line_format, finalizing;

#if PY_VERSION_HEX < 0x030b0000
	chain = 1; /* HA_PY_CHAIN_FRAMEOBJ */
	lasti_units = PY_VERSION_HEX < 0x030a0000 ? 1 : 2;
	tstate_frame = OFF(PyThreadState, frame);
	frame_back = OFF(PyFrameObject, f_back);
	frame_code = OFF(PyFrameObject, f_code);
	frame_lasti = OFF(PyFrameObject, f_lasti);
#elif PY_VERSION_HEX < 0x030d0000
	chain = 2; /* HA_PY_CHAIN_CFRAME */
	tstate_frame = OFF(PyThreadState, cframe);
	cframe_current = OFF(_PyCFrame, current_frame);
	frame_back = OFF(_PyInterpreterFrame, previous);
	frame_code = OFF(_PyInterpreterFrame, f_code);
	frame_lasti = OFF(_PyInterpreterFrame, prev_instr);
#if PY_VERSION_HEX < 0x030c0000
	frame_is_entry = OFF(_PyInterpreterFrame, is_entry);
#else
	frame_owner = OFF(_PyInterpreterFrame, owner);
	_Static_assert(FRAME_OWNED_BY_CSTACK == 3, "HA_PY_OWNER_CSTACK");
#endif
#else
	chain = 3; /* HA_PY_CHAIN_DIRECT */
	tstate_frame = OFF(PyThreadState, current_frame);
	frame_back = OFF(_PyInterpreterFrame, previous);
	frame_code = OFF(_PyInterpreterFrame, f_executable);
	frame_lasti = OFF(_PyInterpreterFrame, instr_ptr);
	frame_owner = OFF(_PyInterpreterFrame, owner);
	_Static_assert(FRAME_OWNED_BY_CSTACK == 3, "HA_PY_OWNER_CSTACK");
#endif

#if PY_VERSION_HEX >= 0x030b0000
	code_adaptive = OFF(PyCodeObject, co_code_adaptive);
	code_qualname = OFF(PyCodeObject, co_qualname);
#endif
#if PY_VERSION_HEX < 0x030a0000
	code_linetable = OFF(PyCodeObject, co_lnotab);
	line_format = 1; /* HA_PY_LINES_LNOTAB */
#elif PY_VERSION_HEX < 0x030b0000
	code_linetable = OFF(PyCodeObject, co_linetable);
	line_format = 2; /* HA_PY_LINES_310 */
#else
	code_linetable = OFF(PyCodeObject, co_linetable);
	line_format = 3; /* HA_PY_LINES_311 */
#endif
#if PY_VERSION_HEX < 0x03090000
	finalizing = OFF(_PyRuntimeState, finalizing);
#else
	finalizing = OFF(_PyRuntimeState, _finalizing);
#endif

	printf("\t{ /* %s */\n", PY_VERSION);
	printf("\t\t.major = %d, .minor = %d, .chain = %u, .lasti_units = %u, .line_format = %u,\n",
	       PY_MAJOR_VERSION, PY_MINOR_VERSION, chain, lasti_units, line_format);
	printf("\t\t.runtime_finalizing = %u,\n", finalizing);
	printf("\t\t.tstate_frame = %u, .cframe_current = %u,\n", tstate_frame, cframe_current);
	printf("\t\t.frame_back = %u, .frame_code = %u, .frame_lasti = %u, .frame_is_entry = %u, "
	       ".frame_owner = %u,\n",
	       frame_back, frame_code, frame_lasti, frame_is_entry, frame_owner);
	printf("\t\t.code_size = %u, .code_adaptive = %u, .code_name = %u, .code_qualname = %u,\n",
	       (unsigned)sizeof(PyCodeObject), code_adaptive, OFF(PyCodeObject, co_name),
	       code_qualname);
	printf("\t\t.code_filename = %u, .code_firstlineno = %u, .code_linetable = %u,\n",
	       OFF(PyCodeObject, co_filename), OFF(PyCodeObject, co_firstlineno), code_linetable);
	printf("\t\t.object_type = %u, .var_size = %u,\n", OFF(PyObject, ob_type),
	       OFF(PyVarObject, ob_size));
	printf("\t\t.bytes_sval = %u,\n", OFF(PyBytesObject, ob_sval));
	printf("\t\t.str_length = %u, .str_state = %u, .str_ascii_size = %u, .str_compact_size = %u,\n",
	       OFF(PyASCIIObject, length), OFF(PyASCIIObject, state),
	       (unsigned)sizeof(PyASCIIObject), (unsigned)sizeof(PyCompactUnicodeObject));
	printf("\t\t.str_kind_shift = %u, .str_kind_bits = %u, .str_compact_bit = %u, "
	       ".str_ascii_bit = %u, .str_ready_bit = %u,\n",
	       kind.shift, kind.width, compact.shift, ascii.shift,
#if PY_VERSION_HEX < 0x030c0000
	       ready.shift
#else
	       NO_FIELD
#endif
	);
	printf("\t},\n");
	return compact.width == 1 && ascii.width == 1 && kind.width == 3 ? 0 : 1;
}
