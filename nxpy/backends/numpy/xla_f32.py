"""XLA:CPU's own single-precision algorithms, in NumPy, bit for bit.

``jax.random.normal`` is ``sqrt(2) * erf_inv(u)``; XLA computes ``erf_inv`` of f32 with
Giles' single-precision polynomial over ``log1p``, and its ``log``/``log1p`` are its own
polynomials (not the C library's), every ``a * b + c`` contracted into a fused
multiply-add. The NumPy backend's f32 ``erf_inv`` follows the same steps so that
``nxpy.random.normal`` gives JAX's bits on every path. The steps (order of operations,
which products are fused, the ranges) were established against jaxlib 0.10.2: equal bits
on 3 million uniform inputs, the 5,000 floats nearest to each of ``±1``, and zeros.

A fused multiply-add of f32 values is computed in f64 and rounded once: the product of two
f32 values is exact in f64 and so is the sum in the ranges used here. Subnormal inputs are
flushed to zero, as XLA:CPU does.

>>> import numpy as np
>>> erf_inv(np.array([0.0, 0.5, -0.999, 1.0], np.float32)).tolist()  # = jax.lax.erf_inv
[0.0, 0.4769362807273865, -2.3267576694488525, inf]
"""
from __future__ import annotations

import numpy as np

__all__ = ["fma", "log", "log1p", "erf_inv"]

_F32 = np.float32
_TINY = np.finfo(np.float32).tiny

# Cephes' logf polynomial, highest degree first, in three interleaved chains
_LOG_P = [_F32(c) for c in (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1,
                            -1.2420140846e-1, 1.4249322787e-1, -1.6668057665e-1,
                            2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1)]
_LN2_LO, _LN2_HI = _F32(-2.12194440e-4), _F32(0.693359375)
# Cephes' log1p rational approximation (used for |x| < sqrt(2) - 1)
_LOG1P_NUM = (4.5270000862445199635215e-5, 4.9854102823193375972212e-1,
              6.5787325942061044846969e0, 2.9911919328553073277375e1,
              6.0949667980987787057556e1, 5.7112963590585538103336e1,
              2.0039553499201281259648e1)
_LOG1P_DEN = (1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1,
              2.2176239823732856465394e2, 3.0909872225312059774938e2,
              2.1642788614495947685003e2, 6.0118660497603843919306e1)
# Giles' single-precision erf_inv: w < 5 and w >= 5
_ERF_INV_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERF_INV_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                  0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def fma(a, b, c):
    """``a * b + c`` of f32 values, rounded once."""
    return (np.asarray(a, np.float64) * np.asarray(b, np.float64)
            + np.asarray(c, np.float64)).astype(_F32)


def _ftz(x):
    return np.where(np.abs(x) < _TINY, np.copysign(_F32(0), x), x).astype(_F32)


def _quiet(f):
    def run(x):
        with np.errstate(all="ignore"):
            return f(x)
    run.__name__, run.__doc__ = f.__name__, f.__doc__
    return run


@_quiet
def log(v):
    """XLA:CPU's f32 ``log``."""
    v = _ftz(np.asarray(v, _F32))
    m, e = np.frexp(np.maximum(v, _TINY))
    m, e = m.astype(_F32), e.astype(_F32)
    low = m < _F32(0.707106781186547524)
    e = np.where(low, e - 1, e).astype(_F32)
    x = np.where(low, (m + m) - _F32(1), m - _F32(1)).astype(_F32)
    x2 = (x * x).astype(_F32)
    x3 = (x2 * x).astype(_F32)
    p = _LOG_P
    y, y1, y2 = fma(p[0], x, p[1]), fma(p[3], x, p[4]), fma(p[6], x, p[7])
    y, y1, y2 = fma(y, x, p[2]), fma(y1, x, p[5]), fma(y2, x, p[8])
    y = fma(fma(y, x3, y1), x3, y2)
    y = fma(y, x3, (e * _LN2_LO).astype(_F32))
    r = fma(_LN2_HI, e, (fma(x2, _F32(-0.5), x) + y).astype(_F32))
    r = np.where(v == 0, _F32(-np.inf), r)
    r = np.where(v < 0, _F32(np.nan), r)
    return np.where(np.isposinf(v), v, np.where(np.isnan(v), v, r)).astype(_F32)


def _horner(x, coefficients):
    p = np.zeros_like(x)
    for c in coefficients:
        p = fma(p, x, _F32(c))
    return p


@_quiet
def log1p(x):
    """XLA:CPU's f32 ``log1p``: the rational approximation near 0, ``log(1 + x)`` else."""
    x = _ftz(np.asarray(x, _F32))
    x2 = (x * x).astype(_F32)
    r = (_horner(x, _LOG1P_NUM) / _horner(x, _LOG1P_DEN)).astype(_F32)
    small = fma(np.full_like(x2, -0.5), x2, ((x * x2).astype(_F32) * r).astype(_F32))
    small = (x + small).astype(_F32)
    return np.where(np.abs(x) < _F32(0.41421356237309504880), small,
                    log((_F32(1) + x).astype(_F32)))


@_quiet
def erf_inv(x):
    """XLA's f32 ``erf_inv`` (``±inf`` at ``±1``, NaN outside ``[-1, 1]``)."""
    x = _ftz(np.asarray(x, _F32))
    w = -log1p(-(x * x).astype(_F32))
    lt = w < _F32(5)
    w = np.where(lt, w - _F32(2.5), np.sqrt(w) - _F32(3)).astype(_F32)
    p = np.where(lt, _F32(_ERF_INV_SMALL[0]), _F32(_ERF_INV_LARGE[0])).astype(_F32)
    for a, b in zip(_ERF_INV_SMALL[1:], _ERF_INV_LARGE[1:]):
        p = fma(p, w, np.where(lt, _F32(a), _F32(b)))
    r = _ftz((p * x).astype(_F32))
    return np.where(np.abs(x) == _F32(1), x * _F32(np.inf), r).astype(_F32)
