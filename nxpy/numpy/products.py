"""NumPy's products (``dot``, ``vdot``, ``vecdot``, ``matmul``, ``inner``, ``outer``,
``kron``, ``cross``, ``tensordot``, ``einsum``, ``convolve``, ``correlate``) and polynomials
(``polyval``, ``polyadd``, ``polymul``, ``trapezoid``) with ``jax.numpy``'s names and
semantics (issue 28); types as in :mod:`.mathematics`."""
from __future__ import annotations

import numpy as np

from .. import ops as O
from .. import types as T
from ..defn.placement import with_out_sharding
from .mathematics import _conj, _const, _inexact, _no_out, _pair, _t

__all__ = ["dot", "vdot", "vecdot", "matmul", "inner", "outer", "kron", "cross", "tensordot",
           "einsum", "convolve", "correlate", "polyval", "polyadd", "polymul", "trapezoid"]

#: departures from ``jax.numpy`` (collected by :mod:`nxpy.numpy.coverage`)
NOTES = {
    "cross": "2-vectors are accepted (z of the 3-D product, as NumPy 1 and jax 0.10); jax "
             "0.12 raises for them.",
    "convolve": "precision= and preferred_element_type= are not accepted.",
    "polyval": "the Horner loop is unrolled in Python (``unroll=`` is accepted and changes "
               "nothing).",
}


def _axis(axis, rank: int, fn: str, arg: str = "axis") -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{fn}: expected {arg} to be an int, got {axis!r}")
    if not -rank <= axis < rank:
        raise ValueError(f"{fn}: {arg} {axis} is out of bounds for a tensor of rank {rank}")
    return int(axis) % rank


def _prod_pair(a, b, fn: str):
    x, y = _pair(a, b, fn)
    if x.type.is_pred:  # jnp's dot of bools is a bool (any of the ands)
        return x, y, True
    return x, y, False


def _dot_out(r, was_pred):
    return O.not_equal(r, O.tensor(0, type=r.type)) if was_pred else r


def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """``jnp.dot``: products of scalars, inner products of vectors, matrix products; for
    higher ranks the last axis of ``a`` with the second-to-last of ``b``. ``out_sharding``
    (a ``P`` over the mesh in context): the result's layout (see :func:`nx.reshard`).

    >>> import nxpy.numpy as xnp
    >>> xnp.dot([[1, 2], [3, 4]], [1, 1]).tolist()
    [3, 7]
    """
    return with_out_sharding(lambda: _dot(a, b, preferred_element_type), out_sharding)


def _dot(a, b, preferred_element_type):
    x, y, p = _prod_pair(a, b, "dot")
    if x.rank == 0 or y.rank == 0:
        return O.multiply(x, y) if not p else O.logical_and(x, y)
    ca = x.rank - 1
    cb = 0 if y.rank == 1 else y.rank - 2
    if x.shape[ca] != y.shape[cb]:
        raise ValueError(f"dot: shapes {x.shape} and {y.shape} are not aligned: "
                         f"{x.shape[ca]} (axis {ca}) != {y.shape[cb]} (axis {cb})")
    return _dot_out(_preferred(O.dot(x, [ca], y, [cb]), preferred_element_type), p)


def _preferred(r, t):
    if t is None:
        return r
    return O.as_type(r, T.parse(t))


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """``jnp.vdot``: the inner product of ``a`` and ``b`` flattened, ``a`` conjugated.

    >>> import nxpy.numpy as xnp
    >>> xnp.vdot([[1, 2], [3, 4]], [[1, 1], [1, 1]]).item()
    10
    """
    x, y, p = _prod_pair(a, b, "vdot")
    x, y = O.reshape(_conj(x), (x.size,)), O.reshape(y, (y.size,))
    if x.size != y.size:
        raise ValueError(f"vdot: expected inputs of the same size, got {x.size} and {y.size}")
    return _dot_out(_preferred(O.dot(x, [0], y, [0]), preferred_element_type), p)


def vecdot(x1, x2, /, *, axis: int = -1, precision=None, preferred_element_type=None):
    """``jnp.vecdot``: the inner product along ``axis`` (``x1`` conjugated), broadcast over
    the other axes.

    >>> import nxpy.numpy as xnp
    >>> xnp.vecdot([[1, 2], [3, 4]], [1, 1]).tolist()
    [3, 7]
    """
    x, y = _pair(x1, x2, "vecdot")
    ax = _axis(axis, x.rank, "vecdot")
    bx = _axis(axis, y.rank, "vecdot")
    x, y = O.transpose(x, _to_end(x.rank, ax)), O.transpose(y, _to_end(y.rank, bx))
    return _preferred(O.sum(O.multiply(_conj(x), y), axes=[-1]), preferred_element_type)


def _to_end(rank, ax):
    return [i for i in range(rank) if i != ax] + [ax]


def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
    """``jnp.matmul`` (``a @ b``): matrix products, broadcast over leading batch axes;
    a vector operand is a row (``a``) or a column (``b``) that the result drops.
    ``out_sharding``: the result's layout, as for :func:`dot`.

    >>> import nxpy.numpy as xnp
    >>> xnp.matmul([[1, 2], [3, 4]], [[1], [1]]).tolist()
    [[3], [7]]
    """
    return with_out_sharding(lambda: _matmul(a, b, preferred_element_type), out_sharding)


def _matmul(a, b, preferred_element_type):
    x, y, p = _prod_pair(a, b, "matmul")
    if x.rank == 0 or y.rank == 0:
        raise ValueError(f"matmul: expected operands of rank >= 1, got shapes {x.shape} and "
                         f"{y.shape}")
    vx, vy = x.rank == 1, y.rank == 1
    if vx:
        x = O.reshape(x, (1,) + x.shape)
    if vy:
        y = O.reshape(y, y.shape + (1,))
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"matmul: shapes {x.shape} and {y.shape} do not match: "
                         f"{x.shape[-1]} != {y.shape[-2]}")
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    x = O.broadcast(x, batch + x.shape[-2:]) if x.shape[:-2] != batch else x
    y = O.broadcast(y, batch + y.shape[-2:]) if y.shape[:-2] != batch else y
    nb = len(batch)
    r = O.dot(x, [nb + 1], list(range(nb)), y, [nb], list(range(nb)))
    if vx:
        r = O.squeeze(r, [r.rank - 2])
    if vy:
        r = O.squeeze(r, [r.rank - 1])
    return _dot_out(_preferred(r, preferred_element_type), p)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """``jnp.inner``: the sum of products over the last axes of ``a`` and ``b``.

    >>> import nxpy.numpy as xnp
    >>> xnp.inner([[1, 2], [3, 4]], [1, 1]).tolist()
    [3, 7]
    """
    x, y, p = _prod_pair(a, b, "inner")
    if x.rank == 0 or y.rank == 0:
        return O.multiply(x, y)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"inner: the last axes differ: {x.shape} and {y.shape}")
    r = O.dot(x, [x.rank - 1], y, [y.rank - 1])
    return _dot_out(_preferred(r, preferred_element_type), p)


def outer(a, b, out=None):
    """``jnp.outer``: every product of an entry of ``a`` and one of ``b`` (both flattened).

    >>> import nxpy.numpy as xnp
    >>> xnp.outer([1, 2], [1, 10]).tolist()
    [[1, 10], [2, 20]]
    """
    _no_out(out, "outer")
    x, y = _pair(a, b, "outer")
    x, y = O.reshape(x, (x.size, 1)), O.reshape(y, (1, y.size))
    return O.logical_and(x, y) if x.type.is_pred else O.multiply(x, y)


def kron(a, b):
    """``jnp.kron``: the Kronecker product (blocks of ``b`` scaled by ``a``'s entries).

    >>> import nxpy.numpy as xnp
    >>> xnp.kron([1, 10], [1, 2]).tolist()
    [1, 2, 10, 20]
    """
    x, y = _pair(a, b, "kron")
    n = max(x.rank, y.rank)
    x = O.reshape(x, (1,) * (n - x.rank) + x.shape)
    y = O.reshape(y, (1,) * (n - y.rank) + y.shape)
    xs = O.reshape(x, tuple(d for s in x.shape for d in (s, 1)))
    ys = O.reshape(y, tuple(d for s in y.shape for d in (1, s)))
    r = O.logical_and(xs, ys) if x.type.is_pred else O.multiply(xs, ys)
    return O.reshape(r, tuple(p * q for p, q in zip(x.shape, y.shape)))


def cross(a, b, axisa: int = -1, axisb: int = -1, axisc: int = -1, axis: int | None = None):
    """``jnp.cross``: the cross product of vectors of 2 or 3 entries along ``axisa`` and
    ``axisb`` (``axis`` sets all three), the result's vectors along ``axisc`` (a 2-vector
    cross product is the scalar ``z``).

    >>> import nxpy.numpy as xnp
    >>> xnp.cross([1, 0, 0], [0, 1, 0]).tolist()
    [0, 0, 1]
    """
    x, y = _pair(a, b, "cross")
    if axis is not None:
        axisa = axisb = axisc = axis
    x = O.transpose(x, _to_end(x.rank, _axis(axisa, x.rank, "cross", "axisa")))
    y = O.transpose(y, _to_end(y.rank, _axis(axisb, y.rank, "cross", "axisb")))
    if x.shape[-1] not in (2, 3) or y.shape[-1] not in (2, 3):
        raise ValueError(f"cross: incompatible vector sizes {x.shape[-1]} and {y.shape[-1]} "
                         "(expected 2 or 3)")

    def comp(t, i):
        if i >= t.shape[-1]:
            return O.multiply(O.slice_along_axis(t, 0, 1, axis=-1), _const(0, t))
        return O.slice_along_axis(t, i, 1, axis=-1)
    a0, a1, a2 = (comp(x, i) for i in range(3))
    b0, b1, b2 = (comp(y, i) for i in range(3))
    c2 = O.subtract(O.multiply(a0, b1), O.multiply(a1, b0))
    if x.shape[-1] == 2 and y.shape[-1] == 2:
        return O.squeeze(c2, [c2.rank - 1])
    c0 = O.subtract(O.multiply(a1, b2), O.multiply(a2, b1))
    c1 = O.subtract(O.multiply(a2, b0), O.multiply(a0, b2))
    c = O.concatenate([c0, c1, c2], axis=-1)
    ac = _axis(axisc, c.rank, "cross", "axisc")
    perm = list(range(c.rank - 1))
    perm.insert(ac, c.rank - 1)
    return O.transpose(c, perm)


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """``jnp.tensordot``: the sum of products over ``axes`` (an int: the last ``axes`` of
    ``a`` with the first of ``b``; or a pair of axis sequences).

    >>> import nxpy.numpy as xnp
    >>> xnp.tensordot([[1, 2], [3, 4]], [[1, 0], [0, 1]]).item()
    5
    >>> xnp.tensordot([[1, 2], [3, 4]], [1, 1], axes=([1], [0])).tolist()
    [3, 7]
    """
    x, y, p = _prod_pair(a, b, "tensordot")
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        if not 0 <= axes <= min(x.rank, y.rank):
            raise ValueError(f"tensordot: axes={axes} out of range for ranks {x.rank} and "
                             f"{y.rank}")
        ca, cb = list(range(x.rank - axes, x.rank)), list(range(axes))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ca, cb = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                  [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
        if len(ca) != len(cb):
            raise ValueError(f"tensordot: axes {axes!r} pair sequences of different lengths")
        ca = [_axis(i, x.rank, "tensordot", "axes") for i in ca]
        cb = [_axis(i, y.rank, "tensordot", "axes") for i in cb]
    else:
        raise TypeError(f"tensordot: expected axes to be an int or a pair of axis sequences, "
                        f"got {axes!r}")
    for i, j in zip(ca, cb):
        if x.shape[i] != y.shape[j]:
            raise ValueError(f"tensordot: axis {i} of a ({x.shape[i]}) and axis {j} of b "
                             f"({y.shape[j]}) differ")
    return _dot_out(_preferred(O.dot(x, ca, y, cb), preferred_element_type), p)


def einsum(subscripts, /, *operands, out=None, optimize="auto", precision=None,
           preferred_element_type=None, out_sharding=None):
    """``jnp.einsum``: Einstein summation (NumPy's subscripts, ``...`` included).
    ``out_sharding``: the result's layout, as for :func:`dot`.

    >>> import nxpy.numpy as xnp
    >>> xnp.einsum("ij,j->i", [[1, 2], [3, 4]], [1, 1]).tolist()
    [3, 7]
    """
    _no_out(out, "einsum")
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: expected subscripts to be a str, got {subscripts!r}")
    ts = [_t(o, "einsum", "operands") for o in operands]
    return with_out_sharding(lambda: _preferred(O.einsum(subscripts, *ts),
                                                preferred_element_type), out_sharding)


def _conv1d(a, v, mode: str, op: str):
    x, y = _pair(a, v, op)
    if x.rank != 1 or y.rank != 1:
        raise ValueError(f"{op}: expected 1-dimensional inputs, got shapes {x.shape} and "
                         f"{y.shape}")
    if x.size == 0 or y.size == 0:
        raise ValueError(f"{op}: inputs cannot be empty, got shapes {x.shape} and {y.shape}")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{op}: expected mode 'full', 'same' or 'valid', got {mode!r}")
    flip_out = False
    if op == "correlate":
        y = _conj(y)
        if x.size < y.size:
            x, y, flip_out = y, x, True
    elif x.size < y.size:
        x, y = y, x
    if op == "convolve":
        y = O.reverse(y, [0])
    m = y.size
    pad = {"valid": (0, 0), "same": (m // 2, m - m // 2 - 1), "full": (m - 1, m - 1)}[mode]
    xf, yf = _inexact(x), _inexact(y)
    r = O.conv(O.reshape(xf, (1, 1, x.size)), O.reshape(yf, (1, 1, m)), padding=[pad])
    r = O.reshape(r, (r.shape[-1],))
    if flip_out:
        r = O.reverse(r, [0])
    return r


def convolve(a, v, mode: str = "full", *, precision=None, preferred_element_type=None):
    """``jnp.convolve``: the discrete linear convolution of two vectors; ``mode`` is
    ``"full"`` (every overlap), ``"same"`` (the length of the longer) or ``"valid"``
    (full overlaps only).

    >>> import nxpy.numpy as xnp
    >>> xnp.convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5]).tolist()
    [0.0, 1.0, 2.5, 4.0, 1.5]
    """
    return _conv1d(a, v, mode, "convolve")


def correlate(a, v, mode: str = "valid", *, precision=None, preferred_element_type=None):
    """``jnp.correlate``: the cross-correlation of two vectors (``v`` conjugated), with
    :func:`convolve`'s modes.

    >>> import nxpy.numpy as xnp
    >>> xnp.correlate([1.0, 2.0, 3.0], [0.0, 1.0, 0.5]).tolist()
    [3.5]
    """
    return _conv1d(a, v, mode, "correlate")


def polyval(p, x, *, unroll=None):
    """``jnp.polyval``: the polynomial with coefficients ``p`` (highest power first) at
    ``x``, by Horner's rule (unrolled in Python: ``unroll`` changes nothing).

    >>> import nxpy.numpy as xnp
    >>> xnp.polyval([1, 0, -1], [2, 3]).tolist()
    [3, 8]
    """
    c = _t(p, "polyval", "p")
    xs = _t(x, "polyval", "x")
    if c.rank != 1:
        raise ValueError(f"polyval: expected p to be a vector, got shape {c.shape}")
    c, xs = _pair(c, xs, "polyval")
    y = O.multiply(xs, _const(0, xs))
    for i in range(c.size):
        y = O.add(O.multiply(y, xs), O.squeeze(O.slice_along_axis(c, i, 1), [0]))
    return y


def polyadd(a1, a2):
    """``jnp.polyadd``: the sum of two polynomials (highest power first).

    >>> import nxpy.numpy as xnp
    >>> xnp.polyadd([1, 2], [1, 0, 0]).tolist()
    [1, 1, 2]
    """
    x, y = _pair(a1, a2, "polyadd")
    if x.rank != 1 or y.rank != 1:
        raise ValueError(f"polyadd: expected vectors, got shapes {x.shape} and {y.shape}")
    n = max(x.size, y.size)
    x = O.pad(x, _const(0, x), [(n - x.size, 0, 0)])
    y = O.pad(y, _const(0, y), [(n - y.size, 0, 0)])
    return O.add(x, y)


def polymul(a1, a2, *, trim_leading_zeros: bool = False):
    """``jnp.polymul``: the product of two polynomials (highest power first).

    >>> import nxpy.numpy as xnp
    >>> xnp.polymul([1.0, 1.0], [1.0, -1.0]).tolist()
    [1.0, 0.0, -1.0]
    """
    if trim_leading_zeros:
        raise NotImplementedError("polymul: trim_leading_zeros=True needs concrete values")
    return convolve(a1, a2)


def trapezoid(y, x=None, dx=1.0, axis: int = -1):
    """``jnp.trapezoid``: the integral of ``y`` along ``axis`` by the trapezoidal rule,
    at points ``x`` or spaced ``dx``.

    >>> import nxpy.numpy as xnp
    >>> xnp.trapezoid([1.0, 2.0, 3.0]).item()
    4.0
    """
    ys = _inexact(_t(y, "trapezoid", "y"))
    ax = _axis(axis, ys.rank, "trapezoid")
    ys = O.transpose(ys, _to_end(ys.rank, ax))
    n = ys.shape[-1]
    if x is None:
        d = _t(dx, "trapezoid", "dx")
    else:
        xs = _t(x, "trapezoid", "x")
        if xs.rank == 1:
            d = O.subtract(O.slice_along_axis(xs, 1, n - 1), O.slice_along_axis(xs, 0, n - 1))
        else:
            xs = O.transpose(xs, _to_end(xs.rank, _axis(axis, xs.rank, "trapezoid")))
            d = O.subtract(O.slice_along_axis(xs, 1, n - 1, axis=-1),
                           O.slice_along_axis(xs, 0, n - 1, axis=-1))
    if n == 0:
        return O.sum(ys, axes=[ys.rank - 1])
    mids = O.add(O.slice_along_axis(ys, 1, n - 1, axis=-1),
                 O.slice_along_axis(ys, 0, n - 1, axis=-1))
    s = O.multiply(O.multiply(mids, d), _const(0.5, mids))
    return O.sum(s, axes=[s.rank - 1])
