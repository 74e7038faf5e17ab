"""gdb_lines.py - the line-table row gdb gives an address (`info line
*ADDR`), the oracle for the innermost file:line of a lookup.  Where several
rows share an address gdb takes a statement row (is_stmt), and past the end
of a sequence or outside every unit it gives none; libdw's dwarf_getsrc_die
(and so eu-addr2line) takes the last row at the address even when that row
ends a sequence.  coreq follows gdb (libcore/symbols/symbolizer.c, row_at)."""
import re
import subprocess

LINE_RE = re.compile(r'^Line (\d+) of "(.*)" (?:starts at|is at) ')


def gdb_lines(files, addrs, debug_dir=None):
    """{addr: (file, line)} for each address in gdb's view of files ([exe]
    or [exe, core]); (None, 0) where gdb has no line."""
    cmd = ["gdb", "-nx", "-batch", "-iex", "set pagination off", "-iex", "set width 0"]
    if debug_dir:
        cmd += ["-iex", f"set debug-file-directory {debug_dir}:/usr/lib/debug"]
    for a in addrs:
        cmd += ["-ex", f"echo @@{a:#x}\\n", "-ex", f"info line *{a:#x}"]
    out = subprocess.run(cmd + list(files), capture_output=True, text=True, errors="replace",
                         timeout=600).stdout
    result, cur = {}, None
    for line in out.splitlines():
        if line.startswith("@@0x"):
            cur = int(line[2:], 16)
            result[cur] = (None, 0)
            continue
        m = LINE_RE.match(line)
        if m and cur is not None and result[cur] == (None, 0):
            result[cur] = (m.group(2), int(m.group(1)))
    return result
