"""nxpy.interop against JAX: optax's AdamW called through ``from_jax`` inside an nxpy
step, and an nxpy function called through ``to_jax`` inside ``jax.jit``, each against the
same computation written in JAX; both sides jitted, on device arrays, results waited for.

* ``interop_optax_adamw``: ``optax.adamw(1e-3).update`` and ``optax.apply_updates`` over
  a 10M-parameter pytree (10 leaves of 1000x1000 f32): ``jit(step, compiler="exla")``
  with both called through ``from_jax`` (lowered by JAX, inlined into nxpy's program) vs
  ``jax.jit`` of the same step.
* ``interop_to_jax_jit``: ``sum(tanh(x @ w) ** 2)`` over 256x512 @ 512x512 f32, written in
  nxpy and called through ``to_jax`` inside ``jax.jit`` (the module embedded in JAX's
  program) vs the same function in ``jax.numpy``.
"""
from __future__ import annotations

import numpy as np

from .core import Pair, case

LEAVES, SIDE = 10, 1000          # 10 x 1000 x 1000 = 10M parameters


def _tree_close(got, want, rtol):
    import jax
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        g = g.to_numpy() if hasattr(g, "to_numpy") else np.asarray(g)
        w = np.asarray(w)
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * max(np.abs(w).max(), 1e-30))


@case("interop_optax_adamw", "optax AdamW update, 10M-param pytree, from_jax in an nxpy step",
      aim=1.1, rounds=7, round_seconds=0.5)
def optax_adamw(cfg):
    import jax
    import optax
    import nxpy as nx
    from nxpy.defn import jit
    from nxpy.interop import from_jax
    tx = optax.adamw(1e-3, weight_decay=1e-4)
    r = np.random.default_rng(0)
    side = 100 if cfg.quick else SIDE
    params = {f"w{i}": r.standard_normal((side, side)).astype(np.float32)
              for i in range(LEAVES)}
    grads = {k: r.standard_normal(v.shape).astype(np.float32) for k, v in params.items()}
    state = tx.init(params)
    update, apply_updates = from_jax(tx.update), from_jax(optax.apply_updates)

    def nx_step(params, grads, state):
        updates, state = update(grads, state, params)
        return apply_updates(params, updates), state

    def jax_step(params, grads, state):
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state
    nf, jf = jit(nx_step, compiler="exla"), jax.jit(jax_step)
    dev = jax.devices()[0]
    xs = jax.tree_util.tree_map(lambda a: nx.tensor(np.asarray(a), backend="exla"),
                                (params, grads, state))
    js = jax.device_put((params, grads, state), dev)
    _tree_close(nf(*xs), jf(*js), rtol=1e-6)
    return Pair(nxpy=lambda: nx.block_until_ready(nf(*xs)),
                jax=lambda: jax.block_until_ready(jf(*js)),
                info=f"{LEAVES} leaves of {side}x{side} f32: optax.adamw's update and "
                     "apply_updates through from_jax inside jit(compiler='exla') vs "
                     "jax.jit of the same step; params, grads and state as device arrays")


@case("interop_to_jax_jit", "to_jax function inside jax.jit vs the same function in JAX",
      aim=1.2, rounds=15, round_seconds=0.1)
def to_jax_jit(cfg):
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.interop import to_jax
    r = np.random.default_rng(1)
    w = r.standard_normal((512, 512)).astype(np.float32) / 20
    x = r.standard_normal((256, 512)).astype(np.float32)
    layer = to_jax(lambda w, x: nx.sum(nx.tanh(nx.dot(x, w)) ** 2))
    nf = jax.jit(lambda w, x: layer(w, x) * 0.5)
    jf = jax.jit(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2) * 0.5)
    dev = jax.devices()[0]
    w, x = jax.device_put(w, dev), jax.device_put(x, dev)
    np.testing.assert_allclose(np.asarray(nf(w, x)), np.asarray(jf(w, x)), rtol=1e-5)
    return Pair(nxpy=lambda: jax.block_until_ready(nf(w, x)),
                jax=lambda: jax.block_until_ready(jf(w, x)),
                info="sum(tanh(x @ w) ** 2) * 0.5, x 256x512, w 512x512 f32: the nxpy "
                     "function through to_jax inside jax.jit vs jax.numpy inside jax.jit")
