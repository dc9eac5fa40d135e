# grow.py -- a Python program that grows when told, one command a line on
# stdin, one answer line each (the tests wait on the answers):
#   grow N SIZE   appends N bytes objects of SIZE bytes to a list kept for
#                 good, in grow_list (the function the tests look for);
#                 answers "done grow N SIZE total T ok OK" (T: objects
#                 kept; OK: True when every object kept is SIZE bytes of
#                 "x", a check that the program's data is whole)
#   reserve MIB   keeps an anonymous mmap of MIB MiB (untouched), in
#                 reserve; answers "done reserve T"
#   work          an allocation-heavy workload, 15 rounds; answers
#                 "work SECONDS"
#   quit          answers "done quit" and exits 0
# It prints "ready pid=PID" first.  Run by tests/t_peak_python.sh,
# t_rss_python.sh, t_real_python.sh and t_container_bullseye.sh (which
# passes it with -c to a python3.9 in a root of its own).  Python 3.6 on.
import mmap, os, sys, time
print(f"ready pid={os.getpid()}", flush=True)
keep = []
def grow_list(n, size):
    for i in range(n):
        keep.append(b"x" * size)
def reserve(mib):
    keep.append(mmap.mmap(-1, mib << 20))
def work():
    t = time.perf_counter()
    for r in range(15):
        small = [str(i) * 3 for i in range(100000)]
        big = [b"y" * 50000 for i in range(300)]
        d = {i: str(i) for i in range(50000)}
        del small, big, d
    return time.perf_counter() - t
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "grow":
        grow_list(int(cmd[1]), int(cmd[2]))
        ok = all(isinstance(b, bytes) and len(b) == int(cmd[2]) and b[-1:] == b"x" for b in keep)
        print(f"done grow {cmd[1]} {cmd[2]} total {len(keep)} ok {ok}", flush=True)
    elif cmd[0] == "reserve":
        reserve(int(cmd[1]))
        print(f"done reserve {len(keep)}", flush=True)
    elif cmd[0] == "work":
        print(f"work {work():.3f}", flush=True)
    elif cmd[0] == "quit":
        print("done quit", flush=True)
        break
