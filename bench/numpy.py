"""``nxpy.numpy`` against ``jax.numpy`` on 1M f32: ``quantile`` (a sort, then a gather
and the linear interpolation) and ``searchsorted`` (1M sorted values, 1M queries, JAX's
default method); both jitted, device arrays, results waited for."""
from __future__ import annotations

import numpy as np

from .core import Pair, case

N = 1_000_000


def _sides(nx_fn, jax_fn, arrays):
    import jax
    import nxpy as nx
    from nxpy.defn import jit
    nf, jf = jit(nx_fn, compiler="exla"), jax.jit(jax_fn)
    xs = [nx.tensor(a, backend="exla") for a in arrays]
    js = [jax.device_put(a, jax.devices()[0]) for a in arrays]
    np.testing.assert_allclose(nf(*xs).to_numpy(), np.asarray(jf(*js)), rtol=1e-6)
    return ((lambda: nx.block_until_ready(nf(*xs))),
            (lambda: jax.block_until_ready(jf(*js))))


@case("quantile_1m", "quantile: 1M f32, q = (0.1, 0.5, 0.9), linear (EXLA vs jax.jit)",
      aim=1.1, rounds=5, round_seconds=0.5)
def quantile_1m(cfg):
    import jax.numpy as jnp
    import nxpy.numpy as xnp
    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    q = np.array([0.1, 0.5, 0.9], np.float32)
    n, j = _sides(lambda x, q: xnp.quantile(x, q), lambda x, q: jnp.quantile(x, q), [a, q])
    return Pair(nxpy=n, jax=j, info="nxpy.numpy.quantile under jit(compiler='exla') vs "
                                    "jax.jit(jnp.quantile), results waited for")


@case("searchsorted_1m", "searchsorted: 1M queries into 1M sorted f32 (EXLA vs jax.jit)",
      aim=1.1, rounds=5, round_seconds=0.5)
def searchsorted_1m(cfg):
    import jax.numpy as jnp
    import nxpy.numpy as xnp
    r = np.random.default_rng(0)
    a = np.sort(r.standard_normal(N).astype(np.float32))
    v = r.standard_normal(N).astype(np.float32)
    n, j = _sides(lambda a, v: xnp.searchsorted(a, v), lambda a, v: jnp.searchsorted(a, v),
                  [a, v])
    return Pair(nxpy=n, jax=j, info="nxpy.numpy.searchsorted under jit(compiler='exla') vs "
                                    "jax.jit(jnp.searchsorted) (method 'scan'), results "
                                    "waited for")
