"""Loop bounds known while tracing: how many iterations a ``while`` node runs at most,
read from its graph (a counter that starts at a constant, steps by a constant and is
compared with a constant, possibly and-ed with other conditions, as ``fori_loop`` and
``while_loop(..., max_iterations=N)`` build it). Reverse mode keeps that many carries for
its backward pass (:mod:`nxpy.defn.transforms.grad_bodies`); ``vmap`` keeps the bound when it
batches a loop.

>>> from nxpy import types as T
>>> from nxpy.defn import fori_loop, while_loop
>>> from nxpy.defn.expr import trace_fn
>>> def loop(fn):
...     return next(e for e in fn.nodes if e.op == "while")
>>> counting = trace_fn(lambda x: fori_loop(0, 5, lambda i, v: v * 2.0, x), [((), T.F32, None)])
>>> trip_bound(loop(counting)), exact_trips(loop(counting))
(5, True)
>>> capped = trace_fn(lambda x: while_loop(lambda s: s[1] < 10.0, lambda s: (s[0], s[1] * 2.0),
...                                        (0, x), max_iterations=100), [((), T.F32, None)])
>>> trip_bound(loop(capped)), exact_trips(loop(capped))
(100, False)
>>> unknown = trace_fn(lambda x: while_loop(lambda v: v < 10.0, lambda v: v * 2.0, x),
...                    [((), T.F32, None)])
>>> trip_bound(loop(unknown)) is None
True
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ..expr import Expr

__all__ = ["trip_bound", "exact_trips"]


def _constant(t):
    """The value of a constant node (or None)."""
    e = t.data if isinstance(t, Tensor) else t
    if isinstance(e, Expr) and e.op == "constant":
        return e.attrs["value"].item()
    return None


_COMPARE = {"less": lambda a, b: a < b, "less_equal": lambda a, b: a <= b,
            "greater": lambda a, b: a > b, "greater_equal": lambda a, b: a >= b,
            "not_equal": lambda a, b: a != b}
_FLIP = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
         "greater_equal": "less_equal", "not_equal": "not_equal"}
_MAX_TRIPS = 10_000_000


def exact_trips(e: Expr) -> bool:
    """Whether the loop's bound is its trip count: its condition is the counter's
    comparison alone (a ``fori_loop``), not and-ed with another (``max_iterations``)."""
    return e.fns[0].outputs[0].data.op in _COMPARE


def trip_bound(e: Expr):
    """A bound on the number of iterations of ``while`` node ``e`` known while tracing (or
    None): the condition compares a counter (a carry that starts at a constant and steps
    by a constant) with a constant, possibly and-ed with other conditions (as
    ``while_loop(..., max_iterations=N)`` does)."""
    c_fn, b_fn = e.fns
    return _bound_of(c_fn.outputs[0].data, e, c_fn, b_fn)


def _bound_of(pred, e, c_fn, b_fn):
    if pred.op == "logical_and":
        found = [_bound_of(a.data, e, c_fn, b_fn) for a in pred.args if isinstance(a, Tensor)]
        found = [n for n in found if n is not None]
        return min(found) if found else None
    if pred.op not in _COMPARE:
        return None
    a, b = pred.args
    params = {p.data.id: i for i, p in enumerate(c_fn.params)}
    op = pred.op
    if isinstance(b, Tensor) and b.data.id in params:
        a, b, op = b, a, _FLIP[op]
    if not (isinstance(a, Tensor) and a.data.id in params):
        return None
    j = params[a.data.id]
    limit, start = _constant(b), _constant(e.args[0][j])
    step = _step(b_fn, j)
    if limit is None or start is None or step is None or step == 0:
        return None
    # count in the counter's own type, as the loop will (0.1 added in f32 is not 0.1)
    dt = e.outs[j][1].dtype
    i, step, limit = np.asarray(start, dt), np.asarray(step, dt), np.asarray(limit, dt)
    n, cmp = 0, _COMPARE[op]
    with np.errstate(all="ignore"):
        while cmp(i, limit):
            nxt = np.asarray(i + step, dt)
            if nxt == i:
                return None  # the counter stopped moving (it saturated or lost precision)
            i, n = nxt, n + 1
            if n > _MAX_TRIPS:
                return None
    return n


def _step(b_fn, j):
    """The constant the body adds to carry ``j`` (None unless it is ``carry + c``)."""
    out = b_fn.outputs[j].data
    p = b_fn.params[j].data
    if out.op == "add":
        x, y = (v.data if isinstance(v, Tensor) else v for v in out.args)
        if x is p:
            return _constant(y)
        if y is p:
            return _constant(x)
    if out.op == "subtract":
        x, y = (v.data if isinstance(v, Tensor) else v for v in out.args)
        if x is p and _constant(y) is not None:
            return -_constant(y)
    return None
