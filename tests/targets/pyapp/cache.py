# tests/targets/pyapp/cache.py -- what tests/targets/pyapp/server.py keeps,
# through known call chains (lines marked "# @name" for the tests).
import asyncio
import sys
import threading

store = []
small_store = {}
_kept = [0]


def make_blob(size):
    return b"x" * size  # @make_blob


def remember(n, size):
    for i in range(n):
        store.append(make_blob(size))  # @remember
    _kept[0] += n * size


class Entry:
    __slots__ = ("key", "value")

    def __init__(self, key, value):
        self.key = key
        self.value = value


def remember_small(n):
    base = len(small_store)
    before = sys.getsizeof(small_store)
    for i in range(base, base + n):
        small_store[i] = Entry(i, "v%093d" % i)  # @remember_small
    # What it keeps, as CPython counts it: the entries, their strings, the
    # ints past the small-int cache, and the dict's growth.
    kept = sys.getsizeof(small_store) - before
    for i in range(base, base + n):
        e = small_store[i]
        kept += sys.getsizeof(e) + sys.getsizeof(e.value) + (sys.getsizeof(e.key) if i > 256 else 0)
    _kept[0] += kept


def _blobs(n, size):
    for i in range(n):
        yield b"g" * size  # @gen_blob


def through_generator(n, size):
    store.extend(_blobs(n, size))  # @through_generator
    _kept[0] += n * size


async def _async_blobs(n, size):
    out = []
    for i in range(n):
        await asyncio.sleep(0)
        out.append(b"a" * size)  # @async_blob
    return out


def through_async(n, size):
    store.extend(asyncio.run(_async_blobs(n, size)))  # @through_async
    _kept[0] += n * size


exec_codes = [0, set()]  # code objects made by exec, their addresses (id)
exec_last = [0, None]  # the next j; the namespace of the last made_<j>


def through_exec(k, n, size):
    # made_<j> (file "<made j>", j counted over the whole run) keeps n blobs
    # of size + j * 1000 bytes, each made in a generator expression (a code
    # object of its own, "<genexpr>", in every version): a sample's size
    # tells which made_<j> allocated it.  Each one's namespace is cleared
    # (the function's globals are ns: a cycle) just before the next one is
    # made, so both its code objects go and the next ones take their
    # places; the last one stays until the next command.
    for _ in range(k):
        j = exec_last[0]
        exec_last[0] += 1
        if exec_last[1] is not None:
            exec_last[1].clear()
        src = "def made_%d(n, size):\n    return list(b'e' * size for i in range(n))\n" % j
        ns = {}
        exec(compile(src, "<made %d>" % j, "exec"), ns)
        f = ns["made_%d" % j]
        for code in [f.__code__] + [c for c in f.__code__.co_consts if hasattr(c, "co_name")]:
            exec_codes[0] += 1
            exec_codes[1].add(id(code))
        store.extend(f(n, size + j * 1000))  # @through_exec
        exec_last[1] = ns
        del ns, f, code
        _kept[0] += n * (size + j * 1000)


def exec_reuse():
    return exec_codes[0], len(exec_codes[1])


def deep(d, n, size):
    if d > 0:
        return deep(d - 1, n, size)  # @deep
    for i in range(n):  # @deep_loop
        store.append(b"d" * size)  # @deep_bottom
    _kept[0] += n * size


def _sqlite_work(n, out):
    import sqlite3
    db = sqlite3.connect(":memory:")
    db.execute("create table t (a integer, b text)")  # @sqlite_create
    db.executemany("insert into t values (?, ?)", ((i, "x" * 200) for i in range(n)))  # @sqlite_insert
    rows = db.execute("select a, b from t order by b, a").fetchall()  # @sqlite_select
    out.append(len(rows))
    db.close()


def sqlite_thread(n):
    out = []
    t = threading.Thread(target=_sqlite_work, args=(n, out), name="sqlite-worker")
    t.start()
    t.join()
    return out


class _Raising:
    @property
    def value(self):
        raise AttributeError("none")  # @raise_inside


def _raise_once(r):
    return hasattr(r, "value")  # @raise_call


def through_raise(n):
    """A Python function called from C (a property, by hasattr) that
    raises, n times: from 3.12 the eval loop unlinks the raising frame
    before it clears it, and the clear makes the caller's frame object (the
    traceback holds the dying frame): an allocation by an eval loop with no
    Python frame of its own left."""
    r = _Raising()
    found = 0
    for _ in range(n):
        found += _raise_once(r)
    return found


def kept_bytes():
    return _kept[0]
