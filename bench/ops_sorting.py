"""The sorting family: a sort and a cumulative sum of 1M f32, nxpy's EXLA against
``jax.jit`` (the same task; nxpy sorts packed integer keys, see docs/ops_sorting.md), and
the Evaluator (NumPy kernels) against NumPy itself."""
from __future__ import annotations

import numpy as np

from .core import Pair, case

N = 1_000_000


def _data():
    return np.random.default_rng(0).standard_normal(N).astype(np.float32)


def _exla_sides(nx_fn, jax_fn, np_fn):
    import jax
    import nxpy as nx
    from nxpy.defn import jit
    a = _data()
    x = nx.tensor(a, backend="exla")
    nf = jit(nx_fn, compiler="exla")
    jx = jax.device_put(a, jax.devices()[0])
    jf = jax.jit(jax_fn)
    np.testing.assert_allclose(nf(x).to_numpy(), np_fn(a), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(np.asarray(jf(jx)), np_fn(a), rtol=1e-4, atol=1e-2)
    return (lambda: nx.block_until_ready(nf(x))), (lambda: jf(jx).block_until_ready())


def _evaluator_sides(nx_fn, np_fn):
    import nxpy as nx
    from nxpy.defn import jit
    a = _data()
    x = nx.tensor(a)
    nf = jit(nx_fn, compiler="evaluator")
    np.testing.assert_allclose(nf(x).to_numpy(), np_fn(a), rtol=1e-4, atol=1e-2)
    return (lambda: nf(x)), (lambda: np_fn(a))


def _nx_sort(x):
    import nxpy as nx
    return nx.sort(x)


def _nx_cumsum(x):
    import nxpy as nx
    return nx.cumulative_sum(x)


@case("sort_1m", "sort: 1M f32 (EXLA vs jax.jit)", aim=1.1, rounds=3, round_seconds=0.5)
def sort_1m(cfg):
    import jax.numpy as jnp
    n, j = _exla_sides(_nx_sort, jnp.sort, np.sort)
    return Pair(nxpy=n, jax=j, info="nx.sort under jit(compiler='exla') vs jax.jit(jnp.sort), "
                                    "results waited for")


@case("cumsum_1m", "cumulative_sum: 1M f32 (EXLA vs jax.jit)", aim=1.1)
def cumsum_1m(cfg):
    import jax.numpy as jnp
    n, j = _exla_sides(_nx_cumsum, jnp.cumsum, np.cumsum)
    return Pair(nxpy=n, jax=j, info="nx.cumulative_sum under jit(compiler='exla') vs "
                                    "jax.jit(jnp.cumsum), results waited for")


@case("sort_1m_evaluator", "sort: 1M f32 (Evaluator vs NumPy)", rounds=3, round_seconds=0.5)
def sort_1m_evaluator(cfg):
    n, j = _evaluator_sides(_nx_sort, np.sort)
    return Pair(nxpy=n, jax=j, info="the 'jax' column is np.sort (quicksort) here; the "
                                    "Evaluator sorts packed int64 keys (np.sort)")


@case("cumsum_1m_evaluator", "cumulative_sum: 1M f32 (Evaluator vs NumPy)")
def cumsum_1m_evaluator(cfg):
    n, j = _evaluator_sides(_nx_cumsum, np.cumsum)
    return Pair(nxpy=n, jax=j, info="the 'jax' column is np.cumsum here")
