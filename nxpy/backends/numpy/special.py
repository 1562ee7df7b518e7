"""The NumPy backend's kernels for the special functions JAX lowers to CHLO ops of their
own (``chlo.bessel_i1e``, ``chlo.zeta``, ``chlo.polygamma``): the algorithms XLA expands
those ops into (Cephes' Chebyshev series, the Euler-Maclaurin sum), evaluated in the same
precision as XLA (f64 in f64, f32 for f32 and the 16-bit types), so the NumPy backend and
the Evaluator agree with EXLA to a few ulps.
"""
from __future__ import annotations

import math

import numpy as np

from . import libm

__all__ = ["bessel_i1e", "zeta", "polygamma"]

# Cephes' Chebyshev coefficients of exp(-|x|) I1(x) / x on [0, 8] (A) and of
# exp(-x) sqrt(x) I1(x) on (8, inf] (B); f32 uses the tail of each series
_I1E_A = (
    2.77791411276104639959E-18, -2.11142121435816608115E-17, 1.55363195773620046921E-16,
    -1.10559694773538630805E-15, 7.60068429473540693410E-15, -5.04218550472791168711E-14,
    3.22379336594557470981E-13, -1.98397439776494371520E-12, 1.17361862988909016308E-11,
    -6.66348972350202774223E-11, 3.62559028155211703701E-10, -1.88724975172282928790E-9,
    9.38153738649577178388E-9, -4.44505912879632808065E-8, 2.00329475355213526229E-7,
    -8.56872026469545474066E-7, 3.47025130813767847674E-6, -1.32731636560394358279E-5,
    4.78156510755005422638E-5, -1.61760815825896745588E-4, 5.12285956168575772895E-4,
    -1.51357245063125314899E-3, 4.15642294431288815669E-3, -1.05640848946261981558E-2,
    2.47264490306265168283E-2, -5.29459812080949914269E-2, 1.02643658689847095384E-1,
    -1.76416518357834055153E-1, 2.52587186443633654823E-1)
_I1E_B = (
    7.51729631084210481353E-18, 4.41434832307170791151E-18, -4.65030536848935832153E-17,
    -3.20952592199342395980E-17, 2.96262899764595013876E-16, 3.30820231092092828324E-16,
    -1.88035477551078244854E-15, -3.81440307243700780478E-15, 1.04202769841288027642E-14,
    4.27244001671195135429E-14, -2.10154184277266431302E-14, -4.08355111109219731823E-13,
    -7.19855177624590851209E-13, 2.03562854414708950722E-12, 1.41258074366137813316E-11,
    3.25260358301548823856E-11, -1.89749581235054123450E-11, -5.58974346219658380687E-10,
    -3.83538038596423702205E-9, -2.63146884688951950684E-8, -2.51223623787020892529E-7,
    -3.88256480887769039346E-6, -1.10588938762623716291E-4, -9.76109749136146840777E-3,
    7.78576235018280120474E-1)
_I1E_F32 = (_I1E_A[-17:], _I1E_B[-7:])
_I1E_F64 = (_I1E_A, _I1E_B)

# (2k)! / B_2k for k = 12, 11, ..., 1: the Euler-Maclaurin coefficients of zeta
_ZETA_A = (-7.1661652561756670113e18, 1.8152105401943546773e17, -4.5979787224074726105e15,
           1.1646782814350067249e14, -2.950130727918164224e12, 7.47242496e10,
           -1.8924375803183791606e9, 47900160.0, -1209600.0, 30240.0, -720.0, 12.0)


def _work(x):
    """``x`` in the type XLA computes these functions in: f64 stays, the rest is f32."""
    return x.astype(np.float64 if x.dtype == np.float64 else np.float32)


def _chebyshev(x, coefficients):
    t = x.dtype.type
    b0 = b1 = b2 = np.zeros_like(x)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + t(c)
    return (b0 - b2) * t(0.5)


def bessel_i1e(x):
    """``exp(-|x|) I1(x)``: Cephes' Chebyshev series (``|x| <= 8`` and above)."""
    x = _work(x)
    t = x.dtype.type
    a, b = _I1E_F64 if x.dtype == np.float64 else _I1E_F32
    with np.errstate(all="ignore"):
        z = np.abs(x)
        small = z * _chebyshev(z * t(0.5) - t(2), a)
        large = _chebyshev(t(32) / z - t(2), b) / np.sqrt(z)
        return np.sign(x) * np.where(z <= t(8), small, large)


def zeta(x, q):
    """The Hurwitz zeta function ``sum((n + q) ** -x for n >= 0)``: nine terms, then the
    Euler-Maclaurin formula with twelve Bernoulli terms (XLA's expansion of
    ``chlo.zeta``); NaN for ``x < 1`` and for ``q <= 0`` with a fractional ``x``, +inf at
    ``x == 1`` and at the poles (integer ``q <= 0``) for an even ``x`` (NaN for an odd
    one)."""
    x, q = np.broadcast_arrays(_work(x), _work(q))
    t = x.dtype.type
    with np.errstate(all="ignore"):
        a = q
        s = libm.power(q, -x)
        for _ in range(9):
            a = a + t(1)
            s = s + libm.power(a, -x)
        a = a + t(1)
        neg_power = libm.power(a, -x)
        inv_a2 = t(1) / (a * a)
        horner = np.zeros_like(x)
        for i in range(11):
            horner = (x + t(22 - 2 * i)) * (x + t(21 - 2 * i)) * (
                inv_a2 * (horner + t(1 / _ZETA_A[i])))
        em = s + neg_power * a / (x - t(1)) + neg_power * (
            t(0.5) + (x / a) * (t(1 / _ZETA_A[11]) + horner))
        # (XLA keeps the plain sum where the tail is below the sum times the smallest
        # finite value, the most negative one: never)
        out = np.where(x < 1, t(np.nan), em)
        q_le_0 = q <= 0
        x_int = np.floor(x) == x
        out = np.where(q_le_0 & ~x_int, t(np.nan), out)
        even = x_int & (np.fmod(x, t(2)) == 0)
        out = np.where(q_le_0 & (np.floor(q) == q), np.where(even, t(np.inf), t(np.nan)), out)
        return np.where(x == 1, t(np.inf), out)


def _lgamma(v):
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


_lgamma_u = np.frompyfunc(_lgamma, 1, 1)


def polygamma(n, x, digamma):
    """``ψ⁽ⁿ⁾(x)``: ``digamma(x)`` for ``n == 0``, else ``(-1)^(n+1) n! zeta(n + 1, x)``;
    NaN unless ``n`` is a natural number. ``digamma`` is the backend's digamma kernel."""
    n, x = np.broadcast_arrays(_work(n), _work(x))
    t = x.dtype.type
    with np.errstate(all="ignore"):
        sign = t(2) * np.fmod(n, t(2)) - t(1)
        fact = np.exp(np.asarray(_lgamma_u(n.astype(np.float64) + 1), np.float64)).astype(t)
        out = sign * fact * zeta(n + t(1), x)
        out = np.where(n == 0, digamma(x).astype(t), out)
        return np.where((np.floor(n) != n) | (n < 0), t(np.nan), out)
