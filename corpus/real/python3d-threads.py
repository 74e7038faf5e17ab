# python3d-threads.py: the corpus case real-python3d, Debian's debug build of
# CPython (python3.11d, from python3.11-dbg: its own DWARF, a program nobody
# on the team wrote) busy on six threads: two hashing (C code, GIL released),
# two computing in the interpreter, one waiting on a queue and one on a lock.
# Creates `ready` once all six run; the corpus then kills it with SIGABRT.
import hashlib
import queue
import threading

started = threading.Barrier(7)
lock = threading.Lock()
lock.acquire()
jobs = queue.Queue()


def hashing():
    started.wait()
    data = b"x" * (1 << 20)
    while True:
        hashlib.sha256(data).digest()


def computing():
    started.wait()
    n = 0
    while True:
        n = (n * 31 + 7) % 1000003


def waiting_queue():
    started.wait()
    jobs.get()


def waiting_lock():
    started.wait()
    lock.acquire()


for target in (hashing, hashing, computing, computing, waiting_queue, waiting_lock):
    threading.Thread(target=target, daemon=True).start()
started.wait()
open("ready", "w").close()
threading.Event().wait()
