"""Forward mode: nxpy's ``jvp``, ``linearize``, ``jacfwd``, ``hessian`` and ``custom_jvp``
against JAX's.

The per-primitive check reuses the gradient test's table (``tests/test_grad.py``'s
``CASES``, one function per op written with nxpy and with ``jax.numpy``/``jax.lax``): each
case's differentiated arguments get fixed random tangents and ``jvp`` is compared with
``jax.jvp`` on two paths: ``eager`` (``jvp`` called outside a defn: the Evaluator on the
NumPy backend) and ``exla`` (``jit(..., compiler="exla")``). Then control flow, shard_map
collectives on a 2x2 mesh, ``jacfwd``/``hessian`` and ``custom_jvp``, and that every
primitive has a JVP rule or is declared to have a zero tangent.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import (custom_jvp, custom_vjp, fori_loop, grad, hessian, jacfwd, jacobian,
                       jit, jvp, linearize, scan, stop_grad, vmap, while_loop)
from nxpy.defn.jvp_rules import ENGINE, JVP_RULES, ZERO_TANGENT
from nxpy.ops import PRIMITIVES

import test_grad as TG

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax import lax

_rng = np.random.default_rng(20261127)


# ----------------------------------------------------------------------------------------
# Every primitive: the gradient test's cases under jvp
# ----------------------------------------------------------------------------------------
def _argnums(c):
    return (c.argnums,) if isinstance(c.argnums, int) else tuple(c.argnums)


def _tangent_of(a):
    a = np.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        return None
    return _rng.standard_normal(a.shape).astype(a.dtype)


_TANGENTS: dict = {}


def tangents(c):
    if c.name not in _TANGENTS:
        _TANGENTS[c.name] = [TG.tmap(_tangent_of, c.args[n]) for n in _argnums(c)]
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
        with jax.enable_x64(TG._x64(c)):
            args = TG.tmap(jnp.asarray, c.args)
            nums = _argnums(c)
            prim = [args[n] for n in nums]
            tans = [_tmap2(_jax_tangent, t, c.args[n]) for t, n in zip(tangents(c), nums)]
            out = jax.jit(lambda p, t: jax.jvp(_restricted(c.jax, c, args), p, t,
                                               has_aux=c.has_aux))(prim, tans)
            _JAX[c.name] = TG.tmap(np.asarray, out)
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
    args = TG.nx_args(c.args)
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
#: cases whose primal output nxpy computes in another type or rounding than JAX's (a
#: difference of the forward ops, not of forward mode): their values are compared in f64
_PRIMAL_DIFFERS = {"f16_unary_ops": 1e-2, "as_type_bf16_roundtrip": 3e-2}


def _params():
    for c in TG.CASES:
        if c.name in _JAX_CANNOT:
            continue
        for p in ("eager", "exla"):
            yield pytest.param(c, p, id=f"{c.name}-{p}", marks=c.marks())


def _loose(got, want, rtol):
    for g, w in zip(TG.tleaves(got), TG.tleaves(want)):
        np.testing.assert_allclose(g.to_numpy().astype(np.float64),
                                   np.asarray(w).astype(np.float64), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("c,path", list(_params()))
def test_jvp_matches_jax(c, path):
    want = jax_jvp(c)
    got = nx_jvp(c, path)
    if c.has_aux:
        got, want = got[:2], tuple(want[:2])
    if c.name in _PRIMAL_DIFFERS:
        _loose(got, want, _PRIMAL_DIFFERS[c.name])
        for y, t in zip(TG.tleaves(got[0]), TG.tleaves(got[1])):
            assert (y.type, y.shape) == (t.type, t.shape)  # a tangent is like its primal
        return
    TG.assert_same_tree(tuple(got), tuple(want), max(c.rtol, 2e-5), max(c.atol, 2e-6))


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
