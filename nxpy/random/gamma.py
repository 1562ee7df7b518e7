"""gamma and the distributions drawn through it (issue 28, part 4): ``gamma``, ``loggamma``,
``beta``, ``dirichlet``, ``chisquare``, ``t``, ``f`` and ``generalized_normal``, with
``poisson``, ``binomial`` and ``multinomial`` (rejection samplers too), each in the
package's two forms (``name_split(key, ...)``: ``jax.random.name(key, ...)``'s values;
``name(key, ...)``: ``(value, next_key)``).

JAX draws a gamma variate per element with Marsaglia and Tsang's rejection method: each
element gets its own key (``split(key, a.size)``), and a ``while_loop`` (an outer loop of
trials, each with an inner loop drawing normals until ``1 + c x > 0``) runs until that
element accepts; JAX vmaps that over the elements. Here the same loops run over the whole
tensor at once (``nxpy.defn``'s ``while_loop``, eagerly or traced): every element keeps its
own key and loop state, the loops go on while any element has not accepted, and an
element that has keeps its values and key, so each element's result is JAX's. ``poisson``
(Knuth's method below ``lam = 10``, Hörmann's transformed rejection above) and
``binomial`` (inversion below ``n p = 10``, BTRS above) draw from one key for the whole
tensor, as JAX does; ``multinomial`` is a chain of binomials (a ``scan``).

``gamma`` and ``loggamma`` (so ``beta``, ``dirichlet``, ``chisquare``, ``t``, ``f`` and
``generalized_normal`` too) are differentiable in their shape parameter as in JAX: the
implicit reparameterization of ``jax.lax.random_gamma_grad`` (its series and continued
fraction, as ``while_loop``s), attached with ``custom_vjp``.

>>> import nxpy as nx
>>> from nxpy import random
>>> [round(v, 5) for v in random.gamma_split(random.key(0), 2.0, shape=(3,)).tolist()]
[1.58979, 1.75994, 1.12901]
"""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from .. import types as T
from ..defn.transforms.call import call
from ..defn.transforms.custom_vjp import custom_vjp
from ..defn.kernel import while_loop
from ..defn.transforms.scan import scan
from ..tensor import Tensor
from .core import (_MANTISSA, _UINT, S32, U32, U64, _finish, _jit_argument, _split2, _tensorish,
                   check_key, check_shape, check_type, split, threefry2x32)
from .basic import _uniform, normal_split

__all__ = ["gamma", "gamma_split", "loggamma", "loggamma_split", "beta", "beta_split",
           "dirichlet", "dirichlet_split", "chisquare", "chisquare_split", "t", "t_split",
           "f", "f_split", "generalized_normal", "generalized_normal_split", "poisson",
           "poisson_split", "binomial", "binomial_split", "multinomial", "multinomial_split"]

# ----------------------------------------------------------------------------------------
# Per-element keys: a key is a pair of u32 tensors (k1, k2) of the batch's shape
# ----------------------------------------------------------------------------------------
def _split_pair(k, n):
    """``split(key, n)`` of every key of the pair ``k``: ``n`` pairs (one threefry2x32
    over a new leading axis of size ``n``)."""
    k1, k2 = (O.new_axis(w, 0) for w in k)
    shape = (n,) + (1,) * (k1.rank - 1)
    counts = O.iota(shape, axis=0, type=U32) if n > 1 else O.tensor([0], type=U32)
    if counts.shape != shape:
        counts = O.reshape(counts, shape)
    # a barrier keeps XLA from fusing the chain of splits into each consumer: without
    # it, the LLVM optimization of jaxlib 0.12's XLA takes minutes on the loop bodies
    o1, o2 = O.optimization_barrier(threefry2x32(k1, k2, O.tensor(0, type=U32), counts))
    return [(o1[i], o2[i]) for i in range(n)]


def _scalar_bits(k, nbits):
    """``jax.random.bits(key, (), u<nbits>)`` of every key of the pair ``k``."""
    b1, b2 = threefry2x32(k[0], k[1], O.tensor(0, type=U32), O.tensor(0, type=U32))
    if nbits == 64:
        return O.bitwise_or(O.left_shift(O.as_type(b1, U64), 32), O.as_type(b2, U64))
    x = O.bitwise_xor(b1, b2)
    return x if nbits == 32 else O.as_type(x, _UINT[nbits])


def _scalar_uniform(k, t, lo=0.0, hi=1.0):
    """``jax.random.uniform(key, (), t, lo, hi)`` of every key of ``k`` (as
    ``basic._uniform``: the mantissa of 1.0 filled with random bits, minus 1)."""
    nbits, nmant = t.bits, _MANTISSA[(t.kind, t.bits)]
    u = _UINT[nbits]
    rng_bits = 8 if nmant < 8 else nbits
    b = _scalar_bits(k, rng_bits)
    if rng_bits != nbits:
        b = O.as_type(b, u)
    one_bits = int(np.array(1.0, t.dtype).view(u.dtype))
    fb = O.bitwise_or(O.right_shift(b, rng_bits - nmant), one_bits)
    floats = O.subtract(O.bitcast(fb, t), O.tensor(1.0, type=t))
    if lo == 0.0 and hi == 1.0:
        return floats
    lo_t, hi_t = O.tensor(lo, type=t), O.tensor(hi, type=t)
    span = O.subtract(hi_t, lo_t)
    if t == T.F32:  # XLA fuses this multiply-add (see basic._uniform)
        scaled = O.as_type(O.add(O.multiply(O.as_type(floats, T.F64), O.as_type(span, T.F64)),
                                 O.as_type(lo_t, T.F64)), t)
    else:
        scaled = O.add(O.multiply(floats, span), lo_t)
    return O.max(lo_t, scaled)


def _scalar_normal(k, t):
    """``jax.random.normal(key, (), t)`` of every key of ``k``."""
    lo = np.nextafter(np.array(-1.0, t.dtype), np.array(0.0, t.dtype), dtype=t.dtype)
    u = _scalar_uniform(k, t, float(lo), 1.0)
    return O.multiply(O.tensor(math.sqrt(2), type=t), O.erf_inv(u))


# ----------------------------------------------------------------------------------------
# Marsaglia and Tsang, as jax.random's _gamma_one for every element at once
# ----------------------------------------------------------------------------------------
def _gamma_one(k, alpha, log_space):
    """JAX's ``_gamma_one`` on every element of ``alpha`` with its key pair ``k``: the
    loops of every element run together, an element's state frozen once its loop ends (as
    JAX's vmap of the loop does)."""
    t, shape = alpha.type, alpha.shape

    def c(v):
        return O.tensor(v, type=t)

    def full(v):
        return O.broadcast(c(v), shape) if shape else c(v)

    zero, one = c(0), c(1)
    boost_mask = O.greater_equal(alpha, one)
    alpha_orig = alpha
    alpha = O.select(boost_mask, alpha, O.add(alpha, one))
    d = O.subtract(alpha, c(1.0 / 3.0))
    cc = O.divide(c(1.0 / 3.0), O.sqrt(d))

    def more(big_x, big_v, u):  # JAX's _cond_fn, per element
        return O.logical_and(
            O.greater_equal(u, O.subtract(one, O.multiply(c(0.0331),
                                                          O.multiply(big_x, big_x)))),
            O.greater_equal(O.log(u), O.add(O.multiply(big_x, c(0.5)),
                                            O.multiply(d, O.add(O.subtract(one, big_v),
                                                                O.log(big_v))))))

    def next_kxv(s):  # the inner loop: normals until v = 1 + c x > 0
        k1, k2, x, v = s
        live = O.less_equal(v, zero)
        key, sub = _split_pair((k1, k2), 2)
        xn = _scalar_normal(sub, t)
        vn = O.add(one, O.multiply(xn, cc))
        return (O.select(live, key[0], k1), O.select(live, key[1], k2),
                O.select(live, xn, x), O.select(live, vn, v))

    def body(s):
        k1, k2, big_x, big_v, u = s
        live = more(big_x, big_v, u)
        key, x_key, u_key = _split_pair((k1, k2), 3)
        _, _, x, v = while_loop(lambda s: O.any(O.less_equal(s[3], zero)), next_kxv,
                                (x_key[0], x_key[1], full(0), full(-1)))
        new = (key[0], key[1], O.multiply(x, x), O.multiply(O.multiply(v, v), v),
               _scalar_uniform(u_key, t))
        return tuple(O.select(live, n, o) for n, o in zip(new, s))

    key, subkey = _split_pair(k, 2)
    # the initial state makes every element's condition true
    _, _, _, big_v, _ = while_loop(lambda s: O.any(more(*s[2:])), body,
                                   (key[0], key[1], full(0), full(1), full(2)))
    if log_space:
        log_samples = O.log1p(O.negate(_scalar_uniform(subkey, t)))  # -exponential
        log_boost = O.select(O.logical_or(boost_mask, O.equal(log_samples, zero)), zero,
                             O.multiply(log_samples, O.divide(one, alpha_orig)))
        return O.add(O.add(O.log(d), O.log(big_v)), log_boost)
    samples = O.subtract(one, _scalar_uniform(subkey, t))
    boost = O.select(boost_mask, one, O.pow(samples, O.divide(one, alpha_orig)))
    return O.multiply(O.multiply(d, big_v), boost)


# ----------------------------------------------------------------------------------------
# The gradient with respect to a: JAX's implicit reparameterization (random_gamma_grad)
# ----------------------------------------------------------------------------------------
def _igamma_series_dsample(ax, x, a, enabled):
    """JAX's ``_igamma_series`` in ``SAMPLE_DERIVATIVE`` mode, every element at once."""
    t = a.type
    c_ = _like(t)
    eps = float(np.finfo(t.dtype).eps)

    def body(s):
        en, r, c, ans, xx, dc_da, dans_da = s
        r = O.add(r, c_(1.0))
        dc_da = O.subtract(O.multiply(dc_da, O.divide(xx, r)),
                           O.divide(O.multiply(c, xx), O.multiply(r, r)))
        dans_da = O.add(dans_da, dc_da)
        c = O.multiply(c, O.divide(xx, r))
        ans = O.add(ans, c)
        cond = O.logical_and(en, O.greater(O.abs(O.divide(dc_da, dans_da)), c_(eps)))
        new = (r, c, ans, xx, dc_da, dans_da)
        return (cond,) + tuple(O.select(en, n, o) for n, o in zip(new, s[1:]))

    ones, zeros = O.broadcast(c_(1), a.shape), O.broadcast(c_(0), a.shape)
    vals = while_loop(lambda s: O.any(s[0]), body,
                      (enabled, a, ones, ones, x, zeros, zeros))
    ans, dans_da = vals[3], vals[6]
    dlogax_da = O.subtract(O.log(x), O.digamma(O.add(a, c_(1))))
    return O.divide(O.multiply(O.negate(O.add(dans_da, O.multiply(ans, dlogax_da))), x), a)


def _igammac_cf_dsample(ax, x, a, enabled):
    """JAX's ``_igammac_continued_fraction`` in ``SAMPLE_DERIVATIVE`` mode."""
    t = a.type
    c_ = _like(t)
    eps = float(np.finfo(t.dtype).eps)

    def body(s):
        (en, ans, tt, y, z, c, pkm1, qkm1, pkm2, qkm2,
         dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da, dans_da) = s
        c = O.add(c, c_(1))
        y = O.add(y, c_(1))
        z = O.add(z, c_(2))
        yc = O.multiply(y, c)
        pk = O.subtract(O.multiply(pkm1, z), O.multiply(pkm2, yc))
        qk = O.subtract(O.multiply(qkm1, z), O.multiply(qkm2, yc))
        nz = O.not_equal(qk, c_(0))
        r = O.divide(pk, qk)
        tt = O.select(nz, O.abs(O.divide(O.subtract(ans, r), r)), c_(1))
        ans = O.select(nz, r, ans)
        dpk_da = O.add(O.subtract(O.subtract(O.multiply(dpkm1_da, z), pkm1),
                                  O.multiply(dpkm2_da, yc)), O.multiply(pkm2, c))
        dqk_da = O.add(O.subtract(O.subtract(O.multiply(dqkm1_da, z), qkm1),
                                  O.multiply(dqkm2_da, yc)), O.multiply(qkm2, c))
        dans_da_new = O.select(nz, O.divide(O.subtract(dpk_da, O.multiply(ans, dqk_da)), qk),
                               dans_da)
        grad_cond = O.select(nz, O.abs(O.subtract(dans_da_new, dans_da)), c_(1))
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = dpkm1_da, dqkm1_da, dpk_da, dqk_da
        rescale = O.greater(O.abs(pk), O.divide(c_(1), c_(eps)))

        def rs(v):
            return O.select(rescale, O.multiply(v, c_(eps)), v)

        pkm2, pkm1, qkm2, qkm1 = rs(pkm2), rs(pkm1), rs(qkm2), rs(qkm1)
        dpkm2_da, dqkm2_da, dpkm1_da, dqkm1_da = (rs(dpkm2_da), rs(dqkm2_da), rs(dpkm1_da),
                                                  rs(dqkm1_da))
        cond = O.logical_and(en, O.greater(grad_cond, c_(eps)))
        new = (ans, tt, y, z, c, pkm1, qkm1, pkm2, qkm2, dpkm2_da, dqkm2_da, dpkm1_da,
               dqkm1_da, dans_da_new)
        return (cond,) + tuple(n if i == 4 else O.select(en, n, o)
                               for i, (n, o) in enumerate(zip(new, s[1:])))

    y = O.subtract(c_(1), a)
    z = O.add(O.add(x, y), c_(1))
    pkm1 = O.add(x, c_(1))
    qkm1 = O.multiply(z, x)
    ans = O.divide(pkm1, qkm1)
    zeros = O.broadcast(c_(0), a.shape)
    dqkm1_da = O.negate(x)
    dans_da = O.divide(O.subtract(zeros, O.multiply(ans, dqkm1_da)), qkm1)
    init = (enabled, ans, O.broadcast(c_(1), a.shape), y, z, c_(0), pkm1, qkm1,
            O.broadcast(c_(1), a.shape), x, zeros, zeros, zeros, dqkm1_da, dans_da)
    vals = while_loop(lambda s: O.logical_and(O.less(s[5], c_(2000)), O.any(s[0])), body,
                      init)
    ans, dans_da = vals[1], vals[14]
    dlogax_da = O.subtract(O.log(x), O.digamma(a))
    return O.negate(O.multiply(O.add(dans_da, O.multiply(ans, dlogax_da)), x))


def _random_gamma_grad(a, x):
    """``jax.lax.random_gamma_grad(a, x)``: d(sample)/d(a) of a gamma sample ``x``."""
    t = a.type
    c_ = _like(t)
    is_nan = O.logical_or(O.is_nan(a), O.is_nan(x))
    x_is_zero = O.equal(x, c_(0))
    domain_error = O.logical_or(O.less(x, c_(0)), O.less_equal(a, c_(0)))
    use_igammac = O.logical_and(O.greater(x, c_(1)), O.greater(x, a))
    ax = O.subtract(O.subtract(O.multiply(a, O.log(x)), x), O.lgamma(a))
    underflow = O.less(ax, c_(-math.log(float(np.finfo(t.dtype).max))))
    ax = O.exp(ax)
    enabled = O.logical_not(O.logical_or(O.logical_or(O.logical_or(x_is_zero, domain_error),
                                                      underflow), is_nan))
    out = O.select(use_igammac,
                   O.negate(_igammac_cf_dsample(ax, x, a, O.logical_and(enabled, use_igammac))),
                   _igamma_series_dsample(ax, x, a, O.logical_and(
                       enabled, O.logical_not(use_igammac))))
    out = O.select(x_is_zero, c_(0), out)
    return O.select(O.logical_or(domain_error, is_nan), c_(float("nan")), out)


def _sample_grad(sample, a, log_space):
    """JAX's ``_gamma_grad``: d(sample)/d(a), elementwise."""
    if not log_space:
        return _random_gamma_grad(a, sample)
    t = a.type
    samples = O.exp(sample)
    samples = O.select(O.equal(samples, O.tensor(0, type=t)),
                       O.tensor(float(np.finfo(t.dtype).tiny), type=t), samples)
    return O.divide(_random_gamma_grad(a, samples), samples)


def _sampler(log_space):
    """``random_gamma_p`` with its derivative: ``f(k1, k2, a)``, the samples, whose
    gradient with respect to ``a`` is ``g * _sample_grad`` (JAX's jvp rule, transposed)."""
    def f(k1, k2, a):
        return _gamma_one((k1, k2), a, log_space)

    def fwd(k1, k2, a):
        out = f(k1, k2, a)
        return out, (out, a)

    def bwd(res, g):
        out, a = res
        return None, None, O.multiply(g, _sample_grad(out, a, log_space))

    s = custom_vjp(f)
    s.defvjp(fwd, bwd)
    return s


_SAMPLERS = {False: _sampler(False), True: _sampler(True)}


def _gamma(key, a, shape, t, log_space):
    """``jax.random._gamma``: ``a`` (of type ``t``) broadcast to ``shape``, one key per
    element. As JAX's, a function of the program (``nxpy.defn.call``): two samplers of
    one shape and type call one function, whose constants are its own."""
    return call(_gamma_fn, key, a, shape=shape, t=t, log_space=log_space)


def _gamma_fn(key, a, *, shape, t, log_space):
    if a.shape != shape:
        a = O.broadcast(a, shape)
    if math.prod(shape) == 0:
        return a
    keys = split(key, shape)                      # shape + (2,)
    r = len(shape)
    k = (O.squeeze(O.slice_along_axis(keys, 0, 1, axis=r), [r]),
         O.squeeze(O.slice_along_axis(keys, 1, 1, axis=r), [r]))
    return _SAMPLERS[log_space](k[0], k[1], a)


# ----------------------------------------------------------------------------------------
# Arguments
# ----------------------------------------------------------------------------------------
def _float_param_type(op, type, *params):
    """``type``, or the floating type of the parameters merged (f32 for Python numbers)."""
    if type is not None:
        t = check_type(type, op)
    else:
        t = None
        for p in params:
            pt = p.type if isinstance(p, Tensor) else None
            if pt is not None:
                t = pt if t is None else T.merge(t, pt)
        t = T.F32 if t is None else T.to_floating(t)
    if not t.is_float:
        raise TypeError(f"{op}: expected type to be a floating-point type, got {t}")
    return t


def _param(v, arg, op, t):
    """A distribution parameter as a tensor of type ``t``."""
    v = _tensorish(v, arg, op)
    if isinstance(v, Tensor):
        if v.type.is_complex:
            raise TypeError(f"{op}: expected {arg} to be a real number or tensor, got type "
                            f"{v.type}")
        return _jit_argument(O.as_type(v, t))
    if isinstance(v, complex):
        raise TypeError(f"{op}: expected {arg} to be a real number or tensor, got {v!r}")
    return _jit_argument(O.tensor(float(v), type=t))


def _out_shape(op, shape, *params):
    """``shape`` (checked: the parameters broadcast to it, as JAX's ``_check_shape``), or
    the parameters' shapes broadcast together when it is None."""
    shapes = [p.shape for p in params]
    if shape is None:
        out = ()
        for s in shapes:
            try:
                out = np.broadcast_shapes(out, s)
            except ValueError:
                raise ValueError(f"{op}: the parameters' shapes {tuple(shapes)} do not "
                                 f"broadcast together") from None
        return tuple(out)
    shape = check_shape(shape, op)
    for (name, p) in zip(_param_names(op), params):
        ps = p.shape
        if len(ps) > len(shape) or not all(x in (1, y) for x, y in zip(ps[::-1], shape[::-1])):
            raise ValueError(f"{op}: expected {name} to broadcast to shape {shape}, got a "
                             f"tensor with shape {ps}")
    return shape


_PARAMS = {"gamma": ("a",), "loggamma": ("a",), "beta": ("a", "b"), "chisquare": ("df",),
           "t": ("df",), "f": ("dfnum", "dfden"), "generalized_normal": ("p",),
           "poisson": ("lam",), "binomial": ("n", "p")}


def _param_names(op):
    return _PARAMS[op.removesuffix("_split")]


# ----------------------------------------------------------------------------------------
# gamma and loggamma
# ----------------------------------------------------------------------------------------
def _gamma_like(op, key, a, shape, type, names, log_space):
    key = check_key(key, op)
    t = _float_param_type(op, type, a)
    a = _param(a, "a", op, t)
    shape = _out_shape(op, shape, a)
    return _finish(_gamma(key, a, shape, t, log_space), shape, names, op)


def gamma_split(key, a, *, shape=None, type=None, names=None) -> Tensor:
    """Standard gamma samples (density ``x**(a-1) exp(-x) / Gamma(a)``, ``a > 0``) from
    ``key`` as given: ``jax.random.gamma(key, a, shape, dtype)``'s values (Marsaglia and
    Tsang's method, one key per element; see the module docstring for how its rejection
    loops run here). ``a`` broadcasts to ``shape`` (default: ``a``'s shape); ``type``
    (default: ``a``'s floating type, f32 for Python numbers) is any floating type.

    >>> import nxpy as nx
    >>> [round(v, 4) for v in gamma_split(nx.random.key(1), nx.tensor([0.5, 1.0, 5.0])).tolist()]
    [0.0223, 0.4747, 7.7092]
    """
    return _gamma_like("gamma_split", key, a, shape, type, names, False)


def gamma(key, a, *, shape=None, type=None, names=None):
    """``(gamma_split(k1, ...), k0)`` where ``k0, k1 = split(key)``.

    >>> import nxpy as nx
    >>> g, k = gamma(nx.random.key(0), 3.0, shape=(2,))
    >>> g.shape, k.shape
    ((2,), (2,))
    """
    k, nxt = _split2(key, "gamma")
    return gamma_split(k, a, shape=shape, type=type, names=names), nxt


def loggamma_split(key, a, *, shape=None, type=None, names=None) -> Tensor:
    """The logarithm of standard gamma samples, computed in log space (accurate for small
    ``a``, where the samples underflow): ``jax.random.loggamma(key, a, shape, dtype)``'s
    values. Arguments as :func:`gamma_split`.

    >>> import nxpy as nx
    >>> [round(v, 4) for v in loggamma_split(nx.random.key(1), nx.tensor([0.01, 5.0])).tolist()]
    [-177.2164, 1.4166]
    """
    return _gamma_like("loggamma_split", key, a, shape, type, names, True)


def loggamma(key, a, *, shape=None, type=None, names=None):
    """``(loggamma_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "loggamma")
    return loggamma_split(k, a, shape=shape, type=type, names=names), nxt


# ----------------------------------------------------------------------------------------
# beta, dirichlet
# ----------------------------------------------------------------------------------------
def beta_split(key, a, b, *, shape=None, type=None, names=None) -> Tensor:
    """Beta samples (density ``x**(a-1) (1-x)**(b-1)`` on ``[0, 1]``) from ``key`` as
    given: ``jax.random.beta(key, a, b, shape, dtype)``'s values (two log-gamma samples,
    combined without losing precision). ``a`` and ``b`` broadcast to ``shape`` (default:
    their shapes broadcast).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in beta_split(nx.random.key(0), 2.0, 3.0, shape=(3,)).tolist()]
    [0.2363, 0.4905, 0.6838]
    """
    op = "beta_split"
    key = check_key(key, op)
    t = _float_param_type(op, type, a, b)
    a, b = _param(a, "a", op, t), _param(b, "b", op, t)
    shape = _out_shape(op, shape, a, b)
    ks = split(key)
    la = _gamma(ks[0], a, shape, t, True)
    lb = _gamma(ks[1], b, shape, t, True)
    log_max = O.max(la, lb)
    ga = O.exp(O.subtract(la, log_max))
    gb = O.exp(O.subtract(lb, log_max))
    return _finish(O.divide(ga, O.add(ga, gb)), shape, names, op)


def beta(key, a, b, *, shape=None, type=None, names=None):
    """``(beta_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "beta")
    return beta_split(k, a, b, shape=shape, type=type, names=names), nxt


def dirichlet_split(key, alpha, *, shape=None, type=None, names=None) -> Tensor:
    """Dirichlet samples (points of the simplex, density ``prod(x_i**(alpha_i - 1))``)
    from ``key`` as given: ``jax.random.dirichlet(key, alpha, shape, dtype)``'s values (a
    softmax of log-gamma samples). ``alpha`` has shape ``(..., n)``; ``shape`` is the batch
    shape (default ``alpha.shape[:-1]``, which must broadcast to it); the result has
    shape ``shape + (n,)``.

    >>> import nxpy as nx
    >>> s = dirichlet_split(nx.random.key(0), nx.tensor([1.0, 2.0, 3.0]), shape=(2,))
    >>> s.shape, [round(v, 5) for v in nx.sum(s, axes=[1]).tolist()]
    ((2, 3), [1.0, 1.0])
    """
    op = "dirichlet_split"
    key = check_key(key, op)
    t = _float_param_type(op, type, alpha)
    alpha = _param(alpha, "alpha", op, t)
    if alpha.rank < 1:
        raise ValueError(f"{op}: expected alpha to have rank 1 or more, got a scalar")
    batch = alpha.shape[:-1]
    if shape is None:
        shape = batch
    else:
        shape = check_shape(shape, op)
        if len(batch) > len(shape) or not all(
                x in (1, y) for x, y in zip(batch[::-1], shape[::-1])):
            raise ValueError(f"{op}: expected alpha.shape[:-1] {batch} to broadcast to shape "
                             f"{shape}")
    full = tuple(shape) + alpha.shape[-1:]
    lg = _gamma(key, alpha, full, t, True)
    ax = len(full) - 1
    m = O.reduce_max(lg, axes=[ax], keep_axes=True)
    e = O.exp(O.subtract(lg, m))
    return _finish(O.divide(e, O.sum(e, axes=[ax], keep_axes=True)), full, names, op)


def dirichlet(key, alpha, *, shape=None, type=None, names=None):
    """``(dirichlet_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "dirichlet")
    return dirichlet_split(k, alpha, shape=shape, type=type, names=names), nxt


# ----------------------------------------------------------------------------------------
# chisquare, t, f, generalized_normal
# ----------------------------------------------------------------------------------------
def _chisquare(key, df, shape, t):
    """``jax.random._chisquare`` (a jitted function of ``df``)."""
    half = O.divide(_jit_argument(df), O.tensor(2, type=t))
    return O.multiply(O.exp(_gamma(key, half, shape, t, True)), O.tensor(2, type=t))


def chisquare_split(key, df, *, shape=None, type=None, names=None) -> Tensor:
    """Chi-square samples with ``df`` degrees of freedom from ``key`` as given:
    ``jax.random.chisquare(key, df, shape, dtype)``'s values (``2 exp(loggamma(df /
    2))``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in chisquare_split(nx.random.key(0), 3.0, shape=(2,)).tolist()]
    [2.2051, 2.49]
    """
    op = "chisquare_split"
    key = check_key(key, op)
    t = _float_param_type(op, type, df)
    df = _param(df, "df", op, t)
    shape = _out_shape(op, shape, df)
    return _finish(_chisquare(key, df, shape, t), shape, names, op)


def chisquare(key, df, *, shape=None, type=None, names=None):
    """``(chisquare_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "chisquare")
    return chisquare_split(k, df, shape=shape, type=type, names=names), nxt


def t_split(key, df, *, shape=None, type=None, names=None) -> Tensor:
    """Student's t samples with ``df`` degrees of freedom from ``key`` as given:
    ``jax.random.t(key, df, shape, dtype)``'s values (``n * sqrt(df / 2 / g)`` with ``n``
    normal and ``g`` gamma of ``df / 2``).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in t_split(nx.random.key(0), 4.0, shape=(2,)).tolist()]
    [0.716, -2.4174]
    """
    op = "t_split"
    key = check_key(key, op)
    t = _float_param_type(op, type, df)
    df = _param(df, "df", op, t)
    shape = _out_shape(op, shape, df)
    ks = split(key)
    n = normal_split(ks[0], shape=shape, type=t)
    half = O.divide(df, O.tensor(2, type=t))
    g = _gamma(ks[1], half, shape, t, False)
    return _finish(O.multiply(n, O.sqrt(O.divide(half, g))), shape, names, op)


def t(key, df, *, shape=None, type=None, names=None):
    """``(t_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "t")
    return t_split(k, df, shape=shape, type=type, names=names), nxt


def f_split(key, dfnum, dfden, *, shape=None, type=None, names=None) -> Tensor:
    """F-distribution samples with ``dfnum`` and ``dfden`` degrees of freedom from ``key``
    as given: ``jax.random.f(key, dfnum, dfden, shape, dtype)``'s values (a ratio of
    chi-square samples, each divided by its degrees of freedom).

    >>> import nxpy as nx
    >>> [round(v, 4) for v in f_split(nx.random.key(0), 3.0, 5.0, shape=(2,)).tolist()]
    [2.5797, 0.1922]
    """
    op = "f_split"
    key = check_key(key, op)
    t = _float_param_type(op, type, dfnum, dfden)
    dfnum, dfden = _param(dfnum, "dfnum", op, t), _param(dfden, "dfden", op, t)
    shape = _out_shape(op, shape, dfnum, dfden)
    ks = split(key)
    num = O.divide(_chisquare(ks[1], dfnum, shape, t), dfnum)
    den = O.divide(_chisquare(ks[0], dfden, shape, t), dfden)
    return _finish(O.divide(num, den), shape, names, op)


def f(key, dfnum, dfden, *, shape=None, type=None, names=None):
    """``(f_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "f")
    return f_split(k, dfnum, dfden, shape=shape, type=type, names=names), nxt


def _rademacher(key, shape, t):
    """``jax.random.rademacher(key, shape, t)``: ``2 * bernoulli(key, 0.5) - 1``, where
    bernoulli draws ``uniform < 0.5`` in the type of ``0.5`` (JAX's default float: f64 for
    an f64 result, which needs x64, else f32)."""
    ut = T.F64 if t == T.F64 else T.F32
    u = _uniform(key, O.tensor(0.0, type=ut), O.tensor(1.0, type=ut), shape, ut)
    b = O.as_type(O.less(u, O.tensor(0.5, type=ut)), t)
    return O.subtract(O.multiply(O.tensor(2, type=t), b), O.tensor(1, type=t))


def generalized_normal_split(key, p, *, shape=(), type=None, names=None) -> Tensor:
    """Generalized normal samples (density ``p / (2 Gamma(1/p)) exp(-|x|**p)``) from
    ``key`` as given: ``jax.random.generalized_normal(key, p, shape, dtype)``'s values
    (``r * g**(1/p)``, ``g`` gamma of ``1/p`` and ``r`` a random sign). ``p = 2`` is a normal
    with variance 1/2, ``p = 1`` a Laplace.

    >>> import nxpy as nx
    >>> [round(v, 4) for v in generalized_normal_split(nx.random.key(0), 2.0, shape=(3,)).tolist()]
    [0.9543, 0.0902, -1.1525]
    """
    op = "generalized_normal_split"
    key = check_key(key, op)
    t = _float_param_type(op, type, p)
    number = not isinstance(_tensorish(p, "p", op), Tensor)
    p = _param(p, "p", op, t)
    shape = check_shape(shape, op) if number else _out_shape(op, shape, p)
    ks = split(key)
    inv = O.divide(O.tensor(1, type=t), p)
    g = _gamma(ks[0], inv, shape, t, False)
    r = _rademacher(ks[1], shape, t)
    return _finish(O.multiply(r, O.pow(g, inv)), shape, names, op)


def generalized_normal(key, p, *, shape=(), type=None, names=None):
    """``(generalized_normal_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "generalized_normal")
    return generalized_normal_split(k, p, shape=shape, type=type, names=names), nxt


# ----------------------------------------------------------------------------------------
# poisson
# ----------------------------------------------------------------------------------------
def _like(t):
    """A constant maker in type ``t``."""
    return lambda v: O.tensor(v, type=t)


def _full(v, shape, t):
    return O.broadcast(O.tensor(v, type=t), shape) if shape else O.tensor(v, type=t)


def _poisson_knuth(key, lam, shape, it):
    """JAX's ``_poisson_knuth``: multiply uniforms until their product drops below
    ``exp(-lam)`` (in logs), the whole tensor from one key chain."""
    neg_lam = O.negate(lam)

    def body(s):
        k, rng, log_prod = s
        ks = split(rng)
        k = O.select(O.greater(log_prod, neg_lam), O.add(k, O.tensor(1, type=it)), k)
        u = _uniform(ks[1], O.tensor(0.0, type=T.F32), O.tensor(1.0, type=T.F32), shape, T.F32)
        return k, ks[0], O.add(log_prod, O.log(u))

    k, _, _ = while_loop(lambda s: O.any(O.greater(s[2], neg_lam)), body,
                         (_full(0, shape, it), key, _full(0.0, shape, T.F32)))
    return O.subtract(k, O.tensor(1, type=it))


def _poisson_rejection(key, lam, shape, it):
    """JAX's ``_poisson_rejection`` (Hörmann's transformed rejection, with lgamma)."""
    c = _like(T.F32)
    log_lam = O.log(lam)
    b = O.add(c(0.931), O.multiply(c(2.53), O.sqrt(lam)))
    a = O.add(c(-0.059), O.multiply(c(0.02483), b))
    inv_alpha = O.add(c(1.1239), O.divide(c(1.1328), O.subtract(b, c(3.4))))
    v_r = O.subtract(c(0.9277), O.divide(c(3.6224), O.subtract(b, c(2))))
    lo, hi = c(0.0), c(1.0)

    def body(s):
        k_out, accepted, key = s
        ks = split(key, 3)
        u = O.subtract(_uniform(ks[1], lo, hi, shape, T.F32), c(0.5))
        v = _uniform(ks[2], lo, hi, shape, T.F32)
        us = O.subtract(c(0.5), O.abs(u))
        k = O.floor(O.add(O.add(O.multiply(O.add(O.divide(O.multiply(c(2), a), us), b), u),
                                lam), c(0.43)))
        s_ = O.log(O.divide(O.multiply(v, inv_alpha),
                            O.add(O.divide(a, O.multiply(us, us)), b)))
        t_ = O.subtract(O.add(O.negate(lam), O.multiply(k, log_lam)),
                        O.lgamma(O.add(k, c(1))))
        accept1 = O.logical_and(O.greater_equal(us, c(0.07)), O.less_equal(v, v_r))
        reject = O.logical_or(O.less(k, c(0)),
                              O.logical_and(O.less(us, c(0.013)), O.greater(v, us)))
        accept = O.logical_or(accept1, O.logical_and(O.logical_not(reject),
                                                     O.less_equal(s_, t_)))
        return O.select(accept, k, k_out), O.logical_or(accepted, accept), ks[0]

    k, _, _ = while_loop(lambda s: O.any(O.logical_not(s[1])), body,
                         (_full(-1.0, shape, T.F32), _full(False, shape, T.PRED), key))
    return O.as_type(k, it)


def _poisson(key, lam, shape, it):
    lam = O.as_type(lam, T.F32)
    if lam.shape != shape:
        lam = O.broadcast(lam, shape)
    if math.prod(shape) == 0:
        return O.as_type(lam, it)
    c = _like(T.F32)
    use_knuth = O.logical_or(O.is_nan(lam), O.less(lam, c(10)))
    lam_knuth = O.select(use_knuth, lam, c(0.0))
    lam_rejection = O.select(use_knuth, c(1e5), lam)
    result = O.select(use_knuth, _poisson_knuth(key, lam_knuth, shape, it),
                      _poisson_rejection(key, lam_rejection, shape, it))
    return O.select(O.equal(lam, c(0)), O.tensor(0, type=it), result)


def poisson_split(key, lam, *, shape=None, type=None, names=None) -> Tensor:
    """Poisson samples (``P(k) = lam**k exp(-lam) / k!``, ``lam >= 0``) from ``key`` as
    given: ``jax.random.poisson(key, lam, shape, dtype)``'s values (Knuth's method where
    ``lam < 10``, Hörmann's transformed rejection elsewhere, each a ``while_loop`` over
    the whole tensor; ``lam`` is taken as f32, as JAX does). ``lam`` broadcasts to
    ``shape`` (default: ``lam``'s shape); ``type`` is an integer type (default s32).

    >>> import nxpy as nx
    >>> poisson_split(nx.random.key(0), nx.tensor([0.5, 3.0, 50.0])).tolist()
    [0, 0, 41]
    """
    op = "poisson_split"
    key = check_key(key, op)
    it = S32 if type is None else check_type(type, op)
    if not it.is_int:
        raise TypeError(f"{op}: expected type to be an integer type, got {it}")
    lam = _param(lam, "lam", op, T.F32)
    shape = _out_shape(op, shape, lam)
    return _finish(_poisson(key, lam, shape, it), shape, names, op)


def poisson(key, lam, *, shape=None, type=None, names=None):
    """``(poisson_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "poisson")
    return poisson_split(k, lam, shape=shape, type=type, names=names), nxt


# ----------------------------------------------------------------------------------------
# binomial, multinomial
# ----------------------------------------------------------------------------------------
_STIRLING_TAIL = [0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                  0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                  0.0118967099458917, 0.0104112652619720, 0.00925546218271273,
                  0.00833056343336287]


def _stirling_approx_tail(k):
    """JAX's ``_stirling_approx_tail`` (its formula, on ``k`` clamped to ``[0, 9]``)."""
    c = _like(k.type)
    use_tail = O.less_equal(k, c(9))
    k = O.clip(k, c(0.0), c(9.0))
    kp1 = O.add(k, c(1))
    kp1sq = O.multiply(kp1, kp1)
    approx = O.divide(O.subtract(c(1.0 / 12), O.divide(O.subtract(
        c(1.0 / 360), O.divide(c(1.0 / 1260), kp1sq)), kp1sq)), kp1)
    table = O.tensor(_STIRLING_TAIL, type=k.type)
    return O.select(use_tail, O.take(table, O.as_type(O.floor(k), S32)), approx)


def _binomial_inversion(key, count, prob, shape, t):
    """JAX's ``_binomial_inversion``: sums of geometric variates."""
    c = _like(t)
    log1minusprob = O.log1p(O.negate(prob))

    def body(s):
        num_geom, geom_sum, key = s
        ks = split(key)
        num_geom = O.select(O.less_equal(geom_sum, count), O.add(num_geom, c(1)), num_geom)
        u = _uniform(ks[0], c(0.0), c(1.0), shape, t)
        geom = O.ceil(O.divide(O.log(u), log1minusprob))
        return num_geom, O.add(geom_sum, geom), ks[1]

    k, _, _ = while_loop(lambda s: O.any(O.less_equal(s[1], count)), body,
                         (_full(0, shape, t), _full(0, shape, t), key))
    return O.subtract(k, c(1))


def _btrs(key, count, prob, shape, t):
    """JAX's ``_btrs`` (Hörmann's transformed rejection for the binomial)."""
    c = _like(t)
    one = c(1)
    stddev = O.sqrt(O.multiply(O.multiply(count, prob), O.subtract(one, prob)))
    b = O.add(c(1.15), O.multiply(c(2.53), stddev))
    a = O.add(O.add(c(-0.0873), O.multiply(c(0.0248), b)), O.multiply(c(0.01), prob))
    cc = O.add(O.multiply(count, prob), c(0.5))
    v_r = O.subtract(c(0.92), O.divide(c(4.2), b))
    r = O.divide(prob, O.subtract(one, prob))
    alpha = O.multiply(O.add(c(2.83), O.divide(c(5.1), b)), stddev)
    m = O.floor(O.multiply(O.add(count, one), prob))
    cm1 = O.add(O.subtract(count, m), one)

    def body(s):
        k_out, accepted, key = s
        ks = split(key, 3)
        u = _uniform(ks[1], c(0.0), one, shape, t)
        v = _uniform(ks[2], c(0.0), one, shape, t)
        u = O.subtract(u, c(0.5))
        us = O.subtract(c(0.5), O.abs(u))
        accept1 = O.logical_and(O.greater_equal(us, c(0.07)), O.less_equal(v, v_r))
        k = O.floor(O.add(O.multiply(O.add(O.divide(O.multiply(c(2), a), us), b), u), cc))
        reject = O.logical_or(O.less(k, c(0)), O.greater(k, count))
        v = O.log(O.divide(O.multiply(v, alpha), O.add(O.divide(a, O.multiply(us, us)), b)))
        ckp1 = O.add(O.subtract(count, k), one)
        ub = O.multiply(O.add(m, c(0.5)), O.log(O.divide(O.add(m, one), O.multiply(r, cm1))))
        ub = O.add(ub, O.multiply(O.add(count, one), O.log(O.divide(cm1, ckp1))))
        ub = O.add(ub, O.multiply(O.add(k, c(0.5)),
                                  O.log(O.divide(O.multiply(r, ckp1), O.add(k, one)))))
        ub = O.add(ub, _stirling_approx_tail(m))
        ub = O.add(ub, _stirling_approx_tail(O.subtract(count, m)))
        ub = O.subtract(ub, _stirling_approx_tail(k))
        ub = O.subtract(ub, _stirling_approx_tail(O.subtract(count, k)))
        accept = O.logical_or(accept1, O.logical_and(O.logical_not(reject),
                                                     O.less_equal(v, ub)))
        return O.select(accept, k, k_out), O.logical_or(accepted, accept), ks[0]

    k, _, _ = while_loop(lambda s: O.any(O.logical_not(s[1])), body,
                         (_full(-1, shape, t), _full(False, shape, T.PRED), key))
    return k


def _binomial(key, count, prob, shape, t, out):
    """JAX's ``_binomial``: ``count`` and ``prob`` of type ``t`` broadcast to ``shape``;
    the result in type ``out``."""
    c = _like(t)
    if count.shape != shape:
        count = O.broadcast(count, shape)
    if prob.shape != shape:
        prob = O.broadcast(prob, shape)
    if math.prod(shape) == 0:
        return O.as_type(prob, out)
    p_lt_half = O.less(prob, c(0.5))
    q = O.select(p_lt_half, prob, O.subtract(c(1.0), prob))
    count_nan_or_neg = O.logical_or(O.is_nan(count), O.less(count, c(0.0)))
    count_inf = O.is_infinity(count)
    q_is_nan = O.is_nan(q)
    q_l_0 = O.less(q, c(0.0))
    q = O.select(O.logical_or(q_is_nan, q_l_0), c(0.01), q)
    use_inversion = O.logical_or(count_nan_or_neg, O.less_equal(O.multiply(count, q), c(10.0)))
    count = O.floor(count)
    count_inv = O.select(use_inversion, count, c(0.0))
    count_btrs = O.select(use_inversion, c(1e4), count)
    q_btrs = O.select(use_inversion, c(0.5), q)
    samples = O.as_type(O.select(use_inversion, _binomial_inversion(key, count_inv, q, shape, t),
                                 _btrs(key, count_btrs, q_btrs, shape, t)), out)
    invalid = O.logical_or(O.logical_or(q_l_0, q_is_nan), count_nan_or_neg)
    samples = O.select(invalid, O.tensor(float("nan"), type=out), samples)
    samples = O.select(O.logical_and(count_inf, O.logical_not(invalid)),
                       O.tensor(float("inf"), type=out), samples)
    keep = O.logical_or(O.logical_or(p_lt_half, count_nan_or_neg),
                        O.logical_or(q_is_nan, count_inf))
    return O.select(keep, samples, O.subtract(O.as_type(count, out), samples))


def _out_float_type(op, type, t):
    if type is None:
        return t
    out = check_type(type, op)
    if not out.is_float:
        raise TypeError(f"{op}: expected type to be a floating-point type, got {out}")
    return out


def binomial_split(key, n, p, *, shape=None, type=None, names=None) -> Tensor:
    """Binomial samples (successes in ``n`` trials of probability ``p``) from ``key`` as
    given: ``jax.random.binomial(key, n, p, shape, dtype)``'s values (inversion where
    ``n q <= 10``, ``q = min(p, 1 - p)``, BTRS elsewhere, each a ``while_loop`` over the
    whole tensor; NaN for a NaN or negative ``n`` or an invalid ``p``, inf for ``n =
    inf``). The computation runs in ``p``'s floating type (f32 for Python numbers), as
    JAX's does; ``type`` (default: that type) is the result's floating type. ``n`` and
    ``p`` broadcast to ``shape`` (default: their shapes broadcast).

    >>> import nxpy as nx
    >>> binomial_split(nx.random.key(0), nx.tensor([5.0, 20.0, 100.0]), 0.5).tolist()
    [3.0, 10.0, 57.0]
    """
    op = "binomial_split"
    key = check_key(key, op)
    t = _float_param_type(op, None, p)
    out = _out_float_type(op, type, t)
    n, p = _param(n, "n", op, t), _param(p, "p", op, t)
    shape = _out_shape(op, shape, n, p)
    return _finish(_binomial(key, n, p, shape, t, out), shape, names, op)


def binomial(key, n, p, *, shape=None, type=None, names=None):
    """``(binomial_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "binomial")
    return binomial_split(k, n, p, shape=shape, type=type, names=names), nxt


def _reverse_cumsum(xs):
    """``cumsum(xs, reverse=True)`` of a list of tensors, summed as XLA's reduce-window
    does (``((0 + x_i) + x_i+1) + ...`` from each position to the end)."""
    out = []
    for i in range(len(xs)):
        acc = O.add(O.tensor(0, type=xs[i].type), xs[i])
        for x in xs[i + 1:]:
            acc = O.add(acc, x)
        out.append(acc)
    return out


def multinomial_split(key, n, p, *, shape=None, type=None, names=None) -> Tensor:
    """Multinomial counts (``n`` trials over the outcomes of ``p``'s last axis) from
    ``key`` as given: ``jax.random.multinomial(key, n, p, shape=shape, dtype=dtype)``'s
    values in jax 0.10.2 (a chain of binomials, one key per outcome). ``shape`` is the
    result's shape (default ``p.shape``; jax 0.12 takes the batch shape instead), ``p``
    broadcasts to it and ``n`` to ``shape[:-1]``. The computation runs in ``n`` and
    ``p``'s floating type merged (f32 for Python numbers); ``type`` (default: that type) is
    the result's floating type.

    >>> import nxpy as nx
    >>> multinomial_split(nx.random.key(0), 10.0, nx.tensor([0.2, 0.3, 0.5])).tolist()
    [1.0, 1.0, 8.0]
    """
    op = "multinomial_split"
    key = check_key(key, op)
    t = _float_param_type(op, None, n, p)
    out = _out_float_type(op, type, t)
    n, p = _param(n, "n", op, t), _param(p, "p", op, t)
    if p.rank < 1:
        raise ValueError(f"{op}: expected p to have rank 1 or more, got a scalar")
    shape = p.shape if shape is None else check_shape(shape, op)
    if not shape:
        raise ValueError(f"{op}: expected shape to have rank 1 or more, got ()")
    for name, v, s in (("p", p, shape), ("n", n, shape[:-1])):
        vs = v.shape
        if len(vs) > len(s) or not all(x in (1, y) for x, y in zip(vs[::-1], s[::-1])):
            raise ValueError(f"{op}: expected {name} to broadcast to shape {s}, got a tensor "
                             f"with shape {vs}")
    batch = tuple(shape[:-1])
    n = O.broadcast(n, batch) if n.shape != batch else n
    p = O.broadcast(p, shape) if p.shape != tuple(shape) else p
    m = shape[-1]
    if math.prod(shape) == 0:
        return _finish(O.as_type(p, out), shape, names, op)
    ax = len(shape) - 1
    ps = [O.squeeze(O.slice_along_axis(p, i, 1, axis=ax), [ax]) for i in range(m)]
    remaining = _reverse_cumsum(ps)
    c = _like(t)
    ratios = O.stack([O.divide(x, O.select(O.equal(r, c(0)), c(1), r))
                      for x, r in zip(ps, remaining)])

    def step(remainder, ratio_key):  # JAX's scan body, over the outcomes
        ratio, k = ratio_key
        count = _binomial(k, remainder, O.clip(ratio, c(0), c(1)), batch, t, t)
        return O.subtract(remainder, count), count

    _, counts = scan(step, n, (ratios, split(key, m)))
    counts = O.transpose(counts, axes=list(range(1, ax + 1)) + [0]) if ax else counts
    return _finish(O.as_type(counts, out), shape, names, op)


def multinomial(key, n, p, *, shape=None, type=None, names=None):
    """``(multinomial_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "multinomial")
    return multinomial_split(k, n, p, shape=shape, type=type, names=names), nxt
