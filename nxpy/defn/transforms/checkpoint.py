"""``checkpoint`` (``remat``) and ``checkpoint_policies``: JAX's rematerialization.

``checkpoint(f)`` is ``f``, until differentiated: then its call becomes a ``checkpoint``
node holding ``f`` traced as a sub-function. The forward pass runs ``f`` in place; the
backward pass (the engine's rule, :data:`nxpy.defn.transforms.grad.ENGINE_RULES`) runs ``f`` again
from its inputs and differentiates that copy, so the intermediates of ``f`` are not kept
alive from the forward pass to the backward pass, except those its ``policy`` saves
(``policy(prim, *inputs, **params) -> bool`` for each op of ``f``; ``prim.name`` is the
op's name). With ``prevent_cse`` (the default) the recomputation reads its inputs, and
the cotangents, through one ``optimization_barrier`` (as JAX), so XLA neither merges it
back into the forward pass nor runs it before the backward pass gets there. Nested
checkpoints recompute at each level; ``vmap`` batches the checkpointed function and keeps
it checkpointed. Compilers never see the node.

>>> import nxpy as nx
>>> from nxpy.defn import checkpoint, grad, jit
>>> layer = checkpoint(lambda x: nx.sin(nx.sin(x)))
>>> jit(grad(lambda x: nx.sum(layer(layer(x)))))(nx.tensor([0.5])).tolist()  # doctest: +ELLIPSIS
[0.62...]
>>> from nxpy.compilers.exla import to_mlir
>>> from nxpy.defn import value_and_grad
>>> plain = to_mlir(value_and_grad(lambda x: nx.sum(nx.sin(nx.sin(x)))), nx.tensor([0.5]))
>>> remat = to_mlir(value_and_grad(lambda x: nx.sum(layer(x))), nx.tensor([0.5]))
>>> plain.count("stablehlo.sine"), remat.count("stablehlo.sine")   # the inner one again
(2, 3)
"""
from __future__ import annotations

import functools
import types

from ... import _context
from ... import ops as O
from ... import shape as S
from ...ops import primitive
from ...ops.core import register_grad_rule
from .. import tree as tree_mod
from ..expr import EXPR, trace_fn
from .grad import ENGINE_RULES, Backprop

__all__ = ["checkpoint", "remat", "checkpoint_name", "checkpoint_policies"]

primitive("grad markers", "checkpoint")


# ----------------------------------------------------------------------------------------
# The API
# ----------------------------------------------------------------------------------------
def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=()):
    """``fun``, whose intermediates the gradient recomputes instead of keeping them from
    the forward pass, except those ``policy`` saves (``None``: nothing but the inputs, as
    ``checkpoint_policies.nothing_saveable``), as ``jax.checkpoint``. ``static_argnums``
    names positional arguments passed as they are (Python values), not traced.

    >>> import nxpy as nx
    >>> from nxpy.defn import checkpoint, checkpoint_policies, grad
    >>> f = checkpoint(lambda w, x: nx.tanh(nx.dot(x, w)),
    ...                policy=checkpoint_policies.dots_saveable)
    >>> w, x = nx.tensor([[1.0, 0.0], [0.0, 2.0]]), nx.tensor([[0.5, 0.25]])
    >>> [round(v, 4) for v in grad(lambda w: nx.sum(f(w, x)))(w).tolist()[0]]
    [0.3932, 0.3932]
    """
    if not callable(fun):
        raise TypeError(f"checkpoint: expected a function, got {type(fun).__name__}")
    prevent_cse = S.boolean(prevent_cse, "checkpoint: prevent_cse")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint: policy must be a function (see "
                        f"nxpy.defn.checkpoint_policies), got {policy!r}")
    nums = (static_argnums,) if S.as_int(static_argnums) is not None else static_argnums
    try:
        nums = tuple(S.as_int(n) for n in nums)
    except TypeError:
        nums = (None,)
    if any(n is None for n in nums):
        raise TypeError(f"checkpoint: static_argnums must be an integer or a tuple of "
                        f"integers, got {static_argnums!r}")

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        n = len(args)
        for i in nums:
            if not -n <= i < n:
                raise ValueError(f"checkpoint: static_argnums {static_argnums!r} out of "
                                 f"range for {n} positional argument(s)")
        if _context.grad_depth() == 0:
            return fun(*args, **kwargs)
        static = {i % n for i in nums}
        dyn = [i for i in range(n) if i not in static]
        leaves, tree = tree_mod.flatten(tuple(args[i] for i in dyn))
        leaves = [EXPR.lift(O.to_tensor(x, f"argument leaf {j}")) for j, x in enumerate(leaves)]

        def call(values):
            full = list(args)
            for i, v in zip(dyn, values):
                full[i] = v
            return fun(*full, **kwargs)

        body = trace_fn(call, [(t.shape, t.type, t.names) for t in leaves], tree=tree,
                        parent=_context.current())
        return emit(body, leaves, policy, prevent_cse)
    return wrapped


#: JAX's other name for :func:`checkpoint`
remat = checkpoint


def emit(body, inputs, policy, prevent_cse):
    """The ``checkpoint`` node of traced function ``body`` applied to ``inputs`` (one
    tensor per parameter), as ``body``'s output container."""
    if not body.outputs:
        return tree_mod.unflatten(body.tree, [])
    outs = EXPR.multi("checkpoint", [(o.shape, o.type, o.names) for o in body.outputs],
                      *inputs, fns=(body,), policy=policy, prevent_cse=bool(prevent_cse))
    return tree_mod.unflatten(body.tree, outs)


def checkpoint_name(x, name):
    """``x``, named ``name`` for ``checkpoint_policies.save_only_these_names`` (and the
    other name-based policies), as ``jax.ad_checkpoint.checkpoint_name``. ``x`` may be a
    container.

    >>> import nxpy as nx
    >>> from nxpy.defn import checkpoint, checkpoint_name, checkpoint_policies, grad
    >>> f = checkpoint(lambda x: nx.sin(checkpoint_name(nx.sin(x), "h")),
    ...                policy=checkpoint_policies.save_only_these_names("h"))
    >>> round(grad(lambda x: nx.sum(f(x)))(nx.tensor([0.5])).tolist()[0], 4)
    0.7786
    """
    if not isinstance(name, str):
        raise TypeError(f"checkpoint_name: name must be a string, got {name!r}")
    if _context.grad_depth() == 0:
        return x
    leaves, tree = tree_mod.flatten(x)
    out = [EXPR.node("checkpoint_name", O.template(t.shape, t.type, t.names), t, name=name)
           for t in (EXPR.lift(O.to_tensor(v, "x")) for v in leaves)]
    return tree_mod.unflatten(tree, out)


@register_grad_rule("checkpoint_name")
def _checkpoint_name_grad(ctx, e, xs, out, g):
    return [g]


# ----------------------------------------------------------------------------------------
# Policies
# ----------------------------------------------------------------------------------------
class Primitive:
    """The op a policy is asked about: ``name`` is the op's name (``"dot"``,
    ``"checkpoint_name"``, ``"tanh"``, ...)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


def everything_saveable(prim, *args, **params):
    """Saves every intermediate: nothing is recomputed."""
    return True


def nothing_saveable(prim, *args, **params):
    """Saves nothing but the inputs: everything is recomputed (``policy=None``)."""
    return False


def dots_saveable(prim, *args, **params):
    """Saves the results of ``dot`` (matrix products); recomputes the rest."""
    return prim.name == "dot"


def dots_with_no_batch_dims_saveable(prim, *args, **params):
    """Saves the results of ``dot`` without batch dimensions."""
    return prim.name == "dot" and not params.get("batch_a")


def save_only_these_names(*names):
    """A policy saving the values named one of ``names`` with :func:`checkpoint_name`."""
    wanted = frozenset(names)

    def policy(prim, *args, **params):
        return prim.name == "checkpoint_name" and params.get("name") in wanted
    return policy


def save_any_names_but_these(*names):
    """A policy saving the values named with :func:`checkpoint_name`, except ``names``."""
    unwanted = frozenset(names)

    def policy(prim, *args, **params):
        return prim.name == "checkpoint_name" and params.get("name") not in unwanted
    return policy


def save_from_both_policies(policy_1, policy_2):
    """A policy saving what either policy saves."""
    def policy(prim, *args, **params):
        return bool(policy_1(prim, *args, **params)) or bool(policy_2(prim, *args, **params))
    return policy


#: the policies, as ``jax.checkpoint_policies``
checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable, nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable, checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_from_both_policies=save_from_both_policies)


def _saves(policy, e) -> bool:
    if policy is None or e.outs is not None or e.op in ("parameter", "elem", "constant"):
        return False
    args = [O.template(x.shape, x.type, x.names) for x in e.tensor_args()]
    return bool(policy(Primitive(e.op), *args, **e.attrs))


# ----------------------------------------------------------------------------------------
# The engine's rules
# ----------------------------------------------------------------------------------------
def _replay(bp: Backprop, e, augment):
    """The forward pass: ``f`` run in place (its values stay in ``bp``'s map, where the
    backward pass finds those the policy saves)."""
    outs = bp.inline(e.fns[0], [bp.fwd(x) for x in e.args])
    bp.aug[e.id] = "inlined"
    return list(outs)


def _backward(bp: Backprop, e, gs, ct, dep):
    """The backward pass: ``f`` run again from its (barriered) inputs, captured values and
    saved intermediates, and differentiated."""
    (body,) = e.fns
    inputs = e.tensor_args()
    want, caps = bp.body_wants(e, dep)
    if not (want or caps) or all(g is None for g in gs):
        return
    policy = e.attrs["policy"] if bp.aug.get(e.id) == "inlined" else None
    saved = {n.id: bp.fwd(n) for n in body.nodes if _saves(policy, n)}
    # what the recomputation starts from, and the cotangents: with prevent_cse, one
    # barrier over all of them (as JAX), so that XLA neither merges the recomputation
    # with the forward pass nor runs it before the backward pass reaches this point
    starts = ([bp.fwd(x) for x in inputs] + [bp.fwd(c) for c in body.captures]
              + list(saved.values()))
    live = [i for i, g in enumerate(gs) if g is not None]
    if e.attrs["prevent_cse"]:
        held = O.optimization_barrier(starts + [gs[i] for i in live])
        starts, gs = held[:len(starts)], list(gs)
        for i, g in zip(live, held[len(starts):]):
            gs[i] = g
    it = iter(starts)
    sub = Backprop(body, {p.data.id: next(it) for p in body.params}, parent=bp)
    for c in body.captures:
        sub.env[c.id] = next(it)
    for k in saved:
        sub.env[k] = next(it)
    wanted = [body.params[i].data.id for i in want] + [c.id for c in caps]
    sub_dep = sub.depends(wanted)
    for n in body.nodes:
        if n.op != "parameter" and n.id not in saved:
            sub.env[n.id] = sub._replay(n, augment=n.id in sub_dep)
    bp.backward_body(e, sub, gs, want, caps, ct, dep, sub_dep)


ENGINE_RULES["checkpoint"] = (_replay, _backward)
