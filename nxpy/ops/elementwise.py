"""Elementwise ops: the unary and binary tables (one line per op: its type rule and the
kinds it accepts), plus select, clip, bitcast and Python's ``//`` and ``%``. Each op's
docstring is composed from its row and its row of ``DOCS`` (description, formula, example).

>>> import nxpy as nx
>>> str((nx.tensor([1, 2], type="s8") + 1).type)   # Python scalars are weak
's8'
>>> str((nx.tensor([1, 2]) * 0.5).type)           # int with float gives float
'f32'
>>> nx.floor_divide(-7, 2).tolist(), nx.quotient(-7, 2).tolist()
(-4, -3)
"""
from __future__ import annotations

import textwrap

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_binary_operands, _out, as_type, check_kind, dispatch, dispatch_multi,
                   kind_ok, primitive, to_tensor)

# ----------------------------------------------------------------------------------------
# Op tables: the elementwise families, one line per op (type rule, accepted kinds).
#   type rules: same | float (ints→f32) | pred | real (complex→float)
#   kinds: any | num (no pred) | real (no complex) | int (integers and pred) | intonly
#          (integers)
# ----------------------------------------------------------------------------------------
UNARY = {
    "negate": ("same", "num"), "abs": ("real", "any"), "sign": ("same", "num"),
    "floor": ("same", "real"), "ceil": ("same", "real"), "round": ("same", "real"),
    "exp": ("float", "any"), "expm1": ("float", "any"), "log": ("float", "any"),
    "log1p": ("float", "any"), "sqrt": ("float", "any"), "rsqrt": ("float", "any"),
    "cbrt": ("float", "real"), "sin": ("float", "any"), "cos": ("float", "any"),
    "tan": ("float", "any"), "asin": ("float", "real"), "acos": ("float", "real"),
    "atan": ("float", "real"), "sinh": ("float", "real"), "cosh": ("float", "real"),
    "tanh": ("float", "any"), "asinh": ("float", "real"), "acosh": ("float", "real"),
    "atanh": ("float", "real"), "sigmoid": ("float", "real"), "erf": ("float", "real"),
    "erfc": ("float", "real"), "erf_inv": ("float", "real"), "lgamma": ("float", "real"),
    "digamma": ("float", "real"), "bessel_i1e": ("float", "real"),
    "is_nan": ("pred", "any"), "is_infinity": ("pred", "any"),
    "bitwise_not": ("same", "int"), "logical_not": ("pred", "any"),
}

#   type rules: merge | float | compare (→pred, computed in the merged type) | logical
BINARY = {
    "add": ("merge", "any"), "subtract": ("merge", "any"), "multiply": ("merge", "any"),
    "divide": ("float", "any"), "quotient": ("merge", "intonly"), "remainder": ("merge", "real"),
    "pow": ("merge", "any"), "atan2": ("float", "real"), "min": ("merge", "real"),
    "max": ("merge", "real"), "bitwise_and": ("merge", "int"), "bitwise_or": ("merge", "int"),
    "bitwise_xor": ("merge", "int"), "left_shift": ("merge", "intonly"),
    "right_shift": ("merge", "intonly"), "next_after": ("float", "real"),
    "zeta": ("float", "real"), "polygamma": ("float", "real"),
    "equal": ("compare", "any"), "not_equal": ("compare", "any"), "less": ("compare", "real"),
    "less_equal": ("compare", "real"), "greater": ("compare", "real"),
    "greater_equal": ("compare", "real"),
    "logical_and": ("logical", "any"), "logical_or": ("logical", "any"),
    "logical_xor": ("logical", "any"),
}
# arithmetic on two preds computes in u8, as Nx (which has no boolean type) does
_ARITH_ON_PRED = {"add", "subtract", "multiply", "pow", "remainder", "quotient"}

# ----------------------------------------------------------------------------------------
# The ops' docstrings, composed by _doc from a row here and the op's row above (whose type
# rule and kinds give the types sentence): op -> (what it computes, in one line; its
# formula and edge behaviour; a doctest expression; its printed value). An op of UNARY or
# BINARY without a row here stops the import (tests/test_ops.py checks the converse).
# ----------------------------------------------------------------------------------------
DOCS = {
    # unary
    "negate": ("The negation of ``x`` (Python's unary ``-`` on tensors).",
               "``negate(x) = -x``; integers wrap around: ``negate(-128)`` is ``-128`` in "
               "s8, and unsigned values negate modulo 2^bits.",
               'nx.negate(nx.tensor([1, -128], type="s8")).tolist()', "[-1, -128]"),
    "abs": ("The absolute value of ``x``; for complex ``x``, its magnitude.",
            "``abs(x) = |x|``, ``abs(a + bi) = sqrt(a^2 + b^2)``; signed integers wrap: "
            "``abs(-128)`` is ``-128`` in s8.",
            "nx.abs(nx.tensor([3 + 4j, -2])).tolist()", "[5.0, 2.0]"),
    "sign": ("The sign of ``x``: -1, 0 or 1; for complex ``x``, ``x / |x|``.",
             "``sign(0) = 0`` (complex 0 too), NaN stays NaN, and a complex ``x`` with an "
             "infinite part gives NaN; unsigned integers give 0 or 1.",
             "nx.sign(nx.tensor([-2.5, 0.0, 3.0])).tolist()", "[-1.0, 0.0, 1.0]"),
    "floor": ("The largest integer not greater than ``x``.",
              "``floor(-1.5) = -2``; integers are returned as they are, NaN and ±inf stay.",
              "nx.floor(nx.tensor([-1.5, 1.5])).tolist()", "[-2.0, 1.0]"),
    "ceil": ("The smallest integer not less than ``x``.",
             "``ceil(-1.5) = -1``; integers are returned as they are, NaN and ±inf stay.",
             "nx.ceil(nx.tensor([-1.5, 1.5])).tolist()", "[-1.0, 2.0]"),
    "round": ("``x`` rounded to the nearest integer, halves away from zero (as Nx).",
              "``round(2.5) = 3`` and ``round(-0.5) = -1`` (not to even, as NumPy's "
              "``round``); integers are returned as they are, NaN and ±inf stay.",
              "nx.round(nx.tensor([0.5, 1.5, 2.5, -2.5])).tolist()", "[1.0, 2.0, 3.0, -3.0]"),
    "exp": ("The exponential of ``x``.",
            "``exp(x) = e^x``; ``exp(-inf) = 0``, and large ``x`` overflows to inf.",
            'nx.exp(nx.tensor([0.0, float("-inf")])).tolist()', "[1.0, 0.0]"),
    "expm1": ("``e^x - 1``, accurate for ``x`` near 0.",
              "``expm1(x) = e^x - 1`` without the cancellation of ``exp(x) - 1``, which is 0 "
              "in f32 for ``x = 1e-10``.",
              "(nx.expm1(1e-10) * 1e10).tolist(), (nx.exp(1e-10) - 1).tolist()", "(1.0, 0.0)"),
    "log": ("The natural logarithm of ``x``.",
            "``log(x) = ln(x)``; ``log(0) = -inf`` and a negative real gives NaN; complex "
            "``x`` gives the principal value (``log(-1 + 0i) = πi``).",
            "nx.log(nx.tensor([1.0, 0.0, -1.0])).tolist()", "[0.0, -inf, nan]"),
    "log1p": ("``ln(1 + x)``, accurate for ``x`` near 0.",
              "``log1p(x) = ln(1 + x)`` without the rounding of ``1 + x`` (``log(1 + 1e-10)`` "
              "is 0 in f32); ``log1p(-1) = -inf``, below -1 NaN.",
              "(nx.log1p(1e-10) * 1e10).tolist(), nx.log(1 + 1e-10).tolist()", "(1.0, 0.0)"),
    "sqrt": ("The square root of ``x``.",
             "``sqrt(x) = x^(1/2)``; a negative real gives NaN; complex ``x`` gives the "
             "principal root (``sqrt(-4 + 0i) = 2i``).",
             "nx.sqrt(nx.tensor([4.0, 0.25, -1.0])).tolist()", "[2.0, 0.5, nan]"),
    "rsqrt": ("The reciprocal square root of ``x``.",
              "``rsqrt(x) = 1 / sqrt(x)``; ``rsqrt(0) = inf``, a negative real gives NaN.",
              "nx.rsqrt(nx.tensor([4.0, 0.0, -1.0])).tolist()", "[0.5, inf, nan]"),
    "cbrt": ("The cube root of ``x``.",
             "``cbrt(x) = x^(1/3)`` for real ``x``, the sign kept: ``cbrt(-8) = -2`` (where "
             "``pow(-8.0, 1/3)`` is NaN).",
             "nx.cbrt(nx.tensor([-8, 27])).tolist()", "[-2.0, 3.0]"),
    "sin": ("The sine of ``x`` (in radians).",
            "``sin(±inf)`` is NaN.",
            "nx.sin(nx.tensor([0.0, 1.5707963267948966])).tolist()", "[0.0, 1.0]"),
    "cos": ("The cosine of ``x`` (in radians).",
            "``cos(±inf)`` is NaN.",
            "nx.cos(nx.tensor([0.0, 3.141592653589793])).tolist()", "[1.0, -1.0]"),
    "tan": ("The tangent of ``x`` (in radians).",
            "``tan(x) = sin(x) / cos(x)``; ``tan(±inf)`` is NaN, and near odd multiples of "
            "π/2 it is large but finite (π/2 has no exact float).",
            "nx.tan(nx.tensor([0.0, 0.7853981633974483])).tolist()", "[0.0, 1.0]"),
    "asin": ("The inverse sine (arcsine) of ``x``, in radians.",
             "Defined on [-1, 1], with values in [-π/2, π/2]; outside it NaN.",
             "nx.asin(nx.tensor([0.0, 1.0, 2.0])).tolist()", "[0.0, 1.5707963705062866, nan]"),
    "acos": ("The inverse cosine (arccosine) of ``x``, in radians.",
             "Defined on [-1, 1], with values in [0, π]; outside it NaN.",
             "nx.acos(nx.tensor([1.0, -1.0, 2.0])).tolist()", "[0.0, 3.1415927410125732, nan]"),
    "atan": ("The inverse tangent (arctangent) of ``x``, in radians.",
             "Values in [-π/2, π/2]: ``atan(±inf) = ±π/2``; ``atan2`` gives the angle of a "
             "point in all four quadrants.",
             'nx.atan(nx.tensor([0.0, float("inf")])).tolist()', "[0.0, 1.5707963705062866]"),
    "sinh": ("The hyperbolic sine of ``x``.",
             "``sinh(x) = (e^x - e^-x) / 2``; it overflows to ±inf for large ``|x|``.",
             'nx.sinh(nx.tensor([0.0, float("-inf")])).tolist()', "[0.0, -inf]"),
    "cosh": ("The hyperbolic cosine of ``x``.",
             "``cosh(x) = (e^x + e^-x) / 2 >= 1``; it overflows to inf for large ``|x|``.",
             'nx.cosh(nx.tensor([0.0, float("-inf")])).tolist()', "[1.0, inf]"),
    "tanh": ("The hyperbolic tangent of ``x``.",
             "``tanh(x) = (e^x - e^-x) / (e^x + e^-x)``, in [-1, 1]: ``tanh(±inf) = ±1``.",
             'nx.tanh(nx.tensor([0.0, float("inf"), float("-inf")])).tolist()',
             "[0.0, 1.0, -1.0]"),
    "asinh": ("The inverse hyperbolic sine of ``x``.",
              "``asinh(x) = ln(x + sqrt(x^2 + 1))``, defined for every real ``x``.",
              'nx.asinh(nx.tensor([0.0, float("inf")])).tolist()', "[0.0, inf]"),
    "acosh": ("The inverse hyperbolic cosine of ``x``.",
              "``acosh(x) = ln(x + sqrt(x^2 - 1))``, defined on [1, inf); below 1 NaN.",
              "nx.acosh(nx.tensor([1.0, 0.5])).tolist()", "[0.0, nan]"),
    "atanh": ("The inverse hyperbolic tangent of ``x``.",
              "``atanh(x) = ln((1 + x) / (1 - x)) / 2``, finite on (-1, 1); "
              "``atanh(±1) = ±inf``, and beyond NaN.",
              "nx.atanh(nx.tensor([0.0, 1.0, 2.0])).tolist()", "[0.0, inf, nan]"),
    "sigmoid": ("The logistic sigmoid of ``x``.",
                "``sigmoid(x) = 1 / (1 + e^-x)``, in [0, 1]: ``sigmoid(0) = 0.5``, "
                "``sigmoid(-inf) = 0``, ``sigmoid(inf) = 1``.",
                'nx.sigmoid(nx.tensor([0.0, float("-inf"), float("inf")])).tolist()',
                "[0.5, 0.0, 1.0]"),
    "erf": ("The error function of ``x``.",
            "``erf(x) = 2/sqrt(π) * integral of e^(-t^2) from 0 to x``, odd, in [-1, 1]: "
            "``erf(±inf) = ±1``.",
            'nx.erf(nx.tensor([0.0, float("inf"), float("-inf")])).tolist()',
            "[0.0, 1.0, -1.0]"),
    "erfc": ("The complementary error function of ``x``.",
             "``erfc(x) = 1 - erf(x)``, in [0, 2], without the cancellation of ``1 - erf(x)`` "
             "for large ``x`` (``erfc(5)`` is about 1.5e-12).",
             'nx.erfc(nx.tensor([0.0, float("-inf"), float("inf")])).tolist()',
             "[1.0, 2.0, 0.0]"),
    "erf_inv": ("The inverse error function: ``erf_inv(erf(x)) = x``.",
                "Finite on the open interval (-1, 1); ``erf_inv(±1) = ±inf``, and outside "
                "[-1, 1] NaN.",
                "nx.erf_inv(nx.tensor([0.0, 1.0, -1.0, 2.0])).tolist()",
                "[0.0, inf, -inf, nan]"),
    "lgamma": ("The logarithm of the absolute value of the gamma function of ``x``.",
               "``lgamma(x) = log|Γ(x)|`` (``jax.lax.lgamma``): +inf at 0 and the negative "
               "integers (the poles) and at ±inf. On XLA it is the ``chlo.lgamma`` JAX emits "
               "(a Lanczos approximation), a few ulps from the exact value, and about 1e-7 "
               "rather than 0 at 1 and 2 in f32.",
               "nx.lgamma(nx.tensor([3.0, 0.0, -1.0], type='f64')).tolist()",
               "[0.693147180559945, inf, inf]"),
    "digamma": ("The digamma function, the derivative of ``lgamma``.",
                "``digamma(x) = Γ'(x) / Γ(x)`` (``jax.lax.digamma``): NaN at 0 (on every "
                "jaxlib: 0.12's XLA gives -inf there), at the negative integers and at "
                "-inf, +inf at +inf; ``digamma(1)`` is minus "
                "the Euler-Mascheroni constant. Its derivative is the trigamma function.",
                "nx.digamma(nx.tensor([1.0, 0.0, -1.0], type='f64')).tolist()",
                "[-0.5772156649015341, nan, nan]"),
    "bessel_i1e": ("The exponentially scaled modified Bessel function of the first kind of "
                   "order one.",
                   "``bessel_i1e(x) = exp(-|x|) I1(x)`` (``jax.lax.bessel_i1e``, "
                   "``jax.scipy.special.i1e``): odd, 0 at 0 and at ±inf, about "
                   "``sign(x) / sqrt(2π|x|)`` for large ``|x|``. On XLA it is the "
                   "``chlo.bessel_i1e`` JAX emits (Cephes' Chebyshev series, in f32 for the "
                   "16-bit types).",
                   "nx.bessel_i1e(nx.tensor([0.0, 1.0, -1.0], type='f64')).tolist()",
                   "[0.0, 0.2079104153497085, -0.2079104153497085]"),
    "is_nan": ("Whether ``x`` is NaN.",
               "A complex number is NaN where either part is; integers and pred are never NaN.",
               'nx.is_nan(nx.tensor([float("nan"), float("inf"), 1.0])).tolist()',
               "[True, False, False]"),
    "is_infinity": ("Whether ``x`` is +inf or -inf.",
                    "A complex number is infinite where either part is; integers and pred "
                    "never are.",
                    'nx.is_infinity(nx.tensor([float("inf"), -float("inf"), float("nan")]))'
                    ".tolist()", "[True, True, False]"),
    "bitwise_not": ("The bitwise complement of ``x``: every bit flipped (Python's ``~``"
                    " on tensors).",
                    "``bitwise_not(x) = -x - 1`` for signed integers and ``2^bits - 1 - x`` "
                    "for unsigned ones; on pred it is ``logical_not``.",
                    'nx.bitwise_not(nx.tensor([0, 5], type="s8")).tolist()', "[-1, -6]"),
    "logical_not": ("Whether ``x`` is zero: ``x`` read as a boolean, negated.",
                    "Non-zero values, NaN included, are true (``logical_not(NaN)`` is "
                    "false); a complex number is true where either part is non-zero.",
                    'nx.logical_not(nx.tensor([0.0, 2.0, float("nan")])).tolist()',
                    "[True, False, False]"),
    # binary
    "add": ("The sum of ``a`` and ``b`` (Python's ``+`` on tensors).",
            "``add(a, b) = a + b``; integers wrap around on overflow.",
            "nx.add(nx.tensor([1, 2]), nx.tensor([[10], [20]])).tolist()",
            "[[11, 12], [21, 22]]"),
    "subtract": ("The difference of ``a`` and ``b`` (Python's ``-`` on tensors).",
                 "``subtract(a, b) = a - b``; integers wrap around: ``0 - 1`` is 255 in u8.",
                 'nx.subtract(nx.tensor([0, 5], type="u8"), 1).tolist()', "[255, 4]"),
    "multiply": ("The product of ``a`` and ``b`` (Python's ``*`` on tensors).",
                 "``multiply(a, b) = a * b``; integers wrap around on overflow.",
                 'nx.multiply(nx.tensor([1, 2], type="s8"), 2.5).tolist()', "[2.5, 5.0]"),
    "divide": ("The quotient ``a / b`` in floating point (Python's ``/`` on tensors).",
               "Integers divide as floats (``divide(7, 2) = 3.5``; ``quotient`` truncates); "
               "a non-zero ``x / 0`` is ±inf and ``0 / 0`` is NaN.",
               "nx.divide(nx.tensor([7, 1, 0]), nx.tensor([2, 0, 0])).tolist()",
               "[3.5, inf, nan]"),
    "quotient": ("The integer quotient of ``a`` by ``b``, truncated toward zero (C's ``/``).",
                 "``quotient(-7, 2) = -3`` (``floor_divide``, Python's ``//``, gives -4); "
                 "``x / 0`` has every bit set (-1 signed, the maximum unsigned) and "
                 "``MIN / -1`` wraps to ``MIN``, as in XLA.",
                 "nx.quotient(nx.tensor([7, -7]), 2).tolist()", "[3, -3]"),
    "remainder": ("The remainder of ``a / b``, with the sign of ``a`` (C's ``fmod``, as Nx).",
                  "``remainder(a, b) = a - b * trunc(a / b)``: ``remainder(-7, 2) = -1`` "
                  "(``mod``, Python's ``%``, gives 1); ``remainder(a, 0)`` is ``a`` for "
                  "integers and NaN for floats.",
                  "nx.remainder(nx.tensor([7, -7, 7]), nx.tensor([2, 2, -2])).tolist()",
                  "[1, -1, 1]"),
    "pow": ("``a`` raised to the power ``b`` (Python's ``**`` on tensors).",
            "``pow(a, b) = a^b``; ``pow(x, 0) = 1``, NaN included, and a negative float base "
            "with a non-integer exponent gives NaN; integer powers wrap around, and a "
            "negative integer exponent gives 0 unless ``|a| = 1``.",
            "nx.pow(nx.tensor([2, 2, -1]), nx.tensor([10, -1, -3])).tolist()", "[1024, 0, -1]"),
    "atan2": ("The angle of the point (``b``, ``a``) in radians: ``atan2(y, x)``, ``a`` as y.",
              "The arctangent of ``a / b``, its quadrant taken from the signs of both, in "
              "[-π, π]: ``atan2(±1, 0) = ±π/2``, ``atan2(±0, -1) = ±π``, "
              "``atan2(0, 0) = 0``.",
              "nx.atan2(nx.tensor([0.0, 1.0, -1.0]), nx.tensor([-1.0, 0.0, 1.0])).tolist()",
              "[3.1415927410125732, 1.5707963705062866, -0.7853981852531433]"),
    "min": ("The smaller of ``a`` and ``b``.",
            "NaN in either operand gives NaN.",
            'nx.min(nx.tensor([1.0, float("nan")]), nx.tensor([2.0, 0.0])).tolist()',
            "[1.0, nan]"),
    "max": ("The larger of ``a`` and ``b``.",
            "NaN in either operand gives NaN.",
            'nx.max(nx.tensor([1.0, float("nan")]), nx.tensor([2.0, 0.0])).tolist()',
            "[2.0, nan]"),
    "next_after": ("The next float after ``a`` in the direction of ``b``.",
                   "``next_after(a, b)`` (``jax.lax.nextafter``, C's ``nextafter``): ``b`` "
                   "where ``a == b``, NaN where either is; the smallest subnormal (signed "
                   "as ``b``) after 0. Its gradient is JAX's (``lax.nextafter``'s since jax "
                   "0.12): 1 with respect to ``a``, 0 with respect to ``b``.",
                   "nx.next_after(nx.tensor([1.0, 0.0]), nx.tensor([2.0, -1.0])).tolist()",
                   "[1.0000001192092896, -1.401298464324817e-45]"),
    "zeta": ("The Hurwitz zeta function of ``a`` (the exponent) at ``b`` (the shift).",
             "``zeta(x, q) = sum((n + q) ** -x for n >= 0)`` (``jax.lax.zeta``, "
             "``jax.scipy.special.zeta``): +inf at ``x == 1``, NaN for ``x < 1`` and for "
             "``q <= 0`` with a fractional ``x``; at the poles (integer ``q <= 0``) +inf "
             "for an even ``x``, NaN for an odd one. On XLA it is the ``chlo.zeta`` JAX emits "
             "(nine terms and the Euler-Maclaurin formula). Its gradient, in both arguments, "
             "is ``jax.scipy.special.zeta``'s: the derivatives of the Euler-Maclaurin "
             "expansion with 8 terms in f32 and 16 otherwise (``jax.lax.zeta`` has none).",
             "nx.zeta(nx.tensor([2.0, 4.0], type='f64'), 1.0).tolist()",
             "[1.6449340668482264, 1.0823232337111384]"),
    "polygamma": ("The polygamma function of order ``a`` at ``b``.",
                  "``polygamma(n, x)`` (``jax.lax.polygamma``, "
                  "``jax.scipy.special.polygamma``) is the ``n``-th derivative of "
                  "``digamma``: ``digamma(x)`` for ``n == 0``, else ``(-1)^(n+1) n! "
                  "zeta(n + 1, x)``; NaN unless ``n`` is a natural number, and at the poles of "
                  "``digamma`` for ``n == 0`` (0 included, as ``digamma``). On XLA it is the "
                  "``chlo.polygamma`` JAX emits. Its gradient with respect to ``x`` is "
                  "``polygamma(n + 1, x)``; none flows to ``n`` (JAX raises there).",
                  "nx.polygamma(nx.tensor([0.0, 1.0, 1.5], type='f64'), 1.0).tolist()",
                  "[-0.5772156649015341, 1.6449340668482264, nan]"),
    "bitwise_and": ("The bitwise AND of ``a`` and ``b`` (Python's ``&`` on tensors).",
                    "A bit is set where it is set in both; on pred it is ``logical_and``.",
                    "nx.bitwise_and(12, 10).tolist()", "8"),
    "bitwise_or": ("The bitwise OR of ``a`` and ``b`` (Python's ``|`` on tensors).",
                   "A bit is set where it is set in either; on pred it is ``logical_or``.",
                   "nx.bitwise_or(12, 10).tolist()", "14"),
    "bitwise_xor": ("The bitwise exclusive OR of ``a`` and ``b`` (Python's ``^`` on tensors).",
                    "A bit is set where it is set in exactly one; on pred it is "
                    "``logical_xor``.",
                    "nx.bitwise_xor(12, 10).tolist()", "6"),
    "left_shift": ("``a`` shifted left by ``b`` bits (Python's ``<<`` on tensors).",
                   "``left_shift(a, b) = a * 2^b``, wrapping around; a shift outside "
                   "[0, bits) gives 0.",
                   "nx.left_shift(nx.tensor([1, 1, 1]), nx.tensor([3, 31, 32])).tolist()",
                   "[8, -2147483648, 0]"),
    "right_shift": ("``a`` shifted right by ``b`` bits (Python's ``>>`` on tensors).",
                    "Arithmetic for signed types, the sign bit filling in "
                    "(``right_shift(-16, 2) = -4``), logical for unsigned ones; a shift "
                    "outside [0, bits) gives -1 for a negative ``a``, else 0.",
                    "nx.right_shift(nx.tensor([16, -16, -16]), nx.tensor([2, 2, 40])).tolist()",
                    "[4, -4, -1]"),
    "equal": ("Whether ``a == b`` (Python's ``==`` on tensors).",
              "NaN equals nothing, itself included; complex numbers are equal where both "
              "parts are.",
              'nx.equal(nx.tensor([1.0, float("nan")]), nx.tensor([1, float("nan")])).tolist()',
              "[True, False]"),
    "not_equal": ("Whether ``a != b`` (Python's ``!=`` on tensors).",
                  "True wherever either operand is NaN, ``not_equal(NaN, NaN)`` included.",
                  'nx.not_equal(nx.tensor([1.0, float("nan")]), nx.tensor([1.0, float("nan")]))'
                  ".tolist()", "[False, True]"),
    "less": ("Whether ``a < b`` (Python's ``<`` on tensors).",
             "Any comparison with NaN is false.",
             "nx.less(nx.tensor([1, 2, 3]), 2.5).tolist()", "[True, True, False]"),
    "less_equal": ("Whether ``a <= b`` (Python's ``<=`` on tensors).",
                   "Any comparison with NaN is false.",
                   "nx.less_equal(nx.tensor([1, 2, 3]), 2).tolist()", "[True, True, False]"),
    "greater": ("Whether ``a > b`` (Python's ``>`` on tensors).",
                "Any comparison with NaN is false.",
                'nx.greater(nx.tensor([1.0, 3.0, float("nan")]), 2.0).tolist()',
                "[False, True, False]"),
    "greater_equal": ("Whether ``a >= b`` (Python's ``>=`` on tensors).",
                      "Any comparison with NaN is false.",
                      "nx.greater_equal(nx.tensor([1, 2, 3]), 2).tolist()",
                      "[False, True, True]"),
    "logical_and": ("Whether both ``a`` and ``b`` are non-zero.",
                    "Each operand is read as a boolean: non-zero, NaN included, is true.",
                    "nx.logical_and(nx.tensor([2, 0, 1]), nx.tensor([0.5, 1.0, 0.0])).tolist()",
                    "[True, False, False]"),
    "logical_or": ("Whether ``a`` or ``b`` (or both) is non-zero.",
                   "Each operand is read as a boolean: non-zero, NaN included, is true.",
                   'nx.logical_or(nx.tensor([0, 0]), nx.tensor([0.0, float("nan")])).tolist()',
                   "[False, True]"),
    "logical_xor": ("Whether exactly one of ``a`` and ``b`` is non-zero.",
                    "Each operand is read as a boolean: non-zero, NaN included, is true.",
                    "nx.logical_xor(nx.tensor([1, 0, 3]), nx.tensor([1, 1, 0])).tolist()",
                    "[False, True, True]"),
}


# the accepted-kinds column, and the type rules, in words
_ACCEPTS = {"any": "any type", "num": "any type but pred", "real": "real types (not complex)",
            "int": "integer and pred types", "intonly": "integer types"}


def _types_doc(name, binary):
    """The docstring's sentence on the types ``name`` accepts and the type it returns."""
    rule, kinds = (BINARY if binary else UNARY)[name]
    ints = "integers and pred" if kind_ok(T.PRED, kinds) else "integers"
    floats = ("floating and complex types are kept" if kind_ok(T.Type("c", 64), kinds)
              else "floating types are kept")
    if not binary:
        result = {"same": "the result has ``x``'s type",
                  "float": f"{ints} give f32, {floats}",
                  "pred": "the result is pred",
                  "real": "complex types give their parts' type (c64 gives f32, c128 f64), "
                          "the others are kept"}[rule]
    elif rule == "merge":
        result = ("``a`` and ``b`` broadcast together, and the result has their common type"
                  + (" (two preds give u8, as in Nx)"
                     if name in _ARITH_ON_PRED and kind_ok(T.PRED, kinds) else ""))
    elif rule == "float":
        result = ("``a`` and ``b`` broadcast together, and the result has their common type "
                  f"made floating: {ints} give f32, {floats}")
    elif rule == "compare":
        result = ("``a`` and ``b`` broadcast together and are compared in their common type; "
                  "the result is pred")
    else:  # logical
        result = "``a`` and ``b`` broadcast together; the result is pred"
    return f"Accepts {_ACCEPTS[kinds]}; {result}."


def _doc(name, binary=False):
    """The docstring of the op ``name``: its row of ``DOCS``, with the types sentence."""
    if name not in DOCS:
        raise LookupError(f"elementwise op {name!r} has no row in DOCS (nxpy/ops/"
                          "elementwise.py): give it a description, formula and example")
    summary, details, example, printed = DOCS[name]
    # wrapped at 88 columns, never inside a ``literal`` (its spaces held as NULs meanwhile)
    text = "``".join(part.replace(" ", "\0") if i % 2 else part for i, part in
                     enumerate(f"{details} {_types_doc(name, binary)}".split("``")))
    body = textwrap.fill(text, 88, break_long_words=False,
                         break_on_hyphens=False).replace("\0", " ")
    return f"{summary}\n\n{body}\n\n>>> import nxpy as nx\n>>> {example}\n{printed}"


U8 = T.Type("u", 8)

primitive("elementwise", *UNARY, *BINARY, "select", "clip", "bitcast", props=("elementwise",))
primitive("elementwise", "optimization_barrier")


def binary_compute_type(op: str, out: Tensor, a: Tensor, b: Tensor) -> T.Type:
    """The type both operands of a binary op are converted to before computing."""
    if BINARY[op][0] in ("compare", "logical"):
        return T.merge(a.type, b.type)
    return out.type


#: per op, ``(backend, operand devices and templates) → (shape, type, names, backend,
#: kernel, device, template, data type)`` or
#: False: eager elementwise ops on tensors seen before skip validation and inference and
#: run the backend's ``fast_kernel`` directly (see Backend.fast_kernel)
_FAST: dict = {}
_FAST_MAX = 1024  # signatures per op


def _remember(cache, key, name, out, backend, args):
    if len(cache) >= _FAST_MAX:
        cache.clear()
    if any(a.sharding is not None for a in args):  # a sharded program each time
        cache[key] = False
        return
    k = backend.fast_kernel(name, out, *args)
    # the type of data the kernel takes: operands holding it skip Tensor.data (which
    # resolves Deferred data, and raises for donated tensors)
    cache[key] = False if k is None else (out.shape, out.type, out.names, backend, k,
                                          args[0].device_id, out.template,
                                          type(args[0].data))


def _unary(name, x, cache=None, key=None):
    if key is not None and x.backend is not None and not x.backend.is_expr:
        out = _unary_out(name, x)
        _remember(cache, key, name, out, x.backend, (x,))
        return dispatch(name, out, x)
    x = to_tensor(x, "x")
    return dispatch(name, _unary_out(name, x), x)


def _unary_out(name, x):
    rule, kinds = UNARY[name]
    check_kind(name, "x", x.type, kinds)
    t = {"same": x.type, "float": T.to_floating(x.type), "pred": T.PRED,
         "real": T.to_real(x.type)}[rule]
    return _out(x.shape, t, x.names)


def _binary(name, a, b, cache=None, key=None):
    if (key is not None and a.backend is b.backend and a.backend is not None
            and not a.backend.is_expr):
        out = _binary_out(name, a, b)
        _remember(cache, key, name, out, a.backend, (a, b))
        return dispatch(name, out, a, b)
    a, b = _binary_operands(a, b, name)
    return dispatch(name, _binary_out(name, a, b), a, b)


def _binary_out(name, a, b):
    rule, kinds = BINARY[name]
    check_kind(name, "left operand", a.type, kinds)
    check_kind(name, "right operand", b.type, kinds)
    shape = S.broadcast(a.shape, b.shape, op=name)
    names = S.broadcast_names(shape, a, b, op=name)
    m = T.merge(a.type, b.type)
    if rule == "merge":
        t = U8 if (m.is_pred and name in _ARITH_ON_PRED) else m
    elif rule == "float":
        t = T.to_floating(m)
    else:
        t = T.PRED
    return _out(shape, t, names)


def _make_unary(name):
    cache = _FAST[name] = {}
    get = cache.get

    def f(x):
        if type(x) is Tensor:
            key = (x.backend, x.device_id, x._tk or x.template)
            hit = get(key)
            if hit:
                shape, t, names, b, k, dev, tk, dt = hit
                d = x._data
                try:
                    return Tensor(k(d if type(d) is dt else x.data), shape, t, names, b, dev,
                                  tk)
                except Exception:  # the kernel declines this call: the op's full path
                    return _unary(name, x)
            if hit is None:
                return _unary(name, x, cache, key)
        return _unary(name, x)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = _doc(name)
    return f


def _make_binary(name):
    cache = _FAST[name] = {}
    get = cache.get

    def f(a, b):
        if type(a) is Tensor and type(b) is Tensor:
            key = (a.backend, a.device_id, a._tk or a.template, b.device_id,
                   b._tk or b.template)
            hit = get(key)
            if hit:
                shape, t, names, bk, k, dev, tk, dt = hit
                if bk is b.backend:
                    da, db = a._data, b._data
                    if type(da) is not dt or type(db) is not dt:
                        da, db = a.data, b.data
                    try:
                        return Tensor(k(da, db), shape, t, names, bk, dev, tk)
                    except Exception:  # the kernel declines this call: the op's full path
                        return _binary(name, a, b)
            elif hit is None:
                return _binary(name, a, b, cache, key)
        return _binary(name, a, b)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = _doc(name, binary=True)
    return f


for _n in UNARY:
    globals()[_n] = _make_unary(_n)
for _n in BINARY:
    globals()[_n] = _make_binary(_n)
del _n
abs = globals()["abs"]  # the op, as in Nx
min = globals()["min"]
max = globals()["max"]
pow = globals()["pow"]
round = globals()["round"]


def floor_divide(a, b):
    """Python's ``//``: floor of the quotient (integers round toward negative infinity)."""
    a, b = _binary_operands(a, b, "floor_divide")
    if T.merge(a.type, b.type).is_inexact:
        return floor(divide(a, b))  # noqa: F821 - the table ops, made by the loops above
    q = quotient(a, b)  # noqa: F821
    r = remainder(a, b)  # noqa: F821
    fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))  # noqa: F821
    return subtract(q, as_type(fix, q.type))  # noqa: F821


def mod(a, b):
    """Python's ``%``: the remainder takes the sign of the divisor."""
    a, b = _binary_operands(a, b, "mod")
    r = remainder(a, b)  # noqa: F821 - as in floor_divide
    fix = logical_and(not_equal(r, 0), not_equal(less(r, 0), less(b, 0)))  # noqa: F821
    return select(fix, add(r, b), r)  # noqa: F821


def select(pred, on_true, on_false) -> Tensor:
    """``on_true`` where ``pred`` is non-zero, else ``on_false`` (all three broadcast).

    Names: as in Nx, a ``pred`` of the result's shape gives its names (those of
    ``on_true`` and ``on_false`` are not merged); a scalar ``pred`` (or one that
    broadcasts, an nxpy extension) merges the names of all three.

    >>> import nxpy as nx
    >>> x = nx.tensor([2, 4, 6], names=["x"])
    >>> r = nx.select(nx.greater(x, nx.tensor([3, 2, 1])), nx.tensor([2, 4, 6], names=["i"]),
    ...               nx.tensor([1, 3, 5], names=["j"]))
    >>> r.names, r.tolist()
    (('x',), [1, 4, 6])
    """
    pred = to_tensor(pred, "pred")
    on_true, on_false = _binary_operands(on_true, on_false, "select", ("on_true", "on_false"))
    shape = S.broadcast(S.broadcast(pred.shape, on_true.shape, op="select"), on_false.shape,
                        op="select")
    t = T.merge(on_true.type, on_false.type)
    if pred.shape and pred.shape == shape:
        names = pred.names
    else:
        names = S.broadcast_names(shape, pred, on_true, on_false, op="select")
    return dispatch("select", _out(shape, t, names), pred, on_true, on_false)


def clip(x, min, max) -> Tensor:
    """Clamps ``x`` to ``[min, max]``; the bounds broadcast to ``x``'s shape."""
    x = to_tensor(x, "x")
    check_kind("clip", "x", x.type, "real")
    _, lo = _binary_operands(x, min, "clip", ("x", "min"))
    _, hi = _binary_operands(x, max, "clip", ("x", "max"))
    for arg, b in (("min", lo), ("max", hi)):
        check_kind("clip", arg, b.type, "real")
        if S.broadcast(x.shape, b.shape, op="clip") != x.shape:
            raise ValueError(f"clip: {arg} of shape {b.shape} does not broadcast to x's "
                             f"shape {x.shape}")
    t = T.merge(T.merge(x.type, lo.type), hi.type)
    return dispatch("clip", _out(x.shape, t, x.names), x, lo, hi)


def bitcast(x, type) -> Tensor:
    """Reinterprets the bits as ``type`` of the same width."""
    x = to_tensor(x, "x")
    t = T.parse(type)
    if x.type.is_pred or t.is_pred or x.type.bits != t.bits:
        raise TypeError(f"bitcast: expected a type of the same bit width as {x.type} "
                        f"(and not pred), got {t}")
    return dispatch("bitcast", _out(x.shape, t, x.names), x)


def optimization_barrier(x, *, call=False):
    """``x`` (a tensor, or a tuple or list of them), as values the compiler may not look
    through (``stablehlo.optimization_barrier``, as ``jax.lax.optimization_barrier``):
    computations on the results are not merged with the same computations on ``x``, and
    none of the results is available before all of ``x`` is (``checkpoint`` recomputes
    its forward pass from such values, barriered together with the incoming cotangent, so
    that XLA neither folds the recomputation back into the forward pass nor runs it before
    the backward pass reaches it). Its gradient is the identity.

    ``call=True`` is the lighter barrier of a value passed to a nested ``jax.jit``
    function: the compiled program passes ``x`` through a call of a private function, which
    the StableHLO module's constant folders do not look through and XLA inlines before it
    optimizes. A constant reaches XLA's own folding and loop passes as it does in JAX's
    program (``nxpy.random`` passes distribution parameters so, for JAX's bits). Eagerly,
    and for the Evaluator, both are the identity.

    >>> import nxpy as nx
    >>> nx.optimization_barrier(nx.tensor([1.0, 2.0])).tolist()
    [1.0, 2.0]
    >>> a, b = nx.optimization_barrier((nx.tensor(1), nx.tensor([2.0])))
    >>> a.tolist(), b.tolist()
    (1, [2.0])
    >>> from nxpy.defn import jit
    >>> jit(lambda v: nx.optimization_barrier(v, call=True) * 2)(nx.tensor(3.0)).tolist()
    6.0
    """
    many = isinstance(x, (tuple, list))
    xs = [to_tensor(v, f"x[{i}]" if many else "x") for i, v in enumerate(x if many else [x])]
    if many and not xs:
        return type(x)()
    if not isinstance(call, bool):
        raise TypeError(f"optimization_barrier: expected call to be a bool, got {call!r}")
    # the attribute only where set: a backend's kernel of the plain barrier takes none
    attrs = {"call": True} if call else {}
    outs = dispatch_multi("optimization_barrier", [(v.shape, v.type, v.names) for v in xs],
                          *xs, **attrs)
    return type(x)(outs) if many else outs[0]


__all__ = sorted(UNARY) + sorted(BINARY) + ["floor_divide", "mod", "select", "clip", "bitcast",
                                            "optimization_barrier", "binary_compute_type",
                                            "UNARY", "BINARY"]
