#!/usr/bin/env python3
"""Go: every goroutine from a core (issue 48), against two oracles.

The subjects are corpus/go's programs, built and crashed by
corpus/go/make-go-cores into $GO_CORPUS (default $COREQ_BUILD/go-corpus) at
`-gcflags=all=-N -l` (O0), at Go's defaults, and stripped (-ldflags=-s -w):
go_server, a server of 30 goroutines parked in channel receive and send, a
mutex, time.Sleep, select, a WaitGroup, a sync.Cond and network accept and
reads; `nilmap` panics on its main goroutine (GOTRACEBACK=crash), `hang` is
killed with SIGABRT from outside once every goroutine is parked.

Oracles: `dlv core` (goroutines, goroutines -t: ids and frames) and the
runtime's own GOTRACEBACK=crash dump in the case's stderr (ids, wait reasons,
"created by").  Per case: expected / found / missed / phantom against both,
0 missed and 0 phantom; every goroutine's frames equal dlv's (function, file
and line, innermost first; see go_oracle.same_frames for the frames dlv skips
past a signal frame); its state equal to the runtime's; its creator the
dump's.  A table is printed at the end.  Where DWARF and the symbol table are
stripped (go_server built with -ldflags=-s -w, and Debian's own caddy): the
same comparisons against the runtime's dump (dlv cannot read them), the
layouts coming from the release's row of go_layouts.def.
"""
import json
import os
import re
import shutil
import subprocess

from coreq_test import BUILD, ROOT, coreq, coreq_json, done, ok, sanitizer_report, skip
import go_oracle

GO_CORPUS = os.environ.get("GO_CORPUS", os.path.join(BUILD, "go-corpus"))
CASES = [f"go_server-{mode}.{v}" for mode in ("nilmap", "hang") for v in ("O0", "default")]
# Real programs nobody on the team wrote, under load, SIGABRT from outside:
# Go's cmd/pprof built with DWARF, and Debian's caddy and prometheus (stripped).
REAL = ["pprof-load.default"]
STRIPPED = [f"go_server-{mode}.stripped" for mode in ("nilmap", "hang")] + \
    ["caddy-load.debian", "prometheus-load.debian"]


def case_paths(case):
    variant = case.rsplit(".", 1)[1]
    prog = case.split("-", 1)[0]
    d = os.path.join(GO_CORPUS, "cores", case)
    exe = f"/usr/bin/{prog}" if variant == "debian" else os.path.join(GO_CORPUS, "bin", variant, prog)
    return exe, os.path.join(d, "core"), d


def dump_pcs(path):
    """{pc: function} of every frame the runtime's GOTRACEBACK=crash dump gives a pc for."""
    named, fn = {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"^\t.* pc=(0x[0-9a-f]+)$", line)
        if m and fn:
            # the traceback spells runtime.gopanic "panic" (runtime.funcNameForPrint)
            named[int(m.group(1), 16)] = "runtime.gopanic" if fn == "panic" else fn
            fn = None
        elif not line.startswith("\t"):
            m = re.match(r"^(\S+?)\((?:[^()]|\([^()]*\))*\)$", line.strip())
            fn = m.group(1) if m else None
    return named


def dump_calls(path):
    """{goid: [(function, file, line, inlined)]} of the runtime's dump, its inlined
    frames (printed with "(...)" for arguments) included."""
    calls, cur = {}, None
    for line in open(path, errors="replace"):
        m = re.match(r"^goroutine (\d+) (?:gp=\S+ m=\S+ )?\[", line)
        if m:  # the signalled one is printed twice: the second time counts
            cur = calls[int(m.group(1))] = []
        elif not line.strip() or line.startswith("created by"):
            cur = None
        elif cur is not None and line.startswith("\t") and cur and cur[-1][1] is None:
            m = re.match(r"^\t(\S+):(\d+)", line)
            if m:
                cur[-1] = (cur[-1][0], m.group(1), int(m.group(2)), cur[-1][3])
        elif cur is not None and not line.startswith("\t"):
            m = re.match(r"^(\S+)\(([^()]*)\)$", line.strip())
            if m:
                cur.append((m.group(1), None, None, m.group(2) == "..."))
    return calls


BUCKET_CASES = ["go_server-nilmap", "go_server-index", "go_server-nilptr", "go_server-hang",
                "go_deadlock-deadlock"]


def group_test():
    """`stack --group` folds goroutines with the same wait reason and frames into
    one entry with their count and ids, as the runtime's dump would have them."""
    d = os.path.join(GO_CORPUS, "cores", "go_server-hang.default")
    r = coreq("stack", "--group", os.path.join(d, "core"))
    dump = go_oracle.parse_dump(open(os.path.join(d, "stderr"), errors="replace").read())
    dump.pop(0, None)
    # the dump's own folding: goroutines with the same state and functions
    folds = {}
    for g in dump.values():
        folds.setdefault((g.state, tuple(f[0] for f in g.frames)), []).append(g.goid)
    heads = re.findall(r"^(\d+) goroutines? \((.*)\): ([\d, -]+)$", r.stdout, re.M)
    total = sum(int(n) for n, _, _ in heads)
    ok(total == len(dump) and len(heads) == len(folds),
       f"--group: {len(dump)} goroutines in {len(folds)} groups, as the runtime's dump folds",
       [f"coreq {total} in {len(heads)}", r.stdout[-2000:]])
    want = sorted(sorted(v) for v in folds.values())
    got = []
    for n, state, ids in heads:
        one = []
        for part in ids.split(", "):
            a, _, b = part.partition("-")
            one += list(range(int(a), int(b or a) + 1))
        got.append(sorted(one))
    ok(sorted(got) == want, "--group: each group's ids are the dump's", [got, want])


def many_test():
    """100,007 goroutines (go_many): --group lists every one, each id once, equal to
    the runtime's own dump (not the first 1024); without --group the bound holds and
    a warning says how many were counted, not listed."""
    d = os.path.join(GO_CORPUS, "cores", "go_many-many.default")
    if not os.path.exists(os.path.join(d, "core")):
        skip("go_many", "no core")
        return
    dump = go_oracle.parse_dump(open(os.path.join(d, "stderr"), errors="replace").read())
    r = coreq("stack", "--group", "--format", "json", os.path.join(d, "core"), timeout=600)
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    ids = [i for g in doc.get("suspended_groups", []) for i in g["task_ids"]]
    want = set(dump)  # the running one too: a group of one on its thread
    ok(len(ids) == len(set(ids)) and set(ids) == want,
       f"go_many --group: {len(want)} goroutines listed once each, as the runtime's dump has "
       "them (missed, phantom)", [len(want - set(ids)), len(set(ids) - want)])
    r = coreq("stack", os.path.join(d, "core"), timeout=600)
    ok(r.returncode == 0 and re.search(r"warning: \d+ goroutines over the bound of 1024", r.stderr),
       "go_many without --group: 1024 listed, the rest counted in a warning", r.stderr[-500:])


def panic_test():
    """The panic value, read from the core (g._panic.arg), is the runtime's own
    first line: a plainError's text, a runtime.Error's (a boundsError formatted
    with the runtime's boundsErrorFmts), in the text header and the JSON."""
    for case in ("go_server-nilmap", "go_server-index", "go_server-nilptr"):
        for v in ("O0", "default"):
            d = os.path.join(GO_CORPUS, "cores", f"{case}.{v}")
            want = open(os.path.join(d, "stderr"), errors="replace").readline().strip()
            doc, _ = coreq_json("stack", "--format", "json", os.path.join(d, "core"))
            ok(doc.get("crash_message") == want, f"{case}.{v}: the panic message is the runtime's: "
               f"{want}", doc.get("crash_message"))
            r = coreq("stack", os.path.join(d, "core"))
            ok(want in r.stdout.split("\n\n", 2)[1], f"{case}.{v}: the text header says it",
               r.stdout[:400])
    doc, _ = coreq_json("stack", "--format", "json",
                        os.path.join(GO_CORPUS, "cores", "go_server-hang.default", "core"))
    ok("crash_message" not in doc, "a hang killed from outside has no panic message",
       doc.get("crash_message"))


def buckets_test():
    """A nil-map panic, an index out of range, a nil dereference (sigpanic), the
    runtime's deadlock report and an external SIGABRT of a hung server each land
    in their own bucket, the same at -N -l and at Go's defaults; the signature
    starts at the panic site, never in the runtime's signal machinery."""
    import tempfile
    sigs = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "go.db")
        for case in BUCKET_CASES:
            for v in ("O0", "default", "stripped"):
                core = os.path.join(GO_CORPUS, "cores", f"{case}.{v}", "core")
                doc, run = coreq_json("ingest", "--db", db, "--format", "json", core)
                r = doc["results"][0]
                sigs[(case, v)] = (r["bucket"], r["signature"])
    for case in BUCKET_CASES:
        a, b = sigs[(case, "O0")], sigs[(case, "default")]
        ok(a == b, f"{case}: one bucket at -N -l and at Go's defaults: {b[1]}", [a, b])
        ok(not b[1].startswith("runtime.raise") and "sigtramp" not in b[1]
           and "sighandler" not in b[1],
           f"{case}: the signature is not the runtime's signal machinery", b[1])
        s = sigs[(case, "stripped")]
        print(f"# {case}.stripped: {s[1]}" + (" (same bucket)" if s == b else " (another bucket)"))
    default = {sigs[(c, "default")][0] for c in BUCKET_CASES}
    ok(len(default) == len(BUCKET_CASES), "every Go crash kind has its own bucket",
       [sigs[(c, "default")] for c in BUCKET_CASES])
    # runtime.mapassign_faststr called gopanic, but Go's traceback hides the
    # runtime's unexported functions (the rules' `hidden`): the program's frame leads
    # killed from outside with every goroutine parked: the parked goroutines' program
    # frames name the hang (the program's own functions, from its source)
    hang = sigs[("go_server-hang", "default")][1]
    ok(hang.startswith("hang: main.") and "main.chanReceiver" in hang,
       "hang: named by the parked goroutines' program frames", hang)
    ok(sigs[("go_server-nilmap", "default")][1].startswith("main.crashNilMap"),
       "nil map: the signature starts at the program's frame that panicked",
       sigs[("go_server-nilmap", "default")])
    ok(sigs[("go_server-nilptr", "default")][1].startswith("main.crashNilPtr"),
       "nil dereference: the signature starts at the sigpanic site",
       sigs[("go_server-nilptr", "default")])
    ok(sigs[("go_deadlock-deadlock", "default")][1].startswith("runtime.checkdead"),
       "deadlock: the signature starts at the runtime's check (through Go's own sigreturn)",
       sigs[("go_deadlock-deadlock", "default")])


def main():
    if not shutil.which("go"):
        skip("go goroutines", "go not installed (golang-go)")
        return done()
    r = subprocess.run([os.path.join(ROOT, "corpus/go/make-go-cores"), GO_CORPUS],
                       capture_output=True, text=True)
    if not ok(r.returncode == 0, "make-go-cores builds and crashes every Go case", r.stderr):
        return done()
    have_dlv = shutil.which("dlv") is not None
    table = []
    for case in CASES + REAL + STRIPPED:
        exe, core, d = case_paths(case)
        if not os.path.exists(core):
            skip(f"{case}", "no core (caddy, ab or curl missing)")
            continue
        doc, run = coreq_json("stack", "--format", "json", core)
        ok(not sanitizer_report(run.stderr), f"{case}: no sanitizer report", run.stderr)
        found = go_oracle.from_coreq(doc)
        dump = go_oracle.parse_dump(open(os.path.join(d, "stderr"), errors="replace").read())
        # goroutine 0 in the dump is the signalled M's g0, not a goroutine of allgs
        dump.pop(0, None)
        m, p, _, states = go_oracle.compare(found, dump)
        ok(not m and not p, f"{case}: the runtime's dump's goroutines, none missed, none phantom",
           f"missed {m} phantom {p}")
        # The dump is printed before the core is written, and the crashing runtime has
        # frozen the world only as far as it can: a goroutine can still be readied in
        # between (a system call returns, the signal wakes os/signal's loop, a thread
        # in netpoll readies a connection's reader), never run.  So a goroutine the
        # dump shows waiting may be runnable in the core: the core's word, at its own
        # instant.
        left = [g for g in states if found[g].state != "runnable"]
        ok(not left, f"{case}: every wait reason is the runtime's ({len(states) - len(left)} "
           "readied between the dump and the core)",
           [f"{g}: coreq {found[g].state!r} runtime {dump[g].state!r}" for g in left])
        bad_created = [g for g in set(found) & set(dump) if dump[g].created and not (
            found[g].created_by and found[g].created_by.get("function") == dump[g].created[0]
            and found[g].created_by.get("line") == dump[g].created[2])]
        ok(not bad_created, f"{case}: every creator (created by F at file:line) is the runtime's",
           [f"{g}: coreq {found[g].created_by} runtime {dump[g].created}" for g in bad_created])
        row = {"case": case, "dump": len(dump), "found": len(found)}
        if case in STRIPPED:
            # no DWARF and no symbol table: the layouts of the release that built it
            # (go_layouts.def), the runtime's variables found through its code
            ok(doc.get("async", {}).get("go_layout_table") is True and
               "goroutines not listed" not in run.stderr,
               f"{case}: stripped, its goroutines are read with the release's layout",
               [doc.get("async", {}).get("go_layout_table"), run.stderr[-300:]])
            # every parked goroutine's frames, inlined calls too, with file and line, are
            # the dump's (frame 0's line aside: the dump looks it up at pc - 1, dlv and
            # coreq at the pc); the one on the crashed thread starts at the signal
            # handler, the dump at the panic
            calls = dump_calls(os.path.join(d, "stderr"))
            parked = [g for g in set(found) & set(calls) if found[g].state != "running"]

            def ours(g):
                return [tuple(f) for f in found[g].frames]

            def same(g):  # on the thread the signal landed on: the thread's frames, the
                # dump's (from where the system call left the goroutine) their tail
                fs, theirs = ours(g), calls[g]
                if any(f[0] == "runtime.sighandler" for f in fs):
                    fs = fs[len(fs) - len(theirs):] if len(fs) >= len(theirs) else []
                # frame 0 at pc - 1 can fall in a call inlined there (runtime.Gosched
                # before its mcall), at the pc past it: the dump has that frame more
                if len(theirs) == len(fs) + 1 and theirs[0][3]:
                    theirs = theirs[1:]
                return len(fs) == len(theirs) and all(
                    a[0] == b[0] and (k == 0 or a[1:] == b[1:3])
                    for k, (a, b) in enumerate(zip(fs, theirs)))
            bad = [g for g in parked if not same(g)]
            ok(parked and not bad, f"{case}: {len(parked)} parked goroutines' frames, inlined "
               "calls too, are the dump's, with their files and lines",
               [f"{g}: coreq {ours(g)} dump {[c[:3] for c in calls[g]]}" for g in bad[:4]])
            row.update(dlv="no DWARF", missed=len(m), phantom=len(p),
                       equal=len(parked) - len(bad), different=len(bad))
        elif have_dlv:
            exp = go_oracle.dlv(exe, core)
            ok(exp, f"{case}: dlv lists goroutines")
            exp = exp or {}
            merged = []
            m, p, frames, states = go_oracle.compare(found, exp, merged)
            # The goroutine on the thread the fatal signal landed on (a server
            # killed under load: whichever was running): dlv shows its saved
            # context and its last wait reason, coreq the thread it runs on, the
            # handler's frames first, and its status as the runtime's own dump
            # says it.  The runtime's dump is the word on those.
            signalled = {g for g in set(found) & set(exp)
                         if any(f[0] == "runtime.sighandler" for f in found[g].frames)}
            frames = [g for g in frames if g not in signalled]
            # One out of its system call and waiting for a P (runnable, g.syscallsp
            # still set): coreq starts where the runtime's own traceback does, at the
            # call's entry; dlv at its saved context in runtime.exitsyscall, then the
            # same frames.
            def past_exitsyscall(g):
                ours, theirs = [f[0] for f in found[g].frames], [f[0] for f in exp[g].frames]
                return (theirs and theirs[0].startswith("runtime.exitsyscall") and
                        ours == theirs[1:len(ours) + 1])
            exited = [g for g in frames if past_exitsyscall(g)]
            frames = [g for g in frames if g not in exited]
            states = [g for g in states if not (g in dump and found[g].state == dump[g].state)]
            ok(not m and not p, f"{case}: dlv's goroutines, none missed, none phantom",
               f"missed {m} phantom {p}")
            ok(not frames, f"{case}: every goroutine's frames equal dlv's ({len(merged)} "
               "running on a system stack: the thread's frames down to runtime.systemstack, "
               f"then dlv's; {len(exited)} from its system call's entry, dlv from exitsyscall)",
               [f"{g}: {go_oracle.first_difference(found[g].frames, exp[g].frames)}"
                for g in frames])
            ok(not states, f"{case}: every wait reason is dlv's",
               [f"{g}: coreq {found[g].state!r} dlv {exp[g].state!r}" for g in states])
            row.update(dlv=len(exp), missed=len(m), phantom=len(p),
                       equal=len(set(found) & set(exp)) - len(frames) - len(merged),
                       merged=len(merged), different=len(frames))
        else:
            skip(f"{case}: dlv oracle", "dlv not installed (delve)")
        table.append(row)
        if case in REAL or case.endswith(".debian"):
            continue
        # where the goroutines wait: the channels and semaphores of the program
        by_fn = {}
        for g in found.values():
            for fn in ("main.chanReceiver", "main.chanSender", "main.mutexWaiter",
                       "main.groupWaiter", "main.selecter"):
                if any(f[0] == fn for f in g.frames):
                    by_fn.setdefault(fn, []).append(g.wait_object)
        ok(len(by_fn) == 5 and all(len(v) == 3 and v[0] and len(set(v)) == 1
                                   for v in by_fn.values())
           and len({v[0] for v in by_fn.values()}) == 5,
           f"{case}: the 3 goroutines of each channel, mutex, WaitGroup and select wait on one "
           "object of their own", by_fn)
        running = [g for g in found.values() if g.state == "running"]
        crashed = next((t for t in doc["threads"] if t.get("crashed")), None)
        if "nilmap" in case:
            ok(len(running) == 1 and running[0].goid == 1 and crashed
               and running[0].thread == crashed["tid"],
               f"{case}: goroutine 1 runs on the crashed thread", running)
        else:
            ok(not running, f"{case}: no goroutine runs in a hung server", running)
        ends = [t["tid"] for t in doc["threads"] if t.get("end") not in (None, "outermost")]
        ok(not ends, f"{case}: every thread's stack ends where its stack does (g0: at the "
           "stack switch), none at bad memory", ends)
    for case in STRIPPED:
        exe, core, d = case_paths(case)
        if not os.path.exists(core):
            skip(f"{case}", "no core (caddy, ab or curl missing)")
            continue
        r = coreq("stack", "--format", "json", core)
        ok(r.returncode == 0 and not sanitizer_report(r.stderr),
           f"{case}: a stripped Go core is read", r.stderr)
        # every frame in the program named from .gopclntab as the runtime named the same
        # pc in its own dump (`go tool addr2line` of Go 1.19 misreads an externally
        # linked binary such as Debian's caddy, whose .text starts with C code)
        doc = json.loads(r.stdout) if r.returncode == 0 else {"threads": []}
        named = dump_pcs(os.path.join(d, "stderr"))
        frames = [f for t in doc["threads"] for f in t["frames"]
                  if f.get("module") == exe and f["kind"] == "native"
                  and int(f["pc"], 16) in named]
        bad = [(f["pc"], f.get("function"), named[int(f["pc"], 16)]) for f in frames
               if f.get("function") != named[int(f["pc"], 16)]]
        ok(frames and not bad,
           f"{case}: {len(frames)} frames of the stripped program at pcs the runtime's dump "
           "names, named from .gopclntab as the runtime names them", bad)
    buckets_test()
    panic_test()
    group_test()
    many_test()
    print("# case | dlv | runtime dump | found | missed | phantom | frames equal | "
          "equal past the system stack | different")
    for row in table:
        print(f"# {row['case']} | {row.get('dlv', '-')} | {row['dump']} | {row['found']} | "
              f"{row.get('missed', '-')} | {row.get('phantom', '-')} | {row.get('equal', '-')} | "
              f"{row.get('merged', '-')} | {row.get('different', '-')}")
    return done()


if __name__ == "__main__":
    main()
