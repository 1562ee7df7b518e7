"""What only makes sense inside a defn: control flow (the collectives, defined in
:mod:`nxpy.defn.sharding.collectives`, are re-exported here).

Both ``cond`` and ``while_loop`` also work eagerly (outside a defn), where they are
plain Python control flow.

>>> import nxpy as nx
>>> nx.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2), (0, 1))
(3, 8)
"""
from __future__ import annotations

import functools
import numbers
import sys
import threading

import numpy as np

from .. import _context, ops
from ..backend import default_backend
from ..ops import primitive
from .. import shape as S
from .. import types as T
from ..tensor import Tensor, shape_str
from . import tree as tree_mod
from .sharding.collectives import (all_gather, all_reduce, all_slice, all_to_all, axis_index,
                                   collective_broadcast, collective_permute, pmax, pmean, pmin,
                                   ppermute, psum, psum_scatter, reduce_scatter, shift)
from .expr import EXPR, Expr, trace_fn

primitive("control flow", "cond", "while")
primitive("debugging", "hook")
primitive("host", "runtime_call")

__all__ = ["cond", "while_loop", "fori_loop", "hook", "print_value", "print_expr",
           "runtime_call", "RuntimeCall", "all_gather", "all_reduce", "psum", "pmax", "pmin",
           "pmean",
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


def cond(pred, on_true=_MISSING, on_false=_MISSING, *operands):
    """``on_true()`` if ``pred`` is non-zero, else ``on_false()``. Branches are callables
    (or values) returning the same container structure; shapes broadcast, types merge.
    JAX's ``lax.cond(pred, true_fun, false_fun, *operands)``: with ``operands`` the
    branches are called with them (``on_true(*operands)``).

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
    >>> jit(lambda x, y: nx.cond(x > 0, lambda a, b: a + b, lambda a, b: a - b, x, y))(
    ...     nx.tensor(1.0), nx.tensor(2.0)).tolist()
    3.0
    """
    if operands:
        if on_true is _MISSING or on_false is _MISSING:
            raise TypeError("cond: operands follow both branches: cond(pred, on_true, "
                            "on_false, *operands)")
        for name, fn in (("on_true", on_true), ("on_false", on_false)):
            if not callable(fn):
                raise TypeError(f"cond: with operands, {name} must be a callable taking them, "
                                f"got {fn!r}")
        on_true, on_false = (functools.partial(on_true, *operands),
                             functools.partial(on_false, *operands))
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
        if not (isinstance(p, (Tensor, numbers.Real, np.bool_)) or hasattr(p, "dtype")):
            # read by its truth here: only a number, a tensor or an array, never a string
            raise TypeError(f"cond: expected pred to be a scalar tensor, a bool or a real "
                            f"number, got {p!r} ({type(p).__name__})")
        if bool(p):  # known now: this clause wins over every later one
            branches.append(fn)
            break
    else:
        branches.append(clauses[-1][1])
    if not preds:
        return _call(branches[-1])
    parent = _context.current()
    where = _caller()
    fns = [trace_fn(lambda b=b: _call(b), [], parent=parent) for b in branches]
    for fn in fns:
        fn.where = where  # for error messages about this cond (shard_map's check_vma)
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
    S.not_traced(n, "while_loop: max_iterations")
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
    for arg, v in (("lower", lower), ("upper", upper)):  # the loop index is an integer
        t = v.type if isinstance(v, Tensor) else None
        if (t is None and S.as_int(v) is None) or (t is not None and (not t.is_int or v.shape)):
            raise TypeError(f"fori_loop: expected {arg} to be an integer or a scalar integer "
                            f"tensor, got {v!r} ({type(v).__name__})")

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


# ----------------------------------------------------------------------------------------
# Calling the host: runtime_call
# ----------------------------------------------------------------------------------------
def identity_key(v):
    """``v`` as part of a hashable identity: itself when hashable, else its id (the
    owner of the identity holds ``v``, so the id is never another object's)."""
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))
    return v


class RuntimeCall:
    """What a ``runtime_call`` node runs (its ``call`` attribute): ``fn`` on the input
    container rebuilt from its tensors (``fn(tensors, static)`` when ``static`` was
    given), its result checked against the output templates and returned as one NumPy
    array per template (exactly its shape and dtype, C-contiguous). Every path (eagerly,
    the Evaluator, EXLA's host callback) runs it, so they all check alike."""

    __slots__ = ("fn", "static", "in_tree", "out_tree", "templates", "key")

    def __init__(self, fn, static, in_tree, out_tree, templates):
        self.fn, self.static, self.in_tree, self.out_tree = fn, static, in_tree, out_tree
        self.templates = tuple(templates)  # (shape, type, names) per output leaf
        # equal calls make equal programs (one registration, one compile)
        self.key = (identity_key(fn), identity_key(static), in_tree, out_tree, self.templates)

    def __eq__(self, other):
        return type(other) is RuntimeCall and other.key == self.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return f"runtime_call({getattr(self.fn, '__qualname__', type(self.fn).__name__)})"

    def __call__(self, leaves) -> list:
        tensors = tree_mod.unflatten(self.in_tree, list(leaves))
        res = self.fn(tensors) if self.static is None else self.fn(tensors, self.static)
        return self.check(res)

    def check(self, res) -> list:
        """``res`` (what ``fn`` returned) as one array per template, or the error naming
        what was expected and what was given."""
        leaves, tree = tree_mod.flatten(res)
        if tree != self.out_tree:
            raise ValueError(f"runtime_call: expected fn to return the structure of out, "
                             f"{tree_mod.tree_str(self.out_tree)}, got "
                             f"{tree_mod.tree_str(tree)}")
        paths = tree_mod.leaf_paths(tree, "output")
        return [_checked(v, p, *t) for v, p, t in zip(leaves, paths, self.templates)]


def _checked(v, path, shape, type, names):
    want = f"{type}{shape_str(shape)}"
    if isinstance(v, Tensor):
        arr, got = v.to_numpy(), v.type
    elif isinstance(v, (np.ndarray, np.generic)):
        arr = np.asarray(v)
        try:
            got = T.from_dtype(arr.dtype)
        except KeyError:
            raise TypeError(f"runtime_call: expected {path} to be {want} (its template in "
                            f"out), got a NumPy array of dtype {arr.dtype}") from None
    elif isinstance(v, numbers.Number) and shape == ():  # a Python scalar takes the type
        arr, got = np.asarray(v, type.dtype), type
    else:
        raise TypeError(f"runtime_call: expected {path} to be {want} (its template in out): "
                        f"a tensor or NumPy array, got {_type_name(v)}")
    if got != type or arr.shape != tuple(shape):
        raise TypeError(f"runtime_call: expected {path} to be {want} (its template in out), "
                        f"got {got}{shape_str(arr.shape)}")
    return arr if arr.flags.c_contiguous else arr.copy()  # (ascontiguousarray makes 0-d 1-d)


def _type_name(v) -> str:
    return type(v).__name__


def runtime_call(out, tensors, fn, static=None):
    """Calls ``fn`` on the host with the values of ``tensors`` when the program runs and
    returns its result, which must match the templates ``out`` (Nx's ``runtime_call/4``;
    JAX's ``jax.pure_callback``).

    ``out`` is a tensor or template (``nx.template(shape, type)``; any tensor stands for
    its own shape, type and names) or a container of them: ``fn`` must return the same
    structure, each leaf a tensor or NumPy array of exactly that shape and type (a Python
    number stands for a scalar of its template's type); anything else raises, naming the
    expected and the given shape and type. ``tensors`` is a tensor or container of
    tensors; ``fn(tensors)`` receives that container with host tensors in it (on EXLA:
    NumPy-backend tensors), or ``fn(tensors, static)`` when ``static`` is given (Nx's
    static argument, say a dict of options; it is not traced).

    ``fn`` should be pure: it runs when the result is needed, once per execution (every
    iteration of a ``while_loop``; only when its branch runs in a ``cond``); a result not
    used is not computed. Under ``shard_map`` it runs on every device with that device's
    shard (``device_id`` set) and returns that device's shard. Under ``shard_jit`` (the
    global view) it sees the global values: every device calls it with the whole
    (gathered) inputs and the result is replicated. It has no gradient: ``grad`` through
    it raises (wrap its inputs in ``stop_grad`` to treat the result as a constant, or give
    it one with ``custom_grad``). EXLA calls ``fn`` from XLA's thread through jaxlib's
    host-callback custom call (docs/debugging.md); an exception in ``fn`` fails the run
    and reaches the caller as itself. Outside a defn ``fn`` is called at once with the
    tensors as given.

    >>> import numpy as np
    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> def f(x):
    ...     y = nx.runtime_call(nx.template((3,), "f32"), x, lambda t: np.cumsum(t.to_numpy()))
    ...     return y * 2
    >>> jit(f, compiler="exla")(nx.tensor([1.0, 2.0, 3.0])).tolist()
    [2.0, 6.0, 12.0]
    >>> q, r = nx.runtime_call((nx.template((), "s32"), nx.template((), "s32")),
    ...                        [nx.tensor(7), 2], lambda ts, k: divmod(int(ts[0]) * k, 4), static=3)
    >>> int(q), int(r)
    (5, 1)
    """
    if not callable(fn):
        raise TypeError(f"runtime_call: expected fn to be a callable taking the tensors, "
                        f"got {_type_name(fn)}")
    out_leaves, out_tree = tree_mod.flatten(out)
    for v, p in zip(out_leaves, tree_mod.leaf_paths(out_tree, "out")):
        if not isinstance(v, Tensor):
            raise TypeError(f"runtime_call: expected {p} to be a template (nx.template(shape, "
                            f"type) or a tensor), got {_type_name(v)}")
    if not out_leaves:
        raise ValueError(f"runtime_call: expected out to hold at least one template, got "
                         f"{tree_mod.tree_str(out_tree)}")
    templates = [(tuple(t.shape), t.type, t.names) for t in out_leaves]
    leaves, in_tree = tree_mod.flatten(tensors)
    paths = tree_mod.leaf_paths(in_tree, "tensors")
    call = RuntimeCall(fn, static, in_tree, out_tree, templates)
    if not _context.tracing():
        args = [ops.to_tensor(v, p) for v, p in zip(leaves, paths)]
        backend = default_backend()
        res = [backend.from_numpy(a, t, n) for a, (_, t, n) in zip(call(args), templates)]
        return tree_mod.unflatten(out_tree, res)
    args = [EXPR.lift(v, p) for v, p in zip(leaves, paths)]
    return tree_mod.unflatten(out_tree, EXPR.multi("runtime_call", templates, args, call=call))
