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
import threading

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
primitive("debugging", "hook")

__all__ = ["cond", "while_loop", "fori_loop", "hook", "print_value", "print_expr", "all_gather", "all_reduce", "psum", "pmax", "pmin", "pmean",
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


_MISSING = object()


def cond(pred, on_true=_MISSING, on_false=_MISSING):
    """``on_true()`` if ``pred`` is non-zero, else ``on_false()``. Branches are callables
    (or values) returning the same container structure; shapes broadcast, types merge.

    Nx's multi-clause form takes one list of ``(pred, branch)`` clauses: the first clause
    whose predicate is non-zero runs; the last clause's predicate must be ``True`` (it
    runs when no other does). Compilers see one node (EXLA: one ``stablehlo.case``), and
    only the branch taken runs.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> f = jit(lambda x: nx.cond(nx.sum(x) > 0, lambda: x * 2, lambda: -x))
    >>> f(nx.tensor([1, 2])).tolist(), f(nx.tensor([-1, -2])).tolist()
    ([2, 4], [1, 2])
    >>> sign = jit(lambda x: nx.cond([(x < 0, lambda: -1), (x == 0, lambda: 0), (True, lambda: 1)]))
    >>> [sign(v).tolist() for v in (-3.0, 0.0, 5.0)]
    [-1, 0, 1]
    """
    if on_true is _MISSING and on_false is _MISSING:
        clauses = _clauses(pred)
    elif on_true is _MISSING or on_false is _MISSING:
        raise TypeError("cond: expected cond(pred, on_true, on_false) or cond(clauses) with a "
                        "list of (pred, branch) pairs, got only one branch")
    else:
        clauses = [(pred, on_true), (True, on_false)]
    preds, branches = [], []
    for p, fn in clauses[:-1]:
        if _is_expr(p):
            if p.shape != ():
                raise ValueError(f"cond: expected pred to be a scalar, got shape {p.shape}")
            preds.append(_as_pred(p))
            branches.append(fn)
            continue
        if isinstance(p, Tensor) and p.shape != ():
            raise ValueError(f"cond: expected pred to be a scalar, got shape {p.shape}")
        if bool(p):  # known now: this clause wins over every later one
            branches.append(fn)
            break
    else:
        branches.append(clauses[-1][1])
    if not preds:
        return _call(branches[-1])
    parent = _context.current()
    fns = [trace_fn(lambda b=b: _call(b), [], parent=parent) for b in branches]
    for fn in fns[1:]:
        if fn.tree != fns[0].tree:
            raise ValueError(f"cond: {'both' if len(fns) == 2 else 'all'} branches must return "
                             f"the same container structure, "
                             f"got {_tree_str(fns[0].tree)} and {_tree_str(fn.tree)}"
                             f"{_static_hint(fns[0].tree)}")
    templates = _unify_all([fn.outputs for fn in fns])
    for fn in fns:
        if any((o.shape, o.type) != (s, t) for o, (s, t, _) in zip(fn.outputs, templates)):
            with fn.scope:
                fn.outputs = [_coerce(o, s, t) for o, (s, t, _) in zip(fn.outputs, templates)]
            fn.finalize()
    outs = EXPR.multi("cond", templates, *preds, fns=tuple(fns))
    return tree_mod.unflatten(fns[0].tree, outs)


def _clauses(clauses):
    """The ``(pred, branch)`` pairs of the multi-clause form, checked."""
    if not isinstance(clauses, (list, tuple)) or not clauses:
        raise TypeError(f"cond: expected cond(pred, on_true, on_false) or cond(clauses) with a "
                        f"non-empty list of (pred, branch) pairs, got {clauses!r}")
    for i, c in enumerate(clauses):
        if not isinstance(c, (list, tuple)) or len(c) != 2:
            raise TypeError(f"cond: clause {i} must be a (pred, branch) pair, got {c!r}")
    last = clauses[-1][0]
    if last is not True:
        raise ValueError(f"cond: the last clause's predicate must be True (the branch taken "
                         f"when no other predicate holds), got {last!r}; add (True, branch)")
    return list(clauses)


def _unify_all(outputs):
    """The common template of every branch's leaves."""
    templates = [(o.shape, o.type, o.names) for o in outputs[0]]
    for outs in outputs[1:]:
        templates = _unify([Tensor(None, s, t, n) for s, t, n in templates], outs, "cond")
    return templates


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


# ----------------------------------------------------------------------------------------
# Seeing values: hook, print_value, print_expr
# ----------------------------------------------------------------------------------------
def hook(x, fn):
    """``x``, calling ``fn(value)`` on the host with the computed tensor when the program
    runs (Nx's ``hook/2``; JAX's ``jax.debug.callback``). Outside a defn ``fn`` is called
    at once. The call happens even when the result is not used, once per execution
    (every iteration inside a ``while_loop``; only when its branch runs inside a ``cond``),
    in program order on one device; under ``shard_jit``/``shard_map`` once per device with
    that device's shard, whose ``device_id`` is set. ``fn``'s return value is ignored,
    and for ``grad`` the hook is the identity. EXLA calls ``fn`` from XLA's thread through
    jaxlib's host-callback custom call (docs/debugging.md); the tensor it gets is on the
    NumPy backend.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> seen = []
    >>> f = jit(lambda x: nx.hook(x * 2, lambda v: seen.append(v.tolist())) + 1)
    >>> f(nx.tensor([1, 2])).tolist(), seen
    ([3, 5], [[2, 4]])
    """
    if not callable(fn):
        raise TypeError(f"hook: expected fn to be a callable taking the tensor, got "
                        f"{type(fn).__name__}")
    if isinstance(x, (tuple, list, dict)) or x is None:
        raise TypeError(f"hook: expected x to be a tensor (or a number), got "
                        f"{type(x).__name__}; hook each tensor of a container on its own, or "
                        f"use print_value, which takes containers")
    if not _context.tracing():
        fn(ops.to_tensor(x, "x"))
        return x
    t = EXPR.lift(x, "x")
    return EXPR.effect("hook", Tensor(None, t.shape, t.type, t.names), t, fn=fn)


_print_lock = threading.Lock()  # device threads print whole lines, not interleaved


class _Printer:
    """The hook ``print_value`` installs: prints the value with its label and device."""

    __slots__ = ("label",)

    def __init__(self, label):
        self.label = label

    def __call__(self, t):
        text = _labelled(self.label, t.device_id, repr(t))
        with _print_lock:
            print(text, flush=True)

    def __eq__(self, other):  # equal printers make equal programs (compiled once)
        return type(other) is _Printer and other.label == self.label

    def __hash__(self):
        return hash((_Printer, self.label))

    def __repr__(self):
        return f"print_value({self.label!r})" if self.label is not None else "print_value"


def _labelled(label, device, text):
    where = f"device {device}" if device is not None else None
    head = f"{label} ({where})" if label is not None and where else label or where
    text = f"{head}: {text}" if head is not None else text
    return text


def print_value(x, label=None):
    """``x``, printing its value each time the program runs (Nx's ``print_value/2``;
    JAX's ``jax.debug.print``): ``label: #Nx.Tensor<...>``, with ``(device N)`` added for
    the shards of a sharded program. A container prints each tensor, labelled with its
    path. See :func:`hook` for when and where it runs.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> jit(lambda x: nx.print_value(x + 1, label="x + 1") * 2)(nx.tensor([1, 2])).tolist()
    x + 1: #Nx.Tensor<
      s32[2]
      [2, 3]
    >
    [4, 6]
    """
    if label is not None and not isinstance(label, str):
        raise TypeError(f"print_value: expected label to be a string or None, got "
                        f"{type(label).__name__}")
    leaves, tree = tree_mod.flatten(x)
    if tree == tree_mod.LEAF:
        return hook(x, _Printer(label))
    paths = tree_mod.leaf_paths(tree, label or "")
    return tree_mod.unflatten(tree, [hook(v, _Printer(p)) for v, p in zip(leaves, paths)])


def print_expr(x, label=None):
    """``x``, printing its expression (the Expr graph computing it) while the defn is
    traced (Nx's ``print_expr/2``); outside a defn it prints the tensor. Nothing is
    printed when the compiled program runs.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> jit(lambda x: nx.print_expr(x * 2) + 1)(nx.tensor([1.0, 2.0])).tolist()
    #Nx.Tensor<
      f32[2]
    <BLANKLINE>
      Nx.Defn.Expr
      parameter a:0         f32[2]
      b = multiply a, 2.0   f32[2]
    >
    [3.0, 5.0]
    """
    if label is not None and not isinstance(label, str):
        raise TypeError(f"print_expr: expected label to be a string or None, got "
                        f"{type(label).__name__}")
    print(_labelled(label, None, repr(x)))
    return x
