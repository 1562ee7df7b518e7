"""The NumPy backend's kernels for the complex family: real, imag, conjugate, complex and
the Fourier transforms.

The transforms are Nx's binary backend's: computed in double precision (NumPy's
pocketfft), then real and imaginary parts with magnitude ``<= eps`` set to zero, then
rounded to the output type; ``fft2``/``ifft2`` are the 1-D transform along the second
axis, then along the first, each cleaned with ``eps`` (Nx's definition of the 2-D
transform). ``rfft``/``irfft`` are NumPy's real transforms, cleaned the same way (Nx's
``rfft`` is its ``fft`` sliced; its ``irfft`` the real part of an ``ifft``)."""
from __future__ import annotations

import numpy as np

from ... import types as T
from ...types import convert

__all__ = ["ComplexKernels"]


def _clean(r, eps):
    """Parts of magnitude ``<= eps`` set to zero (Nx's ``:eps``; so ``-0.0`` becomes ``0.0``)."""
    if not np.iscomplexobj(r):
        return np.where(np.abs(r) <= eps, 0, r)
    out = np.empty_like(r)
    out.real = np.where(np.abs(r.real) <= eps, 0, r.real)
    out.imag = np.where(np.abs(r.imag) <= eps, 0, r.imag)
    return out


def _transform1(a, length, axis, inverse, eps, f=None, size=None):
    """The 1-D transform of the c128 array ``a`` along ``axis``, padded or truncated to
    ``length`` (``f``: another of NumPy's transforms, whose result has ``size`` entries
    along ``axis``)."""
    shape = list(a.shape)
    shape[axis] = length if size is None else size
    if a.shape[axis] == 0 or 0 in shape:
        return np.zeros(shape)  # real zeros: the caller's output type takes them exactly
    with np.errstate(all="ignore"):
        r = (f or (np.fft.ifft if inverse else np.fft.fft))(a, n=length, axis=axis)
    return _clean(r, eps)


class ComplexKernels:
    """Mixed into :class:`~nxpy.backends.numpy.NumpyBackend` (it uses ``BaseKernels._wrap``)."""

    def real(self, out, x):
        return self._wrap(out, np.real(x.data))

    def imag(self, out, x):
        return self._wrap(out, np.imag(x.data))

    def conjugate(self, out, x):
        # a real input is converted first, so its imaginary parts are +0 and become -0
        return self._wrap(out, np.conjugate(convert(x.data, out.type)))

    def complex(self, out, re, im):
        # each part converted to the real type on its own: exact, even for inf and nan
        part = T.Type("f", out.type.bits // 2)
        r = np.empty(out.shape, out.type.dtype)
        r.real = np.broadcast_to(convert(re.data, part), out.shape)
        r.imag = np.broadcast_to(convert(im.data, part), out.shape)
        return self._wrap(out, r)

    def _fft(self, out, x, length, axis, eps, inverse):
        a = convert(x.data, out.type).astype(np.complex128)
        return self._wrap(out, _transform1(a, length, axis, inverse, eps))

    def fft(self, out, x, length, axis, eps):
        return self._fft(out, x, length, axis, eps, False)

    def ifft(self, out, x, length, axis, eps):
        return self._fft(out, x, length, axis, eps, True)

    def _fft2(self, out, x, lengths, axes, eps, inverse):
        a = convert(x.data, out.type).astype(np.complex128)
        (ax1, ax2), (l1, l2) = axes, lengths
        a = _transform1(a, l2, ax2, inverse, eps)
        return self._wrap(out, _transform1(a, l1, ax1, inverse, eps))

    def fft2(self, out, x, lengths, axes, eps):
        return self._fft2(out, x, lengths, axes, eps, False)

    def ifft2(self, out, x, lengths, axes, eps):
        return self._fft2(out, x, lengths, axes, eps, True)

    def rfft(self, out, x, length, axis, eps):
        a = convert(x.data, T.Type("f", out.type.bits // 2)).astype(np.float64)
        r = _transform1(a, length, axis, False, eps, np.fft.rfft, length // 2 + 1)
        return self._wrap(out, r)

    def irfft(self, out, x, length, axis, eps):
        # x rounded to the transform's complex type first (c128 for an f64 result, else
        # c64), as EXLA computes it; an empty axis pads to a spectrum of zeros
        a = convert(x.data, T.Type("c", 128 if out.type == T.F64 else 64)).astype(np.complex128)
        return self._wrap(out, _transform1(a, length, axis, True, eps, np.fft.irfft))
