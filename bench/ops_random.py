"""nxpy.random: 10M uniform f32 from a key, nxpy's EXLA against ``jax.jit`` (the same
threefry2x32 bits; JAX runs its rolled 5-iteration loop on CPU, nxpy the unrolled rounds),
and the Evaluator (NumPy kernels of the same u32 ops) against NumPy's own generator
(``np.random.default_rng().random``, PCG64: a different algorithm, the baseline a NumPy
user has)."""
from __future__ import annotations

import numpy as np

from .core import Pair, case

N = 10_000_000


def _nx_uniform(key):
    from nxpy import random
    return random.uniform_split(key, shape=(N,))


@case("uniform_10m", "random.uniform: 10M f32 (EXLA vs jax.jit)", aim=1.1, rounds=5,
      round_seconds=0.5)
def uniform_10m(cfg):
    import jax
    import nxpy as nx
    from nxpy import random
    from nxpy.defn import jit
    key = nx.tensor(random.key(0).to_numpy(), backend="exla")
    nf = jit(_nx_uniform, compiler="exla")
    jkey = jax.random.key_data(jax.random.key(0))
    jf = jax.jit(lambda k: jax.random.uniform(k, (N,)))
    a, b = nf(key).to_numpy(), np.asarray(jf(jkey))
    np.testing.assert_array_equal(a[:1000], b[:1000])
    np.testing.assert_array_equal(a[-1000:], b[-1000:])
    return Pair(nxpy=lambda: nx.block_until_ready(nf(key)),
                jax=lambda: jf(jkey).block_until_ready(),
                info="random.uniform_split under jit(compiler='exla') vs "
                     "jax.jit(jax.random.uniform), same bits, results waited for")


@case("uniform_10m_evaluator", "random.uniform: 10M f32 (Evaluator vs NumPy's generator)",
      rounds=3, round_seconds=0.5)
def uniform_10m_evaluator(cfg):
    from nxpy import random
    from nxpy.defn import jit
    key = random.key(0)
    nf = jit(_nx_uniform, compiler="evaluator")
    rng = np.random.default_rng(0)
    return Pair(nxpy=lambda: nf(key), jax=lambda: rng.random(N, dtype=np.float32),
                info="the 'jax' column is np.random.default_rng().random(N, float32) "
                     "(PCG64) here; the Evaluator runs threefry2x32 as ~130 NumPy u32 ops")
