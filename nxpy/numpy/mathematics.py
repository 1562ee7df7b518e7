"""NumPy's elementwise functions (``add`` ... ``isclose``) with ``jax.numpy``'s names and
semantics, as compositions of nxpy's ops (issue 28); the products and polynomials are in
:mod:`.products`.

Types follow nxpy's promotion (Nx's), which agrees with ``jnp``'s for the usual cases
(integers and floats of one kind, Python scalars are weak: ``f16 tensor + 1.5`` is f16,
``s32 tensor + 1.5`` is f32, ``s8 + u8`` is s16, ``f16 + bf16`` is f32, integer
``true_divide`` is f32); where they differ, :data:`NOTES` says how.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .. import ops as O
from .. import types as T
from ..tensor import Tensor
from ._common import real_number

__all__ = [
    # arithmetic
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "power",
    "pow", "float_power", "mod", "remainder", "fmod", "divmod", "abs", "absolute", "fabs",
    "negative", "positive", "sign", "sqrt", "cbrt", "square", "reciprocal",
    # exponents and logarithms
    "exp", "exp2", "expm1", "log", "log1p", "log2", "log10", "logaddexp", "logaddexp2",
    # trigonometry
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "arctan2", "sinh", "cosh", "tanh",
    "arcsinh", "arccosh", "arctanh", "acos", "asin", "atan", "atan2", "acosh", "asinh",
    "atanh", "hypot", "deg2rad", "rad2deg", "degrees", "radians", "sinc",
    # rounding
    "floor", "ceil", "trunc", "rint", "round", "around",
    # comparison, clipping, special values
    "maximum", "minimum", "fmax", "fmin", "clip", "nan_to_num", "isnan", "isinf",
    "isfinite", "isposinf", "isneginf", "signbit", "copysign", "nextafter", "heaviside",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "isclose",
    "allclose", "array_equal", "array_equiv",
    # logic and bits
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_not", "bitwise_invert", "invert", "bitwise_count", "left_shift",
    "right_shift", "bitwise_left_shift", "bitwise_right_shift",
    # complex
    "real", "imag", "conj", "conjugate", "angle",
]

#: Where a function departs from ``jax.numpy`` and why (collected by the coverage table).
NOTES = {
    "add": "nxpy's promotion (Nx's): s32 with u32 (and s64 with u64) widen to s64 where jnp "
           "(x64 off) gives int32; a Python int that does not fit the tensor's type widens "
           "it (u8 + 300 is u16) where jnp raises OverflowError. The same holds for every "
           "binary arithmetic function.",
    "power": "an integer base to a negative integer exponent gives 0 (XLA's integer power) "
             "where jnp raises for concrete exponents.",
    "round": "integers with decimals < 0 raise NotImplementedError.",
    "float_power": "f32 without x64 (as jnp), f64 when an operand is f64.",
    "sinc": "sin(pi x) / (pi x) as jax 0.10 (NaN at ±inf, ~1e-8 off at non-zero "
            "integers); jax 0.12 reduces the argument first (exact 0 there).",
}


# ----------------------------------------------------------------------------------------
# Arguments
# ----------------------------------------------------------------------------------------
def _t(x, fn: str, arg: str = "x") -> Tensor:
    """``x`` as a tensor, or a TypeError naming ``fn`` and ``arg``."""
    if isinstance(x, Tensor):
        return x
    try:
        return O.to_tensor(x, arg)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fn}: expected {arg} to be a tensor, an array or a number, got "
                        f"{type(x).__name__} ({e})") from None


def _no_out(out, fn: str):
    if out is not None:
        raise TypeError(f"{fn}: out= is not supported (tensors are immutable), got "
                        f"{type(out).__name__}")


def _inexact(x: Tensor) -> Tensor:
    """``x`` made floating as ``jnp`` does: pred and integers become f32."""
    return x if x.type.is_inexact else O.as_type(x, T.to_floating(x.type))


def _weak(x) -> bool:
    """Whether ``x`` is a Python number (weakly typed, as in ``jnp``)."""
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def _pair(x1, x2, fn: str):
    """Both operands as tensors of their merged type; a Python number takes the other
    operand's kind weakly (``f16 tensor + 1.5`` is f16), as ``jnp``'s weak types."""
    if _weak(x1) and not _weak(x2):
        b = _t(x2, fn, "x2")
        a = O.tensor(x1, type=T.merge_scalar(b.type, x1))
    elif _weak(x2) and not _weak(x1):
        a = _t(x1, fn, "x1")
        b = O.tensor(x2, type=T.merge_scalar(a.type, x2))
    else:
        a, b = _t(x1, fn, "x1"), _t(x2, fn, "x2")
    t = T.merge(a.type, b.type)
    return (a if a.type == t else O.as_type(a, t)), (b if b.type == t else O.as_type(b, t))


def _pair_inexact(x1, x2, fn: str):
    a, b = _pair(x1, x2, fn)
    return _inexact(a), _inexact(b)


def _const(value, like: Tensor) -> Tensor:
    return O.tensor(value, type=like.type)


def _finfo(t):
    return ml_dtypes.finfo(T.to_real(t).dtype)


# ----------------------------------------------------------------------------------------
# Elementwise functions made from a table: (name, implementation, jnp's doc line, example)
# ----------------------------------------------------------------------------------------
def _make(name: str, impl, nargs: int, doc: str, example: str, expected: str):
    if nargs == 1:
        def fn(x):
            return impl(_t(x, name, "x"))
    else:
        def fn(x1, x2):
            return impl(x1, x2)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (f"``jnp.{name}``: {doc}\n\n    >>> import nxpy.numpy as xnp\n"
                  f"    >>> xnp.{name}({example}).tolist()\n    {expected}\n    ")
    return fn


def _bin(op, inexact=False, bool_op=None):
    """A binary function over ``op`` (an nxpy op with Nx's promotion)."""
    def impl(x1, x2):
        a, b = (_pair_inexact if inexact else _pair)(x1, x2, op.__name__)
        if bool_op is not None and a.type.is_pred:
            return bool_op(a, b)
        return op(a, b)
    return impl


def _un_float(op):
    return lambda x: op(_inexact(x))


def _mod(a, b):
    return O.mod(a, b)


def _fmod(x1, x2):
    a, b = _pair(x1, x2, "fmod")
    return O.remainder(a, b)


def _floor_divide(x1, x2):
    a, b = _pair(x1, x2, "floor_divide")
    if a.type.is_pred:
        return O.logical_and(a, b)
    if a.type.is_float:  # jnp's _float_divmod: exact for the representable quotients
        return _float_divmod(a, b)[0]
    return O.floor_divide(a, b)


def _float_divmod(a, b):
    mod = O.remainder(a, b)
    zero = _const(0, a)
    div = O.divide(O.select(O.equal(b, zero), a, O.subtract(a, mod)), b)
    ind = O.logical_and(O.not_equal(mod, zero), O.not_equal(O.sign(b), O.sign(mod)))
    mod = O.select(ind, O.add(mod, b), mod)
    div = O.select(ind, O.subtract(div, _const(1, div)), div)
    return O.round(div), mod


def _float_power(x1, x2):
    a, b = _pair(x1, x2, "float_power")
    t = T.F64 if T.F64 in (a.type, b.type) or a.type.is_complex else None
    if a.type.is_complex:
        return O.pow(a, b)
    t = t or T.F32
    return O.pow(O.as_type(a, t), O.as_type(b, t))


def _abs(x):
    if x.type.is_pred or x.type.kind == "u":
        return x
    return O.abs(x)


def _sign(x):
    if x.type.is_pred:
        return x
    return O.sign(x)


def _square(x):
    return O.multiply(x, x)


def _reciprocal(x):
    if x.type.is_inexact:
        return O.divide(_const(1, x), x)
    return O.quotient(_const(1, x), x) if not x.type.is_pred else x


def _exp2(x):
    x = _inexact(x)
    return O.exp(O.multiply(x, _const(math.log(2), x)))


def _logaddexp(x1, x2, base2=False):
    a, b = _pair_inexact(x1, x2, "logaddexp2" if base2 else "logaddexp")
    amax = O.max(a, b)
    delta = O.subtract(a, b)
    if base2:
        ln2 = _const(math.log(2), amax)
        tail = O.divide(O.log1p(_exp2(O.negate(O.abs(delta)))), ln2)
    else:
        tail = O.log1p(O.exp(O.negate(O.abs(delta))))
    return O.select(O.is_nan(delta), O.add(a, b), O.add(amax, tail))


def _hypot(x1, x2):
    a, b = _pair_inexact(x1, x2, "hypot")
    a, b = O.abs(a), O.abs(b)
    inf = O.logical_or(O.is_infinity(a), O.is_infinity(b))
    big, small = O.max(a, b), O.min(a, b)
    zero = O.equal(big, _const(0, big))
    safe = O.select(zero, _const(1, big), big)
    ratio = O.divide(small, safe)
    r = O.select(zero, big, O.multiply(big, O.sqrt(O.add(_const(1, big),
                                                          O.multiply(ratio, ratio)))))
    return O.select(inf, _const(math.inf, r), r)


def _scale(factor):
    return lambda x: O.multiply(_inexact(x), _const(factor, _inexact(x)))


def _floor(x):
    return x if not x.type.is_inexact else O.floor(x)


def _ceil(x):
    return x if not x.type.is_inexact else O.ceil(x)


def _trunc(x):
    if not x.type.is_inexact:
        return x
    return O.select(O.less(x, _const(0, x)), O.ceil(x), O.floor(x))


def _rint(x):
    """Round half to even: ``round`` (half away from zero) corrected at the ties;
    integers become f32, as ``jnp.rint``."""
    if not x.type.is_inexact:
        return _inexact(x)
    if x.type.is_complex:
        return O.complex(_rint(O.real(x)), _rint(O.imag(x)))
    r = O.round(x)
    half = O.equal(O.abs(O.subtract(x, _trunc(x))), _const(0.5, x))
    even = O.multiply(O.round(O.multiply(x, _const(0.5, x))), _const(2, x))
    return O.select(half, even, r)


def _isnan(x):
    return O.is_nan(x)


def _isinf(x):
    return O.is_infinity(x) if x.type.is_inexact else O.not_equal(x, x)


def _isfinite(x):
    if not x.type.is_inexact:
        return O.equal(x, x)
    return O.logical_not(O.logical_or(O.is_nan(x), O.is_infinity(x)))


def _isposinf(x):
    return O.logical_and(_isinf(x), O.greater(x, _const(0, x)))


def _isneginf(x):
    return O.logical_and(_isinf(x), O.less(x, _const(0, x)))


_INT_OF = {16: "s16", 32: "s32", 64: "s64"}


def _signbit(x):
    if x.type.is_pred or x.type.kind == "u":
        return O.not_equal(x, x)
    if not x.type.is_inexact:
        return O.less(x, _const(0, x))
    if x.type.is_complex:
        raise TypeError("signbit: expected a real tensor, got a complex one")
    return O.less(O.bitcast(x, _INT_OF[x.type.bits]), O.tensor(0, type=_INT_OF[x.type.bits]))


def _copysign(x1, x2):
    a, b = _pair_inexact(x1, x2, "copysign")
    return O.select(_signbit(b), O.negate(O.abs(a)), O.abs(a))


def _nextafter(x1, x2):
    a, b = _pair_inexact(x1, x2, "nextafter")
    if a.type.is_complex:
        raise TypeError("nextafter: expected real tensors, got complex ones")
    return O.next_after(a, b)


def _sinc(x):
    x = _inexact(x)
    zero = O.equal(x, _const(0, x))
    pix = O.multiply(O.select(zero, _const(1, x), x), _const(math.pi, x))
    return O.select(zero, _const(1, x), O.divide(O.sin(pix), pix))


def _heaviside(x1, x2):
    a, b = _pair_inexact(x1, x2, "heaviside")
    return O.select(O.less(a, _const(0, a)), _const(0, a),
                    O.select(O.greater(a, _const(0, a)), _const(1, a),
                             O.select(O.is_nan(a), a, b)))


def _fmax(x1, x2, op=O.max):
    a, b = _pair(x1, x2, "fmax" if op is O.max else "fmin")
    return O.select(O.is_nan(a), b, O.select(O.is_nan(b), a, op(a, b)))


def _integer(fn):
    def check(x1, x2=None):
        for v in ((x1,) if x2 is None else (x1, x2)):
            if v.type.is_inexact:
                raise TypeError(f"{fn}: expected integer or bool tensors, got {v.type}")
    return check


def _bitwise(op, name):
    def impl(x1, x2):
        a, b = _pair(x1, x2, name)
        _integer(name)(a, b)
        if a.type.is_pred:
            return {"bitwise_and": O.logical_and, "bitwise_or": O.logical_or,
                    "bitwise_xor": O.logical_xor}[name](a, b)
        return op(a, b)
    return impl


def _invert(x):
    _integer("invert")(x)
    return O.logical_not(x) if x.type.is_pred else O.bitwise_not(x)


def _popcount(x):
    _integer("bitwise_count")(x)
    if x.type.is_pred:
        return O.as_type(x, "u8")
    return O.as_type(O.population_count(_abs(x)), "u8")


def _shift(op, name):
    def impl(x1, x2):
        a, b = _pair(x1, x2, name)
        _integer(name)(a, b)
        if a.type.is_pred:
            a, b = O.as_type(a, "s8"), O.as_type(b, "s8")
        return op(a, b)
    return impl


def _real(x):
    return O.real(x) if x.type.is_complex else x


def _imag(x):
    return O.imag(x) if x.type.is_complex else O.fill(x, 0)


def _conj(x):
    return O.conjugate(x) if x.type.is_complex else x


add = _make("add", _bin(O.add, bool_op=O.logical_or), 2, "``x1 + x2`` (pred: logical or).",
            "[1, 2], 3", "[4, 5]")
subtract = _make("subtract", _bin(O.subtract), 2, "``x1 - x2``.", "[1, 2], 3", "[-2, -1]")
multiply = _make("multiply", _bin(O.multiply, bool_op=O.logical_and), 2,
                 "``x1 * x2`` (pred: logical and).", "[1, 2], 3", "[3, 6]")
divide = _make("divide", _bin(O.divide, inexact=True), 2,
               "``x1 / x2``, floating (integers give f32).", "[1, 2], 4", "[0.25, 0.5]")
true_divide = _make("true_divide", _bin(O.divide, inexact=True), 2, "as :func:`divide`.",
                    "[1, 2], 4", "[0.25, 0.5]")
floor_divide = _make("floor_divide", _floor_divide, 2,
                     "``x1 // x2``, rounded toward minus infinity.", "[-7, 7], 2", "[-4, 3]")
power = _make("power", _bin(O.pow), 2, "``x1 ** x2``.", "[2, 3], 2", "[4, 9]")
pow = _make("pow", _bin(O.pow), 2, "as :func:`power`.", "[2, 3], 2", "[4, 9]")
float_power = _make("float_power", _float_power, 2, "``x1 ** x2`` in floating point.", "[2, 3], 2",
                    "[4.0, 9.0]")
mod = _make("mod", _bin(_mod), 2, "the remainder of floor division (sign of ``x2``).", "[-7, 7], 3",
            "[2, 1]")
remainder = _make("remainder", _bin(_mod), 2, "as :func:`mod`.", "[-7, 7], 3", "[2, 1]")
fmod = _make("fmod", _fmod, 2, "the remainder of truncating division (sign of ``x1``).",
             "[-7, 7], 3", "[-1, 1]")
abs = _make("abs", _abs, 1, "``|x|`` (complex: the modulus, real).", "[-1.5, 2.0]", "[1.5, 2.0]")
absolute = _make("absolute", _abs, 1, "as :func:`abs`.", "[-1, 2]", "[1, 2]")
fabs = _make("fabs", lambda x: _abs(_inexact(x)), 1, "``|x|``, floating.", "[-1, 2]", "[1.0, 2.0]")
negative = _make("negative", lambda x: O.negate(x), 1, "``-x``.", "[1, -2]", "[-1, 2]")
positive = _make("positive", lambda x: x, 1, "``+x`` (``x``).", "[1, -2]", "[1, -2]")
sign = _make("sign", _sign, 1, "-1, 0 or 1 (NaN stays NaN).", "[-3.0, 0.0, 2.0]",
             "[-1.0, 0.0, 1.0]")
sqrt = _make("sqrt", _un_float(O.sqrt), 1, "the square root.", "[4, 9]", "[2.0, 3.0]")
cbrt = _make("cbrt", _un_float(O.cbrt), 1, "the cube root.", "[8.0, -27.0]", "[2.0, -3.0]")
square = _make("square", _square, 1, "``x * x``.", "[2, -3]", "[4, 9]")
reciprocal = _make("reciprocal", _reciprocal, 1, "``1 / x`` (integers: truncated, in their type).",
                   "[2.0, 4.0]", "[0.5, 0.25]")
exp = _make("exp", _un_float(O.exp), 1, "``e ** x``.", "[0.0]", "[1.0]")
exp2 = _make("exp2", _exp2, 1, "``2 ** x``.", "[0.0, 3.0]", "[1.0, 8.0]")
expm1 = _make("expm1", _un_float(O.expm1), 1, "``e ** x - 1``.", "[0.0]", "[0.0]")
log = _make("log", _un_float(O.log), 1, "the natural logarithm.", "[1.0]", "[0.0]")
log1p = _make("log1p", _un_float(O.log1p), 1, "``log(1 + x)``.", "[0.0]", "[0.0]")
log2 = _make("log2", _un_float(O.log2), 1, "the base-2 logarithm.", "[8.0]", "[3.0]")
log10 = _make("log10", _un_float(O.log10), 1, "the base-10 logarithm.", "[100.0]", "[2.0]")
logaddexp = _make("logaddexp", lambda a, b: _logaddexp(a, b), 2,
                  "``log(exp(x1) + exp(x2))``, stably.", "[0.0], [0.0]", "[0.6931471824645996]")
logaddexp2 = _make("logaddexp2", lambda a, b: _logaddexp(a, b, True), 2, "``log2(2**x1 + 2**x2)``.",
                   "[1.0], [1.0]", "[2.0]")
sin = _make("sin", _un_float(O.sin), 1, "the sine.", "[0.0]", "[0.0]")
cos = _make("cos", _un_float(O.cos), 1, "the cosine.", "[0.0]", "[1.0]")
tan = _make("tan", _un_float(O.tan), 1, "the tangent.", "[0.0]", "[0.0]")
arcsin = _make("arcsin", _un_float(O.asin), 1, "the inverse sine.", "[0.0]", "[0.0]")
arccos = _make("arccos", _un_float(O.acos), 1, "the inverse cosine.", "[1.0]", "[0.0]")
arctan = _make("arctan", _un_float(O.atan), 1, "the inverse tangent.", "[0.0]", "[0.0]")
arctan2 = _make("arctan2", _bin(O.atan2, inexact=True), 2, "the angle of the point ``(x2, x1)``.",
                "[0.0], [1.0]", "[0.0]")
sinh = _make("sinh", _un_float(O.sinh), 1, "the hyperbolic sine.", "[0.0]", "[0.0]")
cosh = _make("cosh", _un_float(O.cosh), 1, "the hyperbolic cosine.", "[0.0]", "[1.0]")
tanh = _make("tanh", _un_float(O.tanh), 1, "the hyperbolic tangent.", "[0.0]", "[0.0]")
arcsinh = _make("arcsinh", _un_float(O.asinh), 1, "the inverse hyperbolic sine.", "[0.0]", "[0.0]")
arccosh = _make("arccosh", _un_float(O.acosh), 1, "the inverse hyperbolic cosine.", "[1.0]",
                "[0.0]")
arctanh = _make("arctanh", _un_float(O.atanh), 1, "the inverse hyperbolic tangent.", "[0.0]",
                "[0.0]")
acos = _make("acos", _un_float(O.acos), 1, "as :func:`arccos`.", "[1.0]", "[0.0]")
asin = _make("asin", _un_float(O.asin), 1, "as :func:`arcsin`.", "[0.0]", "[0.0]")
atan = _make("atan", _un_float(O.atan), 1, "as :func:`arctan`.", "[0.0]", "[0.0]")
atan2 = _make("atan2", _bin(O.atan2, inexact=True), 2, "as :func:`arctan2`.", "[0.0], [1.0]",
              "[0.0]")
acosh = _make("acosh", _un_float(O.acosh), 1, "as :func:`arccosh`.", "[1.0]", "[0.0]")
asinh = _make("asinh", _un_float(O.asinh), 1, "as :func:`arcsinh`.", "[0.0]", "[0.0]")
atanh = _make("atanh", _un_float(O.atanh), 1, "as :func:`arctanh`.", "[0.0]", "[0.0]")
hypot = _make("hypot", _hypot, 2, "``sqrt(x1**2 + x2**2)`` without overflow.", "[3.0], [4.0]",
              "[5.0]")
deg2rad = _make("deg2rad", _scale(math.pi / 180), 1, "degrees to radians.", "[0.0]", "[0.0]")
radians = _make("radians", _scale(math.pi / 180), 1, "as :func:`deg2rad`.", "[0.0]", "[0.0]")
rad2deg = _make("rad2deg", _scale(180 / math.pi), 1, "radians to degrees.", "[0.0]", "[0.0]")
degrees = _make("degrees", _scale(180 / math.pi), 1, "as :func:`rad2deg`.", "[0.0]", "[0.0]")
sinc = _make("sinc", _sinc, 1, "``sin(pi x) / (pi x)``, 1 at 0.", "[0.0, 1.0]",
             "[1.0, -2.7827534054836178e-08]")
floor = _make("floor", _floor, 1, "rounds down (integers unchanged).", "[-1.5, 1.5]", "[-2.0, 1.0]")
ceil = _make("ceil", _ceil, 1, "rounds up (integers unchanged).", "[-1.5, 1.5]", "[-1.0, 2.0]")
trunc = _make("trunc", _trunc, 1, "rounds toward zero.", "[-1.5, 1.5]", "[-1.0, 1.0]")
rint = _make("rint", _rint, 1, "rounds to the nearest integer, ties to even.", "[0.5, 1.5, -2.5]",
             "[0.0, 2.0, -2.0]")
maximum = _make("maximum", _bin(O.max), 2, "the larger (NaN propagates).", "[1, 5], [3, 2]",
                "[3, 5]")
minimum = _make("minimum", _bin(O.min), 2, "the smaller (NaN propagates).", "[1, 5], [3, 2]",
                "[1, 2]")
fmax = _make("fmax", _fmax, 2, "the larger, ignoring NaN.", "[float('nan'), 1.0], [2.0, 0.0]",
             "[2.0, 1.0]")
fmin = _make("fmin", lambda a, b: _fmax(a, b, O.min), 2, "the smaller, ignoring NaN.",
             "[float('nan'), 1.0], [2.0, 0.0]", "[2.0, 0.0]")
isnan = _make("isnan", _isnan, 1, "whether NaN.", "[float('nan'), 1.0]", "[True, False]")
isinf = _make("isinf", _isinf, 1, "whether infinite.", "[float('inf'), 1.0]", "[True, False]")
isfinite = _make("isfinite", _isfinite, 1, "whether finite.", "[float('inf'), 1.0]",
                 "[False, True]")
isposinf = _make("isposinf", _isposinf, 1, "whether +inf.", "[float('inf'), -float('inf')]",
                 "[True, False]")
isneginf = _make("isneginf", _isneginf, 1, "whether -inf.", "[float('inf'), -float('inf')]",
                 "[False, True]")
signbit = _make("signbit", _signbit, 1, "whether the sign bit is set (``-0.0`` too).",
                "[-0.0, 1.0]", "[True, False]")
copysign = _make("copysign", _copysign, 2, "``|x1|`` with the sign of ``x2``.",
                 "[1.0, 2.0], [-0.0, 1.0]", "[-1.0, 2.0]")
nextafter = _make("nextafter", _nextafter, 2,
                  "the next representable number after ``x1`` toward ``x2``.", "[1.0], [2.0]",
                  "[1.0000001192092896]")
heaviside = _make("heaviside", _heaviside, 2, "0 below 0, 1 above, ``x2`` at 0.",
                  "[-1.0, 0.0, 2.0], 0.5", "[0.0, 0.5, 1.0]")
equal = _make("equal", _bin(O.equal), 2, "``x1 == x2``.", "[1, 2], 2", "[False, True]")
not_equal = _make("not_equal", _bin(O.not_equal), 2, "``x1 != x2``.", "[1, 2], 2", "[True, False]")
less = _make("less", _bin(O.less), 2, "``x1 < x2``.", "[1, 2], 2", "[True, False]")
less_equal = _make("less_equal", _bin(O.less_equal), 2, "``x1 <= x2``.", "[1, 3], 2",
                   "[True, False]")
greater = _make("greater", _bin(O.greater), 2, "``x1 > x2``.", "[1, 3], 2", "[False, True]")
greater_equal = _make("greater_equal", _bin(O.greater_equal), 2, "``x1 >= x2``.", "[1, 2], 2",
                      "[False, True]")
logical_and = _make("logical_and", _bin(O.logical_and), 2, "``x1 and x2``.", "[True, False], True",
                    "[True, False]")
logical_or = _make("logical_or", _bin(O.logical_or), 2, "``x1 or x2``.", "[True, False], False",
                   "[True, False]")
logical_xor = _make("logical_xor", _bin(O.logical_xor), 2, "``x1 xor x2``.", "[True, False], True",
                    "[False, True]")
logical_not = _make("logical_not", lambda x: O.logical_not(x), 1, "``not x``.", "[True, False]",
                    "[False, True]")
bitwise_and = _make("bitwise_and", _bitwise(O.bitwise_and, "bitwise_and"), 2, "``x1 & x2``.",
                    "[6, 3], 5", "[4, 1]")
bitwise_or = _make("bitwise_or", _bitwise(O.bitwise_or, "bitwise_or"), 2, "``x1 | x2``.",
                   "[6, 3], 5", "[7, 7]")
bitwise_xor = _make("bitwise_xor", _bitwise(O.bitwise_xor, "bitwise_xor"), 2, "``x1 ^ x2``.",
                    "[6, 3], 5", "[3, 6]")
bitwise_not = _make("bitwise_not", _invert, 1, "``~x``.", "[0, 5]", "[-1, -6]")
bitwise_invert = _make("bitwise_invert", _invert, 1, "as :func:`bitwise_not`.", "[0, 5]",
                       "[-1, -6]")
invert = _make("invert", _invert, 1, "as :func:`bitwise_not`.", "[True, False]", "[False, True]")
bitwise_count = _make("bitwise_count", _popcount, 1, "the number of set bits (of ``|x|``), as u8.",
                      "[7, 8]", "[3, 1]")
left_shift = _make("left_shift", _shift(O.left_shift, "left_shift"), 2, "``x1 << x2``.",
                   "[1, 3], 2", "[4, 12]")
bitwise_left_shift = _make("bitwise_left_shift", _shift(O.left_shift, "bitwise_left_shift"), 2,
                           "as :func:`left_shift`.", "[1, 3], 2", "[4, 12]")
right_shift = _make("right_shift", _shift(O.right_shift, "right_shift"), 2, "``x1 >> x2``.",
                    "[8, -8], 2", "[2, -2]")
bitwise_right_shift = _make("bitwise_right_shift", _shift(O.right_shift, "bitwise_right_shift"), 2,
                            "as :func:`right_shift`.", "[8, -8], 2", "[2, -2]")
real = _make("real", _real, 1, "the real part.", "[1.5]", "[1.5]")
imag = _make("imag", _imag, 1, "the imaginary part (0 for real tensors).", "[1.5]", "[0.0]")
conj = _make("conj", _conj, 1, "the complex conjugate.", "[1.5]", "[1.5]")
conjugate = _make("conjugate", _conj, 1, "as :func:`conj`.", "[1.5]", "[1.5]")


def divmod(x1, x2, /):
    """``jnp.divmod``: ``(floor_divide(x1, x2), mod(x1, x2))``.

    >>> import nxpy.numpy as xnp
    >>> [t.tolist() for t in xnp.divmod([7, -7], 2)]
    [[3, -4], [1, 1]]
    """
    return floor_divide(x1, x2), mod(x1, x2)


def angle(z, deg: bool = False):
    """``jnp.angle``: the argument of ``z`` (radians, or degrees when ``deg``).

    >>> import nxpy.numpy as xnp
    >>> xnp.angle([-1.0, 1.0]).tolist()
    [3.1415927410125732, 0.0]
    """
    z = _inexact(_t(z, "angle", "z"))
    a = O.phase(z) if z.type.is_complex else O.atan2(_const(0, z), z)
    return O.multiply(a, _const(180 / math.pi, a)) if deg else a


def round(a, decimals: int = 0, out=None):
    """``jnp.round``: rounds to ``decimals`` decimals, ties to even (as NumPy).

    >>> import nxpy.numpy as xnp
    >>> xnp.round([0.5, 1.5, 1.25], 1).tolist()
    [0.5, 1.5, 1.2000000476837158]
    """
    _no_out(out, "round")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"round: expected decimals to be an int, got {decimals!r}")
    x = _t(a, "round", "a")
    if not x.type.is_inexact:
        if decimals < 0:
            raise NotImplementedError("round: integers with decimals < 0")
        return x
    if x.type.is_complex:
        return O.complex(round(O.real(x), decimals), round(O.imag(x), decimals))
    if decimals == 0:
        return _rint(x)
    factor = _const(10.0 ** decimals, x)
    return O.divide(_rint(O.multiply(x, factor)), factor)


def around(a, decimals: int = 0, out=None):
    """``jnp.around``: as :func:`round`.

    >>> import nxpy.numpy as xnp
    >>> xnp.around([2.5]).tolist()
    [2.0]
    """
    return round(a, decimals, out)


def clip(arr=None, /, min=None, max=None):
    """``jnp.clip``: ``arr`` limited to ``[min, max]`` (either bound may be None).

    >>> import nxpy.numpy as xnp
    >>> xnp.clip([1, 5, 9], 2, 6).tolist()
    [2, 5, 6]
    """
    x = _t(arr, "clip", "arr")
    if min is not None:
        x = maximum(min, x)
    if max is not None:
        x = minimum(max, x)
    return x


def nan_to_num(x, copy: bool = True, nan=0.0, posinf=None, neginf=None):
    """``jnp.nan_to_num``: NaN, +inf and -inf replaced (by 0 and the type's largest and
    smallest finite numbers unless given).

    >>> import nxpy.numpy as xnp
    >>> xnp.nan_to_num([float("nan"), float("inf"), 1.0], posinf=9.0).tolist()
    [0.0, 9.0, 1.0]
    """
    x = _t(x, "nan_to_num")
    nan, posinf, neginf = (v if v is None else real_number(v, "nan_to_num", k, tensors=True)
                           for k, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf)))
    if not x.type.is_inexact:
        return x
    if x.type.is_complex:
        return O.complex(nan_to_num(O.real(x), nan=nan, posinf=posinf, neginf=neginf),
                         nan_to_num(O.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    fi = _finfo(x.type)
    posinf = float(fi.max) if posinf is None else posinf
    neginf = float(fi.min) if neginf is None else neginf
    out = O.select(O.is_nan(x), _const(nan, x), x)
    out = O.select(_isposinf(x), _const(posinf, x), out)
    return O.select(_isneginf(x), _const(neginf, x), out)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """``jnp.isclose``: ``|a - b| <= atol + rtol * |b|`` elementwise (infinities close
    only to themselves; NaN close to NaN when ``equal_nan``).

    >>> import nxpy.numpy as xnp
    >>> xnp.isclose([1.0, 1.1, float("inf")], [1.0 + 1e-9, 1.0, float("inf")]).tolist()
    [True, False, True]
    """
    x, y = _pair(a, b, "isclose")
    rtol, atol = (real_number(v, "isclose", k, tensors=True)
                  for k, v in (("rtol", rtol), ("atol", atol)))
    if not x.type.is_inexact:
        return O.equal(x, y)
    rt = T.to_real(x.type)
    tol = O.add(O.tensor(atol, type=rt), O.multiply(O.tensor(rtol, type=rt), O.abs(y)))
    finite = O.logical_and(_isfinite(x), _isfinite(y))
    out = O.logical_or(O.logical_and(O.less_equal(O.abs(O.subtract(x, y)), tol), finite),
                       O.equal(x, y))
    if equal_nan:
        out = O.logical_or(out, O.logical_and(O.is_nan(x), O.is_nan(y)))
    return out


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan: bool = False):
    """``jnp.allclose``: whether :func:`isclose` holds everywhere (a pred scalar).

    >>> import nxpy.numpy as xnp
    >>> bool(xnp.allclose([1.0, 2.0], [1.0, 2.0 + 1e-7]))
    True
    """
    return O.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan: bool = False):
    """``jnp.array_equal``: same shape and equal entries (a pred scalar).

    >>> import nxpy.numpy as xnp
    >>> bool(xnp.array_equal([1, 2], [1, 2])), bool(xnp.array_equal([1, 2], [1, 2, 3]))
    (True, False)
    """
    x, y = _pair(a1, a2, "array_equal")
    if x.shape != y.shape:
        return O.tensor(False)
    eq = O.equal(x, y)
    if equal_nan and x.type.is_inexact:
        eq = O.logical_or(eq, O.logical_and(O.is_nan(x), O.is_nan(y)))
    return O.all(eq)


def array_equiv(a1, a2):
    """``jnp.array_equiv``: broadcastable and equal entries (a pred scalar).

    >>> import nxpy.numpy as xnp
    >>> bool(xnp.array_equiv([1, 1], 1)), bool(xnp.array_equiv([1, 2], [1, 2, 3]))
    (True, False)
    """
    x, y = _pair(a1, a2, "array_equiv")
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return O.tensor(False)
    return O.all(O.equal(x, y))


