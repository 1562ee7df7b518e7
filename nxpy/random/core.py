"""Keys and bits: argument checks shared by the samplers, threefry2x32 as nxpy ops, ``key``,
``split``, ``fold_in`` (JAX's bit streams; see the package docstring)."""
from __future__ import annotations

import math

import numpy as np

from .. import _context
from .. import ops as O
from .. import shape as S
from .. import types as T
from ..defn.expr import EXPR
from ..defn.kernel import fori_loop
from ..tensor import Tensor

__all__ = ["key", "split", "fold_in", "threefry2x32"]

U8, U16, U32, U64 = (T.Type("u", b) for b in (8, 16, 32, 64))
S32, S64 = T.Type("s", 32), T.Type("s", 64)
_UINT = {8: U8, 16: U16, 32: U32, 64: U64}
_MANTISSA = {("f", 16): 10, ("bf", 16): 7, ("f", 32): 23, ("f", 64): 52}
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


# ----------------------------------------------------------------------------------------
# Argument checks: public names (not exported by the package) for the modules that draw
# with these keys, here and in nxpy.nn.initializers
# ----------------------------------------------------------------------------------------
def check_key(key, op: str) -> Tensor:
    """``key`` as a u32[2] tensor, or an error for ``op`` naming the argument.

    >>> check_key(key(7), "uniform").tolist()
    [0, 7]
    >>> check_key(3, "uniform")
    Traceback (most recent call last):
    TypeError: uniform: expected key to be a u32[2] tensor (from nxpy.random.key), got 3
    """
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


def check_shape(shape, op: str, arg: str = "shape") -> tuple:
    """``shape`` (a tuple of non-negative ints, an int, or a tensor whose shape is meant)
    as a tuple, or an error for ``op`` naming ``arg``.

    >>> check_shape([2, 3], "normal")
    (2, 3)
    """
    if isinstance(shape, Tensor):
        return shape.shape
    return S.dims(shape, f"{op}: {arg}")


def check_type(type, op: str) -> T.Type:
    """``type`` (a name such as ``"f32"``, a NumPy dtype or an nxpy type) parsed, or a
    TypeError for ``op``.

    >>> str(check_type("bf16", "normal"))
    'bf16'
    """
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


def _jit_argument(v: Tensor) -> Tensor:
    """``v`` as JAX's samplers see a parameter: an argument of the jitted function that
    draws (``_gamma``, ``_chisquare``, ``_wald``, ...). Two things follow, both of which
    change the last bits of the samples:

    * what JAX computes from the parameter (``a - 1/3``, ``log d``, ``1 / p``) is XLA's
      arithmetic, never NumPy's (whose ``log`` and ``pow`` round an ulp apart), so while
      tracing a concrete ``v`` enters the graph;
    * a constant parameter reaches XLA through a call, which the StableHLO module's folders
      do not look through and XLA inlines first, so XLA folds it into the arithmetic and
      the rejection loops as it folds JAX's (``optimization_barrier(call=True)``;
      docs/random.md).

    Eagerly it is ``v``."""
    return O.optimization_barrier(EXPR.lift(v), call=True) if _context.tracing() else v


def _finish(x, shape, names, op):
    names = _names(names, shape, op)
    return x if names is None else O.reshape(x, shape, names=names)


# ----------------------------------------------------------------------------------------
# threefry2x32 (20 rounds), as nxpy ops
# ----------------------------------------------------------------------------------------
def _rotl(x, r):
    """``x`` rotated left by ``r`` bits (an int or a u32 scalar tensor)."""
    back = 32 - r if isinstance(r, int) else O.subtract(32, r)
    return O.bitwise_or(O.left_shift(x, r), O.right_shift(x, back))


def _key_schedule(k1, k2, x1, x2):
    """The words checked (u32), the three key words (``k1``, ``k2`` and their parity) and
    the counter words after the first key injection."""
    k1, k2, x1, x2 = (O.to_tensor(v, n) for v, n in ((k1, "k1"), (k2, "k2"), (x1, "x1"),
                                                      (x2, "x2")))
    for name, v in (("k1", k1), ("k2", k2), ("x1", x1), ("x2", x2)):
        if v.type != U32:
            raise TypeError(f"threefry2x32: expected {name} of type u32, got {v.type}")
    ks = [k1, k2, O.bitwise_xor(O.bitwise_xor(k1, k2), 0x1BD11BDA)]
    return ks, O.add(x1, ks[0]), O.add(x2, ks[1])


def threefry2x32(k1, k2, x1, x2):
    """The Threefry-2x32 block cipher (20 rounds) on u32 tensors: the key words ``k1``,
    ``k2`` and the counter words ``x1``, ``x2`` broadcast together; returns the two
    output words. This is ``threefry2x32_p`` of ``jax._src.prng``, written with nxpy's ops
    (unrolled, as JAX lowers it off CPU; see :func:`_threefry2x32_rolled`).

    >>> import nxpy as nx
    >>> u = lambda v: nx.tensor(v, type="u32")
    >>> [t.tolist() for t in threefry2x32(u(0), u(0), u(0), u(0))]
    [1797259609, 2579123966]
    """
    ks, x1, x2 = _key_schedule(k1, k2, x1, x2)
    for i in range(5):
        for r in _ROTATIONS[i % 2]:
            x1 = O.add(x1, x2)
            x2 = O.bitwise_xor(x1, _rotl(x2, r))
        x1 = O.add(x1, ks[(i + 1) % 3])
        x2 = O.add(O.add(x2, ks[(i + 2) % 3]), i + 1)
    return x1, x2


def _threefry2x32_rolled(k1, k2, x1, x2):
    """:func:`threefry2x32` as JAX lowers it on CPU (``_threefry2x32_lowering(
    use_rolled_loops=True)``): the key schedule added up front, then a ``fori_loop`` of
    five steps of four rounds, whose state carries the two words, the rotated key words
    and the two rotation tables. Its program is JAX's, so XLA fuses the float arithmetic
    that follows the bits as it does JAX's, and contracts the same multiply-adds: the
    samplers whose results depend on that (``maxwell``'s norm, ``wald``) draw through it.
    The unrolled form is the default: XLA fuses its rounds into one pass over the output,
    about four times faster on CPU (docs/random.md).

    >>> import nxpy as nx
    >>> u = lambda v: nx.tensor(v, type="u32")
    >>> [t.tolist() for t in _threefry2x32_rolled(u(0), u(0), u(0), u(0))]
    [1797259609, 2579123966]
    """
    ks, x1, x2 = _key_schedule(k1, k2, x1, x2)
    shape = S.broadcast(x1.shape, x2.shape)
    x1, x2 = (x if x.shape == shape else O.broadcast(x, shape) for x in (x1, x2))
    rotations = tuple(O.tensor(list(r), type=U32) for r in _ROTATIONS)

    def step(i, state):
        x1, x2, ka, kb, kc, r0, r1 = state
        for j in range(4):
            x1 = O.add(x1, x2)
            x2 = O.bitwise_xor(x1, _rotl(x2, r0[j]))
        x1 = O.add(x1, ka)
        x2 = O.add(O.add(x2, kb), O.as_type(O.add(i, 1), U32))
        return x1, x2, kb, kc, ka, r1, r0

    out = fori_loop(0, 5, step, (x1, x2, ks[1], ks[2], ks[0]) + rotations)
    return out[0], out[1]


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


def _hash_shape(key, shape, rolled=False):
    """threefry2x32 of the key on the (hi, lo) words of iota(shape): JAX's partitionable
    counters. Returns the two u32 words, each of ``shape``."""
    k1, k2 = key[0], key[1]
    lo = _counts(shape)
    hi = O.broadcast(O.tensor(0, type=U32), shape) if shape else O.tensor(0, type=U32)
    return (_threefry2x32_rolled if rolled else threefry2x32)(k1, k2, hi, lo)


def _bits(key, nbits, shape, rolled=False):
    """``jax.random.bits`` with threefry_partitionable: u<nbits> of ``shape`` (``rolled``:
    through :func:`_threefry2x32_rolled`)."""
    b1, b2 = _hash_shape(key, shape, rolled)
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
    key = check_key(key, "split")
    shape = check_shape(parts, "split", "parts")
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
    key = check_key(key, "fold_in")
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
    key = check_key(key, op)
    keys = split(key)
    return keys[1], keys[0]


