"""One record per elementwise op: what every test of the op needs to know of it, written
once. The op tests (``tests/test_ops.py``: every path against the oracle), the gradient
and JVP tests (``tests/grad_cases.py``: against JAX's), the conformance cases
(:mod:`nxpy.testing.cases.base`) and the fuzzer's twins (:mod:`nxpy.testing.fuzz.twins`)
all read :data:`UNARY_RECORDS` and :data:`BINARY_RECORDS`.

A record holds:

* ``oracle``: the NumPy (or SciPy) function the op tests compare with, on the input
  arrays (floats widened to f64/c128, integers in their own type; ``tests/test_ops.py``
  prepares them by the op's type rule);
* ``jax``: the JAX twin, ``jax(J, *arrays)``, where ``J`` holds ``J.jax``, ``J.jnp`` and
  ``J.lax`` (:class:`Jax`; this module imports no JAX);
* ``domain``: the input range the tests draw from: ``None`` for an op defined everywhere
  (tests draw from :data:`ANY`; the fuzzer does not clip), else a :class:`Domain` (for a
  binary op, one per operand); the conformance cases draw from it and the fuzzer clips a
  unary op's operand into it;
* ``grad_args``: the operands of a binary op the gradient tests differentiate (default
  both; ``polygamma``'s order has no gradient in JAX);
* ``grad``: where the gradient tests draw (``None``: the domain; a binary op: one per
  operand), for an op with a gradient rule, and ``grad_rtol``, their relative tolerance;
* ``grad_jax``: the twin the gradient tests differentiate, where ``jax``'s has no
  derivative (``None``: ``jax``): the public function that defines one (``zeta``:
  ``jax.scipy.special.zeta``'s series derivative, over ``lax.zeta``'s values);
* ``edges``: values at and beyond the edges of the domain (overflow, poles, NaN results;
  for a binary op, both operands take every pair of them), checked in f32 and f64;
* ``specials``: the op tests put NaN, inf and -inf among its float inputs (``"complex"``:
  also complex ones with a NaN or infinite part).

A new op of ``UNARY`` or ``BINARY`` without a record stops this module's import, naming it
(and with it every test that reads the records):

>>> sorted(UNARY_RECORDS) == sorted(UNARY) and sorted(BINARY_RECORDS) == sorted(BINARY)
True
>>> check_complete({**UNARY, "new_op": ("float", "any")}, BINARY)
Traceback (most recent call last):
...
LookupError: UNARY ops without a record in nxpy/testing/records.py: new_op
"""
from __future__ import annotations

import decimal
import importlib
import math
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np

from ..ops.elementwise import BINARY, UNARY

__all__ = ["Record", "Domain", "Jax", "UNARY_RECORDS", "BINARY_RECORDS", "DOMAINS", "ANY",
           "POS", "SMALL", "NONZERO", "RANGES", "check_complete"]


class Domain(NamedTuple):
    """Inputs in ``[lo, hi]`` (integers: the integer points inside); ``either_sign``: their
    magnitudes are, and each value takes a random sign (nonzero when ``lo > 0``)."""
    lo: float
    hi: float
    either_sign: bool = False


#: the ranges tests draw from, by name
ANY = Domain(-3, 3)
POS = Domain(0.1, 3)
SMALL = Domain(0, 4)
NONZERO = Domain(0.5, 3, either_sign=True)
RANGES = {"any": ANY, "pos": POS, "small": SMALL, "nonzero": NONZERO}


@dataclass(frozen=True)
class Record:
    oracle: Callable
    jax: Callable
    domain: Any = None
    grad: Any = None
    grad_rtol: float = 1e-5
    grad_args: tuple = (0, 1)
    grad_jax: Any = None
    edges: tuple = ()
    specials: Any = False


class Jax:
    """``jax``, ``jax.numpy`` and ``jax.lax``: the ``J`` a twin takes."""

    def __init__(self, jax):
        self.jax, self.jnp, self.lax = jax, jax.numpy, jax.lax
        self.special = importlib.import_module(jax.__name__ + ".scipy.special")
        self.version = tuple(int(v) for v in jax.__version__.split(".")[:2])


# ----------------------------------------------------------------------------------------
# Oracles that NumPy does not have as one function
# ----------------------------------------------------------------------------------------
def _scipy(name):
    """``scipy.special.<name>``, imported when first called (SciPy is a test dependency)."""
    def f(x):
        import scipy.special
        return getattr(scipy.special, name)(x)
    f.__name__ = name
    return f


def _lgamma(x):
    """SciPy's ``gammaln``, +inf at -inf as XLA's (SciPy gives -inf there)."""
    return np.where(np.isneginf(x), np.inf, _scipy("gammaln")(x))


def _digamma(x):
    """SciPy's ``psi``, NaN at the poles as XLA's (SciPy gives -inf at 0)."""
    return np.where((x <= 0) & (np.floor(x) == x), np.nan, _scipy("psi")(x))


def _zeta(x, q):
    """SciPy's Hurwitz ``zeta`` with XLA's rules: NaN where an argument is infinite, for
    ``x < 1`` and for ``q <= 0`` with a fractional ``x``; at the poles (integer ``q <=
    0``) +inf for an even ``x``, NaN for an odd one; +inf at ``x == 1`` whatever ``q``."""
    import scipy.special
    with np.errstate(all="ignore"):
        y = np.where(np.isinf(x) | np.isinf(q), np.nan, scipy.special.zeta(x, q))
        x_int = np.floor(x) == x
        y = np.where((x < 1) | ((q <= 0) & ~x_int), np.nan, y)
        even = x_int & (np.fmod(x, 2) == 0)
        y = np.where((q <= 0) & (np.floor(q) == q), np.where(even, np.inf, np.nan), y)
        return np.where(x == 1, np.inf, y)


def _polygamma(n, x):
    """SciPy's ``polygamma`` of a float order: NaN unless ``n`` is a natural number; at the
    poles NaN for ``n == 0`` (``digamma``), else XLA's ``zeta`` pole rule."""
    import scipy.special
    natural = (np.floor(n) == n) & (n >= 0)
    k = np.where(natural, n, 0).astype(np.int64)
    y = scipy.special.polygamma(k, x)
    pole = (x <= 0) & (np.floor(x) == x)
    y = np.where(pole, np.where(k == 0, np.nan, np.where(k % 2 == 1, np.inf, np.nan)), y)
    return np.where(natural, y, np.nan)


def _next_after_grad_twin(J, a, b):
    """``lax.nextafter``, whose JVP (since jax 0.12) is 1 in ``a`` and 0 in the direction
    ``b``; older jax has none, and gets the same derivative spelled out."""
    if J.version >= (0, 12):
        return J.lax.nextafter(a, b)
    a0, b0 = J.lax.stop_gradient(a), J.lax.stop_gradient(b)
    return a + (J.lax.nextafter(a0, b0) - a0) + 0 * b


def _round_afz(x):
    """Rounding half away from zero, exactly (decimal arithmetic on each value)."""
    def one(v):
        if not math.isfinite(v):
            return v
        return float(decimal.Decimal(v).to_integral_value(rounding=decimal.ROUND_HALF_UP))
    return np.vectorize(one, otypes=[np.float64])(x) if x.size else x


def _sign(x):
    """NumPy's sign of reals; ``x / |x|`` of complex values, as XLA (``sign(inf + 0j)`` is
    ``nan + 0j``, where NumPy says 1)."""
    if x.dtype.kind != "c":
        return np.sign(x)
    m, out = np.abs(x), np.empty_like(x)
    out.real, out.imag = x.real / m, x.imag / m  # part by part: NumPy's x / m is complex
    return np.where(x == 0, x, out)


def _trunc_div(a, b):
    """Integer division rounding toward zero (Python's ``//`` floors)."""
    a, b = np.broadcast_arrays(a, b)
    q = [int(x) // int(y) if (x >= 0) == (y >= 0) else -(abs(int(x)) // abs(int(y)))
         for x, y in zip(a.ravel().tolist(), b.ravel().tolist())]
    return np.array(q, dtype=a.dtype).reshape(a.shape)


def _jround(J, x):
    return J.lax.round(x, J.lax.RoundingMethod.AWAY_FROM_ZERO)


def _jnp(name):
    """The twin ``jax.numpy.<name>`` of arrays."""
    return lambda J, *xs: getattr(J.jnp, name)(*xs)


R = Record
_UNIT = Domain(-0.9, 0.9)
_GROWS = Domain(-2, 2)  # exp and the hyperbolic functions: results stay small

UNARY_RECORDS = {
    "negate": R(np.negative, lambda J, x: -x, grad=(-2, 2), specials=True),
    "abs": R(np.abs, _jnp("abs"), grad=(0.2, 2), specials=True),
    "sign": R(_sign, _jnp("sign"), specials=True),
    "floor": R(np.floor, _jnp("floor"), specials=True),
    "ceil": R(np.ceil, _jnp("ceil"), specials=True),
    "round": R(_round_afz, _jround, specials=True),
    "exp": R(np.exp, _jnp("exp"), _GROWS, edges=(-200, -100, 88, 89, 100, 710), specials=True),
    "expm1": R(np.expm1, _jnp("expm1"), _GROWS, edges=(-200, -1e-8, 1e-8, 100, 710)),
    "log": R(np.log, _jnp("log"), Domain(0.1, 4), grad=(0.5, 3),
             edges=(0, -1, 1e-30, 1e30, np.inf)),
    "log1p": R(np.log1p, _jnp("log1p"), Domain(0, 4), grad=(-0.5, 2),
               edges=(-1, -2, 1e-9, 1e30)),
    "sqrt": R(np.sqrt, _jnp("sqrt"), Domain(0, 4), grad=(0.5, 3),
              edges=(-1, 0, -0.0, 1e30, np.inf), specials=True),
    "rsqrt": R(lambda x: 1 / np.sqrt(x), lambda J, x: J.lax.rsqrt(x), Domain(0.1, 4),
               grad=(0.5, 3), edges=(0, -1, 1e-30, np.inf)),
    "cbrt": R(np.cbrt, lambda J, x: J.lax.cbrt(x), grad=(0.3, 3),
              edges=(-8, -1e30, 1e-30, np.inf, -np.inf)),
    "sin": R(np.sin, _jnp("sin"), edges=(1e4, -1e4, 0)),
    "cos": R(np.cos, _jnp("cos"), edges=(1e4, -1e4)),
    "tan": R(np.tan, _jnp("tan"), Domain(-1, 1), grad=(-1.2, 1.2), grad_rtol=3e-5,
             edges=(1e4, 1.5707963, -1.5707963)),
    "asin": R(np.arcsin, _jnp("arcsin"), _UNIT, edges=(1, -1, 1.5, -2)),
    "acos": R(np.arccos, _jnp("arccos"), _UNIT, edges=(1, -1, 1.5, -2)),
    "atan": R(np.arctan, _jnp("arctan"), edges=(1e30, -1e30, np.inf, -np.inf)),
    "sinh": R(np.sinh, _jnp("sinh"), _GROWS, edges=(-100, 100, 1000, 1e-8)),
    "cosh": R(np.cosh, _jnp("cosh"), _GROWS, edges=(-100, 100, 1000)),
    "tanh": R(np.tanh, _jnp("tanh"), grad=(-2, 2), edges=(-100, 100, 1e-8, -1e-8, 20, np.inf)),
    "asinh": R(np.arcsinh, _jnp("arcsinh"), edges=(1e30, -1e30, 1e-8)),
    "acosh": R(np.arccosh, _jnp("arccosh"), Domain(1.1, 4), grad=(1.2, 3), grad_rtol=3e-5,
               edges=(1, 0.5, 1e30, -1)),
    "atanh": R(np.arctanh, _jnp("arctanh"), _UNIT, edges=(1, -1, 1.5, 1e-8)),
    "sigmoid": R(_scipy("expit"), lambda J, x: J.jax.nn.sigmoid(x),
                 edges=(-100, 100, -1000, 1000, -20, 20, np.inf, -np.inf)),
    "erf": R(_scipy("erf"), lambda J, x: J.lax.erf(x), grad=(-2, 2),
             edges=(-10, 10, 1e-8, np.inf)),
    "erfc": R(_scipy("erfc"), lambda J, x: J.lax.erfc(x), grad=(-2, 2),
              edges=(-10, 10, 30, 1e-8, -np.inf)),
    "erf_inv": R(_scipy("erfinv"), lambda J, x: J.lax.erf_inv(x), _UNIT, grad_rtol=3e-5,
                 edges=(1, -1, 1.5, -1.5, 0.999999, -0.999999, 1e-8)),
    # log|Γ| has zeros at 1 and 2, where XLA's f32 Lanczos sum leaves ~1e-7: kept away
    "lgamma": R(_lgamma, lambda J, x: J.lax.lgamma(x), Domain(2.5, 8),
                grad=(0.5, 4), edges=(0, -1, -2.5, 0.5, 1e-30, 1e30, np.inf, -np.inf)),
    "digamma": R(_digamma, lambda J, x: J.lax.digamma(x), Domain(0.2, 8),
                 grad=(0.5, 4), edges=(0, -1, -2.5, 0.5, 1e-8, 1e30, np.inf, -np.inf)),
    "bessel_i1e": R(_scipy("i1e"), lambda J, x: J.lax.bessel_i1e(x), Domain(-10, 10),
                    grad=(-10, 10), edges=(0, 1e-30, 8, -8, 7.9, 8.1, 1e30, np.inf, -np.inf)),
    "is_nan": R(np.isnan, _jnp("isnan"), specials="complex"),
    "is_infinity": R(np.isinf, _jnp("isinf"), specials="complex"),
    "bitwise_not": R(np.invert, _jnp("invert")),
    "logical_not": R(lambda x: x == 0, _jnp("logical_not"), specials="complex"),
}

#: both operands of the float edge cases of arithmetic: signed zeros, infinities, NaN, and
#: magnitudes whose products and quotients overflow or underflow
_FLOAT_EDGES = (0.0, -0.0, 1.0, -1.0, 2.5, -8.0, np.inf, -np.inf, np.nan, 1e30, 1e-30)
_ARITH = dict(edges=_FLOAT_EDGES)
_G2 = ((-2, 2), (-2, 2))

BINARY_RECORDS = {
    "add": R(np.add, _jnp("add"), (ANY, ANY), grad=_G2, **_ARITH),
    "subtract": R(np.subtract, _jnp("subtract"), (ANY, ANY), grad=_G2, **_ARITH),
    "multiply": R(np.multiply, _jnp("multiply"), (ANY, ANY), grad=_G2, **_ARITH),
    "divide": R(np.true_divide, _jnp("divide"), (ANY, NONZERO), grad=((-2, 2), (0.5, 2)),
                **_ARITH),
    "quotient": R(_trunc_div, lambda J, a, b: J.lax.div(a, b), (ANY, NONZERO)),
    "remainder": R(np.fmod, lambda J, a, b: J.lax.rem(a, b), (ANY, NONZERO),
                   grad=((-4, 4), (0.7, 1.6)), **_ARITH),
    "pow": R(np.power, _jnp("power"), (POS, SMALL), grad=((0.5, 2), (-1.5, 1.5)), **_ARITH),
    "atan2": R(np.arctan2, _jnp("arctan2"), (ANY, ANY), grad=_G2, **_ARITH),
    "min": R(np.minimum, _jnp("minimum"), (ANY, ANY), grad=_G2, **_ARITH),
    "max": R(np.maximum, _jnp("maximum"), (ANY, ANY), grad=_G2, **_ARITH),
    # no edges: the edge test computes f32 oracles in f64 (one f64 step is no f32 step);
    # tests/test_ops.py::test_next_after_bits checks every float type bit for bit
    "next_after": R(np.nextafter, lambda J, a, b: J.lax.nextafter(a, b), (ANY, ANY),
                    grad_jax=_next_after_grad_twin),
    # XLA's f32 zeta (nine terms and Euler-Maclaurin, in f32) is a few ulps off
    "zeta": R(_zeta, lambda J, x, q: J.lax.zeta(x, q), (Domain(1.5, 6), Domain(0.2, 4)),
              edges=(1.0, 2.0, 3.0, 0.5, 0.0, -1.0, -2.5, 30.0, np.inf, np.nan),
              grad_jax=lambda J, x, q: J.special.zeta(x, q)),
    # a float order is NaN unless it is a natural number: tests/test_ops.py::
    # test_polygamma_orders draws integer orders; the gradient flows to x alone
    "polygamma": R(_polygamma, lambda J, n, x: J.lax.polygamma(n, x),
                   (Domain(0, 4), Domain(0.2, 4)), grad=((1, 1), (0.5, 3)), grad_args=(1,)),
    "bitwise_and": R(np.bitwise_and, _jnp("bitwise_and"), (ANY, ANY)),
    "bitwise_or": R(np.bitwise_or, _jnp("bitwise_or"), (ANY, ANY)),
    "bitwise_xor": R(np.bitwise_xor, _jnp("bitwise_xor"), (ANY, ANY)),
    "left_shift": R(np.left_shift, _jnp("left_shift"), (ANY, SMALL)),
    "right_shift": R(np.right_shift, _jnp("right_shift"), (ANY, SMALL)),
    "equal": R(np.equal, _jnp("equal"), (ANY, ANY)),
    "not_equal": R(np.not_equal, _jnp("not_equal"), (ANY, ANY)),
    "less": R(np.less, _jnp("less"), (ANY, ANY)),
    "less_equal": R(np.less_equal, _jnp("less_equal"), (ANY, ANY)),
    "greater": R(np.greater, _jnp("greater"), (ANY, ANY)),
    "greater_equal": R(np.greater_equal, _jnp("greater_equal"), (ANY, ANY)),
    "logical_and": R(np.logical_and, _jnp("logical_and"), (ANY, ANY)),
    "logical_or": R(np.logical_or, _jnp("logical_or"), (ANY, ANY)),
    "logical_xor": R(np.logical_xor, _jnp("logical_xor"), (ANY, ANY)),
}
del R


def check_complete(unary=UNARY, binary=BINARY):
    """Raises LookupError naming every op of the tables without a record (or a record
    without an op)."""
    for name, table, records in (("UNARY", unary, UNARY_RECORDS),
                                 ("BINARY", binary, BINARY_RECORDS)):
        missing = sorted(set(table) - set(records))
        if missing:
            raise LookupError(f"{name} ops without a record in nxpy/testing/records.py: "
                              f"{', '.join(missing)}")
        stray = sorted(set(records) - set(table))
        if stray:
            raise LookupError(f"records in nxpy/testing/records.py for no {name} op: "
                              f"{', '.join(stray)}")


check_complete()

#: each unary op with a restricted domain: its ``(lo, hi)`` (the fuzzer clips into it)
DOMAINS = {op: (r.domain.lo, r.domain.hi) for op, r in UNARY_RECORDS.items() if r.domain}
