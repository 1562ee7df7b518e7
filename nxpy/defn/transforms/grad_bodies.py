"""The reverse mode of the nodes with sub-functions that compilers run, registered in
:data:`nxpy.defn.transforms.replay.BODY_RULES`: ``cond`` (each branch differentiated inside a cond
on the same predicates), ``while`` (the carries of each iteration kept as the loop is
replayed, then the loop run backwards: see :func:`_replay_while`) and ``shard_map`` (its
body transposed inside a ``shard_map`` of its own, with the varying axes of its values
deciding where a cotangent is summed across devices). ``checkpoint`` and ``call``
register their rules from their own modules.

>>> import nxpy as nx
>>> from nxpy.defn import fori_loop, grad
>>> grad(lambda x: fori_loop(0, 3, lambda i, v: v * x, 1.0))(nx.tensor(2.0)).tolist()
12.0
>>> grad(lambda x: nx.cond(x > 0, lambda: x * 3.0, lambda: -x))(nx.tensor(-2.0)).tolist()
-1.0
"""
from __future__ import annotations

import numpy as np

from ... import ops as O
from ...tensor import Tensor
from .backprop import Backprop, add_to, differentiable, zeros_like
from ..sharding.collectives import psum
from ..expr import Expr
from .grad_rules import zeros
from ..kernel import cond, while_loop
from .loop_bounds import exact_trips, trip_bound
from .replay import BODY_RULES
from ..shard_map import shard_map
from ..sharding.varying import analyze, control_axes

__all__ = ["RESIDUAL_BYTES"]

#: the bytes of loop carries the reverse mode of a ``while_loop`` whose trip count is not
#: known while tracing keeps for its backward pass (see :func:`_replay_while`)
RESIDUAL_BYTES = 64 << 20


# ----------------------------------------------------------------------------------------
# while: the replay that keeps the carries, and the loop run backwards
# ----------------------------------------------------------------------------------------
def _replay_loop(bp, e: Expr):
    """Loop ``e`` replayed keeping its carries, where a bound on its iterations is known
    while tracing (None otherwise: it is copied as it is, and cannot be differentiated)."""
    bound = trip_bound(e)
    return None if bound is None else _replay_while(bp, e, bound)


def _replay_while(bp, e: Expr, n: int):
    """The loop, also recording the carries each iteration starts from and counting its
    iterations. ``n`` bounds its iterations. A loop that counts to a constant (``n`` is
    its trip count) or whose ``n`` carries fit in :data:`RESIDUAL_BYTES` keeps every
    carry, in a buffer of ``n`` entries.

    Otherwise (``max_iterations=N`` with a large state: the loop may exit long before
    ``N``) XLA's static shapes rule out a buffer that grows with the iterations, and
    any buffer of ``N`` entries would be reserved whole, so the carries are kept as
    checkpoints in a fixed buffer of ``K`` entries (``K`` carries fit in
    :data:`RESIDUAL_BYTES`, at least 2) that is thinned as the loop runs: the carry
    of iteration ``i`` is kept when ``i`` is a multiple of a stride ``s`` (1 at first),
    in entry ``i // s``; when the buffer is full, every other entry is dropped and the
    stride doubles. Memory is ``K + 1`` carries whatever ``N`` and the trip count; a
    loop that runs at most ``K`` iterations keeps every carry (no recomputation); a
    longer one keeps every ``s``-th, and the backward pass recomputes each carry from
    its checkpoint (at most ``s - 1`` body runs, ``s < 2 * trips / K``).
    """
    c_fn, b_fn = e.fns
    init = bp.value(e.args[0])
    k = len(init)
    state_bytes = sum(int(np.prod(t.shape)) * t.type.dtype.itemsize for t in init)
    if exact_trips(e) or n * state_bytes <= RESIDUAL_BYTES:
        bufs = [zeros((max(n, 1),) + tuple(t.shape), t.type) for t in init]

        def cond_fun(state):
            (p,) = bp.inline(c_fn, list(state[:k]))
            return p

        def body_fun(state):
            carry, i = list(state[:k]), state[k]
            kept = [O.put_slice(b, [i] + [0] * c.rank, O.new_axis(c, 0))
                    for b, c in zip(state[k + 1:], carry)]
            return tuple(bp.inline(b_fn, carry)) + (i + 1,) + tuple(kept)

        outs = while_loop(cond_fun, body_fun, tuple(init) + (O.tensor(0),) + tuple(bufs))
        bp.aug[e.id] = (n, outs[k], list(outs[k + 1:]), None, 1)
        return outs[0].data.args[0]
    cap = max(2, min(n, RESIDUAL_BYTES // max(state_bytes, 1)) // 2 * 2)
    strides = 1
    while -(-n // strides) > cap:  # the largest stride the loop can reach
        strides *= 2
    bufs = [zeros((cap + 1,) + tuple(t.shape), t.type) for t in init]  # entry cap: scratch

    def thin(b, t):
        evens = O.slice(b, [0] * (t.rank + 1), (cap // 2,) + tuple(t.shape),
                        strides=[2] + [1] * t.rank)
        return O.concatenate([evens, zeros((cap // 2 + 1,) + tuple(t.shape), t.type)])

    def cond_fun(state):
        (p,) = bp.inline(c_fn, list(state[:k]))
        return p

    def body_fun(state):
        carry, i, s, kept = list(state[:k]), state[k], state[k + 1], list(state[k + 2:])
        full = O.logical_and(O.equal(O.remainder(i, s), 0), O.equal(O.quotient(i, s), cap))
        kept_s = cond(full, lambda: tuple(thin(b, t) for b, t in zip(kept, init)) + (s * 2,),
                      lambda: tuple(kept) + (s,))
        kept, s = list(kept_s[:-1]), kept_s[-1]
        slot = O.select(O.equal(O.remainder(i, s), 0), O.quotient(i, s), cap)
        kept = [O.put_slice(b, [slot] + [0] * c.rank, O.new_axis(c, 0))
                for b, c in zip(kept, carry)]
        return tuple(bp.inline(b_fn, carry)) + (i + 1, s) + tuple(kept)

    outs = while_loop(cond_fun, body_fun,
                      tuple(init) + (O.tensor(0), O.tensor(1)) + tuple(bufs))
    bp.aug[e.id] = (n, outs[k], list(outs[k + 2:]), outs[k + 1], strides)
    return outs[0].data.args[0]


def _carry_at(bp, e, t, bufs, stride, strides, outs_t):
    """The carry iteration ``t`` started from: read from the buffer, or recomputed
    from its checkpoint (see :func:`_replay_while`)."""
    if stride is None:
        return [O.reshape(O.slice(b, [t] + [0] * o.rank, (1,) + tuple(o.shape)), o.shape)
                for b, o in zip(bufs, outs_t)]
    c = O.quotient(t, stride)
    r = t - c * stride
    carry = [O.reshape(O.slice(b, [c] + [0] * o.rank, (1,) + tuple(o.shape)), o.shape)
             for b, o in zip(bufs, outs_t)]
    b_fn = e.fns[1]

    def again(state):  # a counting loop (bounded by a constant): differentiable again
        return (state[0] + 1,) + tuple(bp.inline(b_fn, list(state[1:])))
    out = while_loop(lambda state: O.logical_and(O.less(state[0], strides),
                                                 O.less(state[0], r)),
                     again, (O.tensor(0),) + tuple(carry))
    return list(out[1:])


def _backward_while(bp, e, gs, ct, dep):
    c_fn, b_fn = e.fns
    init_f = e.args[0]
    k = len(init_f)
    diff = [i for i in range(k) if differentiable(Tensor(None, *e.outs[i]))]
    caps = bp.captured([b_fn], dep)
    if not any(gs[i] is not None for i in diff):
        return
    if e.id not in bp.aug:
        raise ValueError(
            f"grad: cannot differentiate the while_loop{_where(e)}: reverse mode needs a "
            f"bound on its number of iterations known while tracing. Use fori_loop (or "
            f"a while_loop whose state holds a counter that starts at a constant, steps "
            f"by a constant and is compared with a constant), or pass max_iterations=N")
    bound, count, bufs, stride, strides = bp.aug[e.id]
    outs_t = [Tensor(None, *e.outs[i]) for i in range(k)]
    trips = control_axes(e, bp.ctx.vma)
    state0 = ([O.tensor(0)] + [gs[i] if gs[i] is not None else zeros_like(outs_t[i])
                               for i in diff] + [zeros_like(c) for c in caps])

    # a counting loop (0 up to the forward loop's bound, stopping at its actual count),
    # so that it is itself differentiable: second derivatives through loops
    def cond_fun(state):
        return O.logical_and(O.less(state[0], bound), O.less(state[0], count))

    def body_fun(state):
        carry = _carry_at(bp, e, count - 1 - state[0], bufs, stride, strides, outs_t)
        sub = Backprop(b_fn, {p.data.id: v for p, v in zip(b_fn.params, carry)},
                       parent=bp, diverge=trips)
        wanted = [b_fn.params[i].data.id for i in diff] + [c.id for c in caps]
        sub_dep = sub.depends(wanted)
        sub.replay(sub_dep)
        seeds = {}
        for n, i in enumerate(diff):
            add_to(seeds, b_fn.outputs[i].data.id, state[1 + n])
        cts = sub.backward(seeds, wanted, sub_dep)
        new_ct = []
        for n, i in enumerate(diff):
            c = cts.get(b_fn.params[i].data.id)
            new_ct.append(c if c is not None else zeros_like(outs_t[i]))
        new_caps = []
        for n, c in enumerate(caps):
            acc = state[1 + len(diff) + n]
            new_caps.append(acc + cts[c.id] if cts.get(c.id) is not None else acc)
        return (state[0] + 1,) + tuple(new_ct) + tuple(new_caps)

    out = while_loop(cond_fun, body_fun, tuple(state0))
    init_cts = [None] * k
    for n, i in enumerate(diff):
        init_cts[i] = out[1 + n]
    xs = [x.data if isinstance(x, Tensor) else x for x in init_f]
    # what the body left per-device: a carry's own axes (they include the trip
    # count's), a captured value's the trip count's (the body summed the rest)
    carried = bp.vma.get(e.id) if bp.vma is not None else None
    for i, (x, c) in enumerate(zip(xs, init_cts)):
        bp.accumulate(e, [x], [c], ct, dep, used=carried[i] if carried else None)
    bp.accumulate(e, caps, list(out[1 + len(diff):]), ct, dep, used=trips)


def _where(e):
    w = getattr(e.fns[1], "where", None)
    return f" ({w})" if w else ""


# ----------------------------------------------------------------------------------------
# cond: each branch differentiated under the same predicates
# ----------------------------------------------------------------------------------------
def _backward_cond(bp, e, gs, ct, dep):
    caps = bp.captured(e.fns, dep)
    if not caps:
        return

    axes = control_axes(e, bp.ctx.vma)

    def branch(fn):
        def run():
            sub = Backprop(fn, parent=bp, diverge=axes)
            wanted = [c.id for c in caps]
            sub_dep = sub.depends(wanted)
            sub.replay(sub_dep)
            seeds = {}
            for o, g in zip(fn.outputs, gs):
                if g is not None and differentiable(o):
                    add_to(seeds, o.data.id, g)
            cts = sub.backward(seeds, wanted, sub_dep)
            return tuple(cts.get(c.id) if cts.get(c.id) is not None else zeros_like(c)
                         for c in caps)
        return run

    clauses = [(bp.fwd(p), branch(fn)) for p, fn in zip(e.args, e.fns)]
    outs = cond(clauses + [(True, branch(e.fns[-1]))])
    # what the branches left per-device: the predicate's axes (they summed the rest)
    bp.accumulate(e, caps, outs, ct, dep, used=axes)


# ----------------------------------------------------------------------------------------
# shard_map: the body transposed in a shard_map of its own
# ----------------------------------------------------------------------------------------
def _backward_shard_map(bp, e, gs, ct, dep):
    (body,) = e.fns
    mesh, in_specs, out_specs = e.attrs["mesh"], e.attrs["in_specs"], e.attrs["out_specs"]
    inputs = e.tensor_args()
    for c in body.captures:
        if c.id in dep:
            raise ValueError("grad: a shard_map body closes over a value being "
                             "differentiated; pass it to the shard_map as an argument")
    n_in = len(inputs)
    outs_t = [Tensor(None, *o) for o in e.outs]
    g_in = [g if g is not None else zeros_like(o) for g, o in zip(gs, outs_t)]
    want = [i for i, x in enumerate(inputs) if x.id in dep and differentiable(x)]
    if not want:
        return
    in_axes = [s.used_axes for s in in_specs]

    def transposed(*params):
        xs, gs_local = params[:n_in], params[n_in:]
        vma = analyze(body, in_axes, mesh)
        sub = Backprop(body, {p.data.id: x for p, x in zip(body.params, xs)}, vma=vma,
                       mesh=mesh, keep=bp.keep)
        wanted = [body.params[i].data.id for i in want]
        sub_dep = sub.depends(wanted)
        sub.replay(sub_dep)
        seeds = {}
        for o, g, spec in zip(body.outputs, gs_local, out_specs):
            if not differentiable(o):
                continue
            named = spec.used_axes
            have = vma.get(o.data.id, frozenset())
            if named - have:  # tiled copies of an invariant value: their cotangents add
                g = psum(g, tuple(sorted(named - have)))
            if have - named:  # declared replicated, yet varying (check_vma=False)
                g = g / _axes_size(mesh, have - named)
            add_to(seeds, o.data.id, g)
        cts = sub.backward(seeds, wanted, sub_dep)
        out = []
        for i in want:
            c = cts.get(body.params[i].data.id)
            out.append(c if c is not None else zeros_like(body.params[i]))
        return tuple(out)

    res = shard_map(transposed, mesh, in_specs=[*in_specs, *out_specs],
                    out_specs=[in_specs[i] for i in want],
                    check_vma=False)(*[bp.fwd(x) for x in inputs], *g_in)
    bp.accumulate(e, [inputs[i] for i in want], list(res), ct, dep)


def _axes_size(mesh, axes):
    n = 1
    for a in axes:
        n *= mesh.shape[a]
    return n


BODY_RULES["while"] = (_replay_loop, _backward_while)
BODY_RULES["cond"] = (None, _backward_cond)
BODY_RULES["shard_map"] = (None, _backward_shard_map)
