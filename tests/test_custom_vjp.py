"""custom_vjp against jax.custom_vjp: under grad, jit on the Evaluator and EXLA, and vmap."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import custom_vjp, grad, value_and_grad, vmap

from helpers import COMPILERS, close, on

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp


# --- clipped gradient --------------------------------------------------------------------
@custom_vjp
def clip_gradient(lo, hi, x):
    return x


clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                     lambda res, g: (None, None, nx.clip(g, res[0], res[1])))


@jax.custom_vjp
def j_clip_gradient(lo, hi, x):
    return x


j_clip_gradient.defvjp(lambda lo, hi, x: (x, (lo, hi)),
                       lambda res, g: (None, None, jnp.clip(g, res[0], res[1])))

X = np.array([0.3, -1.2, 2.0, 0.5], np.float32)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_clip_gradient(compiler):
    def f(x):
        return nx.sum(nx.sin(clip_gradient(-0.5, 0.5, x * 3.0)))
    def jf(x):
        return jnp.sum(jnp.sin(j_clip_gradient(-0.5, 0.5, x * 3.0)))
    close(on(compiler, grad(f))(nx.tensor(X)), jax.grad(jf)(X), rtol=1e-5, atol=1e-6)
    close(on(compiler, f)(nx.tensor(X)), jf(X), rtol=1e-5, atol=1e-6)


# --- a numerically stable log1pexp --------------------------------------------------------
@custom_vjp
def log1pexp(x):
    return nx.log(1.0 + nx.exp(x))


def _l_fwd(x):
    return log1pexp(x), x


log1pexp.defvjp(_l_fwd, lambda x, g: (g * (1.0 - 1.0 / (1.0 + nx.exp(x))),))


@jax.custom_vjp
def j_log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


j_log1pexp.defvjp(lambda x: (j_log1pexp(x), x),
                  lambda x, g: (g * (1.0 - 1.0 / (1.0 + jnp.exp(x))),))

BIG = np.array([1.0, 10.0, 100.0], np.float32)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_log1pexp_is_finite(compiler):
    got = on(compiler, grad(lambda x: nx.sum(log1pexp(x))))(nx.tensor(BIG))
    want = jax.grad(lambda x: jnp.sum(j_log1pexp(x)))(BIG)
    assert np.isfinite(np.asarray(want)).all()
    close(got, want, rtol=1e-5, atol=1e-6)


def test_eager_and_value_and_grad():
    v, g = value_and_grad(lambda x: nx.sum(log1pexp(x)))(nx.tensor(BIG))
    jv, jg = jax.value_and_grad(lambda x: jnp.sum(j_log1pexp(x)))(BIG)
    close(v, jv, rtol=1e-5, atol=1e-4)
    close(g, jg, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_vmap_of_grad_and_grad_of_vmap(compiler):
    xs = np.stack([BIG, -BIG, BIG / 7]).astype(np.float32)
    def f(x):
        return nx.sum(log1pexp(x) * x)
    def jf(x):
        return jnp.sum(j_log1pexp(x) * x)
    close(on(compiler, vmap(grad(f)))(nx.tensor(xs)), jax.vmap(jax.grad(jf))(xs), rtol=1e-4,
          atol=1e-6)
    g = grad(lambda x: nx.sum(vmap(f)(x)))
    jg = jax.grad(lambda x: jnp.sum(jax.vmap(jf)(x)))
    close(on(compiler, g)(nx.tensor(xs)), jg(xs), rtol=1e-4, atol=1e-6)
    close(on(compiler, vmap(log1pexp))(nx.tensor(xs)), jax.vmap(j_log1pexp)(xs), rtol=1e-5,
          atol=1e-4)


# --- containers, several outputs, nondiff_argnums, None cotangents ----------------------
@partial(custom_vjp, nondiff_argnums=(0,))
def scaled_pair(k, p):
    return {"u": p["a"] * p["b"], "v": nx.sin(p["a"])}


def _sp_fwd(k, p):
    return scaled_pair(k, p), (p["a"], p["b"])


def _sp_bwd(k, res, g):
    a, b = res
    return ({"a": k * (g["u"] * b + g["v"] * nx.cos(a)), "b": None},)


scaled_pair.defvjp(_sp_fwd, _sp_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def j_scaled_pair(k, p):
    return {"u": p["a"] * p["b"], "v": jnp.sin(p["a"])}


def _jsp_bwd(k, res, g):
    a, b = res
    return ({"a": k * (g["u"] * b + g["v"] * jnp.cos(a)), "b": jnp.zeros_like(b)},)


j_scaled_pair.defvjp(lambda k, p: (j_scaled_pair(k, p), (p["a"], p["b"])), _jsp_bwd)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_containers_and_nondiff_argnums(compiler):
    a, b = np.array([0.5, 1.5], np.float32), np.array([2.0, -1.0], np.float32)

    def f(p):
        o = scaled_pair(3.0, p)
        return nx.sum(o["u"] * 2.0 + o["v"])

    def jf(p):
        o = j_scaled_pair(3.0, p)
        return jnp.sum(o["u"] * 2.0 + o["v"])
    got = on(compiler, grad(f))({"a": nx.tensor(a), "b": nx.tensor(b)})
    want = jax.grad(jf)({"a": a, "b": b})
    close(got["a"], want["a"], rtol=1e-5, atol=1e-6)
    close(got["b"], want["b"], rtol=1e-5, atol=1e-6)


def test_undifferentiated_calls_f_and_errors():
    calls = []

    @custom_vjp
    def f(x):
        calls.append("f")
        return x * 2.0
    with pytest.raises(AttributeError, match="defvjp"):
        f(nx.tensor(1.0))
    f.defvjp(lambda x: (calls.append("fwd") or x * 2.0, None), lambda r, g: (g,))
    assert f(nx.tensor(1.0)).tolist() == 2.0 and calls == ["f"]
    assert grad(lambda x: f(x))(nx.tensor(1.0)).tolist() == 1.0 and calls[-1] == "fwd"
    f.defvjp(lambda x: (x, None), lambda r, g: g)
    with pytest.raises(ValueError, match="tuple of 1 cotangent"):
        grad(lambda x: f(x))(nx.tensor(1.0))
    with pytest.raises(TypeError, match="pair"):
        f.defvjp(lambda x: x, lambda r, g: (g,))
        grad(lambda x: f(x))(nx.tensor(1.0))
