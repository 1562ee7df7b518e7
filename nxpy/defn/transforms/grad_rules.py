"""Gradient rules: for each op, the cotangents of its inputs given the cotangent of its
result (reverse mode, as Nx's ``Nx.Defn.Grad`` and JAX's transpose rules). This module
holds the rules of the base op set and of the collectives; the table itself,
``nxpy.ops.core.GRAD_RULES``, lives with the ops, so an op family may register its rules
next to its definition.

A rule is ``rule(ctx, e, xs, out, g) -> [cotangent or None, ...]``: ``e`` is the Expr node
(its options are ``e.attrs``), ``xs`` the forward values of its tensor arguments in the
order :meth:`Expr.tensor_args` lists them, ``out`` its forward result and ``g`` the
cotangent of the result; it returns one cotangent per entry of ``xs`` (None: no
gradient flows there). Rules build their result with the front-end ops, so gradients are
ordinary Expr graphs. A rule may return a cotangent of the result's shape for an operand
that was broadcast, and in the result's type: the engine (:mod:`nxpy.defn.transforms.grad`) sums it
back to the operand's shape, converts it to the operand's type and, inside ``shard_map``,
sums it over the mesh axes along which the operand did not vary. Ops without a gradient
(comparisons, integer and bitwise ops, argmax, iota, ...) are declared with
:func:`non_differentiable`; ``tests/test_grad.py`` checks that every op in
``nxpy.ops.PRIMITIVES`` has one or the other.

Control flow (cond, while, shard_map) and the markers (stop_grad, custom_grad) are
handled by the engine itself, which replays and differentiates their sub-functions.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ... import ops as O
from ... import types as T
from ...ops.core import GRAD_RULES, NON_DIFFERENTIABLE, non_differentiable, register_grad_rule
from ..sharding.collectives import (all_gather, all_slice, all_to_all, axis_index, psum,
                                    reduce_scatter)
from ..expr import EXPR

__all__ = ["GRAD_RULES", "NON_DIFFERENTIABLE", "register_grad_rule", "non_differentiable",
           "zeros"]

def _c(like, value):
    """The scalar ``value`` in the type of ``like`` (a weak constant)."""
    return O.full((), value, type=like.type)


def _trigamma(x):
    """The trigamma function ``ψ'(x)``, the derivative of ``digamma`` (JAX's
    ``polygamma(1, x)``), as ops in ``x``'s type: reflection below 1/2 (``ψ'(1 - x) +
    ψ'(x) = π² / sin²(πx)``), the recurrence ``ψ'(z) = ψ'(z + 1) + 1/z²`` up to 8, then
    the asymptotic series; NaN at the poles."""
    reflect = O.less(x, _c(x, 0.5))
    z = O.select(reflect, 1 - x, x)
    shift = O.full((), 0, type=x.type)
    for _ in range(8):
        small = O.less(z, _c(z, 8))
        shift = shift + O.select(small, 1 / (z * z), _c(z, 0))
        z = O.select(small, z + 1, z)
    w = 1 / (z * z)
    series = (1 / z) * (1 + w * (_c(z, 1 / 6) - w * (_c(z, 1 / 30) - w * (
        _c(z, 1 / 42) - w * (_c(z, 1 / 30) - w * (_c(z, 5 / 66) - w * (
            _c(z, 691 / 2730) - w * _c(z, 7 / 6))))))))
    psi1 = series + 0.5 * w + shift
    s = O.sin(_c(x, math.pi) * x)
    reflected = _c(x, math.pi ** 2) / (s * s) - psi1
    pole = O.logical_and(O.less_equal(x, _c(x, 0)), O.equal(O.floor(x), x))
    return O.select(pole, _c(x, math.nan), O.select(reflect, reflected, psi1))


def _bernoulli_coefficients(n: int) -> tuple:
    """``(2j)! / B_2j`` for ``j = 1..n`` (``B`` the Bernoulli numbers, from their
    recurrence in exact fractions): the Euler-Maclaurin coefficients of :func:`_zeta_partials`.

    >>> _bernoulli_coefficients(3)
    (12.0, -720.0, 30240.0)
    """
    b = [Fraction(1)]
    for m in range(1, 2 * n + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return tuple(float(math.factorial(2 * j) / b[2 * j]) for j in range(1, n + 1))


_ZETA_COEFS = _bernoulli_coefficients(16)


def _zeta_partials(s, a):
    """``(∂ζ/∂s, ∂ζ/∂a)`` of the Hurwitz ``zeta(s, a)`` (``s``, ``a`` of one shape and
    type), as JAX's ``jax.scipy.special.zeta`` differentiates: the derivatives of its
    Euler-Maclaurin expansion (Johansson 2015, formula 5) with ``N = M = 8`` terms in f32
    and 16 otherwise, ``ζ ≈ S + I + T``: ``S = Σ_{k<N} (a + k)^-s``, ``I = A^(1-s) / (s -
    1)``, ``T = A^-s (1/2 + Σ_{j<M} P_2j / c_j)`` with ``A = a + N``, ``P_i = Π_{m≤i} (s +
    m) / A`` (clipped at the type's largest value) and ``c_j`` the Bernoulli coefficients."""
    n = 8 if s.type == T.F32 else 16
    lead = s.shape
    last = len(lead)

    def trailing(x):  # x with a trailing axis of size 1, to broadcast against the terms
        return O.reshape(x, lead + (1,))

    def terms(count):
        return O.iota(lead + (count,), axis=last, type=s.type)
    s_, a_ = trailing(s), trailing(a)
    big_a = a + _c(a, n)
    log_a = O.log(big_a)
    ak = a_ + terms(n)
    pk = O.pow(ak, O.negate(s_))
    ds = O.negate(O.sum(O.log(ak) * pk, axes=[last]))
    da = O.negate(s * O.sum(pk / ak, axes=[last]))
    i_term = O.pow(big_a, 1 - s) / (s - 1)
    ds = ds - i_term * (log_a + 1 / (s - 1))
    t0 = O.pow(big_a, O.negate(s))
    da = da - t0
    m = terms(2 * n)
    big_a_ = trailing(big_a)
    p = O.cumulative_product((s_ + m) / big_a_, axis=last)
    # d P_i / ds = P_i Σ_{m≤i} 1 / (s + m); d P_i / da = -(i + 1) P_i / A; no derivative
    # where the clip holds P at the largest value
    p_ds = p * O.cumulative_sum(1 / (s_ + m), axis=last)
    p_da = O.negate(p * (m + 1)) / big_a_
    top = _c(s, T.max_finite(s.type))
    kept = O.less(p, top)
    p, p_ds, p_da = O.min(p, top), O.select(kept, p_ds, 0 * p_ds), O.select(kept, p_da, 0 * p_da)
    coefs = O.tensor(list(_ZETA_COEFS[:n]), type=s.type)

    def even(x):  # P_0, P_2, ..., over the coefficients
        return O.sum(O.slice(x, [0] * (last + 1), list(lead) + [2 * n], [1] * last + [2]) / coefs,
                     axes=[last])
    series, series_ds, series_da = even(p), even(p_ds), even(p_da)
    half = _c(s, 0.5) + series
    ds = ds + t0 * (series_ds - log_a * half)
    da = da + t0 * (series_da - s * half / big_a)
    return ds, da


def zeros(shape, type):
    return O.broadcast(O.full((), 0, type=type), tuple(shape))


def unbroadcast(c, shape):
    """``c`` summed down to ``shape``: over the leading dims it has beyond ``shape`` and
    the size-1 dims of ``shape`` it was broadcast along (a cotangent made its operand's)."""
    c = O.to_tensor(c)
    if c.shape == tuple(shape):
        return c
    lead = len(c.shape) - len(shape)
    axes = list(range(lead)) + [lead + i for i, d in enumerate(shape)
                                if d == 1 and c.shape[lead + i] != 1]
    return O.reshape(O.sum(c, axes=axes) if axes else c, tuple(shape))


def _same(g, like):
    """``g`` broadcast to the shape of ``like`` (the result of an elementwise op)."""
    return g if g.shape == like.shape else O.broadcast(g, like.shape)


# ----------------------------------------------------------------------------------------
# Elementwise: d out / d x in terms of x, the result y and the cotangent g (as JAX's
# JVP rules, so results agree to the last bit where the formulas do)
# ----------------------------------------------------------------------------------------
#: Cephes' Chebyshev coefficients of exp(-|x|) I0(x) on [0, 8] and of exp(-x) sqrt(x) I0(x)
#: above (JAX's bessel_i0e; f32 and the 16-bit types use the tail of each series)
_I0E_A = (
    -4.41534164647933937950E-18, 3.33079451882223809783E-17, -2.43127984654795469359E-16,
    1.71539128555513303061E-15, -1.16853328779934516808E-14, 7.67618549860493561688E-14,
    -4.85644678311192946090E-13, 2.95505266312963983461E-12, -1.72682629144155570723E-11,
    9.67580903537323691224E-11, -5.18979560163526290666E-10, 2.65982372468238665035E-9,
    -1.30002500998624804212E-8, 6.04699502254191894932E-8, -2.67079385394061173391E-7,
    1.11738753912010371815E-6, -4.41673835845875056359E-6, 1.64484480707288970893E-5,
    -5.75419501008210370398E-5, 1.88502885095841655729E-4, -5.76375574538582365885E-4,
    1.63947561694133579842E-3, -4.32430999505057594430E-3, 1.05464603945949983183E-2,
    -2.37374148058994688156E-2, 4.93052842396707084878E-2, -9.49010970480476444210E-2,
    1.71620901522208775349E-1, -3.04682672343198398683E-1, 6.76795274409476084995E-1)
_I0E_B = (
    -7.23318048787475395456E-18, -4.83050448594418207126E-18, 4.46562142029675999901E-17,
    3.46122286769746109310E-17, -2.82762398051658348494E-16, -3.42548561967721913462E-16,
    1.77256013305652638360E-15, 3.81168066935262242075E-15, -9.55484669882830764870E-15,
    -4.15056934728722208663E-14, 1.54008621752140982691E-14, 3.85277838274214270114E-13,
    7.18012445138366623367E-13, -1.79417853150680611778E-12, -1.32158118404477131188E-11,
    -3.14991652796324136454E-11, 1.18891471078464383424E-11, 4.94060238822496958910E-10,
    3.39623202570838634515E-9, 2.26666899049817806459E-8, 2.04891858946906374183E-7,
    2.89137052083475648297E-6, 6.88975834691682398426E-5, 3.36911647825569408990E-3,
    8.04490411014108831608E-1)


def _chebyshev(x, coefficients):
    b0 = b1 = b2 = O.full((), 0, type=x.type)
    for c in coefficients:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + _c(x, c)
    return _c(x, 0.5) * (b0 - b2)


def _bessel_i0e(x):
    """``exp(-|x|) I0(x)`` as ops, as JAX's ``bessel_i0e`` (Cephes' series)."""
    wide = x.type.bits == 64
    a, b = (_I0E_A, _I0E_B) if wide else (_I0E_A[-18:], _I0E_B[-7:])
    z = O.abs(x if x.type.bits >= 32 else O.as_type(x, "f32"))
    small = _chebyshev(_c(z, 0.5) * z - _c(z, 2), a)
    large = _chebyshev(_c(z, 32) / z - _c(z, 2), b) / O.sqrt(z)
    return O.as_type(O.select(O.less_equal(z, _c(z, 8)), small, large), x.type)


def _bessel_i1e_slope(x, y):
    """``d bessel_i1e / dx = i0e(x) - y (sign(x) + 1 / x)``, 1/2 where ``|x|`` is within
    machine epsilon of 0 (JAX's rule)."""
    eps = _c(x, {"f16": 2 ** -10, "bf16": 2 ** -7, "f32": 2 ** -23, "f64": 2 ** -52}[str(x.type)])
    big = O.greater(O.abs(x), eps)
    safe = O.select(big, x, O.broadcast(eps, x.shape))
    slope = _bessel_i0e(safe) - y * (O.sign(safe) + 1 / safe)
    return O.select(big, slope, O.broadcast(_c(x, 0.5), x.shape))


_UNARY = {
    "negate": lambda x, y, g: O.negate(g),
    "abs": lambda x, y, g: O.select(O.greater_equal(x, 0), g, O.negate(g)),
    "exp": lambda x, y, g: g * y,
    "expm1": lambda x, y, g: g * (y + 1),
    "log": lambda x, y, g: g / x,
    "log1p": lambda x, y, g: g / (x + 1),
    "sqrt": lambda x, y, g: g * (_c(y, 0.5) / y),
    "rsqrt": lambda x, y, g: g * (_c(y, -0.5) * (y / x)),
    "cbrt": lambda x, y, g: g * (_c(y, 1 / 3) * (1 / (y * y))),
    "sin": lambda x, y, g: g * O.cos(x),
    "cos": lambda x, y, g: O.negate(g * O.sin(x)),
    "tan": lambda x, y, g: g * (1 + y * y),
    "asin": lambda x, y, g: g * O.rsqrt(1 - x * x),
    "acos": lambda x, y, g: g * O.negate(O.rsqrt(1 - x * x)),
    "atan": lambda x, y, g: g / (1 + x * x),
    "sinh": lambda x, y, g: g * O.cosh(x),
    "cosh": lambda x, y, g: g * O.sinh(x),
    "tanh": lambda x, y, g: (g + g * y) * (1 - y),
    "asinh": lambda x, y, g: g * O.rsqrt(x * x + 1),
    "acosh": lambda x, y, g: g * O.rsqrt(x * x - 1),
    "atanh": lambda x, y, g: (1 / (1 + x)) * (g / (1 - x)),
    "sigmoid": lambda x, y, g: g * (y * (1 - y)),
    "erf": lambda x, y, g: _c(y, 2 / math.sqrt(math.pi)) * (g * O.exp(O.negate(x * x))),
    "erfc": lambda x, y, g: _c(y, -2 / math.sqrt(math.pi)) * (g * O.exp(O.negate(x * x))),
    "erf_inv": lambda x, y, g: _c(y, math.sqrt(math.pi) / 2) * (g * O.exp(y * y)),
    "lgamma": lambda x, y, g: g * O.digamma(x),
    "digamma": lambda x, y, g: g * _trigamma(x),
    "bessel_i1e": lambda x, y, g: g * _bessel_i1e_slope(x, y),
}


def _unary_rule(f):
    def rule(ctx, e, xs, out, g):
        (x,) = xs
        if not out.type.is_inexact:
            return [None]
        if x.type.is_complex and not out.type.is_complex:
            if e.op == "abs":  # JAX's rule: g * conj(x) / |x|, with |x| == 0 read as 1
                safe = O.select(O.equal(out, 0), _same(_c(out, 1), out), out)
                return [O.conjugate(x) * (g / safe)]
            raise NotImplementedError(f"grad: the gradient of {e.op} of a complex value is "
                                      f"not supported yet")
        return [f(O.as_type(x, out.type), out, g)]
    return rule


for _op, _f in _UNARY.items():
    GRAD_RULES[_op] = _unary_rule(_f)
non_differentiable("sign", "floor", "ceil", "round", "is_nan", "is_infinity", "bitwise_not",
                   "logical_not")


def _balanced_eq(x, z, y):
    """JAX's share of a max/min's cotangent for ``x``: 1 where x won alone, 1/2 on a tie."""
    one = O.select(O.equal(x, z), _c(z, 1), _c(z, 0))
    return one / O.select(O.equal(y, z), _c(z, 2), _c(z, 1))


def _binary(f):
    def rule(ctx, e, xs, out, g):
        if not out.type.is_inexact:
            return [None, None]
        a, b = (O.as_type(v, out.type) for v in xs)
        return list(f(a, b, out, g))
    return rule


def _constant_of(t):
    e = t.data
    return e.attrs["value"].item() if getattr(e, "op", None) == "constant" else None


def _integer_exponent(b) -> bool:
    """Whether pow's exponent ``b`` (converted to the result's type by the rule's wrapper,
    :func:`_binary`) was an integer tensor."""
    e = b.data
    return getattr(e, "op", None) == "as_type" and not e.args[0].type.is_inexact


def _pow(a, b, y, g):
    # JAX's rules: an integer exponent n gives n * a ** (n - 1), but 0 where n == 0, even
    # at a == 0 (lax.integer_pow, and lax.pow's integer branch); a floating-point one
    # gives b * a ** (b - 1) as it comes (NaN at 0 ** 0.0). A constant exponent follows
    # the integer rule: a Python number takes the tensor's type, so x ** 0 and x ** 0.0
    # are one graph (docs/guarantees.md, departures from JAX)
    k = _constant_of(b)
    if k is not None:  # a constant exponent (x ** 2): no select, k - 1 folded here
        ga = _same(_c(y, 0), y) if k == 0 else g * (_c(y, k) * O.pow(a, _c(y, k - 1)))
    elif _integer_exponent(b):
        ga = g * O.select(O.equal(b, 0), _same(_c(y, 0), y), b * O.pow(a, b - 1))
    else:
        ga = g * (b * O.pow(a, b - 1))
    gb = g * (O.log(O.select(O.equal(a, 0), _same(_c(a, 1), a), a)) * y)
    return ga, gb


def _remainder(a, b, y, g):
    q = a / b
    return g, O.negate(g) * (O.sign(q) * O.floor(O.abs(q)))


_BINARY = {
    "add": lambda a, b, y, g: (g, g),
    "subtract": lambda a, b, y, g: (g, O.negate(g)),
    "multiply": lambda a, b, y, g: (g * b, a * g),
    "divide": lambda a, b, y, g: (g / b, (O.negate(g) * a) * (1 / (b * b))),
    "remainder": _remainder,
    "pow": _pow,
    "atan2": lambda a, b, y, g: (g * (b / (a * a + b * b)), g * (O.negate(a) / (a * a + b * b))),
    "max": lambda a, b, y, g: (g * _balanced_eq(a, y, b), g * _balanced_eq(b, y, a)),
    "min": lambda a, b, y, g: (g * _balanced_eq(a, y, b), g * _balanced_eq(b, y, a)),
    # zero for the order (JAX raises there: no derivative in n)
    "polygamma": lambda n, x, y, g: (_same(_c(y, 0), y), g * O.polygamma(n + 1, x)),
    # JAX's: 1 in x, 0 in the direction (lax.nextafter's JVP since jax 0.12)
    "next_after": lambda x, d, y, g: (g, _same(_c(y, 0), y)),
    "zeta": lambda s, a, y, g: tuple(g * d for d in _zeta_partials(_same(s, y), _same(a, y))),
}
for _op, _f in _BINARY.items():
    GRAD_RULES[_op] = _binary(_f)
non_differentiable("quotient", "bitwise_and", "bitwise_or", "bitwise_xor",
                   "left_shift", "right_shift", "equal", "not_equal", "less", "less_equal",
                   "greater", "greater_equal", "logical_and", "logical_or", "logical_xor")


@register_grad_rule("select")
def _select(ctx, e, xs, out, g):
    p, _, _ = xs
    z = _same(_c(g, 0), out)
    p = _same(O.not_equal(p, 0) if not p.type.is_pred else p, out)
    return [None, O.select(p, g, z), O.select(p, z, g)]


@register_grad_rule("clip")
def _clip(ctx, e, xs, out, g):
    # jnp.clip's gradient: clip(x, lo, hi) = min(hi, max(lo, x)), each with JAX's tie rule
    x, lo, hi = (_same(O.as_type(v, out.type), out) for v in xs)
    inner = O.max(lo, x)
    g_inner = g * _balanced_eq(inner, out, hi)
    return [g_inner * _balanced_eq(x, inner, lo), g_inner * _balanced_eq(lo, inner, x),
            g * _balanced_eq(hi, out, inner)]


@register_grad_rule("as_type")
def _as_type(ctx, e, xs, out, g):
    (x,) = xs
    return [O.as_type(g, x.type) if x.type.is_inexact and out.type.is_inexact else None]


@register_grad_rule("optimization_barrier")
def _optimization_barrier(ctx, e, xs, out, gs):
    return list(gs)


@register_grad_rule("hook")
def _hook(ctx, e, xs, out, g):
    return [g]  # print_value and hook are the identity for gradients


@register_grad_rule("sharding_constraint")
def _sharding_constraint(ctx, e, xs, out, g):
    """The cotangent is laid out as the value was (JAX's transpose of the constraint)."""
    return [EXPR.node("sharding_constraint", O.template(g.shape, g.type, g.names), g,
                      **e.attrs)]


@register_grad_rule("runtime_call")
def _runtime_call(ctx, e, xs, out, g):
    # a cotangent reaches every node downstream of the differentiated value, stop_grad or
    # not: only inputs that are not stop_grad's (or integer) would carry it further
    if all(x.op in NON_DIFFERENTIABLE or not x.type.is_inexact for x in e.tensor_args()):
        return [None] * len(xs)
    raise ValueError(
        f"grad: runtime_call is not differentiable (it calls {e.attrs['call']!r} on the "
        f"host, which nxpy cannot see into), but a gradient flows through it: wrap its "
        f"inputs in stop_grad to treat its result as a constant, or give it a gradient "
        f"with custom_grad")


non_differentiable("bitcast", "iota", "eye", "constant", "tensor", "parameter", "argmax",
                   "argmin", "all", "any", "axis_index")


# ----------------------------------------------------------------------------------------
# Shapes and indexing
# ----------------------------------------------------------------------------------------
@register_grad_rule("reshape")
def _reshape(ctx, e, xs, out, g):
    return [O.reshape(g, xs[0].shape)]


@register_grad_rule("broadcast")
def _broadcast(ctx, e, xs, out, g):
    (x,) = xs
    axes = e.attrs["axes"]
    summed = [d for d in range(len(out.shape)) if d not in axes]
    summed += [a for i, a in enumerate(axes) if x.shape[i] == 1 and out.shape[a] != 1]
    r = O.sum(g, axes=sorted(summed)) if summed else g
    return [O.reshape(r, x.shape)]


@register_grad_rule("transpose")
def _transpose(ctx, e, xs, out, g):
    axes = e.attrs["axes"]
    return [O.transpose(g, [axes.index(i) for i in range(len(axes))])]


@register_grad_rule("reverse")
def _reverse(ctx, e, xs, out, g):
    return [O.reverse(g, e.attrs["axes"])]


@register_grad_rule("pad")
def _pad(ctx, e, xs, out, g):
    x, _ = xs
    cfg = e.attrs["config"]
    unpadded = O.pad(g, 0, [(-lo, -hi, 0) for lo, hi, _ in cfg])
    gx = O.slice(unpadded, [0] * x.rank, unpadded.shape, [it + 1 for _, _, it in cfg])
    return [gx, O.sum(g) - O.sum(gx)]


def _scatter_strided(g, shape, starts, strides):
    """``g`` placed in zeros of ``shape`` at ``starts + strides * i`` (the transpose of a
    strided static slice)."""
    cfg = []
    for d, s, st, n in zip(shape, starts, strides, g.shape):
        if n == 0:
            return zeros(shape, g.type)
        cfg.append((s, d - (s + (n - 1) * st + 1), st - 1))
    return O.pad(g, 0, cfg)


@register_grad_rule("slice")
def _slice(ctx, e, xs, out, g):
    return [_scatter_strided(g, xs[0].shape, e.attrs["start_indices"], e.attrs["strides"])]


@register_grad_rule("dynamic_slice")
def _dynamic_slice(ctx, e, xs, out, g):
    x, starts = xs[0], xs[1:]
    lengths, strides = e.attrs["lengths"], e.attrs["strides"]
    # spread the strided result over the slice's window, then write it where the (clamped)
    # slice was read
    window = _scatter_strided(g, lengths, [0] * x.rank, strides)
    clamped = [O.clip(s, 0, d - n) for s, d, n in zip(starts, x.shape, lengths)]
    return [O.put_slice(zeros(x.shape, g.type), clamped, window)] + [None] * len(starts)


@register_grad_rule("put_slice")
def _put_slice(ctx, e, xs, out, g):
    starts, update = xs[1:-1], xs[-1]
    gx = O.put_slice(g, starts, zeros(update.shape, g.type))
    gu = O.slice(g, starts, update.shape)
    return [gx] + [None] * len(starts) + [gu]


@register_grad_rule("concatenate")
def _concatenate(ctx, e, xs, out, g):
    axis, at, cts = e.attrs["axis"], 0, []
    for x in xs:
        starts = [0] * g.rank
        starts[axis] = at
        lengths = list(g.shape)
        lengths[axis] = x.shape[axis]
        cts.append(O.slice(g, starts, lengths))
        at += x.shape[axis]
    return cts


# ----------------------------------------------------------------------------------------
# Reductions and contractions
# ----------------------------------------------------------------------------------------
def _expand(g, x, axes, keep_axes):
    """A reduction's cotangent broadcast back over the reduced ``axes`` of ``x``."""
    kept = g if keep_axes else O.reshape(g, [1 if i in axes else d for i, d in enumerate(x.shape)])
    return O.broadcast(kept, x.shape)


@register_grad_rule("sum")
def _sum(ctx, e, xs, out, g):
    return [_expand(g, xs[0], e.attrs["axes"], e.attrs["keep_axes"])]


@register_grad_rule("reduce_max", "reduce_min")
def _reduce_chooser(ctx, e, xs, out, g):
    (x,) = xs
    if not x.type.is_inexact:
        return [None]
    axes, keep = e.attrs["axes"], e.attrs["keep_axes"]
    where = O.as_type(O.equal(x, _expand(out, x, axes, keep)), g.type)
    counts = O.sum(where, axes=axes, keep_axes=keep)
    return [_expand(g / counts, x, axes, keep) * where]


def _exclusive_products(x, axis):
    """Along ``axis``: the product of the elements before each element, and of those
    after it (prefix scans by doubling, so zeros need no division)."""
    n = x.shape[axis]

    def shifted(a, k, forward):
        cfg = [(0, 0, 0)] * a.rank
        cfg[axis] = (k, -k, 0) if forward else (-k, k, 0)
        return O.pad(a, 1, cfg)

    def scan(forward):
        acc, k = shifted(x, 1, forward), 1
        while k < n:
            acc = acc * shifted(acc, k, forward)
            k *= 2
        return acc
    return scan(True), scan(False)


@register_grad_rule("product")
def _product(ctx, e, xs, out, g):
    (x,) = xs
    if not out.type.is_inexact:
        return [None]
    axes, keep = e.attrs["axes"], e.attrs["keep_axes"]
    x = O.as_type(x, out.type)
    rest = [i for i in range(x.rank) if i not in axes]
    perm = list(axes) + rest
    moved = O.transpose(x, perm) if perm != list(range(x.rank)) else x
    flat = O.reshape(moved, (math.prod(x.shape[i] for i in axes),)
                     + tuple(x.shape[i] for i in rest))
    before, after = _exclusive_products(flat, 0)
    others = O.reshape(before * after, moved.shape)
    others = O.transpose(others, [perm.index(i) for i in range(x.rank)]) if perm != list(
        range(x.rank)) else others
    return [_expand(g, x, axes, keep) * others]


def _contract(x, cx, bx, y, cy, by):
    """``dot(x, cx, bx, y, cy, by)``, with ``x`` first transposed to (batch, free,
    contracted) where its contracted dims are not already its last ones.

    XLA:CPU runs a dot whose left operand contracts over its minor dims as one fused
    (YNNPACK) kernel; one that contracts a middle dim (the cotangent of an attention
    product, contracted over the query positions) becomes a stand-alone dot, looped over
    the batch dims. The explicit transpose is a copy XLA fuses with what produces ``x``,
    and XLA folds it back into the dot where its own kernels take the transposed operand
    as it is (a plain matrix's rows/columns swap)."""
    fx = [i for i in range(x.rank) if i not in cx and i not in bx]
    if list(cx) != list(range(x.rank - len(cx), x.rank)):
        x = O.transpose(x, list(bx) + fx + list(cx))
        nb, nf = len(bx), len(fx)
        bx, cx = list(range(nb)), list(range(nb + nf, x.rank))
    return O.dot(x, cx, bx, y, cy, by)


@register_grad_rule("dot")
def _dot(ctx, e, xs, out, g):
    # JAX's transpose of dot_general (the cotangent on the left of both products, then a
    # transpose to the operand's layout), its left operand made minor-contracting
    a, b = xs
    t = out.type
    if not t.is_inexact:
        return [None, None]
    a, b = O.as_type(a, t), O.as_type(b, t)
    ca, ba, cb, bb = (list(e.attrs[k]) for k in ("contract_a", "batch_a", "contract_b", "batch_b"))
    fa = [i for i in range(a.rank) if i not in ca and i not in ba]
    fb = [i for i in range(b.rank) if i not in cb and i not in bb]
    nb = len(ba)
    g_batch = list(range(nb))
    g_fa = list(range(nb, nb + len(fa)))
    g_fb = list(range(nb + len(fa), nb + len(fa) + len(fb)))
    # d a = g (batch, free_a, free_b) . b (batch_b, contract_b, free_b) over free_b
    da = _contract(g, g_fb, g_batch, b, fb, bb)      # dims: batch, free_a, b's contract dims
    order = ba + fa + [ca[cb.index(j)] for j in sorted(cb)]  # the a dim of each result dim
    da = O.transpose(da, [order.index(i) for i in range(a.rank)])
    db = _contract(g, g_fa, g_batch, a, fa, ba)      # dims: batch, free_b, a's contract dims
    order = bb + fb + [cb[ca.index(i)] for i in sorted(ca)]
    db = O.transpose(db, [order.index(j) for j in range(b.rank)])
    return [da, db]


# ----------------------------------------------------------------------------------------
# Windows
# ----------------------------------------------------------------------------------------
@register_grad_rule("window_sum")
def _window_sum(ctx, e, xs, out, g):
    (x,) = xs
    if not out.type.is_inexact:
        return [None]
    w, s, pads, dil = (e.attrs[k] for k in ("window_dimensions", "strides", "padding",
                                            "window_dilations"))
    cfg = []
    for d, wd, st, (lo, _), r, n in zip(x.shape, w, s, pads, dil, g.shape):
        eff = (wd - 1) * r + 1
        before = eff - 1 - lo
        after = d + eff - 1 - ((n - 1) * st + 1 if n else 0) - before
        cfg.append((before, after, st - 1))
    padded = O.pad(g, 0, cfg)
    return [O.window_sum(padded, w, strides=1, padding="valid", window_dilations=dil)]


# window_max's rule (built on window_scatter_max) is registered with the other window ops'
# rules in nxpy/ops/windows.py.


# ----------------------------------------------------------------------------------------
# Collectives (local view). ``ctx.vma(node)`` is the set of mesh axes a value varies
# along; a collective's input counts as varying along the collective's axes (JAX inserts
# pvary there), and the engine sums its cotangent back over the axes it did not vary on.
# ----------------------------------------------------------------------------------------
def _subgroups(e, mesh):
    """Whether the op runs over axis_index_groups (groups smaller than its axes)."""
    if mesh is None:  # a function differentiated where it was traced (scan's step)
        raise NotImplementedError(
            f"grad: the gradient of the collective {e.op!r} is taken where the mesh axes "
            f"of the shard_map body's values are not known while tracing (a scan inside a "
            f"while_loop or cond of the body); scan in the body itself (or in a grad there)")
    groups = e.attrs.get("groups") or e.args[1].get("replica_groups")
    n = math.prod(mesh.shape[a] for a in _axes_of(e))
    return len(groups[0]) != n


def _axes_of(e):
    return tuple(e.args[1]["axes"]) if e.op == "all_gather" else tuple(e.attrs["axes"])


def _aig(e, mesh):
    """The axis_index_groups of an op over subgroups, recovered from its replica groups."""
    axes = _axes_of(e)
    groups = e.attrs.get("groups") or e.args[1].get("replica_groups")
    full = mesh.groups(axes)[0]
    pos = {p: i for i, p in enumerate(full)}
    first = [g for g in groups if set(g) <= set(full)]
    return [[pos[p] for p in g] for g in first]


@register_grad_rule("all_reduce")
def _all_reduce(ctx, e, xs, out, g):
    (x,) = xs
    if not out.type.is_inexact:
        return [None]
    mesh, axes = ctx.mesh, e.attrs["axes"]
    aig = _aig(e, mesh) if _subgroups(e, mesh) else None
    if e.attrs["reduction"] == "sum":
        return [psum(g, axes, axis_index_groups=aig) if aig else g]
    # pmax / pmin: the cotangent goes to the devices holding the extreme value, shared
    # equally on ties (as reduce_max's rule); JAX has no rule for these
    where = O.as_type(O.equal(x, out), g.type)
    count = psum(where, axes, axis_index_groups=aig)
    share = psum(g, axes, axis_index_groups=aig) if aig else g
    return [share * where / count]


@register_grad_rule("all_gather")
def _all_gather(ctx, e, xs, out, g):
    (x,) = xs
    o = e.args[1]
    if o.get("view") != "local":
        return [g]  # global view: the values do not change
    if not out.type.is_inexact:
        return [None]
    mesh, axes, d, tiled = ctx.mesh, o["axes"], o["all_gather_dim"], o["tiled"]
    if _subgroups(e, mesh):  # varies between groups: its transpose is a reduce_scatter
        return [reduce_scatter(g, axes, d, tiled, axis_index_groups=_aig(e, mesh))]
    if tiled:  # an invariant result: each device takes its own chunk
        return [all_slice(g, axes, d)]
    chunk = all_slice(g, axes, d)
    return [O.reshape(chunk, x.shape)]


@register_grad_rule("reduce_scatter")
def _reduce_scatter(ctx, e, xs, out, g):
    if not out.type.is_inexact:
        return [None]
    mesh = ctx.mesh
    aig = _aig(e, mesh) if _subgroups(e, mesh) else None
    return [all_gather(g, all_gather_dim=e.attrs["scatter_dim"], axes=e.attrs["axes"],
                       tiled=e.attrs["tiled"], axis_index_groups=aig)]


@register_grad_rule("all_to_all")
def _all_to_all(ctx, e, xs, out, g):
    if not out.type.is_inexact:
        return [None]
    mesh = ctx.mesh
    aig = _aig(e, mesh) if _subgroups(e, mesh) else None
    a = e.attrs
    return [all_to_all(g, a["axes"], a["concat_axis"], a["split_axis"], a["tiled"],
                       axis_index_groups=aig)]


@register_grad_rule("collective_permute")
def _collective_permute(ctx, e, xs, out, g):
    if not out.type.is_inexact:
        return [None]
    inverse = [(d, s) for s, d in e.attrs["pairs"]]
    return [EXPR.node("collective_permute", O.template(g.shape, g.type), g,
                      axes=e.attrs["axes"], pairs=inverse)]


@register_grad_rule("collective_broadcast")
def _collective_broadcast(ctx, e, xs, out, g):
    if not out.type.is_inexact:
        return [None]
    source = e.attrs["source"]
    here = O.equal(axis_index(e.attrs["axes"]), source)
    return [O.select(here, g, _same(_c(g, 0), g))]


@register_grad_rule("all_slice")
def _all_slice(ctx, e, xs, out, g):
    (x,) = xs
    if not out.type.is_inexact:
        return [None]
    d = e.attrs["slice_dim"]
    starts = [0] * x.rank
    starts[d] = axis_index(e.attrs["axes"]) * g.shape[d]
    return [O.put_slice(zeros(x.shape, g.type), starts, g)]

