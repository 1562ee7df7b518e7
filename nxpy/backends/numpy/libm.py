"""NumPy's functions whose float32 and complex64 results depend on the CPU, made the
same on every CPU.

NumPy picks its float32 kernels for ``exp``, ``log``, ``sin``, ``cbrt``, ``arctan2``,
... at run time by the CPU's SIMD extensions (AVX2, AVX-512, AVX512-FP16, or none), and
those kernels round differently: ``np.cbrt(np.float32(27))`` is ``3.0`` on one machine and
``2.9999998`` on the next. Its complex64 ``multiply`` fuses the products where the CPU
has FMA, and its complex ``abs`` and ``sqrt`` have SIMD kernels too. Here each is
evaluated in f64 (c128) and rounded once to f32 (c64). A float64 kernel of any CPU is
within a few ulps of the exact value, 2**29 times finer than an f32 ulp, so the rounded
result is the correctly rounded one, the same everywhere, unless the exact value lies
within a few f64 ulps of the midpoint between two f32 values (about one input in 10**8).
f16 and bf16 reach these functions as f32 (the backend's compute type) and are rounded
from that. f64 and c128 results are NumPy's own: within 4 ulps of the C library's (3 for
NumPy's AVX-512 kernels, which differ between CPUs by up to that), so tests compare f64
results within a tolerance, never their bits (docs/guarantees.md, "Results on every
CPU"; tests/test_cpu_independence.py).

>>> import numpy as np
>>> float(cbrt(np.float32(27))), float(arctan2(np.float32(-1), np.float32(1)))
(3.0, -0.7853981852531433)
>>> exp(np.array([0.5], np.float32)).dtype, absolute(np.array([3 + 4j], np.complex64)).dtype
(dtype('float32'), dtype('float32'))
"""
from __future__ import annotations

import numpy as np

__all__ = ["WIDE", "NARROW", "widened", "for_dtype", "FUNCTIONS", "exp", "expm1", "log",
           "log1p", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
           "arcsinh", "arccosh", "arctanh", "cbrt", "arctan2", "power", "multiply",
           "absolute", "sqrt", "prod", "cumprod"]

#: the type each narrower type is evaluated in
WIDE = {np.dtype(np.float32): np.dtype(np.float64), np.dtype(np.complex64): np.dtype(np.complex128)}
#: the type a wide result is rounded back to
NARROW = {w: n for n, w in WIDE.items()}


def widened(f, kinds="fc"):
    """``f`` evaluated in f64 (c128) for f32 (c64) arrays and its result rounded back to
    f32 (c64), for arguments of the kinds ``kinds`` (``"c"``: complex only); as it is for
    every other type. The arguments share one type (the backend converts operands to
    their compute type first); keywords go to ``f`` (a ``dtype`` one widened too)."""
    def wide(*xs, **kw):
        dt = getattr(xs[0], "dtype", None)
        w = WIDE.get(dt)
        if w is None or dt.kind not in kinds:
            return f(*xs, **kw)
        if "dtype" in kw:
            kw = {**kw, "dtype": w}
        r = np.asarray(f(*(np.asarray(x, w) for x in xs), **kw))
        return r.astype(NARROW.get(r.dtype, r.dtype))
    wide.__name__ = wide.__qualname__ = getattr(f, "__name__", "wide")
    wide.__doc__ = f"``np.{wide.__name__}``, the same on every CPU below f64 (libm.widened)."
    wide.raw, wide.kinds = f, kinds
    return wide


def for_dtype(f, dtype):
    """What ``f`` (a :func:`widened` function or any other) computes arrays of ``dtype``
    with: the wrapped function itself where it would not widen them (no Python frame on
    the backend's fast path).

    >>> for_dtype(multiply, np.dtype(np.float32)) is np.multiply
    True
    >>> for_dtype(multiply, np.dtype(np.complex64)) is multiply
    True
    """
    raw = getattr(f, "raw", None)
    if raw is None or (dtype in WIDE and dtype.kind in f.kinds):
        return f
    return raw


exp, expm1, log, log1p = (widened(f) for f in (np.exp, np.expm1, np.log, np.log1p))
sin, cos, tan = (widened(f) for f in (np.sin, np.cos, np.tan))
arcsin, arccos, arctan = (widened(f) for f in (np.arcsin, np.arccos, np.arctan))
sinh, cosh, tanh = (widened(f) for f in (np.sinh, np.cosh, np.tanh))
arcsinh, arccosh, arctanh = (widened(f) for f in (np.arcsinh, np.arccosh, np.arctanh))
cbrt, arctan2, power = (widened(f) for f in (np.cbrt, np.arctan2, np.power))
# exact in IEEE arithmetic for real arrays, SIMD-dependent for complex ones (NumPy's
# complex multiply fuses its products where the CPU has FMA; abs and sqrt are its own)
multiply, absolute, sqrt = (widened(f, "c") for f in (np.multiply, np.absolute, np.sqrt))
prod, cumprod = widened(np.prod, "c"), widened(np.cumprod, "c")

#: NumPy's name → this module's function
FUNCTIONS = {f.__name__: f for f in (exp, expm1, log, log1p, sin, cos, tan, arcsin, arccos,
                                      arctan, sinh, cosh, tanh, arcsinh, arccosh, arctanh,
                                      cbrt, arctan2, power)}
