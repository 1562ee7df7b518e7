"""Ops that change a tensor's shape or layout, not its values: reshape, squeeze,
new_axis, broadcast, transpose, pad, reverse, concatenate, stack.

>>> import nxpy as nx
>>> nx.transpose(nx.iota((2, 3))).shape, nx.broadcast(1, (2, 2)).tolist()
((3, 2), [[1, 1], [1, 1]])
"""
from __future__ import annotations

import builtins

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_axes_of, _binary_operands, _out, _shape_arg, as_type, dispatch, primitive,
                   renamed, to_tensor)

__all__ = ["reshape", "squeeze", "new_axis", "broadcast", "transpose", "pad", "reverse",
           "concatenate", "stack"]

primitive("shaping", "reshape", "broadcast", "transpose", "pad", "reverse", "concatenate")


def reshape(x, shape, names=None) -> Tensor:
    """Same values, new shape; one dim may be -1 (inferred). As in Nx, ``shape`` may be a
    tensor: its shape, and its names unless ``names`` is given.

    >>> import nxpy as nx
    >>> shape = nx.tensor([[0], [0], [0], [0]], names=["x", "y"])
    >>> nx.reshape(nx.tensor([1, 2, 3, 4]), shape).names
    ('x', 'y')
    """
    x = to_tensor(x, "x")
    if isinstance(shape, Tensor):
        names = shape.names if names is None else names
        shape = shape.shape
    shape = S.integers((shape,) if S.as_int(shape) is not None else shape, "reshape: shape")
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: at most one dim can be -1, got {shape}")
    if -1 in shape:
        rest = S.size([d for d in shape if d != -1])
        if rest == 0 or x.size % rest:
            raise ValueError(f"reshape: cannot infer -1 in {shape} for a tensor of shape "
                             f"{x.shape} ({x.size} elements)")
        shape = tuple(x.size // rest if d == -1 else d for d in shape)
    if builtins.any(d < 0 for d in shape) or S.size(shape) != x.size:
        raise ValueError(f"reshape: cannot reshape tensor of shape {x.shape} ({x.size} "
                         f"elements) to {shape} ({S.size(shape)} elements)")
    if shape == x.shape and names is None:
        return x
    if names is not None:
        names = S.check_names(names, shape, "reshape: names")
    return dispatch("reshape", _out(shape, x.type, names), x)


def squeeze(x, axes=None) -> Tensor:
    """Removes size-1 dims (all of them, or ``axes``)."""
    x = to_tensor(x, "x")
    if axes is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    else:
        axes = _axes_of("squeeze", S.normalize_axes, axes, x.rank, x.names)
        bad = [a for a in axes if x.shape[a] != 1]
        if bad:
            raise ValueError(f"squeeze: cannot squeeze dims {bad} of shape {x.shape}: "
                             f"only size-1 dims can be squeezed")
    keep = [i for i in range(x.rank) if i not in axes]
    return reshape(x, [x.shape[i] for i in keep], names=[x.names[i] for i in keep])


def new_axis(x, axis, name=None) -> Tensor:
    """Inserts a size-1 dim at ``axis`` (negative counts from the end of the new shape)."""
    x = to_tensor(x, "x")
    S.check_name(name, "new_axis: name")
    axis = _axes_of("new_axis", S.normalize_axis, axis, x.rank + 1)
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    names = x.names[:axis] + (name,) + x.names[axis:]
    return dispatch("reshape", _out(shape, x.type, names), x)


def broadcast(x, shape, axes=None, names=None) -> Tensor:
    """Broadcasts ``x`` to ``shape``; ``axes`` says where each dim of ``x`` goes
    (default: right-aligned)."""
    x = to_tensor(x, "x")
    if isinstance(shape, Tensor):  # as Nx: a shape tensor also gives its names
        names = shape.names if names is None else names
        shape = shape.shape
    else:
        shape = _shape_arg(shape, "broadcast")
    if axes is None:
        if x.rank > len(shape):
            raise ValueError(f"broadcast: cannot broadcast tensor of shape {x.shape} to "
                             f"lower rank shape {shape}")
        axes = tuple(range(len(shape) - x.rank, len(shape)))
    else:
        axes = tuple(_axes_of("broadcast", S.normalize_axis, a, len(shape)) for a in axes)
        if len(axes) != x.rank or list(axes) != sorted(set(axes)):
            raise ValueError(f"broadcast: axes {list(axes)} must be {x.rank} increasing "
                             f"dims of the target shape {shape}")
    for d, a in zip(x.shape, axes):
        if d != 1 and d != shape[a]:
            raise ValueError(f"broadcast: cannot broadcast tensor of shape {x.shape} to "
                             f"{shape} with axes {list(axes)}")
    # as Nx, broadcasting is destructive with respect to names: the result has the names
    # given (or those of a shape tensor), else none
    names = (None,) * len(shape) if names is None else S.check_names(names, shape,
                                                                      "broadcast: names")
    if shape == x.shape and axes == tuple(range(x.rank)):
        return renamed(x, names)
    return dispatch("broadcast", _out(shape, x.type, names), x, axes=axes)


def transpose(x, axes=None) -> Tensor:
    """Permutes dims (default: reverses them)."""
    x = to_tensor(x, "x")
    axes = tuple(reversed(range(x.rank))) if axes is None else _axes_of(
        "transpose", S.normalize_axes, axes, x.rank, x.names)
    if sorted(axes) != list(range(x.rank)):
        raise ValueError(f"transpose: axes {list(axes)} must be a permutation of "
                         f"{list(range(x.rank))}")
    if axes == tuple(range(x.rank)):
        return x
    return dispatch("transpose", _out([x.shape[a] for a in axes], x.type,
                                      tuple(x.names[a] for a in axes)), x, axes=axes)


def pad(x, pad_value, padding_config) -> Tensor:
    """Pads each dim by ``(low, high, interior)``; negative low/high crop. Names are kept
    (Nx).

    >>> import nxpy as nx
    >>> nx.pad(nx.tensor([[1], [2]], names=[None, "data"]), 0, [(0, 0, 0), (1, 1, 0)]).names
    (None, 'data')
    """
    x = to_tensor(x, "x")
    _, v = _binary_operands(x, pad_value, "pad", ("x", "pad_value"))
    if not isinstance(pad_value, Tensor):  # a number must fit x's type (a tensor converts)
        T.check_representable(pad_value, x.type, "pad: pad_value")
    if v.shape != ():
        raise ValueError(f"pad: expected pad_value to be a scalar, got shape {v.shape}")
    v = as_type(v, x.type)
    cfg = [S.integers(p, "pad: padding_config entries") for p in padding_config]
    if len(cfg) != x.rank or builtins.any(len(p) != 3 or p[2] < 0 for p in cfg):
        raise ValueError(f"pad: expected padding_config to be {x.rank} (low, high, interior) "
                         f"triples with interior >= 0, got {padding_config!r}")
    shape = []
    for d, (lo, hi, it) in zip(x.shape, cfg):
        n = lo + hi + d + builtins.max(d - 1, 0) * it
        if n < 0:
            raise ValueError(f"pad: padding {cfg} gives a negative dim for shape {x.shape}")
        shape.append(n)
    return dispatch("pad", _out(shape, x.type, x.names), x, v, config=tuple(cfg))


def reverse(x, axes=None) -> Tensor:
    """Reverses the order of elements along ``axes`` (default: all)."""
    x = to_tensor(x, "x")
    axes = _axes_of("reverse", S.normalize_axes, axes, x.rank, x.names)
    if not axes:
        return x
    return dispatch("reverse", _out(x.shape, x.type, x.names), x, axes=axes)


def _flatten(tensors) -> list:
    """The tensors of ``tensors``, with tuples holding tensors traversed as containers,
    depth first (Nx's ``flatten_list_or_container``); other entries (numbers, lists, NumPy
    arrays, tuples of numbers) are one tensor each."""
    out = []
    for t in tensors:
        if isinstance(t, tuple) and _holds_tensor(t):
            out.extend(_flatten(t))
        else:
            out.append(t)
    return out


def _holds_tensor(t) -> bool:
    return builtins.any(isinstance(v, Tensor) or (isinstance(v, tuple) and _holds_tensor(v))
                        for v in t)


def concatenate(tensors, axis=0) -> Tensor:
    """Joins tensors along ``axis``; other dims must match; types merge. ``tensors`` is a
    list or a tuple, and tuples of tensors in it are traversed as Nx traverses containers.

    >>> import nxpy as nx
    >>> nx.concatenate((nx.tensor([1, 2]), (nx.tensor([3, 4]), nx.tensor([5, 6])))).tolist()
    [1, 2, 3, 4, 5, 6]
    """
    tensors = [to_tensor(t, f"tensors[{i}]") for i, t in enumerate(_flatten(tensors))]
    if not tensors:
        raise ValueError("concatenate: expected a non-empty list of tensors")
    first = tensors[0]
    axis = _axes_of("concatenate", S.normalize_axis, axis, first.rank, first.names)
    t = first.type
    for i, x in enumerate(tensors[1:], 1):
        if x.rank != first.rank or builtins.any(
                a != b for j, (a, b) in enumerate(zip(x.shape, first.shape)) if j != axis):
            raise ValueError(f"concatenate: tensors[{i}] has shape {x.shape}, expected "
                             f"{first.shape} in all dims but {axis}")
        t = T.merge(t, x.type)
    if len(tensors) == 1:
        return as_type(first, t)
    shape = list(first.shape)
    shape[axis] = builtins.sum(x.shape[axis] for x in tensors)
    return dispatch("concatenate", _out(shape, t, first.names), tensors, axis=axis)


def stack(tensors, axis=0, name=None) -> Tensor:
    """Joins same-shape tensors along a new dim ``axis`` (``tensors`` as in
    :func:`concatenate`).

    >>> import nxpy as nx
    >>> nx.stack((nx.tensor([1, 2]), (nx.tensor([3, 4]), nx.tensor([5, 6])))).shape
    (3, 2)
    """
    tensors = [to_tensor(t, f"tensors[{i}]") for i, t in enumerate(_flatten(tensors))]
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    S.check_name(name, "stack: name")
    for i, x in enumerate(tensors[1:], 1):
        if x.shape != tensors[0].shape:
            raise ValueError(f"stack: tensors[{i}] has shape {x.shape}, expected "
                             f"{tensors[0].shape}")
    axis = _axes_of("stack", S.normalize_axis, axis, tensors[0].rank + 1)
    return concatenate([new_axis(x, axis, name) for x in tensors], axis=axis)
