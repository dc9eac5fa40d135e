# tests/targets/pyapp/server.py -- a small Python service for the tests of
# Python frames (t_py_*): it reads commands on stdin, one a line, and
# answers each with one line starting "done " (profile_lib.sh target_cmd):
# "done CMD kept TOTAL added BYTES", the bytes the command kept as CPython
# counts them (sys.getsizeof), and all kept so far.
# Works on CPython 3.8 and later.  Lines the tests look for are marked
# "# @name" (tests find them with grep -n, never by number).
#   grow N SIZE     cache.remember: N bytes objects of SIZE bytes, kept
#   small N         cache.remember_small: N small objects (~100 B), kept
#   gen N SIZE      the same through a generator, then an async function
#   exec K N SIZE   K functions made by exec, each dropped when the next is
#                   made (the last at the next exec), the j-th of the run
#                   (made_<j>, from 0) keeping N blobs of SIZE + j * 1000 bytes
#   reuse           "done reuse made M at A addresses": the code objects exec
#                   made so far and how many addresses they had (A < M: reused)
#   deep D N SIZE   recursion D deep, then N blobs kept at the bottom
#   sqlite N        a thread runs N sqlite3 statements (GIL released in
#                   sqlite3_step), the main thread waits for it
#   here N SIZE     N bytes objects of SIZE bytes kept by server.py itself
#                   (no frame of cache.py)
#   quit            exit 0
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cache  # noqa: E402


here_store = []


def here(n, size):
    for i in range(n):
        here_store.append(b"h" * size)  # @here
    cache._kept[0] += n * size


def handle(cmd):
    before = cache.kept_bytes()
    what = run(cmd)
    if what:
        return what
    return "done %s kept %d added %d" % (cmd[0], cache.kept_bytes(), cache.kept_bytes() - before)


def run(cmd):
    if cmd[0] == "grow":
        cache.remember(int(cmd[1]), int(cmd[2]))  # @run_grow
    elif cmd[0] == "small":
        cache.remember_small(int(cmd[1]))
    elif cmd[0] == "gen":
        cache.through_generator(int(cmd[1]), int(cmd[2]))
        cache.through_async(int(cmd[1]), int(cmd[2]))
    elif cmd[0] == "reuse":
        return "done reuse made %d at %d addresses" % cache.exec_reuse()
    elif cmd[0] == "exec":
        cache.through_exec(int(cmd[1]), int(cmd[2]), int(cmd[3]))
    elif cmd[0] == "deep":
        cache.deep(int(cmd[1]), int(cmd[2]), int(cmd[3]))
    elif cmd[0] == "raise":
        cache.through_raise(int(cmd[1]))
    elif cmd[0] == "sqlite":
        cache.sqlite_thread(int(cmd[1]))
    elif cmd[0] == "here":
        here(int(cmd[1]), int(cmd[2]))
    else:
        return "error unknown command " + cmd[0]
    return None


def main():
    print("ready pid=%d" % os.getpid(), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "quit":
            print("done quit", flush=True)
            return
        print(handle(cmd), flush=True)


main()
