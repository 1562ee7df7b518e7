"""What only makes sense inside a defn: control flow (the collectives, defined in
:mod:`nxpy.defn.collectives`, are re-exported here).

Both ``cond`` and ``while_loop`` also work eagerly (outside a defn), where they are
plain Python control flow.

>>> import nxpy as nx
>>> nx.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2), (0, 1))
(3, 8)
"""
from __future__ import annotations

import sys

from .. import _context, ops
from ..ops import primitive
from .. import shape as S
from .. import types as T
from ..tensor import Tensor
from . import tree as tree_mod
from .collectives import (all_gather, all_reduce, all_slice, all_to_all, axis_index,
                          collective_broadcast, collective_permute, pmax, pmean, pmin,
                          ppermute, psum, psum_scatter, reduce_scatter, shift)
from .expr import EXPR, Expr, trace_fn

primitive("control flow", "cond", "while")

__all__ = ["cond", "while_loop", "fori_loop", "all_gather", "all_reduce", "psum", "pmax", "pmin", "pmean",
           "reduce_scatter", "psum_scatter", "all_to_all", "collective_permute", "ppermute",
           "shift", "collective_broadcast", "axis_index", "all_slice"]


def _is_expr(x):
    return isinstance(x, Tensor) and isinstance(x.data, Expr)


def _call(branch):
    return branch() if callable(branch) else branch


def _unify(leaves_a, leaves_b, what):
    """Common template of two branches' leaves: broadcast shapes, merged types."""
    out = []
    for i, (a, b) in enumerate(zip(leaves_a, leaves_b)):
        try:
            shape = S.broadcast(a.shape, b.shape, op=what)
        except ValueError:
            raise ValueError(f"{what}: output {i} has shape {a.shape} in one branch and "
                             f"{b.shape} in the other") from None
        try:  # names merge as in a binary op; conflicting names are dropped
            names = S.broadcast_names(shape, a, b)
        except ValueError:
            names = None
        out.append((shape, T.merge(a.type, b.type), names))
    return out


def _coerce(t, shape, type):
    t = ops.as_type(t, type)
    return ops.broadcast(t, shape) if t.shape != shape else t


def cond(pred, on_true, on_false):
    """``on_true()`` if ``pred`` is non-zero, else ``on_false()``. Branches are callables
    (or values) returning the same container structure; shapes broadcast, types merge.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> f = jit(lambda x: nx.cond(nx.sum(x) > 0, lambda: x * 2, lambda: -x))
    >>> f(nx.tensor([1, 2])).tolist(), f(nx.tensor([-1, -2])).tolist()
    ([2, 4], [1, 2])
    """
    if not _is_expr(pred):
        if isinstance(pred, Tensor) and pred.shape != ():
            raise ValueError(f"cond: expected pred to be a scalar, got shape {pred.shape}")
        return _call(on_true) if bool(pred) else _call(on_false)
    if pred.shape != ():
        raise ValueError(f"cond: expected pred to be a scalar, got shape {pred.shape}")
    parent = _context.current()
    t_fn = trace_fn(lambda: _call(on_true), [], parent=parent)
    f_fn = trace_fn(lambda: _call(on_false), [], parent=parent)
    if t_fn.tree != f_fn.tree:
        raise ValueError(f"cond: both branches must return the same container structure, "
                         f"got {_tree_str(t_fn.tree)} and {_tree_str(f_fn.tree)}"
                         f"{_static_hint(t_fn.tree)}")
    templates = _unify(t_fn.outputs, f_fn.outputs, "cond")
    for fn in (t_fn, f_fn):
        if any((o.shape, o.type) != (s, t) for o, (s, t, _) in zip(fn.outputs, templates)):
            with fn.scope:
                fn.outputs = [_coerce(o, s, t) for o, (s, t, _) in zip(fn.outputs, templates)]
            fn.finalize()
    outs = EXPR.multi("cond", templates, _as_pred(pred), fns=(t_fn, f_fn))
    return tree_mod.unflatten(t_fn.tree, outs)


def _tree_str(t):
    return tree_mod.tree_str(t)


def _static_hint(tree):
    """For structures with namedtuples/dataclasses: their static fields must match too."""
    if not tree_mod.has_fields(tree):
        return ""
    return (" (fields of namedtuples and dataclasses that hold no tensor or number are "
            "static data, part of the structure)")


def _as_pred(p):
    return p if p.type.is_pred else ops.not_equal(p, 0)


def while_loop(cond_fun, body_fun, state, *, max_iterations=None):
    """Runs ``state = body_fun(state)`` while ``cond_fun(state)`` is non-zero.

    ``state`` is a tensor or a container (tuple, list, dict, namedtuple, dataclass, or a
    registered class) of tensors and numbers; the body must return the same structure
    (and the same static fields) with the same shapes and types.
    ``max_iterations=N`` stops the loop after at most ``N`` iterations (a counter is kept
    beside the state); it also makes the loop differentiable in reverse mode (see
    :func:`nxpy.defn.grad`), as loops that count to a constant already are.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> f = jit(lambda n: nx.while_loop(lambda s: s["i"] < n,
    ...                                 lambda s: {"i": s["i"] + 1, "acc": s["acc"] * 2},
    ...                                 {"i": 0, "acc": 1.0}))
    >>> f(5)["acc"].tolist()
    32.0
    """
    for arg, f in (("cond_fun", cond_fun), ("body_fun", body_fun)):
        if not callable(f):
            raise TypeError(f"while_loop: expected {arg} to be a callable, got {f!r}")
    if max_iterations is not None:
        return _capped_while(cond_fun, body_fun, state, max_iterations)
    leaves, tree = tree_mod.flatten(state)
    if not _context.tracing():
        return _eager_while(cond_fun, body_fun, state, leaves, tree)
    where = _caller()
    init = [EXPR.lift(x, f"state leaf {i}") for i, x in enumerate(leaves)]
    templates = [(t.shape, t.type, t.names) for t in init]
    parent = _context.current()

    def check_pred(p):
        p = ops.to_tensor(p, "the while_loop condition")
        if p.shape != ():
            raise ValueError(f"while_loop: the condition must return a scalar, got shape {p.shape}")
        return _as_pred(p)

    c_fn = trace_fn(cond_fun, templates, tree=tree, parent=parent, wrap_output=check_pred)

    def check_body(out):
        return _check_body_output(out, tree, templates)

    b_fn = trace_fn(body_fun, templates, tree=tree, parent=parent, wrap_output=check_body)
    b_fn.where = f"{where}, body {getattr(body_fun, '__name__', 'function')}"
    outs = EXPR.multi("while", templates, init, fns=(c_fn, b_fn))
    return tree_mod.unflatten(tree, outs)


def _caller() -> str:
    """``file:line`` of the first frame outside nxpy (where a loop was written)."""
    f = sys._getframe(1)
    while f is not None and f.f_globals.get("__name__", "").startswith("nxpy."):
        f = f.f_back
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "unknown"


def _capped_while(cond_fun, body_fun, state, n):
    if S.as_int(n) is None or S.as_int(n) < 0:
        raise ValueError(f"while_loop: max_iterations must be a non-negative integer, got {n!r}")
    n = S.as_int(n)

    def capped_cond(s):
        return ops.logical_and(ops.less(s[1], n), cond_fun(s[0]))

    def counted_body(s):
        return body_fun(s[0]), s[1] + 1

    return while_loop(capped_cond, counted_body, (state, 0))[0]


def fori_loop(lower, upper, body_fun, init_val):
    """``val = body_fun(i, val)`` for ``i`` from ``lower`` to ``upper - 1`` (JAX's
    ``fori_loop``); with integer bounds the loop is differentiable in reverse mode.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> jit(lambda x: nx.fori_loop(0, 3, lambda i, v: v * 2 + i, x))(nx.tensor(1.0)).tolist()
    12.0
    """
    if not callable(body_fun):
        raise TypeError(f"fori_loop: expected body_fun to be a callable, got {body_fun!r}")

    def cond_fun(s):
        return ops.less(s[0], upper)

    def body(s):
        return s[0] + 1, body_fun(s[0], s[1])

    return while_loop(cond_fun, body, (lower, init_val))[1]


def _check_body_output(out, tree, templates):
    """The body's result, checked against the state: the same structure, and each leaf
    with a template keeps its shape and (after safe promotion) its type."""
    out_leaves, out_tree = tree_mod.flatten(out)
    if out_tree != tree:
        raise ValueError(f"while_loop: the body must return the state's structure "
                         f"{_tree_str(tree)}, got {_tree_str(out_tree)}{_static_hint(tree)}")
    fixed = list(out_leaves)
    for i, (o, tmpl) in enumerate(zip(out_leaves, templates)):
        if tmpl is None:  # an eager Python number in the state: anything goes
            continue
        s, t = tmpl[0], tmpl[1]
        o = ops.full((), o, type=t) if isinstance(o, (int, float)) else \
            ops.to_tensor(o, f"body output {i}")
        if o.shape != s:
            raise ValueError(f"while_loop: state leaf {i} has shape {s} but the body "
                             f"returned shape {o.shape}")
        if o.type != t:
            if T.merge(o.type, t) != t:
                raise TypeError(f"while_loop: state leaf {i} has type {t} but the body "
                                f"returned {o.type}; convert it with nx.as_type")
            o = ops.as_type(o, t)
        fixed[i] = o
    if all(a is b for a, b in zip(fixed, out_leaves)):
        return out
    return tree_mod.unflatten(tree, fixed)


def _eager_while(cond_fun, body_fun, state, leaves, tree):
    """``while_loop`` outside a defn: Python control flow, with the checks the traced
    version makes (same structure; tensor leaves keep their shapes and types)."""
    templates = [(x.shape, x.type) if isinstance(x, Tensor) else None for x in leaves]
    while True:
        p = cond_fun(state)
        if isinstance(p, Tensor) and p.shape != ():
            raise ValueError(f"while_loop: the condition must return a scalar, got shape {p.shape}")
        if not bool(p):
            return state
        state = body_fun(state)
        state = _check_body_output(state, tree, templates)
