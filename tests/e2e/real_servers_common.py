"""real_servers_common.py - starting, loading and stopping the real Debian
servers the e2e tests capture cores of (test_real_servers.py and
test_real_server_corpus.py).

Servers listen on 127.0.0.1 only, in a temp dir, with RLIMIT_CORE
unlimited; the kernel's core_pattern must be a file name in the cwd
(core_pattern_file() says why not otherwise).  UNPRIVILEGED runs a child as
nobody (so a server started by root never runs as root), in a directory
made nobody's by give_to_nobody().
"""
import os
import pwd
import resource
import socket
import subprocess
import time

NOBODY = pwd.getpwnam("nobody")


def core_pattern_file():
    """None when the kernel writes a core as a file in the cwd, else why not."""
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern.startswith("|"):
        return f"the kernel's core_pattern is a pipe ({pattern[:40]!r})"
    if "/" in pattern:
        return f"the kernel's core_pattern writes elsewhere ({pattern[:40]!r})"
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def core_limit():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def unprivileged():
    """preexec_fn: unlimited cores, then nobody (when started as root)."""
    core_limit()
    if os.getuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY.pw_gid)
        os.setuid(NOBODY.pw_uid)


def give_to_nobody(path):
    if os.getuid() == 0:
        os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)


def nobody_env():
    return dict(os.environ, HOME="/tmp", USER="nobody", LOGNAME="nobody")


def wait_for_core(proc, workdir, timeout=30):
    """The core the kernel wrote in workdir once proc died, or None."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
    return find_core(proc.pid, workdir)


def find_core(pid, workdir, tries=50):
    """The kernel's core of pid in workdir (core, or core.PID with
    kernel.core_uses_pid), once the kernel has written it, or None."""
    for _ in range(tries):
        for name in (f"core.{pid}", "core"):
            path = os.path.join(workdir, name)
            if os.path.exists(path):
                return path
        time.sleep(0.1)
    return None


def wait_dead(pid, timeout=30):
    """Wait until pid (not our child) is gone."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def memcached_load(port, stop):
    """Sets and gets on 8 connections until stop is set."""
    socks = []
    try:
        socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(8)]
        i = 0
        while not stop.is_set():
            for s in socks:
                s.sendall(b"set k%d 0 0 5\r\nhello\r\nget k%d\r\n" % (i, i))
                s.recv(4096)
                i += 1
    except OSError:
        pass
    for s in socks:
        s.close()


def http_load(port, stop, conns=4):
    """GET / over keep-alive connections until stop is set (a small client,
    where apache2-utils' ab is not installed)."""
    socks = []
    try:
        socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(conns)]
        req = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
        while not stop.is_set():
            for s in socks:
                s.sendall(req)
                s.recv(65536)
    except OSError:
        pass
    for s in socks:
        s.close()


def gcore(pid, prefix):
    """gdb's gcore of the live pid: (path of the snapshot or None, gcore's output)."""
    g = subprocess.run(["gcore", "-o", prefix, str(pid)], capture_output=True, text=True,
                       timeout=300)
    path = f"{prefix}.{pid}"
    return (path if g.returncode == 0 and os.path.exists(path) else None), g.stdout + g.stderr
