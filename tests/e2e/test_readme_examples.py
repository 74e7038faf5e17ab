#!/usr/bin/env python3
"""The README is true and short (issue 52): every `coreq ...` command in its
examples runs, and every guide it sends a reader to is there.

- Each line of an indented code block that runs coreq (after an optional `$ `
  prompt or `sudo`) is run, in the README's order, in a fresh directory with a
  database, cache and state of its own, so an `ingest` example fills what a
  later `cores` example lists.  Placeholders become corpus cores: CORE one core,
  CORE... two, ID the first stored core; `build/corpus/...` is the corpus.  Any
  other upper-case word is an unknown placeholder and fails.  Each must exit 0
  (or the status its comment documents, `# ... (exit N)`) without a sanitizer
  report.
- Each example's command is one `coreq --help` lists, and each option one its
  own `--help` lists; a checker that accepted `coreq stack --no-such-option` or
  `coreq no-such-command` fails the test (checked on those two).
- Every docs/*.md the README names exists, every relative link of the README
  and of each guide leads to a file and, with `#anchor`, to one of its
  headings; the README links every guide under docs/; it is under 300 lines.
"""
import os
import re
import shlex
import subprocess
import tempfile

from coreq_test import COREQ, CORPUS, ROOT, done, ok, sanitizer_report

README = os.path.join(ROOT, "README.md")
DOCS = os.path.join(ROOT, "docs")
ONE = "deadlock-abba.O0"
TWO = ["async_coro-cross.O0", "deadlock-abba.O0"]


def core(case):
    return os.path.join(CORPUS, "cores", case, "core")


def examples(text):
    """(line number, the command line) of each coreq example in code blocks."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("    "):
            continue
        cmd = line.strip()
        cmd = cmd[2:] if cmd.startswith("$ ") else cmd
        cmd = cmd[5:] if cmd.startswith("sudo ") else cmd
        if cmd.startswith("coreq "):
            found.append((n, cmd))
    return found


def help_text(words):
    r = subprocess.run([COREQ, *words, "--help"], capture_output=True, text=True, errors="replace")
    return r.stdout + r.stderr


def commands():
    """The commands `coreq --help` lists."""
    h = help_text([])
    block = h[h.index("Commands:"):].split("\n\n")[0]
    return {m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]*)\s", block, re.M)}


def problems(cmd, known):
    """Why an example's words are not a real command line, or []."""
    words = shlex.split(cmd, comments=True)[1:]
    if not words or words[0] not in known:
        return [f"unknown command {words[0] if words else '(none)'!r}"]
    sub = words[:2] if words[0] in ("cache", "lws") and len(words) > 1 else words[:1]
    h = help_text(sub)
    listed = set(re.findall(r"(?<![\w-])(--?[a-zA-Z][a-z0-9-]*)", h))
    bad = []
    for w in words[len(sub):]:
        if w.startswith("-") and w != "-":
            opt = w.split("=", 1)[0]
            if opt not in listed:
                bad.append(f"option {opt} is not in `coreq {' '.join(sub)} --help`")
    return bad


def argv(cmd):
    """The example as it runs: placeholders replaced; None for an unknown one."""
    out = []
    for w in shlex.split(cmd, comments=True)[1:]:
        if w == "CORE":
            out.append(core(ONE))
        elif w == "CORE...":
            out.extend(core(c) for c in TWO)
        elif w == "ID":
            out.append("1")
        elif w.startswith("build/corpus/"):
            out.append(os.path.join(CORPUS, w[len("build/corpus/"):]))
        elif re.fullmatch(r"[A-Z][A-Z_.]*[A-Z.]", w):
            return None
        else:
            out.append(w)
    return out


def want_status(cmd):
    m = re.search(r"#.*\(exit (\d+)\)", cmd)
    return int(m.group(1)) if m else 0


def slug(heading):
    """GitHub's anchor for a heading."""
    s = heading.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    with open(path) as f:
        return {slug(l.lstrip("#")) for l in f if re.match(r"#{1,6} ", l)}


def bad_links(path, text):
    """Relative links of a markdown file that lead nowhere."""
    bad = []
    base = os.path.dirname(path)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(base, file)) if file else path
        if not os.path.isfile(dest):
            bad.append(f"{target}: no file {dest}")
        elif anchor and dest.endswith(".md") and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {os.path.relpath(dest, ROOT)}")
    return bad


def test_examples(text, known):
    ex = examples(text)
    ok(len(ex) >= 10, f"the README shows coreq examples ({len(ex)})", [c for _, c in ex])
    named = {shlex.split(c, comments=True)[1] for _, c in ex}
    first = {"stack", "info", "ingest", "cores", "buckets", "flame"}
    ok(first <= named, "the examples show stack, info, ingest, cores, buckets and flame", sorted(named))
    with tempfile.TemporaryDirectory(prefix="coreq-readme-") as tmp:
        os.makedirs(os.path.join(tmp, "cache"), mode=0o700)
        env = dict(os.environ, COREQ_DB=os.path.join(tmp, "coreq.db"),
                   COREQ_CACHE=os.path.join(tmp, "cache", "cache.db"),
                   XDG_STATE_HOME=os.path.join(tmp, "state"), XDG_CACHE_HOME=os.path.join(tmp, "cache"),
                   COREQ_CONFIG="/dev/null", NO_COLOR="1")
        for n, cmd in ex:
            why = problems(cmd, known)
            args = argv(cmd)
            if args is None:
                why.append("an unknown placeholder (the test maps CORE, CORE..., ID, build/corpus/)")
            if why:
                ok(False, f"README:{n}: {cmd}", why)
                continue
            r = subprocess.run([COREQ, *args], cwd=tmp, env=env, capture_output=True, text=True,
                               errors="replace", timeout=600)
            want = want_status(cmd)
            rep = sanitizer_report(r.stderr)
            shown = " ".join(shlex.split(cmd, comments=True))
            ok(r.returncode == want and not rep, f"README:{n}: {shown} (exit {r.returncode}, want {want})",
               (rep or r.stderr)[-2000:])
            if "-o" in args[:-1]:
                out = os.path.join(tmp, args[args.index("-o") + 1])
                ok(os.path.isfile(out) and os.path.getsize(out) > 0, f"README:{n}: wrote {args[args.index('-o') + 1]}")


def test_checker_refuses(known):
    """The checker itself: a made-up option or command is caught."""
    ok(problems("coreq stack --crashed CORE", known) == [], "the checker takes a real example")
    ok(problems("coreq stack --no-such-option CORE", known) != [],
       "the checker refuses an option `coreq stack --help` does not list")
    ok(problems("coreq no-such-command CORE", known) != [], "the checker refuses an unknown command")
    ok(argv("coreq stack SOMEFILE") is None, "an unknown placeholder is refused")


def test_links(text):
    lines = text.splitlines()
    ok(len(lines) < 300, f"the README is under 300 lines ({len(lines)})")
    named = sorted(set(re.findall(r"\bdocs/[\w.-]+\.md\b", text)))
    missing = [d for d in named if not os.path.isfile(os.path.join(ROOT, d))]
    ok(named and not missing, f"every docs/*.md the README names exists ({len(named)})", missing)
    guides = sorted(f for f in os.listdir(DOCS) if f.endswith(".md"))
    unlinked = [g for g in guides if f"](docs/{g})" not in text and f"](docs/{g}#" not in text]
    ok(not unlinked, "the README links every guide under docs/", unlinked)
    ok(not bad_links(README, text), "every link of the README leads to a file and heading",
       bad_links(README, text))
    for g in guides:
        path = os.path.join(DOCS, g)
        with open(path) as f:
            body = f.read()
        bad = bad_links(path, body)
        ok(not bad, f"docs/{g}: every link leads to a file and heading", bad)
        ok(body.startswith("# "), f"docs/{g}: opens with its title")


def main():
    with open(README) as f:
        text = f.read()
    known = commands()
    ok({"stack", "info", "ingest", "cores", "buckets", "flame"} <= known, "coreq --help lists its commands",
       sorted(known))
    test_checker_refuses(known)
    test_links(text)
    test_examples(text, known)
    done()


if __name__ == "__main__":
    main()
