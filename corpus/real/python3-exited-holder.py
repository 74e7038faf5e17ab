# python3-exited-holder.py: the corpus case real-python3-exited-holder.
# Debian's python3 (CPython 3.11) with two threads that wait for ever, and no
# cycle among them: a thread "exits-holding-a" takes threading.Lock A and
# exits without releasing it; "keeps-a-waits-b" keeps A in a local (it never
# takes it) and waits for B; "holds-b-waits-a" holds B in a with statement
# and waits for A in another.  Once both are blocked in the kernel
# (/proc/self/task/TID/syscall says futex), it writes its own account to
# ./oracle and creates ./ready; the corpus then kills it with SIGABRT, as a
# watchdog would.  The main thread sleeps in time.sleep (not a lock).
#
# A is held by no thread of the core, so there is no deadlock: "holds-b-
# waits-a" waits for a thread that has gone, and "keeps-a-waits-b" behind
# it.  But the one thread other than A's waiter whose frames reference A is
# "keeps-a-waits-b": an owner inferred from references alone (docs/hangs.md,
# "Owners inferred") closes a cycle that is not there.  What the core
# records does not confirm that owner (A's lock object is taken, but no with
# statement of that thread took it); it confirms B's (the bound __exit__ of
# B's with statement on the holder's value stack).
#
# The oracle, one fact a line (as corpus/deadlock.c writes it):
#   thread TID NAME            a thread of the core (threading.get_native_id)
#   exited TID                 the thread that took A and exited
#   lock NAME ADDR             the lock's semaphore (sem_t) address
#   holds TID semaphore ADDR 1 TID took that lock and never released it
#   waits TID semaphore ADDR   TID is blocked acquiring it
#   verdict no-deadlock        no cycle: A's holder is no thread of the core
import ctypes
import os
import threading
import time

A, B = threading.Lock(), threading.Lock()
both_ready = threading.Barrier(3)
tids = {}


def exits_holding_a():
    tids["exits-holding-a"] = threading.get_native_id()
    A.acquire()  # never released: the thread ends holding it


def keeps_a_waits_b():
    tids["keeps-a-waits-b"] = threading.get_native_id()
    a = A  # a reference to a lock this thread does not hold
    both_ready.wait()
    B.acquire()  # never returns: holds-b-waits-a holds B
    return a


def holds_b_waits_a():
    tids["holds-b-waits-a"] = threading.get_native_id()
    with B:
        both_ready.wait()
        with A:  # never entered: A's holder has exited
            pass


def blocked_in_futex(tid):
    try:
        with open(f"/proc/self/task/{tid}/syscall") as f:
            return f.read().split()[0] == "202"
    except OSError:
        return False


def run():
    """Everything but the final sleep, in a frame that is gone by then (its
    slots would be references to A and B)."""
    sem = {name: ctypes.c_void_p.from_address(id(lock) + 16).value for name, lock in (("A", A), ("B", B))}
    gone = threading.Thread(target=exits_holding_a, name="exits-holding-a")
    gone.start()
    gone.join()
    threading.Thread(target=holds_b_waits_a, name="holds-b-waits-a", daemon=True).start()
    threading.Thread(target=keeps_a_waits_b, name="keeps-a-waits-b", daemon=True).start()
    both_ready.wait()
    waiting = [tids["keeps-a-waits-b"], tids["holds-b-waits-a"]]
    for _ in range(5000):
        if all(blocked_in_futex(t) for t in waiting):
            time.sleep(0.05)
            if all(blocked_in_futex(t) for t in waiting):
                break
        time.sleep(0.002)
    else:
        raise SystemExit("python3-exited-holder: the threads never both blocked")
    with open("oracle.tmp", "w") as f:
        f.write("shape python-exited-holder\n")
        for name in ("holds-b-waits-a", "keeps-a-waits-b"):
            f.write(f"thread {tids[name]} {name}\n")
        f.write(f"exited {tids['exits-holding-a']}\n")
        for name, addr in sorted(sem.items()):
            f.write(f"lock {name} {addr:#x}\n")
        f.write(f"holds {tids['exits-holding-a']} semaphore {sem['A']:#x} 1\n")
        f.write(f"holds {tids['holds-b-waits-a']} semaphore {sem['B']:#x} 1\n")
        f.write(f"waits {tids['keeps-a-waits-b']} semaphore {sem['B']:#x}\n")
        f.write(f"waits {tids['holds-b-waits-a']} semaphore {sem['A']:#x}\n")
        f.write("verdict no-deadlock\n")
    os.rename("oracle.tmp", "oracle")
    open("ready", "w").close()


run()
while True:
    time.sleep(3600)
