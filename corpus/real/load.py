#!/usr/bin/env python3
"""load.py PORT READY: sends syslog messages to 127.0.0.1:PORT on four
connections until the server goes away (or 60 s pass), and creates the file
READY once every connection has carried some.  The load for the corpus's
real-server cases (see syslog-ng)."""
import socket
import sys
import time


def main():
    port, ready = int(sys.argv[1]), sys.argv[2]
    deadline = time.time() + 60
    socks = []
    while len(socks) < 4 and time.time() < deadline:
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        except OSError:
            time.sleep(0.05)
    batch = b"".join(b"<13>corpus: message %d of the load\n" % i for i in range(100))
    sent = 0
    try:
        while time.time() < deadline:
            for s in socks:
                s.sendall(batch)
            sent += 1
            if sent == 50:
                open(ready, "w").close()
            time.sleep(0.002)
    except OSError:
        pass


if __name__ == "__main__":
    main()
