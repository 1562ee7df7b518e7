"""Forward mode: nxpy's ``jvp``, ``linearize``, ``jacfwd``, ``hessian`` and ``custom_jvp``
against JAX's.

The per-primitive check reuses the gradient test's table (``tests/grad_cases.py``'s
``CASES``, one function per op written with nxpy and with ``jax.numpy``/``jax.lax``): each
case's differentiated arguments get fixed random tangents and ``jvp`` is compared with
``jax.jvp`` on two paths: ``eager`` (``jvp`` called outside a defn: the Evaluator on the
NumPy backend) and ``exla`` (``jit(..., compiler="exla")``). Then control flow, shard_map
collectives on a 2x2 mesh, ``jacfwd``/``hessian`` and ``custom_jvp``, and that every
primitive has a JVP rule or is declared to have a zero tangent. The op families' own
gradient tables are checked under ``jvp`` in their modules (``tests/test_ops_*.py``,
``test_jvp_*``, with ``helpers.jvp_matches_jax``).
"""
from __future__ import annotations

import functools
import zlib

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import (checkpoint, custom_jvp, custom_vjp, fori_loop, grad, hessian, jacfwd,
                       jacobian, jit, jvp, linearize, runtime_call, scan, shard_jit, stop_grad,
                       vmap, while_loop)
from nxpy.defn.transforms.jvp_rules import ENGINE, JVP_RULES, ZERO_TANGENT
from nxpy.ops import PRIMITIVES

from grad_cases import CASES, clipped_sqrt, needs_x64, nx_args, tleaves, tmap
from helpers import COMPILERS, FULL_PRODUCT, assert_same_tree, close, covering

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax import lax

# ----------------------------------------------------------------------------------------
# Every primitive: the gradient test's cases under jvp
# ----------------------------------------------------------------------------------------
def _argnums(c):
    return (c.argnums,) if isinstance(c.argnums, int) else tuple(c.argnums)


def _tangent_of(rng, a):
    a = np.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        return None
    return rng.standard_normal(a.shape).astype(a.dtype)


_TANGENTS: dict = {}


def tangents(c):
    """The case's fixed tangents: seeded by its name, so a case gets the same tangents
    whichever worker runs it and in whatever order."""
    if c.name not in _TANGENTS:
        rng = np.random.default_rng(zlib.crc32(c.name.encode()))
        _TANGENTS[c.name] = [tmap(functools.partial(_tangent_of, rng), c.args[n])
                             for n in _argnums(c)]
    return _TANGENTS[c.name]


def _restricted(f, c, full):
    """``f`` as a function of the case's differentiated arguments only."""
    nums = _argnums(c)

    def g(*selected):
        args = list(full)
        for n, v in zip(nums, selected):
            args[n] = v
        return f(*args)
    return g


def _jax_tangent(t, a):
    if t is None:
        return np.zeros(np.shape(a), dtype=jax.dtypes.float0)
    return t


_JAX: dict = {}


def jax_jvp(c):
    if c.name not in _JAX:
        with jax.enable_x64(needs_x64(c)):
            args = tmap(jnp.asarray, c.args)
            nums = _argnums(c)
            prim = [args[n] for n in nums]
            tans = [_tmap2(_jax_tangent, t, c.args[n]) for t, n in zip(tangents(c), nums)]
            out = jax.jit(lambda p, t: jax.jvp(_restricted(c.jax, c, args), p, t,
                                               has_aux=c.has_aux))(prim, tans)
            _JAX[c.name] = tmap(np.asarray, out)
    return _JAX[c.name]


def _tmap2(f, t, a):
    if isinstance(t, dict):
        return {k: _tmap2(f, t[k], a[k]) for k in t}
    if isinstance(t, (tuple, list)):
        return type(t)(_tmap2(f, x, y) for x, y in zip(t, a))
    return f(t, a)


def _nx_tangent(t, a):
    return nx.tensor(np.asarray(t)) if t is not None else nx.tensor(np.asarray(a))


def nx_jvp(c, path):
    args = nx_args(c.args)
    nums = _argnums(c)
    prim = [args[n] for n in nums]
    tans = [_tmap2(_nx_tangent, t, c.args[n]) for t, n in zip(tangents(c), nums)]

    def run(args, prim, tans):
        return jvp(_restricted(c.nx, c, args), prim, tans, has_aux=c.has_aux)
    if path == "eager":
        return jvp(_restricted(c.nx, c, args), prim, tans, has_aux=c.has_aux)
    return jit(run, compiler="exla")(args, prim, tans)


#: cases whose JAX twin is a ``jax.custom_vjp`` function, which ``jax.jvp`` refuses (nxpy's
#: ``custom_grad`` is forward-differentiated through how its value was computed instead:
#: see test_jvp_of_custom_grad_follows_the_primal_computation)
_JAX_CANNOT = {"custom_grad", "custom_grad_two_inputs", "stop_and_custom_grad_in_cond_and_loop"}
#: cases computed in f16/bf16, whose JAX twin rounds each op differently (nxpy sums the
#: ops in f32, JAX in the low type, so JAX's own tangent is off by up to 0.15 for bf16):
#: both outputs are compared with JAX's in f32 on the same values, within ``rtol`` of the
#: tangent's scale (the sum of |d f/d x| |t|, what the rounding errors add up from)
_LOW_PRECISION = {"f16_unary_ops": 2e-3, "bf16_unary_ops": 1e-2}
#: a case whose primal nxpy computes in another type than JAX's (a difference of the
#: forward ops, not of forward mode): its values are compared in f64
_PRIMAL_DIFFERS = {"as_type_bf16_roundtrip": 3e-2}


def _f32(a):
    a = np.asarray(a)
    return a.astype(np.float32) if a.dtype in (np.float16, jnp.bfloat16) else a


def _f32_reference(c):
    """(primal, tangent, tangent scale) of a low-precision scalar case, by JAX in f32."""
    (x,) = c.args
    (t,) = tangents(c)
    f = jax.jit(c.jax)
    y, dy = jax.jvp(f, (_f32(x),), (_f32(t),))
    scale = np.sum(np.abs(np.asarray(jax.grad(f)(_f32(x)))) * np.abs(_f32(t)))
    return float(y), float(dy), float(scale)


#: the cases ``jax.jvp`` can check
_CHECKED = [c for c in CASES if c.name not in _JAX_CANNOT]
#: the fast slice's ``exla`` cases: every other one (``eager`` alone on the rest), so that
#: every op with several cases meets both paths (checked below); ``make exhaustive``: all
_EXLA = [c for c, p in covering(_CHECKED, ("exla", "eager")) if p == "exla"]


def _params():
    """Every case ``eager`` (cheap: the Evaluator on NumPy; JAX's reference is most of
    its time) and the cases of :data:`_EXLA` on ``exla`` too (one XLA compile each), both
    tests of a case on one xdist worker, which computes JAX's reference once."""
    for c in _CHECKED:
        for p in ("eager", "exla"):
            if p == "exla" and c not in _EXLA:
                continue
            marks = c.marks()
            if c in _EXLA and not FULL_PRODUCT:
                marks = marks + [pytest.mark.xdist_group(f"jvp_{c.name}")]
            yield pytest.param(c, p, id=f"{c.name}-{p}", marks=marks)


def _loose(got, want, rtol):
    for g, w in zip(tleaves(got), tleaves(want)):
        np.testing.assert_allclose(g.to_numpy().astype(np.float64),
                                   np.asarray(w).astype(np.float64), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("c,path", list(_params()))
def test_jvp_matches_jax(c, path):
    want = jax_jvp(c)
    got = nx_jvp(c, path)
    if c.has_aux:
        got, want = got[:2], tuple(want[:2])
    if c.name in _LOW_PRECISION:
        y, dy, scale = _f32_reference(c)
        rtol = _LOW_PRECISION[c.name]
        primal, tangent = (float(v.to_numpy()) for v in got)
        assert abs(primal - y) <= rtol * abs(y), (primal, y)
        assert abs(tangent - dy) <= rtol * scale, (tangent, dy, scale)
        return
    if c.name in _PRIMAL_DIFFERS:
        _loose(got, want, _PRIMAL_DIFFERS[c.name])
        for y, t in zip(tleaves(got[0]), tleaves(got[1])):
            assert (y.type, y.shape) == (t.type, t.shape)  # a tangent is like its primal
        return
    assert_same_tree(tuple(got), tuple(want), max(c.rtol, 2e-5), max(c.atol, 2e-6))


def test_every_op_meets_both_paths_in_the_fast_slice():
    """What the rotation keeps: every case on ``eager``, half of them on ``exla`` too, and
    every elementwise op covered by several cases on both paths."""
    met: dict = {}
    for p in _params():
        c, path = p.values
        for op in c.ops or (c.name,):
            met.setdefault(op, set()).add(path)
    assert {c.name for c in _CHECKED} <= {p.values[0].name for p in _params()}
    assert len(_EXLA) >= len(_CHECKED) // 2
    several = {op for op in met if sum(op in c.ops for c in _CHECKED) >= 3}
    assert several and all(met[op] == {"eager", "exla"} for op in several), \
        {op: met[op] for op in several if met[op] != {"eager", "exla"}}


def test_every_primitive_has_a_jvp_rule_or_a_zero_tangent():
    missing = sorted(op for op in PRIMITIVES
                     if op not in JVP_RULES and op not in ZERO_TANGENT and op not in ENGINE)
    assert not missing, f"ops without a JVP rule (or zero_tangent): {missing}"
    both = sorted(set(JVP_RULES) & ZERO_TANGENT)
    assert not both, both


def test_jvp_of_integer_valued_ops_is_zero():
    y, t = jvp(lambda x: nx.floor(x) + nx.sign(x), (nx.tensor([1.5, -2.5]),),
               (nx.tensor([1.0, 1.0]),))
    assert t.tolist() == [0.0, 0.0]


# ----------------------------------------------------------------------------------------
# Helpers for the hand-written cases
# ----------------------------------------------------------------------------------------
def r(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


PATHS = {
    "evaluator": lambda f: jit(f),
    "exla": lambda f: jit(f, compiler="exla"),
}


def check_jvp(nxf, jf, primals, tangents, path, rtol=2e-5, atol=2e-5):
    want = jax.jvp(jf, tuple(jnp.asarray(p) for p in primals),
                   tuple(jnp.asarray(t) for t in tangents))
    run = PATHS[path](lambda p, t: jvp(nxf, p, t))
    got = run(tuple(nx.tensor(p) for p in primals), tuple(nx.tensor(t) for t in tangents))
    close(got, want, rtol, atol)


# ----------------------------------------------------------------------------------------
# Control flow: cond, while, fori_loop, scan
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", PATHS)
def test_jvp_through_cond(path):
    def nxf(x, w):
        return nx.cond(nx.sum(x) > 0, lambda: nx.sin(x) * w, lambda: x * x + w)

    def jf(x, w):
        return lax.cond(jnp.sum(x) > 0, lambda: jnp.sin(x) * w, lambda: x * x + w)
    for sign in (1.0, -1.0):
        check_jvp(nxf, jf, (sign * np.abs(r(3)), r(3, seed=1)), (r(3, seed=2), r(3, seed=3)),
                  path)


@pytest.mark.parametrize("path", PATHS)
def test_jvp_through_while_loop(path):
    # the loop's trip count depends on the data; the tangent of w is captured by the body
    def nxf(x, w):
        return while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, nx.tanh(s[1] * w) + s[1]),
                          (nx.tensor(0), x))[1]

    def jf(x, w):
        return lax.while_loop(lambda s: s[0] < 5,
                              lambda s: (s[0] + 1, jnp.tanh(s[1] * w) + s[1]), (0, x))[1]
    check_jvp(nxf, jf, (r(4), r(4, seed=1)), (r(4, seed=2), r(4, seed=3)), path)


@pytest.mark.parametrize("path", PATHS)
def test_jvp_through_fori_loop_with_zero_initial_tangent(path):
    # the carry's initial value has no tangent; it gets one from the captured w
    def nxf(w):
        return fori_loop(0, 3, lambda i, c: c * w + 1.0, nx.tensor([1.0, 2.0]))

    def jf(w):
        return lax.fori_loop(0, 3, lambda i, c: c * w + 1.0, jnp.array([1.0, 2.0]))
    check_jvp(nxf, jf, (r(2),), (r(2, seed=1),), path)


@pytest.mark.parametrize("path", PATHS)
def test_jvp_through_scan(path):
    def nxf(h0, xs, w):
        def cell(h, x):
            h = nx.tanh(nx.dot(h, w) + x)
            return h, h * 2.0
        return scan(cell, h0, xs)

    def jf(h0, xs, w):
        def cell(h, x):
            h = jnp.tanh(jnp.dot(h, w) + x)
            return h, h * 2.0
        return lax.scan(cell, h0, xs)
    check_jvp(nxf, jf, (r(3), r(5, 3, seed=1), r(3, 3, seed=2) * 0.5),
              (r(3, seed=3), r(5, 3, seed=4), r(3, 3, seed=5)), path)


@pytest.mark.parametrize("path", PATHS)
def test_jvp_through_reverse_scan_with_unroll(path):
    def nxf(xs):
        return scan(lambda c, x: (c * nx.cos(x), c + x), nx.tensor(1.0), xs, reverse=True,
                    unroll=2)

    def jf(xs):
        return lax.scan(lambda c, x: (c * jnp.cos(x), c + x), 1.0, xs, reverse=True,
                        unroll=2)
    check_jvp(nxf, jf, (r(5),), (r(5, seed=1),), path)


# ----------------------------------------------------------------------------------------
# linearize, jacfwd, hessian
# ----------------------------------------------------------------------------------------
def _mlp(x, w):
    return nx.tanh(nx.dot(x, w)) ** 2


def _jmlp(x, w):
    return jnp.tanh(jnp.dot(x, w)) ** 2


def test_linearize_matches_jax():
    x, w, t = r(2, 3), r(3, 4, seed=1), r(2, 3, seed=2)
    y, f_jvp = linearize(lambda x: _mlp(x, nx.tensor(w)), nx.tensor(x))
    jy, jf_jvp = jax.linearize(lambda x: _jmlp(x, w), jnp.asarray(x))
    close(y, jy)
    close(f_jvp(nx.tensor(t)), jf_jvp(jnp.asarray(t)))
    close(f_jvp(nx.tensor(2 * t)), jf_jvp(jnp.asarray(2 * t)))


@pytest.mark.parametrize("path", PATHS)
def test_linearize_inside_a_defn(path):
    def f(x, t):
        y, f_jvp = linearize(nx.sin, x)
        return y, f_jvp(t)
    got = PATHS[path](f)(nx.tensor(r(3)), nx.tensor(r(3, seed=1)))
    close(got, jax.linearize(jnp.sin, r(3))[0:1] + (jnp.cos(r(3)) * r(3, seed=1),))


# each argnums on one path, in rotation (every path: make exhaustive)
@pytest.mark.parametrize("argnums,path", [  # ids as pytest gave them, unrotated
    pytest.param(a, p, id=f"{a if isinstance(a, int) else 'argnums2'}-{p}")
    for a, p in covering([0, 1, (0, 1)], list(PATHS))])
def test_jacfwd_matches_jax(path, argnums):
    x, w = r(2, 3), r(3, 4, seed=1)
    got = PATHS[path](jacfwd(_mlp, argnums=argnums))(nx.tensor(x), nx.tensor(w))
    close(got, jax.jacfwd(_jmlp, argnums=argnums)(x, w))
    # and the same as reverse mode's
    close(got, jacobian(_mlp, argnums=argnums)(nx.tensor(x), nx.tensor(w)))


def test_jacfwd_containers_and_aux():
    def f(p):
        y = {"a": p["w"] * p["b"][0], "b": nx.sum(p["w"] ** 2)}
        return y, nx.sum(p["w"])

    def jfn(p):
        y = {"a": p["w"] * p["b"][0], "b": jnp.sum(p["w"] ** 2)}
        return y, jnp.sum(p["w"])
    p = {"w": r(3), "b": (r(3, seed=1),)}
    got, aux = jacfwd(f, has_aux=True)(tmap(nx.tensor, p))
    want, jaux = jax.jacfwd(jfn, has_aux=True)(p)
    close(got, want)
    close(aux, jaux)
    assert got["a"]["b"][0].shape == (3, 3)


@pytest.mark.parametrize("path", PATHS)
def test_jacfwd_of_grad_and_hessian(path):
    def f(x):
        return nx.sum(nx.sin(x) * x[0] + nx.exp(x) * x[1] ** 2)

    def jfn(x):
        return jnp.sum(jnp.sin(x) * x[0] + jnp.exp(x) * x[1] ** 2)
    x = r(3)
    close(PATHS[path](jacfwd(grad(f)))(nx.tensor(x)), jax.jacfwd(jax.grad(jfn))(x), 1e-4)
    close(PATHS[path](hessian(f))(nx.tensor(x)), jax.hessian(jfn)(x), 1e-4)


def test_jacfwd_rejects_integer_inputs():
    with pytest.raises(TypeError, match="jacfwd: expected real floating-point inputs, got s32"):
        jacfwd(lambda x: x * 2)(nx.tensor([1, 2]))


@pytest.mark.parametrize("path", PATHS)
def test_hessian_vector_product_forward_over_reverse(path):
    def f(x):
        return nx.sum(nx.tanh(x) ** 3)

    def hvp(x, v):
        return jvp(grad(f), (x,), (v,))[1]
    x, v = r(4), r(4, seed=1)
    want = jax.jvp(jax.grad(lambda x: jnp.sum(jnp.tanh(x) ** 3)), (x,), (v,))[1]
    close(PATHS[path](hvp)(nx.tensor(x), nx.tensor(v)), want, 1e-4)


@pytest.mark.parametrize("path", PATHS)
def test_grad_of_jvp_reverse_over_forward(path):
    def g(x):
        return nx.sum(jvp(lambda y: nx.sin(y) * y, (x,), (x * 0.0 + 1.0,))[1])

    def jg(x):
        return jnp.sum(jax.jvp(lambda y: jnp.sin(y) * y, (x,), (jnp.ones_like(x),))[1])
    close(PATHS[path](grad(g))(nx.tensor(r(3))), jax.grad(jg)(r(3)), 1e-4)


def test_vmap_of_jvp_and_jvp_of_vmap():
    x, t = r(4, 3), r(4, 3, seed=1)
    a = vmap(lambda x, t: jvp(nx.sin, (x,), (t,))[1])(nx.tensor(x), nx.tensor(t))
    b = jvp(vmap(nx.sin), (nx.tensor(x),), (nx.tensor(t),))[1]
    close(a, np.cos(x) * t)
    close(b, np.cos(x) * t)


# ----------------------------------------------------------------------------------------
# Markers: stop_grad, custom_grad, custom_vjp
# ----------------------------------------------------------------------------------------
def test_jvp_of_stop_grad_is_zero():
    _, t = jvp(lambda x: x * stop_grad(x), (nx.tensor(3.0),), (nx.tensor(1.0),))
    assert t.tolist() == 3.0


def test_jvp_of_custom_grad_follows_the_primal_computation():
    # Nx's custom_grad changes reverse mode only: forward mode differentiates the value
    y, t = jvp(lambda x: clipped_sqrt(x), (nx.tensor(4.0),), (nx.tensor(1.0),))
    assert (y.tolist(), t.tolist()) == (2.0, 0.25)


def test_jvp_of_custom_vjp_is_an_error_as_in_jax():
    @custom_vjp
    def f(x):
        return nx.sin(x)
    f.defvjp(lambda x: (nx.sin(x), x), lambda res, g: (g * 100.0,))
    with pytest.raises(TypeError, match=r"jvp: can't apply forward-mode autodiff \(jvp\) to "
                       r"a custom_vjp function"):
        jvp(f, (nx.tensor(1.0),), (nx.tensor(1.0),))
    # ... but forward over its reverse mode is fine (JAX too): bwd is differentiated
    assert jacfwd(grad(f))(nx.tensor(1.0)).tolist() == 0.0
    assert hessian(f)(nx.tensor(1.0)).tolist() == 0.0


# ----------------------------------------------------------------------------------------
# custom_jvp
# ----------------------------------------------------------------------------------------
@custom_jvp
def log1pexp(x):
    return nx.log(1.0 + nx.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + nx.exp(x)))


@jax.custom_jvp
def j_log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


@j_log1pexp.defjvp
def _j_log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return j_log1pexp(x), t * (1.0 - 1.0 / (1.0 + jnp.exp(x)))


_X_WIDE = np.array([-3.0, 0.5, 100.0], np.float32)


@pytest.mark.parametrize("path", PATHS)
def test_custom_jvp_tangent_uses_the_rule(path):
    t = np.array([1.0, 2.0, 3.0], np.float32)
    got = PATHS[path](lambda x, t: jvp(log1pexp, (x,), (t,)))(nx.tensor(_X_WIDE), nx.tensor(t))
    want = jax.jvp(j_log1pexp, (_X_WIDE,), (t,))
    close(got, want)
    assert np.isfinite(got[1].to_numpy()).all()
    close(PATHS[path](jacfwd(log1pexp))(nx.tensor(_X_WIDE)), jax.jacfwd(j_log1pexp)(_X_WIDE))


@pytest.mark.parametrize("path", PATHS)
def test_custom_jvp_gradient_uses_the_rule(path):
    got = PATHS[path](grad(lambda x: nx.sum(log1pexp(x))))(nx.tensor(_X_WIDE))
    want = jax.grad(lambda x: jnp.sum(j_log1pexp(x)))(_X_WIDE)
    close(got, want)
    assert got.to_numpy()[2] == 1.0  # f's own derivative is NaN there (inf / inf)
    # and second order: the rule's tangent is differentiated again
    # (where f itself is finite: at 100, exp overflows in the rule's own tangent)
    close(PATHS[path](hessian(lambda x: nx.sum(log1pexp(x))))(nx.tensor(_X_WIDE[:2])),
          jax.hessian(lambda x: jnp.sum(j_log1pexp(x)))(_X_WIDE[:2]), 1e-4, 1e-6)


def test_custom_jvp_rule_differs_from_the_function():
    # a deliberately "wrong" rule shows which derivative is used, in both modes
    @custom_jvp
    def f(x, y):
        return x * y

    @f.defjvp
    def _(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return f(x, y), 10.0 * tx + 100.0 * ty

    @jax.custom_jvp
    def jf(x, y):
        return x * y

    @jf.defjvp
    def _(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        return jf(x, y), 10.0 * tx + 100.0 * ty
    x, y = r(3), r(3, seed=1)
    close(jvp(f, (nx.tensor(x), nx.tensor(y)), (nx.tensor(y), nx.tensor(x))),
          jax.jvp(jf, (x, y), (y, x)))
    close(grad(lambda x, y: nx.sum(f(x, y) * nx.tensor(y)), argnums=(0, 1))(
        nx.tensor(x), nx.tensor(y)),
        jax.grad(lambda x, y: jnp.sum(jf(x, y) * y), argnums=(0, 1))(x, y))


def test_custom_jvp_nondiff_argnums_containers_and_vmap():
    @functools.partial(custom_jvp, nondiff_argnums=(0,))
    def apply(k, p):
        return {"y": p["a"] * k + p["b"]}

    @apply.defjvp
    def _(k, primals, tangents):
        (p,), (tp,) = primals, tangents
        return apply(k, p), {"y": tp["a"] * k * 3.0 + tp["b"]}

    @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
    def japply(k, p):
        return {"y": p["a"] * k + p["b"]}

    @japply.defjvp
    def _(k, primals, tangents):
        (p,), (tp,) = primals, tangents
        return japply(k, p), {"y": tp["a"] * k * 3.0 + tp["b"]}
    p, tp = {"a": r(2), "b": r(2, seed=1)}, {"a": r(2, seed=2), "b": r(2, seed=3)}
    close(jvp(lambda p: apply(2.0, p), (tmap(nx.tensor, p),), (tmap(nx.tensor, tp),)),
          jax.jvp(lambda p: japply(2.0, p), (p,), (tp,)))
    close(grad(lambda p: nx.sum(apply(2.0, p)["y"]))(tmap(nx.tensor, p)),
          jax.grad(lambda p: jnp.sum(japply(2.0, p)["y"]))(p))
    # batched: vmap of the custom function, under jvp and under grad
    xs = r(4, 2)
    f = lambda a: vmap(lambda v: apply(2.0, {"a": v, "b": v})["y"])(a)  # noqa: E731
    jfn = lambda a: jax.vmap(lambda v: japply(2.0, {"a": v, "b": v})["y"])(a)  # noqa: E731
    close(jvp(f, (nx.tensor(xs),), (nx.tensor(xs),)), jax.jvp(jfn, (xs,), (xs,)))
    close(grad(lambda a: nx.sum(f(a)))(nx.tensor(xs)), jax.grad(lambda a: jnp.sum(jfn(a)))(xs))


def test_custom_jvp_defjvps():
    @custom_jvp
    def f(x, y):
        return nx.sin(x) * y

    f.defjvps(lambda tx, out, x, y: nx.cos(x) * tx * y, lambda ty, out, x, y: nx.sin(x) * ty)

    @jax.custom_jvp
    def jf(x, y):
        return jnp.sin(x) * y
    jf.defjvps(lambda tx, out, x, y: jnp.cos(x) * tx * y, lambda ty, out, x, y: jnp.sin(x) * ty)
    x, y = r(3), r(3, seed=1)
    close(jvp(f, (nx.tensor(x), nx.tensor(y)), (nx.tensor(y), nx.tensor(x))),
          jax.jvp(jf, (x, y), (y, x)))


def test_custom_jvp_undifferentiated_is_the_function_and_errors():
    assert log1pexp(nx.tensor(0.0)).tolist() == pytest.approx(np.log(2.0))

    @custom_jvp
    def g(x):
        return x
    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function g"):
        g(nx.tensor(1.0))

    @custom_jvp
    def h(x):
        return x * 2.0
    h.defjvp(lambda p, t: p[0])  # not a pair
    with pytest.raises(TypeError, match=r"custom_jvp: the rule of h must return a pair"):
        jvp(h, (nx.tensor(1.0),), (nx.tensor(1.0),))


# ----------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------
def test_jvp_errors_name_what_was_expected():
    x = nx.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="jvp: expected primals to be a tuple or list"):
        jvp(nx.sin, x, (x,))
    with pytest.raises(TypeError, match=r"one tangent per primal \(1\), got 2 tangent"):
        jvp(nx.sin, (x,), (x, x))
    with pytest.raises(ValueError, match=r"tangent leaf 0 has shape f32\[3\], its primal "
                       r"f32\[2\]"):
        jvp(nx.sin, (x,), (nx.tensor([1.0, 2.0, 3.0]),))
    with pytest.raises(TypeError, match="tangent leaf 0 has type f64, its primal f32"):
        jvp(nx.sin, (x,), (nx.tensor([1.0, 2.0], type="f64"),))


# ----------------------------------------------------------------------------------------
# shard_map collectives on 2x2 and 2x4 meshes
# ----------------------------------------------------------------------------------------
from jax.sharding import Mesh as JMesh, PartitionSpec as JP  # noqa: E402

from nxpy.defn import (all_gather, all_to_all, collective_broadcast, pmax,  # noqa: E402
                       ppermute, psum, psum_scatter, shard_map)


MESH_SHAPES = [(2, 2), (2, 4)]


def _meshes(shape=(2, 2)):
    n = shape[0] * shape[1]
    nxm = nx.Mesh(f"jvp{n}", shape, axis_names=("x", "y"))
    devs = np.empty(n, dtype=object)
    devs[:] = jax.devices()[:n]
    return nxm, JMesh(devs.reshape(shape), ("x", "y"))


#: body(lib, a, b, k) over a: P("x", "y") (4 x 4k global, 2x4 per device), b: P("x") (4
#: global), with k devices along "y"; one output P("x", "y") and one replicated over "y"
_BODIES = {
    "psum": lambda L, a, b, k: (L.psum(L.sin(a) * b[:, None], "y"), L.psum(b * b, "x")),
    "all_gather": lambda L, a, b, k: (L.all_gather(a, "y", axis=1, tiled=True)[:, :4] * a,
                                      L.all_gather(L.sin(b), "x", axis=0, tiled=True)[:2]),
    "pmax": lambda L, a, b, k: (a * L.pmax(L.sum(a * a), ("x", "y")), b * 2.0),
    "ppermute": lambda L, a, b, k: (
        L.ppermute(a * a, "y", [(i, (i + 1) % k) for i in range(k)]), b),
    # ops whose tangent is their gradient rule transposed, inside the body
    "sort_cummax": lambda L, a, b, k: (L.psum(L.sort(a) * L.cummax(L.sin(a)), "y"), b * b),
    "psum_scatter": lambda L, a, b, k: (
        L.psum_scatter(a * a, "y", scatter_dimension=1, tiled=True)
        * L.ones_like(a)[:, :1], b),
}


class _NX:
    sin = staticmethod(nx.sin)
    sum = staticmethod(nx.sum)

    @staticmethod
    def sort(v):
        return nx.sort(v, axis=1)

    @staticmethod
    def cummax(v):
        return nx.cumulative_max(v, axis=1)
    psum, pmax, ppermute = staticmethod(psum), staticmethod(pmax), staticmethod(ppermute)

    @staticmethod
    def all_gather(v, axes, axis, tiled):
        return all_gather(v, axes=axes, all_gather_dim=axis, tiled=tiled)

    @staticmethod
    def psum_scatter(v, axes, scatter_dimension, tiled):
        return psum_scatter(v, axes, scatter_dimension=scatter_dimension, tiled=tiled)

    @staticmethod
    def ones_like(v):
        return v * 0.0 + 1.0


class _JX:
    sin, sum = staticmethod(jnp.sin), staticmethod(jnp.sum)

    @staticmethod
    def sort(v):
        return jnp.sort(v, axis=1)

    @staticmethod
    def cummax(v):
        return lax.cummax(v, axis=1)
    psum, ppermute = staticmethod(lax.psum), staticmethod(lax.ppermute)
    ones_like = staticmethod(jnp.ones_like)

    @staticmethod
    def pmax(v, axes):  # JAX has no JVP rule for pmax: the max of the gathered values
        return jnp.max(lax.all_gather(v, axes), axis=0)

    @staticmethod
    def all_gather(v, axes, axis, tiled):
        return lax.all_gather(v, axes, axis=axis, tiled=tiled)

    @staticmethod
    def psum_scatter(v, axes, scatter_dimension, tiled):
        return lax.psum_scatter(v, axes, scatter_dimension=scatter_dimension, tiled=tiled)


def _mesh_id(s):
    return f"{s[0]}x{s[1]}"


#: each body on each mesh with one compiler, in rotation (the meshes' order alternating body
#: by body, so every body meets both compilers and so does every mesh); make exhaustive: all
_COLLECTIVES = [pytest.param(n, m, c, id=f"{n}-{_mesh_id(m)}-{c}") for (n, m), c in covering(
    [(n, m) for i, n in enumerate(sorted(_BODIES)) for m in MESH_SHAPES[::(-1) ** i]],
    COMPILERS)]


def test_every_collective_body_meets_both_compilers():
    met: dict = {}
    for p in _COLLECTIVES:
        n, m, c = p.values
        met.setdefault(n, set()).add(c)
        met.setdefault(m, set()).add(c)
    assert all(cs == {"evaluator", "exla"} for cs in met.values()), met
    assert set(met) == set(_BODIES) | set(MESH_SHAPES)


@pytest.mark.parametrize("name,mesh_shape,compiler", _COLLECTIVES)
def test_jvp_of_shard_map_collectives(name, mesh_shape, compiler):
    nxm, jm = _meshes(mesh_shape)
    k = mesh_shape[1]
    body = _BODIES[name]
    out_specs = ((("x", "y"), ("x",)) if name not in ("psum", "sort_cummax")
                 else (("x", None), (None,) if name == "psum" else ("x",)))
    if name == "all_gather":
        out_specs = (("x", None), (None,))
    nxf = shard_map(lambda a, b: body(_NX, a, b, k), nxm,
                    in_specs=[nx.P("x", "y"), nx.P("x")],
                    out_specs=[nx.P(*s) for s in out_specs], check_vma=False)
    jf = jax.shard_map(lambda a, b: body(_JX, a, b, k), mesh=jm,
                       in_specs=(JP("x", "y"), JP("x")),
                       out_specs=tuple(JP(*s) for s in out_specs), check_vma=False)
    a, b, ta, tb = r(4, 4 * k), r(4, seed=1), r(4, 4 * k, seed=2), r(4, seed=3)
    want = jax.jit(lambda p, t: jax.jvp(jf, p, t))((a, b), (ta, tb))  # eager: ~10 s
    got = jit(lambda p, t: jvp(nxf, p, t), compiler=compiler)(
        (nx.tensor(a), nx.tensor(b)), (nx.tensor(ta), nx.tensor(tb)))
    close(got, want, 1e-5, 1e-5)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_jvp_under_shard_jit_global_view(compiler):
    nxm, _ = _meshes()
    f = shard_jit(lambda x, t: jvp(lambda v: nx.sum(nx.sin(v) * v, axes=[1]), (x,), (t,)),
                  nxm, input_shardings=[{0: [0]}, {0: [0]}], compiler=compiler)
    x, t = r(4, 6), r(4, 6, seed=1)
    y, ty = f(nx.tensor(x), nx.tensor(t))
    close((y, ty), (np.sum(np.sin(x) * x, 1), np.sum((np.cos(x) * x + np.sin(x)) * t, 1)))


# ----------------------------------------------------------------------------------------
# More of the engine: capped loops, checkpoint, integer primals, has_aux, hooks
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", PATHS)
def test_jvp_through_while_loop_with_max_iterations(path):
    def nxf(x):
        return while_loop(lambda s: nx.sum(s) < 100.0, lambda s: s * 1.5 + 1.0, x,
                          max_iterations=50)

    def jf(x):
        return lax.while_loop(lambda s: jnp.sum(s) < 100.0, lambda s: s * 1.5 + 1.0, x)
    check_jvp(nxf, jf, (np.abs(r(3)),), (r(3, seed=1),), path)


@pytest.mark.parametrize("path", PATHS)
def test_jvp_through_checkpoint_and_its_gradient(path):
    block = checkpoint(lambda w, x: nx.tanh(nx.dot(x, w)))

    def nxf(w, x):
        return nx.sum(block(w, block(w, x)))

    def jf(w, x):
        b = jax.checkpoint(lambda w, x: jnp.tanh(jnp.dot(x, w)))
        return jnp.sum(b(w, b(w, x)))
    w, x = r(3, 3) * 0.5, r(2, 3, seed=1)
    check_jvp(nxf, jf, (w, x), (r(3, 3, seed=2), r(2, 3, seed=3)), path)
    close(PATHS[path](jacfwd(grad(nxf)))(nx.tensor(w), nx.tensor(x)),
          jax.jacfwd(jax.grad(jf))(w, x), 1e-4, 1e-5)


def test_jvp_integer_primal_and_has_aux():
    def f(x, n):
        return x * n, {"n": n * 2}
    y, t, aux = jvp(f, (nx.tensor([1.0, 2.0]), nx.tensor(3)),
                    (nx.tensor([1.0, 1.0]), nx.tensor(0)), has_aux=True)
    assert (y.tolist(), t.tolist(), aux["n"].tolist()) == ([3.0, 6.0], [3.0, 3.0], 6)


def test_jvp_of_runtime_call_is_an_error_unless_stopped():

    def f(x):
        return runtime_call(nx.template((2,), "f32"), [x], lambda vs: vs[0] * 2)
    with pytest.raises(ValueError, match="jvp: runtime_call is not differentiable"):
        jvp(f, (nx.tensor([1.0, 2.0]),), (nx.tensor([1.0, 1.0]),))
    _, t = jvp(lambda x: f(stop_grad(x)) + x, (nx.tensor([1.0, 2.0]),),
               (nx.tensor([1.0, 1.0]),))
    assert t.tolist() == [1.0, 1.0]


# ----------------------------------------------------------------------------------------
# The remaining rules, against central finite differences in f64 (nxpy alone)
# ----------------------------------------------------------------------------------------
def _fd(f, x, t, eps=1e-6):
    run = jit(f)
    hi = run(nx.tensor(x + eps * t)).to_numpy()
    lo = run(nx.tensor(x - eps * t)).to_numpy()
    return (hi - lo) / (2 * eps)


_FD = {
    "permute_by_key": lambda x: nx.permute_by_key(nx.tensor([2, 0, 3, 1]), x ** 2, axis=0),
    "reduce": lambda x: nx.reduce(x * x, 1.0, {"axes": [0]}, lambda a, b: a * b),
    "window_reduce": lambda x: nx.window_reduce(nx.sin(x), 0.0, (2,),
                                                lambda a, b: nx.max(a, b)),
    "optimization_barrier": lambda x: nx.optimization_barrier(nx.sin(x)) * x,
    "window_scatter_min_via_grad": lambda x: grad(
        lambda v: nx.sum(nx.window_min(v * v, (2,)) * nx.tensor([1.0, 2.0, 3.0])))(x),
    "cumulative_max_product": lambda x: nx.cumulative_max(x) * nx.cumulative_product(x),
}


@pytest.mark.parametrize("name", sorted(_FD))
def test_jvp_matches_finite_differences(name):
    f = _FD[name]
    x = np.array([0.3, -1.2, 0.7, 1.9], np.float64)
    t = np.array([1.0, 0.5, -2.0, 0.25], np.float64)
    _, got = jvp(f, (nx.tensor(x),), (nx.tensor(t),))
    np.testing.assert_allclose(got.to_numpy(), _fd(f, x, t), rtol=1e-6, atol=1e-8)


# each mesh with one compiler, in rotation (both with both: make exhaustive)
@pytest.mark.parametrize("mesh_shape,compiler", [
    pytest.param(m, c, id=f"{_mesh_id(m)}-{c}")
    for m, c in covering(MESH_SHAPES, COMPILERS)])
def test_jvp_of_more_collectives(mesh_shape, compiler):
    nxm, jm = _meshes(mesh_shape)
    k = mesh_shape[1]

    def body(a):
        return (all_to_all(nx.sin(a), "y", 1, 0, tiled=True),
                collective_broadcast(a * a, "x", source=1))

    def jbody(a):
        return (lax.all_to_all(jnp.sin(a), "y", 1, 0, tiled=True),
                lax.psum(jnp.where(lax.axis_index("x") == 1, a * a, 0), "x"))
    nxf = shard_map(body, nxm, in_specs=[nx.P("x", "y")],
                    out_specs=[nx.P("x", "y"), nx.P(None, "y")], check_vma=False)
    jf = jax.shard_map(jbody, mesh=jm, in_specs=(JP("x", "y"),),
                       out_specs=(JP("x", "y"), JP(None, "y")), check_vma=False)
    a, t = r(4, 4 * k), r(4, 4 * k, seed=1)
    want = jax.jit(lambda p, t: jax.jvp(jf, p, t))((a,), (t,))
    got = jit(lambda p, t: jvp(nxf, p, t), compiler=compiler)((nx.tensor(a),), (nx.tensor(t),))
    close(got, want, 1e-5, 1e-5)


@pytest.mark.parametrize("path", PATHS)
def test_reverse_over_forward_through_loops(path):
    # the jvp's loop (carries and tangents) stays a counting loop that grad can reverse
    def g(w):
        return nx.sum(jvp(lambda w: fori_loop(0, 4, lambda i, c: nx.sin(c * w), w), (w,),
                          (w * 0.0 + 1.0,))[1])

    def jg(w):
        return jnp.sum(jax.jvp(lambda w: lax.fori_loop(0, 4, lambda i, c: jnp.sin(c * w), w),
                               (w,), (w * 0.0 + 1.0,))[1])
    w = np.array([0.3, 0.9], np.float32)
    close(PATHS[path](grad(g))(nx.tensor(w)), jax.grad(jg)(w), 1e-5)

    def s(w):
        return scan(lambda c, x: (nx.tanh(c * w + x), c), nx.tensor(0.5),
                    nx.tensor([1.0, 2.0, 3.0]))[1]

    def js(w):
        return lax.scan(lambda c, x: (jnp.tanh(c * w + x), c), 0.5, jnp.array([1.0, 2.0, 3.0]))[1]
    close(PATHS[path](grad(lambda w: nx.sum(jacfwd(s)(w))))(nx.tensor(0.7)),
          jax.grad(lambda w: jnp.sum(jax.jacfwd(js)(w)))(0.7), 1e-5)


# ----------------------------------------------------------------------------------------
# Ops from outside nxpy (nxpy.extend)
# ----------------------------------------------------------------------------------------
from nxpy.extend import register_grad_rule, register_jvp_rule, register_op  # noqa: E402

_cube = register_op("test_jvp_cube", lambda x: (x.shape, x.type),
                    evaluate=lambda out, x: x.to_numpy() ** 3)
_square = register_op("test_jvp_square", lambda x: (x.shape, x.type),
                      evaluate=lambda out, x: x.to_numpy() ** 2)


@register_grad_rule("test_jvp_cube", "test_jvp_square")
def _power_grad(ctx, e, xs, out, g):
    (x,) = xs
    return [g * (3.0 if e.op == "test_jvp_cube" else 2.0) * x ** (2 if e.op == "test_jvp_cube"
                                                                  else 1)]


@register_jvp_rule("test_jvp_square")
def _square_jvp(ctx, e, xs, ts, out):
    return ts[0] * xs[0] * 20.0  # deliberately not the derivative: shows the rule is used


def test_extension_ops_jvp_by_their_rule_or_by_transposing_their_gradient():
    x, t = nx.tensor([1.0, 2.0]), nx.tensor([1.0, 0.5])
    assert jvp(_cube, (x,), (t,))[1].tolist() == [3.0, 6.0]  # from the gradient rule
    assert jvp(_square, (x,), (t,))[1].tolist() == [20.0, 20.0]  # its own JVP rule


# ----------------------------------------------------------------------------------------
# Complex tangents of the transposed rules whose tangent map is complex-linear
# ----------------------------------------------------------------------------------------
def _c(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.5, 1.5, shape) + 1j * rng.uniform(-0.5, 0.5, shape)).astype(
        np.complex64)


_COMPLEX_LINEAR = {
    "window_product": (lambda a: nx.window_product(a, (2, 2)),
                       lambda a: lax.reduce_window(a, np.complex64(1), lax.mul, (2, 2), (1, 1),
                                                   "VALID"), (_c(3, 4),)),
    "cumulative_product": (lambda a: nx.cumulative_product(a, axis=1),
                           lambda a: lax.cumprod(a, axis=1), (_c(3, 4),)),
    "reduce_multiply": (lambda a: nx.reduce(a, 1.0 + 0j, lambda x, y: x * y, axes=[1]),
                        lambda a: jnp.prod(a, axis=1), (_c(3, 4),)),
    "solve": (nx.linalg.solve, jnp.linalg.solve,
              (_c(3, 3) + 2 * np.eye(3, dtype=np.complex64), _c(3, seed=1))),
    "triangular_solve": (lambda a, b: nx.linalg.triangular_solve(a, b),
                         lambda a, b: jax.scipy.linalg.solve_triangular(a, b, lower=True),
                         (np.tril(_c(3, 3)) + 2 * np.eye(3, dtype=np.complex64),
                          _c(3, 2, seed=1))),
}


# each rule on one path, in rotation (both: make exhaustive)
@pytest.mark.parametrize("name,path", covering(sorted(_COMPLEX_LINEAR), list(PATHS)))
def test_complex_tangents_of_transposed_rules(name, path):
    nxf, jf, args = _COMPLEX_LINEAR[name]
    tans = tuple(_c(*np.shape(a), seed=10 + i) for i, a in enumerate(args))
    check_jvp(nxf, jf, args, tans, path, rtol=1e-4, atol=1e-5)


def test_complex_tangents_of_hermitian_factorizations_are_an_error():
    a = _c(3, 3)
    a = a @ a.conj().T + 3 * np.eye(3, dtype=np.complex64)
    with pytest.raises(NotImplementedError, match="tangent of cholesky of complex values"):
        jvp(nx.linalg.cholesky, (nx.tensor(a),), (nx.tensor(a),))
