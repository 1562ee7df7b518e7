"""The window family's benchmark: conv forward, 3x3 kernel, 64 channels in and out,
32x32 images, batch 16 (NCHW/OIHW, "same" padding).

* ``conv_exla``: nxpy EXLA (``jit(nx.conv, compiler="exla")``) vs ``jax.jit`` of
  ``lax.conv_general_dilated`` — the same ``stablehlo.convolution``, so the aim is 1.1x.
* ``conv_evaluator``: the Evaluator on the NumPy backend (nxpy's reference kernel: a
  strided window view and one ``einsum`` per group) vs a plain NumPy im2col + matmul
  reference written here — both are NumPy, so the ratio shows the Evaluator's overhead
  and the kernel's choice of contraction (informational).
"""
from __future__ import annotations

import numpy as np

from .core import Pair, case

SHAPES = ((16, 64, 32, 32), (64, 64, 3, 3))


def _inputs():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SHAPES[0]).astype(np.float32)
    k = rng.standard_normal(SHAPES[1]).astype(np.float32) * 0.1
    return x, k


def numpy_conv(x, k):
    """im2col + one matmul: ``same`` padding, stride 1, NCHW/OIHW."""
    n, c, h, w = x.shape
    o, _, kh, kw = k.shape
    xp = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh - 1 - kh // 2), (kw // 2, kw - 1 - kw // 2)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))  # n c h w kh kw
    cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * kh * kw)
    out = cols @ k.reshape(o, c * kh * kw).T
    return out.reshape(n, h, w, o).transpose(0, 3, 1, 2)


@case("conv_exla", "conv 3x3, 64->64 ch, 32x32, batch 16: EXLA vs jax.jit", aim=1.1,
      rounds=5, round_seconds=0.5)
def conv_exla(cfg):
    import jax
    from jax import lax
    import nxpy as nx
    from nxpy.defn import jit

    x, k = _inputs()
    nf = jit(lambda a, b: nx.conv(a, b, padding="same"), compiler="exla")
    nx_x, nx_k = nx.tensor(x, backend="exla"), nx.tensor(k, backend="exla")
    jf = jax.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME"))
    jx, jk = jax.device_put(x), jax.device_put(k)
    got, want = nf(nx_x, nx_k).to_numpy(), np.asarray(jf(jx, jk))
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3)
    return Pair(nxpy=lambda: nf(nx_x, nx_k).to_numpy(), jax=lambda: np.asarray(jf(jx, jk)),
                info="conv_exla: f32, results copied to the host on both sides")


@case("conv_evaluator", "conv 3x3, 64->64 ch, 32x32, batch 16: Evaluator vs NumPy im2col",
      rounds=3, round_seconds=0.5)
def conv_evaluator(cfg):
    import nxpy as nx
    from nxpy.defn import jit

    x, k = _inputs()
    nf = jit(lambda a, b: nx.conv(a, b, padding="same"), compiler="evaluator", backend="numpy")
    nx_x, nx_k = nx.tensor(x), nx.tensor(k)
    np.testing.assert_allclose(nf(nx_x, nx_k).to_numpy(), numpy_conv(x, k), rtol=1e-3, atol=1e-3)
    return Pair(nxpy=lambda: nf(nx_x, nx_k).to_numpy(), jax=lambda: numpy_conv(x, k),
                info="conv_evaluator: the 'JAX' column is the NumPy im2col reference")
