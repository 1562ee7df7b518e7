"""``nxpy.nn.dot_product_attention`` against ``jax.nn.dot_product_attention``: causal
self-attention, batch 8, 512 positions, 8 heads of 64, f32, forward and the gradient of a
loss of it with respect to query, key and value; both jitted, results waited for."""
from __future__ import annotations

import numpy as np

from .core import Pair, case

B, T, N, H = 8, 512, 8, 64


def _sides(gradient: bool):
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy import nn
    from nxpy.defn import grad, jit
    r = np.random.default_rng(0)
    q, k, v = (r.standard_normal((B, T, N, H)).astype(np.float32) for _ in range(3))

    def nx_attention(q, k, v):
        return nn.dot_product_attention(q, k, v, is_causal=True)

    def jax_attention(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)
    if gradient:
        nx_fn = grad(lambda q, k, v: nx.sum(nx_attention(q, k, v) ** 2), argnums=(0, 1, 2))
        jax_fn = jax.grad(lambda q, k, v: jnp.sum(jax_attention(q, k, v) ** 2),
                          argnums=(0, 1, 2))
    else:
        nx_fn, jax_fn = nx_attention, jax_attention
    nf, jf = jit(nx_fn, compiler="exla"), jax.jit(jax_fn)
    xs = [nx.tensor(a, backend="exla") for a in (q, k, v)]
    js = [jax.device_put(a, jax.devices()[0]) for a in (q, k, v)]
    got, want = nf(*xs), jf(*js)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        w = np.asarray(w)
        np.testing.assert_allclose(g.to_numpy(), w, rtol=1e-4,
                                   atol=1e-4 * np.abs(w).max())
    return ((lambda: nx.block_until_ready(nf(*xs))),
            (lambda: jax.block_until_ready(jf(*js))))


_WHAT = (f"causal, B={B}, T={T}, {N} heads of {H}, f32: nxpy.nn.dot_product_attention "
         "under jit(compiler='exla') vs jax.jit(jax.nn.dot_product_attention), device "
         "arrays, results waited for")


@case("attention_fwd", "dot_product_attention forward, causal 8x512, 8 heads of 64",
      aim=1.1, rounds=5, round_seconds=0.5)
def attention_fwd(cfg):
    n, j = _sides(gradient=False)
    return Pair(nxpy=n, jax=j, info=_WHAT)


@case("attention_grad", "dot_product_attention gradient (q, k, v), causal 8x512, 8x64",
      aim=1.1, rounds=5, round_seconds=0.5)
def attention_grad(cfg):
    n, j = _sides(gradient=True)
    return Pair(nxpy=n, jax=j, info=_WHAT + "; the gradient of sum(out ** 2)")
