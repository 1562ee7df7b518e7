"""Tensor's methods as a ``jax.Array`` has them (issue 28, part 2): the reductions with
``axis``/``keepdims``/``dtype`` (``x.sum()``, ``x.mean(axis=-1, keepdims=True)``,
``x.std(ddof=1)``, ...), ``astype``, ``reshape``/``ravel``/``flatten`` (``order``),
``squeeze``, ``clip``, ``round``, ``transpose``, ``swapaxes``, ``dot``, ``conj``, the
``real``/``imag``/``ndim``/``mT`` properties, ``item(*args)``, and ``x.at[idx]``: JAX's
functional updates (``set``, ``add``, ``subtract``, ``multiply``, ``divide``, ``power``,
``min``, ``max``, ``apply``, ``get``) with the same index parser as ``x[idx]``
(:func:`nxpy.ops.indexing.index`).

Every method is a composition of the front-end ops, so it runs eagerly on any backend and
inside ``jit``, and ``grad`` and ``vmap`` see ordinary ops. Result types are
``jax.numpy``'s: Nx's and ``jnp``'s reductions agree on them (sums of small integers
widen to 32 bits, means of integers are f32), and where they differ the method converts
(``cumsum`` of booleans is s32 as in ``jnp``, not Nx's u8; ``real``/``imag`` of a real
tensor keep its type). :func:`install` puts them on :class:`~nxpy.tensor.Tensor`; it is
called from ``nxpy.ops``, with Tensor's operators.

Updates through ``x.at[idx]``: static slices of step 1 and ints write with
:func:`~nxpy.ops.put_slice`; anything else (steps, negative steps, scalar tensors,
integer arrays) scatters with :func:`~nxpy.ops.indexed_put`/:func:`~nxpy.ops.indexed_add`
at the coordinates of every element ``x[idx]`` reads. As in JAX, negative indices count
from the end and an update out of bounds is **dropped** (``mode="clip"`` clamps it);
values are converted to ``x``'s type. A repeated index applies every update to it, as
XLA's scatter does in JAX: ``add`` and ``subtract`` accumulate, and ``multiply``,
``divide``, ``power``, ``min`` and ``max`` first combine each index's updates (a sort by
index and a segmented scan; ``unique_indices=True`` skips it, as JAX trusts the hint).

>>> import nxpy as nx
>>> x = nx.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
>>> x.sum(axis=-1).tolist(), x.mean(axis=0, keepdims=True).tolist(), x.argmax().item()
([6.0, 15.0], [[2.5, 3.5, 4.5]], 5)
>>> x.at[:, 1].set(0.0).tolist()
[[1.0, 0.0, 3.0], [4.0, 0.0, 6.0]]
>>> x.at[[0, 1, 1], [2, 0, 0]].add(10.0).tolist()
[[1.0, 2.0, 13.0], [24.0, 5.0, 6.0]]
>>> x.at[[1, 1, 0]].multiply(2.0).tolist()
[[2.0, 4.0, 6.0], [16.0, 20.0, 24.0]]
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import types as T
from ..tensor import Tensor
from .core import as_type, out_sharded, to_tensor
from .contraction import dot
from .creation import full, iota
from .elementwise import (add, ceil, divide, equal, floor, greater_equal, less, logical_and,
                          max as _max, min as _min, multiply, negate, not_equal, pow,
                          remainder, round as _round, select, subtract)
from .indexing import _plan, _read, gather, indexed_add, indexed_put, put_slice, slice, take
from .reductions import all as _all, any as _any, argmax, argmin, mean, product, reduce_max, \
    reduce_min, sum as _sum
from .shaping import broadcast, concatenate, reshape, squeeze, transpose
from .sorting import argsort, cumulative_product, cumulative_sum
from .complex import complex as _complex, conjugate, imag, real
from .compositions import standard_deviation, variance

__all__ = ["install", "dtype_of", "axes_of"]

_PY_TYPES = {bool: T.PRED, int: T.S32, float: T.F32, complex: T.C64}


def dtype_of(dtype, fn: str, arg: str = "dtype"):
    """``dtype`` (a NumPy dtype or type, a name, an nxpy type, Python's ``bool``/``int``/
    ``float``/``complex`` as ``jnp`` reads them without x64, or None) as an nxpy type.

    >>> dtype_of("float32", "astype"), dtype_of(np.int8, "astype"), dtype_of(float, "sum")
    (Type('f32'), Type('s8'), Type('f32'))
    """
    if dtype is None:
        return None
    if dtype in _PY_TYPES:
        return _PY_TYPES[dtype]
    try:
        return T.parse(dtype)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{fn}: expected {arg} to be a NumPy dtype or an nxpy type, got "
                        f"{dtype!r} ({e})") from None


def axes_of(axis, rank: int, fn: str) -> tuple[int, ...]:
    """``axis`` (None: every axis; an int; a tuple or list of ints; negative from the end)
    as a sorted tuple of distinct axes, or a TypeError/ValueError naming ``fn``
    (``nxpy.numpy``'s ``axis=`` arguments too).

    >>> axes_of(-1, 3, "sum"), axes_of((0, -1), 3, "sum"), axes_of(None, 2, "sum")
    ((2,), (0, 2), (0, 1))
    """
    if axis is None:
        return tuple(range(rank))
    one = isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)
    many = isinstance(axis, (tuple, list)) and builtins.all(
        isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis)
    if not (one or many):
        raise TypeError(f"{fn}: expected axis to be None, an int or a tuple of ints, got "
                        f"{axis!r}")
    out = []
    for a in ((axis,) if one else axis):
        if not -rank <= a < rank:
            raise ValueError(f"{fn}: axis {a} is out of bounds for a tensor of rank {rank}")
        out.append(int(a) % rank if rank else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{fn}: repeated axis in {axis!r}")
    return tuple(sorted(out))


def _no_out(out, fn):
    if out is not None:
        raise TypeError(f"{fn}: out= is not supported (tensors are immutable), got {out!r}")


def _reduction(op, fn, with_dtype=True):
    def method(self, axis=None, dtype=None, out=None, keepdims=False):
        _no_out(out, fn)
        t = dtype_of(dtype, fn)
        x = self if t is None or self.type == t else as_type(self, t)
        r = op(x, axes=list(axes_of(axis, x.rank, fn)), keep_axes=bool(keepdims))
        return r if t is None or r.type == t else as_type(r, t)

    def no_dtype(self, axis=None, out=None, keepdims=False):
        return method(self, axis, None, out, keepdims)

    m = method if with_dtype else no_dtype
    m.__name__ = m.__qualname__ = fn
    m.__doc__ = (f"``jax.Array.{fn}``: the {fn} over ``axis`` (None: all; ints, negative from "
                 f"the end){', computed in ``dtype``' if with_dtype else ''}, keeping the "
                 f"reduced axes as size 1 with ``keepdims``.")
    return m


def _arg(op, fn):
    def method(self, axis=None, out=None, keepdims=None):
        _no_out(out, fn)
        if axis is None:
            r = op(reshape(self, (-1,)))
            return reshape(r, (1,) * self.rank) if keepdims else r
        a = axes_of(axis, self.rank, fn)
        if not isinstance(axis, (int, np.integer)):
            raise TypeError(f"{fn}: expected axis to be None or an int, got {axis!r}")
        return op(self, axis=a[0], keep_axis=bool(keepdims))
    method.__name__ = method.__qualname__ = fn
    method.__doc__ = (f"``jax.Array.{fn}``: the index (s32) of the first extreme value along "
                      f"``axis`` (None: of the flattened tensor).")
    return method


def _spread(op, fn):
    def method(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        _no_out(out, fn)
        t = dtype_of(dtype, fn)
        x = self if t is None or self.type == t else as_type(self, t)
        r = op(x, axes=list(axes_of(axis, x.rank, fn)), ddof=ddof, keep_axes=bool(keepdims))
        return r if t is None or r.type == t else as_type(r, t)
    method.__name__ = method.__qualname__ = fn
    method.__doc__ = (f"``jax.Array.{fn}``: over ``axis``, with ``ddof`` degrees of freedom "
                      f"removed from the count.")
    return method


def _cumulative(op, fn):
    def method(self, axis=None, dtype=None, out=None):
        _no_out(out, fn)
        t = dtype_of(dtype, fn)
        if axis is None:
            x, a = reshape(self, (-1,)), 0
        else:
            if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
                raise TypeError(f"{fn}: expected axis to be None or an int, got {axis!r}")
            x, a = self, axes_of(axis, self.rank, fn)[0]
        if t is None and x.type.is_pred:
            t = T.S32  # jnp: booleans accumulate as ints
        if t is not None and x.type != t:
            x = as_type(x, t)
        return op(x, axis=a)
    method.__name__ = method.__qualname__ = fn
    method.__doc__ = (f"``jax.Array.{fn}``: along ``axis`` (None: of the flattened tensor), "
                      f"computed in ``dtype``.")
    return method


def astype(self, dtype, copy=False, device=None):
    """``jax.Array.astype``: the tensor converted to ``dtype`` (a NumPy dtype or name,
    Python's ``float``/``int``/``bool``/``complex``, or an nxpy type)."""
    t = dtype_of(dtype, "astype")
    if t is None:
        raise TypeError("astype: expected dtype to be a NumPy dtype or an nxpy type, got None")
    return self if self.type == t else as_type(self, t)


def _shape_args(shape, fn):
    if len(shape) == 1 and isinstance(shape[0], Tensor):  # Nx: a tensor's shape
        return shape[0]
    one = len(shape) == 1 and isinstance(shape[0], (tuple, list))
    return tuple(shape[0]) if one else shape


def _check_order(order, fn):
    if order not in ("C", "F"):
        raise ValueError(f"{fn}: expected order to be 'C' or 'F', got {order!r}")


def reshape_method(self, *shape, order="C", **kw):
    """``jax.Array.reshape`` (``x.reshape(2, 3)``, ``x.reshape((2, 3))``, one dim may be
    -1), in ``order`` ``"C"`` (row-major) or ``"F"``; ``names=`` as :func:`nxpy.reshape`."""
    _check_order(order, "reshape")
    shape = _shape_args(shape, "reshape")
    if order == "F":
        shape = shape.shape if isinstance(shape, Tensor) else shape
        rev = reshape(transpose(self), tuple(reversed(shape)), **kw)
        return transpose(rev)
    return reshape(self, shape, **kw)


def ravel(self, order="C"):
    """``jax.Array.ravel``: the values as a rank-1 tensor, in ``order``."""
    return reshape_method(self, -1, order=order)


def flatten(self, order="C"):
    """``jax.Array.flatten``: as :func:`ravel`."""
    return reshape_method(self, -1, order=order)


def squeeze_method(self, axis=None):
    """``jax.Array.squeeze``: removes the size-1 axes (all of them, or ``axis``, which
    must have size 1)."""
    if axis is None:
        return squeeze(self)
    axes = axes_of(axis, self.rank, "squeeze")
    for a in axes:
        if self.shape[a] != 1:
            raise ValueError(f"squeeze: cannot select an axis to squeeze out which has size "
                             f"not equal to one, got shape {self.shape} and axis {axis}")
    return squeeze(self, axes=list(axes)) if axes else self


def clip_method(self, min=None, max=None):
    """``jax.Array.clip``: ``max(x, min)`` then ``min(.., max)``; either bound may be None."""
    r = self
    if min is not None:
        r = _max(r, _weak(min, self))
    if max is not None:
        r = _min(r, _weak(max, self))
    return r


def _weak(b, x):
    """A Python number next to ``x`` as ``jnp`` reads it (a weak type): of ``x``'s type when
    it fits that kind (an int for an integer tensor, any real number for a float one),
    else as it is (the ops' promotion)."""
    if isinstance(b, bool) or not isinstance(b, (int, float)):
        return b
    if x.type.kind in ("f", "bf") or (x.type.is_int and isinstance(b, int)):
        try:
            T.check_representable(b, x.type)
        except (TypeError, ValueError, OverflowError):
            return b
        return _scalar_of(b, x)
    return b


def _round_even(x):
    """Rounding to the nearest integer, ties to even (``lax.round(.., TO_NEAREST_EVEN)``),
    from Nx's round (ties away from zero): a tie that went to an odd number goes back to
    the truncation (which keeps the sign of zero)."""
    r = _round(x)
    half = _scalar_of(0.5, x)
    tie = equal(_abs_diff(x, r), half)
    odd = not_equal(remainder(r, _scalar_of(2.0, x)), _scalar_of(0.0, x))
    trunc = select(less(x, _scalar_of(0.0, x)), ceil(x), floor(x))
    return select(logical_and(tie, odd), trunc, r)


def _scalar_of(v, x):
    return as_type(to_tensor(np.asarray(v, x.type.dtype)), x.type)


def _abs_diff(a, b):
    d = subtract(a, b)
    return select(less(d, _scalar_of(0.0, d)), subtract(_scalar_of(0.0, d), d), d)


def round_method(self, decimals=0, out=None):
    """``jax.Array.round`` (``jnp.round``): to ``decimals`` decimals, ties to even; integers
    are returned as they are (``decimals`` >= 0); f16 scales in f32, as jnp does."""
    _no_out(out, "round")
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"round: expected decimals to be an int, got {decimals!r}")
    t = self.type
    if t.is_int or t.is_pred:
        if decimals < 0:
            raise NotImplementedError("round: integer rounding with decimals < 0 is not "
                                      "implemented (as in jnp)")
        return self

    def one(x):
        if decimals == 0:
            return _round_even(x)
        y = as_type(x, T.F32) if x.type == T.parse("f16") else x
        if decimals > np.log10(np.finfo(y.type.dtype).max):
            return x
        f = _scalar_of(10.0 ** decimals, y)
        r = divide(_round_even(multiply(y, f)), f)
        return as_type(r, x.type) if r.type != x.type else r

    if t.kind == "c":
        return _complex(one(real(self)), one(imag(self)))
    return one(self)


def transpose_method(self, *axes):
    """``jax.Array.transpose``: ``x.transpose()`` reverses the axes; ``x.transpose(1, 0,
    2)`` or ``x.transpose((1, 0, 2))`` permutes them (negative from the end)."""
    axes = _shape_args(axes, "transpose")
    if not axes or axes == (None,):
        return transpose(self)
    perm = [int(a) % self.rank if -self.rank <= a < self.rank else a for a in axes]
    if sorted(perm) != list(range(self.rank)):
        raise ValueError(f"transpose: axes {tuple(axes)} are not a permutation of the axes of a "
                         f"tensor of rank {self.rank}")
    return transpose(self, perm)


def swapaxes(self, axis1, axis2):
    """``jax.Array.swapaxes``: ``axis1`` and ``axis2`` exchanged."""
    a, b = (axes_of(int(v), self.rank, "swapaxes")[0] for v in (axis1, axis2))
    perm = list(range(self.rank))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(self, perm)


def matrix_transpose(self):
    """``jax.Array.mT``: the last two axes exchanged."""
    if self.rank < 2:
        raise ValueError(f"mT: x must be at least two-dimensional for matrix_transpose; got "
                         f"rank {self.rank}")
    return swapaxes(self, -1, -2)


def dot_method(self, b, *, precision=None, preferred_element_type=None):
    """``jax.Array.dot`` (``jnp.dot``): products of rank-0/1/2 tensors, and for higher
    ranks the sum over the last axis of ``x`` and the second-to-last of ``b``."""
    r = dot(self, to_tensor(b, "b"))
    t = dtype_of(preferred_element_type, "dot", "preferred_element_type")
    return r if t is None or r.type == t else as_type(r, t)


def item_method(self, *args):
    """``jax.Array.item``: one element as a Python scalar (the only one, or at the flat
    index or the coordinates given)."""
    a = self.to_numpy()
    return a.item(*args)


def _real(self):
    return real(self) if self.type.kind == "c" else self


def _imag(self):
    if self.type.kind == "c":
        return imag(self)
    return broadcast(_scalar_of(0, self), self.shape)


# ----------------------------------------------------------------------------------------
# x.at[idx]
# ----------------------------------------------------------------------------------------
_GET_MODES = (None, "clip", "promise_in_bounds", "fill", "drop")
_SET_MODES = (None, "clip", "promise_in_bounds", "fill", "drop")


class _At:
    """``x.at``: ``x.at[idx]`` is an :class:`_AtIndex`."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _AtIndex(self.x, idx)

    def __repr__(self):
        return f"_At({self.x.type}{list(self.x.shape)})"


def _mode(mode, allowed, fn):
    m = getattr(mode, "name", mode)
    m = m.lower() if isinstance(m, str) else m
    if m == "fill_or_drop":
        m = "fill"
    if m not in allowed:
        raise ValueError(f"at[...].{fn}: expected mode to be one of 'clip', 'drop', 'fill' or "
                         f"'promise_in_bounds', got {mode!r}")
    return m


def _positions(p):
    """The result axes each entry of ``p.out`` takes (a list of lists)."""
    out, k = [], 0
    for o in p.out:
        n = len(p.bshape) if o[0] == "adv" else 1
        out.append(list(range(k, k + n)))
        k += n
    return out


def _coordinates(x, p, clip):
    """For every element of ``x[idx]`` (in its shape), its coordinates in ``x``:
    ``(N, rank)`` s32/s64, negatives wrapped, out-of-bounds kept (or clamped with ``clip``)."""
    shape = p.shape
    pos = _positions(p)
    slice_at = {o[1]: pos[j][0] for j, o in enumerate(p.out) if o[0] == "slice"}
    adv_at = [q for j, o in enumerate(p.out) if o[0] == "adv" for q in pos[j]]
    t = T.S64 if builtins.any(a.type == T.S64 for a in p.adv) or \
        builtins.any(k[0] == "dyn" and k[1].type == T.S64 for k in p.dims) else T.S32
    cols = []
    for a, k in enumerate(p.dims):
        if k[0] == "slice":
            _, first, n, st = k
            c = iota(shape, axis=slice_at[a], type=t, backend=_backend(x))
            c = add(multiply(c, _scalar_of(st, c)), _scalar_of(first, c))
        elif k[0] == "int":
            c = full(shape, k[1], type=t, backend=_backend(x))
        elif k[0] == "dyn":
            c = broadcast(as_type(k[1], t), shape)
        else:
            c = broadcast(as_type(p.adv[k[1]], t), shape, axes=adv_at)
        if clip:
            d = x.shape[a]
            c = _max(_min(c, _scalar_of(builtins.max(d - 1, 0), c)), _scalar_of(0, c))
        cols.append(reshape(c, (*shape, 1)))
    n = int(np.prod(shape, dtype=np.int64))
    if not cols:
        return reshape(iota((1, 0), type=t), (n, 0))
    return reshape(concatenate(cols, axis=len(shape)), (n, x.rank))


def _backend(x):
    return None if x.backend is None or x.backend.name == "numpy" else x.backend


def _static(p):
    """The put_slice form of a plan (starts, region shape), or None."""
    if p.adv:
        return None
    starts, region = [], []
    for k in p.dims:
        if k[0] == "slice":
            if k[3] != 1 and k[2] > 1:
                return None
            starts.append(k[1] if k[2] else 0)
            region.append(k[2])
        elif k[0] == "int":
            starts.append(k[1])
            region.append(1)
        else:
            return None
    return starts, tuple(region)


class _AtIndex:
    """``x.at[idx]``: JAX's functional updates of the elements ``x[idx]`` selects."""

    __slots__ = ("x", "idx")

    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None,
            fill_value=None, out_sharding=None, wrap_negative_indices=True):
        """``x[idx]``; with ``mode="fill"`` (or ``"drop"``) an out-of-bounds array or scalar
        tensor index reads ``fill_value`` (default: NaN for floats, the smallest value of
        signed integers, the largest of unsigned ones, True for booleans), else the
        index is clamped. ``out_sharding`` (JAX's, for every ``at`` method): the result's
        layout, a ``P`` over the mesh in context (``nx.reshard``)."""
        return out_sharded(lambda: self._get(mode, fill_value, wrap_negative_indices),
                                 out_sharding)

    def _get(self, mode, fill_value, wrap_negative_indices):
        m = _mode(mode, _GET_MODES, "get")
        _wrap_negative(wrap_negative_indices, "get")
        x = self.x
        p = _plan(x, self.idx, "at[...].get")
        r = _read(x, p)
        if m not in ("fill", "drop"):
            return r
        ok = None
        pos = _positions(p)
        adv_at = [q for j, o in enumerate(p.out) if o[0] == "adv" for q in pos[j]]
        for a, k in enumerate(p.dims):
            if k[0] not in ("adv", "dyn"):
                continue
            i = p.adv[k[1]] if k[0] == "adv" else k[1]
            v = logical_and(greater_equal(i, _scalar_of(0, i)),
                            less(i, _scalar_of(x.shape[a], i)))
            v = broadcast(v, p.shape, axes=adv_at) if k[0] == "adv" else broadcast(v, p.shape)
            ok = v if ok is None else logical_and(ok, v)
        if ok is None:
            return r
        if fill_value is None:
            t = x.type
            fill_value = (np.nan if t.kind in ("f", "bf", "c") else True if t.is_pred else
                          np.iinfo(t.dtype).min if t.kind == "s" else np.iinfo(t.dtype).max)
        return select(ok, r, broadcast(as_type(to_tensor(np.asarray(fill_value)), x.type),
                                       p.shape))

    def _update(self, values, combine, fn, mode, wrap_negative_indices=True, unique=False,
                out_sharding=None):
        return out_sharded(lambda: self._updated(values, combine, fn, mode,
                                                       wrap_negative_indices, unique),
                                 out_sharding)

    def _updated(self, values, combine, fn, mode, wrap_negative_indices, unique):
        m = _mode(mode, _SET_MODES, fn)
        _wrap_negative(wrap_negative_indices, fn)
        x = self.x
        p = _plan(x, self.idx, f"at[...].{fn}")
        v = values if isinstance(values, Tensor) else to_tensor(np.asarray(values), "values")
        try:
            fits = np.broadcast_shapes(v.shape, p.shape) == p.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"at[...].{fn}: values of shape {v.shape} cannot be broadcast to "
                             f"the indexed shape {p.shape}")
        v = as_type(v, x.type) if v.type != x.type else v
        v = broadcast(v, p.shape) if v.shape != p.shape else v
        if _size(p.shape) == 0:
            return x
        st = _static(p)
        if st is not None:
            starts, region = st
            old = reshape(slice(x, starts, region), p.shape) if combine else None
            new = v if combine is None else combine(old, v)
            new = as_type(new, x.type) if new.type != x.type else new
            return put_slice(x, starts, reshape(new, region))
        coords = _coordinates(x, p, clip=(m == "clip"))
        flat = reshape(v, (-1,))
        if combine is add or combine is subtract:
            return indexed_add(x, coords, flat if combine is add else negate(flat))
        if combine in _MERGE and x.rank:
            return _combined_put(x, coords, flat, combine, unique)
        if combine is not None:
            old = gather(x, coords) if x.rank else reshape(x, (1,))
            flat = combine(old, flat)
            flat = as_type(flat, x.type) if flat.type != x.type else flat
        return indexed_put(x, coords, flat)

    def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """``x`` with ``x[idx] = values`` (``values`` broadcast to ``x[idx]``'s shape and
        converted to ``x``'s type)."""
        return self._update(values, None, "set", mode, wrap_negative_indices,
                            out_sharding=out_sharding)

    def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """``x`` with ``x[idx] += values`` (repeated indices accumulate)."""
        return self._update(values, add, "add", mode, wrap_negative_indices,
                            out_sharding=out_sharding)

    def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 out_sharding=None, wrap_negative_indices=True):
        """``x`` with ``x[idx] -= values``."""
        return self._update(values, subtract, "subtract", mode, wrap_negative_indices,
                            out_sharding=out_sharding)

    def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
                 out_sharding=None, wrap_negative_indices=True):
        """``x`` with ``x[idx] *= values``."""
        return self._update(values, multiply, "multiply", mode, wrap_negative_indices,
                            unique_indices, out_sharding)

    mul = multiply

    def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
        """``x`` with ``x[idx] /= values`` (converted back to ``x``'s type)."""
        return self._update(values, divide, "divide", mode, wrap_negative_indices,
                            unique_indices, out_sharding)

    def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
              out_sharding=None, wrap_negative_indices=True):
        """``x`` with ``x[idx] **= values``."""
        return self._update(values, pow, "power", mode, wrap_negative_indices,
                            unique_indices, out_sharding)

    def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """``x`` with ``x[idx] = minimum(x[idx], values)``."""
        return self._update(values, _min, "min", mode, wrap_negative_indices,
                            unique_indices, out_sharding)

    def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
        """``x`` with ``x[idx] = maximum(x[idx], values)``."""
        return self._update(values, _max, "max", mode, wrap_negative_indices,
                            unique_indices, out_sharding)

    def apply(self, func, *, indices_are_sorted=False, unique_indices=False, mode=None,
              wrap_negative_indices=True):
        """``x`` with ``x[idx] = func(x[idx])`` (``func`` elementwise)."""
        return self._update(0, lambda old, _: func(old), "apply", mode, wrap_negative_indices)


#: how each combining update merges the updates of one index before meeting ``x[i]``
#: (JAX's scatter_mul/min/max; divide and power divide/raise by the product, as JAX's)
_MERGE = {multiply: multiply, divide: multiply, pow: multiply, _min: _min, _max: _max}


def _combined_put(x, coords, flat, combine, unique):
    """``x`` with ``combine(x[c], u)`` written at each coordinate ``c``, where ``u`` merges
    every update at ``c``: the updates are sorted by flat index (stably), a segmented
    Hillis-Steele scan merges each run of equal indices into its last entry in
    ``ceil(log2 n)`` static steps, and all other entries are moved out of bounds, which
    ``indexed_put`` skips. ``unique`` (the caller's ``unique_indices``) skips the merge."""
    n, merge = coords.shape[0], _MERGE[combine]
    if not unique and n > 1:
        it, b = coords.type, _backend(x)
        strides = np.cumprod((1,) + x.shape[:0:-1])[::-1]
        size = _size(x.shape)
        if size >= 2 ** 31 - 1 and it != T.S64:
            coords, it = as_type(coords, T.S64), T.S64
        lin = valid = None
        for a, (d, st) in enumerate(zip(x.shape, strides)):
            c = reshape(slice(coords, [0, a], [n, 1]), (n,))
            ok = logical_and(greater_equal(c, _scalar_of(0, c)), less(c, _scalar_of(d, c)))
            term = multiply(c, _scalar_of(int(st), c))
            lin = term if lin is None else add(lin, term)
            valid = ok if valid is None else logical_and(valid, ok)
        lin = select(valid, lin, full((n,), size, type=it, backend=b))
        order = argsort(lin, stable=True, type=it)
        lin, flat = take(lin, order), take(flat, order)
        coords = take(coords, order, axis=0)
        k = 1
        while k < n:  # flat[i] merges flat[i - k] when both are one index's
            prev_lin = concatenate([full((k,), -1, type=it, backend=b),
                                    slice(lin, [0], [n - k])])
            prev = concatenate([slice(flat, [0], [k]), slice(flat, [0], [n - k])])
            flat = select(equal(lin, prev_lin), merge(prev, flat), flat)
            k *= 2
        next_lin = concatenate([slice(lin, [1], [n - 1]), full((1,), -1, type=it, backend=b)])
        last = not_equal(lin, next_lin)
        first = reshape(slice(coords, [0, 0], [n, 1]), (n,))
        gone = full((n,), x.shape[0], type=it, backend=b)
        put_at = concatenate([reshape(select(last, first, gone), (n, 1)),
                              slice(coords, [0, 1], [n, x.rank - 1])], axis=1)
    else:
        put_at = coords
    new = combine(gather(x, coords), flat)
    new = as_type(new, x.type) if new.type != x.type else new
    return indexed_put(x, put_at, new)


def _wrap_negative(flag, fn):
    if flag is not True:
        raise NotImplementedError(f"at[...].{fn}: wrap_negative_indices=False is not supported")


def _size(shape):
    return int(np.prod(shape, dtype=np.int64))


def install():
    """Puts the methods on :class:`~nxpy.tensor.Tensor` (called once, by ``nxpy.ops``)."""
    for name, op in [("sum", _sum), ("prod", product), ("mean", mean)]:
        setattr(Tensor, name, _reduction(op, name))
    for name, op in [("max", reduce_max), ("min", reduce_min), ("all", _all), ("any", _any)]:
        setattr(Tensor, name, _reduction(op, name, with_dtype=False))
    Tensor.argmax, Tensor.argmin = _arg(argmax, "argmax"), _arg(argmin, "argmin")
    Tensor.std, Tensor.var = _spread(standard_deviation, "std"), _spread(variance, "var")
    Tensor.cumsum = _cumulative(cumulative_sum, "cumsum")
    Tensor.cumprod = _cumulative(cumulative_product, "cumprod")
    Tensor.astype = astype
    Tensor.reshape = reshape_method
    Tensor.ravel, Tensor.flatten = ravel, flatten
    Tensor.squeeze = squeeze_method
    Tensor.clip = clip_method
    Tensor.round = round_method
    Tensor.transpose = transpose_method
    Tensor.swapaxes = swapaxes
    Tensor.dot = dot_method
    Tensor.conj = Tensor.conjugate = lambda self: conjugate(self) if self.type.kind == "c" \
        else self
    Tensor.item = item_method
    Tensor.real = property(_real, doc="``jax.Array.real``: the real part (a real tensor "
                                      "itself).")
    Tensor.imag = property(_imag, doc="``jax.Array.imag``: the imaginary part (zeros of a "
                                      "real tensor's type).")
    Tensor.ndim = property(lambda self: self.rank, doc="``jax.Array.ndim``: the rank.")
    Tensor.mT = property(matrix_transpose, doc=matrix_transpose.__doc__)
    Tensor.at = property(lambda self: _At(self), doc="``jax.Array.at``: functional updates "
                                                     "(``x.at[idx].set(v)``, ...).")
