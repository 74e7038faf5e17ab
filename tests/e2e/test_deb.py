#!/usr/bin/env python3
"""The Debian packages (dist/debian/, `make deb`): built here from the
release binaries of both architectures, checked by lintian, installed into
a throw-away root with `dpkg --root`, run, verified, removed and purged.

Oracles, never coreq's own account of itself:
- lintian, Debian's package checker: no error and no warning beyond the
  overrides justified in dist/debian/lintian-overrides;
- dpkg: the package's files, its conffile, the state of the root's dpkg
  database after install, remove and purge; the Depends it computed are
  packages of this host's Debian at those versions (the registry serves
  them);
- the installed binary's --version against dist/debian/changelog's upstream
  version (amd64 directly, arm64 under qemu-aarch64);
- `systemd-analyze verify --root` on the installed units, with the host's
  own systemd units beside them; the drop-in copied where docs/capture.md says;
- the maintainer scripts' promises: /var/lib/coreq created 0700 root,
  nothing enabled, remove keeps a database written into it by the
  installed coreq (sqlite3 reads it back), purge deletes it.

dpkg runs the maintainer scripts with --force-script-chrootless (they
honour $DPKG_ROOT), and --force-depends, since the throw-away root holds no
libc: the binary runs with the host's libraries.
"""
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import tempfile

from coreq_test import BUILD, CORPUS, COREQ_RELEASE, ROOT, done, ok, read_expect

A64 = os.environ.get("COREQ_A64", os.path.join(BUILD, "aarch64", "coreq"))
UNITS = ["coreq-ingest.path", "coreq-ingest.service", "coreq-push.service", "coreq-push.timer"]
# every command's page (man/, `make man`)
MAN_PAGES = [f"usr/share/man/man1/{f[:-3]}.gz" for f in sorted(os.listdir(os.path.join(ROOT, "man")))
             if f.endswith(".1.in")]
WANT_FILES = ["usr/bin/coreq", "usr/share/man/man1/coreq.1.gz"] + MAN_PAGES + [
              "usr/share/bash-completion/completions/coreq", "usr/share/coreq/rules",
              # every migration of the fleet store, as make install ships them
              ] + [f"usr/share/coreq/clickhouse/{f}" for f in
                   sorted(os.listdir(os.path.join(ROOT, "schema", "clickhouse"))) if f.endswith(".sql")] + [
              "usr/share/coreq/systemd-coredump@.service.d/coreq.conf", "etc/coreq/coreq.conf",
              "usr/share/doc/coreq/copyright", "usr/share/doc/coreq/changelog.Debian.gz",
              # the README and every guide it links, where its links still lead
              "usr/share/doc/coreq/README.md"] + \
             [f"usr/share/doc/coreq/docs/{f}" for f in sorted(os.listdir(os.path.join(ROOT, "docs")))
              if f.endswith(".md")] + \
             [f"lib/systemd/system/{u}" for u in UNITS]


def run(*cmd, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, errors="replace", **kw)


def changelog(field):
    return run("dpkg-parsechangelog", "-l", os.path.join(ROOT, "dist/debian/changelog"), "-S", field).stdout.strip()


def build(arch, binary, out):
    script = os.path.join(ROOT, "dist/debian/build-deb")
    if not os.access(script, os.X_OK):
        ok(False, f"dist/debian/build-deb exists to build the {arch} package", script)
        return ""
    env = dict(os.environ, SOURCE_DATE_EPOCH=changelog("Timestamp"))
    r = run(os.path.join(ROOT, "dist/debian/build-deb"), arch, os.path.abspath(binary), out,
            os.path.join(BUILD, "man"), cwd=ROOT, env=env, timeout=300)
    deb = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    ok(r.returncode == 0 and os.path.isfile(deb), f"dist/debian/build-deb builds the {arch} package",
       r.stdout + r.stderr)
    return deb


def check_lintian(deb, arch):
    r = run("lintian", "--pedantic", "-E", "-I", deb, timeout=300)
    tags = [l for l in r.stdout.splitlines() if re.match(r"^[EWX]: ", l)]
    ok(r.returncode == 0 and not tags, f"lintian: no error or warning in the {arch} package", r.stdout + r.stderr)
    return r.stdout


def check_depends(deb, arch):
    """Each Depends alternative names a package of this host's Debian (for the
    package's architecture) at a version that satisfies it."""
    dep = run("dpkg-deb", "-f", deb, "Depends").stdout.strip()
    bad = []
    for clause in [c.strip() for c in dep.split(",") if c.strip()]:
        m = re.match(r"^([a-z0-9.+-]+)(?: \(([<>=]+) ([^)]+)\))?$", clause)
        if not m:
            bad.append(f"unparsed {clause}")
            continue
        have = run("dpkg-query", "-W", "-f", "${Version}", f"{m.group(1)}:{arch}").stdout.strip()
        if not have or (m.group(2) and run("dpkg", "--compare-versions", have,
                                           {">=": "ge", "<=": "le", "=": "eq", ">>": "gt", "<<": "lt"}[m.group(2)],
                                           m.group(3)).returncode != 0):
            bad.append(f"{clause}: host has {have or 'nothing'}")
    ok(dep and "libdw1" in dep and "libarchive13" in dep and not bad,
       f"the {arch} package's Depends ({dep}) are satisfied by Debian's {arch} packages", bad)


def make_root(tmp, name, arch):
    root = os.path.join(tmp, name)
    for d in ("var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers", "usr/lib/systemd",
              "etc/systemd/system", "bin"):
        os.makedirs(os.path.join(root, d))
    for f in ("status", "available"):
        open(os.path.join(root, "var/lib/dpkg", f), "w").close()
    if arch != run("dpkg", "--print-architecture").stdout.strip():
        r = run("dpkg", f"--root={root}", "--add-architecture", arch)
        ok(r.returncode == 0, f"the {name} root accepts {arch} packages", r.stderr)
    return root


def dpkg(root, *args):
    return run("dpkg", f"--root={root}", "--force-script-chrootless", "--force-depends", *args, timeout=300)


def check_install(root, deb, arch, runner):
    r = dpkg(root, "-i", deb)
    ok(r.returncode == 0, f"dpkg --root installs the {arch} package", r.stdout + r.stderr)
    missing = [f for f in WANT_FILES if not os.path.isfile(os.path.join(root, f))]
    ok(not missing, f"{arch}: binary, man page, completion, units, drop-in, rules, ClickHouse schema, "
                    "coreq.conf, the README and its guides are installed", missing)
    st = run("dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W", "-f", "${Status}|${Conffiles}", "coreq").stdout
    ok(st.startswith("install ok installed|") and "/etc/coreq/coreq.conf " in st,
       f"{arch}: dpkg records coreq installed, with /etc/coreq/coreq.conf as its conffile", st)
    s = os.stat(os.path.join(root, "var/lib/coreq")) if os.path.isdir(os.path.join(root, "var/lib/coreq")) else None
    ok(s is not None and stat.S_IMODE(s.st_mode) == 0o700 and s.st_uid == 0 and s.st_gid == 0,
       f"{arch}: postinst created /var/lib/coreq, mode 0700, owned by root", s)
    wants = [os.path.join(dp, f) for dp, _, fs in os.walk(os.path.join(root, "etc/systemd")) for f in fs]
    ok(not wants, f"{arch}: nothing enabled on installation (no unit link under /etc/systemd)", wants)
    menv = dict(os.environ, MANPATH=os.path.join(root, "usr/share/man"), MANPAGER="cat", MANWIDTH="80",
                LC_ALL="C.UTF-8")
    r = run("man", "coreq-stack", env=menv)
    r2 = run("man", "coreq-push", env=menv)
    ok(r.returncode == 0 and "COREQ-STACK(1)" in r.stdout and r2.returncode == 0 and "coreq push" in r2.stdout,
       f"{arch}: man finds the installed coreq-stack and coreq-push pages", r.stderr + r2.stderr)
    r = subprocess.run([*runner, os.path.join(root, "usr/bin/coreq"), "--version"], capture_output=True, text=True,
                       timeout=120)
    want = "coreq " + changelog("Version").rsplit("-", 1)[0]
    ok(r.returncode == 0 and r.stdout.strip() == want, f"{arch}: the installed coreq --version says {want!r}",
       [r.stdout, r.stderr])


def check_units(root):
    if not shutil.which("systemd-analyze"):
        ok(False, "systemd-analyze is installed (make deps)")
        return
    # The host's own units (sysinit.target, ...) beside the package's, in a
    # directory of the root that the package does not own.
    shutil.copytree("/lib/systemd/system", os.path.join(root, "usr/lib/systemd/system"), symlinks=True,
                    dirs_exist_ok=True)
    r = run("systemd-analyze", "verify", "--man=no", f"--root={root}",
            *[f"/lib/systemd/system/{u}" for u in UNITS], timeout=120)
    ok(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
       "systemd-analyze verify --root: the installed units, no warning", r.stdout + r.stderr)
    # The drop-in, copied where docs/capture.md says (a stand-in for
    # systemd-coredump@.service when the host has none).
    d = os.path.join(root, "etc/systemd/system/systemd-coredump@.service.d")
    os.makedirs(d)
    shutil.copy(os.path.join(root, "usr/share/coreq/systemd-coredump@.service.d/coreq.conf"), d)
    if not os.path.isfile("/lib/systemd/system/systemd-coredump@.service"):
        with open(os.path.join(root, "etc/systemd/system/systemd-coredump@.service"), "w") as f:
            f.write("[Unit]\nDescription=stand-in\n[Service]\nType=oneshot\nExecStart=/bin/true\n")
        shutil.copy("/bin/true", os.path.join(root, "bin/true"))
    r = run("systemd-analyze", "verify", "--man=no", f"--root={root}", "systemd-coredump@1.service", timeout=120)
    ok(r.returncode == 0 and not (r.stdout + r.stderr).strip(),
       "systemd-analyze verify --root: the drop-in on systemd-coredump@.service, no warning", r.stdout + r.stderr)
    shutil.rmtree(d)


def check_remove_purge(root, arch, runner):
    db = os.path.join(root, "var/lib/coreq/coreq.db")
    case = os.path.join(CORPUS, "cores", "abort_deep.O2")
    r = subprocess.run([*runner, os.path.join(root, "usr/bin/coreq"), "ingest", "--db", db, "--cache",
                        os.path.join(root, "var/lib/coreq/cache.db"), os.path.join(case, "core")],
                       capture_output=True, text=True, timeout=300)
    ok(r.returncode == 0 and os.path.isfile(db), f"{arch}: the installed coreq ingests a core into /var/lib/coreq",
       r.stdout + r.stderr)
    r = dpkg(root, "-r", "coreq")
    gone = [f for f in WANT_FILES if f != "etc/coreq/coreq.conf" and os.path.exists(os.path.join(root, f))]
    ok(r.returncode == 0 and not gone and os.path.isfile(os.path.join(root, "etc/coreq/coreq.conf")),
       f"{arch}: dpkg -r removes the package's files and keeps the conffile", [r.stdout + r.stderr, gone])
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        pids = con.execute("SELECT pid FROM cores").fetchall()
        con.close()
    except sqlite3.Error as e:
        pids = str(e)
    ok(pids == [(int(read_expect(os.path.join(case, "expect"))["pid"]),)],
       f"{arch}: after remove, the database is still there with its core", pids)
    r = dpkg(root, "-P", "coreq")
    st = run("dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W", "coreq")
    ok(r.returncode == 0 and not os.path.exists(os.path.join(root, "var/lib/coreq"))
       and not os.path.exists(os.path.join(root, "etc/coreq/coreq.conf")) and st.returncode != 0,
       f"{arch}: dpkg -P deletes /var/lib/coreq and the conffile and forgets the package",
       [r.stdout + r.stderr, st.stdout])


def main():
    for tool in ("dpkg-deb", "dpkg-shlibdeps", "lintian"):
        if not shutil.which(tool):
            ok(False, f"{tool} is installed (make deps)")
            done()
    with tempfile.TemporaryDirectory(prefix="coreq-deb-") as tmp:
        out = os.path.join(tmp, "out")
        os.makedirs(out)
        pkgs = [("amd64", COREQ_RELEASE, [])]
        if os.path.isfile(A64) and shutil.which("qemu-aarch64"):
            pkgs.append(("arm64", A64, ["qemu-aarch64"]))
        else:
            ok(False, f"the aarch64 build ({A64}) and qemu-aarch64 exist", "make aarch64; make deps")
        for arch, binary, runner in pkgs:
            deb = build(arch, binary, out)
            if not deb:
                continue
            ok(os.path.basename(deb) == f"coreq_{changelog('Version')}_{arch}.deb"
               and run("dpkg-deb", "-f", deb, "Architecture").stdout.strip() == arch,
               f"the package is named coreq_VERSION_{arch}.deb and says Architecture: {arch}", deb)
            print(f"# {os.path.basename(deb)}: {os.path.getsize(deb)} bytes")
            for line in check_lintian(deb, arch).splitlines():
                print(f"# lintian {arch}: {line}")
            check_depends(deb, arch)
            root = make_root(tmp, f"root-{arch}", arch)
            check_install(root, deb, arch, runner)
            if arch == "amd64":
                check_units(root)
            check_remove_purge(root, arch, runner)
    done()


main()
