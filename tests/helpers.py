"""Helpers shared by the tests: the path harness of the op tests (a function run on every
path, its results compared with an oracle's), switching the default backend, structural
checks of emitted MLIR through nxpy's own StableHLO parser (not substrings), and
comparisons of results with JAX's."""
import contextlib
import importlib.util
import itertools
import json
import math
import os
import re
import sys
import zlib
from collections.abc import Mapping
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import jit, jvp
from nxpy.stablehlo import parse
from nxpy.stablehlo.sharding import replica_groups
from nxpy.testing.records import RANGES

import jax  # after nxpy (importing JAX starts no client; nxpy's conftest starts XLA)
import jax.numpy as jnp


@contextlib.contextmanager
def default_backend(name):
    """``nx.default_backend(name)`` for the duration of a ``with`` block."""
    old = nx.default_backend(name)
    try:
        yield
    finally:
        nx.default_backend(old)


GROUP_ATTRS = ("replica_groups", "source_target_pairs")


def groups(text_or_module) -> list:
    """``(op name, attribute, value)`` for every op carrying replica groups or
    source/target pairs, in module order; values as nested lists. Replica groups are
    resolved to device groups through the importer (:func:`replica_groups`), so the dense
    form (jax 0.10, nxpy) and the mesh-axes form (jax 0.12) of the same groups compare
    equal."""
    m = parse(text_or_module) if isinstance(text_or_module, str) else text_or_module
    return [(op.name, k, replica_groups(m, op.attributes[k]) if k == "replica_groups"
             else op.attrs[k]) for op in m.walk() for k in GROUP_ATTRS if k in op.attributes]


def fragment(frag: str) -> tuple:
    """``"replica_groups = dense<[[0, 2], [1, 3]]>"`` → ``("replica_groups", [[0, 2], [1, 3]])``."""
    name, value = re.fullmatch(r"(\w+) = dense<(.*)>", frag).groups()
    return name, json.loads(value)  # a nested list of ints


def only(module, name: str):
    """The single op named ``name`` in ``module``."""
    ops = module.find(name)
    assert len(ops) == 1, f"expected one {name}, found {len(ops)}"
    return ops[0]


def types(module) -> set:
    """Every tensor type printed for an argument, result or op of ``module``."""
    out = {str(a.type) for f in module.funcs for a in f.args + f.results}
    for op in module.walk():
        out.update(str(t) for t in op.operand_types + op.result_types)
    return out


def assert_contains(module, frag: str):
    """The structural reading of a conformance ``mlir_must_contain`` entry: an op name, a
    ``replica_groups = dense<...>`` attribute, ``sdy.mesh``/``sdy.sharding``, or a type."""
    if frag == "sdy.mesh":
        assert module.meshes, "no sdy.mesh in the module"
    elif frag == "sdy.sharding":
        assert any(a.sharding is not None for a in module.main.args + module.main.results)
    elif frag.startswith("tensor<"):
        assert frag in types(module), f"no value of type {frag}"
    elif " = dense<" in frag:
        assert fragment(frag) in [(k, v) for _, k, v in groups(module)], frag
    else:
        assert re.fullmatch(r"\w+\.\w+", frag), f"cannot read {frag!r} structurally"
        assert module.find(frag), f"no {frag} op"


def normal(*shape, seed=0):
    """Standard normal f32 values of ``shape`` (seeded)."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ----------------------------------------------------------------------------------------
# Types, by nxpy's names
# ----------------------------------------------------------------------------------------
ALL_TYPES = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64",
             "c64", "c128", "pred"]
INTS = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]
FLOATS = ["f16", "bf16", "f32", "f64"]
COMPLEX = ["c64", "c128"]
BF16 = np.dtype(ml_dtypes.bfloat16)


def dt(t: str) -> np.dtype:
    """The NumPy dtype of the nxpy type ``t``."""
    return BF16 if t == "bf16" else np.dtype({
        "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "u8": np.uint8,
        "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "f16": np.float16,
        "f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128,
        "pred": np.bool_}[t])


def tname(d) -> str:
    """The nxpy type name of the NumPy dtype ``d``."""
    d = np.dtype(d)
    return next(t for t in ALL_TYPES if dt(t) == d)


def is_inexact(t):
    return t in FLOATS or t in COMPLEX


def x64():
    """JAX in 64-bit mode, for the ``with`` block."""
    return jax.enable_x64(True)


def meshes_2x2():
    """A 2x2 mesh with axes ``x`` and ``y`` as nxpy's and as JAX's, over the first four
    devices (the test is skipped with fewer)."""
    if len(jax.devices()) < 4:
        pytest.skip("needs 4 devices")
    devs = np.empty(4, dtype=object)
    devs[:] = jax.devices()[:4]
    return (nx.Mesh("mesh", (2, 2), axis_names=("x", "y")),
            jax.sharding.Mesh(devs.reshape(2, 2), ("x", "y")))


# ----------------------------------------------------------------------------------------
# The path runner
# ----------------------------------------------------------------------------------------
#: the compilers a ``jit`` test runs on
COMPILERS = ("evaluator", "exla")
#: eager on the NumPy backend, jit with the Evaluator, jit with EXLA, eager on EXLA's backend
PATHS = ("numpy", "evaluator", "exla", "exla_eager")
#: without EXLA's eager backend, which compiles one program per op: for many-op functions
CHEAP = ("numpy", "evaluator", "exla")
#: CHEAP's paths as the ids of the nn, numpy and tensor-method tests name them ("eager": on
#: the NumPy backend)
EAGER_JIT = ("eager", "evaluator", "exla")


def on(path, f):
    """``f`` as ``path`` runs it: itself, eagerly, on "numpy" (also spelled "eager", or None
    beside :data:`COMPILERS`), else ``jit(f, compiler=path)`` (EXLA's eager backend:
    :func:`run`)."""
    return f if path in (None, "numpy", "eager") else jit(f, compiler=path)


def run(f, *arrays, paths=PATHS, names=None):
    """``f`` on each path: ``{path: result}``; ``arrays`` (NumPy arrays) become its tensor
    arguments (with ``names``, if given). On EXLA's eager backend every result must stay on
    that backend."""
    def args(backend=None):
        return [nx.tensor(a, names=names, backend=backend) for a in arrays]
    res = {path: on(path, f)(*args()) for path in CHEAP if path in paths}
    if "exla_eager" in paths:
        with default_backend("exla"):
            r = res["exla_eager"] = f(*args("exla"))
        for leaf in (r if isinstance(r, (tuple, list)) else [r]):
            assert leaf.backend.name == "exla", "an eager op on EXLA tensors left the backend"
    return res


def run_path(f, arrays, path):
    """``f`` of ``arrays`` (NumPy arrays, as nxpy tensors) on one ``path`` (of
    :data:`EAGER_JIT` or :data:`CHEAP`), its result as NumPy arrays (in its containers)."""
    out = on(path, f)(*[nx.tensor(a) for a in arrays])
    return jax.tree_util.tree_map(lambda r: r.to_numpy(), out, is_leaf=_is_tensor)


# ----------------------------------------------------------------------------------------
# Covering products: the fast slice and `make exhaustive`
# ----------------------------------------------------------------------------------------
#: ``make exhaustive`` (NXPY_TEST_PRODUCT=full) runs every combination of a covered product
FULL_PRODUCT = os.environ.get("NXPY_TEST_PRODUCT", "") == "full"
#: which slice of the suite this run takes (``make test SLICE=1``: NXPY_TEST_SLICE): 0, the
#: default, every case with the rotations starting at the first choice; CI's newest leg
#: takes slice 1, its oldest slice 3 (the other half), ``make roundtrip`` slice 2: each
#: rotation starts ``SLICE`` choices on, and
#: each parametrized test runs the half of its cases ``in_half`` picks (tests/conftest.py)
TEST_SLICE = int(os.environ.get("NXPY_TEST_SLICE") or 0)


def covering(items, choices, full=None, by=None, offset=None):
    """``(item, choice)`` pairs: every pair under ``make exhaustive``; otherwise each item
    with one choice, rotating through ``choices`` in order, so that every choice is taken
    by about ``len(items) / len(choices)`` items and, where several items exercise the same
    op (its dtypes, its cases), that op meets every choice. A path or a dtype is a
    property of the backend, tested op by op on every path elsewhere; what a cross product
    adds is mostly compile time. ``full=True`` forces the whole product. With ``by`` (an
    item's function or op), the rotation runs within each ``by`` group, so every group
    meets every choice (a group with fewer items than choices takes some items twice).
    The rotation starts ``offset`` choices on (default: the run's ``TEST_SLICE``), so a
    slice of the suite on another leg meets the pairs the default slice leaves out.

    >>> covering(["a", "b", "c", "d"], ("x", "y"), full=False, offset=0)
    [('a', 'x'), ('b', 'y'), ('c', 'x'), ('d', 'y')]
    >>> len(covering(["a", "b"], ("x", "y", "z"), full=True))
    6
    >>> covering(["a1", "a2", "b1"], ("x", "y"), full=False, by=lambda i: i[0], offset=0)
    [('a1', 'x'), ('a2', 'y'), ('b1', 'x'), ('b1', 'y')]
    >>> covering(["a", "b", "c", "d"], ("x", "y"), full=False, offset=1)
    [('a', 'y'), ('b', 'x'), ('c', 'y'), ('d', 'x')]
    """
    items, choices = list(items), list(choices)
    if FULL_PRODUCT if full is None else full:
        return [(i, c) for i in items for c in choices]
    start = TEST_SLICE if offset is None else offset
    if by is None:
        return [(i, choices[(start + k) % len(choices)]) for k, i in enumerate(items)]
    groups: dict = {}
    for i in items:
        groups.setdefault(by(i), []).append(i)
    return [(g[k % len(g)], choices[(start + k) % len(choices)]) for g in groups.values()
            for k in range(max(len(g), len(choices)))]


def in_half(indices, parity=1) -> bool:
    """Whether the case of parameter ``indices`` (its index in each parametrized parameter)
    is in the half of the cases a slice of parity ``parity`` runs: the parity of the number
    of 1 bits of its indices (the Thue-Morse sequence along each parameter). All but one
    parameter fixed, exactly one of each aligned pair ``2k, 2k + 1`` of the other's values
    is in and no three in a row are out, so with two parameters or more every value of
    every parameter is met; and, where taking every other case would meet one choice of
    two, the cases taken of a ``covering`` rotation meet each choice.

    >>> [k for k in range(8) if in_half([k])], [k for k in range(8) if in_half([k], 0)]
    ([1, 2, 4, 7], [0, 3, 5, 6])
    >>> [(i, j) for i in range(3) for j in range(2) if in_half([i, j])]
    [(0, 1), (1, 0), (2, 0)]
    """
    return sum(bin(k).count("1") for k in indices) % 2 == parity


# ----------------------------------------------------------------------------------------
# Comparisons
# ----------------------------------------------------------------------------------------
#: (rtol, atol) of a result of each inexact type against its oracle
TOL = {"f16": (4e-3, 1e-3), "bf16": (2e-2, 1e-2), "f32": (1e-5, 1e-6), "c64": (1e-5, 1e-6),
       "f64": (1e-10, 1e-12), "c128": (1e-10, 1e-12)}


def assert_same(actual: np.ndarray, expected, t, rtol=None, atol=None, what="", tols=TOL,
                scaled=False):
    """``actual`` (of nxpy type ``t``; None: of any type, values only) equals ``expected``:
    exactly for integers and pred, within ``rtol``/``atol`` (default: ``tols[t]``) for
    inexact types, NaN equal to NaN; ``scaled``: ``atol`` is relative to the largest
    finite magnitude of ``expected`` (at least 1), for results that sum many terms."""
    expected = np.asarray(expected)
    if t is None:
        t = tname(actual.dtype)
    else:
        assert actual.dtype == dt(t), f"{what}: dtype {actual.dtype}, expected {dt(t)}"
    assert actual.shape == expected.shape, \
        f"{what}: shape {actual.shape}, expected {expected.shape}"
    if is_inexact(t):
        r, a = tols[t]
        r, a = r if rtol is None else rtol, a if atol is None else atol
        wide = np.complex128 if t in COMPLEX else np.float64
        exp = expected.astype(np.complex128 if expected.dtype.kind == "c" else np.float64)
        if t not in COMPLEX and exp.dtype.kind == "c":
            exp = exp.real
        if scaled:
            finite = np.abs(exp)[np.isfinite(np.abs(exp))]
            a *= max(1.0, float(np.max(finite))) if finite.size else 1.0
        np.testing.assert_allclose(actual.astype(wide), exp, rtol=r, atol=a, equal_nan=True,
                                   err_msg=what)
    else:
        ok = np.array_equal(actual.astype(object), expected.astype(object))
        assert ok, f"{what}:\n got      {actual.tolist()}\n expected {expected.tolist()}"


def check(results, expected, t=None, rtol=None, atol=None, what="", names=None, tols=TOL,
          scaled=False):
    """Every path's result (a tensor, or a tuple or list of them: ``expected`` then has one
    entry per result) has type ``t`` (one for all results, one per result, or None: any),
    ``expected``'s shape, ``names`` if given, and ``expected``'s values (:func:`assert_same`)."""
    for path, r in results.items():
        rs, es = (r, expected) if isinstance(r, (tuple, list)) else ([r], [expected])
        ts = t if isinstance(t, (tuple, list)) else [t] * len(rs)
        assert len(rs) == len(es), f"{path}: {len(rs)} results, expected {len(es)}"
        for i, (x, e, ty) in enumerate(zip(rs, es, ts)):
            w = f"{what} [{path}{'' if len(rs) == 1 else f' result {i}'}]"
            assert ty is None or str(x.type) == ty, f"{w}: type {x.type}, expected {ty}"
            assert x.shape == np.shape(e), f"{w}: shape {x.shape}, expected {np.shape(e)}"
            if names is not None:
                assert x.names == tuple(names), f"{w}: names {x.names}"
            arr = x.to_numpy()
            assert arr.shape == x.shape, f"{w}: to_numpy gave shape {arr.shape}"
            assert_same(arr, e, ty, rtol, atol, w, tols, scaled)


def _is_tensor(x) -> bool:
    return isinstance(x, nx.Tensor)


def _structure(tree):
    """JAX's tree structure of ``tree``, an nxpy tensor a leaf."""
    return jax.tree_util.tree_structure(tree, is_leaf=_is_tensor)


def _leaves(tree) -> list:
    """JAX's leaves of ``tree`` (dict keys sorted; an nxpy tensor is a leaf), but float0
    ones (an integer's tangent), which carry no values."""
    return [x for x in jax.tree_util.tree_leaves(tree, is_leaf=_is_tensor)
            if getattr(x, "dtype", None) != jax.dtypes.float0]


def _array(x) -> np.ndarray:
    return x.to_numpy() if isinstance(x, nx.Tensor) else np.asarray(x)


def close(got, want, rtol=2e-5, atol=2e-5, what="", *, dtypes=False, tree=False,
          scaled=None, normwise=False, of=None):
    """``got`` (nxpy tensors or arrays, in containers) equals ``want``, leaf by leaf in
    JAX's order (dict keys sorted; float0 leaves, which carry no values, left out): as
    many leaves (with ``tree``: the same containers and keys), each of ``want``'s shape
    (with ``dtypes``: and dtype); where ``want`` is integer or pred, exactly; elsewhere
    NaN where it has NaN, its infinities, and the finite values within ``rtol`` times
    ``|want|`` plus ``atol``. A tensor or array ``got`` takes ``want`` whole (a nested
    list: its values). ``rtol`` and ``atol`` may map ``want``'s type name (``"f32"``) to
    a tolerance. What the tolerances are relative to:

    * ``scaled=floor``: ``atol`` is relative to the leaf's largest finite ``|want|`` (at
      least ``floor``), for results that sum many terms;
    * ``normwise``: ``rtol`` is relative to the leaf's largest finite ``|want|``, not to
      each value's own (derivative formulas cancel);
    * ``of=x``: ``rtol`` is relative to the larger of ``|want|`` and ``|x|`` (broadcast to
      each leaf), for a function whose terms are larger than its result.

    >>> close({"a": nx.tensor([1.0, np.nan]), "b": 2}, {"b": 2, "a": np.array([1.00001, np.nan])})
    >>> close(nx.tensor([1.0, 3.0]), [1.0, 3.1], what="x")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    AssertionError: x: 1 of 2 values off, by up to 0.1 (rtol 2e-05, atol 2e-05): got [3.]...
    """
    what = what or "result"
    single = jax.tree_util.treedef_is_leaf(_structure(got))
    g, w = ([got], [want]) if single else (_leaves(got), _leaves(want))
    if tree and not single:
        assert _structure(got) == _structure(want), \
            f"{what}: {_structure(got)}, expected {_structure(want)}"
    assert len(g) == len(w), f"{what}: {len(g)} leaves, expected {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        _close_leaf(_array(a), np.asarray(b), rtol, atol, f"{what} leaf {i}" if len(g) > 1
                    else what, dtypes, scaled, normwise, of)


def _close_leaf(g, w, rtol, atol, what, dtypes, scaled, normwise, of):
    assert g.shape == w.shape, f"{what}: shape {g.shape}, expected {w.shape}"
    assert not dtypes or g.dtype == w.dtype, f"{what}: dtype {g.dtype}, expected {w.dtype}"
    if w.dtype.kind in "biu":
        np.testing.assert_array_equal(g, w, err_msg=what)
        return
    r, a = (tol[tname(w.dtype)] if isinstance(tol, Mapping) else tol for tol in (rtol, atol))
    wide = np.complex128 if "c" in (g.dtype.kind, w.dtype.kind) else np.float64
    g, w = g.astype(wide), w.astype(wide)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(w), err_msg=f"{what}: NaNs")
    inf = np.isinf(w)
    np.testing.assert_array_equal(g[inf], w[inf], err_msg=f"{what}: infinities")
    fin = ~np.isnan(w) & ~inf
    largest = float(np.abs(w[fin]).max()) if fin.any() else 0.0
    size = np.full(w.shape, largest) if normwise else np.abs(w)
    if of is not None:
        size = np.maximum(size, np.abs(np.broadcast_to(np.asarray(of, np.float64), w.shape)))
    bound = r * size + (a if scaled is None else a * max(largest, scaled))
    with np.errstate(invalid="ignore"):   # inf - inf outside fin
        err = np.abs(g - w)
    bad = fin & ~(err <= bound)
    assert not bad.any(), (f"{what}: {bad.sum()} of {w.size} values off, by up to "
                           f"{err[bad].max():.3g} (rtol {r:.3g}, atol {a:.3g}): got "
                           f"{g[bad][:4]}, want {w[bad][:4]}")


def assert_same_tree(got, want, rtol, atol, backend=None, where="result"):
    """``got`` (nxpy tensors) has ``want``'s structure (containers of the same kinds,
    dict keys), shapes and dtypes, and values within ``rtol``/``atol``."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and sorted(got) == sorted(want), (where, got)
        for k in want:
            assert_same_tree(got[k], want[k], rtol, atol, backend, f"{where}[{k!r}]")
        return
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), (where, type(got), got)
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_tree(g, w, rtol, atol, backend, f"{where}[{i}]")
        return
    assert isinstance(got, nx.Tensor), (where, got)
    assert backend is None or got.backend.name == backend, (where, got.backend.name)
    g = got.to_numpy()
    w = np.asarray(want)
    assert g.shape == w.shape, (where, g.shape, w.shape)
    assert g.dtype == w.dtype, (where, g.dtype, w.dtype)
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                               err_msg=where)


def jvp_matches_jax(nf, jf, args, path, rtol, x64=False):
    """``jvp(nf)`` under ``jit`` with ``path``'s compiler equals ``jax.jvp(jf)`` (within
    ``rtol``, relative and absolute) at ``args``, along fixed random tangents."""
    def tangent(a, seed):
        rng = np.random.default_rng(seed)
        t = rng.standard_normal(np.shape(a))
        if np.iscomplexobj(a):
            t = t + 1j * rng.standard_normal(np.shape(a))
        return t.astype(np.asarray(a).dtype)
    tans = tuple(tangent(a, i) for i, a in enumerate(args))
    with jax.enable_x64(x64):  # jitted: eager JAX compiles every op on its own (3-5x slower)
        want = jax.jit(lambda p, t: jax.jvp(jf, p, t))(
            tuple(jnp.asarray(a) for a in args), tuple(jnp.asarray(t) for t in tans))
        want = jax.tree_util.tree_map(np.asarray, want)
    got = jit(lambda p, t: jvp(nf, p, t), compiler=path)(tuple(nx.tensor(a) for a in args),
                                                          tuple(nx.tensor(t) for t in tans))
    close(got, want, rtol, rtol)


# ----------------------------------------------------------------------------------------
# Inputs
# ----------------------------------------------------------------------------------------
def rng_for(*key):
    """A generator seeded by ``key`` (the same values whichever worker draws them)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def gen(t: str, shape, rng, domain="any"):
    """Values of type ``t`` in ``domain`` (a :class:`nxpy.testing.records.Domain`, or the
    name of one of ``records.RANGES``); integers take the integer points inside."""
    lo, hi, either_sign = RANGES[domain] if isinstance(domain, str) else domain
    d = dt(t)
    if t == "pred":
        return np.ones(shape, bool) if either_sign else rng.random(shape) < 0.5
    if t in INTS:
        ilo, ihi = math.ceil(lo), math.floor(hi)
        if t[0] == "u":
            ilo = max(ilo, 0)
        v = rng.integers(ilo, ihi + 1, size=shape)
        if either_sign:
            v = v * np.where(rng.random(shape) < 0.5, -1, 1) if t[0] == "s" else v
        return v.astype(d)
    v = rng.uniform(lo, hi, size=shape)
    if either_sign:
        v = v * np.where(rng.random(shape) < 0.5, -1, 1)
    if t in COMPLEX:
        v = v + 1j * rng.uniform(lo, hi, size=shape)
    return np.asarray(v).astype(d)


_example_loads = itertools.count()


def load_example(name: str):
    """``examples/<name>.py`` as a module (the examples are scripts, not a package),
    registered in ``sys.modules`` as an import registers one, under a name of its own for
    each load (each test module's fixture gets a fresh module): a ``@dataclass`` looks its
    module up there (for string annotations, ``from __future__ import annotations``), as
    do pickle and ``typing.get_type_hints``."""
    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(
        f"nxpy_example_{name}_{next(_example_loads)}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]  # as a failed import
        raise
    return module

