"""Round-trip checking (test-only): every module the EXLA compiler builds is also parsed,
loaded, re-traced and run — on EXLA and on the Evaluator — and compared with the original
program's results on the same compiler.

``enable()`` wraps ``ExlaCompiler.compile`` and ``ExlaCompiler.compile_sharded``
(nothing else in nxpy changes): each compiled program's module text is loaded with
:func:`nxpy.stablehlo.load` when it is compiled, and each time the program runs, the
loaded program runs too — on EXLA, compared with the original EXLA results, and on the
Evaluator (NumPy backend), compared with the original graph run by the Evaluator (with
``jit``, or ``shard_jit`` for sharded modules). Integers and booleans must be equal,
floats within :data:`TOLERANCES`. A mismatch, a module that does not load, or a program
that fails raises :class:`RoundTripError` from the program's call.

As a pytest plugin, ``python -m pytest -p nxpy.stablehlo.roundtrip`` runs a whole test
suite this way (set ``NXPY_STABLEHLO_ROUNDTRIP=0`` to load the plugin without enabling it).

>>> import nxpy as nx
>>> from nxpy.defn import jit
>>> with checking() as stats:
...     r = jit(lambda x: nx.sum(x * 2), compiler="exla")(nx.tensor([1.0, 2.0]))
>>> r.tolist(), stats["modules"], stats["runs"]
(6.0, 1, 1)
"""
from __future__ import annotations

import contextlib
import os
import threading

import numpy as np
import pytest
from .loader import host_callbacks, load
from .. import telemetry
from ..backend import backend_copy
from ..compilers.evaluator import Evaluator
from ..compilers.exla.compiler import ExlaCompiler

__all__ = ["enable", "disable", "checking", "RoundTripError", "STATS", "compare",
           "compare_results", "compare_per_device", "TOLERANCES", "INCOMPATIBLE"]

STATS = {"modules": 0, "runs": 0, "sharded_modules": 0, "skipped_host_callbacks": 0}

_local = threading.local()
_saved: dict = {}


class RoundTripError(AssertionError):
    """The loaded module did not reproduce the original program's results."""


@contextlib.contextmanager
def _quiet():
    """While loaded programs compile and run, their own compiles are not checked."""
    prev = getattr(_local, "busy", False)
    _local.busy = True
    try:
        with telemetry.unobserved():
            yield
    finally:
        _local.busy = prev


def _busy():
    return getattr(_local, "busy", False)


#: (rtol, atol) for float results, by dtype name: the loaded program runs the same ops as
#: the original (on the same compiler), so only reassociation-level differences are allowed
TOLERANCES = {"float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (2e-6, 1e-6),
              "float64": (1e-12, 1e-14), "complex64": (2e-6, 1e-6),
              "complex128": (1e-12, 1e-14)}


def compare(expected, got, what="result"):
    """Raises :class:`RoundTripError` unless tensor ``got`` equals ``expected`` (same
    shape and type; integers and booleans exactly, floats within :data:`TOLERANCES`,
    NaNs in the same places)."""
    if (expected.shape, expected.type) != (got.shape, got.type):
        raise RoundTripError(f"{what}: the loaded program returned {got.type}{list(got.shape)}, "
                             f"the original {expected.type}{list(expected.shape)}")
    e = np.asarray(expected.to_numpy()).reshape(expected.shape)
    g = np.asarray(got.to_numpy()).reshape(got.shape)
    name = e.dtype.name
    if name in TOLERANCES:
        rtol, atol = TOLERANCES[name]
        wide = np.complex128 if e.dtype.kind == "c" else np.float64
        try:
            np.testing.assert_allclose(g.astype(wide), e.astype(wide), rtol=rtol, atol=atol,
                                       equal_nan=True)
        except AssertionError as err:
            raise RoundTripError(f"{what} differs:{err}") from None
    elif not np.array_equal(e, g):
        raise RoundTripError(f"{what} differs:\n  original {e.tolist()}\n  loaded   "
                             f"{g.tolist()}")


def _as_list(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def compare_results(expected, got, where="result"):
    """:func:`compare` for a program's results: ``expected`` and ``got`` are a tensor or a
    tuple/list of tensors, compared one by one; raises :class:`RoundTripError` (saying
    ``where``) when they differ, in number too."""
    w, g = _as_list(expected), _as_list(got)
    if len(w) != len(g):
        raise RoundTripError(f"{where}: the loaded program returned {len(g)} results, the "
                             f"original {len(w)}")
    for i, (e, x) in enumerate(zip(w, g)):
        compare(e, x, f"result {i} ({where})")


def compare_per_device(expected, got, where="result"):
    """:func:`compare_results` per device: ``expected`` and ``got`` hold one program
    result per device, in partition order (as ``shard_jit`` callables return them)."""
    if len(expected) != len(got):
        raise RoundTripError(f"{where}: the loaded program returned results for {len(got)} "
                             f"devices, the original for {len(expected)}")
    for p, (w, g) in enumerate(zip(expected, got)):
        compare_results(w, g, f"{where}, device {p}")


def _load(text):
    try:
        return load(text, check=False)  # it runs at once: that checks it
    except Exception as err:  # reported with the module
        raise RoundTripError(f"the module nxpy compiled does not load back: "
                             f"{type(err).__name__}: {err}\n--- module ---\n{text}") from err


def _kept(leaves, donated):
    """``leaves`` with host copies of the donated ones: the original program gives their
    buffers up, so the reruns read the copies."""
    if not donated:
        return list(leaves)
    with telemetry.unobserved():  # the checker's own transfers: not the user's
        return [backend_copy(x, "numpy") if i in donated else x for i, x in enumerate(leaves)]


def _check(text, checks, run_args, per_device=False):
    """Runs every ``(compiler, original, loaded)`` pair on ``run_args`` and compares."""
    with _quiet():
        for path, original, loaded in checks:
            results = []
            for who, f in (("original", original), ("loaded", loaded)):
                try:
                    results.append(f(run_args))
                except Exception as err:
                    raise RoundTripError(f"the {who} program failed on {path}: "
                                         f"{type(err).__name__}: {err}\n--- module ---\n"
                                         f"{text}") from err
            want, got = results
            try:
                (compare_per_device if per_device else compare_results)(want, got, path)
            except RoundTripError as err:
                raise RoundTripError(f"{err}\n--- module ---\n{text}") from None
    STATS["runs"] += 1


def _calls_host(text) -> bool:
    """Modules calling back into Python (print_value, hook) are not checked: the loader
    cannot load them, and rerunning the program would call the callbacks again."""
    if "_python_" not in text or not host_callbacks(text):
        return False
    STATS["skipped_host_callbacks"] += 1
    return True


def _checked_compile(orig):
    def compile(self, graph, opts):
        run = orig(self, graph, opts)
        text = getattr(run, "module", None)
        if _busy() or text is None or _calls_host(text):
            return run
        with _quiet():
            prog = _load(text)
            dev = {"device_id": opts["device_id"]} if "device_id" in opts else {}
            exla, evaluator = prog.jit("exla", **dev), prog.jit("evaluator", backend="numpy")
            on_evaluator = Evaluator().compile(graph, {"backend": "numpy"})
        STATS["modules"] += 1
        state = {}

        def checked(args):
            kept = _kept(args, graph.donated)
            outs = run(args)
            if not _busy():
                state["outs"] = outs
                _check(text, [("exla", lambda a: state.pop("outs"), lambda a: exla(*a)),
                              ("the evaluator", on_evaluator, lambda a: evaluator(*a))],
                       kept)
            return outs

        for attr in ("module", "executable"):
            if hasattr(run, attr):
                setattr(checked, attr, getattr(run, attr))
        return checked
    return compile


def _checked_compile_sharded(orig):
    def compile_sharded(self, graph, mesh, in_shardings, out_shardings, propagator, opts):
        run, text = orig(self, graph, mesh, in_shardings, out_shardings, propagator, opts)
        if _busy() or text is None or _calls_host(text):
            return run, text
        with _quiet():
            prog = _load(text)
            try:
                exla = prog.shard_jit("exla", mesh=mesh)
                evaluator = prog.shard_jit("evaluator", mesh=mesh, backend="numpy")
            except Exception as err:
                raise RoundTripError(f"the loaded module cannot be set up for shard_jit: "
                                     f"{err}\n--- module ---\n{text}") from err
            on_evaluator, _ = Evaluator().compile_sharded(graph, mesh, in_shardings,
                                                          out_shardings, propagator,
                                                          {"backend": "numpy"})
        STATS["sharded_modules"] += 1
        state = {}

        def checked(per_device):
            args = [_kept(d, graph.donated) for d in per_device]
            outs = run(per_device)
            if not _busy():
                state["outs"] = outs
                _check(text, [("exla", lambda a: state.pop("outs"), exla),
                              ("the evaluator", on_evaluator, evaluator)], args,
                       per_device=True)
            return outs
        return checked, text
    return compile_sharded


def enable():
    """Starts checking every EXLA-compiled module (idempotent)."""
    if _saved:
        return
    _saved["compile"] = ExlaCompiler.compile
    _saved["compile_sharded"] = ExlaCompiler.compile_sharded
    ExlaCompiler.compile = _checked_compile(_saved["compile"])
    ExlaCompiler.compile_sharded = _checked_compile_sharded(_saved["compile_sharded"])


def disable():
    """Stops checking (programs compiled while enabled keep checking their runs)."""
    if not _saved:
        return
    ExlaCompiler.compile = _saved.pop("compile")
    ExlaCompiler.compile_sharded = _saved.pop("compile_sharded")


@contextlib.contextmanager
def checking():
    """``with checking() as stats:``: round-trip checks on inside; ``stats`` counts the
    modules checked (``modules``, ``sharded_modules``) and the program runs compared
    (``runs``) inside the block."""
    was = bool(_saved)
    start = dict(STATS)
    stats = {}
    enable()
    try:
        yield stats
    finally:
        if not was:
            disable()
        stats.update({k: STATS[k] - start[k] for k in STATS})


# ----------------------------------------------------------------------------------------
# pytest plugin: python -m pytest -p nxpy.stablehlo.roundtrip
# ----------------------------------------------------------------------------------------
#: tests whose assertions the checks themselves would break, with the reason
INCOMPATIBLE = {
    "tests/test_defn.py::test_exla_results_stay_on_device_until_read":
        "it counts host reads of EXLA results, and the round trip reads them to compare",
    "tests/test_shard_jit_fast_path.py::test_per_device_results_stay_pieces_until_used":
        "it checks that sharded results are not split until read, and the round trip reads "
        "them to compare",
    "tests/test_ops_complex.py::test_eps_cleans_tiny_parts_on_the_numpy_backend_only":
        "it runs an FFT whose result the NumPy backend's eps clean-up changes; eps is not in "
        "the StableHLO, so the loaded program runs the transform with eps=0",
    "tests/test_ops_linalg.py::test_cholesky_not_positive_definite":
        "it runs cholesky of a matrix that is not positive definite on EXLA (NaNs, as JAX), "
        "which the round trip reruns on the Evaluator, whose NumPy kernel raises, as Nx's",
    "tests/test_collectives.py::test_check_vma_false_runs_a_divergent_cond_as_xla_and_jax_do":
        "it runs, with check_vma=False, a cond whose devices take different branches around "
        "a psum on EXLA, which the round trip reruns on the Evaluator, which raises (the "
        "test's point: on XLA such a program mixes values or deadlocks)",
    "tests/test_plugins.py::test_override_a_lowering_and_custom_call":
        "it replaces erf's lowering by a different function on purpose, so the module does "
        "not compute what the graph does on the Evaluator",
}


def pytest_configure(config):
    if os.environ.get("NXPY_STABLEHLO_ROUNDTRIP", "1") != "0":
        enable()


def pytest_collection_modifyitems(config, items):
    if not _saved:
        return
    for item in items:
        reason = INCOMPATIBLE.get(item.nodeid)
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"round-trip mode: {reason}"))


def pytest_report_header(config):
    if _saved:
        return "nxpy.stablehlo round trip: every EXLA module is parsed, loaded and re-run"


def pytest_sessionfinish(session):
    out = getattr(session.config, "workeroutput", None)
    if out is not None:  # a pytest-xdist worker: hand the counts to the controller
        out["nxpy_roundtrip"] = dict(STATS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):  # the controller, under pytest-xdist
    for k, v in getattr(node, "workeroutput", {}).get("nxpy_roundtrip", {}).items():
        STATS[k] += v


def pytest_terminal_summary(terminalreporter):
    if _saved:
        terminalreporter.write_line(
            f"nxpy.stablehlo round trip: {STATS['modules']} modules and "
            f"{STATS['sharded_modules']} sharded modules loaded back, {STATS['runs']} runs "
            f"compared on EXLA and the Evaluator; {STATS['skipped_host_callbacks']} modules "
            f"with host callbacks (print_value, hook) not checked")
