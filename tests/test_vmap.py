"""vmap: automatic batching against two independent oracles.

* Every conformance case (``nxpy.testing.cases``) is an oracle for its op: three
  different examples of its inputs are stacked, ``vmap(case)`` runs on the Evaluator and
  on EXLA, and the result must equal the case run on each example alone, eagerly on the
  NumPy backend, and stacked. Both forms run: every input batched, and only the first
  (the others the same for every example). The cases of one op run as one program per
  compiler (one compile each), which keeps this fast.
* ``jax.vmap`` for the forms of ``in_axes``/``out_axes``, nested vmap and its
  compositions with ``grad`` and ``jit``.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

import nxpy as nx
from helpers import COMPILERS, close, normal
from nxpy import telemetry
from nxpy.defn import batch_paths, custom_grad, grad, jit, vmap
from nxpy.defn.tree import flatten
from nxpy.ops.core import BATCH_RULES
from nxpy.testing import CASES, OP_SET

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp

N = 3  # examples per batch

BY_OP = defaultdict(list)
for _c in CASES:
    BY_OP[_c.op].append(_c)


def _example(a, k):
    """Example ``k`` of input ``a``: floats scaled by ``1 + k/20`` (staying in the case's
    domain and structure: positive definite, symmetric, ...), integers and booleans
    rotated (they stay valid indices), an integer scalar nudged."""
    a = np.asarray(a)
    if a.dtype.kind in "fc" or a.dtype.kind not in "biu":
        return np.asarray(a * (1 + 0.05 * k)).astype(a.dtype)
    if a.ndim and a.size:
        return np.roll(a.reshape(-1), k).reshape(a.shape)
    if a.dtype.kind == "b":
        return np.asarray(a ^ bool(k % 2))
    return np.asarray(a + k).astype(a.dtype)


def _forms(case):
    """(label, in_axes) of the forms the case allows; a case with no inputs is batched
    over a dummy argument it ignores."""
    n = len(case.inputs)
    if n == 0:
        return [("dummy", 0)]
    forms = [("all", 0)]
    if n > 1:
        forms.append(("first", (0,) + (None,) * (n - 1)))
    return forms


def _batched_inputs(case, in_axes):
    if not case.inputs:
        return [np.zeros((N,), np.float32)]
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(case.inputs)
    return [np.stack([_example(a, k) for k in range(N)]) if ax is not None else np.asarray(a)
            for a, ax in zip(case.inputs, axes)]


def _reference(case, inputs, in_axes):
    """The case run on each example eagerly on the NumPy backend, results stacked."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(inputs)
    per = []
    with _default("numpy"):
        for k in range(N):
            ex = [nx.tensor(a[k] if ax is not None else a) for a, ax in zip(inputs, axes)]
            out = case.fn(nx, *ex[:len(case.inputs)]) if case.inputs else case.fn(nx)
            per.append([(t.to_numpy(), str(t.type)) for t in flatten(out)[0]])
    return [(np.stack([p[i][0] for p in per]), per[0][i][1]) for i in range(len(per[0]))]


class _default:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.old = nx.default_backend(self.name)

    def __exit__(self, *exc):
        nx.default_backend(self.old)


def _program(cases):
    """One function running ``vmap`` of every (case, form): its flat inputs, and where
    each (case, form)'s inputs and outputs are."""
    plan, flat = [], []
    for case in cases:
        for label, in_axes in _forms(case):
            inputs = _batched_inputs(case, in_axes)
            plan.append((case, label, in_axes, len(flat), len(inputs)))
            flat.extend(inputs)

    def run(*xs):
        outs = []
        for case, label, in_axes, at, n in plan:
            fn = (lambda *a, _c=case: _c.fn(nx, *a)) if case.inputs else \
                (lambda d, _c=case: _c.fn(nx))
            outs.append(vmap(fn, in_axes=in_axes)(*xs[at:at + n]))
        return tuple(outs)
    return run, plan, flat


def _compare(case, label, got, want):
    leaves = flatten(got)[0]
    assert len(leaves) == len(want), (f"{case.id} ({label}): {len(leaves)} results, "
                                      f"expected {len(want)}")
    for i, (g, (w, wt)) in enumerate(zip(leaves, want)):
        what = f"{case.id} ({label}) result {i}"
        assert (str(g.type), g.shape) == (wt, w.shape), (f"{what}: {g.type}{list(g.shape)}, "
                                                         f"expected {wt}{list(w.shape)}")
        g = g.to_numpy()
        if case.tol:
            kind = np.complex128 if w.dtype.kind == "c" else np.float64
            np.testing.assert_allclose(g.astype(kind), w.astype(kind), rtol=case.tol, atol=case.tol,
                                       equal_nan=True, err_msg=what)
        else:
            np.testing.assert_array_equal(g, w, err_msg=what)


#: ops whose rule hands some forms to the loop (starts or padding values that differ
#: between examples)
DECLINING = {"dynamic_slice", "put_slice", "pad"}
#: ops batched without the loop: those with a rule, and control flow (batched by vmap itself)
RULED = set(BATCH_RULES) | {"cond", "while"}


@pytest.mark.parametrize("op", OP_SET)
def test_every_op_matches_its_examples_run_one_by_one(op):
    cases = BY_OP[op]
    run, plan, flat = _program(cases)
    before = batch_paths().get(op, {"rule": 0, "fallback": 0})
    args = [nx.tensor(a) for a in flat]
    for compiler in COMPILERS:
        outs = jit(run, compiler=compiler)(*args)
        for (case, label, in_axes, at, n), got in zip(plan, outs):
            _compare(case, f"{label}, {compiler}", got,
                     _reference(case, flat[at:at + n], in_axes if case.inputs else 0))
    after = batch_paths().get(op, {"rule": 0, "fallback": 0})
    if op in RULED:  # the rule ran, and (but where it declines) the loop did not
        assert after["rule"] > before["rule"], f"{op}: its batching rule never ran"
        if op not in DECLINING:
            assert after["fallback"] == before["fallback"], f"{op}: batched by the loop"


def test_the_ops_with_rules():
    """The rules cover the ops the brief names; everything else of the op set uses the
    loop (and is checked above like the rest)."""
    must = {"add", "sin", "select", "clip", "as_type", "broadcast", "reshape", "transpose",
            "sum", "product", "reduce_max", "reduce_min", "argmax", "argmin", "all", "any",
            "dot", "slice", "put_slice", "dynamic_slice", "concatenate", "pad", "reverse"}
    assert must <= set(BATCH_RULES)
    assert set(nx.ops.UNARY) | set(nx.ops.BINARY) <= set(BATCH_RULES)


def test_declined_rules_fall_back_to_the_loop():
    before = batch_paths().get("dynamic_slice", {"fallback": 0})["fallback"]
    x = nx.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    got = vmap(lambda r, i: nx.slice(r, [i], [2]))(x, nx.tensor([0, 1, 5]))
    assert got.tolist() == [[0, 1], [5, 6], [10, 11]]
    assert batch_paths()["dynamic_slice"]["fallback"] == before + 1


# ----------------------------------------------------------------------------------------
# Against jax.vmap
# ----------------------------------------------------------------------------------------
_rng = normal
TOL = 1e-5


def _f(x, y):
    return nx.sum(nx.sin(x) * y, axes=[0]) + nx.dot(x, y)


def _jf(x, y):
    return jnp.sum(jnp.sin(x) * y, axis=0) + jnp.dot(x, y)


@pytest.mark.parametrize("in_axes,out_axes,shapes", [
    (0, 0, [(4, 3), (4, 3)]),
    (1, 0, [(3, 4), (3, 4)]),
    (-1, -1, [(3, 4), (3, 4)]),
    ((0, None), 0, [(4, 3), (3,)]),
    ([None, 1], 0, [(3,), (3, 4)]),
    ((1, 0), None, None),
])
def test_in_and_out_axes_as_jax(in_axes, out_axes, shapes):
    if shapes is None:  # out_axes None needs an output that is not batched
        x, y = _rng(3, 4), _rng(4, 3, seed=1)
        f = vmap(lambda a, b: (a * b, nx.sum(nx.iota((2,)))), in_axes=in_axes, out_axes=(0, None))
        jf = jax.vmap(lambda a, b: (a * b, jnp.sum(jnp.arange(2))), in_axes=in_axes,
                      out_axes=(0, None))
        close(f(nx.tensor(x), nx.tensor(y)), jf(x, y), TOL, TOL)
        return
    x, y = _rng(*shapes[0]), _rng(*shapes[1], seed=1)
    close(vmap(_f, in_axes, out_axes)(nx.tensor(x), nx.tensor(y)),
          jax.vmap(_jf, in_axes, out_axes)(x, y), TOL, TOL)


def test_containers_and_prefix_in_axes_as_jax():
    p = {"w": _rng(3, 2), "b": _rng(2, seed=1)}
    xs = _rng(5, 3, seed=2)

    def f(params, x):
        return {"y": nx.dot(x, params["w"]) + params["b"], "n": nx.sum(x)}

    def jf(params, x):
        return {"y": jnp.dot(x, params["w"]) + params["b"], "n": jnp.sum(x)}
    for in_axes in [({"w": None, "b": None}, 0), (None, 0), ({"w": 1, "b": 0}, 0)]:
        pp = p if in_axes[0] is None or in_axes[0]["w"] is None else \
            {"w": np.stack([p["w"]] * 5, 1), "b": np.stack([p["b"]] * 5)}
        got = vmap(f, in_axes=in_axes, out_axes={"y": 1, "n": 0})(
            {k: nx.tensor(v) for k, v in pp.items()}, nx.tensor(xs))
        want = jax.vmap(jf, in_axes=in_axes, out_axes={"y": 1, "n": 0})(pp, xs)
        close(got, want, TOL, TOL)


def test_keyword_arguments_are_batched_along_axis_0_as_jax():
    x, y = _rng(3, 4), _rng(3, 4, seed=1)
    def f(a, b, *, scale):
        return a * scale + b
    got = vmap(f, in_axes=(1, None))(nx.tensor(x.T), nx.tensor(y[0]), scale=nx.tensor(x[:, 0]))
    want = jax.vmap(lambda a, b, *, scale: a * scale + b, in_axes=(1, None))(x.T, y[0],
                                                                             scale=x[:, 0])
    close(got, want, TOL, TOL)
    # inside a jit, and with an int in_axes for the positionals
    got = jit(lambda a, s: vmap(f, in_axes=0)(a, nx.tensor(y), scale=s), compiler="exla")(
        nx.tensor(x), nx.tensor(x[:, 1]))
    close(got, jax.vmap(lambda a, b, *, scale: a * scale + b)(x, y, scale=x[:, 1]), TOL, TOL)


def test_nested_vmap_as_jax():
    x, y = _rng(2, 3, 4), _rng(3, 4, seed=1)
    def inner(a, b):
        return nx.dot(a, b)
    got = vmap(vmap(inner, in_axes=(0, 0)), in_axes=(0, None))(nx.tensor(x), nx.tensor(y))
    want = jax.vmap(jax.vmap(jnp.dot, in_axes=(0, 0)), in_axes=(0, None))(x, y)
    close(got, want, TOL, TOL)
    got = vmap(vmap(_f, in_axes=(1, None)), in_axes=(None, 0))(nx.tensor(x[0].T), nx.tensor(y))
    want = jax.vmap(jax.vmap(_jf, in_axes=(1, None)), in_axes=(None, 0))(x[0].T, y)
    close(got, want, TOL, TOL)


def _jconv(fg=1, bg=1, perms=None):
    dn = ("NCH", "OIH", "NCH") if perms is None else perms[1]
    return lambda x, k: jax.lax.conv_general_dilated(
        x, k, (1,), [(1, 0)], rhs_dilation=(2,), feature_group_count=fg,
        batch_group_count=bg, dimension_numbers=dn)


def _nconv(fg=1, bg=1, perms=None):
    p = {} if perms is None else perms[0]
    return lambda x, k: nx.conv(x, k, padding=[(1, 0)], kernel_dilation=2,
                                feature_group_size=fg, batch_group_size=bg, **p)


@pytest.mark.parametrize("in_axes, fg, bg, rule", [
    ((0, None), 1, 1, True), ((2, None), 2, 1, True),    # examples join the conv's batch
    ((None, 0), 1, 1, True), ((None, 1), 1, 1, True),    # ... its output features
    ((0, 0), 1, 1, True), ((1, 2), 2, 1, True),          # ... its feature groups
    ((None, 0), 2, 1, False), ((0, None), 1, 2, False),  # the loop
])
def test_conv_as_jax(in_axes, fg, bg, rule):
    """conv's rule against jax.vmap of lax.conv_general_dilated, on every place the batch
    can go, with feature groups, and the forms its rule leaves to the loop."""
    x, k = _rng(2, 4, 7), _rng(4 // bg if bg > 1 else 6, 4 // fg, 3, seed=1)
    if bg > 1:
        k = _rng(4, 4, 3, seed=1)
    n = 3
    bx = np.stack([x * (1 + i / 10) for i in range(n)], in_axes[0]) if in_axes[0] is not None else x
    bk = np.stack([k * (1 - i / 10) for i in range(n)], in_axes[1]) if in_axes[1] is not None else k
    before = dict(batch_paths().get("conv", {"rule": 0, "fallback": 0}))
    for compiler in COMPILERS:
        got = jit(vmap(_nconv(fg, bg), in_axes=in_axes), compiler=compiler)(nx.tensor(bx),
                                                                             nx.tensor(bk))
        close(got, jax.vmap(_jconv(fg, bg), in_axes=in_axes)(bx, bk), TOL, TOL)
    after = batch_paths()["conv"]
    assert (after["rule"] > before["rule"],
            after["fallback"] > before["fallback"]) == (rule, not rule)


def test_conv_with_permutations_as_jax():
    """Nx's permutations are JAX's dimension numbers: the batch goes where they say."""
    x, k = _rng(2, 9, 4), _rng(3, 4, 6, seed=1)  # NHC input, HIO kernel, NHC output
    perms = (dict(input_permutation=[0, 2, 1], kernel_permutation=[2, 1, 0],
                  output_permutation=[0, 2, 1]), ("NHC", "HIO", "NHC"))
    bx, bk = np.stack([x, x * 2, -x]), np.stack([k, k / 2, k + 1], 1)
    for in_axes in ((0, None), (None, 1), (0, 1)):
        args = [bx if in_axes[0] is not None else bx[0],
                bk if in_axes[1] is not None else bk[:, 0]]
        got = jit(vmap(_nconv(perms=perms), in_axes=in_axes),
                  compiler="exla")(*map(nx.tensor, args))
        close(got, jax.vmap(_jconv(perms=perms), in_axes=in_axes)(*args), TOL, TOL)


def test_grad_of_vmap_and_vmap_of_grad_as_jax():
    w, xs = _rng(3), _rng(5, 3, seed=1)

    def loss(w, x):
        return nx.sum(nx.tanh(x * w)) ** 2

    def jloss(w, x):
        return jnp.sum(jnp.tanh(x * w)) ** 2
    per_example = vmap(grad(loss), in_axes=(None, 0))(nx.tensor(w), nx.tensor(xs))
    close(per_example, jax.vmap(jax.grad(jloss), in_axes=(None, 0))(w, xs), 1e-4, 1e-4)
    total = grad(lambda w, x: nx.sum(vmap(loss, in_axes=(None, 0))(w, x)))(
        nx.tensor(w), nx.tensor(xs))
    close(total, jax.grad(lambda w, x: jnp.sum(jax.vmap(jloss, in_axes=(None, 0))(w, x)))(w, xs),
          1e-4, 1e-4)
    # through a counting loop (still differentiable once batched)
    def steps(w, x):
        return nx.sum(nx.fori_loop(0, 3, lambda i, s: nx.sin(s * w), x))

    def jsteps(w, x):
        return jnp.sum(jax.lax.fori_loop(0, 3, lambda i, s: jnp.sin(s * w), x))
    got = grad(lambda w, x: nx.sum(vmap(steps, in_axes=(None, 0))(w, x)))(
        nx.tensor(w), nx.tensor(xs))
    close(got, jax.grad(lambda w, x: jnp.sum(jax.vmap(jsteps, in_axes=(None, 0))(w, x)))(w, xs),
          1e-4, 1e-4)
    # through the loop over the examples too (slices whose starts differ between examples)
    starts = np.array([0, 1, 0, 1, 1], np.int32)
    got = grad(lambda x: nx.sum(vmap(lambda r, i: nx.slice(r, [i], [2]))(x, starts) ** 2))(
        nx.tensor(xs))
    want = jax.grad(lambda x: jnp.sum(jax.vmap(lambda r, i: jax.lax.dynamic_slice(r, [i], [2]))(
        x, starts) ** 2))(xs)
    close(got, want, 1e-4, 1e-4)


def test_grad_of_vmap_keeps_custom_gradients():
    def clipped_sqrt(x):  # sqrt, with a gradient that stays finite at 0 (custom_grad's doc)
        y = nx.sqrt(x)
        return custom_grad(y, [x], lambda g: [g * 0.5 / nx.max(y, 0.5)])
    x = np.array([[0.0, 4.0], [1.0, 0.25], [9.0, 0.0]], np.float32)
    got = grad(lambda x: nx.sum(vmap(clipped_sqrt)(x)))(nx.tensor(x))
    np.testing.assert_allclose(got.to_numpy(), 0.5 / np.maximum(np.sqrt(x), 0.5))
    got = grad(lambda x: nx.sum(vmap(clipped_sqrt, in_axes=1, out_axes=1)(x)))(nx.tensor(x))
    np.testing.assert_allclose(got.to_numpy(), 0.5 / np.maximum(np.sqrt(x), 0.5))


def test_an_empty_batch():
    x = np.zeros((0, 3), np.float32)
    starts = np.zeros((0,), np.int32)
    for f, jf in [(lambda a: nx.sum(a) + 1, lambda a: jnp.sum(a) + 1),
                  (lambda a: nx.cumulative_sum(a), jnp.cumsum)]:
        close(vmap(f)(nx.tensor(x)), jax.vmap(jf)(x), TOL, TOL)
    got = vmap(lambda a, i: nx.slice(a, [i], [1]))(nx.tensor(x), nx.tensor(starts))  # the loop
    close(got, jax.vmap(lambda a, i: jax.lax.dynamic_slice(a, [i], [1]))(x, starts), TOL, TOL)


def test_jit_of_vmap_compiles_once():
    f = jit(vmap(lambda x: x * 2 + nx.sum(x)))
    x = nx.tensor(_rng(4, 3))
    f(x)
    before = telemetry.counters()
    for _ in range(3):
        out = f(x)
    now = telemetry.counters()
    assert now.get("trace", 0) == before.get("trace", 0)
    assert now.get("compile", 0) == before.get("compile", 0)
    close(out, jax.vmap(lambda a: a * 2 + jnp.sum(a))(np.asarray(x.to_numpy())), TOL, TOL)
    g = vmap(lambda x: x + 1)  # called eagerly: jits itself, traced once per shape
    g(x)
    before = telemetry.counters()
    g(x)
    assert telemetry.counters().get("trace", 0) == before.get("trace", 0)


def test_while_and_cond_with_batched_predicates():
    """Examples that take different branches, or loop a different number of times."""
    x = nx.tensor([1.0, 5.0, -2.0])

    def f(v):
        n = nx.while_loop(lambda s: s[0] < v, lambda s: (s[0] + 1.0, s[1] * 2.0), (0.0, 1.0))[1]
        return nx.cond(v > 0, lambda: n + v, lambda: n - v)
    close(vmap(f)(x), jax.vmap(lambda v: jnp.where(v > 0, 2.0 ** jnp.maximum(jnp.ceil(v), 0) + v,
                                                    2.0 ** jnp.maximum(jnp.ceil(v), 0) - v))(
        np.asarray(x.to_numpy())), TOL, TOL)


def test_grad_through_a_loop_whose_predicate_differs_between_examples():
    """The batched loop keeps the per-example bound (max_iterations), so grad can reverse
    it; oracle: d/dv v**n = n v**(n-1) with n = min(ceil(v), 6) iterations."""
    def f(v):
        return nx.while_loop(lambda s: s[0] < v, lambda s: (s[0] + 1.0, s[1] * v), (0.0, 1.0),
                             max_iterations=6)[1]
    v = np.array([1.5, 2.5, 3.5, 9.0], np.float32)
    n = np.minimum(np.ceil(v), 6)
    np.testing.assert_allclose(vmap(f)(nx.tensor(v)).to_numpy(), v ** n, rtol=1e-6)
    got = grad(lambda x: nx.sum(vmap(f)(x)))(nx.tensor(v))
    np.testing.assert_allclose(got.to_numpy(), n * v ** (n - 1), rtol=1e-5)


# ----------------------------------------------------------------------------------------
# Errors: raised while tracing, naming the argument, the expected and the given
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,err,match", [
    (lambda: vmap(lambda a, b: a + b)(nx.iota((2, 3)), nx.iota((3, 3))), ValueError,
     r"different batch sizes: args\[0\] has 2 along axis 0 \(shape \(2, 3\)\), args\[1\] has 3"),
    (lambda: vmap(lambda a: a, in_axes=2)(nx.iota((2, 3))), ValueError,
     r"in_axes for args\[0\] is 2, out of range for a value of rank 2 \(shape \(2, 3\)\)"),
    (lambda: vmap(lambda a: a, in_axes=-3)(nx.iota((2, 3))), ValueError,
     r"in_axes for args\[0\] is -3"),
    (lambda: vmap(lambda a, b: a, in_axes=(0,))(nx.iota((2,)), nx.iota((2,))), ValueError,
     r"in_axes has 1 entries, one per positional argument, but the function was called with 2"),
    (lambda: vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": nx.iota((2,))}), ValueError,
     r"in_axes for args\[0\]: expected one spec, or a container of specs with the keys \['a'\]"),
    (lambda: vmap(lambda a: a, in_axes=None)(nx.iota((2,))), ValueError, r"maps no argument"),
    (lambda: vmap(lambda a: a, in_axes="x")(nx.iota((2,))), TypeError, r"expected an int, None"),
    (lambda: vmap(lambda a: a, out_axes=None)(nx.iota((2,))), ValueError,
     r"out_axes for output is None, but that output differs between examples"),
    (lambda: vmap(lambda a: a, out_axes=2)(nx.iota((2, 3))), ValueError,
     r"out_axes for output is 2, out of range for a value of rank 1 \(per-example shape \(3,\)\)"),
    (lambda: vmap(lambda a, b: a)(nx.iota((2,)), b="x"), TypeError,
     r"vmap: keyword argument b must be a tensor, array or number .* got str"),
    (lambda: vmap(lambda a, b: a + b)(nx.iota((2,)), b=nx.iota((3,))), ValueError,
     r"different batch sizes: args\[0\] has 2 .* args\[1\] has 3"),
    (lambda: vmap(3), TypeError, r"expected a function to batch, got int"),
])
def test_errors(call, err, match):
    before = telemetry.counters().get("compile", 0)
    with pytest.raises(err, match=match):
        call()
    assert telemetry.counters().get("compile", 0) == before  # nothing reached XLA


def test_a_plugin_rule_is_used_and_checked():
    from nxpy.extend import register_batch_rule, register_op
    double = register_op("vmap_doc_double", lambda x: (x.shape, x.type),
                         evaluate=lambda out, x: x.to_numpy() * 2)
    x = nx.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert vmap(double)(x).tolist() == [[2.0, 4.0], [6.0, 8.0]]  # the loop
    assert batch_paths()["vmap_doc_double"] == {"rule": 0, "fallback": 1}
    register_batch_rule("vmap_doc_double")(lambda ctx, e, xs, dims: (double(xs[0]), dims[0]))
    assert vmap(double, in_axes=1)(x).tolist() == [[2.0, 6.0], [4.0, 8.0]]
    assert batch_paths()["vmap_doc_double"] == {"rule": 1, "fallback": 1}
    register_batch_rule("vmap_doc_double")(lambda ctx, e, xs, dims: (xs[0], None))
    with pytest.raises(ValueError,
                       match=r"batching rule of 'vmap_doc_double' returned f32\[2\]\[2\] "
                             r"batched along None, expected f32\[2\] with a batch of 2 along one "
                             r"axis \(or, with None, unbatched\)"):
        vmap(double)(nx.tensor([[1.0, 2.0], [3.0, 5.0]]))


# ----------------------------------------------------------------------------------------
# Regressions: what the differential fuzzer's vmap check found (nxpy.testing.fuzz)
# ----------------------------------------------------------------------------------------
def _names_alone(f, *args):
    """The names of ``f``'s results run on one example (eagerly), the oracle for the
    names of its batch."""
    return [t.names for t in flatten(f(*args))[0]]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_regression_the_results_keep_their_names(compiler):
    # fuzz seed 0 #2: vmap(grad) w.r.t. a shared named input: the result does not depend
    # on the batch, vmap broadcast it along the batch axis and dropped its names
    x = nx.tensor([1.0, 2.0], names=["w"])
    f = grad(lambda x, y: nx.sum(nx.sin(x) + y), argnums=(0, 1))
    assert _names_alone(f, x, x) == [("w",), ("w",)]
    got = jit(vmap(f, in_axes=(None, 0), out_axes=(1, 0)), compiler=compiler)(
        x, nx.tensor([[1.0, 2.0]] * 3, names=[None, "w"]))
    assert [t.names for t in got] == [("w", None), (None, "w")]
    # fuzz seed 3 #154: broadcast to a tensor's own shape drops its names (as Nx), without
    # a node: vmap returned the input's names
    def b(x):
        return nx.broadcast(x, (2,))
    assert _names_alone(b, x) == [(None,)]
    assert jit(vmap(b, out_axes=-1), compiler=compiler)(
        nx.tensor([[1.0, 2.0]] * 3, names=[None, "w"])).names == (None, None)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_regression_the_loop_keeps_the_names_of_the_example(compiler):
    # fuzz seed 0 #132: dynamic_slice with starts that differ between examples goes to
    # the loop, whose buffers were unnamed
    x = nx.tensor([1.0, 2.0, 3.0], names=["w"])
    def f(x, i):
        return nx.slice(nx.erf(x), [i], [2])
    assert _names_alone(f, x, nx.tensor(1)) == [("w",)]
    before = batch_paths().get("dynamic_slice", {}).get("fallback", 0)
    got = jit(vmap(f, in_axes=(None, 0), out_axes=1), compiler=compiler)(x, nx.tensor([0, 1, 5]))
    assert batch_paths()["dynamic_slice"]["fallback"] == before + 1
    assert got.names == ("w", None)
    want = np.stack([f(x, nx.tensor(i)).to_numpy() for i in (0, 1, 5)], axis=1)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-6)
