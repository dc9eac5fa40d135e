#!/usr/bin/env python3
"""call_circles.py -- the call graph between source files, from the symbols
their objects define and use (nm), and its circles: a file that calls a
function of a file that calls it back, directly or round a longer loop.

Usage: call_circles.py ARCHIVE_OR_OBJECT...  Archives are static libraries
(src/*/lib*.a: member "libx_a-name.o" is src/x/name.c), objects are named
by their file.  Prints one "circle:" line per loop with the calls that make
it, then "N circles"; exit status 1 when there is one.  Weak and static
symbols are left out: only the calls one file makes into another count.
"""
import collections
import os
import re
import subprocess
import sys

defs, uses = {}, collections.defaultdict(set)


def node_of(path, member):
    if member:  # src/attach/libattach.a + libattach_a-inject.o
        base = member.split('-', 1)[1] if '-' in member else member
        return os.path.join(os.path.basename(os.path.dirname(path)), base[:-2] + '.c')
    base = os.path.basename(path)  # agent/.libs/heapattach_agent_la-hooks.o
    base = base.split('-', 1)[1] if '-' in base else base
    return os.path.join('agent' if '.libs' in path else os.path.dirname(path), base[:-2] + '.c')


for arg in sys.argv[1:]:
    out = subprocess.run(['nm', '-A', arg], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        m = re.match(r'^(.*?\.(?:a|o))(?::(\S+?\.o))?:\s*[0-9a-f]*\s+([A-Za-z])\s+(\S+)$', line)
        if not m:
            continue
        node, kind, sym = node_of(m.group(1), m.group(2)), m.group(3), m.group(4)
        if kind in 'TDBR':
            defs[sym] = node
        elif kind == 'U':
            uses[node].add(sym)

graph = collections.defaultdict(set)
for node, syms in uses.items():
    for sym in syms:
        d = defs.get(sym)
        if d and d != node:
            graph[node].add(d)

# Tarjan's strongly connected components, iteratively.
index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]
for root in sorted(set(graph) | set(defs.values())):
    if root in index:
        continue
    work = [(root, iter(sorted(graph[root])))]
    index[root] = low[root] = counter[0]; counter[0] += 1
    stack.append(root); on.add(root)
    while work:
        v, it = work[-1]
        w = next(it, None)
        if w is not None:
            if w not in index:
                index[w] = low[w] = counter[0]; counter[0] += 1
                stack.append(w); on.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])
            continue
        work.pop()
        if work:
            low[work[-1][0]] = min(low[work[-1][0]], low[v])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

for comp in circles:
    print('circle:', ' '.join(comp))
    for a in comp:
        for b in sorted(graph[a] & set(comp)):
            calls = sorted(s for s in uses[a] if defs.get(s) == b)
            print('    %s -> %s: %s' % (a, b, ' '.join(calls)))
print('%d circles' % len(circles))
sys.exit(1 if circles else 0)
