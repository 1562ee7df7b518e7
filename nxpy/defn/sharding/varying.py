"""Which mesh axes each value of a ``shard_map`` body varies along (JAX's "varying manual
axes"): a body's inputs vary along the axes that split them; ``axis_index`` and the
collectives that leave each device a different part (``reduce_scatter``, ``all_to_all``,
``collective_permute``, ``all_slice``) add their axes; ``all_reduce``, ``all_gather`` and
``collective_broadcast`` over whole axes remove theirs (over axis_index_groups the result
still differs between groups); any other op varies along the union of its operands'
axes; ``cond`` adds its predicate's axes, ``while_loop`` iterates to a fixed point,
``checkpoint`` is its function's results and ``custom_grad`` its value's.

``shard_map`` uses it to check ``out_specs`` and, with :func:`divergent_collective`, that
no collective runs under a ``cond`` or ``while_loop`` whose path may differ between the
devices of the collective's groups (on XLA some devices of a group would wait for the
others forever, or a collective would pair up devices running different branches);
``grad`` uses it to transpose collectives and to sum a cotangent over the axes along which
its value was used as a replicated copy, and :func:`control_axes` to keep those sums out
of branches and loops that devices may run differently.
"""
from __future__ import annotations

import math

from ..expr import Expr

__all__ = ["analyze", "analyze_nodes", "subgraph", "op_axes", "over_subgroups", "control_axes",
           "divergent_collective", "COMMUNICATING"]


def op_axes(e: Expr) -> frozenset:
    """The mesh axes a collective works over."""
    if e.op == "all_gather":
        return frozenset(e.args[1]["axes"])
    return frozenset(e.attrs.get("axes", ()))


def over_subgroups(e: Expr, mesh) -> bool:
    """Whether a collective runs over axis_index_groups (groups smaller than its axes)."""
    groups = e.args[1]["replica_groups"] if e.op == "all_gather" else e.attrs.get("groups")
    if groups is None:
        return False
    return len(groups[0]) != math.prod(mesh.shape[a] for a in op_axes(e))


#: the collectives that exchange data: every device of a group must run them together
#: (``axis_index`` and ``all_slice`` only read the device's own position)
COMMUNICATING = frozenset({"all_gather", "all_reduce", "reduce_scatter", "all_to_all",
                           "collective_permute", "collective_broadcast"})

_ADD = {"axis_index", "reduce_scatter", "all_to_all", "collective_permute", "all_slice"}
_REMOVE = {"all_reduce", "all_gather", "collective_broadcast"}


def analyze(fn, param_axes, mesh, outer=None, memo=None) -> dict:
    """``{node id: frozenset of mesh axes}`` for the nodes of ``fn`` (and of its
    sub-functions), given the axes of each parameter; ``outer(node)`` answers for values
    captured from enclosing scopes (default: invariant)."""
    memo = {} if memo is None else memo
    for p, axes in zip(fn.params, param_axes):
        memo[p.data.id] = frozenset(axes)
    return analyze_nodes(fn.nodes, mesh, outer, memo)


def analyze_nodes(nodes, mesh, outer=None, memo=None) -> dict:
    """:func:`analyze` for a list of nodes in topological order (parameters already in
    ``memo``)."""
    memo = {} if memo is None else memo

    def get(x):
        if x.id in memo:
            return memo[x.id]
        return outer(x) if outer is not None else frozenset()

    for e in nodes:
        if e.id not in memo:
            memo[e.id] = _node(e, get, mesh, memo)
    return memo


def subgraph(e: Expr, memo) -> list:
    """The nodes ``e`` depends on that ``memo`` does not answer for yet, in topological
    order (what :func:`analyze_nodes` takes for a value traced so far)."""
    seen, out, stack = set(), [], [e]
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in memo:
            continue
        seen.add(n.id)
        out.append(n)
        stack.extend(n.deps())
    return sorted(out, key=lambda n: n.id)


def _forget(fn, memo):
    for n in fn.nodes:
        memo.pop(n.id, None)
        for f in n.fns:
            _forget(f, memo)


def _node(e, get, mesh, memo):
    if e.op == "elem":
        return get(e.args[0])[e.attrs["index"]]
    args = e.tensor_args()
    u = frozenset().union(*(get(a) for a in args)) if args else frozenset()
    if e.op in _ADD:
        return u | op_axes(e)
    if e.op in _REMOVE:
        if e.op == "all_gather" and e.args[1].get("view") != "local":
            return u
        return u | op_axes(e) if over_subgroups(e, mesh) else u - op_axes(e)
    if e.op == "cond":
        outs = []
        for f in e.fns:
            analyze(f, [], mesh, get, memo)
            outs.append([get(o.data) for o in f.outputs])
        return [u.union(*parts) for parts in zip(*outs)]
    if e.op == "while":
        c_fn, b_fn = e.fns
        carry = [get(a.data) for a in e.args[0]]
        while True:  # grows monotonically, so at most one round per mesh axis
            _forget(c_fn, memo)
            _forget(b_fn, memo)
            analyze(c_fn, carry, mesh, get, memo)
            analyze(b_fn, carry, mesh, get, memo)
            pred = get(c_fn.outputs[0].data)
            new = [c | get(o.data) | pred for c, o in zip(carry, b_fn.outputs)]
            if new == carry:
                return carry
            carry = new
    if e.op == "custom_grad":  # its value is its first argument's (the rest: for grad)
        return get(args[0])
    if e.op in ("checkpoint", "call"):  # a call: its function runs on its arguments
        (f,) = e.fns
        analyze(f, [get(a) for a in args], mesh, get, memo)
        return [get(o.data) for o in f.outputs]
    if e.fns:  # any other op with sub-functions: what they capture counts as an operand
        for f in e.fns:
            for c in f.captures:
                u |= get(c)
    if e.outs is not None:  # several results (runtime_call, top_k): each varies as the inputs
        return [u] * len(e.outs)
    return u


def control_axes(e: Expr, get) -> frozenset:
    """The mesh axes along which devices may take different paths through ``e``: for a
    ``cond``, the axes its predicates vary along; for a ``while``, the axes its condition
    varies along (at the fixed point: its trip count); empty for any other op. ``get(node)``
    answers the axes of a value (:func:`analyze`'s result)."""
    if e.op == "cond":
        return frozenset().union(*(get(a) for a in e.tensor_args()))
    if e.op == "while":
        return get(e.fns[0].outputs[0].data)
    return frozenset()


def divergent_collective(fn, memo):
    """The first collective of ``fn`` (a shard_map body) that runs inside a ``cond`` or a
    ``while_loop`` whose path may differ between the devices of one of its groups: the
    predicate varies along one of the collective's axes. Returns ``(control node, index of
    its sub-function holding the collective, the predicate's axes, the collective node)``,
    or None. ``memo``: :func:`analyze`'s result for ``fn``."""
    def get(x):
        return memo.get(x.id, frozenset())

    def walk(f, frames):
        for e in f.nodes:
            if e.op in COMMUNICATING:
                for ctl, i, axes in reversed(frames):  # the innermost cause
                    if axes & op_axes(e):
                        return ctl, i, axes, e
            if not e.fns:
                continue
            axes = control_axes(e, get)
            for i, sub in enumerate(e.fns):
                found = walk(sub, frames + [(e, i, axes)] if axes else frames)
                if found:
                    return found
        return None
    return walk(fn, [])
