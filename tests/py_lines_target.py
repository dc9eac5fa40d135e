# py_lines_target.py -- code objects whose names and lines
# tests/py_lines_check reads from this live process (t_py_lines.sh), for
# any CPython from 3.8.  For every code object of this file and of the
# generated sources below (functions with loops, long functions, big line
# and address jumps, nested functions, classes, lambdas, comprehensions,
# generators, try/finally, with, decorators), one line
#   code ID NAME_ID FIRSTLINE NAME QUALNAME FILE    (strings in hex)
# then
#   lines OFF:LINE ...   what Python's own iteration says of each code
#                        unit: dis.findlinestarts (3.8, 3.9: the line of the
#                        last start at or before it), co_lines() (3.10),
#                        co_positions() (3.11+); -1 for None
#   addr OFF:LINE ...    PyCode_Addr2Line(code, OFF) called through ctypes,
#                        for every code unit, one past the end, and -2 (a
#                        frame that has not started: firstlineno)
# then "ready"; it waits for stdin to close, keeping every object alive.
import ctypes
import dis
import sys

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int


def loops(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
        elif i % 3 == 1:
            continue
        else:
            while total > 100:
                total -= 7
    return total


def ident(f):
    return f


class Outer:
    class Inner:
        def method(self, x):
            def nested(y):
                return [z * 2 for z in range(y) if z]
            return nested(x)

    @staticmethod
    @ident
    def decorated():
        return (lambda q: q + 1)(2)


def gen(n):
    try:
        yield from range(n)
    finally:
        pass


async def coro():
    with open("/dev/null") as f:
        return f.name


def handlers(x):
    try:
        return 1 / x
    except ZeroDivisionError as e:
        del e
        return 0
    finally:
        x = None


def jumpy(a):
    b = a + 1
    # ---------------------------------------------------------------- a gap
    #
    #
    #
    #
    #
    #
    #
    #
    #
    return b


# Generated sources: a gap of 300 lines (line deltas past a byte), a
# function of 400 lines (an entry per line, code past 256 units), a loop of
# 300 lines (the back edge jumps 300 lines up), one line of 600 additions
# (an address jump past 255 bytes), and a jump of 70000 lines.
def generated():
    src = ["def far_apart(a):", "    b = a * 2"]
    src += ["    # gap"] * 300
    src += ["    return b + 1", ""]
    src += ["def long_one(a):"]
    for i in range(400):
        src.append("    a = a + %d if a %% %d else a - 1" % (i, i + 2))
    src += ["    return a", ""]
    src += ["def long_loop(n):", "    s = 0", "    for i in range(n):"]
    for i in range(300):
        src.append("        s += i * %d" % i)
    src += ["    return s", ""]
    src += ["def wide(a):", "    return " + " + ".join(["a"] * 600), ""]
    src += ["def very_far(a):", "    b = a"]
    src += [""] * 70000
    src += ["    return b", ""]
    return compile("\n".join(src), "generated_source.py", "exec")


def codes(c, seen):
    if id(c) in seen:
        return
    seen[id(c)] = c
    for k in c.co_consts:
        if hasattr(k, "co_code"):
            codes(k, seen)


def python_lines(c):
    n = len(c.co_code)
    if sys.version_info >= (3, 11):
        return [p[0] if p[0] is not None else -1 for p in c.co_positions()]
    if sys.version_info >= (3, 10):
        out = [-1] * (n // 2)
        for start, end, line in c.co_lines():
            for off in range(start, min(end, n), 2):
                out[off // 2] = line if line is not None else -1
        return out
    out, line, starts = [], c.co_firstlineno, dict(dis.findlinestarts(c))
    for off in range(0, n, 2):
        line = starts.get(off, line)
        out.append(line)
    return out


def hx(s):
    return s.encode("utf-8", "surrogatepass").hex() or "-"


for _ in range(100):   # warm up: 3.11+ specialises what runs often
    loops(20)
keep = {}
codes(sys._getframe().f_code, keep)   # this module's, as they run
codes(generated(), keep)
for c in keep.values():
    print("code", id(c), id(c.co_name), c.co_firstlineno, hx(c.co_name),
          hx(getattr(c, "co_qualname", c.co_name)), hx(c.co_filename))
    print("lines", " ".join("%d:%d" % (2 * i, line) for i, line in enumerate(python_lines(c))))
    offs = list(range(0, len(c.co_code) + 2, 2)) + [-2]
    print("addr", " ".join("%d:%d" % (o, addr2line(c, o)) for o in offs))
print("ready")
sys.stdout.flush()
sys.stdin.read()
