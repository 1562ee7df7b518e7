"""Running a fuzzed program every way nxpy can run it and comparing: :func:`check` (the
NumPy backend, the Evaluator, EXLA, the StableHLO round trip and the JAX twin; with
``vmap=True`` the batch too; a sharded program per device) and :func:`run_many`, a
stretch of a stream (``docs/fuzzing.md``).

>>> p = generate(0, 3)
>>> p.index, len(p.leaves()) >= 1
(3, True)
>>> check(p)   # raises Mismatch when two paths disagree
>>> check(p, vmap=True)   # and batched
"""
from __future__ import annotations

import warnings

import numpy as np

import nxpy as nx
from ... import pjrt
from ...compilers.exla import to_mlir
from ...defn import jit
from ...stablehlo import load
from ...stablehlo.roundtrip import RoundTripError, compare_results
from .checks import check_vmap
from .compare import _fail, _leaves, _values_match, tolerances
from .generator import generate
from .program import Mismatch, Program, _numpy_backend
from .sharded import ShardedProgram, check_sharded, generate_sharded

__all__ = ["check", "run_many"]


def _paths(prog: Program, compilers=()):
    """Results of every nxpy path (and of ``jit`` with each of ``compilers``, plugin
    compilers by name): name -> list of (array, type, names)."""
    args = [nx.tensor(leaf.array(), type=leaf.type, names=list(leaf.names) if leaf.names else None)
            for leaf in prog.leaves()]
    fn = prog.function()
    out = {}

    def record(name, f, names=True):
        try:
            r = f()
        except Exception as err:  # reported as a mismatch
            out[name] = err
            return
        out[name] = [(np.asarray(t.to_numpy()).reshape(t.shape), str(t.type),
                      tuple(t.names) if names else None) for t in _leaves(r)]

    with _numpy_backend():
        record("numpy", lambda: fn(*args))
        record("evaluator", lambda: jit(fn, compiler="evaluator")(*args))
        record("exla", lambda: jit(fn, compiler="exla")(*args))
        for name in compilers:
            record(name, lambda: jit(fn, compiler=name)(*args))
        loaded = {}
        try:
            prog_ = load(to_mlir(fn, *args))
            loaded["exla"] = prog_.jit("exla")(*args)
        except Exception as err:
            out["stablehlo"] = err
        else:
            record("stablehlo/exla", lambda: loaded["exla"], names=False)
            record("stablehlo/evaluator", lambda: prog_.jit("evaluator")(*args), names=False)
            if not isinstance(out.get("exla"), Exception):
                try:
                    compare_results(_leaves(jit(fn, compiler="exla")(*args)),
                                    _leaves(loaded["exla"]))
                except RoundTripError as err:
                    out["stablehlo/exla vs exla"] = err
    return out


def _jax_results(prog: Program):
    jax = pjrt.oracle()
    with warnings.catch_warnings(), jax.enable_x64(True):
        warnings.simplefilter("ignore")
        arrays = [leaf.array() for leaf in prog.leaves()]
        r = jax.jit(prog.jax_function(jax))(*arrays)
        leaves = jax.tree_util.tree_leaves(r)
        return [np.asarray(x) for x in leaves]


def check(prog, *, with_jax: bool = True, vmap: bool = False, compilers=()) -> None:
    """Runs ``prog`` on every path; raises :class:`Mismatch` (with the program's
    description and a repro command) when two disagree. ``vmap``: then checks
    :func:`check_vmap` too (single-device programs). ``compilers``: more compilers (plugin
    names, ``--compiler`` on the command line) whose ``jit`` of a single-device program is
    one more path."""
    if isinstance(prog, ShardedProgram):
        return check_sharded(prog)
    _check_paths(prog, with_jax, tuple(compilers))
    if vmap:
        check_vmap(prog, with_jax=with_jax)


def _check_paths(prog, with_jax, compilers=()):
    res = _paths(prog, compilers)
    ref = res.pop("numpy")
    if isinstance(ref, Exception):
        _fail(prog, f"the NumPy backend failed: {type(ref).__name__}: {ref}")
    tols = tolerances(prog)
    if len(tols) != len(ref):  # the fuzzer's own bookkeeping
        raise AssertionError(f"{len(tols)} tolerances for {len(ref)} results")
    for path, got in res.items():
        if isinstance(got, Exception):
            _fail(prog, f"{path} failed: {type(got).__name__}: {got}")
        if len(got) != len(ref):
            _fail(prog, f"{path}: {len(got)} results, the NumPy backend {len(ref)}")
        for k, ((g, gt, gn), (w, wt, wn)) in enumerate(zip(got, ref)):
            if gt != wt or g.shape != w.shape:
                _fail(prog, f"{path} result {k}: {gt}{list(g.shape)}, "
                            f"the NumPy backend {wt}{list(w.shape)}")
            if gn is not None and gn != wn:
                _fail(prog, f"{path} result {k}: names {list(gn)}, the NumPy backend {list(wn)}")
            d = _values_match(w, g, tols[k])
            if d:
                _fail(prog, f"{path} result {k} vs the NumPy backend: {d}")
    if not with_jax:
        return
    try:
        want = _jax_results(prog)
    except Exception as err:
        _fail(prog, f"the JAX twin failed: {type(err).__name__}: {err}")
    if len(want) != len(ref):
        _fail(prog, f"JAX gave {len(want)} results, nxpy {len(ref)}")
    for k, (w, (g, gt, _)) in enumerate(zip(want, ref)):
        w = w.astype(g.dtype) if not prog.grad else w
        d = _values_match(w, g, tols[k])
        if d:
            _fail(prog, f"result {k}: the NumPy backend vs JAX: {d}")


def run_many(seed: int, count: int, start: int = 0, sharded_every: int = 10, stop_on_first=False,
             out=None, vmap_every: int = 1, compilers=()) -> list:
    """Checks programs ``start .. start+count-1`` of stream ``seed`` (every
    ``sharded_every``-th is a sharded one; single-device programs whose index is a
    multiple of ``vmap_every`` also batched, :func:`check_vmap`; 0: none); returns the
    mismatches. ``compilers``: more compilers checked on every single-device program
    (:func:`check`)."""
    found = []
    for k in range(start, start + count):
        sharded = sharded_every and k % sharded_every == sharded_every - 1
        prog = generate_sharded(seed, k) if sharded else generate(seed, k)
        try:
            check(prog, vmap=bool(vmap_every) and k % vmap_every == 0, compilers=compilers)
        except Mismatch as err:
            found.append(err)
            if out:
                print(f"MISMATCH {err}\n", file=out, flush=True)
            if stop_on_first:
                break
    return found

