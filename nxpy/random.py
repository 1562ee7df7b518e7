"""Pseudo-random numbers as ``Nx.Random`` has them: explicit keys, threefry2x32, split.

A key is a plain ``u32[2]`` tensor (JAX's raw key data, ``jax.random.key_data``); every
function takes one and never changes it. The functions are compositions of nxpy's ops
(u32 add, xor, shifts, bitcast, ...), so they run eagerly on any backend, inside
``defn``/``jit`` on any compiler (the Evaluator, EXLA, plugins), under ``shard_jit`` and
``shard_map``, and inside ``while_loop``, with no random primitive of their own.

The bit streams are JAX's (``jax.random`` 0.10.2, default config, which has
``jax_threefry_partitionable=True``): ``split``, ``fold_in``, ``bits_split``,
``uniform_split``, ``normal_split``, ``randint_split`` and ``gumbel_split`` give the bits
``jax.random.split/fold_in/bits/uniform/normal/randint/gumbel`` give for the same key,
shape and type: exactly on EXLA, and on the NumPy backend and the Evaluator too except
for a few floats, which are a few ulps apart there (f64 ``uniform`` on a range other
than ``[0, 1)``, f64 ``normal``, ``gumbel``, and ``multivariate_normal``): docs/random.md,
"Bit equality with JAX, and where it stops", lists them and why. As in Nx, each function
also has a form without ``_split`` that splits the key first and returns ``(value,
next_key)``: ``uniform(key)`` is ``(uniform_split(split(key)[1]), split(key)[0])``.
docs/random.md compares the streams with Nx's.

>>> import nxpy as nx
>>> from nxpy import random
>>> key = random.key(42)
>>> key.tolist()
[0, 42]
>>> random.split(key).tolist()
[[1832780943, 270669613], [64467757, 2916123636]]
>>> [round(v, 6) for v in random.uniform_split(key, shape=(3,)).tolist()]
[0.48871, 0.679797, 0.616271]
>>> u, next_key = random.uniform(key, shape=(2,))
>>> next_key.tolist() == random.split(key)[0].tolist()
True

This module sits with ``nxpy.nn`` between the op front end (which it uses) and ``defn``
(which may use it): see docs/architecture.md.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from . import ops as O
from . import shape as S
from . import types as T
from .tensor import Tensor

__all__ = ["key", "split", "fold_in", "bits", "bits_split", "uniform", "uniform_split",
           "normal", "normal_split", "randint", "randint_split", "gumbel", "gumbel_split",
           "shuffle", "choice", "multivariate_normal", "multivariate_normal_split",
           "threefry2x32"]

U8, U16, U32, U64 = (T.Type("u", b) for b in (8, 16, 32, 64))
S32, S64 = T.Type("s", 32), T.Type("s", 64)
_UINT = {8: U8, 16: U16, 32: U32, 64: U64}
_MANTISSA = {("f", 16): 10, ("bf", 16): 7, ("f", 32): 23, ("f", 64): 52}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


# ----------------------------------------------------------------------------------------
# Argument checks
# ----------------------------------------------------------------------------------------
def _key(key, op: str) -> Tensor:
    """``key`` as a u32[2] tensor, or an error naming the argument."""
    if not isinstance(key, Tensor):
        if isinstance(key, (int, float, bool)) or key is None:
            raise TypeError(f"{op}: expected key to be a u32[2] tensor (from nxpy.random.key), "
                            f"got {key!r}")
        key = O.to_tensor(key, "key")
    if key.shape != (2,):
        raise ValueError(f"{op}: expected key to have shape (2,), got a tensor with shape "
                         f"{key.shape}")
    if key.type != U32:
        raise TypeError(f"{op}: expected key to have type u32, got a key of type {key.type}")
    return key


def _shape(shape, op: str, arg: str = "shape") -> tuple:
    if isinstance(shape, Tensor):
        return shape.shape
    return S.dims(shape, f"{op}: {arg}")


def _type(type, op: str) -> T.Type:
    try:
        return T.parse(type)
    except TypeError as e:
        raise TypeError(f"{op}: type: {e}") from None


def _merged_type(a, b):
    """The type of ``a`` and ``b`` together, Python numbers weakly typed (as in Nx)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return T.merge(a.type, b.type)
    if isinstance(a, Tensor):
        return T.merge_scalar(a.type, b)
    if isinstance(b, Tensor):
        return T.merge_scalar(b.type, a)
    return T.merge_scalar(T.merge_scalar(T.infer_scalar(a), b), a)


def _tensorish(v, arg, op):
    """A Python number stays as is (weak, as in Nx); anything else becomes a tensor."""
    if isinstance(v, (bool, int, float, complex)) and not isinstance(v, np.generic):
        return v
    try:
        return O.to_tensor(v, arg)
    except (TypeError, ValueError) as e:
        raise type(e)(f"{op}: {e}") from None


def _check_param_shapes(op, shape, **params):
    """JAX's rule: the parameters broadcast to ``shape`` and broadcasting them with it
    gives ``shape`` back."""
    for name, v in params.items():
        if not isinstance(v, Tensor):
            continue
        ps = v.shape
        ok = len(ps) <= len(shape) and all(
            p in (1, d) for p, d in zip(ps[::-1], shape[::-1]))
        if not ok:
            raise ValueError(f"{op}: expected {name} to broadcast to shape {shape}, got a "
                             f"tensor with shape {ps}")


def _names(names, shape, op):
    if names is None:
        return None
    return list(S.check_names(names, shape, f"{op}: names"))


def _finish(x, shape, names, op):
    names = _names(names, shape, op)
    return x if names is None else O.reshape(x, shape, names=names)


# ----------------------------------------------------------------------------------------
# threefry2x32 (20 rounds), as nxpy ops
# ----------------------------------------------------------------------------------------
def _rotl(x, r):
    return O.bitwise_or(O.left_shift(x, r), O.right_shift(x, 32 - r))


def threefry2x32(k1, k2, x1, x2):
    """The Threefry-2x32 block cipher (20 rounds) on u32 tensors: the key words ``k1``,
    ``k2`` and the counter words ``x1``, ``x2`` broadcast together; returns the two
    output words. This is ``threefry2x32_p`` of ``jax._src.prng``, written with nxpy's ops.

    >>> import nxpy as nx
    >>> u = lambda v: nx.tensor(v, type="u32")
    >>> [t.tolist() for t in threefry2x32(u(0), u(0), u(0), u(0))]
    [1797259609, 2579123966]
    """
    k1, k2, x1, x2 = (O.to_tensor(v, n) for v, n in ((k1, "k1"), (k2, "k2"), (x1, "x1"),
                                                      (x2, "x2")))
    for name, v in (("k1", k1), ("k2", k2), ("x1", x1), ("x2", x2)):
        if v.type != U32:
            raise TypeError(f"threefry2x32: expected {name} of type u32, got {v.type}")
    ks = [k1, k2, O.bitwise_xor(O.bitwise_xor(k1, k2), 0x1BD11BDA)]
    x1 = O.add(x1, ks[0])
    x2 = O.add(x2, ks[1])
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = O.add(x1, x2)
            x2 = O.bitwise_xor(x1, _rotl(x2, r))
        x1 = O.add(x1, ks[(i + 1) % 3])
        x2 = O.add(O.add(x2, ks[(i + 2) % 3]), i + 1)
    return x1, x2


def _counts(shape):
    """The low words of a u64 iota over ``shape`` (row-major), as a sum of per-axis iotas
    times strides (which XLA's SPMD partitioner can split, as JAX's ``iota_2x32_shape``);
    the high words are zero below 2**32 elements."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise ValueError(f"random: shapes of 2**32 elements or more are not supported, got "
                         f"{shape}")
    if not shape:
        return O.tensor(0, type=U32)
    total = None
    stride = 1
    for axis in reversed(range(len(shape))):
        term = O.iota(shape, axis=axis, type=U32)
        if stride != 1:
            term = O.multiply(term, stride)
        total = term if total is None else O.add(term, total)
        stride *= shape[axis]
    return total


def _hash_shape(key, shape):
    """threefry2x32 of the key on the (hi, lo) words of iota(shape): JAX's partitionable
    counters. Returns the two u32 words, each of ``shape``."""
    k1, k2 = key[0], key[1]
    lo = _counts(shape)
    hi = O.broadcast(O.tensor(0, type=U32), shape) if shape else O.tensor(0, type=U32)
    return threefry2x32(k1, k2, hi, lo)


def _bits(key, nbits, shape):
    """``jax.random.bits`` with threefry_partitionable: u<nbits> of ``shape``."""
    b1, b2 = _hash_shape(key, shape)
    if nbits == 64:
        return O.bitwise_or(O.left_shift(O.as_type(b1, U64), 32), O.as_type(b2, U64))
    x = O.bitwise_xor(b1, b2)
    return x if nbits == 32 else O.as_type(x, _UINT[nbits])


# ----------------------------------------------------------------------------------------
# Keys
# ----------------------------------------------------------------------------------------
def key(seed) -> Tensor:
    """A key (``u32[2]``) from an integer seed: the high and low 32 bits of the seed as a
    64-bit integer (Nx's ``Nx.Random.key``; ``jax.random.key_data(jax.random.key(seed))``
    for seeds in ``[0, 2**31)`` and, with ``jax_enable_x64``, for every 64-bit seed). A
    seed tensor of 32 bits or fewer gets a zero high word (as JAX).

    >>> key(12).tolist()
    [0, 12]
    >>> key(999999999999).tolist()
    [232, 3567587327]
    >>> key(-1).tolist()
    [4294967295, 4294967295]
    """
    if isinstance(seed, bool) or isinstance(seed, (float, complex)):
        raise TypeError(f"key: expected seed to be an integer or an integer tensor, got "
                        f"{seed!r}")
    if isinstance(seed, (int, np.integer)):
        s = int(seed)
        if not -2 ** 63 <= s < 2 ** 64:
            raise ValueError(f"key: expected seed to fit in 64 bits, got {s}")
        s %= 2 ** 64
        return O.tensor([s >> 32, s & 0xFFFFFFFF], type=U32)
    seed = O.to_tensor(seed, "seed")
    if seed.shape != () or not seed.type.is_int:
        raise TypeError(f"key: expected seed to be an integer scalar, got a tensor of type "
                        f"{seed.type} and shape {seed.shape}")
    if seed.type.bits == 64:
        s = O.bitcast(seed, U64) if seed.type.kind == "s" else seed
        hi = O.as_type(O.right_shift(s, 32), U32)
        lo = O.as_type(O.bitwise_and(s, 0xFFFFFFFF), U32)
    else:
        hi = O.tensor(0, type=U32)
        lo = O.as_type(seed, U32)
    return O.stack([hi, lo])


def split(key, parts=2) -> Tensor:
    """``parts`` new keys from ``key`` (``u32[parts, 2]``); ``parts`` may also be a shape
    tuple (keys of shape ``parts + (2,)``), as ``jax.random.split``'s ``num``.

    >>> split(key(1701)).tolist()
    [[741045208, 1847055613], [85238482, 2594297577]]
    >>> split(key(1701), parts=(2, 1)).shape
    (2, 1, 2)
    """
    key = _key(key, "split")
    shape = _shape(parts, "split", "parts")
    b1, b2 = _hash_shape(key, shape)
    return O.stack([b1, b2], axis=len(shape))


def fold_in(key, data) -> Tensor:
    """A new key from ``key`` and integer ``data`` (converted to u32, as
    ``jax.random.fold_in``). ``data`` may be a tensor: the result then has shape
    ``data.shape + (2,)``, one key per element (as Nx).

    >>> fold_in(key(42), 99).tolist()
    [2015327502, 1351855566]
    >>> fold_in(key(42), [1, 99]).tolist()
    [[64467757, 2916123636], [2015327502, 1351855566]]
    """
    key = _key(key, "fold_in")
    if isinstance(data, (bool, float, complex)):
        raise TypeError(f"fold_in: expected data to be an integer or an integer tensor, got "
                        f"{data!r}")
    if isinstance(data, (int, np.integer)):
        data = O.tensor(int(data) % 2 ** 32, type=U32)
    else:
        data = O.to_tensor(data, "data")
        if not data.type.is_int:
            raise TypeError(f"fold_in: expected data to be an integer tensor, got type "
                            f"{data.type}")
        data = O.as_type(data, U32)
    zero = O.tensor(0, type=U32)
    if data.shape:
        zero = O.broadcast(zero, data.shape)
    o1, o2 = threefry2x32(key[0], key[1], zero, data)
    return O.stack([o1, o2], axis=data.rank)


def _split2(key, op):
    key = _key(key, op)
    keys = split(key)
    return keys[1], keys[0]


# ----------------------------------------------------------------------------------------
# Bits, uniform, normal, randint, gumbel
# ----------------------------------------------------------------------------------------
def bits_split(key, *, shape=(), type="u32", names=None) -> Tensor:
    """Uniform random bits: unsigned integers of ``type`` (u8, u16, u32, u64) and ``shape``
    from ``key`` as given (``jax.random.bits(key, shape, dtype)``).

    >>> bits_split(key(0), shape=(3,)).tolist()
    [4070199207, 4202968722, 1427181096]
    """
    key = _key(key, "bits_split")
    shape = _shape(shape, "bits_split")
    t = _type(type, "bits_split")
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
        t = _type(type, op)
    else:
        t = T.to_floating(_merged_type(a, b))
    if not t.is_inexact:
        raise TypeError(f"{op}: expected type to be a float or complex type, got {t}")
    return t


def _uniform(key, minval, maxval, shape, t):
    """``jax.random.uniform``: the mantissa of ``1.0`` filled with random bits, minus 1,
    scaled to ``[minval, maxval)``."""
    nbits, nmant = t.bits, _MANTISSA[(t.kind, t.bits)]
    u = _UINT[nbits]
    # as JAX: a type with fewer than 8 mantissa bits (bf16) draws 8 random bits
    rng_bits = 8 if nmant < 8 else nbits
    b = _bits(key, rng_bits, shape)
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


def uniform_split(key, min_val=0.0, max_val=1.0, *, shape=(), type=None,
                  names=None) -> Tensor:
    """Uniform floats in ``[min_val, max_val)`` from ``key`` as given
    (``jax.random.uniform(key, shape, dtype, min_val, max_val)``). ``type`` defaults to
    the floating type of ``min_val`` and ``max_val`` merged (f32 for Python numbers); a
    complex type draws the real and imaginary parts (as Nx). ``min_val``/``max_val`` may
    be tensors that broadcast to ``shape``. ``max_val <= min_val`` gives ``min_val``.

    >>> [round(v, 6) for v in uniform_split(key(0), shape=(2,)).tolist()]
    [0.947667, 0.97858]
    >>> uniform_split(key(0), 5, 5, shape=(2,)).tolist()
    [5.0, 5.0]
    """
    key = _key(key, "uniform_split")
    shape = _shape(shape, "uniform_split")
    min_val = _tensorish(min_val, "min_val", "uniform_split")
    max_val = _tensorish(max_val, "max_val", "uniform_split")
    t = _float_type("uniform_split", min_val, max_val, type)
    _check_param_shapes("uniform_split", shape, min_val=min_val, max_val=max_val)
    out = _float_or_complex(t, shape, lambda rt, sh: _uniform(key, min_val, max_val, sh, rt))
    return _finish(out, shape, names, "uniform_split")


def uniform(key, min_val=0.0, max_val=1.0, *, shape=(), type=None, names=None):
    """``(uniform_split(k1, ...), k0)`` where ``k0, k1 = split(key)`` (Nx's ``uniform``).

    >>> u, k = uniform(key(1701))
    >>> round(u.tolist(), 6), k.shape
    (0.813105, (2,))
    """
    k, nxt = _split2(key, "uniform")
    return uniform_split(k, min_val, max_val, shape=shape, type=type, names=names), nxt


def _next_after_minus_one(t):
    u = _UINT[t.bits].dtype
    return np.array(int(np.array(-1.0, t.dtype).view(u)) - 1, u).view(t.dtype)


def normal_split(key, mean=0.0, standard_deviation=1.0, *, shape=(), type=None,
                 names=None) -> Tensor:
    """Normal samples ``mean + standard_deviation * z`` from ``key`` as given, where ``z``
    is ``jax.random.normal(key, shape, dtype)`` (``sqrt(2) * erf_inv(u)``, ``u`` uniform in
    ``(-1, 1)``); with the default ``mean``/``standard_deviation`` the bits are JAX's.
    A complex type draws the real and imaginary parts (as Nx).

    >>> [round(v, 5) for v in normal_split(key(0), shape=(3,)).tolist()]
    [1.62264, 2.02526, -0.43359]
    """
    key = _key(key, "normal_split")
    shape = _shape(shape, "normal_split")
    mean = _tensorish(mean, "mean", "normal_split")
    std = _tensorish(standard_deviation, "standard_deviation", "normal_split")
    t = _float_type("normal_split", mean, std, type)
    _check_param_shapes("normal_split", shape, mean=mean, standard_deviation=std)
    plain = (not isinstance(mean, Tensor) and mean == 0 and not isinstance(std, Tensor)
             and std == 1)

    def draw(rt, sh):
        lo = _next_after_minus_one(rt)
        u = _uniform(key, O.tensor(lo.item() if rt.bits > 16 else float(lo), type=rt),
                     O.tensor(1.0, type=rt), sh, rt)
        z = O.multiply(O.tensor(math.sqrt(2), type=rt), O.erf_inv(u))
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


def randint_split(key, min_val, max_val, *, shape=(), type=None, names=None) -> Tensor:
    """Uniform integers in ``[min_val, max_val)`` from ``key`` as given
    (``jax.random.randint(key, shape, min_val, max_val, dtype)``). ``type`` defaults to
    the type of ``min_val`` and ``max_val`` merged (s32 for Python ints); bounds are
    clipped into ``type``'s range, and ``max_val <= min_val`` gives ``min_val`` (as JAX).
    Types below 32 bits are drawn as s32 and converted (as JAX).

    >>> randint_split(key(0), 0, 10, shape=(5,)).tolist()
    [9, 0, 2, 3, 1]
    >>> randint_split(key(0), 3, 3, shape=(2,)).tolist()
    [3, 3]
    """
    op = "randint_split"
    key = _key(key, op)
    shape = _shape(shape, op)
    min_val = _tensorish(min_val, "min_val", op)
    max_val = _tensorish(max_val, "max_val", op)
    t = _type(type, op) if type is not None else _merged_type(min_val, max_val)
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


def gumbel_split(key, *, shape=(), type="f32", names=None) -> Tensor:
    """Standard Gumbel samples ``-log(-log(u))``, ``u`` uniform in ``[tiny, 1)``, from
    ``key`` as given (``jax.random.gumbel(key, shape, dtype)``, mode "low"; Nx's
    ``gumbel_split``).

    >>> [round(v, 5) for v in gumbel_split(key(0), shape=(2,)).tolist()]
    [2.92337, 3.83262]
    """
    op = "gumbel_split"
    key = _key(key, op)
    shape = _shape(shape, op)
    t = _type(type, op)
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
    >>> s, k = shuffle(key(42), nx.iota((5,)))
    >>> s.tolist()
    [4, 2, 3, 0, 1]
    """
    op = "shuffle"
    key = _key(key, op)
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
    >>> r, k = choice(key(1), nx.iota((4, 3)), samples=2, axis=0)
    >>> r.shape
    (2, 3)
    """
    op = "choice"
    key = _key(key, op)
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
    >>> s = multivariate_normal_split(key(12), nx.tensor([0.0, 0.0]), nx.eye(2, type="f32"))
    >>> s.shape
    (2,)
    """
    op = "multivariate_normal_split"
    key = _key(key, op)
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
    batch = () if shape is None else _shape(shape, op)
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
