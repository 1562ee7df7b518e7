"""Automatic differentiation (single device): nxpy's ``grad`` against ``jax.grad``.

Each entry of ``CASES`` (``tests/grad_cases.py``) is one function written twice, side by
side: with nxpy and with ``jax.numpy`` / ``jax.lax``. Every case runs on three paths, each
its own test id:

* ``eager``: ``grad(f)(x)`` called outside any defn (it jits itself with the Evaluator
  on the NumPy backend);
* ``evaluator_exla``: ``jit(grad(f), compiler="evaluator", backend="exla")``, the
  Evaluator calling EXLA's eager backend (one-op XLA programs);
* ``exla``: ``jit(grad(f), compiler="exla")``, one XLA program.

The JAX reference is computed once per case (``jax.jit(jax.grad(...))``, with x64
enabled for the f64 cases). A central finite-difference check in f64, with nxpy alone,
covers the smooth cases; the rest of the file checks that every op has a gradient rule
(or is declared non-differentiable), the errors, integer inputs, and that a gradient is
an ordinary graph (printed by ``debug_expr``, cached by ``jit``).
"""
from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import (custom_grad, debug_expr, grad, jit, stop_grad, value_and_grad,
                       while_loop)
from nxpy import pjrt
from nxpy.defn.transforms.grad_rules import GRAD_RULES, NON_DIFFERENTIABLE
from nxpy.ops import BINARY, PRIMITIVES, UNARY
from nxpy.testing.records import ANY, BINARY_RECORDS, UNARY_RECORDS, Domain, Jax

from grad_cases import (BF16, CASES, F64, Case, arr, needs_x64, nx_args, tleaves, tmap,
                        treplace, u)
from helpers import COMPILERS, FULL_PRODUCT, assert_same_tree, covering

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax import lax

# ----------------------------------------------------------------------------------------
# Running a case
# ----------------------------------------------------------------------------------------
def transform(c: Case):
    """``grad(c.nx)`` (or ``value_and_grad``) with the case's options."""
    t = value_and_grad if c.vag else grad
    return t(c.nx, argnums=c.argnums, has_aux=c.has_aux)


_JAX_RESULTS: dict = {}
_JAX_CHUNK = 12   # cases per jax.jit program: one compile for several cases is much faster


def _jax_chunk(c: Case) -> list:
    """The cases whose JAX references are computed with ``c``'s, in one jitted program:
    neighbours in the table with the same x64 mode."""
    same = [d for d in CASES if needs_x64(d) == needs_x64(c)]
    i = same.index(c) // _JAX_CHUNK * _JAX_CHUNK
    return same[i:i + _JAX_CHUNK]


def _jax_grads(cases):
    def run(*args):
        out = []
        for d, a in zip(cases, args):
            t = jax.value_and_grad if d.vag else jax.grad
            out.append(t(d.jax, argnums=d.argnums, has_aux=d.has_aux)(*a))
        return out
    args = [tmap(jnp.asarray, d.args) for d in cases]
    return [tmap(np.asarray, r) for r in jax.jit(run)(*args)]


def jax_result(c: Case):
    """JAX's gradient of ``c`` (computed once, with its chunk of cases)."""
    if c.name not in _JAX_RESULTS:
        chunk = [d for d in _jax_chunk(c) if d.name not in _JAX_RESULTS]
        with jax.enable_x64(needs_x64(c)):
            try:
                results = _jax_grads(chunk)
            except Exception:  # one case's failure must not hide the others'
                chunk, results = [c], _jax_grads([c])
        _JAX_RESULTS.update((d.name, r) for d, r in zip(chunk, results))
    return _JAX_RESULTS[c.name]


PATHS = {
    "eager": lambda c, args: transform(c)(*args),
    "evaluator_exla": lambda c, args: jit(transform(c), compiler="evaluator",
                                          backend="exla")(*args),
    "exla": lambda c, args: jit(transform(c), compiler="exla")(*args),
}


#: the backend each path's results live on
RESULT_BACKEND = {"eager": "numpy", "evaluator_exla": "exla", "exla": "exla"}


#: the paths besides ``eager`` (which compiles nothing: it runs on NumPy), taken in
#: rotation by the fast slice
ROTATING = ("evaluator_exla", "exla")
#: the fast slice's ``exla`` cases (xfail ones run alone, as they fail)
_EXLA_CASES = [c for c, p in covering(CASES, ROTATING, full=False) if p == "exla" and not c.xfail]
#: ... compiled this many to a program (each case's own ``grad`` graph, side by side: one
#: XLA compile for the chunk costs about 3/4 of the cases' own)
_NX_CHUNK = 12
_NX_EXLA: dict = {}
#: the chunks whose batched program failed: their cases run one by one (their own error)
_NX_FAILED: set = set()


def _nx_chunk(c: Case) -> int:
    return _EXLA_CASES.index(c) // _NX_CHUNK


def exla_batched(c: Case, args):
    """``PATHS["exla"]``'s result, compiled with ``c``'s chunk of cases in one program."""
    if c not in _EXLA_CASES or _nx_chunk(c) in _NX_FAILED:
        return PATHS["exla"](c, args)
    if c.name not in _NX_EXLA:
        k = _nx_chunk(c)
        chunk = _EXLA_CASES[k * _NX_CHUNK:(k + 1) * _NX_CHUNK]

        def run(*argss):
            return [transform(d)(*a) for d, a in zip(chunk, argss)]
        try:
            results = jit(run, compiler="exla")(*[nx_args(d.args) for d in chunk])
        except Exception:  # one case's failure must not hide the others'
            _NX_FAILED.add(k)
            return PATHS["exla"](c, args)
        _NX_EXLA.update((d.name, r) for d, r in zip(chunk, results))
    return _NX_EXLA.pop(c.name)


def _params():
    """``make exhaustive``: every case on every path, each in its own program. The fast
    slice: every case on ``eager`` and on one of ``ROTATING`` in turn (``exla`` batched,
    :func:`exla_batched`, a chunk's tests on one xdist worker), so that every case meets
    two paths and every op with several cases all three (checked below)."""
    pairs = [(c, p) for c in CASES for p in PATHS] if FULL_PRODUCT else \
        [(c, "eager") for c in CASES] + covering(CASES, ROTATING)
    for c, p in pairs:
        marks = c.marks()
        if p == "exla" and c in _EXLA_CASES and not FULL_PRODUCT:
            marks = marks + [pytest.mark.xdist_group(f"grad_exla_{_nx_chunk(c)}")]
        yield pytest.param(c, p, id=f"{c.name}-{p}", marks=marks)


def test_case_names_are_distinct():
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 80


@pytest.mark.parametrize("c,path", list(_params()))
def test_grad_matches_jax(c, path):
    want = jax_result(c)
    run = exla_batched if path == "exla" and not FULL_PRODUCT else PATHS[path]
    got = run(c, nx_args(c.args))
    assert_same_tree(got, want, c.rtol, c.atol, RESULT_BACKEND[path])


def test_every_op_meets_every_path_in_the_fast_slice():
    """What the rotation keeps: every case on two paths, and every elementwise op covered
    by several cases on all three."""
    met: dict = {}
    for p in _params():
        c, path = p.values
        for op in c.ops or (c.name,):
            met.setdefault(op, set()).add(path)
    assert all(len(paths) >= 2 for paths in met.values())
    several = {op for op in met if sum(op in c.ops for c in CASES) >= 3}
    assert several and all(met[op] == set(PATHS) for op in several), \
        {op: met[op] for op in several if met[op] != set(PATHS)}


def test_every_differentiable_elementwise_op_is_covered():
    covered = {op for c in CASES for op in c.ops}
    wanted = {op for op in list(UNARY) + list(BINARY) if op in GRAD_RULES}
    assert not wanted - covered, f"elementwise ops without a case: {sorted(wanted - covered)}"


# ----------------------------------------------------------------------------------------
# Finite differences, in f64, with nxpy alone (the Evaluator on NumPy)
# ----------------------------------------------------------------------------------------
FD_CASES = [c for c in CASES if c.fd and not c.vag and not c.has_aux]


def _to_f64(a):
    a = np.asarray(a)
    return a.astype(F64) if a.dtype.kind == "f" or a.dtype == BF16 else a


def test_enough_finite_difference_cases():
    assert len(FD_CASES) >= 30


def _with_leaf(args, n, k, value):
    """``args`` with leaf ``k`` of argument ``n`` replaced by ``value``."""
    leaves = tleaves(args[n])
    leaves[k] = value
    return args[:n] + (treplace(args[n], leaves),) + args[n + 1:]


@pytest.mark.parametrize("c", [pytest.param(c, id=c.name, marks=c.marks()) for c in FD_CASES])
def test_grad_matches_finite_differences(c):
    """nxpy's f64 gradient against (f(x + h) - f(x - h)) / 2h, both on the Evaluator."""
    h = 1e-6
    args = tmap(_to_f64, c.args)
    nums = (c.argnums,) if isinstance(c.argnums, int) else tuple(c.argnums)
    f = jit(c.nx, compiler="evaluator")
    g = transform(c)(*nx_args(args))
    for n, gn in zip(nums, (g,) if isinstance(c.argnums, int) else g):
        for k, (leaf, got) in enumerate(zip(tleaves(args[n]), tleaves(gn))):
            if leaf.dtype != F64:   # integer leaves: f32 zeros, checked elsewhere
                continue
            assert str(got.type) == "f64"
            want = np.zeros(leaf.shape)
            for idx in np.ndindex(leaf.shape):
                vals = []
                for step in (h, -h):
                    moved = leaf.copy()
                    moved[idx] += step
                    vals.append(float(f(*nx_args(_with_leaf(args, n, k, moved))).to_numpy()))
                want[idx] = (vals[0] - vals[1]) / (2 * h)
            np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"argument {n}, leaf {k}")


# ----------------------------------------------------------------------------------------
# Every op has a rule, or is declared non-differentiable, or is the engine's own
# ----------------------------------------------------------------------------------------
#: ops the engine (nxpy/defn/transforms/grad.py) differentiates itself: control flow, the
#: leaves of multi-result ops, parameters, the custom_grad marker, checkpoint
#: (nxpy/defn/transforms/checkpoint.py) and call (nxpy/defn/transforms/call.py)
ENGINE_OPS = {"cond", "while", "shard_map", "elem", "parameter", "custom_grad", "checkpoint",
              "call"}


def test_every_primitive_has_a_gradient_rule():
    missing = sorted(op for op in PRIMITIVES
                     if op not in GRAD_RULES and op not in NON_DIFFERENTIABLE
                     and op not in ENGINE_OPS)
    assert not missing, (f"ops with neither a gradient rule in GRAD_RULES nor a "
                         f"non_differentiable declaration: {', '.join(missing)}")


def test_no_op_is_both_differentiable_and_not():
    both = sorted(set(GRAD_RULES) & NON_DIFFERENTIABLE)
    assert not both, f"ops with a gradient rule that are also non-differentiable: {both}"


def test_float_ops_without_a_gradient_have_a_zero_one_in_jax_too():
    """An elementwise op declared non-differentiable that takes and returns floats must
    have a zero gradient in JAX too: a float op whose rule is missing gives a silently
    wrong zero (``zeta`` and ``next_after`` did, against ``jax.scipy.special.zeta``'s and
    ``lax.nextafter``'s derivatives)."""
    j, checked = Jax(jax), []
    for op in sorted(NON_DIFFERENTIABLE & (set(UNARY) | set(BINARY))):
        record = UNARY_RECORDS.get(op) or BINARY_RECORDS[op]
        doms = record.domain or ANY
        doms = [doms] * (op in BINARY and 2 or 1) if isinstance(doms, Domain) else list(doms)
        xs = [np.linspace(d.lo, d.hi, 5, dtype=np.float32) for d in doms]
        try:
            y = getattr(nx, op)(*map(nx.tensor, xs))
        except TypeError:  # an integer op
            continue
        if not y.type.is_inexact:  # a comparison, a predicate: no float cotangent
            continue
        twin = record.grad_jax or record.jax
        g = jax.grad(lambda *a: jnp.sum(twin(j, *a)), argnums=tuple(range(len(xs))))(
            *map(jnp.asarray, xs))
        assert all(not np.any(np.asarray(v)) for v in g), (op, g)
        checked.append(op)
    assert {"floor", "ceil", "round", "sign"} <= set(checked), checked


# ----------------------------------------------------------------------------------------
# Integer inputs: f32 zeros (JAX would raise)
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", PATHS)
def test_integer_input_gets_f32_zeros(path):
    c = Case("int", lambda x: nx.sum(x * 2.5), None, ())
    g = PATHS[path](c, (nx.tensor([[1, 2, 3], [4, 5, 6]]),))
    assert g.type == nx.types.parse("f32") and g.shape == (2, 3)
    assert g.to_numpy().tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("path", PATHS)
def test_mixed_integer_and_float_inputs(path):
    c = Case("mixed", lambda x, n, y: nx.sum(x * n + nx.as_type(n, "f32") * y), None, (),
             argnums=(0, 1, 2))
    gx, gn, gy = PATHS[path](c, (nx.tensor([1.0, 2.0]), nx.tensor([3, 4], type="s8"),
                                 nx.tensor([0.5, 0.25])))
    assert gx.to_numpy().tolist() == [3.0, 4.0]
    assert gn.type == nx.types.parse("f32") and gn.to_numpy().tolist() == [0.0, 0.0]
    assert gy.to_numpy().tolist() == [3.0, 4.0]


@pytest.mark.parametrize("path", PATHS)
def test_pow_constant_zero_exponent_at_zero_base(path):
    """The one departure of pow's gradient from JAX (docs/guarantees.md): a constant
    exponent follows JAX's integer rule, as x ** 0 does in JAX, because a Python number
    takes the tensor's type (x ** 0 and x ** 0.0 are one graph); JAX's x ** 0.0 is NaN
    there. A traced float exponent 0 gives JAX's NaN."""
    x = nx.tensor([0.0, 2.0])
    for f, jf in [(lambda x: nx.sum(x ** 0), lambda x: jnp.sum(x ** 0)),
                  (lambda x: nx.sum(x ** 0.0), None)]:
        c = Case("pow0", f, None, ())
        assert PATHS[path](c, (x,)).to_numpy().tolist() == [0.0, 0.0]
        if jf is not None:
            assert np.asarray(jax.grad(jf)(jnp.array([0.0, 2.0]))).tolist() == [0.0, 0.0]
    want = np.asarray(jax.grad(lambda x: jnp.sum(x ** 0.0))(jnp.array([0.0, 2.0])))
    assert np.isnan(want[0]) and want[1] == 0.0  # JAX's float rule: 0 * 0 ** -1
    c = Case("pow0_traced", lambda x, y: nx.sum(nx.pow(x, y)), None, ())
    got = PATHS[path](c, (x, nx.tensor(0.0))).to_numpy()
    np.testing.assert_array_equal(got, want)
    c = Case("pow0_int", lambda x, n: nx.sum(nx.pow(x, n)), None, ())
    assert PATHS[path](c, (x, nx.tensor(0))).to_numpy().tolist() == [0.0, 0.0]
    assert np.asarray(jax.grad(lambda x: jnp.sum(lax.pow(x, jnp.int32(0))))(
        jnp.array([0.0, 2.0]))).tolist() == [0.0, 0.0]


def test_integer_leaf_in_container():
    g = grad(lambda p: nx.sum(p["w"] * p["n"]))({"w": nx.tensor([1.0, 2.0]),
                                                  "n": nx.tensor([3, 4])})
    assert g["w"].to_numpy().tolist() == [3.0, 4.0]
    assert g["n"].type == nx.types.parse("f32") and g["n"].to_numpy().tolist() == [0.0, 0.0]


def test_negative_argnums():
    gy = grad(lambda x, y: nx.sum(x * y * y), argnums=-1)(nx.tensor([1.0, 2.0]),
                                                          nx.tensor([3.0, 4.0]))
    assert gy.to_numpy().tolist() == [6.0, 16.0]


def test_python_number_argument():
    assert grad(lambda x: x * x + 1.0)(3.0).tolist() == 6.0
    assert grad(lambda x, y: x * y, argnums=1)(2.0, 5.0).tolist() == 2.0


def test_keyword_arguments_are_passed_through():
    f = grad(lambda x, scale=1.0: nx.sum(x * x * scale))
    assert f(nx.tensor([1.0, 2.0]), scale=3.0).tolist() == [6.0, 12.0]
    assert jit(f, compiler="exla")(nx.tensor([1.0, 2.0]), scale=3.0).tolist() == [6.0, 12.0]


def test_names_are_kept():
    x = nx.tensor([[1.0, 2.0, 3.0]], names=["batch", "features"])
    g = grad(lambda x: nx.sum(x * nx.tensor([1.0, 2.0, 3.0])))(x)
    assert g.names == ("batch", "features") and g.tolist() == [[1.0, 2.0, 3.0]]


def test_eager_grad_on_the_exla_default_backend():
    nx.default_backend("exla")   # the conftest fixture restores NumPy
    g = grad(lambda x: nx.sum(nx.sin(x) * x))(nx.tensor([0.5, -1.0]))
    assert g.backend.name == "exla"
    want = jax.grad(lambda x: jnp.sum(jnp.sin(x) * x))(arr([0.5, -1.0]))
    np.testing.assert_allclose(g.to_numpy(), np.asarray(want), rtol=1e-6)


def test_nx_form_inside_defn():
    f = jit(lambda x: grad(x, lambda y: nx.sum(nx.sin(y) * y)))
    x = u(-1, 1)
    want = jax.grad(lambda y: jnp.sum(jnp.sin(y) * y))(x)
    np.testing.assert_allclose(f(nx.tensor(x)).to_numpy(), np.asarray(want), rtol=1e-6)
    vg = jit(lambda x: value_and_grad(x, lambda y: nx.sum(y * y)))
    v, g = vg(nx.tensor([1.0, 2.0]))
    assert v.tolist() == 5.0 and g.tolist() == [2.0, 4.0]


# ----------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------
def test_error_non_scalar_output():
    with pytest.raises(ValueError, match=re.escape("got f32[2][3]")):
        grad(lambda x: nx.sin(x))(nx.tensor(u(-1, 1)))


def test_error_integer_output():
    with pytest.raises(TypeError, match="floating-point scalar.*s32"):
        grad(lambda x: nx.sum(nx.as_type(x, "s32")))(nx.tensor([1.0, 2.0]))


def test_error_non_tensor_output():
    with pytest.raises(TypeError, match="must return a scalar tensor"):
        grad(lambda x: (nx.sum(x), nx.sum(x)))(nx.tensor([1.0, 2.0]))


@pytest.mark.parametrize("argnums, exc", [(1, ValueError), (-2, ValueError), ((0, 1), ValueError),
                                          ((0, 0), ValueError), (True, TypeError),
                                          (0.0, TypeError), ((0.0,), TypeError)])
def test_error_bad_argnums(argnums, exc):
    # out of range or repeated: ValueError; not integers (a bool is not one): TypeError
    with pytest.raises(exc, match="argnums"):
        grad(lambda x: nx.sum(x), argnums=argnums)(nx.tensor([1.0, 2.0]))


@pytest.mark.parametrize("out", ["scalar", "triple", "list"])
def test_error_has_aux_not_a_pair(out):
    def f(x):
        s = nx.sum(x)
        return {"scalar": s, "triple": (s, s, s), "list": [s, s]}[out]
    with pytest.raises(TypeError, match="pair"):
        grad(f, has_aux=True)(nx.tensor([1.0, 2.0]))


def test_error_while_loop_without_trip_count():
    def halve_until_small(v):
        return v * 0.5

    def f(x):
        return nx.sum(while_loop(lambda v: nx.sum(v) > 1.0, halve_until_small, x))

    with pytest.raises(ValueError) as info:
        grad(f)(nx.tensor([4.0, 8.0]))
    msg = str(info.value)
    assert "while_loop" in msg and "halve_until_small" in msg and "test_grad.py" in msg
    assert "fori_loop" in msg and "max_iterations" in msg


def test_while_loop_without_trip_count_is_fine_if_not_differentiated():
    # the loop's result does not depend on x: no bound is needed
    def f(x):
        n = while_loop(lambda v: v > 1.0, lambda v: v * 0.5, nx.tensor(100.0))
        return nx.sum(x) * n
    g = grad(f)(nx.tensor([1.0, 2.0]))
    np.testing.assert_allclose(g.to_numpy(), [0.78125, 0.78125])


def test_error_grad_without_positional_argument():
    with pytest.raises(TypeError, match="at least one positional argument"):
        grad(lambda: nx.tensor(1.0))()
    with pytest.raises(TypeError, match="at least one positional argument"):
        jit(lambda x: grad(lambda **kw: nx.sum(kw["y"]))(y=x))(nx.tensor([1.0]))


def test_error_nx_form_without_a_function():
    with pytest.raises(TypeError, match="grad\\(x, fun\\)"):
        jit(lambda x: grad(x, 3))(nx.tensor([1.0]))
    with pytest.raises(TypeError, match="grad\\(fun, argnums=0\\)"):
        grad(3)


def test_error_custom_grad_wrong_cotangents():
    def f(x):
        return nx.sum(custom_grad(x * 2.0, [x], lambda g: [g, g]))
    with pytest.raises(ValueError, match="1 cotangent"):
        grad(f)(nx.tensor([1.0, 2.0]))


# ----------------------------------------------------------------------------------------
# A gradient is an ordinary graph
# ----------------------------------------------------------------------------------------
def test_debug_expr_of_a_gradient():
    def f(x):
        y = custom_grad(nx.exp(x), [x], lambda g: [g * 2.0])
        return nx.sum(nx.sin(x) * stop_grad(x) + y)
    text = str(debug_expr(grad(f))(nx.tensor([1.0, 2.0])))
    assert text.startswith("#Nx.Tensor<\n  f32[2]") and "Nx.Defn.Expr" in text
    assert "parameter a:0" in text and "cos a" in text
    # the markers exist only while differentiating: the graph holds ordinary ops
    assert "stop_grad" not in text and "custom_grad" not in text


def test_debug_expr_of_a_loop_gradient():
    text = str(debug_expr(grad(lambda x: nx.sum(nx.fori_loop(0, 3, lambda i, v: v * x, x))))(
        nx.tensor([1.0, 2.0])))
    assert text.count("while") == 2   # the forward loop, keeping its carries, and the backward


def test_jitted_grad_compiles_once_per_shape(compiles):
    f = jit(grad(lambda x: nx.sum(nx.tanh(x) * x)), compiler="exla")
    x = nx.tensor(u(-1, 1))
    a = f(x).to_numpy()
    b = f(nx.tensor(x.to_numpy() * 1.0)).to_numpy()
    assert len(compiles) == 1
    np.testing.assert_array_equal(a, b)
    f(nx.tensor(u(-1, 1, (3,))))
    assert len(compiles) == 2
    f(nx.tensor(u(-1, 1, (3,))))
    assert len(compiles) == 2


def test_eager_grad_traces_once_per_shape():
    calls = []

    def f(x):
        calls.append(x.shape)
        return nx.sum(x * x)
    g = grad(f)
    g(nx.tensor([1.0, 2.0]))
    g(nx.tensor([3.0, 4.0]))
    assert len(calls) == 1
    g(nx.tensor([1.0]))
    assert len(calls) == 2


# ----------------------------------------------------------------------------------------
# while_loop's residuals: a loop bounded by max_iterations keeps checkpoints in a fixed
# buffer (thinned as it runs), not max_iterations carries
# ----------------------------------------------------------------------------------------
G = importlib.import_module("nxpy.defn.transforms.grad_bodies")  # the while rule's budget
WHILE_CASES = [c for c in CASES if "while_loop" in c.name]


@pytest.mark.parametrize("budget", [0, 40])  # 2 checkpoints; a few
@pytest.mark.parametrize("c,path", [pytest.param(c, p, id=f"{c.name}-{p}", marks=c.marks())
                                    for c in WHILE_CASES for p in ("eager", "exla")])
def test_while_loop_cases_with_a_small_residual_budget_match_jax(c, path, budget, monkeypatch):
    monkeypatch.setattr(G, "RESIDUAL_BYTES", budget)
    assert_same_tree(PATHS[path](c, nx_args(c.args)), jax_result(c), c.rtol, c.atol,
                     RESULT_BACKEND[path])


def _newton_like(x):
    """A loop that exits after 23 of its 1000 allowed iterations."""
    return nx.sum(while_loop(lambda s: s[0] < 23.0,
                             lambda s: (s[0] + 1.0, nx.sin(s[1]) * x + 0.5), (0.0, x),
                             max_iterations=1000)[1] ** 2)


def _jnewton_like(x):
    return jnp.sum(lax.fori_loop(0, 23, lambda i, v: jnp.sin(v) * x + 0.5, x) ** 2)


@pytest.mark.parametrize("budget", [0, 3 * 4 * 4, 1 << 20])  # cap 2, cap 2 (odd), keep all
@pytest.mark.parametrize("compiler", COMPILERS)
def test_while_loop_early_exit_gradient_and_second_derivative(compiler, budget, monkeypatch):
    monkeypatch.setattr(G, "RESIDUAL_BYTES", budget)
    x = u(-1, 1, (4,))
    g = jit(grad(_newton_like), compiler=compiler)(nx.tensor(x)).to_numpy()
    np.testing.assert_allclose(g, jax.grad(_jnewton_like)(x), rtol=1e-4, atol=1e-5)
    hvp = jit(grad(lambda v: nx.sum(grad(_newton_like)(v))), compiler=compiler)
    want = jax.grad(lambda v: jnp.sum(jax.grad(_jnewton_like)(v)))(x)
    np.testing.assert_allclose(hvp(nx.tensor(x)).to_numpy(), want, rtol=1e-3, atol=1e-4)


def test_while_loop_gradient_memory_follows_the_budget_not_max_iterations():
    """10 iterations of a 1M-element state, max_iterations 10,000: the program reserves a
    few states (RESIDUAL_BYTES: 16 checkpoints of 4 MB), not 10,000 (40 GB)."""
    n = 1 << 20
    state = 4 * n

    def f(x):
        return nx.sum(while_loop(lambda s: s[0] < 10, lambda s: (s[0] + 1, nx.sin(s[1])),
                                 (nx.tensor(0.0), x), max_iterations=10_000)[1])
    prog = nx.defn.compile(grad(f), nx.template((n,), "f32"), compiler="exla")
    temp = pjrt.memory_stats(prog._run.executable)["temp"]
    assert temp < 32 * state, f"{temp / state:.1f} states"
    x = np.linspace(-1, 1, n, dtype=np.float32)
    got = prog(nx.tensor(x)).to_numpy()
    want = jax.grad(lambda v: jnp.sum(lax.fori_loop(0, 10, lambda i, w: jnp.sin(w), v)))(x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
