"""The NumPy backend's convolution kernel (XLA's ``convolution``: input and kernel
dilation, padding (negative crops), strides, feature and batch groups, any layout),
summed in one order on every CPU (NumPy's einsum loops, as ``dot``)."""
from __future__ import annotations

import numpy as np

from ...types import compute_dtype, convert
from .base import BaseKernels

__all__ = ["ConvKernels"]


def _dilate(a, axes, rates):
    """Interior zero padding: ``rate - 1`` zeros between elements along ``axes``."""
    if all(r == 1 for r in rates):
        return a
    shape = list(a.shape)
    idx = [slice(None)] * a.ndim
    for ax, r in zip(axes, rates):
        shape[ax] = (a.shape[ax] - 1) * r + 1 if a.shape[ax] else 0
        idx[ax] = slice(None, None, r)
    out = np.zeros(shape, a.dtype)
    out[tuple(idx)] = a
    return out


def _pad(a, pads):
    """Edge padding on the trailing spatial dims; negative values crop."""
    lead = a.ndim - len(pads)
    a = np.pad(a, [(0, 0)] * lead + [(max(lo, 0), max(hi, 0)) for lo, hi in pads])
    crop = [slice(None)] * lead + [slice(-min(lo, 0), a.shape[lead + i] - (-min(hi, 0)))
                                   for i, (lo, hi) in enumerate(pads)]
    return a[tuple(crop)]


def conv_reference(x, k, *, strides, padding, input_dilation, kernel_dilation,
                   feature_group_size, batch_group_size, input_permutation,
                   kernel_permutation, output_permutation):
    """The convolution of NumPy arrays ``x`` and ``k`` (in their common compute dtype)."""
    x = np.transpose(x, input_permutation)        # N, C, spatial
    k = np.transpose(k, kernel_permutation)       # O, I, spatial
    n_sp = x.ndim - 2
    sp = list(range(2, 2 + n_sp))
    x = _pad(_dilate(x, sp, input_dilation), padding)
    # the kernel's dilation holes are skipped, not multiplied by zero (XLA's: an inf or NaN
    # under a hole must not turn the output NaN), so windows span the dilated extent and
    # keep every rate-th tap
    kw = [(w - 1) * r + 1 if w else 0 for w, r in zip(k.shape[2:], kernel_dilation)]
    fg, bg = feature_group_size, batch_group_size
    n, c = x.shape[:2]
    o = k.shape[0]
    out_sp = [(d - w) // s + 1 for d, w, s in zip(x.shape[2:], kw, strides)]
    # windows: N, C, out spatial..., kernel spatial...
    v = np.lib.stride_tricks.sliding_window_view(x, kw, axis=tuple(sp))
    v = v[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in strides)]
    v = v[(slice(None), slice(None)) + tuple(slice(0, m) for m in out_sp)
          + tuple(slice(None, None, r) for r in kernel_dilation)]
    g = max(fg, bg)
    og = o // g
    letters = "abcdefghijklmnopqrstuvwxyz"
    sps = letters[:n_sp]
    kss = letters[n_sp:2 * n_sp]
    parts = []
    for i in range(g):
        if bg > 1:
            xi = v[i * (n // bg):(i + 1) * (n // bg)]
        else:
            cg = c // fg
            xi = v[:, i * cg:(i + 1) * cg]
        ki = k[i * og:(i + 1) * og]
        # einsum's own loops, not BLAS (optimize=True): BLAS picks its kernels, and so its
        # order of summation, by the CPU; these sum in one order on every CPU, as dot does
        parts.append(np.einsum(f"NC{sps}{kss},OC{kss}->NO{sps}", xi, ki))
    r = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
    inv = sorted(range(r.ndim), key=lambda j: output_permutation[j])
    return np.transpose(r, inv)


class ConvKernels(BaseKernels):
    """``conv`` on NumPy arrays."""

    def conv(self, out, x, k, **opts):
        dt = compute_dtype(out.type.dtype)
        a = convert(x.data, out.type).astype(dt)
        b = convert(k.data, out.type).astype(dt)
        with np.errstate(all="ignore"):
            r = conv_reference(a, b, **opts)
        return self._wrap(out, r)
