"""``scan``, ``map`` and ``associative_scan``, with ``jax.lax``'s names, signatures and
semantics, as compositions of the ops and control flow below them.

``scan(f, init, xs)`` runs ``carry, y = f(carry, x)`` over the leading axis of ``xs`` and
stacks the ``y``'s. Inside a defn it is one ``while_loop`` (one ``stablehlo.while`` on
EXLA) whose body reads ``x`` with a dynamic slice and writes ``y`` with a dynamic update
slice, with ``unroll`` steps inside the body (the steps left over when ``unroll`` does not
divide the length run after the loop). Outside a defn it runs step by step in Python.
``vmap``, ``shard_map`` and every compiler see an ordinary loop.

Reverse mode keeps JAX's stacked residuals (``length`` copies of what one step's
backward pass reads, never a worst-case buffer): one step's forward and backward are
traced together and split, the forward loop stacks the values of the forward part that
the backward part reads, and the gradient is a reverse scan that reads them back (the
cotangents of the values ``f`` closes over are summed across the steps); no step runs
twice. Higher derivatives stack the carries instead and run each step again. The
differentiable results of one type share one backward scan.

>>> import nxpy as nx
>>> from nxpy.defn import jit, scan
>>> def cumsum(xs):
...     return scan(lambda c, x: (c + x, c + x), nx.tensor(0.0), xs)
>>> carry, ys = jit(cumsum)(nx.tensor([1.0, 2.0, 3.0]))
>>> carry.tolist(), ys.tolist()
(6.0, [1.0, 3.0, 6.0])
>>> carry, ys = cumsum(nx.tensor([1.0, 2.0, 3.0]))   # eagerly
>>> ys.tolist()
[1.0, 3.0, 6.0]
"""
from __future__ import annotations

import numbers

from ... import _context
from ... import ops as O
from ... import shape as S
from ...tensor import Tensor, shape_str
from .. import tree as tree_mod
from ..expr import EXPR, Expr, trace_fn
from .grad import Backprop, body_context, custom_grad
from .grad_rules import zeros
from ..kernel import fori_loop, while_loop
from .vmap import vmap

__all__ = ["scan", "map", "associative_scan"]


# ----------------------------------------------------------------------------------------
# scan
# ----------------------------------------------------------------------------------------
def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``(carry, ys)``: ``carry, y = f(carry, x)`` for each ``x`` along the leading axis
    of ``xs`` (last to first with ``reverse=True``), the ``y``'s stacked along a new
    leading axis (in ``xs``'s order), as ``jax.lax.scan``.

    ``init`` and ``xs`` may be containers (tuples, lists, dicts, namedtuples, ...): every
    leaf of ``xs`` is sliced along its leading axis, and ``y`` may be any container. The
    body must return a carry with ``init``'s structure, shapes and types. ``xs=None``
    needs ``length`` (``f`` then receives ``None``). ``unroll`` (an int >= 1, or ``True``
    for all steps) puts that many steps in each iteration of the loop.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit, scan
    >>> def rnn(h, x):                 # containers as carry and ys
    ...     h = nx.tanh(0.5 * h + x)
    ...     return h, {"h": h, "sq": h * h}
    >>> h, ys = jit(lambda xs: scan(rnn, nx.tensor(0.0), xs, reverse=True, unroll=2))(
    ...     nx.tensor([1.0, 2.0, 3.0]))
    >>> [round(v, 4) for v in ys["h"].tolist()]
    [0.9039, 0.9865, 0.9951]
    >>> scan(lambda c, _: (c * 2, c), nx.tensor(1), length=4)[1].tolist()
    [1, 2, 4, 8]
    >>> scan(lambda c, x: (nx.sum(c + x), None), nx.tensor([0.0]),
    ...      nx.tensor([1.0, 2.0]))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: scan: the body must return a carry with init's structure, shapes and types:
    carry leaf 0 (carry) is f32[1] in init, but the body returned f32 for it
    """
    if not callable(f):
        raise TypeError(f"scan: expected f to be a callable, got {f!r}")
    reverse = S.boolean(reverse, "scan: reverse")
    unroll = _check_unroll(unroll)
    if xs is None:
        x_leaves, x_tree = [], None
    else:
        x_leaves, x_tree = tree_mod.flatten(xs)
        x_leaves = [O.to_tensor(x, f"xs leaf {i}") for i, x in enumerate(x_leaves)]
    n = _length(x_leaves, x_tree, length)
    c_leaves, c_tree = tree_mod.flatten(init)
    c_leaves = [O.to_tensor(c, f"init leaf {i}") for i, c in enumerate(c_leaves)]
    body = _Body(f, c_tree, c_leaves, x_tree)
    if not _context.tracing():
        return _eager_scan(body, c_leaves, x_leaves, n, reverse)
    return _traced_scan(body, c_leaves, x_leaves, n, reverse, unroll)


def _check_unroll(unroll):
    S.not_traced(unroll, "scan: unroll")
    if unroll is True:
        return None  # every step
    if unroll is False:
        return 1
    u = S.as_int(unroll)
    if u is None or u < 1:
        raise ValueError(f"scan: expected unroll to be a positive integer or True, got "
                         f"{unroll!r}")
    return u


def _length(x_leaves, x_tree, length):
    if length is not None:
        S.not_traced(length, "scan: length")
        n = S.as_int(length)
        if n is None or n < 0:
            raise ValueError(f"scan: expected length to be a non-negative integer, got "
                             f"{length!r}")
    else:
        n = None
    paths = _paths(x_tree) if x_tree is not None else []
    for p, x in zip(paths, x_leaves):
        if x.rank == 0:
            raise ValueError(f"scan: every leaf of xs needs a leading axis to scan over, "
                             f"got a scalar at xs{p}")
    lengths = sorted({x.shape[0] for x in x_leaves})
    if len(lengths) > 1:
        found = ", ".join(f"xs{p}: {x.shape[0]}" for p, x in zip(paths, x_leaves))
        raise ValueError(f"scan: expected every leaf of xs to have the same leading axis "
                         f"length, got {found}")
    if lengths and n is not None and lengths[0] != n:
        raise ValueError(f"scan: length {n} does not match the leading axis length "
                         f"{lengths[0]} of xs")
    if n is None:
        if not lengths:
            raise ValueError("scan: expected length when xs is None (or has no leaves)")
        n = lengths[0]
    return n


def _paths(tree) -> list[str]:
    """The path of each leaf of a container description, as ``[0]['w']``."""
    out = []

    def rec(t, p):
        if t == tree_mod.LEAF:
            out.append(p)
        elif t is None:
            return
        elif t[0] in ("tuple", "list"):
            for i, c in enumerate(t[1]):
                rec(c, f"{p}[{i}]")
        elif t[0] == "dict":
            for k, c in zip(t[1], t[2]):
                rec(c, f"{p}[{k!r}]")
        else:
            names = t[3] if t[3] is not None else range(len(t[4]))
            for k, c in zip(names, t[4]):
                rec(c, f"{p}.{k}" if isinstance(k, str) else f"{p}[{k}]")
    rec(tree, "")
    return out


def _desc(x):
    return f"{x.type}{shape_str(x.shape)}"


class _Body:
    """``f`` on flat leaves: ``step(carry_leaves, x_leaves) -> (carry_leaves, y_leaves)``,
    checking that the carry keeps its structure, shapes and types."""

    def __init__(self, f, c_tree, c_init, x_tree):
        self.f, self.c_tree, self.x_tree = f, c_tree, x_tree
        self.templates = [(c.shape, c.type) for c in c_init]
        self.paths = _paths(c_tree)
        self.y_tree = None

    def __call__(self, c_leaves, x_leaves):
        carry = tree_mod.unflatten(self.c_tree, c_leaves)
        x = tree_mod.unflatten(self.x_tree, x_leaves) if self.x_tree is not None else None
        out = self.f(carry, x)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TypeError(f"scan: the body must return a pair (carry, y), got "
                            f"{type(out).__name__}")
        new, y = out
        leaves, tree = tree_mod.flatten(new)
        if tree != self.c_tree:
            raise ValueError(f"scan: the body must return a carry with init's structure "
                             f"{tree_mod.tree_str(self.c_tree)}, got "
                             f"{tree_mod.tree_str(tree)}")
        fixed = []
        for i, (o, (s, t), p) in enumerate(zip(leaves, self.templates, self.paths)):
            o = O.full((), o, type=t) if isinstance(o, numbers.Number) else \
                O.to_tensor(o, f"carry leaf {i}")
            if o.shape != s or o.type != t:
                raise (ValueError if o.shape != s else TypeError)(
                    f"scan: the body must return a carry with init's structure, shapes and "
                    f"types: carry leaf {i} (carry{p}) is {t}{shape_str(s)} in init, but the "
                    f"body returned {_desc(o)} for it")
            fixed.append(o)
        y_leaves, y_tree = tree_mod.flatten(y)
        y_leaves = [O.to_tensor(v, f"y leaf {i}") for i, v in enumerate(y_leaves)]
        self.y_tree = y_tree
        return fixed, y_leaves


def _row(x, i):
    """``x[i]`` for a (traced or constant) index ``i``."""
    return O.reshape(O.slice(x, [i] + [0] * (x.rank - 1), (1,) + tuple(x.shape[1:])),
                     x.shape[1:])


def _put_row(buf, i, v):
    return O.put_slice(buf, [i] + [0] * v.rank, O.new_axis(v, 0))


def _eager_scan(body, c_leaves, x_leaves, n, reverse):
    carry, ys = list(c_leaves), []
    order = range(n - 1, -1, -1) if reverse else range(n)
    for i in order:
        carry, y = body(carry, [_row(x, i) for x in x_leaves])
        ys.append(y)
    if reverse:
        ys.reverse()
    if n == 0:  # the shapes of y come from a trace of one step
        fn = trace_fn(lambda *a: body(list(a[:len(carry)]), list(a[len(carry):])),
                      [(c.shape, c.type, c.names) for c in carry]
                      + [(x.shape[1:], x.type, None) for x in x_leaves])
        stacked = [zeros((0,) + tuple(o.shape), o.type) for o in fn.outputs[len(carry):]]
    else:
        stacked = [O.stack([y[j] for y in ys]) for j in range(len(ys[0]))]
    return (tree_mod.unflatten(body.c_tree, carry), tree_mod.unflatten(body.y_tree, stacked))


def _traced_scan(body, c_leaves, x_leaves, n, reverse, unroll):
    c_leaves = [EXPR.lift(c, f"init leaf {i}") for i, c in enumerate(c_leaves)]
    x_leaves = [EXPR.lift(x, f"xs leaf {i}") for i, x in enumerate(x_leaves)]
    nc = len(c_leaves)
    # one step traced on its own: the shapes of y, and what f closes over (for grad)
    step = trace_fn(lambda *a: body(list(a[:nc]), list(a[nc:])),
                    [(c.shape, c.type, c.names) for c in c_leaves]
                    + [(x.shape[1:], x.type, None) for x in x_leaves],
                    parent=_context.current())
    y_tree = body.y_tree
    y_tmpl = [(o.shape, o.type) for o in step.outputs[nc:]]
    ny = len(y_tmpl)
    diff = _context.grad_depth() > 0
    u = max(n, 1) if unroll is None else min(unroll, max(n, 1))
    blocks, rem = divmod(n, u)

    def pos(t):  # the row of xs/ys step t reads and writes
        return n - 1 - t if reverse else t

    def run_step(t, carry, ys, res):
        if res is not None:
            res = [_put_row(r, t, c) for r, c in zip(res, carry)]
        carry, y = body(carry, [_row(x, pos(t)) for x in x_leaves])
        ys = [_put_row(b, pos(t), v) for b, v in zip(ys, y)]
        return carry, ys, res

    ys0 = [zeros((n,) + tuple(s), t) for s, t in y_tmpl]
    res0 = [zeros((n,) + tuple(c.shape), c.type) for c in c_leaves] if diff else None
    k_res = nc if diff else 0

    def loop_body(state):
        t, carry = state[0], list(state[1:1 + nc])
        ys = list(state[1 + nc:1 + nc + ny])
        res = list(state[1 + nc + ny:1 + nc + ny + k_res]) if diff else None
        for j in range(u):
            carry, ys, res = run_step(t + j, carry, ys, res)
        rest = (state[-1],) if diff else ()
        return (t + u,) + tuple(carry) + tuple(ys) + tuple(res or ()) + rest

    stop = blocks * u
    if n == 0:  # no steps: the carry as it came in, empty ys
        return tree_mod.unflatten(body.c_tree, c_leaves), tree_mod.unflatten(y_tree, ys0)
    # inside a shard_map body: the step's mesh and the axes its values vary along, with
    # which its gradient transposes its collectives (computed here, where they are known)
    local = body_context(step, c_leaves + x_leaves, carry=nc) if diff else (None, None)
    if diff and _context.grad_depth() == 1:
        plan = _Residuals.plan(step, c_leaves, x_leaves, local)
        if plan is not None:
            carry, ys = plan.run(n, reverse, u)
            return tree_mod.unflatten(body.c_tree, carry), tree_mod.unflatten(y_tree, ys)
    if diff and _context.grad_depth() == 1:
        # the bound rides in the state, so that grad does not record every iteration's
        # state (ys buffers included) for the loop: the residuals are the carries above.
        # (A second derivative differentiates this loop itself: it keeps a bound it sees.)
        state = while_loop(lambda s: O.less(s[0], s[-1]), loop_body,
                           (O.tensor(0),) + tuple(c_leaves) + tuple(ys0) + tuple(res0)
                           + (O.tensor(stop),))
    else:
        state = while_loop(lambda s: O.less(s[0], stop), loop_body,
                           (O.tensor(0),) + tuple(c_leaves) + tuple(ys0) + tuple(res0 or ())
                           + ((O.tensor(stop),) if diff else ()))
    carry = list(state[1:1 + nc])
    ys = list(state[1 + nc:1 + nc + ny])
    res = list(state[1 + nc + ny:1 + nc + ny + k_res]) if diff else None
    for t in range(stop, stop + rem):
        carry, ys, res = run_step(t, carry, ys, res)
    if diff:
        carry, ys = _with_gradient(step, c_leaves, x_leaves, carry, ys, res, n, reverse, local)
    return tree_mod.unflatten(body.c_tree, carry), tree_mod.unflatten(y_tree, ys)


def _targets(step, c_leaves, x_leaves):
    """What a scan's gradient differentiates with respect to: ``(dc, dx, caps, targets,
    wanted)``, the float carry and xs leaves (positions), the float values the step closes
    over, those three as the scan's values, and as the step's node ids."""
    nc = len(c_leaves)
    caps = [Tensor(c, c.shape, c.type, c.names, EXPR) for c in step.captures
            if isinstance(c, Expr) and c.type.is_inexact and c.op not in ("constant", "tensor")]
    dc = [i for i, c in enumerate(c_leaves) if c.type.is_inexact]
    dx = [i for i, x in enumerate(x_leaves) if x.type.is_inexact]
    targets = [c_leaves[i] for i in dc] + [x_leaves[i] for i in dx] + caps
    wanted = ([step.params[i].data.id for i in dc] + [step.params[nc + i].data.id for i in dx]
              + [c.data.id for c in caps])
    return dc, dx, caps, targets, wanted


class _Residuals:
    """A first-order gradient of a scan that keeps the residuals, as JAX does: one step's
    forward and backward are traced together into ``bwd(carry, x, seeds) -> (carry', y,
    cotangents)`` and split (partial evaluation) into what does not depend on the seeds
    (run by the forward loop) and what does (run by the backward loop). The forward loop
    stacks, step by step, the values of the first part that the second part reads (the
    residuals: a ``tanh``'s output, a ``dot``'s operands, the carry a step started from);
    the backward loop reads them back, so no step is computed twice. Values that depend
    on neither the carry nor ``x`` (weights, constants) are read where they are, not
    stacked."""

    @classmethod
    def plan(cls, step, c_leaves, x_leaves, local=(None, None)):
        """The plan for ``step`` (one traced step), or None when a residual is a value
        this scheme does not stack (a multi-result node) and the step is recomputed.
        ``local``: the mesh and axes the step is differentiated with (:func:`body_context`)."""
        self = cls()
        mesh, vma = local
        self.summed = vma is not None
        nc, n_in = len(c_leaves), len(step.params)
        self.c_leaves, self.x_leaves, self.nc = c_leaves, x_leaves, nc
        self.dc, self.dx, self.caps, targets, wanted = _targets(step, c_leaves, x_leaves)
        outs = step.outputs
        self.n_out = len(outs)
        self.seeded = [i for i, o in enumerate(outs) if o.type.is_inexact]
        if not wanted or not self.seeded:
            return None

        def fwd_and_bwd(*a):
            sub = Backprop(step, {p.data.id: v for p, v in zip(step.params, a[:n_in])},
                           mesh=mesh, vma=vma)
            dep = sub.depends(wanted)
            sub.replay(dep)
            seeds = {}
            for i, g in zip(self.seeded, a[n_in:]):
                o = outs[i].data.id
                seeds[o] = g if seeds.get(o) is None else seeds[o] + g
            cts = sub.backward(seeds, wanted, dep)
            return ([sub.fwd(o.data) for o in outs]
                    + [cts[w] if cts.get(w) is not None else zeros(t.shape, t.type)
                       for w, t in zip(wanted, targets)])

        self.bwd = bwd = trace_fn(
            fwd_and_bwd, [(p.shape, p.type, p.names) for p in step.params]
            + [(outs[i].shape, outs[i].type, None) for i in self.seeded],
            parent=_context.current())
        probe = Backprop(bwd)
        params = bwd.params[:n_in]
        unknown = probe.depends([p.data.id for p in bwd.params[n_in:]])
        varies = probe.depends([p.data.id for p in params])  # per step (known or not)
        out_ids = [o.data.id for o in bwd.outputs]
        # what the backward part reads of the forward part: the residuals
        reads = set(out_ids[self.n_out:])
        for e in bwd.nodes:
            if e.id in unknown and e.op != "parameter":
                reads.update(d.id for d in e.deps())
        res = [e for e in bwd.nodes if e.id in reads and e.id in varies and e.id not in unknown]
        if any(e.outs is not None for e in res):
            return None
        x_ids = {p.data.id: j for j, p in enumerate(params[nc:])}
        self.res_x = [(e.id, x_ids[e.id]) for e in res if e.id in x_ids]  # read from xs
        self.res = [e for e in res if e.id not in x_ids]  # stacked
        self.forward_nodes = _needed(bwd, out_ids[:self.n_out] + [e.id for e in self.res],
                                     lambda e: e.id not in unknown, effects=True)
        self.backward_nodes = _needed(bwd, out_ids[self.n_out:],
                                      lambda e: e.id in unknown or e.id not in varies)
        self.targets = targets
        return self

    def run(self, n, reverse, u):
        """The scan's ``(carry, ys)`` leaves, with this gradient attached."""
        nc, bwd = self.nc, self.bwd
        x_leaves = self.x_leaves
        y_tmpl = [(o.shape, o.type) for o in bwd.outputs[nc:self.n_out]]
        ny, nr = len(y_tmpl), len(self.res)

        def pos(t):
            return n - 1 - t if reverse else t

        def run_step(t, carry, ys, rs):
            xr = [_row(x, pos(t)) for x in x_leaves]
            fb = Backprop(bwd, {p.data.id: v for p, v in zip(bwd.params, carry + xr)},
                          keep=True)
            for e in self.forward_nodes:
                fb.env[e.id] = fb.copy(e)
            out = [fb.fwd(o.data) for o in bwd.outputs[:self.n_out]]
            ys = [_put_row(b, pos(t), v) for b, v in zip(ys, out[nc:])]
            rs = [_put_row(b, t, fb.fwd(e)) for b, e in zip(rs, self.res)]
            return out[:nc], ys, rs

        def loop_body(state):
            t, carry = state[0], list(state[1:1 + nc])
            ys = list(state[1 + nc:1 + nc + ny])
            rs = list(state[1 + nc + ny:1 + nc + ny + nr])
            for j in range(u):
                carry, ys, rs = run_step(t + j, carry, ys, rs)
            return (t + u,) + tuple(carry) + tuple(ys) + tuple(rs) + (state[-1],)

        blocks, rem = divmod(n, u)
        ys0 = [zeros((n,) + tuple(s), t) for s, t in y_tmpl]
        rs0 = [zeros((n,) + tuple(e.shape), e.type) for e in self.res]
        # the bound rides in the state: grad does not record this loop's iterations
        state = while_loop(lambda s: O.less(s[0], s[-1]), loop_body,
                           (O.tensor(0),) + tuple(self.c_leaves) + tuple(ys0) + tuple(rs0)
                           + (O.tensor(blocks * u),))
        carry = list(state[1:1 + nc])
        ys = list(state[1 + nc:1 + nc + ny])
        rs = list(state[1 + nc + ny:1 + nc + ny + nr])
        for t in range(blocks * u, n):
            carry, ys, rs = run_step(t, carry, ys, rs)
        return _attach(carry + ys, self.targets,
                       lambda gs: self._backward(gs, rs, n, reverse), nc, self.summed)

    def _backward(self, gs, rs, n, reverse):
        """Cotangents of the targets given ``gs`` (result index → cotangent): a reverse
        scan over the steps, each reading its residuals."""
        nc, bwd, dc = self.nc, self.bwd, self.dc
        n_in = nc + len(self.x_leaves)
        nd, ncap = len(dc), len(self.caps)
        c_tmpl = [self.c_leaves[i] for i in dc]

        def body(k, state):
            t = n - 1 - k
            p = n - 1 - t if reverse else t
            g_c = list(state[:nd])
            acc = list(state[nd:nd + ncap])
            g_xs = list(state[nd + ncap:])
            env = {e.id: _row(b, t) for e, b in zip(self.res, rs)}
            for node, j in self.res_x:
                env[node] = _row(self.x_leaves[j], p)
            by_carry = dict(zip(dc, g_c))
            for i, sp in zip(self.seeded, bwd.params[n_in:]):
                o = bwd.outputs[i]
                if i < nc:
                    g = by_carry.get(i)
                else:
                    g = _row(gs[i], p) if i in gs else None
                env[sp.data.id] = g if g is not None else zeros(o.shape, o.type)
            bb = Backprop(bwd, env, keep=True)
            for e in self.backward_nodes:
                bb.env[e.id] = bb.copy(e)
            cts = [bb.fwd(o.data) for o in bwd.outputs[self.n_out:]]
            new_c, new_x, new_caps = cts[:nd], cts[nd:nd + len(self.dx)], cts[nd + len(self.dx):]
            return (tuple(new_c) + tuple(a + c for a, c in zip(acc, new_caps))
                    + tuple(_put_row(b, p, c) for b, c in zip(g_xs, new_x)))

        g_c0 = [gs[i] if i in gs else zeros(c.shape, c.type) for i, c in zip(dc, c_tmpl)]
        state = (tuple(g_c0) + tuple(zeros(c.shape, c.type) for c in self.caps)
                 + tuple(zeros(self.x_leaves[i].shape, self.x_leaves[i].type)
                         for i in self.dx))
        out = fori_loop(0, n, body, state)
        g_c, acc, g_xs = list(out[:nd]), list(out[nd:nd + ncap]), list(out[nd + ncap:])
        return g_c + g_xs + acc


def _needed(fn, roots, allowed, effects=False):
    """The nodes of ``fn`` (in order, parameters left out) that ``roots`` (node ids) read,
    through nodes that pass ``allowed`` (and ``fn``'s effects, with ``effects``)."""
    by_id = {e.id: e for e in fn.nodes}
    stack = list(roots) + ([e.id for e in fn.scope.effects if allowed(e)] if effects else [])
    seen = set()
    while stack:
        i = stack.pop()
        e = by_id.get(i)
        if i in seen or e is None or not allowed(e):
            continue
        seen.add(i)
        stack.extend(d.id for d in e.deps())
    return [e for e in fn.nodes if e.id in seen and e.op != "parameter"]


def _with_gradient(step, c_leaves, x_leaves, carry, ys, res, n, reverse, local=(None, None)):
    """The results, given a gradient that is a reverse scan over the stacked carries
    ``res``, each step recomputed from its carry and differentiated (the fallback of
    :class:`_Residuals`: higher derivatives, residuals it does not stack) with ``local``'s
    mesh and axes."""
    mesh, vma = local
    nc = len(c_leaves)
    dc, dx, caps, inputs, wanted = _targets(step, c_leaves, x_leaves)
    if not inputs:
        return carry, ys

    def backward(gs):
        """Cotangents of ``inputs`` given ``gs``: result index → its cotangent."""
        def body(k, state):
            t = n - 1 - k
            p = n - 1 - t if reverse else t
            g_c = list(state[:len(dc)])
            acc = list(state[len(dc):len(dc) + len(caps)])
            g_xs = list(state[len(dc) + len(caps):])
            args = [_row(r, t) for r in res] + [_row(x, p) for x in x_leaves]
            sub = Backprop(step, {q.data.id: a for q, a in zip(step.params, args)},
                           mesh=mesh, vma=vma)
            dep = sub.depends(wanted)
            sub.replay(dep)
            seeds = {}
            for j, i in enumerate(dc):
                seeds[step.outputs[i].data.id] = g_c[j]
            for i, g in gs.items():
                if i >= nc:
                    o = step.outputs[i].data.id
                    g_row = _row(g, p)
                    seeds[o] = g_row if seeds.get(o) is None else seeds[o] + g_row
            cts = sub.backward(seeds, wanted, dep)
            new_c = [cts.get(w, zeros(c_leaves[i].shape, c_leaves[i].type))
                     for w, i in zip(wanted[:len(dc)], dc)]
            new_acc = [a + cts[w] if cts.get(w) is not None else a
                       for a, w in zip(acc, wanted[len(dc) + len(dx):])]
            new_xs = [_put_row(b, p, cts[w]) if cts.get(w) is not None else b
                      for b, w in zip(g_xs, wanted[len(dc):len(dc) + len(dx)])]
            return tuple(new_c) + tuple(new_acc) + tuple(new_xs)

        g_c0 = [gs[i] if i in gs else zeros(c_leaves[i].shape, c_leaves[i].type)
                for i in dc]
        state = (tuple(g_c0) + tuple(zeros(c.shape, c.type) for c in caps)
                 + tuple(zeros(x_leaves[i].shape, x_leaves[i].type) for i in dx))
        out = fori_loop(0, n, body, state)
        g_c = list(out[:len(dc)])
        acc = list(out[len(dc):len(dc) + len(caps)])
        g_xs = list(out[len(dc) + len(caps):])
        return g_c + g_xs + acc

    return _attach(list(carry) + list(ys), inputs, backward, nc, vma is not None)


def _attach(outs, inputs, backward, nc, summed=False):
    """``outs`` (the carry's leaves, then the ys'), whose gradient with respect to
    ``inputs`` is ``backward({result index: cotangent})``, split into ``(carry, ys)``. The
    differentiable results of one type share one backward scan (they are flattened into
    one vector that carries the gradient), so a loss of the carry and of the ys runs the
    backward scan once. ``summed``: ``backward`` summed the cotangents over the mesh axes
    along which their inputs were used as replicated copies (see ``custom_grad``)."""
    outs = list(outs)
    by_type: dict = {}
    for i, v in enumerate(outs):
        if v.type.is_inexact:
            by_type.setdefault(v.type, []).append(i)
    for members in by_type.values():
        sizes = [outs[i].size for i in members]
        flat = [O.reshape(outs[i], (outs[i].size,)) for i in members]
        whole = flat[0] if len(flat) == 1 else O.concatenate(flat)

        def grad_fun(g, members=members, sizes=sizes):
            gs, off = {}, 0
            for i, size in zip(members, sizes):
                gs[i] = O.reshape(O.slice(g, [off], [size]), outs[i].shape)
                off += size
            return backward(gs)
        whole = custom_grad(whole, inputs, grad_fun, summed=summed)
        off = 0
        for i, size in zip(members, sizes):
            outs[i] = O.reshape(O.slice(whole, [off], [size]), outs[i].shape)
            off += size
    return outs[:nc], outs[nc:]


# ----------------------------------------------------------------------------------------
# map
# ----------------------------------------------------------------------------------------
def map(f, xs, *, batch_size=None):  # jax.lax.map's name
    """``f`` applied to each slice of ``xs`` along its leading axis, the results stacked
    (``jax.lax.map``): a ``scan`` with no carry. With ``batch_size``, ``f`` is ``vmap``-ed
    over batches of that many slices (the remainder in one last batch), as JAX does.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit, map
    >>> sq = jit(lambda xs: map(lambda x: nx.sum(x * x), xs))
    >>> sq(nx.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist()
    [5.0, 25.0]
    """
    if not callable(f):
        raise TypeError(f"map: expected f to be a callable, got {f!r}")
    if batch_size is None:
        return scan(lambda _, x: ((), f(x)), (), xs)[1]
    S.not_traced(batch_size, "map: batch_size")
    b = S.as_int(batch_size)
    if b is None or b < 1:
        raise ValueError(f"map: expected batch_size to be a positive integer, got "
                         f"{batch_size!r}")
    leaves, tree = tree_mod.flatten(xs)
    leaves = [O.to_tensor(x, f"xs leaf {i}") for i, x in enumerate(leaves)]
    n = _length(leaves, tree, None)
    blocks, rem = divmod(n, b)
    outs = []
    if blocks:
        main = [O.reshape(O.slice(x, [0] * x.rank, (blocks * b,) + tuple(x.shape[1:])),
                          (blocks, b) + tuple(x.shape[1:])) for x in leaves]
        ys = scan(lambda _, x: ((), vmap(f)(x)), (), tree_mod.unflatten(tree, main))[1]
        y_leaves, y_tree = tree_mod.flatten(ys)
        outs.append([O.reshape(y, (blocks * b,) + tuple(y.shape[2:])) for y in y_leaves])
    if rem:
        tail = [O.slice(x, [blocks * b] + [0] * (x.rank - 1), (rem,) + tuple(x.shape[1:]))
                for x in leaves]
        y_leaves, y_tree = tree_mod.flatten(vmap(f)(tree_mod.unflatten(tree, tail)))
        outs.append(y_leaves)
    if len(outs) == 1:
        return tree_mod.unflatten(y_tree, outs[0])
    return tree_mod.unflatten(y_tree, [O.concatenate([a, c]) for a, c in zip(*outs)])


# ----------------------------------------------------------------------------------------
# associative_scan
# ----------------------------------------------------------------------------------------
def associative_scan(fn, elems, reverse=False, axis=0):
    """The inclusive prefix scan of ``elems`` along ``axis`` with the associative
    function ``fn`` (``jax.lax.associative_scan``, JAX's parallel algorithm: about
    ``2 log2(n)`` rounds of ``fn`` on strided slices, interleaved back with pads).
    ``fn(a, b)`` combines two containers shaped like ``elems`` (sliced along ``axis``)
    elementwise; it need not be commutative (``a`` holds the earlier elements).

    >>> import nxpy as nx
    >>> from nxpy.defn import associative_scan
    >>> associative_scan(nx.add, nx.tensor([1, 2, 3, 4, 5])).tolist()
    [1, 3, 6, 10, 15]
    >>> associative_scan(nx.max, nx.tensor([2, 1, 4, 3]), reverse=True).tolist()
    [4, 4, 4, 3]
    """
    if not callable(fn):
        raise TypeError(f"associative_scan: expected fn to be a callable, got {fn!r}")
    reverse = S.boolean(reverse, "associative_scan: reverse")
    leaves, tree = tree_mod.flatten(elems)
    leaves = [O.to_tensor(x, f"elems leaf {i}") for i, x in enumerate(leaves)]
    if not leaves:
        raise ValueError("associative_scan: expected elems to hold at least one tensor")
    rank = leaves[0].rank
    ax = S.integer(axis, "associative_scan: axis")
    if not -rank <= ax < max(rank, 1):
        raise ValueError(f"associative_scan: axis {axis!r} out of range for rank {rank}")
    ax %= max(rank, 1)
    for i, x in enumerate(leaves):
        if x.rank <= ax or x.shape[ax] != leaves[0].shape[ax]:
            raise ValueError(f"associative_scan: expected every leaf of elems to have the "
                             f"same length along axis {ax}, got "
                             f"{[_desc(v) for v in leaves]}")
    if reverse:
        leaves = [O.reverse(x, axes=[ax]) for x in leaves]

    def combine(a, b):
        out = fn(tree_mod.unflatten(tree, a), tree_mod.unflatten(tree, b))
        out_leaves, out_tree = tree_mod.flatten(out)
        if out_tree != tree:
            raise ValueError(f"associative_scan: fn must return elems' structure "
                             f"{tree_mod.tree_str(tree)}, got {tree_mod.tree_str(out_tree)}")
        out_leaves = [O.to_tensor(v, "fn's result") for v in out_leaves]
        for v, x in zip(out_leaves, a):
            if v.shape != x.shape:
                raise ValueError(f"associative_scan: fn must combine elementwise, keeping "
                                 f"the shape {_desc(x)} of its inputs, got {_desc(v)}")
        return out_leaves

    def sl(x, start, stop, stride=1):
        d = x.shape[ax]
        stop = d + stop if stop is not None and stop < 0 else (d if stop is None else stop)
        starts = [0] * x.rank
        starts[ax] = start
        lengths = list(x.shape)
        lengths[ax] = max(0, stop - start)  # Nx's slice: the span, before striding
        strides = [1] * x.rank
        strides[ax] = stride
        return O.slice(x, starts, lengths, strides)

    def interleave(a, b):
        same = a.shape[ax] == b.shape[ax]
        cfg_a = [(0, 0, 0)] * a.rank
        cfg_b = [(0, 0, 0)] * b.rank
        cfg_a[ax] = (0, 1 if same else 0, 1)
        cfg_b[ax] = (1, 0 if same else 1, 1)
        pa = O.pad(a, O.full((), 0, type=a.type), cfg_a)
        pb = O.pad(b, O.full((), 0, type=b.type), cfg_b)
        return O.logical_or(pa, pb) if a.type.is_pred else O.add(pa, pb)

    def run(xs):
        d = xs[0].shape[ax]
        if d < 2:
            return xs
        reduced = combine([sl(x, 0, -1, 2) for x in xs], [sl(x, 1, None, 2) for x in xs])
        odd = run(reduced)
        if d % 2 == 0:
            even = combine([sl(e, 0, -1) for e in odd], [sl(x, 2, None, 2) for x in xs])
        else:
            even = combine(odd, [sl(x, 2, None, 2) for x in xs])
        even = [O.concatenate([sl(x, 0, 1), e], axis=ax) for x, e in zip(xs, even)]
        return [interleave(e, o) for e, o in zip(even, odd)]

    out = run(leaves)
    if reverse:
        out = [O.reverse(x, axes=[ax]) for x in out]
    return tree_mod.unflatten(tree, out)
