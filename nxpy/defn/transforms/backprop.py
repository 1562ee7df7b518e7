"""The backward half of reverse mode: :class:`Backprop` walks a traced function's nodes
from the last to the first, asking each op's rule (:mod:`nxpy.defn.transforms.grad_rules`) for its
operands' cotangents and making each its operand's own (summed over the dimensions it was
broadcast along, in its type, and inside a ``shard_map`` body over the mesh axes along
which it was used as a replicated copy). Nodes with sub-functions go to their rules:
``cond``, ``while`` and ``shard_map`` to :mod:`nxpy.defn.transforms.grad_bodies`, ``checkpoint`` and
``call`` to their own modules, through the tables of :mod:`nxpy.defn.transforms.replay`.

>>> import nxpy as nx
>>> from nxpy import types as T
>>> from nxpy.defn import jit
>>> from nxpy.defn.expr import trace_fn
>>> fn = trace_fn(lambda x: nx.sum(x * x), [((2,), T.F32, None)])
>>> def gradient(x):
...     bp = Backprop(fn, {fn.params[0].data.id: x})
...     bp.replay()
...     y = fn.outputs[0].data
...     return bp.backward({y.id: nx.tensor(1.0)}, [fn.params[0].data.id])
>>> jit(lambda x: list(gradient(x).values())[0])(nx.tensor([1.0, 3.0])).tolist()
[2.0, 6.0]
"""
from __future__ import annotations

from ... import ops as O
from ..sharding.collectives import psum
from ..expr import Fn
from .grad_rules import GRAD_RULES, NON_DIFFERENTIABLE, unbroadcast, zeros
from .replay import BODY_RULES, ENGINE_RULES, Replay
from ..sharding.varying import op_axes

__all__ = ["Backprop", "add_to", "zeros_like", "differentiable"]

_COLLECTIVES = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                "collective_permute", "collective_broadcast", "all_slice"}


class _RuleContext:
    """What a rule may ask about the program: the mesh of a shard_map body, and the
    varying axes of a value."""

    def __init__(self, mesh, vma):
        self.mesh, self._vma = mesh, vma

    def vma(self, node) -> frozenset:
        return self._vma.get(node.id, frozenset()) if self._vma is not None else frozenset()


def add_to(d, k, v):
    """Adds cotangent ``v`` to ``d[k]``."""
    d[k] = v if d.get(k) is None else d[k] + v


def zeros_like(x):
    return zeros(x.shape, x.type)


def differentiable(x) -> bool:
    """Floating-point and complex values carry cotangents (for complex values with JAX's
    convention: the rules transpose without conjugating); integers and pred do not."""
    return x.type.is_inexact


class Backprop(Replay):
    """Differentiates one traced function ``fn`` into the scope being traced now.

    :meth:`replay` copies ``fn``'s nodes here (its parameters and captured values read
    from ``env``, a map from ``fn``'s node ids to values of this scope, with ``parent``'s
    map behind it: :class:`~nxpy.defn.transforms.replay.Replay`); :meth:`backward` then walks
    ``fn``'s nodes from the last to the first, turning cotangents of results into
    cotangents of arguments.

    In a shard_map body, ``diverge`` holds the mesh axes along which devices may run ``fn``
    differently (it is a branch of a cond, or the body of a while_loop, whose predicate
    varies along them): no psum over them runs here, where some devices of a group would
    not run it; the cotangents stay per-device along them and the enclosing scope sums
    them after the cond or loop, where every device runs the sum."""

    def __init__(self, fn: Fn, env=None, *, parent=None, vma=None, mesh=None, keep=False,
                 diverge=frozenset()):
        super().__init__(fn, env, parent=parent, keep=keep)
        self.vma = vma if vma is not None or parent is None else parent.vma
        self.mesh = mesh if mesh is not None or parent is None else parent.mesh
        self.diverge = diverge if parent is None else parent.diverge | diverge
        self.ctx = _RuleContext(self.mesh, self.vma)

    # --- the backward pass ---------------------------------------------------------------
    def depends(self, wanted) -> set:
        """The nodes of ``fn`` whose value depends on a node of ``wanted``."""
        dep = set(wanted)
        for e in self.fn.nodes:
            if e.id in dep:
                continue
            if any(a.id in dep for a in e.tensor_args()) or any(
                    c.id in dep for f in e.fns for c in f.captures):
                dep.add(e.id)
        return dep

    def backward(self, seeds: dict, wanted, dep=None) -> dict:
        """Cotangents of the nodes ``wanted`` (parameters or captured values of ``fn``)
        given cotangents of some of its nodes (``seeds``: node id → value here)."""
        wanted = list(wanted)
        dep = self.depends(wanted) if dep is None else dep
        ct: dict = {}
        multi: dict = {}
        for k, v in seeds.items():
            add_to(ct, k, v)
        for e in reversed(self.fn.nodes):
            if e.op == "parameter" or e.id not in dep:
                continue
            if e.outs is not None:
                gs = multi.pop(e.id, None)
                if gs is not None:
                    self._backward_multi(e, gs, ct, dep)
                continue
            g = ct.pop(e.id, None) if e.id not in wanted else None
            if g is None:
                continue
            if e.op == "elem":
                parent = e.args[0]
                gs = multi.setdefault(parent.id, [None] * len(parent.outs))
                i = e.attrs["index"]
                gs[i] = g if gs[i] is None else gs[i] + g
                continue
            self._backward_node(e, g, ct, dep)
        return {w: ct[w] for w in wanted if ct.get(w) is not None}

    def _backward_node(self, e, g, ct, dep):
        if e.op in NON_DIFFERENTIABLE:
            return
        if e.op == "custom_grad":
            add = self.accumulate_summed if e.attrs.get("summed") else self.accumulate
            add(e, e.tensor_args()[1:], self._custom(e, g), ct, dep)
            return
        rule = GRAD_RULES.get(e.op)
        if rule is None:
            raise NotImplementedError(f"grad: the op {e.op!r} has no gradient rule (give it "
                                      f"one with nxpy.extend.register_grad_rule, or declare "
                                      f"it with nxpy.extend.non_differentiable)")
        xs_f = e.tensor_args()
        cts = rule(self.ctx, e, [self.fwd(x) for x in xs_f], self.fwd(e), g)
        self.accumulate(e, xs_f, cts, ct, dep)

    def accumulate(self, e, xs_f, cts, ct, dep, used=None):
        """Adds to ``ct`` the cotangents ``cts`` a rule gave for ``e``'s operands ``xs_f``,
        each made its operand's own (:meth:`_fit`; ``used`` as there)."""
        for x, c in zip(xs_f, cts):
            if c is not None and x.id in dep and differentiable(x):
                add_to(ct, x.id, self._fit(c, x, e, used))

    def accumulate_summed(self, e, xs_f, cts, ct, dep):
        """As :meth:`accumulate` for cotangents already summed over the mesh axes along
        which their operands were used as replicated copies (a body differentiated with
        its mesh: ``custom_grad(summed=True)``, ``checkpoint``): each is its operand's own."""
        for x, c in zip(xs_f, cts):
            self.accumulate(e, [x], [c], ct, dep, used=self.ctx.vma(x))

    def _fit(self, c, x, e, used=None):
        """A rule's cotangent for operand ``x`` of ``e``, made ``x``'s own: summed over the
        dims ``x`` was broadcast along, in ``x``'s type, and (in a shard_map body) summed
        over the mesh axes along which ``x`` was used as a replicated copy (``used``, by
        default :meth:`_used_vma`), except those of ``diverge``."""
        c = unbroadcast(c, x.shape)
        if c.type != x.type:
            c = O.as_type(c, x.type)
        if self.vma is not None:
            used = self._used_vma(e, x) if used is None else used
            extra = used - self.ctx.vma(x) - self.diverge
            if extra:
                c = psum(c, tuple(sorted(extra)))
        return c

    def _used_vma(self, e, x) -> frozenset:
        """The axes along which ``e`` read ``x`` as varying: a collective's axes (JAX
        inserts pvary there), otherwise the axes ``e``'s result varies along."""
        if e.op in _COLLECTIVES and not (e.op == "all_gather"
                                         and e.args[1].get("view") != "local"):
            return self.ctx.vma(x) | op_axes(e)
        v = self.vma.get(e.id, frozenset())
        return frozenset().union(*v) if isinstance(v, list) else v

    def _custom(self, e, g):
        return self.inline(e.fns[0], [g])  # fns[1], if any, is the forward-mode rule

    # --- nodes with several results, and with sub-functions ----------------------------
    def _backward_multi(self, e, gs, ct, dep):
        if e.op in BODY_RULES:
            return BODY_RULES[e.op][1](self, e, gs, ct, dep)
        if e.op in ENGINE_RULES:
            return ENGINE_RULES[e.op][1](self, e, gs, ct, dep)
        rule = GRAD_RULES.get(e.op)
        if rule is None:
            raise NotImplementedError(f"grad: the op {e.op!r} has no gradient rule")
        xs_f = e.tensor_args()  # a multi-result op: ``out`` is the node, ``gs`` a list
        cts = rule(self.ctx, e, [self.fwd(x) for x in xs_f], self.value(e), gs)
        self.accumulate(e, xs_f, cts, ct, dep)

    def body_wants(self, e, dep):
        """For ``e``, a node whose one sub-function runs on its arguments (``checkpoint``,
        ``call``): the positions of its arguments that need a cotangent and the values its
        body captures that do, ``(want, caps)``."""
        want = [i for i, x in enumerate(e.tensor_args()) if x.id in dep and x.type.is_inexact]
        return want, self.captured(e.fns, dep)

    def backward_body(self, e, sub, gs, want, caps, ct, dep, sub_dep=None):
        """The cotangents ``gs`` of ``e``'s results (``e`` as in :meth:`body_wants`) taken
        back through ``sub``, the engine of its body (which has replayed it), to its
        arguments ``want`` and captures ``caps``, added to ``ct``."""
        (body,) = e.fns
        inputs = e.tensor_args()
        wanted = [body.params[i].data.id for i in want] + [c.id for c in caps]
        seeds = {}
        for o, g in zip(body.outputs, gs):
            if g is not None and o.type.is_inexact:
                seeds[o.data.id] = g if o.data.id not in seeds else seeds[o.data.id] + g
        cts = sub.backward(seeds, wanted, sub.depends(wanted) if sub_dep is None else sub_dep)
        # in a shard_map body, ``sub`` summed each cotangent over the mesh axes along which
        # its value was used as a replicated copy: they are the values' own here
        self.accumulate_summed(e, [inputs[i] for i in want] + caps,
                               [cts.get(body.params[i].data.id) for i in want]
                               + [cts.get(c.id) for c in caps], ct, dep)

    def captured(self, fns, dep):
        """The values ``fns`` capture that need a cotangent, in a fixed order."""
        found = {}
        for f in fns:
            for c in f.captures:
                if c.id in dep and differentiable(c):
                    found[c.id] = c
        return [found[k] for k in sorted(found)]
