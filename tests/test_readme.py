"""README.md's ```python blocks run, in order, in one namespace; a block followed by a
```text block must print exactly that. Keeps the README true to the code. The README stays
a front page (at most 350 lines) and names the commands CI runs."""
import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README.read_text(), re.S)


def _normal(text):
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())


def test_readme_examples_run_and_print_what_the_readme_says():
    import nxpy as nx
    old = nx.default_backend()
    ns = {}
    try:
        for i, (lang, body) in enumerate(BLOCKS):
            if lang != "python":
                continue
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(body, f"README block {i}", "exec"), ns)
            nxt = BLOCKS[i + 1] if i + 1 < len(BLOCKS) else None
            if nxt and nxt[0] == "text":
                assert _normal(out.getvalue()) == _normal(nxt[1]), f"README block {i}"
    finally:
        nx.default_backend(old)


def test_readme_has_examples():
    assert sum(1 for lang, _ in BLOCKS if lang == "python") >= 8
    if not any("shard_map" in body for _, body in BLOCKS):
        pytest.fail("the README should show the local view")


def test_readme_stays_a_front_page():
    lines = len(README.read_text().splitlines())
    assert lines <= 350, f"README.md has {lines} lines, at most 350: move detail to docs/"


def _make_lines():
    """``[(target, line)]`` of the README's ```sh block of commands."""
    sh = next(body for lang, body in BLOCKS if lang == "sh")
    return [(m.group(1), line) for line in sh.splitlines()
            if (m := re.match(r"make ([\w-]+)", line))]


def test_readme_names_the_commands_ci_runs():
    """Every target .ci/run makes has a line of the README's command list that says "CI",
    with each SLICE CI passes; every target the list names is the Makefile's."""
    ci = "\n".join(line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                   if not line.lstrip().startswith("#"))
    loop = re.search(r"for target in ([\w -]+); do", ci)
    assert loop, ".ci/run: no `for target in ...; do` loop of make targets"
    ran = set(loop.group(1).split()) | set(re.findall(r"\bmake ([a-z][\w-]*)", ci))
    listed = _make_lines()
    unmarked = sorted(t for t in ran if not any(n == t and "CI" in line for n, line in listed))
    assert not unmarked, f"targets .ci/run makes that the README does not mark CI: {unmarked}"
    sh = "\n".join(line for _, line in listed)
    for slice_ in sorted(set(re.findall(r"SLICE=(\d)", ci))):
        assert f"SLICE={slice_}" in sh, f"the README's commands do not say SLICE={slice_}"
    makefile = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))
    assert {t for t, _ in listed} <= makefile, {t for t, _ in listed} - makefile
