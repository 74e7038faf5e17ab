#!/usr/bin/env python3
"""coreq info agrees with eu-readelf -n on every corpus core.

eu-readelf is the independent oracle: for each core, the list of thread ids
(NT_PRSTATUS pid, in note order), each thread's rip and rsp, the signal
(NT_SIGINFO si_signo and si_code) and the NT_FILE mappings must be what coreq
reports.  Also checks the corpus facts (pid, signal, thread count) and that
coreq's main module is the executable that crashed.
"""
import os
import re
import subprocess

from coreq_test import coreq_json, done, ok, require_corpus


def readelf_notes(core):
    out = subprocess.run(["eu-readelf", "-n", core], capture_output=True, text=True,
                         errors="replace", check=True).stdout
    threads, files, sig = [], [], None
    cur = None
    section = None
    for line in out.splitlines():
        s = line.strip()
        m = re.match(r"CORE\s+\d+\s+(\w+)", s)
        if m:
            section = m.group(1)
            if section == "PRSTATUS":
                cur = {}
                threads.append(cur)
            continue
        if section == "PRSTATUS":
            m = re.match(r"pid: (\d+),", s)
            if m and "tid" not in cur:
                cur["tid"] = int(m.group(1))
            for reg in ("rip", "rsp"):
                m = re.search(reg + r":\s+(0x[0-9a-f]+|\d+)", s)
                if m:
                    cur[reg] = int(m.group(1), 0)
        elif section == "SIGINFO":
            m = re.match(r"si_signo: (-?\d+), si_errno: (-?\d+), si_code: (-?\d+)", s)
            if m:
                sig = (int(m.group(1)), int(m.group(3)))
        elif section == "FILE":
            m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ([0-9a-f]+) \d+\s+(.*)$", s)
            if m:
                files.append((int(m.group(1), 16), int(m.group(2), 16), m.group(4)))
    return threads, files, sig


def main():
    for case in require_corpus():
        name, core = case["case"], case["core"]
        info, _ = coreq_json("info", "--format", "json", core, timeout=300)
        threads, files, sig = readelf_notes(core)
        ours = [(t["tid"], int(t["pc"], 16), int(t["sp"], 16)) for t in info["threads"]]
        theirs = [(t["tid"], t["rip"], t["rsp"]) for t in threads]
        ok(ours == theirs, f"{name}: threads, pc and sp match eu-readelf ({len(theirs)} threads)",
           [f"coreq:   {ours[:5]}", f"readelf: {theirs[:5]}"])
        ok(info["core"]["crashed_tid"] == theirs[0][0],
           f"{name}: crashed thread is the first NT_PRSTATUS")
        if sig:
            ok((info["core"]["signal"], info["core"]["si_code"]) == sig,
               f"{name}: signal and si_code match eu-readelf {sig}",
               f"coreq: {info['core']['signal']} {info['core']['si_code']}")
        ours_files = [(int(m["start"], 16), int(m["end"], 16), m["path"]) for m in info["mappings"]]
        ok(ours_files == files, f"{name}: {len(files)} mapped files match eu-readelf",
           [f"coreq:   {ours_files[:3]}", f"readelf: {files[:3]}"])
        if case.get("signal"):
            ok(info["core"]["signal"] == int(case["signal"]),
               f"{name}: signal is the corpus's {case['signal']}")
        if case.get("threads"):
            ok(len(info["threads"]) == int(case["threads"]),
               f"{name}: {case['threads']} threads as the corpus program made")
        if case.get("pid"):
            ok(info["core"]["pid"] == int(case["pid"]), f"{name}: pid {case['pid']}")
        exe = case.get("exe")
        if exe:
            mains = [m for m in info["modules"] if os.path.realpath(m["path"]) == os.path.realpath(exe)]
            ok(len(mains) == 1 and mains[0]["status"] == "found",
               f"{name}: the executable is a found module",
               [str(m) for m in info["modules"]])
    done()


main()
