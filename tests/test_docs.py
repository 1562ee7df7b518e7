"""The manual's examples run: the ```python blocks of every page of docs/ and of
bench/README.md, in order, each page in a namespace of its own; a block followed by a
```text block must print exactly that. A block fenced ```python no-run is only compiled
(a fragment of a program the prose describes, or one that needs a GPU or several
processes). All pages run in one child process, so that what a page registers (an op, a
rule, a plugin) stays out of the rest of the suite. docs/README.md states the convention.

Also: every relative link of README.md, docs/*.md and bench/README.md points to a file
that exists (and to a heading of it), and docs/README.md lists every page."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "bench" / "README.md"]
FENCE = re.compile(r"^```([^`\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(path):
    """``[(words of the info string, body)]`` of the page's fenced blocks, in order."""
    return [(info.split(), body) for info, body in FENCE.findall(path.read_text())]


# The child: runs each page's blocks (paths in argv), prints one JSON line of failures.
CHILD = r'''
import contextlib, io, json, os, re, sys, traceback
import nxpy as nx
from nxpy import pjrt
pjrt.devices()
if os.environ.get("NXPY_DOCS_ROUNDTRIP") == "1":
    from nxpy.stablehlo import roundtrip
    roundtrip.enable()
FENCE = re.compile(r"^```([^`\n]*)\n(.*?)^```[ \t]*$", re.S | re.M)
def normal(text):
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())
failures, ran = [], 0
for path in sys.argv[1:]:
    found = [(info.split(), body) for info, body in FENCE.findall(open(path).read())]
    ns = {"__name__": "__docs__"}
    nx.default_backend("numpy")
    for i, (words, body) in enumerate(found):
        if words[:1] != ["python"] or "no-run" in words:
            continue
        ran += 1
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(body, f"{path} block {i}", "exec"), ns)
        except BaseException:
            failures.append(f"{path} block {i} raised:\n{traceback.format_exc()}")
            break                        # the page's later blocks build on this one
        if i + 1 < len(found) and found[i + 1][0][:1] == ["text"]:
            if normal(out.getvalue()) != normal(found[i + 1][1]):
                failures.append(f"{path} block {i} printed:\n{out.getvalue()}\n"
                                f"the page says:\n{found[i + 1][1]}")
print(json.dumps({"ran": ran, "failures": failures}))
'''


def _roundtrip_on():
    mod = sys.modules.get("nxpy.stablehlo.roundtrip")
    return bool(mod is not None and getattr(mod, "_saved", None))


def test_docs_examples_run_and_print_what_the_pages_say():
    env = dict(os.environ, NXPY_DOCS_ROUNDTRIP="1" if _roundtrip_on() else "0")
    proc = subprocess.run([sys.executable, "-c", CHILD, *map(str, PAGES)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not result["failures"], "\n\n".join(result["failures"])
    expected = sum(1 for page in PAGES for words, _ in blocks(page)
                   if words[:1] == ["python"] and "no-run" not in words)
    assert result["ran"] == expected >= 20


def test_no_run_blocks_still_compile():
    for page in PAGES:
        for i, (words, body) in enumerate(blocks(page)):
            if words[:1] == ["python"]:
                compile(body, f"{page.relative_to(ROOT)} block {i}", "exec")
            assert set(words[1:]) <= {"no-run"}, f"{page.name} block {i}: fence {words}"


def _slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path):
    text = FENCE.sub("", path.read_text())
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, re.M)}


def test_relative_links_resolve():
    broken = []
    for page in [ROOT / "README.md", *PAGES]:
        text = re.sub(r"(`+).+?\1", "", FENCE.sub("", page.read_text()))   # no code
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue                 # https:, mailto:
            file, _, anchor = target.partition("#")
            dest = (page.parent / file).resolve() if file else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_the_index_lists_every_page():
    index = (ROOT / "docs" / "README.md").read_text()
    missing = [p.name for p in PAGES if p.parent.name == "docs" and p.name != "README.md"
               and f"]({p.name})" not in index]
    assert not missing, f"pages docs/README.md does not list: {missing}"
