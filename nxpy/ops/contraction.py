"""Contractions: dot (Nx's forms, with contract and batch axes) and matmul (``@``).

>>> import nxpy as nx
>>> x = nx.tensor([[1.0, 2.0], [3.0, 4.0]])
>>> nx.dot(x, x).tolist()
[[7.0, 10.0], [15.0, 22.0]]
"""
from __future__ import annotations

import builtins

from .. import shape as S, types as T
from ..tensor import Tensor
from .core import _axes_of, _binary_operands, _out, dispatch, primitive, to_tensor
from .elementwise import U8, multiply

__all__ = ["dot", "matmul"]

primitive("contraction", "dot")


def dot(a, *args) -> Tensor:
    """``dot(a, b)``, ``dot(a, contract_a, b, contract_b)`` or
    ``dot(a, contract_a, batch_a, b, contract_b, batch_b)`` (as Nx).

    The result's dims are the batch dims, then ``a``'s free dims, then ``b``'s.

    >>> import nxpy as nx
    >>> nx.dot(nx.iota((2, 3)), [0], nx.iota((2, 4)), [0]).shape
    (3, 4)
    """
    if len(args) == 1:
        a, b = _binary_operands(a, args[0], "dot", ("a", "b"))
        if a.rank == 0 or b.rank == 0:
            return multiply(a, b)
        ca, cb, ba, bb = [a.rank - 1], [builtins.max(b.rank - 2, 0)], [], []
    elif len(args) == 3:
        ca, b, cb = args
        ba, bb = [], []
    elif len(args) == 5:
        ca, ba, b, cb, bb = args
    else:
        raise TypeError(f"dot: expected dot(a, b), dot(a, contract_a, b, contract_b) or "
                        f"dot(a, contract_a, batch_a, b, contract_b, batch_b), got {len(args) + 1} "
                        f"arguments")
    a, b = to_tensor(a, "a"), to_tensor(b, "b")
    ca = _axes_of("dot", S.normalize_axes, ca, a.rank, a.names, what="contract_a")
    cb = _axes_of("dot", S.normalize_axes, cb, b.rank, b.names, what="contract_b")
    ba = _axes_of("dot", S.normalize_axes, ba, a.rank, a.names, what="batch_a")
    bb = _axes_of("dot", S.normalize_axes, bb, b.rank, b.names, what="batch_b")
    if len(ca) != len(cb) or len(ba) != len(bb):
        raise ValueError(f"dot: expected as many contract and batch axes on both sides, got "
                         f"contract {list(ca)} / {list(cb)} and batch {list(ba)} / {list(bb)}")
    for what, xa, xb in (("contract", ca, cb), ("batch", ba, bb)):
        for i, j in zip(xa, xb):
            if a.shape[i] != b.shape[j]:
                raise ValueError(f"dot: cannot {what} axis {i} of shape {a.shape} (size "
                                 f"{a.shape[i]}) with axis {j} of shape {b.shape} "
                                 f"(size {b.shape[j]})")
    if set(ca) & set(ba) or set(cb) & set(bb):
        raise ValueError("dot: an axis cannot be both a contract and a batch axis")
    free_a = [i for i in range(a.rank) if i not in ca and i not in ba]
    free_b = [i for i in range(b.rank) if i not in cb and i not in bb]
    shape = [a.shape[i] for i in ba] + [a.shape[i] for i in free_a] + [b.shape[i] for i in free_b]
    names = [a.names[i] for i in ba] + [a.names[i] for i in free_a] + [b.names[i] for i in free_b]
    m = T.merge(a.type, b.type)
    t = U8 if m.is_pred else m
    return dispatch("dot", _out(shape, t, tuple(names)), a, b, contract_a=ca, batch_a=ba,
                    contract_b=cb, batch_b=bb)


def matmul(a, b) -> Tensor:
    """``a @ b``: ``dot`` for rank <= 2; leading dims are batch dims for higher ranks."""
    a, b = _binary_operands(a, b, "matmul", ("a", "b"))
    if a.rank >= 3 and b.rank >= 3 and a.rank == b.rank:
        nb = a.rank - 2
        return dot(a, [a.rank - 1], list(range(nb)), b, [b.rank - 2], list(range(nb)))
    return dot(a, b)
