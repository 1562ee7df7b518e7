"""Tensors made from a shape: iota, eye, full. (``tensor``, ``from_numpy`` and
``template`` make tensors from data: :mod:`nxpy.ops.core`.)

>>> import nxpy as nx
>>> nx.iota((2, 3), axis=1).tolist(), nx.eye(2).tolist(), nx.full((2,), 7).tolist()
([[0, 1, 2], [0, 1, 2]], [[1, 0], [0, 1]], [7, 7])
"""
from __future__ import annotations

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import (_axes_of, _creation_backend, _out, _scalar_like, _shape_arg, as_type,
                   dispatch, primitive)
from .shaping import broadcast, reshape

__all__ = ["iota", "eye", "full"]

primitive("creation", "iota", "eye")


def iota(shape, axis=None, type="s32", names=None, backend=None) -> Tensor:
    """Counts along ``axis`` (or across the whole tensor when ``axis`` is None).

    >>> import nxpy as nx
    >>> nx.iota((2, 3), axis=1).tolist()
    [[0, 1, 2], [0, 1, 2]]
    >>> nx.iota((2, 2)).tolist()
    [[0, 1], [2, 3]]
    """
    shape = _shape_arg(shape, "iota")
    t = T.parse(type)
    if names is not None:
        names = S.check_names(names, shape, "iota: names")
    if axis is None:
        flat = dispatch("iota", _out((S.size(shape),), t), backend=backend, axis=0)
        return reshape(flat, shape, names=names)
    axis = _axes_of("iota", S.normalize_axis, axis, len(shape), names)
    return dispatch("iota", _out(shape, t, names), backend=backend, axis=axis)


def eye(n, type="s32", names=None, backend=None) -> Tensor:
    """Identity matrix: ``eye(3)`` or, with batch dims, ``eye((2, 3, 3))``."""
    shape = _shape_arg(n, "eye")
    shape = shape * 2 if len(shape) == 1 and S.as_int(n) is not None else shape
    if len(shape) < 2:
        raise ValueError(f"eye: expected a shape of rank >= 2, got {shape}")
    if names is not None:
        names = S.check_names(names, shape, "eye: names")
    return dispatch("eye", _out(shape, T.parse(type), names), backend=backend)


def full(shape, value, type=None, names=None, backend=None) -> Tensor:
    """A tensor of ``shape`` filled with ``value``."""
    shape = _shape_arg(shape, "full")
    if isinstance(value, Tensor):
        v = value if type is None else as_type(value, type)
    else:
        t = T.parse(type) if type is not None else T.infer_scalar(value)
        v = _scalar_like(value, t, _creation_backend(backend), "full: value")
    return broadcast(v, shape, names=names)
