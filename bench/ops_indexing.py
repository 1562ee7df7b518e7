"""The indexing family: gather of 64k rows from a 100k x 64 f32 table (an embedding
lookup), nxpy EXLA vs jax.jit, and nxpy's Evaluator vs NumPy."""
from __future__ import annotations

import numpy as np

from .core import Pair, case

ROWS, COLS, N = 100_000, 64, 65_536


def _data():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(ROWS, COLS)).astype(np.float32)
    idx = rng.integers(0, ROWS, N).astype(np.int32)
    return table, idx


def _take(m):
    return lambda t, i: m.take(t, i, axis=0)


@case("take_64k_exla", "take: 64k rows of a 100k x 64 f32 table, EXLA vs jax.jit", aim=1.1)
def take_exla(cfg):
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.defn import jit
    table, idx = _data()
    t, i = nx.tensor(table, backend="exla"), nx.tensor(idx, backend="exla")
    nf = jit(_take(nx), compiler="exla")
    dev = jax.devices()[0]
    jt, ji = jax.device_put(table, dev), jax.device_put(idx, dev)
    jf = jax.jit(lambda t, i: jnp.take(t, i, axis=0, mode="clip"))
    want = table[idx]
    np.testing.assert_array_equal(nf(t, i).to_numpy(), want)
    np.testing.assert_array_equal(np.asarray(jf(jt, ji)), want)
    return Pair(nxpy=lambda: nx.block_until_ready(nf(t, i)),
                jax=lambda: jf(jt, ji).block_until_ready(),
                info="nxpy.take vs jnp.take(mode='clip') (both clamp, one stablehlo.gather), "
                     "on device arrays, waited for")


@case("take_64k_evaluator", "take: 64k rows of 100k x 64 f32, Evaluator vs NumPy (JAX column)")
def take_evaluator(cfg):
    import nxpy as nx
    from nxpy.defn import jit
    table, idx = _data()
    t, i = nx.tensor(table), nx.tensor(idx)
    nf = jit(_take(nx), compiler="evaluator")
    np.testing.assert_array_equal(nf(t, i).to_numpy(), table[idx])
    return Pair(nxpy=lambda: nf(t, i),
                jax=lambda: np.take(table, np.clip(idx, 0, ROWS - 1), axis=0),
                info="the Evaluator running nxpy.take on NumPy tensors vs plain NumPy "
                     "np.take(table, np.clip(idx, 0, rows - 1)) in the JAX column")
