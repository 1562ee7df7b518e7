"""Creation functions of ``jax.numpy`` (issue 28, part 1): ``zeros``, ``ones``, ``full``,
``*_like``, ``arange``, ``linspace``/``logspace``/``geomspace``, ``eye``, ``identity``,
``meshgrid``, ``tri``/``tril``/``triu``, ``diag``/``diagflat``, ``indices`` and the
``tri*_indices`` helpers. Shapes, sizes and ``arange``'s bounds are static (Python ints, as
under ``jax.jit``); values (``full``'s ``fill_value``, ``linspace``'s bounds) may be traced
tensors. Default types are ``jax.numpy``'s without x64: f32 for floats, s32 for ints."""
from __future__ import annotations

import math

import numpy as np

from .. import ops as O
from .. import types as T
from ..defn.placement import with_out_sharding
from ..tensor import Tensor
from ._common import dtype_of

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
           "empty_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity",
           "meshgrid", "tri", "tril", "triu", "diag", "diagflat", "indices", "tril_indices",
           "triu_indices", "tril_indices_from", "triu_indices_from", "bartlett", "blackman",
           "hamming", "hanning"]

#: departures from ``jax.numpy`` (collected by :mod:`nxpy.numpy.coverage`)
NOTES = {
    "empty": "zeros (XLA has no uninitialised buffers; JAX gives zeros too)",
    "empty_like": "zeros (as JAX)",
    "arange": "`start`/`stop`/`step` must be static numbers (as under `jax.jit`)",
    "full": "a NumPy f64/s64 `fill_value` keeps its type (JAX without x64: f32/s32)",
}

#: parameters of ``jax.numpy``'s functions that nxpy's lack, beyond ``device`` and
#: ``out_sharding`` (see :mod:`nxpy.numpy.coverage`): name → {parameter: why}
PARAMETER_GAPS: dict = {}

F32, S32 = T.parse("f32"), T.parse("s32")


def _static_int(n, fn: str, arg: str) -> int:
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        return int(n)
    if isinstance(n, Tensor) and n.rank == 0 and n.type.kind in "su" and _concrete(n):
        return int(n.item())
    raise TypeError(f"{fn}: expected {arg} to be a static int, got {n!r}")


def _concrete(x: Tensor) -> bool:
    try:
        x.to_numpy()
        return True
    except Exception:  # a traced tensor has no value
        return False


def shape_of(shape, fn: str, arg: str = "shape") -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of non-negative ints."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{fn}: expected {arg} to be an int or a sequence of ints, got "
                        f"{shape!r}")
    out = tuple(_static_int(d, fn, arg) for d in shape)
    if any(d < 0 for d in out):
        raise ValueError(f"{fn}: expected {arg} of non-negative sizes, got {out}")
    return out


def _filled(shape, value, t, fn):
    v = O.to_tensor(value, "fill_value")
    t = v.type if t is None else t
    v = O.as_type(v, t) if v.type != t else v
    if v.rank > len(shape) or any(d not in (1, s) for d, s in zip(v.shape[::-1],
                                                                  shape[::-1])):
        raise ValueError(f"{fn}: fill_value of shape {v.shape} does not broadcast to {shape}")
    return v if v.shape == shape else O.broadcast(v, shape)


def zeros(shape, dtype=None, *, out_sharding=None):
    """``jnp.zeros``: a tensor of ``shape`` filled with 0, of ``dtype`` (f32 by default);
    ``out_sharding`` (a ``P`` over the mesh in context): its layout (``nx.reshard``).

    >>> import nxpy.numpy as xnp
    >>> xnp.zeros((2, 3), dtype="int32").tolist()
    [[0, 0, 0], [0, 0, 0]]
    """
    return with_out_sharding(lambda: O.full(shape_of(shape, "zeros"), 0,
                                            type=dtype_of(dtype, "zeros") or F32), out_sharding)


def ones(shape, dtype=None, *, out_sharding=None):
    """``jnp.ones``: a tensor of ``shape`` filled with 1, of ``dtype`` (f32 by default);
    ``out_sharding``: its layout, as for :func:`zeros`.

    >>> import nxpy.numpy as xnp
    >>> xnp.ones(3).tolist()
    [1.0, 1.0, 1.0]
    """
    return with_out_sharding(lambda: O.full(shape_of(shape, "ones"), 1,
                                            type=dtype_of(dtype, "ones") or F32), out_sharding)


def empty(shape, dtype=None, *, out_sharding=None):
    """``jnp.empty``: as :func:`zeros` (XLA has no uninitialised buffers).

    >>> import nxpy.numpy as xnp
    >>> xnp.empty((1, 2)).tolist()
    [[0.0, 0.0]]
    """
    return zeros(shape_of(shape, "empty"), dtype_of(dtype, "empty") or F32,
                 out_sharding=out_sharding)


def full(shape, fill_value, dtype=None, *, out_sharding=None):
    """``jnp.full``: ``fill_value`` (a number or a tensor that broadcasts) broadcast to
    ``shape``, of ``dtype`` (``fill_value``'s type by default); ``out_sharding``: its
    layout, as for :func:`zeros`.

    >>> import nxpy.numpy as xnp
    >>> xnp.full((2, 2), 7).tolist(), xnp.full(2, 0.5, dtype="float16").type
    ([[7, 7], [7, 7]], Type('f16'))
    """
    return with_out_sharding(lambda: _filled(shape_of(shape, "full"), fill_value,
                                             dtype_of(dtype, "full"), "full"), out_sharding)


def _like(a, dtype, shape, fn):
    a = O.to_tensor(a, "a")
    t = dtype_of(dtype, fn) or a.type
    return (a.shape if shape is None else shape_of(shape, fn)), t


def zeros_like(a, dtype=None, shape=None):
    """``jnp.zeros_like``: zeros of ``a``'s shape and type (or ``dtype``, ``shape``).

    >>> import nxpy.numpy as xnp
    >>> xnp.zeros_like(xnp.asarray([1, 2])).tolist()
    [0, 0]
    """
    s, t = _like(a, dtype, shape, "zeros_like")
    return O.full(s, 0, type=t)


def ones_like(a, dtype=None, shape=None):
    """``jnp.ones_like``: ones of ``a``'s shape and type (or ``dtype``, ``shape``).

    >>> import nxpy.numpy as xnp
    >>> xnp.ones_like(xnp.asarray([1.0, 2.0]), shape=(1, 3)).tolist()
    [[1.0, 1.0, 1.0]]
    """
    s, t = _like(a, dtype, shape, "ones_like")
    return O.full(s, 1, type=t)


def empty_like(prototype, dtype=None, shape=None):
    """``jnp.empty_like``: as :func:`zeros_like`.

    >>> import nxpy.numpy as xnp
    >>> xnp.empty_like(xnp.asarray([True])).tolist()
    [False]
    """
    s, t = _like(prototype, dtype, shape, "empty_like")
    return O.full(s, 0, type=t)


def full_like(a, fill_value, dtype=None, shape=None):
    """``jnp.full_like``: ``fill_value`` in ``a``'s shape and type (or ``dtype``,
    ``shape``).

    >>> import nxpy.numpy as xnp
    >>> xnp.full_like(xnp.asarray([1, 2]), 2.7).tolist()
    [2, 2]
    """
    s, t = _like(a, dtype, shape, "full_like")
    return _filled(s, fill_value, t, "full_like")


def _number(v, fn, arg):
    if isinstance(v, Tensor) and v.rank == 0 and _concrete(v):
        return v.item()
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return v
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    raise TypeError(f"{fn}: expected {arg} to be a static number, got {v!r} (arange's bounds "
                    "decide its size, so they cannot be traced; use linspace, or iota times "
                    "a tensor)")


def arange(start, stop=None, step=None, dtype=None):
    """``jnp.arange``: ``start, start + step, ...`` below ``stop`` (static numbers), of
    ``dtype`` (s32 when every bound is an int, f32 otherwise, by default).

    >>> import nxpy.numpy as xnp
    >>> xnp.arange(5).tolist(), xnp.arange(1, 2, 0.25).tolist()
    ([0, 1, 2, 3, 4], [1.0, 1.25, 1.5, 1.75])
    """
    start = _number(start, "arange", "start")
    if stop is not None:
        stop = _number(stop, "arange", "stop")
    if step is not None:
        step = _number(step, "arange", "step")
        if step == 0:
            raise ValueError("arange: step must not be 0")
    t = dtype_of(dtype, "arange")
    if t is None:
        ints = all(isinstance(v, (int, np.integer)) for v in (start, stop, step)
                   if v is not None)
        t = S32 if ints else F32
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    n = max(0, math.ceil((stop - start) / step))
    if t.kind in "su" and all(isinstance(v, (int, np.integer)) for v in (start, step)):
        out = O.iota((n,), type=t)
        if step != 1:
            out = O.multiply(out, O.tensor(step, type=t))
        return out if start == 0 else O.add(out, O.tensor(start, type=t))
    # NumPy's values (computed in f64), as jnp.arange's static path
    return O.tensor(T.convert(np.arange(start, stop, step, dtype=np.float64)
                              if t.kind in "fbc" else np.arange(start, stop, step), t), type=t)


def _float_of(*xs):
    t = xs[0].type
    for x in xs[1:]:
        t = T.merge(t, x.type)
    return T.to_floating(t)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``jnp.linspace``: ``num`` evenly spaced values from ``start`` to ``stop`` (tensors
    that broadcast; the new axis at ``axis``), with ``stop`` unless ``endpoint`` is
    False; with ``retstep``, ``(values, step)``. Computed as JAX does,
    ``start * (1 - i/div) + stop * (i/div)``, so the ends are exact.

    >>> import nxpy.numpy as xnp
    >>> xnp.linspace(0, 1, 5).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> xnp.linspace(0, 1, 4, endpoint=False, retstep=True)[1].item()
    0.25
    """
    num = _static_int(num, "linspace", "num")
    if num < 0:
        raise ValueError(f"linspace: expected num >= 0, got {num}")
    a, b = O.to_tensor(start, "start"), O.to_tensor(stop, "stop")
    t = dtype_of(dtype, "linspace")
    ct = _float_of(a, b) if t is None else T.to_floating(t)
    t = t or ct
    a, b = O.as_type(a, ct), O.as_type(b, ct)
    bounds = np.broadcast_shapes(a.shape, b.shape)
    rank = len(bounds) + 1
    if not -rank <= axis < rank:
        raise ValueError(f"linspace: axis {axis} is out of bounds for a result of rank {rank}")
    axis %= rank
    a, b = O.broadcast(a, bounds), O.broadcast(b, bounds)
    a, b = O.new_axis(a, axis), O.new_axis(b, axis)
    div = (num - 1) if endpoint else num
    full_shape = bounds[:axis] + (num,) + bounds[axis:]
    if num > 1:
        step_shape = bounds[:axis] + (div,) + bounds[axis:]
        rt = T.to_real(ct)
        s = O.divide(O.iota(step_shape, axis=axis, type=rt), O.tensor(div, type=rt))
        s = O.as_type(s, ct)
        out = O.add(O.multiply(a, O.subtract(O.tensor(1, type=ct), s)), O.multiply(b, s))
        if endpoint:
            out = O.concatenate([out, b], axis=axis)
    elif num == 1:
        out = a
    else:
        out = O.full(full_shape, 0, type=ct)
    if t.kind in "su" and ct.kind not in "su":
        out = O.floor(out)
    out = O.as_type(out, t)
    if retstep:
        delta = O.divide(O.subtract(b, a), O.tensor(div, type=ct)) if div > 0 else \
            O.full(b.shape, math.nan, type=ct)
        return out, O.as_type(O.squeeze(delta, [axis]), ct)
    return out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``jnp.logspace``: ``base ** linspace(start, stop, ...)``.

    >>> import nxpy.numpy as xnp
    >>> xnp.logspace(0, 2, 3).tolist()
    [1.0, 10.0, 100.0]
    """
    a, b = O.to_tensor(start, "start"), O.to_tensor(stop, "stop")
    t = dtype_of(dtype, "logspace") or _float_of(a, b)
    ct = T.to_floating(t)
    lin = linspace(O.as_type(a, ct), O.as_type(b, ct), num, endpoint=endpoint, axis=axis)
    base = O.to_tensor(base, "base")
    return O.as_type(O.pow(O.as_type(base, T.merge(ct, base.type)) if base.rank else
                           O.as_type(base, ct), lin), t)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """``jnp.geomspace``: ``num`` values from ``start`` to ``stop`` in geometric
    progression (both of the same sign), as ``sign * logspace(log10|start|,
    log10|stop|)``.

    >>> import nxpy.numpy as xnp
    >>> [round(v, 4) for v in xnp.geomspace(1, 1000, 4).tolist()]
    [1.0, 10.0, 100.0, 1000.0]
    """
    a, b = O.to_tensor(start, "start"), O.to_tensor(stop, "stop")
    t = dtype_of(dtype, "geomspace") or _float_of(a, b)
    ct = T.to_floating(t)
    a, b = O.as_type(a, ct), O.as_type(b, ct)
    sign = O.sign(a)
    res = logspace(O.log10(O.divide(a, sign)), O.log10(O.divide(b, sign)), num,
                   endpoint=endpoint, base=10.0, dtype=ct, axis=0)
    res = O.multiply(sign, res)
    rank = res.rank
    if not -rank <= axis < rank:
        raise ValueError(f"geomspace: axis {axis} is out of bounds for a result of rank {rank}")
    axis %= rank
    if axis:
        res = O.transpose(res, [*range(1, axis + 1), 0, *range(axis + 1, rank)])
    return O.as_type(res, t)


def eye(N, M=None, k=0, dtype=None):
    """``jnp.eye``: an ``N x M`` matrix with ones on the ``k``-th diagonal (f32 by
    default).

    >>> import nxpy.numpy as xnp
    >>> xnp.eye(2, 3, k=1, dtype="int32").tolist()
    [[0, 1, 0], [0, 0, 1]]
    """
    n = _static_int(N, "eye", "N")
    m = n if M is None else _static_int(M, "eye", "M")
    if n < 0 or m < 0:
        raise ValueError(f"eye: expected non-negative N and M, got {n} and {m}")
    k = _static_int(k, "eye", "k")
    rows = O.iota((n, m), axis=0)
    on = O.equal(O.add(rows, k) if k else rows, O.iota((n, m), axis=1))
    return O.as_type(on, dtype_of(dtype, "eye") or F32)


def identity(n, dtype=None):
    """``jnp.identity``: the ``n x n`` identity matrix (f32 by default).

    >>> import nxpy.numpy as xnp
    >>> xnp.identity(2).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """``jnp.tri``: an ``N x M`` matrix with ones at and below the ``k``-th diagonal (f32
    by default).

    >>> import nxpy.numpy as xnp
    >>> xnp.tri(2, 3, dtype="int32").tolist()
    [[1, 0, 0], [1, 1, 0]]
    """
    n = _static_int(N, "tri", "N")
    m = n if M is None else _static_int(M, "tri", "M")
    k = _static_int(k, "tri", "k")
    on = O.greater_equal(O.add(O.iota((n, m), axis=0), k), O.iota((n, m), axis=1))
    return O.as_type(on, dtype_of(dtype, "tri") or F32)


def _triangle(m, k, fn, lower):
    x = O.to_tensor(m, "m")
    if x.rank < 2:
        raise ValueError(f"{fn}: expected m of rank >= 2, got shape {x.shape}")
    k = _static_int(k, fn, "k")
    r, c = x.shape[-2:]
    rows, cols = O.iota((r, c), axis=0), O.iota((r, c), axis=1)
    keep = O.greater_equal(O.add(rows, k), cols) if lower else \
        O.less_equal(O.add(rows, k), cols)
    return O.select(O.broadcast(keep, x.shape, axes=[x.rank - 2, x.rank - 1]), x,
                    O.full((), 0, type=x.type))


def tril(m, k=0):
    """``jnp.tril``: ``m`` (rank >= 2; the last two axes) with the entries above the
    ``k``-th diagonal zeroed.

    >>> import nxpy.numpy as xnp
    >>> xnp.tril(xnp.ones((2, 2), dtype="int32")).tolist()
    [[1, 0], [1, 1]]
    """
    return _triangle(m, k, "tril", True)


def triu(m, k=0):
    """``jnp.triu``: ``m`` (rank >= 2; the last two axes) with the entries below the
    ``k``-th diagonal zeroed.

    >>> import nxpy.numpy as xnp
    >>> xnp.triu(xnp.ones((2, 2), dtype="int32"), k=1).tolist()
    [[0, 1], [0, 0]]
    """
    return _triangle(m, k, "triu", False)


def diag(v, k=0):
    """``jnp.diag``: for a vector, the square matrix with ``v`` on its ``k``-th diagonal;
    for a matrix, its ``k``-th diagonal.

    >>> import nxpy.numpy as xnp
    >>> xnp.diag(xnp.asarray([1, 2]), k=1).tolist()
    [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    >>> xnp.diag(xnp.asarray([[1, 2], [3, 4]])).tolist()
    [1, 4]
    """
    x = O.to_tensor(v, "v")
    k = _static_int(k, "diag", "k")
    if x.rank == 1:
        n = x.shape[0] + abs(k)
        if x.shape[0] == 0:
            return O.full((n, n), 0, type=x.type)
        return O.make_diagonal(x, offset=k) if k else O.make_diagonal(x)
    if x.rank == 2:
        return _diagonal(x, k)
    raise ValueError(f"diag: expected v of rank 1 or 2, got shape {x.shape}")


def _diagonal(x, k):
    """The ``k``-th diagonal of the matrix ``x`` (empty when off the matrix), by a
    gather of the flattened matrix (static indices)."""
    r, c = x.shape
    i0, j0 = (0, k) if k >= 0 else (-k, 0)
    n = max(0, min(r - i0, c - j0))
    if n == 0:
        return O.full((0,), 0, type=x.type)
    idx = np.arange(n) * (c + 1) + i0 * c + j0
    return O.take(O.reshape(x, (r * c,)), O.tensor(idx.astype(np.int32)))


def diagflat(v, k=0):
    """``jnp.diagflat``: the square matrix with ``v`` flattened on its ``k``-th diagonal.

    >>> import nxpy.numpy as xnp
    >>> xnp.diagflat(xnp.asarray([[1, 2]])).tolist()
    [[1, 0], [0, 2]]
    """
    x = O.to_tensor(v, "v")
    return diag(O.reshape(x, (x.size,)), k)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """``jnp.meshgrid``: coordinate grids from 1-D ``xi`` (``indexing`` ``'xy'``:
    Cartesian, the first two axes swapped; ``'ij'``: matrix); ``sparse`` keeps size-1 axes.

    >>> import nxpy.numpy as xnp
    >>> [g.tolist() for g in xnp.meshgrid(xnp.asarray([1, 2]), xnp.asarray([5, 6, 7]))]
    [[[1, 2], [1, 2], [1, 2]], [[5, 5], [6, 6], [7, 7]]]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: expected indexing 'xy' or 'ij', got {indexing!r}")
    xs = [O.to_tensor(x, "xi") for x in xi]
    for x in xs:
        if x.rank != 1:
            raise ValueError(f"meshgrid: expected 1-D arrays, got one of shape {x.shape}")
    sizes = [x.shape[0] for x in xs]
    if indexing == "xy" and len(xs) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, x in enumerate(xs):
        ax = i
        if indexing == "xy" and len(xs) >= 2 and i < 2:
            ax = 1 - i
        if sparse:
            shape = [1] * len(xs)
            shape[ax] = x.shape[0]
            out.append(O.reshape(x, tuple(shape)))
        else:
            out.append(O.broadcast(x, tuple(sizes), axes=[ax]))
    return out


def indices(dimensions, dtype=None, sparse=False):
    """``jnp.indices``: for each axis of ``dimensions``, the index along it at every point
    (stacked; a tuple of broadcastable arrays when ``sparse``), s32 by default.

    >>> import nxpy.numpy as xnp
    >>> xnp.indices((2, 2)).tolist()
    [[[0, 0], [1, 1]], [[0, 1], [0, 1]]]
    """
    dims = shape_of(dimensions, "indices", "dimensions")
    t = dtype_of(dtype, "indices") or S32
    n = len(dims)
    if sparse:
        return tuple(O.reshape(O.iota((d,), type=t), tuple(d if j == i else 1
                                                          for j in range(n)))
                     for i, d in enumerate(dims))
    if n == 0:
        return O.full((0,), 0, type=t)
    return O.stack([O.iota(dims, axis=i, type=t) for i in range(n)])


def _static_indices(fn, n, k, m, lower):
    n = _static_int(n, fn, "n")
    k = _static_int(k, fn, "k")
    m = n if m is None else _static_int(m, fn, "m")
    r, c = (np.tril_indices if lower else np.triu_indices)(n, k, m)
    return O.tensor(r.astype(np.int32)), O.tensor(c.astype(np.int32))


def tril_indices(n, k=0, m=None):
    """``jnp.tril_indices``: the row and column indices (s32) of the lower triangle of an
    ``n x m`` matrix (static sizes).

    >>> import nxpy.numpy as xnp
    >>> [i.tolist() for i in xnp.tril_indices(2)]
    [[0, 1, 1], [0, 0, 1]]
    """
    return _static_indices("tril_indices", n, k, m, True)


def triu_indices(n, k=0, m=None):
    """``jnp.triu_indices``: the row and column indices (s32) of the upper triangle.

    >>> import nxpy.numpy as xnp
    >>> [i.tolist() for i in xnp.triu_indices(2)]
    [[0, 0, 1], [0, 1, 1]]
    """
    return _static_indices("triu_indices", n, k, m, False)


def _matrix_shape(arr, fn):
    shape = arr.shape if hasattr(arr, "shape") else np.shape(arr)
    if len(shape) != 2:
        raise ValueError(f"{fn}: expected a 2-D array, got shape {tuple(shape)}")
    return shape


def tril_indices_from(arr, k=0):
    """``jnp.tril_indices_from``: :func:`tril_indices` for ``arr``'s (2-D) shape.

    >>> import nxpy.numpy as xnp
    >>> [i.tolist() for i in xnp.tril_indices_from(xnp.zeros((2, 3)), k=1)]
    [[0, 0, 1, 1, 1], [0, 1, 0, 1, 2]]
    """
    r, c = _matrix_shape(arr, "tril_indices_from")
    return tril_indices(r, k, c)


def triu_indices_from(arr, k=0):
    """``jnp.triu_indices_from``: :func:`triu_indices` for ``arr``'s (2-D) shape.

    >>> import nxpy.numpy as xnp
    >>> [i.tolist() for i in xnp.triu_indices_from(xnp.zeros((2, 2)))]
    [[0, 0, 1], [0, 1, 1]]
    """
    r, c = _matrix_shape(arr, "triu_indices_from")
    return triu_indices(r, k, c)




def _window(M, fn, formula):
    m = _static_int(M, fn, "M")
    if m <= 1:
        return O.full((max(m, 0),), 1, type=F32)
    n = O.iota((m,), type=F32)
    return formula(n, m)


def _cos(n, m, k):
    """``cos(k * pi * n / (m - 1))`` in f32, as JAX's window functions compute it."""
    return O.cos(O.divide(O.multiply(O.tensor(k * math.pi, type=F32), n),
                          O.tensor(m - 1, type=F32)))


def bartlett(M):
    """``jnp.bartlett``: the Bartlett (triangular) window of ``M`` points (f32).

    >>> import nxpy.numpy as xnp
    >>> xnp.bartlett(5).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    return _window(M, "bartlett", lambda n, m: O.subtract(1.0, O.divide(
        O.abs(O.add(O.multiply(2.0, n), float(1 - m))), float(m - 1))))


def blackman(M):
    """``jnp.blackman``: the Blackman window of ``M`` points (f32).

    >>> import nxpy.numpy as xnp
    >>> [round(v, 4) for v in xnp.blackman(3).tolist()]
    [-0.0, 1.0, -0.0]
    """
    return _window(M, "blackman", lambda n, m: O.add(O.subtract(
        0.42, O.multiply(0.5, _cos(n, m, 2))), O.multiply(0.08, _cos(n, m, 4))))


def hamming(M):
    """``jnp.hamming``: the Hamming window of ``M`` points (f32).

    >>> import nxpy.numpy as xnp
    >>> [round(v, 4) for v in xnp.hamming(3).tolist()]
    [0.08, 1.0, 0.08]
    """
    return _window(M, "hamming", lambda n, m: O.subtract(0.54, O.multiply(0.46,
                                                                          _cos(n, m, 2))))


def hanning(M):
    """``jnp.hanning``: the Hann window of ``M`` points (f32).

    >>> import nxpy.numpy as xnp
    >>> xnp.hanning(3).tolist()
    [0.0, 1.0, 0.0]
    """
    return _window(M, "hanning", lambda n, m: O.multiply(0.5, O.subtract(1.0,
                                                                         _cos(n, m, 2))))
