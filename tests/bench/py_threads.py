"""py_threads.py - for make bench only: a Python program with THREADS threads
(default 50) that each recurse DEPTH levels (default 200: 10,000 Python
frames of recursion in all), then block on an event; once every one is
parked, it prints its own record (one line per thread: its name and depth)
and aborts, so that the kernel writes its core.

Usage: python3.11 py_threads.py [THREADS [DEPTH]]
"""
import os
import sys
import threading

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 50
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 200
parked = threading.Barrier(THREADS + 1)
never = threading.Event()


def descend(level):
    if level > 1:
        return descend(level - 1)
    parked.wait()
    never.wait()


def worker():
    descend(DEPTH)


sys.setrecursionlimit(DEPTH + 100)
for i in range(THREADS):
    threading.Thread(target=worker, name=f"worker-{i}", daemon=True).start()
parked.wait()
for i in range(THREADS):
    print(f"parked worker-{i} depth {DEPTH}")
sys.stdout.flush()
os.abort()
