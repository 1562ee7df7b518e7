"""The forward half of reverse mode: a traced function's nodes copied into the scope being
traced now (:class:`Replay`, the base of :class:`nxpy.defn.transforms.backprop.Backprop`), its
parameters and the values it captures read from a map of values of this scope. The
markers that exist only while differentiating turn back into their argument; a node whose
backward pass needs more than its value (a loop's carries) keeps it through its rule
(:data:`BODY_RULES`); ``vmap`` and ``call`` copy nodes with it too.

>>> import nxpy as nx
>>> from nxpy import types as T
>>> from nxpy.defn import jit
>>> from nxpy.defn.expr import trace_fn
>>> fn = trace_fn(lambda x: x * 2.0 + 1.0, [((2,), T.F32, None)])
>>> jit(lambda x: Replay(None, keep=True).inline(fn, [x])[0])(nx.tensor([0.0, 1.0])).tolist()
[1.0, 3.0]
"""
from __future__ import annotations

from ... import _context
from ... import ops as O
from ...tensor import Tensor
from ..expr import EFFECTS, EXPR, Expr, Fn, Scope

__all__ = ["Replay", "MARKERS", "ENGINE_RULES", "BODY_RULES"]

#: nodes that exist only while a function is being differentiated: compilers never see
#: them (replaying the function for its gradient turns them back into their argument)
MARKERS = {"stop_grad", "custom_grad", "checkpoint_name"}

#: ops whose forward replay and backward pass the engine delegates, by op name, to
#: ``(replay(bp, e, augment), backward(bp, e, gs, ct, dep))``: multi-result nodes with a
#: sub-function that exist only while differentiating (``checkpoint``, registered by
#: :mod:`nxpy.defn.transforms.checkpoint`; ``call``, by :mod:`nxpy.defn.transforms.call`).
#: ``replay`` returns the list of the node's results.
ENGINE_RULES: dict = {}

#: the reverse mode of the nodes with sub-functions that compilers run (``cond``,
#: ``while``, ``shard_map``, registered by :mod:`nxpy.defn.transforms.grad_bodies`), by op name:
#: ``(replay(bp, e), backward(bp, e, gs, ct, dep))``. ``replay`` (or None) copies a node
#: whose value depends on what is being differentiated and keeps what its backward pass
#: needs (a loop's carries) in ``bp.aug``; it returns the node's value, or None to copy
#: the node as it is.
BODY_RULES: dict = {}


class Replay:
    """Copies the nodes of one traced function ``fn`` into the scope being traced now, its
    parameters and captured values read from ``env`` (a map from ``fn``'s node ids to
    values of this scope, with ``parent``'s map behind it). With ``keep`` (a gradient
    taken inside another's trace, ``vmap``, ``call``), the nodes that exist only while
    differentiating are copied as they are, for the outer transform to see. ``aug`` holds,
    by node id, what a node's replay kept for its backward pass."""

    def __init__(self, fn: Fn, env=None, *, parent=None, keep=False):
        self.fn = fn
        self.env = dict(env or {})
        self.parent = parent
        self.keep = keep if parent is None else parent.keep
        self.aug: dict = {}

    # --- values -----------------------------------------------------------------------
    def lookup(self, node_id):
        b = self
        while b is not None:
            v = b.env.get(node_id)
            if v is not None:
                return v
            b = b.parent
        return None

    def value(self, a):
        """An argument of ``fn``'s nodes as a value of this scope."""
        if isinstance(a, Tensor):
            if isinstance(a.data, Expr):
                v = self.lookup(a.data.id)
                return a if v is None else v
            return a
        if isinstance(a, Expr):
            v = self.lookup(a.id)
            return a if v is None else v
        if isinstance(a, list):
            return [self.value(x) for x in a]
        if isinstance(a, tuple):
            return tuple(self.value(x) for x in a)
        return a

    def fwd(self, x):
        """The forward value of node ``x`` (of ``fn`` or captured by it) as a tensor here."""
        v = self.value(x)
        return Tensor(v, v.shape, v.type, v.names, EXPR) if isinstance(v, Expr) else v

    # --- the forward replay -------------------------------------------------------------
    def replay(self, depends=frozenset()):
        """Copies ``fn``'s nodes into the current scope. Loops in ``depends`` keep the
        carries of each iteration for the backward pass."""
        for e in self.fn.nodes:
            if e.op != "parameter":
                self.env[e.id] = self._replay(e, augment=e.id in depends)

    def copy(self, e: Expr):
        """Node ``e`` copied into the current scope, its arguments (and the captures of
        its sub-functions) read from ``env``: a Tensor, or the Expr of a node with several
        results (``nxpy.defn.vmap`` copies the nodes it does not batch this way)."""
        return self._replay(e)

    def _replay(self, e: Expr, augment=False):
        if e.op in ENGINE_RULES and not self.keep:
            return ENGINE_RULES[e.op][0](self, e, augment)
        return self.copy_node(e, augment)

    def copy_node(self, e: Expr, augment=False):
        """Node ``e`` copied into the current scope as it is (markers turned back into
        their argument), its arguments and sub-functions read from ``env``; with
        ``augment``, its rule in :data:`BODY_RULES` also keeps what its backward pass needs
        (a loop's carries)."""
        if e.op == "elem" and isinstance(self.value(e.args[0]), list):
            return self.value(e.args[0])[e.attrs["index"]]  # of an ENGINE_RULES node
        if e.op in MARKERS and not self.keep:
            return self.value(e.args[0])
        if e.op in EFFECTS and self.parent is not None:
            return self.value(e.args[0])  # the backward pass recomputes: call hooks once
        if augment and BODY_RULES.get(e.op, (None,))[0] is not None:
            new = BODY_RULES[e.op][0](self, e)
            if new is not None:
                return new
        args = self.value(e.args)
        fns = tuple(self._copy_fn(f) for f in e.fns)
        new = Expr(e.op, args, dict(e.attrs), e.shape, e.type, e.names, _context.current(), fns,
                   e.outs)
        if e.op in EFFECTS:
            new.scope.effects.append(new)
        return new if e.outs is not None else Tensor(new, e.shape, e.type, e.names, EXPR)

    def _copy_fn(self, fn: Fn) -> Fn:
        scope = Scope(_context.current())
        with scope:
            params = [EXPR.parameter(O.template(p.shape, p.type, p.names), index=i)
                      for i, p in enumerate(fn.params)]
            outputs = self.inline(fn, params)
        return Fn(params, outputs, fn.tree, scope)

    def inline(self, fn: Fn, args) -> list:
        """``fn``'s nodes copied into the current scope with its parameters bound to
        ``args``; its outputs."""
        for p, a in zip(fn.params, args):
            self.env[p.data.id] = a
        for e in fn.nodes:
            if e.op != "parameter":
                self.env[e.id] = self._replay(e)
        return [self.value(o) for o in fn.outputs]
