#!/usr/bin/env python3
"""`coreq push` and its cursor file (issue 31, finding 5: an unreadable cursor was read as 0).

The cursor file holds the last core a push shipped.  Against a stand-in for
ClickHouse's HTTP interface (a local server that answers 200 and counts
what it is sent):
- a first push sends every core, in batches whose tables arrive in the
  order stacks, buckets, threads, waits, cores, and writes the cursor;
- a cursor file that holds no core id (or cannot be read) is an error that
  names it: nothing is sent (never everything again from 0), the file is
  left as it was, and the exit status is 1;
- a missing cursor file means "nothing pushed yet".
"""
import atexit
import http.server
import json
import os
import shutil
import tempfile
import threading
import urllib.parse

from coreq_test import CORPUS, coreq, done, ok, sanitizer_report


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), Handler)
        self.posts = []  # (table, rows)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query).get("query", [""])[0]
        table = query.split()[2].split(".")[1] if query.startswith("INSERT INTO") else query
        self.server.posts.append((table, body.count(b"\n")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def cores(n):
    found = []
    for name in sorted(os.listdir(os.path.join(CORPUS, "cores"))):
        path = os.path.join(CORPUS, "cores", name, "core")
        if os.path.isfile(path) and "tokio" not in name and "rust" not in name:
            found.append(path)
        if len(found) == n:
            break
    return found


def main():
    tmp = tempfile.mkdtemp(prefix="coreq-push-cursor-")
    atexit.register(shutil.rmtree, tmp, True)
    db = os.path.join(tmp, "c.db")
    paths = cores(5)
    r = coreq("ingest", "--db", db, "--no-cache", *paths, timeout=600)
    ok(r.returncode == 0, "five cores ingested", r.stderr)
    server = Server()
    cursor = os.path.join(tmp, "cursor")

    r = coreq("push", "--db", db, "--clickhouse", server.url(), "--cursor", cursor, "--batch", "2",
              "--format", "json")
    out = json.loads(r.stdout or "{}")
    sent_cores = sum(n for t, n in server.posts if t == "cores")
    ok(r.returncode == 0 and out.get("cores") == 5 and sent_cores == 5 and out.get("complete") is True
       and open(cursor).read() == f"{out.get('cursor')}\n",
       "first push: every core sent once, the cursor written", [r.stdout, r.stderr, server.posts])
    rank = {"stacks": 0, "buckets": 1, "threads": 2, "waits": 3, "cores": 4}
    batches, current, in_order = [], [], True
    for table, rows in server.posts:
        current.append(rank.get(table, -1))
        if table == "cores":  # a batch ends with its cores
            in_order = in_order and -1 not in current and current == sorted(set(current))
            batches.append(rows)
            current = []
    in_order = in_order and current == []
    ok(in_order and batches == [2, 2, 1],
       "each batch sends stacks, buckets, threads, then at most --batch cores", server.posts)

    for label, content in (("holds garbage", "garbage\n"), ("is empty", ""), ("is negative", "-3\n")):
        with open(cursor, "w") as f:
            f.write(content)
        server.posts.clear()
        r = coreq("push", "--db", db, "--clickhouse", server.url(), "--cursor", cursor, "--retries", "1")
        ok(r.returncode == 1 and server.posts == [] and open(cursor).read() == content
           and cursor in r.stderr and not sanitizer_report(r.stderr),
           f"a cursor that {label}: an error naming it, nothing sent, the file left alone",
           [r.stdout, r.stderr, server.posts])

    os.unlink(cursor)
    os.mkdir(cursor)
    server.posts.clear()
    r = coreq("push", "--db", db, "--clickhouse", server.url(), "--cursor", cursor, "--retries", "1")
    ok(r.returncode == 1 and server.posts == [] and cursor in r.stderr,
       "a cursor that cannot be read (a directory): an error, nothing sent", [r.stdout, r.stderr, server.posts])
    os.rmdir(cursor)

    server.posts.clear()
    r = coreq("push", "--db", db, "--clickhouse", server.url(), "--cursor", cursor, "--format", "json")
    out = json.loads(r.stdout or "{}")
    ok(r.returncode == 0 and out.get("cursor_before") == 0 and out.get("cores") == 5,
       "a missing cursor file: everything is sent, from the start", [r.stdout, r.stderr])
    server.shutdown()
    done()


if __name__ == "__main__":
    main()
