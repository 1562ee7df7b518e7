"""The conformance kit for backend and compiler plugins.

Run it against a plugin (installed, or registered in a ``conftest.py``)::

    pytest --pyargs nxpy.testing --nxpy-backend=NAME      # an eager backend
    pytest --pyargs nxpy.testing --nxpy-compiler=NAME     # a compiler

Every op of the op set runs on several shapes and types and must match the NumPy
reference backend; ops the plugin does not implement are skipped and listed in a report
at the end. Without options the kit checks the built-ins (NumPy and EXLA backends, the
Evaluator and EXLA compilers), which is what nxpy's own test run does. From Python:

>>> from nxpy.testing import CASES, check
>>> check(CASES[0], ("compiler", "evaluator"))
"""
from __future__ import annotations

import contextlib

import numpy as np

from .cases import CASES, OP_SET, Case
import nxpy as nx
from ..defn import tree
from ..defn import jit

__all__ = ["CASES", "OP_SET", "Case", "Unsupported", "check", "run", "reference", "BUILTIN_TARGETS"]

BUILTIN_TARGETS = [("backend", "numpy"), ("backend", "exla"), ("compiler", "evaluator"),
                   ("compiler", "exla")]


class Unsupported(Exception):
    """The target does not implement an op the case needs."""


@contextlib.contextmanager
def _default_backend(name):
    old = nx.default_backend(name)
    try:
        yield nx.default_backend()
    finally:
        nx.default_backend(old)


def _to_numpy(result):
    leaves, _ = tree.flatten(result)
    return [(np.asarray(t.to_numpy()), str(t.type), t.shape) for t in leaves]


def reference(case: Case):
    """The NumPy backend's result, eagerly."""
    return run(case, ("backend", "numpy"))


def run(case: Case, target):
    """``target``: ``("backend", name)`` runs eagerly on that backend; ``("compiler",
    name)`` runs the case as a defn with that compiler."""
    kind, name = target
    try:
        if kind == "backend":
            with _default_backend(name) as b:
                args = [nx.tensor(a, backend=b) for a in case.inputs]
                return _to_numpy(case.fn(nx, *args))
        args = [nx.tensor(a) for a in case.inputs]
        return _to_numpy(jit(lambda *xs: case.fn(nx, *xs), compiler=name)(*args))
    except NotImplementedError as e:
        raise Unsupported(f"{kind} {name!r}: {e}") from e


def check(case: Case, target) -> None:
    """Raises AssertionError when ``target`` disagrees with the reference, Unsupported when
    it lacks an op."""
    want = reference(case)
    got = run(case, target)
    assert len(got) == len(want), f"{case.id}: {len(got)} results, expected {len(want)}"
    for i, ((g, gt, gs), (w, wt, ws)) in enumerate(zip(got, want)):
        assert (gt, gs) == (wt, ws), (f"{case.id} result {i}: {gt}{list(gs)}, "
                                      f"expected {wt}{list(ws)}")
        if case.tol:
            def wide(v):
                return v.astype(np.complex128 if v.dtype.kind == "c" else np.float64)
            np.testing.assert_allclose(wide(g), wide(w),
                                       rtol=case.tol, atol=case.tol, equal_nan=True,
                                       err_msg=f"{case.id} result {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{case.id} result {i}")
