"""Generated sections of the manual: a page of docs/ holds a section between two marker
lines (``<!-- ... -->``) that a module renders (the coverage tables of ``nxpy.nn``,
``nxpy.numpy`` and ``nxpy.random``); this module puts a rendered section into a page's
text and writes the page. Standard library only."""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["with_section", "write_section"]


def with_section(doc: str, begin: str, end: str, body: str) -> str:
    """``doc`` with the section from the line ``begin`` to the line ``end`` replaced by
    ``body`` between those lines (appended at the end, after a blank line, when ``doc``
    has no such section); the blank lines after the old section are dropped.

    >>> with_section("# Page\\n\\n<!-- a -->\\nold\\n<!-- b -->\\n", "<!-- a -->",
    ...              "<!-- b -->", "new\\n")
    '# Page\\n\\n<!-- a -->\\nnew\\n<!-- b -->\\n'
    >>> with_section("# Page\\n", "<!-- a -->", "<!-- b -->", "new\\n")
    '# Page\\n\\n<!-- a -->\\nnew\\n<!-- b -->\\n'
    """
    section = f"{begin}\n{body}{end}\n"
    old = re.compile(f"{re.escape(begin)}.*?{re.escape(end)}\n*", re.S)
    if old.search(doc):
        return old.sub(lambda _: section, doc, count=1)
    return doc.rstrip("\n") + "\n\n" + section


def write_section(argv: list[str], default: str, begin: str, end: str, body: str,
                  what: str) -> Path:
    """The ``python -m`` entry of a generated section: writes ``body`` into the page named
    by ``argv[0]`` (``default`` when ``argv`` is empty, relative to the current directory),
    creating the page if there is none, and says so; returns the page's path."""
    doc = Path(argv[0] if argv else default)
    doc.write_text(with_section(doc.read_text() if doc.exists() else "", begin, end, body))
    print(f"wrote the {what} into {doc}")
    return doc
