"""Automatic batching: ``vmap`` (JAX's ``jax.vmap``).

``vmap(fun, in_axes, out_axes)(*args)`` computes ``fun`` on each example of a batch at
once: ``in_axes`` says along which axis of each argument the examples lie (``None``: the
argument is the same for every example), ``out_axes`` where the batch goes in each
result. Like ``grad``, it is a transform of the traced Expr graph into another Expr graph:
``fun`` is traced once on one example's shapes, then each node is rebuilt here with its
op's batching rule (:mod:`nxpy.defn.transforms.batch_rules`), and nodes whose arguments are all
unbatched are copied as they are. An op without a rule (or whose rule declines, as
``dynamic_slice`` does for starts that differ between examples) is batched by a
``while_loop`` over the examples that slices each batched input, runs the op on one
example and writes its result into the batch: correct for every op, only slower.
:func:`batch_paths` counts which path each op took. The result is ordinary nodes, so every
compiler runs it, and it composes with ``jit``, ``grad`` and itself. Called outside a
defn, ``vmap(fun)`` jits itself.

>>> import nxpy as nx
>>> from nxpy.defn import vmap
>>> vmap(lambda x, y: nx.dot(x, y), in_axes=(0, None))(
...     nx.tensor([[1.0, 2.0], [3.0, 4.0]]), nx.tensor([1.0, 10.0])).tolist()
[21.0, 43.0]
>>> vmap(lambda x: x * 2, out_axes=1)(nx.iota((2, 3))).tolist()
[[0, 6], [2, 8], [4, 10]]
>>> vmap(lambda x, y: x + y)(nx.iota((2, 3)), nx.iota((3, 3)))  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
ValueError: vmap: the mapped arguments have different batch sizes: args[0] has 2 along axis
0 (shape (2, 3)), args[1] has 3 along axis 0 (shape (3, 3))
"""
from __future__ import annotations

import functools
import numbers

import numpy as np

from ... import _context
from ... import ops as O
from ... import shape as S
from ...ops.core import BATCH_RULES
from ...tensor import Tensor, shape_str
from . import batch_rules  # also registers the base op set's rules
from .. import tree as tree_mod
from ..core import Transform
from ..expr import EXPR, Fn, Scope, trace_fn
from .checkpoint import emit as emit_checkpoint
from .grad import Backprop, custom_grad, trip_bound
from .grad_rules import zeros
from ..kernel import cond, while_loop

__all__ = ["vmap", "batch_paths", "BatchContext"]

#: op -> {"rule": n, "fallback": n}: how many nodes of each op vmap batched by its rule
#: and by the loop (see :func:`batch_paths`)
_PATHS: dict = {}


def batch_paths() -> dict:
    """``{op: {"rule": n, "fallback": n}}``: how many nodes of each op ``vmap`` has
    batched with the op's rule and with the generic loop over the examples, since the
    process started (nodes with no batched input are copied and not counted). A copy.

    >>> import nxpy as nx
    >>> from nxpy.defn import vmap
    >>> before = batch_paths().get("dynamic_slice", {}).get("fallback", 0)
    >>> rows, starts = nx.tensor([[1, 2, 3], [4, 5, 6]]), nx.tensor([0, 1])
    >>> vmap(lambda r, i: nx.slice(r, [i], [2]))(rows, starts).tolist()  # starts differ: the loop
    [[1, 2], [5, 6]]
    >>> batch_paths()["dynamic_slice"]["fallback"] - before
    1
    """
    return {op: dict(v) for op, v in _PATHS.items()}


def _count(op, path):
    _PATHS.setdefault(op, {"rule": 0, "fallback": 0})[path] += 1


class BatchContext:
    """What a batching rule may ask: ``size``, the number of examples."""

    def __init__(self, size):
        self.size = size


# ----------------------------------------------------------------------------------------
# The engine
# ----------------------------------------------------------------------------------------
def _take(x, d, i):
    """Example ``i`` (a scalar tensor) of ``x`` batched along axis ``d``."""
    starts = [0] * x.rank
    starts[d] = i
    lengths = list(x.shape)
    lengths[d] = 1
    one = O.slice(x, starts, lengths)
    return O.reshape(one, tuple(s for k, s in enumerate(x.shape) if k != d))


def _results(e) -> list:
    """``(shape, type, names)`` of each of node ``e``'s per-example results."""
    return e.outs if e.outs is not None else [(e.shape, e.type, e.names)]


def _loop(ctx, e, copier, dims):
    """Node ``e`` batched by a loop over the examples; its results, batched along 0."""
    inputs = {x.id: x for x in e.tensor_args()}
    for f in e.fns:
        inputs.update((c.id, c) for c in f.captures)
    batched = [(x, dims[x.id]) for x in inputs.values() if dims.get(x.id) is not None]
    outs = _results(e)
    bufs = [zeros((ctx.size,) + tuple(s), t) for s, t, _ in outs]
    if ctx.size == 0:  # no example to slice
        res = [(b, 0) for b in bufs]
        return res if e.outs is not None else res[0]

    def body(state):
        i = state[0]
        env = dict(copier.env)
        env.update((x.id, _take(copier.fwd(x), d, i)) for x, d in batched)
        new = Backprop(None, env, keep=True).copy(e)
        if e.outs is None:
            results = [new]
        else:
            results = [EXPR.node("elem", O.template(s, t, n), new, index=k)
                       for k, (s, t, n) in enumerate(e.outs)]
        return (i + 1,) + tuple(O.put_slice(b, [i] + [0] * y.rank, O.new_axis(y, 0))
                                for b, y in zip(state[1:], results))

    done = while_loop(lambda s: s[0] < ctx.size, body, (0,) + tuple(bufs))
    # the buffers are unnamed: the example's names, as the op gave them
    res = [(O.rename(b, (None,) + tuple(n)) if n is not None else b, 0)
           for b, (_, _, n) in zip(done[1:], outs)]
    return res if e.outs is not None else res[0]


def _check_result(e, res, size):
    """A rule's result: of the per-example shape and type with the batch along its axis."""
    pairs = res if e.outs is not None else [res]
    outs = _results(e)
    for (v, d), (s, t, _) in zip(pairs, outs):
        ok = isinstance(v, Tensor) and (d is None or 0 <= d < v.rank and v.shape[d] == size)
        if not ok or tuple(n for k, n in enumerate(v.shape) if k != d) != tuple(s) or v.type != t:
            got = f"{v.type}{shape_str(v.shape)} batched along {d}" if isinstance(v, Tensor) \
                else repr(v)
            raise ValueError(f"vmap: the batching rule of {e.op!r} returned {got}, expected "
                             f"{t}{shape_str(tuple(s))} with a batch of {size} along one axis "
                             f"(or, with None, unbatched)")


def batch_fn(fn: Fn, inputs, size, captures=None, count=True):
    """``fn`` (traced on one example) batched into the current scope: ``inputs`` is one
    ``(value, batch axis or None)`` per parameter, ``captures`` the same for the outer
    nodes it reads (by node id; others are read as they are); returns one pair per
    output."""
    ctx = BatchContext(size)
    captures = captures or {}
    env = {k: v for k, (v, _) in captures.items()}
    env.update((p.data.id, v) for p, (v, _) in zip(fn.params, inputs))
    copier = Backprop(None, env, keep=True)
    vals = copier.env  # node id -> value here (for a node with several results: a list)
    dims = {k: d for k, (_, d) in captures.items()}
    dims.update((p.data.id, d) for p, (_, d) in zip(fn.params, inputs))
    for e in fn.nodes:
        if e.op == "parameter":
            continue
        if e.op == "elem" and isinstance(dims.get(e.args[0].id), list):
            k = e.attrs["index"]
            vals[e.id], dims[e.id] = vals[e.args[0].id][k], dims[e.args[0].id][k]
            continue
        xs = e.tensor_args()
        xdims = [dims.get(x.id) for x in xs]
        captured = any(dims.get(c.id) is not None for f in e.fns for c in f.captures)
        if not captured and all(d is None for d in xdims):
            vals[e.id], dims[e.id] = copier.copy(e), None
            continue
        control = _CONTROL.get(e.op)
        if control is not None:
            caps = {c.id: (copier.fwd(c), dims.get(c.id)) for f in e.fns for c in f.captures}
            res = control(ctx, e, copier, dims, caps, count)
        else:
            rule = None if captured else BATCH_RULES.get(e.op)
            res = rule(ctx, e, [copier.fwd(x) for x in xs], xdims) if rule else NotImplemented
        if res is NotImplemented:
            res = _loop(ctx, e, copier, dims)
            if count:
                _count(e.op, "fallback")
        else:
            _check_result(e, res, size)
            if count:
                _count(e.op, "rule")
        if e.outs is not None:
            vals[e.id], dims[e.id] = [v for v, _ in res], [d for _, d in res]
        else:
            vals[e.id], dims[e.id] = res
    return [(copier.fwd(o.data), dims.get(o.data.id)) for o in fn.outputs]


# ----------------------------------------------------------------------------------------
# Control flow: batched sub-functions
# ----------------------------------------------------------------------------------------
def _where_batched(ctx, p, like):
    """Predicate ``p`` (batched along 0, one per example) shaped to select on ``like``."""
    return O.reshape(p, (ctx.size,) + (1,) * (like.rank - 1))


def _cond(ctx, e, copier, dims, caps, count):
    preds = e.tensor_args()
    pdims = [dims.get(p.id) for p in preds]
    if all(d is None for d in pdims):  # one branch for the whole batch: batch each branch
        def branch(f):
            return lambda: tuple(batch_rules.to_front(ctx, v, d)
                                 for v, d in batch_fn(f, [], ctx.size, caps, count))
        clauses = [(copier.fwd(p), branch(f)) for p, f in zip(preds, e.fns)]
        outs = cond(clauses + [(True, branch(e.fns[-1]))])
        return [(o, 0) for o in outs]
    # examples take different branches: run them all and select (as JAX does)
    results = [[batch_rules.to_front(ctx, v, d) for v, d in batch_fn(f, [], ctx.size, caps, count)]
               for f in e.fns]
    chosen = results[-1]
    for p, d, outs in reversed(list(zip(preds, pdims, results))):
        p = batch_rules.to_front(ctx, copier.fwd(p), d)
        chosen = [O.select(_where_batched(ctx, p, o), o, c) for o, c in zip(outs, chosen)]
    return [(o, 0) for o in chosen]


def _while(ctx, e, copier, dims, caps, count):
    c_fn, b_fn = e.fns
    init = [(copier.fwd(x), dims.get(x.id)) for x in e.tensor_args()]
    batched = [d is not None for _, d in init]
    # which carries vary between examples: those that start so, or that the body makes
    # so (found by batching the body on trial, in a scope nothing reads); a predicate
    # that varies makes every carry vary (each example stops on its own)
    while True:
        start = [batch_rules.to_front(ctx, x, d) if b else x for (x, d), b in zip(init, batched)]
        ins = [(x, 0 if b else None) for x, b in zip(start, batched)]
        with Scope(_context.current()):
            p_dim = batch_fn(c_fn, ins, ctx.size, caps, False)[0][1]
            new = batch_fn(b_fn, ins, ctx.size, caps, False)
        grown = [b or d is not None or p_dim is not None for b, (_, d) in zip(batched, new)]
        if grown == batched:
            break
        batched = grown
    varying = p_dim is not None
    # a loop each example runs at most n times runs at most n times batched: an unbatched
    # counter keeps that bound visible (to grad) when the predicate varies
    bound = trip_bound(e) if varying else None
    k = len(start)

    def carried(state):
        return [(x, 0 if b else None) for x, b in zip(state[:k], batched)]

    def pred(state):
        p, d = batch_fn(c_fn, carried(state), ctx.size, caps, count)[0]
        p = p if d is None else O.any(p)
        return p if bound is None else O.logical_and(state[k] < bound, p)

    def body(state):
        state = list(state)
        out = [batch_rules.to_front(ctx, v, d) if b else v
               for (v, d), b in zip(batch_fn(b_fn, carried(state), ctx.size, caps, count), batched)]
        if varying:  # examples whose predicate no longer holds keep their carries
            p, d = batch_fn(c_fn, carried(state), ctx.size, caps, False)[0]
            p = batch_rules.to_front(ctx, p, d)
            out = [O.select(_where_batched(ctx, p, o), o, s) for o, s in zip(out, state)]
        return tuple(out) + ((state[k] + 1,) if bound is not None else ())

    outs = while_loop(pred, body, tuple(start) + ((0,) if bound is not None else ()))
    return [(o, 0 if b else None) for o, b in zip(outs[:k], batched)]


def _custom_grad(ctx, e, copier, dims, caps, count):
    # the batched value, whose gradient is the batched gradient function (the loop would
    # hide it inside a while body, where grad no longer sees it)
    out, *inputs = (batch_rules.to_front(ctx, copier.fwd(x), dims.get(x.id))
                    for x in e.tensor_args())

    def grad_fun(g):
        return [batch_rules.to_front(ctx, c, d)
                for c, d in batch_fn(e.fns[0], [(g, 0)], ctx.size, caps, count)]

    jvp = e.attrs.get("jvp")
    if jvp == "rule":  # the custom tangent, batched as the gradient function is
        def jvp(*a):
            ((t, d),) = batch_fn(e.fns[1], [(v, 0) for v in a], ctx.size, caps, count)
            return batch_rules.to_front(ctx, t, d)
    return custom_grad(out, inputs, grad_fun, jvp=jvp, summed=e.attrs.get("summed")), 0


def _checkpoint(ctx, e, copier, dims, caps, count):
    # the batched function, checkpointed as the function was
    xs = [batch_rules.to_front(ctx, copier.fwd(x), dims.get(x.id)) for x in e.tensor_args()]

    def batched(*vs):
        return [batch_rules.to_front(ctx, v, d)
                for v, d in batch_fn(e.fns[0], [(v, 0) for v in vs], ctx.size, caps, count)]
    body = trace_fn(batched, [(x.shape, x.type, x.names) for x in xs],
                    parent=_context.current())
    outs = emit_checkpoint(body, xs, e.attrs["policy"], e.attrs["prevent_cse"])
    return [(o, 0) for o in outs]


def _call(ctx, e, copier, dims, caps, count):
    # the body batched in place
    return batch_fn(e.fns[0], [(copier.fwd(x), dims.get(x.id)) for x in e.tensor_args()],
                    ctx.size, caps, count)


#: ops whose sub-functions vmap batches itself (counted as rules)
_CONTROL = {"cond": _cond, "while": _while, "custom_grad": _custom_grad,
            "checkpoint": _checkpoint, "call": _call}


# ----------------------------------------------------------------------------------------
# The API
# ----------------------------------------------------------------------------------------
def _is_axis(v, subtree=None):
    return v is None or S.as_int(v) is not None and not isinstance(v, bool)


def _axes_for(spec, tree, where, what):
    """One axis (or None) per leaf of ``tree`` from the prefix tree ``spec``."""
    def is_leaf(v, sub):
        if _is_axis(v):
            return True
        if not isinstance(v, (tuple, list, dict)) and not tree_mod.is_container(v):
            raise TypeError(f"expected an int, None or a container of them, got {v!r}")
        return False
    try:
        return tree_mod.match_prefix(spec, tree, is_leaf, where, what)
    except (ValueError, TypeError) as err:
        raise type(err)(f"vmap: {err}") from None


def _normalize(axis, rank, what, where, shape):
    a = S.as_int(axis)
    if not -rank <= a < rank:
        raise ValueError(f"vmap: {what} for {where} is {axis}, out of range for a value of "
                         f"rank {rank - (what == 'out_axes')}{shape}: expected an axis in "
                         f"[{-rank}, {rank})")
    return a % rank


class _Vmap(Transform):
    """What ``vmap(fun, in_axes, out_axes)`` returns."""

    def __init__(self, fun, in_axes, out_axes):
        if not callable(fun):
            raise TypeError(f"vmap: expected a function to batch, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        if isinstance(in_axes, list):
            in_axes = tuple(in_axes)  # a list of per-argument axes reads as JAX's tuple
        self.fun, self.in_axes, self.out_axes = fun, in_axes, out_axes

    def _passes_through(self, arg, n_args=None):
        # a positional with in_axes None (keyword arguments are batched, as in JAX)
        return (isinstance(self.in_axes, tuple) and isinstance(arg, int)
                and len(self.in_axes) == n_args and self.in_axes[arg] is None)

    def _traced(self, *args, **kwargs):
        if kwargs:  # batched along their axis 0, as in JAX (in_axes is for positionals)
            for k, v in kwargs.items():
                if not isinstance(v, (Tensor, np.ndarray, numbers.Number)):
                    raise TypeError(f"vmap: keyword argument {k} must be a tensor, array or "
                                    f"number (keyword arguments are batched along axis 0), "
                                    f"got {type(v).__name__}: close over it instead")
            n, fun = len(args), self.fun
            in_axes = self.in_axes if isinstance(self.in_axes, tuple) else (self.in_axes,) * n
            keys = tuple(kwargs)
            with_kw = _Vmap(lambda *a: fun(*a[:n], **dict(zip(keys, a[n:]))),
                            in_axes + (0,) * len(keys), self.out_axes)
            return with_kw._traced(*args, *kwargs.values())
        if not args:
            raise TypeError("vmap: the function needs at least one positional argument to "
                            "batch over")
        fixed = {i: a for i, a in enumerate(args) if self._passes_through(i, len(args))
                 and tree_mod.is_plain(a)}
        if fixed and len(fixed) < len(args):  # plain values with in_axes None: as they are
            n, fun = len(args), self.fun

            def bound(*rest):
                it = iter(rest)
                return fun(*[fixed[i] if i in fixed else next(it) for i in range(n)])
            return _Vmap(bound, tuple(a for i, a in enumerate(self.in_axes) if i not in fixed),
                         self.out_axes)._traced(*[a for i, a in enumerate(args)
                                                  if i not in fixed])
        if isinstance(self.in_axes, tuple) and len(self.in_axes) != len(args):
            raise ValueError(f"vmap: in_axes has {len(self.in_axes)} entries, one per "
                             f"positional argument, but the function was called with "
                             f"{len(args)} argument(s)")
        leaves, tree = tree_mod.flatten(tuple(args))
        axes = _axes_for(self.in_axes, tree, "args", "in_axes")
        leaves = [EXPR.lift(O.to_tensor(x, where)) for x, (where, _) in zip(leaves, axes)]
        mapped, templates, size = [], [], None
        for x, (where, a) in zip(leaves, axes):
            if a is not None:
                a = _normalize(a, x.rank, "in_axes", where, f" (shape {tuple(x.shape)})")
                mapped.append((where, a, x))
            templates.append((tuple(d for k, d in enumerate(x.shape) if k != a), x.type,
                              tuple(n for k, n in enumerate(x.names) if k != a)
                              if a is not None else x.names))
        if not mapped:
            raise ValueError("vmap: in_axes maps no argument (every one is None): at least "
                             "one argument must have a batch axis")
        sizes = {x.shape[a] for _, a, x in mapped}
        if len(sizes) > 1:
            told = ", ".join(f"{w} has {x.shape[a]} along axis {a} (shape {tuple(x.shape)})"
                             for w, a, x in mapped)
            raise ValueError(f"vmap: the mapped arguments have different batch sizes: {told}")
        size = sizes.pop()
        fn = trace_fn(lambda a: self.fun(*a), templates, tree=tree, parent=_context.current())
        ins = []
        for x, (_, a) in zip(leaves, axes):
            ins.append((x, a if a is None else a % x.rank))
        outs = batch_fn(fn, ins, size)
        out_axes = _axes_for(self.out_axes, fn.tree, "output", "out_axes")
        results = []
        for (v, d), (where, oa), o in zip(outs, out_axes, fn.outputs):
            # the output's names as traced (a renaming, as broadcast to a tensor's own
            # shape is, makes no node), the batch axis unnamed
            names = list(o.names)
            if oa is None:
                if d is not None:
                    raise ValueError(f"vmap: out_axes for {where} is None, but that output "
                                     f"differs between examples (it depends on a mapped "
                                     f"argument): give it an axis")
                results.append(O.rename(v, names))
                continue
            oa = _normalize(oa, v.rank + (d is None), "out_axes", where,
                            f" (per-example shape {tuple(o.shape)})")
            if d is None:
                v, d = O.broadcast(v, (size,) + tuple(v.shape)), 0
            names.insert(oa, None)
            results.append(O.rename(batch_rules.move(v, d, oa), names))
        return tree_mod.unflatten(fn.tree, results)


def vmap(fun, in_axes=0, out_axes=0):
    """``fun`` mapped over a batch of examples (JAX's ``jax.vmap``).

    ``in_axes``: an int (the batch axis of every argument; negative counts from the end),
    None (not batched: the same for every example), or a tuple/list with one entry per
    positional argument, each an int, None or a container of them matching the argument
    (a prefix of its structure, as in JAX). ``out_axes``: likewise for the result, where
    the batch axis goes (None: an output the same for every example, returned once). All
    mapped arguments must have the same batch size. Keyword arguments (tensors, arrays,
    numbers) are batched along their axis 0, as in JAX.

    >>> import nxpy as nx
    >>> from nxpy.defn import vmap, grad
    >>> per_example = vmap(grad(lambda w, x: nx.sum(w * x)), in_axes=(None, 0))
    >>> per_example(nx.tensor([1.0, 2.0]), nx.tensor([[1.0, 0.0], [0.0, 3.0]])).tolist()
    [[1.0, 0.0], [0.0, 3.0]]
    >>> outer = vmap(vmap(lambda a, b: a * b), in_axes=(0, None))
    >>> outer(nx.iota((2, 2)), nx.tensor([1, 10])).tolist()
    [[0, 10], [2, 30]]
    """
    return _Vmap(fun, in_axes, out_axes)
