"""Batching rules: for each op, its result on a batch of examples given its arguments'
batches (as JAX's ``batching`` rules). This module holds the rules of the base op set;
the table itself, ``nxpy.ops.core.BATCH_RULES``, lives with the ops, so an op family or a
plugin (``nxpy.extend.register_batch_rule``) may register rules next to its definition.

A rule is ``rule(ctx, e, xs, dims) -> (result, dim)``: ``e`` is the Expr node traced for
one example (its options are ``e.attrs``, its per-example result ``e.shape``/``e.type``),
``xs`` the values of its tensor arguments in the order :meth:`Expr.tensor_args` lists
them and ``dims`` the batch axis of each (``None``: the same value for every example, of
the per-example shape); ``ctx.size`` is the batch size. It returns the batched result
and the axis its batch lies along (a list of such pairs for an op with several results),
or ``NotImplemented`` to have the engine (:mod:`nxpy.defn.transforms.vmap`) batch this node with its
generic loop over the examples. Rules build their result with the front-end ops or with
``EXPR.node``, so batched programs are ordinary Expr graphs.

The rules shared by a kind of op (elementwise, reductions, windows, ...) are derived from
the properties the ops are declared with (:data:`nxpy.ops.core.PROPERTIES`), so a new op
declared ``elementwise`` is batched by the broadcasting rule without being listed here.
Ops without a rule are batched by the loop (correct for every op, one example at a time);
``nxpy.defn.batch_paths()`` says which path each op took.

>>> import nxpy as nx
>>> from nxpy.defn.transforms.vmap import vmap, batch_paths
>>> before = batch_paths().get("sum", {}).get("rule", 0)
>>> vmap(lambda x: nx.sum(x))(nx.tensor([[1, 2], [3, 4]])).tolist()
[3, 7]
>>> batch_paths()["sum"]["rule"] - before
1
"""
from __future__ import annotations

from ... import ops as O
from ...layout import NamedSharding
from ...ops.core import BATCH_RULES, derive_rule, register_batch_rule
from ..expr import EXPR

__all__ = ["BATCH_RULES", "register_batch_rule", "move", "to_front", "batched", "node",
           "multi_node"]


# ----------------------------------------------------------------------------------------
# Helpers (also for plugin rules)
# ----------------------------------------------------------------------------------------
def move(x, d, to):
    """``x`` with its axis ``d`` moved to position ``to``."""
    if d == to:
        return x
    perm = [i for i in range(x.rank) if i != d]
    perm.insert(to, d)
    return O.transpose(x, perm)


def to_front(ctx, x, d):
    """``x`` with its batch axis first; an unbatched ``x`` (``d`` None) broadcast along a
    new first axis of the batch size."""
    if d is None:
        return O.broadcast(x, (ctx.size,) + tuple(x.shape))
    return move(x, d, 0)


def batched(ctx, shape, type, names):
    """The template of a per-example result ``(shape, type, names)`` with an (unnamed)
    batch axis first."""
    return O.template((ctx.size,) + tuple(shape), type,
                      (None,) + tuple(names) if names is not None else None)


def node(ctx, e, args, **attrs):
    """A node of ``e``'s op on ``args`` (its argument structure) with ``e``'s attributes
    updated by ``attrs``, whose result is ``e``'s with a batch axis first."""
    out = batched(ctx, e.shape, e.type, e.names)
    return EXPR.node(e.op, out, *args, **{**e.attrs, **attrs}), 0


def _front(ctx, e, xs, dims):
    """The only tensor argument (``xs[0]``) with its batch axis first."""
    return to_front(ctx, xs[0], dims[0])


def _shift(axes):
    return tuple(a + 1 for a in axes)


# ----------------------------------------------------------------------------------------
# Elementwise ops: batch axes first, and of the result's rank (operands broadcast, with the
# batch axis leading, against unbatched operands of the per-example shape)
# ----------------------------------------------------------------------------------------
@derive_rule(BATCH_RULES, "elementwise")
def _elementwise(ctx, e, xs, dims):
    if len(xs) != len(e.args):
        return NotImplemented  # arguments that are not all tensors: the loop
    rank = len(e.shape)
    args = []
    for x, d in zip(xs, dims):
        if d is not None:
            x = move(x, d, 0)
            if x.rank - 1 < rank:  # a lower-rank operand, right-aligned as Nx broadcasts
                x = O.reshape(x, (x.shape[0],) + (1,) * (rank + 1 - x.rank) + tuple(x.shape[1:]))
        args.append(x)
    return node(ctx, e, args)


# ----------------------------------------------------------------------------------------
# Shapes
# ----------------------------------------------------------------------------------------
@register_batch_rule("sharding_constraint")
def _sharding_constraint(ctx, e, xs, dims):
    """The examples' axis (first) is not split; the example's dims keep their layout."""
    s = e.attrs["sharding"]
    return node(ctx, e, [_front(ctx, e, xs, dims)],
                sharding=NamedSharding.from_axes(s.mesh, ((),) + s.axes(len(e.shape))))


@register_batch_rule("reshape")
def _reshape(ctx, e, xs, dims):
    return node(ctx, e, [_front(ctx, e, xs, dims)])


@register_batch_rule("broadcast")
def _broadcast(ctx, e, xs, dims):
    return node(ctx, e, [_front(ctx, e, xs, dims)], axes=(0,) + _shift(e.attrs["axes"]))


@register_batch_rule("transpose")
def _transpose(ctx, e, xs, dims):
    return node(ctx, e, [_front(ctx, e, xs, dims)], axes=(0,) + _shift(e.attrs["axes"]))


@register_batch_rule("reverse")
def _reverse(ctx, e, xs, dims):
    return node(ctx, e, [_front(ctx, e, xs, dims)], axes=_shift(e.attrs["axes"]))


@register_batch_rule("pad")
def _pad(ctx, e, xs, dims):
    if dims[1] is not None:
        return NotImplemented  # a batched padding value: the loop
    return node(ctx, e, [to_front(ctx, xs[0], dims[0]), xs[1]],
                config=((0, 0, 0),) + tuple(tuple(c) for c in e.attrs["config"]))


@register_batch_rule("concatenate")
def _concatenate(ctx, e, xs, dims):
    parts = [to_front(ctx, x, d) for x, d in zip(xs, dims)]
    return node(ctx, e, [parts], axis=e.attrs["axis"] + 1)


# ----------------------------------------------------------------------------------------
# Slices with unbatched starts
# ----------------------------------------------------------------------------------------
@register_batch_rule("slice")
def _slice(ctx, e, xs, dims):
    a = e.attrs
    return node(ctx, e, [_front(ctx, e, xs, dims)], start_indices=(0,) + tuple(a["start_indices"]),
                lengths=(ctx.size,) + tuple(a["lengths"]), strides=(1,) + tuple(a["strides"]))


@register_batch_rule("dynamic_slice")
def _dynamic_slice(ctx, e, xs, dims):
    if any(d is not None for d in dims[1:]):
        return NotImplemented  # starts that differ between examples: the loop
    a = e.attrs
    x = to_front(ctx, xs[0], dims[0])
    return O.slice(x, [0] + list(xs[1:]), (ctx.size,) + tuple(a["lengths"]),
                   strides=(1,) + tuple(a["strides"])), 0


@register_batch_rule("put_slice")
def _put_slice(ctx, e, xs, dims):
    if any(d is not None for d in dims[1:-1]):
        return NotImplemented
    x, update = to_front(ctx, xs[0], dims[0]), to_front(ctx, xs[-1], dims[-1])
    return node(ctx, e, [x, [O.full((), 0, type=xs[1].type)] + list(xs[1:-1]), update])


# ----------------------------------------------------------------------------------------
# Reductions and contractions
# ----------------------------------------------------------------------------------------
@derive_rule(BATCH_RULES, "reduction")
def _reduce(ctx, e, xs, dims):
    return node(ctx, e, [_front(ctx, e, xs, dims)], axes=_shift(e.attrs["axes"]))


@derive_rule(BATCH_RULES, "arg_reduction")
def _arg_reduce(ctx, e, xs, dims):
    return node(ctx, e, [_front(ctx, e, xs, dims)], axis=e.attrs["axis"] + 1)


@register_batch_rule("dot")
def _dot(ctx, e, xs, dims):
    (a, b), (da, db) = xs, dims
    ca, ba, cb, bb = (list(e.attrs[k]) for k in ("contract_a", "batch_a", "contract_b", "batch_b"))
    if da is not None and db is not None:  # one more batch dimension, first
        a, b = move(a, da, 0), move(b, db, 0)
        return O.dot(a, [i + 1 for i in ca], [0] + [i + 1 for i in ba],
                     b, [i + 1 for i in cb], [0] + [i + 1 for i in bb]), 0
    if da is not None:  # a free dimension of a: the result's first after the batch dims
        a = move(a, da, 0)
        return O.dot(a, [i + 1 for i in ca], [i + 1 for i in ba], b, cb, bb), len(ba)
    b = move(b, db, 0)  # a free dimension of b: after the batch and a's free dimensions
    free_a = a.rank - len(ca) - len(ba)
    return O.dot(a, ca, ba, b, [i + 1 for i in cb], [i + 1 for i in bb]), len(ba) + free_a


# ----------------------------------------------------------------------------------------
# Ops along an axis, or over trailing axes with any leading (batch) axes
# ----------------------------------------------------------------------------------------
def multi_node(ctx, e, args, **attrs):
    """Like :func:`node`, for an op with several results: one pair per result."""
    templates = [(t.shape, t.type, t.names) for t in (batched(ctx, *o) for o in e.outs)]
    return [(r, 0) for r in EXPR.multi(e.op, templates, *args, **{**e.attrs, **attrs})]


@derive_rule(BATCH_RULES, "along_axes")
def _along_axes(ctx, e, xs, dims):
    if "axes" in e.attrs:
        return node(ctx, e, [_front(ctx, e, xs, dims)], axes=_shift(e.attrs["axes"]))
    return node(ctx, e, [_front(ctx, e, xs, dims)], axis=e.attrs["axis"] + 1)


@register_batch_rule("permute_by_key")
def _permute_by_key(ctx, e, xs, dims):
    return node(ctx, e, [to_front(ctx, x, d) for x, d in zip(xs, dims)], axis=e.attrs["axis"] + 1)


@derive_rule(BATCH_RULES, "batched_matrix")
@register_batch_rule("optimization_barrier")
def _leading_batch(ctx, e, xs, dims):
    """The batch axis first: these take any leading batch axes."""
    args = [to_front(ctx, x, d) for x, d in zip(xs, dims)]
    return node(ctx, e, args) if e.outs is None else multi_node(ctx, e, args)


# ----------------------------------------------------------------------------------------
# Windows: a window of 1 along the batch axis
# ----------------------------------------------------------------------------------------
def _window_attrs(e):
    a, out = e.attrs, {}
    for k, v in (("window_dimensions", 1), ("strides", 1), ("window_dilations", 1),
                 ("padding", (0, 0))):
        if k in a:
            out[k] = (v,) + tuple(tuple(p) if k == "padding" else p for p in a[k])
    return out


@derive_rule(BATCH_RULES, "windowed")
def _window(ctx, e, xs, dims):
    return node(ctx, e, [_front(ctx, e, xs, dims)], **_window_attrs(e))


@register_batch_rule("window_reduce", "reduce")
def _with_function(ctx, e, xs, dims):
    if dims[1] is not None:
        return NotImplemented  # an initial value that differs between examples
    out = batched(ctx, e.shape, e.type, e.names)
    extra = _window_attrs(e) if e.op == "window_reduce" else {"axes": _shift(e.attrs["axes"])}
    return EXPR.node(e.op, out, to_front(ctx, xs[0], dims[0]), xs[1], fun=e.fns[0],
                     **{**e.attrs, **extra}), 0


@register_batch_rule("window_scatter_max", "window_scatter_min")
def _window_scatter(ctx, e, xs, dims):
    if dims[2] is not None:
        return NotImplemented
    x, source = to_front(ctx, xs[0], dims[0]), to_front(ctx, xs[1], dims[1])
    return node(ctx, e, [x, source, xs[2]], **_window_attrs(e))


# ----------------------------------------------------------------------------------------
# Gather and scatter: the example's index becomes one more coordinate
# ----------------------------------------------------------------------------------------
def _with_example(ctx, idx):
    """Indices (batched along 0) with each example's number prepended to its coordinates."""
    which = O.iota(tuple(idx.shape[:-1]) + (1,), axis=0, type=idx.type)
    return O.concatenate([which, idx], axis=idx.rank - 1)


@register_batch_rule("gather")
def _gather(ctx, e, xs, dims):
    (x, idx), (dx, di) = xs, dims
    idx = to_front(ctx, idx, di)
    if dx is None:  # the examples' indices are leading axes of the indices
        return node(ctx, e, [x, idx])
    return node(ctx, e, [move(x, dx, 0), _with_example(ctx, idx)],
                axes=(0,) + _shift(e.attrs["axes"]))


@register_batch_rule("indexed_add", "indexed_put")
def _indexed(ctx, e, xs, dims):
    target, idx, upd = (to_front(ctx, x, d) for x, d in zip(xs, dims))
    n = ctx.size * idx.shape[1]
    idx = O.reshape(_with_example(ctx, idx), (n, idx.shape[-1] + 1))
    upd = O.reshape(upd, (n,) + tuple(upd.shape[2:]))
    return node(ctx, e, [target, idx, upd], axes=(0,) + _shift(e.attrs["axes"]))


# ----------------------------------------------------------------------------------------
# Debugging: the hook sees the whole batch (one call, as for any other tensor)
# ----------------------------------------------------------------------------------------
@register_batch_rule("hook")
def _hook(ctx, e, xs, dims):
    x = _front(ctx, e, xs, dims)
    return EXPR.effect("hook", batched(ctx, e.shape, e.type, e.names), x, **e.attrs), 0
