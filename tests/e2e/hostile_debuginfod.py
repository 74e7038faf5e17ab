"""A tiny debuginfod-compatible HTTP server on 127.0.0.1 that misbehaves on
purpose, for tests of `coreq resymbolize` (issue 30).

GET /buildid/<id>/debuginfo is answered by what the test registered for
<id>; an unregistered id gets 404.  Behaviours:
  ("file", path)   200 with the file's bytes and its Content-Length;
  ("claims", n)    200 announcing Content-Length n, then zeros as fast as
                   the client takes them, up to n;
  ("stream", n)    200 without a length (the connection's end marks it),
                   then n zeros as fast as the client takes them;
  ("silent", s)    accepts, reads the request, answers nothing for s seconds;
  ("drip", s)      200 without a length, then one byte a second for s seconds.
Every request path is recorded (`requests`), so a test can check that a
build-id coreq must not ask for never reached the server.
"""
import socketserver
import threading
import time
from http.server import BaseHTTPRequestHandler

CHUNK = b"\0" * 65536


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        srv = self.server.owner
        with srv.lock:
            srv.requests.append(self.path)
        parts = self.path.split("/")
        what = None
        if len(parts) == 4 and parts[1] == "buildid" and parts[3] == "debuginfo":
            what = srv.behaviours.get(parts[2])
        try:
            self.answer(what, srv)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def answer(self, what, srv):
        if what is None:
            self.send_error(404)
            return
        kind, arg = what
        if kind == "silent":
            srv.stop.wait(arg)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if kind == "file":
            data = open(arg, "rb").read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif kind in ("claims", "stream"):
            if kind == "claims":
                self.send_header("Content-Length", str(arg))
            self.end_headers()
            sent = 0
            while sent < arg and not srv.stop.is_set():
                n = min(len(CHUNK), arg - sent)
                self.wfile.write(CHUNK[:n])
                sent += n
                with srv.lock:
                    srv.sent += n
        elif kind == "drip":
            self.end_headers()
            end = time.monotonic() + arg
            while time.monotonic() < end and not srv.stop.is_set():
                self.wfile.write(b"\x7f")
                self.wfile.flush()
                srv.stop.wait(1)


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


class HostileDebuginfod:
    def __init__(self, behaviours):
        self.behaviours = dict(behaviours)
        self.requests = []
        self.sent = 0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.owner = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
