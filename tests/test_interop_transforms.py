"""Transforms through nxpy.interop, against JAX (the oracle).

``from_jax(fn)`` under nxpy's ``jvp``/``linearize``/``jacfwd``, ``grad``, their second
orders, ``vmap`` and ``shard_map``, on the Evaluator and EXLA: the derivatives are JAX's
own (``jax.jvp``/``jax.vjp`` of ``fn``), so the functions here have JAX-side rules a
StableHLO module no longer shows (``relu`` and ``logaddexp`` at their kinks, ``gelu``,
``logsumexp``, ``stop_gradient``) and expected values that naive differentiation of the
imported graph would miss.

``to_jax(fn)`` under ``jax.vmap`` (nested too, and staying one compiled program),
``jax.jvp``/``jax.linearize``, ``jax.grad`` (all or some arguments), ``jax.jit`` of
those, and with sharded ``jax.Array`` arguments, compared with the same function written
in JAX; and the limits JAX's ``linear_call`` sets (vmap of a derivative, second orders)."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import grad, jacfwd, jit, jvp, linearize, shard_map, vmap
from nxpy.interop import from_jax, to_jax

from helpers import COMPILERS, close

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp
import jax.scipy.special


#: JAX's result: its dtypes (float0 leaves left out), atol relative to each leaf's magnitude
_close = partial(close, rtol=2e-5, atol=2e-5, dtypes=True, scaled=1)


# ----------------------------------------------------------------------------------------
# from_jax: JAX functions under nxpy's transforms
# ----------------------------------------------------------------------------------------
def _kinks(x):
    """JAX-side rules everywhere: each term's tangent differs from the naive one of the
    imported graph (relu at 0: 0, not 1/2; stop_gradient: no tangent at all)."""
    return (jax.nn.relu(x) + jnp.logaddexp(x, 0.0) + jax.nn.gelu(x)
            + x * jax.lax.stop_gradient(x) + jax.scipy.special.logsumexp(x))


def _loss(x):
    return jnp.sum(_kinks(x) ** 2)


X = np.array([0.0, -1.0, 2.0], np.float32)
T = np.array([1.0, 2.0, -1.0], np.float32)
KINKS, LOSS = from_jax(_kinks), from_jax(_loss)
# each test runs both compilers: they share the imports (JAX's lowerings), the cost here


def test_from_jax_forward_mode_is_jax_s_rule():
    x, t = nx.tensor(X), nx.tensor(T)
    want = jax.jit(lambda x, t: (*jax.jvp(_kinks, (x,), (t,)), jax.jacfwd(_kinks)(x),
                                 jax.vmap(jax.grad(jax.nn.gelu))(x)))(X, T)
    # by hand: relu' (0, 0, 1), logaddexp' sigmoid, x*sg(x)' = sg(x), softmax . t
    sig, soft = 1 / (1 + np.exp(-X)), np.exp(X) / np.exp(X).sum()
    by_hand = (np.array([0, 0, 1]) + sig + np.asarray(want[3]) + X) * T + soft @ T
    np.testing.assert_allclose(np.asarray(want[1]), by_hand, rtol=1e-5)

    def forward(x, t):
        y, ty = jvp(KINKS, (x,), (t,))
        return y, ty, linearize(KINKS, x)[1](t), jacfwd(KINKS)(x)
    for compiler in COMPILERS:
        got = jit(forward, compiler=compiler)(x, t)
        _close(got, (want[0], want[1], want[1], want[2]))


def _smooth(x):
    """Second order: logaddexp's and logsumexp's rules differentiated again by JAX."""
    return jnp.sum(jnp.logaddexp(x, 0.0) ** 2) + jax.scipy.special.logsumexp(x * x)


def test_from_jax_second_order():
    f, x, t = from_jax(_smooth), nx.tensor(X), nx.tensor(T)
    want = jax.jit(lambda x, t: (jax.jvp(jax.grad(_smooth), (x,), (t,))[1],
                                 jax.grad(lambda x: jnp.sum(jax.grad(_smooth)(x) * t))(x)))(X, T)

    def second(x, t):
        return (jvp(grad(f), (x,), (t,))[1], grad(lambda x: nx.sum(grad(f)(x) * t))(x))
    for compiler in COMPILERS:
        _close(jit(second, compiler=compiler)(x, t), want)


def test_from_jax_under_vmap():
    xs, ts = np.stack([X, T, X * 2]), np.stack([T, X, -T])
    want = jax.jit(lambda xs, ts: (jax.vmap(_kinks)(xs), jax.vmap(jax.grad(_loss))(xs),
                                   jax.vmap(lambda x, t: jax.jvp(_kinks, (x,), (t,))[1])(
                                       xs, ts)))(xs, ts)

    def batched(xs, ts):
        return (vmap(KINKS)(xs), vmap(grad(LOSS))(xs),
                vmap(lambda x, t: jvp(KINKS, (x,), (t,))[1])(xs, ts))
    for compiler in COMPILERS:
        _close(jit(batched, compiler=compiler)(nx.tensor(xs), nx.tensor(ts)), want)


def test_from_jax_in_a_shard_map():
    """Each shard runs the import for its local shape; grad through it is JAX's."""
    mesh = nx.Mesh("m", (2,), axis_names=("x",))
    xs = np.stack([X, T, X * 2, -T])
    rows = vmap(KINKS)
    f = shard_map(rows, mesh, in_specs=nx.P("x", None), out_specs=nx.P("x", None))
    _close(jit(f, compiler="exla")(nx.tensor(xs)), jax.jit(jax.vmap(_kinks))(xs))
    g = shard_map(grad(lambda a: nx.sum(rows(a))), mesh, in_specs=nx.P("x", None),
                  out_specs=nx.P("x", None))
    _close(jit(g, compiler="exla")(nx.tensor(xs)),
           jax.jit(jax.grad(lambda a: jnp.sum(jax.vmap(_kinks)(a))))(xs))


def test_from_jax_derivatives_are_cached_and_bounded():
    f = from_jax(_kinks)
    x = nx.tensor(X)
    jit(lambda x: jvp(f, (x,), (x,)))(x)
    (entry,) = f._imports.values()
    vjp_f, jvp_f = entry.derivatives
    assert (vjp_f.order, jvp_f.order) == (1, 1) and "jvp of _kinks" in repr(jvp_f)
    # first order: the derivatives are plain imports, their own derivatives never made
    assert all(e.derivatives is None for d in (vjp_f, jvp_f) for e in d._imports.values())
    jit(lambda x: jvp(f, (x,), (x,)))(nx.tensor(X * 2))        # same templates: no import
    assert len(f._imports) == 1 and len(jvp_f._imports) == 1


# ----------------------------------------------------------------------------------------
# to_jax: nxpy functions under JAX's transforms
# ----------------------------------------------------------------------------------------
def _nx_layer(w, x):
    h = nx.tanh(nx.dot(x, w))
    return {"loss": nx.sum(h ** 2), "h": h, "count": nx.tensor(3)}


def _jax_layer(w, x):
    h = jnp.tanh(x @ w)
    return {"loss": jnp.sum(h ** 2), "h": h, "count": jnp.int32(3)}


LAYER = to_jax(_nx_layer)
W = jnp.asarray(np.random.default_rng(0).standard_normal((4, 3)), jnp.float32)
XB = jnp.asarray(np.random.default_rng(1).standard_normal((5, 4)), jnp.float32)


def test_to_jax_under_jax_vmap():
    xs = jnp.stack([XB, XB * 2])
    _close(jax.vmap(LAYER, in_axes=(None, 0))(W, xs),                 # eagerly
           jax.jit(jax.vmap(_jax_layer, in_axes=(None, 0)))(W, xs))
    ws = jnp.stack([W, -W])
    _close(jax.jit(jax.vmap(LAYER))(ws, xs), jax.jit(jax.vmap(_jax_layer))(ws, xs))
    nested = jax.vmap(jax.vmap(LAYER, in_axes=(None, 0)), in_axes=(0, None))
    _close(jax.jit(nested)(ws, xs),
           jax.jit(jax.vmap(jax.vmap(_jax_layer, in_axes=(None, 0)), in_axes=(0, None)))(
               ws, xs))


def test_to_jax_vmap_stays_one_compiled_program():
    """nxpy's vmap of the function, lowered: no host callback, no loop over examples."""
    text = jax.jit(jax.vmap(LAYER, in_axes=(None, 0))).lower(W, jnp.stack([XB] * 7)).as_text()
    assert "custom_call" not in text and "stablehlo.while" not in text
    assert "7x5x3" in text                       # the batched module, with its batch axis


def test_to_jax_under_jax_jvp_and_linearize():
    tw, tx = W * 0.5, -XB
    _close(jax.jvp(LAYER, (W, XB), (tw, tx)),
           jax.jit(lambda w, x: jax.jvp(_jax_layer, (w, x), (tw, tx)))(W, XB))
    # under jit, a tangent for one argument only (the other's is a symbolic zero)
    _close(jax.jit(lambda w: jax.jvp(lambda w: LAYER(w, XB)["h"], (w,), (tw,)))(W),
           jax.jit(lambda w: jax.jvp(lambda w: _jax_layer(w, XB)["h"], (w,), (tw,)))(W))
    y, f_jvp = jax.linearize(lambda w: LAYER(w, XB)["loss"], W)
    _close((y, f_jvp(tw)),
           jax.jit(lambda w: jax.jvp(lambda w: _jax_layer(w, XB)["loss"], (w,), (tw,)))(W))


def test_to_jax_under_jax_grad():
    def through(fn):
        return lambda w, x: fn(w, x)["loss"] + 0.1 * jnp.sum(fn(w, x)["h"] ** 3)
    for wrap, argnums in [(jax.jit, (0, 1)), (jax.jit, 0), (jax.jit, 1)]:
        _close(wrap(jax.grad(through(LAYER), argnums=argnums))(W, XB),
               jax.jit(jax.grad(through(_jax_layer), argnums=argnums))(W, XB))
    _close(jax.grad(lambda w: LAYER(w, XB)["loss"])(W),                 # eagerly
           jax.jit(jax.grad(lambda w: _jax_layer(w, XB)["loss"]))(W))


def _sharded():
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:4], dtype=object).reshape(2, 2),
                             ("x", "y"))
    return lambda *spec: jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*spec))


def test_to_jax_with_sharded_arguments():
    """XLA partitions the embedded module with the rest of the program: each device
    holds the shard the same function written in JAX gives it."""
    sh = _sharded()
    x = jax.device_put(XB[:4], sh("x", None))
    w = jax.device_put(W, sh())                 # replicated
    cases = [(lambda fn: fn, "eager"), (jax.jit, "jit")]
    for wrap, what in cases:
        got, want = wrap(LAYER)(w, x)["h"], jax.jit(_jax_layer)(w, x)["h"]
        assert got.sharding.is_equivalent_to(want.sharding, 2), what
        assert len(got.addressable_shards) == 4
        for a, b in zip(sorted(got.addressable_shards, key=lambda s: s.device.id),
                        sorted(want.addressable_shards, key=lambda s: s.device.id)):
            assert a.index == b.index, what
            _close(a.data, b.data)
    g = jax.jit(jax.grad(lambda x: LAYER(w, x)["loss"]))(x)
    want = jax.jit(jax.grad(lambda x: _jax_layer(w, x)["loss"]))(x)
    assert g.sharding.is_equivalent_to(want.sharding, 2)
    _close(g, want)
    text = jax.jit(LAYER).lower(w, x).compile().as_text()
    assert "all-gather" not in text              # partitioned, not gathered


def test_to_jax_limits_of_linear_call():
    """JAX's ``linear_call`` (the tangent whose transpose is nxpy's reverse mode) has no
    batching rule and no derivative with respect to its residuals: vmap of a derivative
    and second orders raise; they are done inside nxpy instead (to_jax of nxpy's
    ``vmap(grad(fn))``)."""
    loss = to_jax(lambda w, x: _nx_layer(w, x)["loss"])
    xs = jnp.stack([XB, XB * 2])
    with pytest.raises(NotImplementedError, match="linear_call"):
        jax.vmap(jax.grad(loss), in_axes=(None, 0))(W, xs)
    with pytest.raises(AssertionError):
        jax.grad(lambda w: jnp.sum(jax.grad(loss)(w, XB)))(W)
    per_example = to_jax(vmap(grad(lambda w, x: _nx_layer(w, x)["loss"]), in_axes=(None, 0)))
    _close(per_example(W, xs),
           jax.jit(jax.vmap(jax.grad(lambda w, x: _jax_layer(w, x)["loss"]),
                           in_axes=(None, 0)))(W, xs))
