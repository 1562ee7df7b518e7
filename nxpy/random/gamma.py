"""gamma and the distributions drawn through it (issue 28, part 4): ``gamma``, ``loggamma``,
``beta``, ``dirichlet``, ``chisquare``, ``t``, ``f`` and ``generalized_normal``, each in the
package's two forms (``name_split(key, ...)``: ``jax.random.name(key, ...)``'s values;
``name(key, ...)``: ``(value, next_key)``).

JAX draws a gamma variate per element with Marsaglia and Tsang's rejection method: each
element gets its own key (``split(key, a.size)``), and a ``while_loop`` (an outer loop of
trials, each with an inner loop drawing normals until ``1 + c x > 0``) runs until that
element accepts. nxpy's op layer has no ``while_loop`` (it lives in ``defn``, above this
layer), so the loops are written without one: the key chains of the first ``K`` outer
trials and ``J`` inner draws of every element are computed at once (a trial's keys depend
only on the element's key, never on the values drawn), every candidate is evaluated, and
each element takes the one JAX's loops stop at. That is exactly JAX's value whenever the
element accepts within those trials. Eagerly the trials are doubled until every element
has (so eager results are always JAX's); traced (``jit``), ``K = 8`` and ``J = 5``, where an
element runs out with probability below ``1e-10`` (the acceptance rate is at least 0.95 per
trial, and an inner draw fails with probability at most 0.0072): such an element takes its
first complete accepted trial instead (a gamma variate, not JAX's), or, with none,
``d * boost`` (the sample of ``V = 1``).

>>> import nxpy as nx
>>> from nxpy import random
>>> [round(v, 5) for v in random.gamma_split(random.key(0), 2.0, shape=(3,)).tolist()]
[1.58979, 1.75994, 1.12901]
"""
from __future__ import annotations

import math

import numpy as np

from .. import _context
from .. import ops as O
from .. import types as T
from ..tensor import Tensor
from .core import (_MANTISSA, _UINT, U32, U64, _finish, _key, _shape, _split2, _tensorish,
                   _type, split, threefry2x32)
from .basic import _uniform, normal_split

__all__ = ["gamma", "gamma_split", "loggamma", "loggamma_split", "beta", "beta_split",
           "dirichlet", "dirichlet_split", "chisquare", "chisquare_split", "t", "t_split",
           "f", "f_split", "generalized_normal", "generalized_normal_split"]

#: trials (outer) and normal draws per trial (inner) of the gamma sampler under tracing
_TRACED_TRIALS, _TRACED_DRAWS = 8, 5
#: the first sizes tried eagerly (doubled until every element accepted)
_EAGER_TRIALS, _EAGER_DRAWS = 3, 2


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
    # a barrier per step keeps XLA from fusing (and so recomputing) the whole chain of
    # splits into each of its consumers, which made compiles very slow
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


def _stack_pairs(pairs):
    return O.stack([p[0] for p in pairs]), O.stack([p[1] for p in pairs])


def _first(flags, values, fallback):
    """Along axis 0: the value at the first true flag (``fallback`` where none is), and
    whether there was one."""
    out, found = fallback, None
    for i in reversed(range(flags.shape[0])):
        out = O.select(flags[i], values[i], out)
    found = O.any(flags, axes=[0])
    return out, found


# ----------------------------------------------------------------------------------------
# Marsaglia and Tsang, as jax.random's _gamma_one for every element at once
# ----------------------------------------------------------------------------------------
def _gamma_tries(k, alpha, log_space, trials, draws):
    """JAX's ``_gamma_one`` on every element of ``alpha`` with its key pair ``k``, with at
    most ``trials`` outer and ``draws`` inner iterations; returns ``(samples, ok)``, ``ok``
    true where the element's loops ended within them (its sample is then JAX's)."""
    t = alpha.type

    def c(v):
        return O.tensor(v, type=t)

    one = c(1)
    boost_mask = O.greater_equal(alpha, one)
    alpha_orig = alpha
    alpha = O.select(boost_mask, alpha, O.add(alpha, one))
    d = O.subtract(alpha, c(1.0 / 3.0))
    cc = O.divide(c(1.0 / 3.0), O.sqrt(d))
    key, subkey = _split_pair(k, 2)
    # the outer loop's keys: key, x_key, U_key = split(key, 3), trial after trial
    x_keys, u_keys = [], []
    for _ in range(trials):
        key, x_key, u_key = _split_pair(key, 3)
        x_keys.append(x_key)
        u_keys.append(u_key)
    xk = _stack_pairs(x_keys)                     # [trials, *shape]
    # the inner loop's: key, subkey = split(key); x = normal(subkey)
    subs = []
    for _ in range(draws):
        xk, sub = _split_pair(xk, 2)
        subs.append(sub)
    x = _scalar_normal(_stack_pairs(subs), t)     # [draws, trials, *shape]
    v = O.add(one, O.multiply(x, cc))
    x, inner_ok = _first(O.greater(v, c(0)), x, x[draws - 1])
    v = O.add(one, O.multiply(x, cc))
    big_x = O.multiply(x, x)
    big_v = O.multiply(O.multiply(v, v), v)
    u = _scalar_uniform(_stack_pairs(u_keys), t)  # [trials, *shape]
    more = O.logical_and(
        O.greater_equal(u, O.subtract(one, O.multiply(c(0.0331), O.multiply(big_x, big_x)))),
        O.greater_equal(O.log(u), O.add(O.multiply(big_x, c(0.5)),
                                        O.multiply(d, O.add(O.subtract(one, big_v),
                                                            O.log(big_v))))))
    # an element stops at its first accepted trial (JAX's value when every trial up to it
    # found a positive v among its inner draws); a trial whose draws ran out is skipped,
    # and an element with no valid accepted trial takes V = 1 (so a sample stays positive)
    acc = O.logical_and(O.logical_not(more), inner_ok)
    done, bad = None, None
    vv = O.broadcast(one, big_v.shape[1:]) if big_v.shape[1:] else one
    for i in range(trials):
        if done is None:
            vv = O.select(acc[i], big_v[i], vv)
            bad, done = O.logical_not(inner_ok[i]), acc[i]
            continue
        live = O.logical_not(done)
        vv = O.select(O.logical_and(live, acc[i]), big_v[i], vv)
        bad = O.logical_or(bad, O.logical_and(live, O.logical_not(inner_ok[i])))
        done = O.logical_or(done, acc[i])
    ok = O.logical_and(done, O.logical_not(bad))
    if log_space:
        log_samples = O.log1p(O.negate(_scalar_uniform(subkey, t)))  # -exponential
        log_boost = O.select(O.logical_or(boost_mask, O.equal(log_samples, c(0))), c(0),
                             O.multiply(log_samples, O.divide(one, alpha_orig)))
        return O.add(O.add(O.log(d), O.log(vv)), log_boost), ok
    samples = O.subtract(one, _scalar_uniform(subkey, t))
    boost = O.select(boost_mask, one, O.pow(samples, O.divide(one, alpha_orig)))
    return O.multiply(O.multiply(d, vv), boost), ok


def _gamma(key, a, shape, t, log_space):
    """``jax.random._gamma``: ``a`` (of type ``t``) broadcast to ``shape``, one key per
    element."""
    if a.shape != shape:
        a = O.broadcast(a, shape)
    if math.prod(shape) == 0:
        return a
    keys = split(key, shape)                      # shape + (2,)
    r = len(shape)
    k = (O.squeeze(O.slice_along_axis(keys, 0, 1, axis=r), [r]),
         O.squeeze(O.slice_along_axis(keys, 1, 1, axis=r), [r]))
    if _context.tracing():
        return _gamma_tries(k, a, log_space, _TRACED_TRIALS, _TRACED_DRAWS)[0]
    trials, draws = _EAGER_TRIALS, _EAGER_DRAWS
    while True:
        out, ok = _gamma_tries(k, a, log_space, trials, draws)
        if bool(O.all(ok).tolist()):
            return out
        trials, draws = 2 * trials, 2 * draws


# ----------------------------------------------------------------------------------------
# Arguments
# ----------------------------------------------------------------------------------------
def _float_param_type(op, type, *params):
    """``type``, or the floating type of the parameters merged (f32 for Python numbers)."""
    if type is not None:
        t = _type(type, op)
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
        return O.as_type(v, t)
    if isinstance(v, complex):
        raise TypeError(f"{op}: expected {arg} to be a real number or tensor, got {v!r}")
    return O.tensor(float(v), type=t)


def _number(v, arg, op):
    if isinstance(v, complex):
        raise TypeError(f"{op}: expected {arg} to be a real number or tensor, got {v!r}")
    return float(v)


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
    shape = _shape(shape, op)
    for (name, p) in zip(_param_names(op), params):
        ps = p.shape
        if len(ps) > len(shape) or not all(x in (1, y) for x, y in zip(ps[::-1], shape[::-1])):
            raise ValueError(f"{op}: expected {name} to broadcast to shape {shape}, got a "
                             f"tensor with shape {ps}")
    return shape


_PARAMS = {"gamma": ("a",), "loggamma": ("a",), "beta": ("a", "b"), "chisquare": ("df",),
           "t": ("df",), "f": ("dfnum", "dfden"), "generalized_normal": ("p",)}


def _param_names(op):
    return _PARAMS[op.removesuffix("_split")]


# ----------------------------------------------------------------------------------------
# gamma and loggamma
# ----------------------------------------------------------------------------------------
def _gamma_like(op, key, a, shape, type, names, log_space):
    key = _key(key, op)
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
    key = _key(key, op)
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
    key = _key(key, op)
    t = _float_param_type(op, type, alpha)
    alpha = _param(alpha, "alpha", op, t)
    if alpha.rank < 1:
        raise ValueError(f"{op}: expected alpha to have rank 1 or more, got a scalar")
    batch = alpha.shape[:-1]
    if shape is None:
        shape = batch
    else:
        shape = _shape(shape, op)
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
    half = O.divide(df, O.tensor(2, type=t))
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
    key = _key(key, op)
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
    key = _key(key, op)
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
    key = _key(key, op)
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
    key = _key(key, op)
    t = _float_param_type(op, type, p)
    p = _tensorish(p, "p", op)
    if isinstance(p, Tensor):
        p = _param(p, "p", op, t)
        shape = _out_shape(op, shape, p)
    else:
        p = _number(p, "p", op)
        shape = _shape(shape, op)
    ks = split(key)
    inv = O.divide(O.tensor(1, type=t), p) if isinstance(p, Tensor) else O.tensor(1 / p, type=t)
    g = _gamma(ks[0], inv, shape, t, False)
    r = _rademacher(ks[1], shape, t)
    return _finish(O.multiply(r, O.pow(g, inv)), shape, names, op)


def generalized_normal(key, p, *, shape=(), type=None, names=None):
    """``(generalized_normal_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "generalized_normal")
    return generalized_normal_split(k, p, shape=shape, type=type, names=names), nxt
