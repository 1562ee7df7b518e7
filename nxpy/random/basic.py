"""The first samplers: bits, uniform, normal, randint, gumbel, shuffle, choice and
multivariate_normal, each in its two forms (``name_split(key, ...)`` and ``name(key, ...)``
returning ``(value, next_key)``)."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from .. import ops as O
from .. import shape as S
from .. import types as T
from ..defn.placement import out_sharding_option
from ..tensor import Tensor
from .core import (S32, S64, U32, U64, _MANTISSA, _UINT, _bits, _check_param_shapes, _finish,
                   _merged_type, _names, _split2, _tensorish, check_key, check_shape, check_type,
                   split)

__all__ = ["bits", "bits_split", "uniform", "uniform_split", "normal", "normal_split",
           "randint", "randint_split", "gumbel", "gumbel_split", "shuffle", "choice",
           "multivariate_normal", "multivariate_normal_split"]

# ----------------------------------------------------------------------------------------
# Bits, uniform, normal, randint, gumbel
# ----------------------------------------------------------------------------------------
@out_sharding_option
def bits_split(key, *, shape=(), type="u32", names=None) -> Tensor:
    """Uniform random bits: unsigned integers of ``type`` (u8, u16, u32, u64) and ``shape``
    from ``key`` as given (``jax.random.bits(key, shape, dtype)``).

    >>> import nxpy as nx
    >>> bits_split(nx.random.key(0), shape=(3,)).tolist()
    [4070199207, 4202968722, 1427181096]
    """
    key = check_key(key, "bits_split")
    shape = check_shape(shape, "bits_split")
    t = check_type(type, "bits_split")
    if t.kind != "u":
        raise TypeError(f"bits_split: expected type to be an unsigned integer type (u8, u16, "
                        f"u32, u64), got {t}")
    return _finish(_bits(key, t.bits, shape), shape, names, "bits_split")


def bits(key, *, shape=(), type="u32", names=None):
    """``(bits_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "bits")
    return bits_split(k, shape=shape, type=type, names=names), nxt


def _float_type(op, a, b, type):
    if type is not None:
        t = check_type(type, op)
    else:
        t = T.to_floating(_merged_type(a, b))
    if not t.is_inexact:
        raise TypeError(f"{op}: expected type to be a float or complex type, got {t}")
    return t


def _uniform(key, minval, maxval, shape, t, rolled=False):
    """``jax.random.uniform``: the mantissa of ``1.0`` filled with random bits, minus 1,
    scaled to ``[minval, maxval)`` (``rolled``: the bits through JAX's CPU threefry loop,
    ``core._threefry2x32_rolled``)."""
    nbits, nmant = t.bits, _MANTISSA[(t.kind, t.bits)]
    u = _UINT[nbits]
    # as JAX: a type with fewer than 8 mantissa bits (bf16) draws 8 random bits
    rng_bits = 8 if nmant < 8 else nbits
    b = _bits(key, rng_bits, shape, rolled)
    if rng_bits != nbits:
        b = O.as_type(b, u)
    one_bits = int(np.array(1.0, t.dtype).view(u.dtype))
    fb = O.bitwise_or(O.right_shift(b, rng_bits - nmant), one_bits)
    floats = O.subtract(O.bitcast(fb, t), O.tensor(1.0, type=t))
    lo, hi = O.as_type(minval, t), O.as_type(maxval, t)
    span = O.subtract(hi, lo)
    if t == T.F32:  # XLA fuses this multiply-add: one rounding, computed in f64 everywhere
        scaled = O.as_type(O.add(O.multiply(O.as_type(floats, T.F64), O.as_type(span, T.F64)),
                                 O.as_type(lo, T.F64)), t)
    else:
        scaled = O.add(O.multiply(floats, span), lo)
    return O.max(lo, scaled)


def _float_or_complex(t, shape, fn):
    """Nx's ``float_or_complex``: a complex type draws ``shape + (2,)`` reals (real and
    imaginary parts)."""
    if t.is_complex:
        data = fn(T.to_real(t), shape + (2,))
        def part(i):
            return O.squeeze(O.slice_along_axis(data, i, 1, axis=len(shape)), [len(shape)])
        return O.complex(part(0), part(1))
    return fn(t, shape)


@out_sharding_option
def uniform_split(key, min_val=0.0, max_val=1.0, *, shape=(), type=None,
                  names=None) -> Tensor:
    """Uniform floats in ``[min_val, max_val)`` from ``key`` as given
    (``jax.random.uniform(key, shape, dtype, min_val, max_val)``). ``type`` defaults to
    the floating type of ``min_val`` and ``max_val`` merged (f32 for Python numbers); a
    complex type draws the real and imaginary parts (as Nx). ``min_val``/``max_val`` may
    be tensors that broadcast to ``shape``. ``max_val <= min_val`` gives ``min_val``.

    >>> import nxpy as nx
    >>> [round(v, 6) for v in uniform_split(nx.random.key(0), shape=(2,)).tolist()]
    [0.947667, 0.97858]
    >>> uniform_split(nx.random.key(0), 5, 5, shape=(2,)).tolist()
    [5.0, 5.0]
    """
    key = check_key(key, "uniform_split")
    shape = check_shape(shape, "uniform_split")
    min_val = _tensorish(min_val, "min_val", "uniform_split")
    max_val = _tensorish(max_val, "max_val", "uniform_split")
    t = _float_type("uniform_split", min_val, max_val, type)
    _check_param_shapes("uniform_split", shape, min_val=min_val, max_val=max_val)
    out = _float_or_complex(t, shape, lambda rt, sh: _uniform(key, min_val, max_val, sh, rt))
    return _finish(out, shape, names, "uniform_split")


def uniform(key, min_val=0.0, max_val=1.0, *, shape=(), type=None, names=None):
    """``(uniform_split(k1, ...), k0)`` where ``k0, k1 = split(key)`` (Nx's ``uniform``).

    >>> import nxpy as nx
    >>> u, k = uniform(nx.random.key(1701))
    >>> round(u.tolist(), 6), k.shape
    (0.813105, (2,))
    """
    k, nxt = _split2(key, "uniform")
    return uniform_split(k, min_val, max_val, shape=shape, type=type, names=names), nxt


def _next_after_minus_one(t):
    u = _UINT[t.bits].dtype
    return np.array(int(np.array(-1.0, t.dtype).view(u)) - 1, u).view(t.dtype)


def _normal_real(key, shape, t, rolled=False):
    """``jax.random.normal(key, shape, t)`` for a real ``t``: ``sqrt(2) erf_inv(u)``, ``u``
    uniform in ``(-1, 1)`` (``rolled`` as :func:`_uniform`'s)."""
    lo = _next_after_minus_one(t)
    u = _uniform(key, O.tensor(lo.item() if t.bits > 16 else float(lo), type=t),
                 O.tensor(1.0, type=t), shape, t, rolled)
    return O.multiply(O.tensor(math.sqrt(2), type=t), O.erf_inv(u))


@out_sharding_option
def normal_split(key, mean=0.0, standard_deviation=1.0, *, shape=(), type=None,
                 names=None) -> Tensor:
    """Normal samples ``mean + standard_deviation * z`` from ``key`` as given, where ``z``
    is ``jax.random.normal(key, shape, dtype)`` (``sqrt(2) * erf_inv(u)``, ``u`` uniform in
    ``(-1, 1)``); with the default ``mean``/``standard_deviation`` the bits are JAX's.
    A complex type draws the real and imaginary parts (as Nx).

    >>> import nxpy as nx
    >>> [round(v, 5) for v in normal_split(nx.random.key(0), shape=(3,)).tolist()]
    [1.62264, 2.02526, -0.43359]
    """
    key = check_key(key, "normal_split")
    shape = check_shape(shape, "normal_split")
    mean = _tensorish(mean, "mean", "normal_split")
    std = _tensorish(standard_deviation, "standard_deviation", "normal_split")
    t = _float_type("normal_split", mean, std, type)
    _check_param_shapes("normal_split", shape, mean=mean, standard_deviation=std)
    plain = (not isinstance(mean, Tensor) and mean == 0 and not isinstance(std, Tensor)
             and std == 1)

    def draw(rt, sh):
        z = _normal_real(key, sh, rt)
        if plain:
            return z
        return O.add(O.multiply(O.as_type(std, rt), z), O.as_type(mean, rt))
    return _finish(_float_or_complex(t, shape, draw), shape, names, "normal_split")


def normal(key, mean=0.0, standard_deviation=1.0, *, shape=(), type=None, names=None):
    """``(normal_split(k1, ...), k0)`` where ``k0, k1 = split(key)`` (Nx's ``normal``)."""
    k, nxt = _split2(key, "normal")
    return normal_split(k, mean, standard_deviation, shape=shape, type=type,
                        names=names), nxt


def _int_tensor(v, arg, op):
    """A randint bound as a tensor: Python ints as s64 (u64 above s64's range), float
    tensors truncated to s64 (as ``astype(int)`` in JAX's x64 mode)."""
    if isinstance(v, bool) or isinstance(v, (float, complex)):
        raise TypeError(f"{op}: expected {arg} to be an integer or an integer tensor, got "
                        f"{v!r}")
    if isinstance(v, (int, np.integer)):
        v = int(v)
        if not -2 ** 63 <= v < 2 ** 64:
            raise ValueError(f"{op}: expected {arg} to fit in 64 bits, got {v}")
        return O.tensor(v, type=S64 if v < 2 ** 63 else U64)
    if not v.type.is_int:
        if v.type.is_complex:
            raise TypeError(f"{op}: expected {arg} to be a real tensor, got type {v.type}")
        v = O.as_type(v, S64)
    return v


def _convert_and_clip(v, t):
    """``v`` in integer type ``t``, clipped to ``t``'s range rather than wrapped."""
    lo = max(int(T.min_value(t)), int(T.min_value(v.type)))
    hi = min(int(T.max_value(t)), int(T.max_value(v.type)))
    if lo > int(T.min_value(v.type)) or hi < int(T.max_value(v.type)):
        v = O.clip(v, lo, hi)
    return O.as_type(v, t)


def _randint(key, minval, maxval, shape, t):
    """``jax.random._randint``: 2 * nbits random bits per value, reduced modulo the span."""
    imax = O.as_type(_convert_and_clip(O.tensor(int(T.max_value(t)), type=t), maxval.type),
                     maxval.type)
    out_of_range = O.greater(maxval, imax)
    minval = _convert_and_clip(minval, t)
    maxval = _convert_and_clip(maxval, t)
    nbits = t.bits
    keys = split(key)
    k1, k2 = keys[0], keys[1]
    higher, lower = _bits(k1, nbits, shape), _bits(k2, nbits, shape)
    u = _UINT[nbits]
    span = O.as_type(O.subtract(maxval, minval), u)
    span = O.select(O.less_equal(maxval, minval), O.tensor(1, type=u), span)
    span = O.select(O.logical_and(out_of_range, O.greater(maxval, minval)),
                    O.add(span, 1), span)
    mult = O.remainder(O.tensor(2 ** (nbits // 2), type=u), span)
    mult = O.remainder(O.multiply(mult, mult), span)
    off = O.add(O.multiply(O.remainder(higher, span), mult), O.remainder(lower, span))
    off = O.remainder(off, span)
    out = O.add(minval, O.as_type(off, t))
    if out.shape != shape:
        out = O.broadcast(out, shape)
    return out


@out_sharding_option
def randint_split(key, min_val, max_val, *, shape=(), type=None, names=None) -> Tensor:
    """Uniform integers in ``[min_val, max_val)`` from ``key`` as given
    (``jax.random.randint(key, shape, min_val, max_val, dtype)``). ``type`` defaults to
    the type of ``min_val`` and ``max_val`` merged (s32 for Python ints); bounds are
    clipped into ``type``'s range, and ``max_val <= min_val`` gives ``min_val`` (as JAX).
    Types below 32 bits are drawn as s32 and converted (as JAX).

    >>> import nxpy as nx
    >>> randint_split(nx.random.key(0), 0, 10, shape=(5,)).tolist()
    [9, 0, 2, 3, 1]
    >>> randint_split(nx.random.key(0), 3, 3, shape=(2,)).tolist()
    [3, 3]
    """
    op = "randint_split"
    key = check_key(key, op)
    shape = check_shape(shape, op)
    min_val = _tensorish(min_val, "min_val", op)
    max_val = _tensorish(max_val, "max_val", op)
    t = check_type(type, op) if type is not None else _merged_type(min_val, max_val)
    if not t.is_int:
        raise TypeError(f"{op}: expected type to be an integer type, got {t}")
    _check_param_shapes(op, shape, min_val=min_val, max_val=max_val)
    lo, hi = _int_tensor(min_val, "min_val", op), _int_tensor(max_val, "max_val", op)
    if t.bits < 32:
        info_lo, info_hi = int(T.min_value(t)), int(T.max_value(t))
        lo = O.clip(O.as_type(lo, S32), info_lo, info_hi)
        hi = O.clip(O.as_type(hi, S32), info_lo, info_hi + 1)
        out = O.as_type(_randint(key, lo, hi, shape, S32), t)
    else:
        out = _randint(key, lo, hi, shape, t)
    return _finish(out, shape, names, op)


def randint(key, min_val, max_val, *, shape=(), type=None, names=None):
    """``(randint_split(k1, ...), k0)`` where ``k0, k1 = split(key)`` (Nx's ``randint``)."""
    k, nxt = _split2(key, "randint")
    return randint_split(k, min_val, max_val, shape=shape, type=type, names=names), nxt


@out_sharding_option
def gumbel_split(key, *, shape=(), type="f32", names=None) -> Tensor:
    """Standard Gumbel samples ``-log(-log(u))``, ``u`` uniform in ``[tiny, 1)``, from
    ``key`` as given (``jax.random.gumbel(key, shape, dtype)``, mode "low"; Nx's
    ``gumbel_split``).

    >>> import nxpy as nx
    >>> [round(v, 5) for v in gumbel_split(nx.random.key(0), shape=(2,)).tolist()]
    [2.92337, 3.83262]
    """
    op = "gumbel_split"
    key = check_key(key, op)
    shape = check_shape(shape, op)
    t = check_type(type, op)
    if not t.is_float:
        raise TypeError(f"{op}: expected type to be a floating-point type, got {t}")
    tiny = float(ml_dtypes.finfo(t.dtype).tiny)
    u = _uniform(key, O.tensor(tiny, type=t), O.tensor(1.0, type=t), shape, t)
    return _finish(O.negate(O.log(O.negate(O.log(u)))), shape, names, op)


def gumbel(key, *, shape=(), type="f32", names=None):
    """``(gumbel_split(k1, ...), k0)`` where ``k0, k1 = split(key)`` (Nx's ``gumbel``)."""
    k, nxt = _split2(key, "gumbel")
    return gumbel_split(k, shape=shape, type=type, names=names), nxt


# ----------------------------------------------------------------------------------------
# Shuffle and choice
# ----------------------------------------------------------------------------------------
def _shuffle(key, x, axis):
    """JAX's ``_shuffle``: ``ceil(3 ln n / ln(2**32 - 1))`` rounds of a stable sort by
    fresh 32-bit keys. Returns the shuffled tensor and the key after the rounds."""
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(2 ** 32 - 1)))
    for _ in range(rounds):
        keys = split(key)
        key, sub = keys[0], keys[1]
        x = O.permute_by_key(_bits(sub, 32, x.shape), x, axis=axis)
    return x, key


def shuffle(key, tensor, *, axis=0, independent=False):
    """``tensor`` randomly permuted along ``axis``; returns ``(shuffled, next_key)``. With
    ``independent=True`` every 1-D slice along ``axis`` gets its own permutation. The
    values are ``jax.random.permutation(key, tensor, axis, independent)``'s.

    >>> import nxpy as nx
    >>> s, k = shuffle(nx.random.key(42), nx.iota((5,)))
    >>> s.tolist()
    [4, 2, 3, 0, 1]
    """
    op = "shuffle"
    key = check_key(key, op)
    x = O.to_tensor(tensor, "tensor")
    if x.rank == 0:
        raise ValueError(f"{op}: expected tensor to have rank 1 or more, got a scalar")
    try:
        axis = S.normalize_axis(axis, x.rank, x.names)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op}: axis: {e}") from None
    if independent or x.rank == 1:
        return _shuffle(key, x, axis)
    idx, key = _shuffle(key, O.iota((x.shape[axis],)), 0)
    return O.take(x, idx, axis=axis), key


def choice(key, tensor, p=None, *, samples=1, axis=None, replace=True):
    """``samples`` draws from ``tensor`` along ``axis`` (``None``: the flattened tensor),
    with or without replacement, uniformly or with probabilities ``p`` (rank 1, the size
    of that axis). Returns ``(result, next_key)``; the result has ``tensor``'s shape with
    the axis replaced by ``samples`` (Nx's ``Nx.Random.choice``).

    >>> import nxpy as nx
    >>> r, k = choice(nx.random.key(1), nx.iota((4, 3)), samples=2, axis=0)
    >>> r.shape
    (2, 3)
    """
    op = "choice"
    key = check_key(key, op)
    x = O.to_tensor(tensor, "tensor")
    if x.rank < 1:
        raise ValueError(f"{op}: expected tensor to have rank 1 or more, got a scalar")
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"{op}: expected samples to be a positive int, got {samples!r}")
    samples = int(samples)
    if axis is None:
        x = O.reshape(x, (x.size,))
        axis = 0
    else:
        try:
            axis = S.normalize_axis(axis, x.rank, x.names)
        except (ValueError, TypeError) as e:
            raise type(e)(f"{op}: axis: {e}") from None
    n = x.shape[axis]
    if not replace and samples > n:
        raise ValueError(f"{op}: cannot take more samples ({samples}) than the input size "
                         f"({n}) when replace=False")
    if n == 0:
        raise ValueError(f"{op}: expected a non-empty axis {axis} to draw from")
    if p is None:
        if replace:
            idx, key = randint(key, 0, n, shape=(samples,), type=U32)
            return O.take(x, idx, axis=axis), key
        shuffled, key = shuffle(key, x, axis=axis)
        return O.slice_along_axis(shuffled, 0, samples, axis=axis), key
    p = O.to_tensor(p, "p")
    if p.rank != 1:
        raise ValueError(f"{op}: expected p to have rank 1, got rank {p.rank}")
    if p.size != n:
        raise ValueError(f"{op}: expected p to have size {n} (the size of the axis drawn "
                         f"from), got {p.size}")
    if not p.type.is_float:
        p = O.as_type(p, T.to_floating(p.type))
    if replace:
        cum = O.cumulative_sum(p)
        u, key = uniform(key, shape=(samples,), type=cum.type)
        r = O.multiply(cum[n - 1], O.subtract(1, u))
        # searchsorted (side left): how many cumulative sums are below r
        below = O.less(O.new_axis(cum, 0), O.new_axis(r, 1))
        idx = O.sum(O.as_type(below, S32), axes=[1])
        idx = O.min(idx, n - 1)
        return O.take(x, idx, axis=axis), key
    g, key = gumbel(key, shape=(n,), type=p.type)
    g = O.subtract(O.negate(g), O.log(p))
    idx = O.slice_along_axis(O.argsort(g, stable=True), 0, samples, axis=0)
    return O.take(x, idx, axis=axis), key


# ----------------------------------------------------------------------------------------
# Multivariate normal
# ----------------------------------------------------------------------------------------
def _factor(cov, method):
    """``F`` with ``F @ F.T == cov``, as ``jax.random.multivariate_normal`` builds it."""
    if method == "svd":
        u, sv, _ = O.linalg.svd(cov)
        return O.multiply(u, O.new_axis(O.sqrt(sv), 0))
    if method == "eigh":
        w, v = O.linalg.eigh(cov)
        return O.multiply(v, O.new_axis(O.sqrt(w), 0))
    return O.linalg.cholesky(cov)


def multivariate_normal_split(key, mean, covariance, *, shape=None, type=None,
                              names=None, method="cholesky") -> Tensor:
    """Samples of the normal distribution with ``mean`` (rank 1, size n) and positive
    definite ``covariance`` (n x n) from ``key`` as given: ``mean + z @ F.T`` with ``z``
    from ``normal_split`` and ``F @ F.T == covariance``. ``shape`` is the batch shape (the
    result has ``shape + (n,)``; default ``()``). ``method`` builds ``F`` as
    ``jax.random.multivariate_normal`` does: ``"cholesky"`` (the Cholesky factor),
    ``"svd"`` (``u * sqrt(s)``) or ``"eigh"`` (``v * sqrt(w)``; the last two also take
    positive semi-definite covariances).

    >>> import nxpy as nx
    >>> mean, cov = nx.tensor([0.0, 0.0]), nx.eye(2, type="f32")
    >>> s = multivariate_normal_split(nx.random.key(12), mean, cov)
    >>> s.shape
    (2,)
    """
    op = "multivariate_normal_split"
    key = check_key(key, op)
    if method not in ("cholesky", "svd", "eigh"):
        raise ValueError(f"{op}: expected method to be one of 'cholesky', 'svd', 'eigh', got "
                         f"{method!r}")
    mean = O.to_tensor(mean, "mean")
    cov = O.to_tensor(covariance, "covariance")
    t = _float_type(op, mean, cov, type)
    if t.is_complex:
        raise TypeError(f"{op}: expected a real floating type, got {t}")
    if mean.rank != 1:
        raise ValueError(f"{op}: expected mean to have rank 1, got a tensor with rank "
                         f"{mean.rank}")
    if cov.rank != 2:
        raise ValueError(f"{op}: expected covariance to have rank 2, got a tensor with rank "
                         f"{cov.rank}")
    if cov.shape[0] != cov.shape[1]:
        raise ValueError(f"{op}: expected covariance to be a square matrix, got shape "
                         f"{cov.shape}")
    n = mean.shape[0]
    if cov.shape[0] != n:
        raise ValueError(f"{op}: expected mean and covariance of the same size, got {n} and "
                         f"{cov.shape[0]}")
    batch = () if shape is None else check_shape(shape, op)
    out_shape = batch + (n,)
    mean, cov = O.as_type(mean, t), O.as_type(cov, t)
    factor = _factor(cov, method)
    z = O.reshape(normal_split(key, shape=out_shape, type=t), (math.prod(batch), n))
    out = O.add(mean, O.dot(z, [1], factor, [1]))
    return O.reshape(out, out_shape, names=_names(names, out_shape, op))


def multivariate_normal(key, mean, covariance, *, shape=None, type=None, names=None,
                        method="cholesky"):
    """``(multivariate_normal_split(k1, ...), k0)`` where ``k0, k1 = split(key)``."""
    k, nxt = _split2(key, "multivariate_normal")
    return multivariate_normal_split(k, mean, covariance, shape=shape, type=type,
                                     names=names, method=method), nxt
