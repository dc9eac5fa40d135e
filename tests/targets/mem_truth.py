# mem_truth.py -- tests/targets/mem_truth.c's commands for a CPython (3.8+)
# of another root (t_memory_bullseye.sh runs Debian 11's python3.9, glibc
# 2.31): bytearrays above 512 bytes come from malloc.  Commands on stdin,
# each answered "done CMD" after a "truth KEY=BYTES" line:
#   threads N MB  N threads holding MB MiB each in 32 KiB bytearrays
#   holes MB      MB MiB of 2 KiB bytearrays, every other one freed (pinned=)
#   empty MB      groups of four 60 KiB bytearrays closed by a 4 KiB one,
#                 the four freed (freed=)
import os, sys, threading

kept = []
ready = threading.Semaphore(0)
never = threading.Event()

def hold(mb):
    mine = [bytearray(32 * 1024 - 64) for _ in range(mb * 32)]
    ready.release()
    never.wait()
    return mine

print("ready pid=%d" % os.getpid(), flush=True)
for line in sys.stdin:
    w = line.split()
    if not w:
        continue
    if w[0] == "threads":
        n, mb = int(w[1]), int(w[2])
        for _ in range(n):
            threading.Thread(target=hold, args=(mb,), daemon=True).start()
        for _ in range(n):
            ready.acquire()
        print("truth live=%d" % (n * mb << 20))
    elif w[0] == "holes":
        v = [bytearray(2048 - 64) for _ in range(int(w[1]) * 512)]
        kept.append(v[1::2])
        print("truth pinned=%d" % (len(v) // 2 * 2048))
        del v
    elif w[0] == "empty":
        groups = int(w[1]) * 1024 // 240
        v = []
        for _ in range(groups):
            v.append([bytearray(60 * 1024) for _ in range(4)])
            kept.append(bytearray(4096))
        print("truth freed=%d" % (groups * 4 * (60 * 1024 + 16)))
        del v
    elif w[0] == "quit":
        print("done quit", flush=True)
        break
    print("done " + line.strip(), flush=True)
