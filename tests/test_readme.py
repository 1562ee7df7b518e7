"""README.md's ```python blocks run, in order, in one namespace; a block followed by a
```text block must print exactly that. Keeps the README true to the code."""
import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
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
