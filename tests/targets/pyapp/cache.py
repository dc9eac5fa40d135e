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
    store.extend(asyncio.run(_async_blobs(n, size)))
    _kept[0] += n * size


def through_exec(k, n, size):
    for j in range(k):
        src = "def made_%d(n, size):\n    return [b'e' * size for i in range(n)]\n" % j
        ns = {}
        exec(compile(src, "<made %d>" % j, "exec"), ns)
        store.extend(ns["made_%d" % j](n, size))  # @through_exec
        del ns  # the code object goes: a later one may take its address
    _kept[0] += k * n * size


def deep(d, n, size):
    if d > 0:
        return deep(d - 1, n, size)  # @deep
    for i in range(n):
        store.append(b"d" * size)  # @deep_bottom
    _kept[0] += n * size


def _sqlite_work(n, out):
    import sqlite3
    db = sqlite3.connect(":memory:")
    db.execute("create table t (a integer, b text)")
    db.executemany("insert into t values (?, ?)", ((i, "x" * 200) for i in range(n)))
    rows = db.execute("select a, b from t order by b, a").fetchall()  # @sqlite_select
    out.append(len(rows))
    db.close()


def sqlite_thread(n):
    out = []
    t = threading.Thread(target=_sqlite_work, args=(n, out), name="sqlite-worker")
    t.start()
    t.join()
    return out


def kept_bytes():
    return _kept[0]
