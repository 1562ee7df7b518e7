"""pytest plugin of the conformance kit (registered through the ``pytest11`` entry point):
the ``--nxpy-backend`` / ``--nxpy-compiler`` options and the unsupported-ops report."""
from __future__ import annotations

import os

from . import BUILTIN_TARGETS
from .cases import CASES

_UNSUPPORTED: dict = {}


def pytest_addoption(parser):
    group = parser.getgroup("nxpy", "nxpy conformance kit")
    group.addoption("--nxpy-backend", action="append", default=[], metavar="NAME",
                    help="run the conformance kit against this eager backend (repeatable)")
    group.addoption("--nxpy-compiler", action="append", default=[], metavar="NAME",
                    help="run the conformance kit against this compiler (repeatable)")


def targets(config):
    chosen = [("backend", b) for b in config.getoption("nxpy_backend")] + \
             [("compiler", c) for c in config.getoption("nxpy_compiler")]
    if chosen:
        return chosen
    return BUILTIN_TARGETS


#: without a chosen target (nxpy's own suite), EXLA's eager backend, which compiles one
#: program per op and signature, runs every ``EAGER_EXLA_EVERY``-th case (its ops are
#: checked on every dtype by nxpy's op tests), from the ``NXPY_TEST_SLICE``-th on (another
#: slice of the suite, ``make test SLICE=1``, takes others); ``NXPY_TEST_PRODUCT=full``:
#: every case
EAGER_EXLA_EVERY = 4


def _pairs(config):
    """(case, target) pairs: every case on every chosen target; on the built-in targets,
    EXLA's eager backend on a rotating share of the cases unless NXPY_TEST_PRODUCT=full."""
    ts = targets(config)
    every = 1 if config.getoption("nxpy_backend") or config.getoption("nxpy_compiler") \
        or os.environ.get("NXPY_TEST_PRODUCT", "") == "full" else EAGER_EXLA_EVERY
    start = int(os.environ.get("NXPY_TEST_SLICE") or 0)
    return [(c, t) for i, c in enumerate(CASES) for t in ts
            if t != ("backend", "exla") or (i - start) % every == 0]


def pytest_generate_tests(metafunc):
    names = metafunc.fixturenames
    if "nxpy_target" in names and "nxpy_case" in names:
        pairs = _pairs(metafunc.config)
        metafunc.parametrize("nxpy_case,nxpy_target", pairs,
                             ids=[f"{c.id}-{k}={n}" for c, (k, n) in pairs])
    elif "nxpy_target" in names:
        ts = targets(metafunc.config)
        metafunc.parametrize("nxpy_target", ts, ids=[f"{k}={n}" for k, n in ts])
    elif "nxpy_case" in names:
        metafunc.parametrize("nxpy_case", CASES, ids=[c.id for c in CASES])


def record_unsupported(target, op, reason):
    _UNSUPPORTED.setdefault(target, {}).setdefault(op, reason)


def pytest_terminal_summary(terminalreporter):
    if not _UNSUPPORTED:
        return
    terminalreporter.section("nxpy conformance kit: unsupported ops")
    for (kind, name), ops in sorted(_UNSUPPORTED.items()):
        terminalreporter.write_line(f"{kind} {name!r}: {len(ops)} op(s) unsupported: "
                                    f"{', '.join(sorted(ops))}")
