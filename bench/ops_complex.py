"""The complex family's cases: a 1-D FFT of 2**20 c64 values, a real FFT of 2**20 f32.

* ``fft_1m_c64``: ``jit(nx.fft, compiler="exla")`` against ``jax.jit(jnp.fft.fft)``, both
  on device arrays, waiting for the result: the same XLA program (one ``stablehlo.fft``),
  so the ratio is the cost of nxpy's call path around it.
* ``fft_1m_c64_evaluator``: the Evaluator (one NumPy-backend kernel: pocketfft in double
  precision, the ``eps`` clean-up, rounding to c64) against ``np.fft.fft`` on the same
  array -- in this row the JAX column is NumPy.
* ``rfft_1m_f32``: ``jit(nx.rfft, compiler="exla")`` against ``jax.jit(jnp.fft.rfft)``:
  both one ``stablehlo.fft`` of type ``RFFT``.
"""
from __future__ import annotations

import numpy as np

from .core import Pair, case

N = 1 << 20
# compiled calls: more, shorter rounds than the default, so the sides alternate finely
CALL_TIMING = dict(rounds=11, round_seconds=0.2)


def _signal():
    rng = np.random.default_rng(0)
    return (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(np.complex64)


def _exla_pair(op, a, want):
    """``jit(nx.<op>, compiler="exla")`` against ``jax.jit(jnp.fft.<op>)`` on device arrays
    ``a``, both checked against ``want`` first, each side waiting for its result."""
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.defn import jit
    x = nx.tensor(a, backend="exla")
    nf = jit(getattr(nx, op), compiler="exla")
    jx = jax.device_put(a, jax.devices()[0])
    jf = jax.jit(getattr(jnp.fft, op))
    for got in (nf(x).to_numpy(), np.asarray(jf(jx))):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-2)

    def nxpy_side():
        nx.block_until_ready(nf(x))

    def jax_side():
        jax.block_until_ready(jf(jx))

    return Pair(nxpy=nxpy_side, jax=jax_side,
                info=f"nxpy.defn.jit(nx.{op}, compiler='exla') vs jax.jit(jnp.fft.{op}), "
                     f"device arrays in, waiting for the result (block_until_ready)")


@case("fft_1m_c64", "fft: 2**20 c64 on EXLA", aim=1.1, **CALL_TIMING)
def fft_exla(cfg):
    a = _signal()
    return _exla_pair("fft", a, np.fft.fft(a.astype(np.complex128)))


@case("fft_1m_c64_evaluator", "fft: 2**20 c64, Evaluator vs NumPy (JAX column: np.fft)",
      **CALL_TIMING)
def fft_evaluator(cfg):
    import nxpy as nx
    from nxpy.defn import jit
    a = _signal()
    x = nx.tensor(a)
    nf = jit(nx.fft, compiler="evaluator")
    np.testing.assert_allclose(nf(x).to_numpy(), np.fft.fft(a), rtol=1e-4, atol=1e-2)
    return Pair(nxpy=lambda: nf(x), jax=lambda: np.fft.fft(a),
                info="jit(nx.fft, compiler='evaluator') on a NumPy-backend tensor (double "
                     "precision, eps clean-up, c64 result) vs np.fft.fft on the c64 array")


@case("rfft_1m_f32", "rfft: 2**20 f32 on EXLA", aim=1.1, **CALL_TIMING)
def rfft_exla(cfg):
    a = _signal().real.copy()
    return _exla_pair("rfft", a, np.fft.rfft(a.astype(np.float64)))
