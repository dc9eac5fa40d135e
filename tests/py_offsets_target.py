# py_offsets_target.py -- the CPython whose memory tests/py_offsets_check
# reads (t_py_offsets.sh), for any version from 3.8.  It prints what it
# knows of itself, one fact a line ("NAME VALUE..."; addresses and numbers
# in decimal, strings and bytes in hex), then "ready", and waits in
# inner() <- outer() <- the module for a line on stdin:
#   tstate T          this thread's PyThreadState (PyThreadState_Get)
#   runtime R         &_PyRuntime
#   types C S B       id() of the code, str and bytes types
#   str A HEX         a str object and its UTF-8: ASCII, latin-1, UCS-2, UCS-4
#   bytes A HEX       a bytes object and its contents
#   code A NAME_ID FIRSTLINE NAME QUALNAME FILE TABLE_HEX ADAPTIVE_HEX
#                     a function's code object that never ran: its name's
#                     id, its names, its line table (co_lnotab before 3.10,
#                     co_linetable after) and its co_code_adaptive (3.11+,
#                     else co_code)
#   frame WHO A LINE  the code object and current line of each frame of the
#                     chain it waits in, innermost first
# The line it reads is "fin OFFSET": at its exit, while the interpreter
# finalizes, a __del__ reads the word at &_PyRuntime + OFFSET, which must
# then be this thread's state (the finalizing thread), and prints
# "finalizing ok" or "finalizing bad V" on stdout.
import ctypes
import os
import sys
import types

api = ctypes.pythonapi
api.PyThreadState_Get.restype = ctypes.c_void_p
tstate = api.PyThreadState_Get()
runtime = ctypes.addressof(ctypes.c_char.in_dll(api, "_PyRuntime"))


def hx(b):
    return b.hex() if b else "-"


def out(*words):
    print(*words)


def never_called(a, b):
    """Its code object is read as it was made."""
    x = a + b
    return x * 2


out("tstate", tstate)
out("runtime", runtime)
out("types", id(types.CodeType), id(str), id(bytes))
keep = ["plain ascii", "caf\xe9 cr\xe8me", "\u0100\u0101 x\u20ac", "\U0001d11e clef \xe9"]
for s in keep:
    out("str", id(s), hx(s.encode()))
blob = b"\x00\x01 hello \xff"
out("bytes", id(blob), hx(blob))
c = never_called.__code__
table = c.co_linetable if sys.version_info >= (3, 10) else c.co_lnotab
adaptive = getattr(c, "_co_code_adaptive", c.co_code)
out("code", id(c), id(c.co_name), c.co_firstlineno, hx(c.co_name.encode()),
    hx(getattr(c, "co_qualname", c.co_name).encode()), hx(c.co_filename.encode()),
    hx(table), hx(adaptive))


class Fin:
    """At finalization: _PyRuntime's finalizing word is this thread's state."""

    def __init__(self, offset):
        self.offset = offset

    def __del__(self, from_address=ctypes.c_void_p.from_address, write=os.write,
                tstate=tstate, runtime=runtime):
        v = from_address(runtime + self.offset).value
        write(1, b"finalizing ok\n" if v == tstate else b"finalizing bad %d\n" % (v or 0))


def marked(mark):
    with open(__file__) as src:
        return [n for n, text in enumerate(src, 1) if text.rstrip().endswith(mark)][0]


def inner():
    f = sys._getframe()
    out("frame inner", id(f.f_code), marked("# the wait"))
    out("frame outer", id(f.f_back.f_code), f.f_back.f_lineno)
    out("frame module", id(f.f_back.f_back.f_code), f.f_back.f_back.f_lineno)
    out("ready")
    sys.stdout.flush()
    return sys.stdin.readline()  # the wait


def outer():
    return inner()


line = outer()
if line.startswith("fin "):
    fin = Fin(int(line.split()[1]))   # a module global: freed as it finalizes
sys.stdout.flush()
