"""pytest plugin of the conformance kit (registered through the ``pytest11`` entry point):
the ``--nxpy-backend`` / ``--nxpy-compiler`` options and the unsupported-ops report."""
from __future__ import annotations
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


def pytest_generate_tests(metafunc):
    if "nxpy_target" in metafunc.fixturenames:
        ts = targets(metafunc.config)
        metafunc.parametrize("nxpy_target", ts, ids=[f"{k}={n}" for k, n in ts])
    if "nxpy_case" in metafunc.fixturenames:
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
