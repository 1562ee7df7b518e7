"""Automatic differentiation: ``grad``, ``value_and_grad``, ``stop_grad``, ``custom_grad``.

Gradients are a transform of the traced Expr graph into another Expr graph (as Nx's
``Nx.Defn.Grad``; reverse mode, with JAX's rules): ``grad(fun)(x)`` traces ``fun`` on fresh
parameters, replays the traced nodes where it was called (so values ``fun`` closes over
are constants, as in JAX), then walks them backwards from the output, asking each op's
rule (:mod:`nxpy.defn.grad_rules`) for its inputs' cotangents. The result is ordinary
nodes, printed by ``debug_expr``, cached like any defn and run by every compiler, none
of which knows about gradients. Called outside a defn, ``grad(fun)`` jits itself.

>>> import nxpy as nx
>>> from nxpy.defn import grad, value_and_grad, jit
>>> grad(lambda x: nx.sum(x * x))(nx.tensor([1.0, 2.0])).tolist()
[2.0, 4.0]
>>> f = jit(lambda x, y: value_and_grad(lambda a, b: nx.sum(a * b), argnums=(0, 1))(x, y))
>>> value, (dx, dy) = f(nx.tensor([1.0, 2.0]), nx.tensor([3.0, 4.0]))
>>> value.tolist(), dx.tolist(), dy.tolist()
(11.0, [3.0, 4.0], [1.0, 2.0])
>>> grad(lambda x: nx.sin(x))(nx.tensor([1.0]))  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
ValueError: grad: the function must return a scalar to differentiate, got f32[1] (reduce it,
for example with nx.sum)

Control flow: ``cond`` differentiates through the branch taken; ``while_loop`` in reverse
mode needs a bound on its trip count known while tracing: a counting loop
(``fori_loop``, or ``while_loop`` whose state holds a counter that starts at a constant,
steps by a constant and is compared with a constant), or ``max_iterations=N``; the
carries of each iteration are kept (a counting loop's in a buffer of its trip count; a
``max_iterations`` loop's, when ``N`` of them would exceed ``RESIDUAL_BYTES``, as
checkpoints in a fixed buffer thinned as the loop runs, so memory does not grow with
``N``: see ``Backprop._replay_while``) and the loop is run backwards. Collectives
inside ``shard_map`` are transposed as JAX transposes them, with the varying/invariant
axes of every value (:mod:`nxpy.defn.varying`) deciding where a cotangent is summed
across devices.
"""
from __future__ import annotations

import functools

import numpy as np

from .. import _context
from .. import ops as O
from .. import shape as S, types as T
from ..ops import primitive
from ..tensor import Tensor, shape_str
from . import sharding as SH
from . import tree as tree_mod
from .collectives import current_mesh, psum
from .core import Transform
from .expr import EFFECTS, EXPR, Expr, Fn, Scope, trace_fn
from .grad_rules import (GRAD_RULES, NON_DIFFERENTIABLE, non_differentiable, unbroadcast,
                         zeros)
from .kernel import cond, while_loop
from .shard_map import shard_map
from .varying import analyze, analyze_nodes, control_axes, op_axes

__all__ = ["grad", "value_and_grad", "stop_grad", "custom_grad", "Backprop"]

#: nodes that exist only while a function is being differentiated: compilers never see
#: them (replaying the function for its gradient turns them back into their argument)
MARKERS = {"stop_grad", "custom_grad", "checkpoint_name"}
primitive("grad markers", "stop_grad", "checkpoint_name", props=("elementwise",))
primitive("grad markers", "custom_grad")
non_differentiable("stop_grad")

#: ops whose forward replay and backward pass the engine delegates, by op name, to
#: ``(replay(bp, e, augment), backward(bp, e, gs, ct, dep))``: multi-result nodes with a
#: sub-function that exist only while differentiating (``checkpoint``, registered by
#: :mod:`nxpy.defn.checkpoint`). ``replay`` returns the list of the node's results.
ENGINE_RULES: dict = {}

_COLLECTIVES = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                "collective_permute", "collective_broadcast", "all_slice"}


# ----------------------------------------------------------------------------------------
# Markers
# ----------------------------------------------------------------------------------------
def stop_grad(x):
    """``x``, through which no gradient flows (its cotangent is dropped).

    >>> import nxpy as nx
    >>> from nxpy.defn import grad, stop_grad
    >>> grad(lambda x: nx.sum(x * stop_grad(x)))(nx.tensor([3.0])).tolist()
    [3.0]
    """
    if _context.grad_depth() == 0:
        return x
    leaves, tree = tree_mod.flatten(x)
    out = [EXPR.node("stop_grad", O.template(t.shape, t.type, t.names), t)
           for t in (EXPR.lift(v) for v in leaves)]
    return tree_mod.unflatten(tree, out)


def custom_grad(out, inputs, grad_fun, *, jvp=None, summed=False):
    """``out``, whose gradient with respect to ``inputs`` (a list of tensors ``out`` was
    computed from) is ``grad_fun(g)``, a list of one cotangent per input, instead of the
    gradient of how ``out`` was computed (as Nx's ``custom_grad``).

    Forward mode (:func:`nxpy.defn.jvp`) follows ``jvp``: ``None`` differentiates how
    ``out`` was computed; a function ``jvp(*inputs, *tangents)`` gives ``out``'s tangent
    (what :class:`nxpy.defn.custom_jvp` passes); ``"custom_vjp"`` makes forward mode an
    error, as JAX's for a ``custom_vjp`` function.

    Inside a ``shard_map`` body, the engine sums each cotangent ``grad_fun`` returns over
    the mesh axes along which ``out`` varies and its input does not (the input was used as
    a replicated copy), as for any op's rule. ``summed=True`` says that ``grad_fun`` has
    done so itself: it differentiates with the body's mesh, as ``scan``'s gradient does
    (see :func:`body_context`), and its cotangents are the inputs' own.

    >>> import nxpy as nx
    >>> from nxpy.defn import grad, custom_grad
    >>> def clipped_sqrt(x):   # sqrt, with a gradient that stays finite at 0
    ...     y = nx.sqrt(x)
    ...     return custom_grad(y, [x], lambda g: [g * 0.5 / nx.max(y, 0.5)])
    >>> grad(lambda x: nx.sum(clipped_sqrt(x)))(nx.tensor([0.0, 4.0])).tolist()
    [1.0, 0.25]
    """
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"custom_grad: inputs must be a list of tensors, got "
                        f"{type(inputs).__name__}")
    out = O.to_tensor(out, "out")
    if _context.grad_depth() == 0:
        return out
    out = EXPR.lift(out)
    inputs = [EXPR.lift(O.to_tensor(x, f"inputs[{i}]")) for i, x in enumerate(inputs)]

    def checked(g):
        cts = grad_fun(g)
        if not isinstance(cts, (list, tuple)) or len(cts) != len(inputs):
            raise ValueError(f"custom_grad: grad_fun must return a list of {len(inputs)} "
                             f"cotangent(s), one per input, got {cts!r}")
        cts = [O.to_tensor(c, f"cotangent {i}") for i, c in enumerate(cts)]
        for i, (c, x) in enumerate(zip(cts, inputs)):
            if c.shape != x.shape:
                raise ValueError(f"custom_grad: cotangent {i} has shape {c.shape}, its input "
                                 f"has shape {x.shape}")
        return tuple(cts)

    g_fn = trace_fn(checked, [(out.shape, out.type, out.names)], parent=_context.current())
    fns, mode = (g_fn,), jvp
    if callable(jvp):
        def tangent(*a):
            t = O.to_tensor(jvp(*a), "the custom tangent")
            if t.shape != out.shape:
                raise ValueError(f"custom_grad: the tangent has shape {t.shape}, the output "
                                 f"has shape {out.shape}")
            return O.as_type(t, out.type) if t.type != out.type else t
        temps = [(x.shape, x.type, x.names) for x in inputs]
        fns, mode = (g_fn, trace_fn(tangent, temps + temps, parent=_context.current())), "rule"
    elif jvp not in (None, "custom_vjp"):
        raise TypeError(f"custom_grad: expected jvp to be None, a function or 'custom_vjp', "
                        f"got {jvp!r}")
    return EXPR.node("custom_grad", O.template(out.shape, out.type, out.names), out, *inputs,
                     fns=fns, jvp=mode, summed=bool(summed))


# ----------------------------------------------------------------------------------------
# The engine
# ----------------------------------------------------------------------------------------
class _RuleContext:
    """What a rule may ask about the program: the mesh of a shard_map body, and the
    varying axes of a value."""

    def __init__(self, mesh, vma):
        self.mesh, self._vma = mesh, vma

    def vma(self, node) -> frozenset:
        return self._vma.get(node.id, frozenset()) if self._vma is not None else frozenset()


def _add(d, k, v):
    d[k] = v if d.get(k) is None else d[k] + v


def _zeros_like(x):
    return zeros(x.shape, x.type)


def _differentiable(x) -> bool:
    """Floating-point and complex values carry cotangents (for complex values with JAX's
    convention: the rules transpose without conjugating); integers and pred do not."""
    return x.type.is_inexact


class Backprop:
    """Differentiates one traced function ``fn`` into the scope being traced now.

    :meth:`replay` copies ``fn``'s nodes here (its parameters and captured values read
    from ``env``, a map from ``fn``'s node ids to values of this scope, with ``parent``'s
    map behind it); :meth:`backward` then walks ``fn``'s nodes from the last to the first,
    turning cotangents of results into cotangents of arguments.

    In a shard_map body, ``diverge`` holds the mesh axes along which devices may run ``fn``
    differently (it is a branch of a cond, or the body of a while_loop, whose predicate
    varies along them): no psum over them runs here, where some devices of a group would
    not run it; the cotangents stay per-device along them and the enclosing scope sums
    them after the cond or loop, where every device runs the sum."""

    def __init__(self, fn: Fn, env=None, *, parent=None, vma=None, mesh=None, keep=False,
                 diverge=frozenset()):
        self.fn = fn
        self.env = dict(env or {})
        self.parent = parent
        self.vma = vma if vma is not None or parent is None else parent.vma
        self.mesh = mesh if mesh is not None or parent is None else parent.mesh
        self.keep = keep if parent is None else parent.keep
        self.diverge = diverge if parent is None else parent.diverge | diverge
        self.ctx = _RuleContext(self.mesh, self.vma)
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
        ``augment``, a loop also keeps its carries for the backward pass."""
        if e.op == "elem" and isinstance(self.value(e.args[0]), list):
            return self.value(e.args[0])[e.attrs["index"]]  # of an ENGINE_RULES node
        if e.op in MARKERS and not self.keep:
            return self.value(e.args[0])
        if e.op in EFFECTS and self.parent is not None:
            return self.value(e.args[0])  # the backward pass recomputes: call hooks once
        if e.op == "while" and augment:
            bound = _trip_bound(e)
            if bound is not None:
                return self._replay_while(e, bound)
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

    def _replay_while(self, e: Expr, n: int):
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
        init = self.value(e.args[0])
        k = len(init)
        state_bytes = sum(int(np.prod(t.shape)) * t.type.dtype.itemsize for t in init)
        if _exact_trips(e) or n * state_bytes <= RESIDUAL_BYTES:
            bufs = [zeros((max(n, 1),) + tuple(t.shape), t.type) for t in init]

            def cond_fun(state):
                (p,) = self.inline(c_fn, list(state[:k]))
                return p

            def body_fun(state):
                carry, i = list(state[:k]), state[k]
                kept = [O.put_slice(b, [i] + [0] * c.rank, O.new_axis(c, 0))
                        for b, c in zip(state[k + 1:], carry)]
                return tuple(self.inline(b_fn, carry)) + (i + 1,) + tuple(kept)

            outs = while_loop(cond_fun, body_fun, tuple(init) + (O.tensor(0),) + tuple(bufs))
            self.aug[e.id] = (n, outs[k], list(outs[k + 1:]), None, 1)
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
            (p,) = self.inline(c_fn, list(state[:k]))
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
            return tuple(self.inline(b_fn, carry)) + (i + 1, s) + tuple(kept)

        outs = while_loop(cond_fun, body_fun,
                          tuple(init) + (O.tensor(0), O.tensor(1)) + tuple(bufs))
        self.aug[e.id] = (n, outs[k], list(outs[k + 2:]), outs[k + 1], strides)
        return outs[0].data.args[0]

    def _carry_at(self, e, t, bufs, stride, strides, outs_t):
        """The carry iteration ``t`` started from: read from the buffer, or recomputed
        from its checkpoint (see :meth:`_replay_while`)."""
        if stride is None:
            return [O.reshape(O.slice(b, [t] + [0] * o.rank, (1,) + tuple(o.shape)), o.shape)
                    for b, o in zip(bufs, outs_t)]
        c = O.quotient(t, stride)
        r = t - c * stride
        carry = [O.reshape(O.slice(b, [c] + [0] * o.rank, (1,) + tuple(o.shape)), o.shape)
                 for b, o in zip(bufs, outs_t)]
        b_fn = e.fns[1]

        def again(state):  # a counting loop (bounded by a constant): differentiable again
            return (state[0] + 1,) + tuple(self.inline(b_fn, list(state[1:])))
        out = while_loop(lambda state: O.logical_and(O.less(state[0], strides),
                                                     O.less(state[0], r)),
                         again, (O.tensor(0),) + tuple(carry))
        return list(out[1:])

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
            _add(ct, k, v)
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
            add = self._accumulate_summed if e.attrs.get("summed") else self._accumulate
            add(e, e.tensor_args()[1:], self._custom(e, g), ct, dep)
            return
        rule = GRAD_RULES.get(e.op)
        if rule is None:
            raise NotImplementedError(f"grad: the op {e.op!r} has no gradient rule (give it "
                                      f"one with nxpy.extend.register_grad_rule, or declare "
                                      f"it with nxpy.extend.non_differentiable)")
        xs_f = e.tensor_args()
        cts = rule(self.ctx, e, [self.fwd(x) for x in xs_f], self.fwd(e), g)
        self._accumulate(e, xs_f, cts, ct, dep)

    def _accumulate(self, e, xs_f, cts, ct, dep, used=None):
        for x, c in zip(xs_f, cts):
            if c is not None and x.id in dep and _differentiable(x):
                _add(ct, x.id, self._fit(c, x, e, used))

    def _accumulate_summed(self, e, xs_f, cts, ct, dep):
        """As :meth:`_accumulate` for cotangents already summed over the mesh axes along
        which their operands were used as replicated copies (a body differentiated with
        its mesh: ``custom_grad(summed=True)``, ``checkpoint``): each is its operand's own."""
        for x, c in zip(xs_f, cts):
            self._accumulate(e, [x], [c], ct, dep, used=self.ctx.vma(x))

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

    # --- control flow ---------------------------------------------------------------------
    def _backward_multi(self, e, gs, ct, dep):
        if e.op == "cond":
            return self._backward_cond(e, gs, ct, dep)
        if e.op == "while":
            return self._backward_while(e, gs, ct, dep)
        if e.op == "shard_map":
            return self._backward_shard_map(e, gs, ct, dep)
        if e.op in ENGINE_RULES:
            return ENGINE_RULES[e.op][1](self, e, gs, ct, dep)
        rule = GRAD_RULES.get(e.op)
        if rule is None:
            raise NotImplementedError(f"grad: the op {e.op!r} has no gradient rule")
        xs_f = e.tensor_args()  # a multi-result op: ``out`` is the node, ``gs`` a list
        cts = rule(self.ctx, e, [self.fwd(x) for x in xs_f], self.value(e), gs)
        self._accumulate(e, xs_f, cts, ct, dep)

    def body_wants(self, e, dep):
        """For ``e``, a node whose one sub-function runs on its arguments (``checkpoint``,
        ``call``): the positions of its arguments that need a cotangent and the values its
        body captures that do, ``(want, caps)``."""
        want = [i for i, x in enumerate(e.tensor_args()) if x.id in dep and x.type.is_inexact]
        return want, self._captured(e.fns, dep)

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
        self._accumulate_summed(e, [inputs[i] for i in want] + caps,
                                [cts.get(body.params[i].data.id) for i in want]
                                + [cts.get(c.id) for c in caps], ct, dep)

    def _captured(self, fns, dep):
        """The values ``fns`` capture that need a cotangent, in a fixed order."""
        found = {}
        for f in fns:
            for c in f.captures:
                if c.id in dep and _differentiable(c):
                    found[c.id] = c
        return [found[k] for k in sorted(found)]

    def _backward_cond(self, e, gs, ct, dep):
        caps = self._captured(e.fns, dep)
        if not caps:
            return

        axes = control_axes(e, self.ctx.vma)

        def branch(fn):
            def run():
                sub = Backprop(fn, parent=self, diverge=axes)
                wanted = [c.id for c in caps]
                sub_dep = sub.depends(wanted)
                sub.replay(sub_dep)
                seeds = {}
                for o, g in zip(fn.outputs, gs):
                    if g is not None and _differentiable(o):
                        _add(seeds, o.data.id, g)
                cts = sub.backward(seeds, wanted, sub_dep)
                return tuple(cts.get(c.id) if cts.get(c.id) is not None else _zeros_like(c)
                             for c in caps)
            return run

        clauses = [(self.fwd(p), branch(fn)) for p, fn in zip(e.args, e.fns)]
        outs = cond(clauses + [(True, branch(e.fns[-1]))])
        # what the branches left per-device: the predicate's axes (they summed the rest)
        self._accumulate(e, caps, outs, ct, dep, used=axes)

    def _backward_while(self, e, gs, ct, dep):
        c_fn, b_fn = e.fns
        init_f = e.args[0]
        k = len(init_f)
        diff = [i for i in range(k) if _differentiable(Tensor(None, *e.outs[i]))]
        caps = self._captured([b_fn], dep)
        if not any(gs[i] is not None for i in diff):
            return
        if e.id not in self.aug:
            raise ValueError(
                f"grad: cannot differentiate the while_loop{_where(e)}: reverse mode needs a "
                f"bound on its number of iterations known while tracing. Use fori_loop (or "
                f"a while_loop whose state holds a counter that starts at a constant, steps "
                f"by a constant and is compared with a constant), or pass max_iterations=N")
        bound, count, bufs, stride, strides = self.aug[e.id]
        outs_t = [Tensor(None, *e.outs[i]) for i in range(k)]
        trips = control_axes(e, self.ctx.vma)
        state0 = ([O.tensor(0)] + [gs[i] if gs[i] is not None else _zeros_like(outs_t[i])
                                   for i in diff] + [_zeros_like(c) for c in caps])

        # a counting loop (0 up to the forward loop's bound, stopping at its actual count),
        # so that it is itself differentiable: second derivatives through loops
        def cond_fun(state):
            return O.logical_and(O.less(state[0], bound), O.less(state[0], count))

        def body_fun(state):
            carry = self._carry_at(e, count - 1 - state[0], bufs, stride, strides, outs_t)
            sub = Backprop(b_fn, {p.data.id: v for p, v in zip(b_fn.params, carry)},
                           parent=self, diverge=trips)
            wanted = [b_fn.params[i].data.id for i in diff] + [c.id for c in caps]
            sub_dep = sub.depends(wanted)
            sub.replay(sub_dep)
            seeds = {}
            for n, i in enumerate(diff):
                _add(seeds, b_fn.outputs[i].data.id, state[1 + n])
            cts = sub.backward(seeds, wanted, sub_dep)
            new_ct = []
            for n, i in enumerate(diff):
                c = cts.get(b_fn.params[i].data.id)
                new_ct.append(c if c is not None else _zeros_like(outs_t[i]))
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
        carried = self.vma.get(e.id) if self.vma is not None else None
        for i, (x, c) in enumerate(zip(xs, init_cts)):
            self._accumulate(e, [x], [c], ct, dep, used=carried[i] if carried else None)
        self._accumulate(e, caps, list(out[1 + len(diff):]), ct, dep, used=trips)

    def _backward_shard_map(self, e, gs, ct, dep):
        (body,) = e.fns
        mesh, in_specs, out_specs = e.attrs["mesh"], e.attrs["in_specs"], e.attrs["out_specs"]
        inputs = e.tensor_args()
        for c in body.captures:
            if c.id in dep:
                raise ValueError("grad: a shard_map body closes over a value being "
                                 "differentiated; pass it to the shard_map as an argument")
        n_in = len(inputs)
        outs_t = [Tensor(None, *o) for o in e.outs]
        g_in = [g if g is not None else _zeros_like(o) for g, o in zip(gs, outs_t)]
        want = [i for i, x in enumerate(inputs) if x.id in dep and _differentiable(x)]
        if not want:
            return
        in_axes = [frozenset(a for d in s for a in d) for s in in_specs]

        def transposed(*params):
            xs, gs_local = params[:n_in], params[n_in:]
            vma = analyze(body, in_axes, mesh)
            sub = Backprop(body, {p.data.id: x for p, x in zip(body.params, xs)}, vma=vma,
                           mesh=mesh, keep=self.keep)
            wanted = [body.params[i].data.id for i in want]
            sub_dep = sub.depends(wanted)
            sub.replay(sub_dep)
            seeds = {}
            for o, g, spec in zip(body.outputs, gs_local, out_specs):
                if not _differentiable(o):
                    continue
                named = frozenset(a for d in spec for a in d)
                have = vma.get(o.data.id, frozenset())
                if named - have:  # tiled copies of an invariant value: their cotangents add
                    g = psum(g, tuple(sorted(named - have)))
                if have - named:  # declared replicated, yet varying (check_vma=False)
                    g = g / _axes_size(mesh, have - named)
                _add(seeds, o.data.id, g)
            cts = sub.backward(seeds, wanted, sub_dep)
            out = []
            for i in want:
                c = cts.get(body.params[i].data.id)
                out.append(c if c is not None else _zeros_like(body.params[i]))
            return tuple(out)

        specs = [SH.to_dict(s) for s in in_specs] + [SH.to_dict(s) for s in out_specs]
        res = shard_map(transposed, mesh, in_specs=specs,
                        out_specs=[SH.to_dict(in_specs[i]) for i in want],
                        check_vma=False)(*[self.fwd(x) for x in inputs], *g_in)
        self._accumulate(e, [inputs[i] for i in want], list(res), ct, dep)


def _axes_size(mesh, axes):
    n = 1
    for a in axes:
        n *= mesh.shape[a]
    return n


def _where(e):
    w = getattr(e.fns[1], "where", None)
    return f" ({w})" if w else ""


# ----------------------------------------------------------------------------------------
# Loop bounds known while tracing
# ----------------------------------------------------------------------------------------
def _constant(t):
    """The value of a constant node (or None)."""
    e = t.data if isinstance(t, Tensor) else t
    if isinstance(e, Expr) and e.op == "constant":
        return e.attrs["value"].item()
    return None


_COMPARE = {"less": lambda a, b: a < b, "less_equal": lambda a, b: a <= b,
            "greater": lambda a, b: a > b, "greater_equal": lambda a, b: a >= b,
            "not_equal": lambda a, b: a != b}
_FLIP = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
         "greater_equal": "less_equal", "not_equal": "not_equal"}
_MAX_TRIPS = 10_000_000

#: the bytes of loop carries the reverse mode of a ``while_loop`` whose trip count is not
#: known while tracing keeps for its backward pass (see ``Backprop._replay_while``)
RESIDUAL_BYTES = 64 << 20


def _exact_trips(e: Expr) -> bool:
    """Whether the loop's bound is its trip count: its condition is the counter's
    comparison alone (a ``fori_loop``), not and-ed with another (``max_iterations``)."""
    return e.fns[0].outputs[0].data.op in _COMPARE


def trip_bound(e: Expr):
    """A bound on the number of iterations of ``while`` node ``e`` known while tracing, or
    None (see :func:`_trip_bound`); ``nxpy.defn.vmap`` keeps it when it batches a loop."""
    return _trip_bound(e)


def _trip_bound(e: Expr):
    """A bound on the loop's number of iterations known while tracing (or None): the
    condition compares a counter (a carry that starts at a constant and steps by a
    constant) with a constant, possibly and-ed with other conditions (as
    ``while_loop(..., max_iterations=N)`` does)."""
    c_fn, b_fn = e.fns
    return _bound_of(c_fn.outputs[0].data, e, c_fn, b_fn)


def _bound_of(pred, e, c_fn, b_fn):
    if pred.op == "logical_and":
        found = [_bound_of(a.data, e, c_fn, b_fn) for a in pred.args if isinstance(a, Tensor)]
        found = [n for n in found if n is not None]
        return min(found) if found else None
    if pred.op not in _COMPARE:
        return None
    a, b = pred.args
    params = {p.data.id: i for i, p in enumerate(c_fn.params)}
    op = pred.op
    if isinstance(b, Tensor) and b.data.id in params:
        a, b, op = b, a, _FLIP[op]
    if not (isinstance(a, Tensor) and a.data.id in params):
        return None
    j = params[a.data.id]
    limit, start = _constant(b), _constant(e.args[0][j])
    step = _step(b_fn, j)
    if limit is None or start is None or step is None or step == 0:
        return None
    # count in the counter's own type, as the loop will (0.1 added in f32 is not 0.1)
    dt = e.outs[j][1].dtype
    i, step, limit = np.asarray(start, dt), np.asarray(step, dt), np.asarray(limit, dt)
    n, cmp = 0, _COMPARE[op]
    with np.errstate(all="ignore"):
        while cmp(i, limit):
            nxt = np.asarray(i + step, dt)
            if nxt == i:
                return None  # the counter stopped moving (it saturated or lost precision)
            i, n = nxt, n + 1
            if n > _MAX_TRIPS:
                return None
    return n


def _step(b_fn, j):
    """The constant the body adds to carry ``j`` (None unless it is ``carry + c``)."""
    out = b_fn.outputs[j].data
    p = b_fn.params[j].data
    if out.op == "add":
        x, y = (v.data if isinstance(v, Tensor) else v for v in out.args)
        if x is p:
            return _constant(y)
        if y is p:
            return _constant(x)
    if out.op == "subtract":
        x, y = (v.data if isinstance(v, Tensor) else v for v in out.args)
        if x is p and _constant(y) is not None:
            return -_constant(y)
    return None


# ----------------------------------------------------------------------------------------
# The API
# ----------------------------------------------------------------------------------------
def _check_output(y):
    if not isinstance(y, Tensor):
        raise TypeError(f"grad: the function must return a scalar tensor, got "
                        f"{type(y).__name__}")
    if y.shape != ():
        raise ValueError(f"grad: the function must return a scalar to differentiate, got "
                         f"{y.type}{shape_str(y.shape)} (reduce it, for example with nx.sum)")
    if not y.type.is_float:
        raise TypeError(f"grad: the function must return a floating-point scalar, got "
                        f"{y.type} (convert it with nx.as_type)")


class _UnknownAxes(NotImplementedError):
    """A value's mesh axes are not known while tracing (a loop's or a branch's)."""


def body_context(fn, values, carry=0):
    """``(mesh, vma)`` with which a :class:`Backprop` differentiates ``fn``, a function
    traced here whose parameters take the mesh axes of ``values`` (values of the scope
    being traced now), as ``scan`` differentiates its step: inside a shard_map body, its
    mesh and ``{node id: mesh axes}`` for the values of ``fn`` and those it captures (the
    first ``carry`` parameters are a loop's carry, fed back from ``fn``'s first outputs:
    they vary along the axes of the fixed point). ``(None, None)`` elsewhere, and inside
    the body's loops and branches, where the axes depend on how the devices run them: the
    gradient is then taken without them, and summed where the loop or branch ends."""
    ctx = current_mesh()
    if ctx is None or ctx.view != "local" or _context.current() not in ctx.straight:
        return None, None
    get = _vma_of(ctx)
    try:
        vma = body_vma(fn, [get(v.data if isinstance(v, Tensor) else v) for v in values],
                       carry)
        for c in fn.captures:
            vma.setdefault(c.id, get(c))
    except _UnknownAxes:
        return None, None
    return ctx.mesh, vma


def straight_in_body(leaves):
    """For a transform that traces a function here on parameters taking ``leaves``'
    values (``jvp``): a function to call first in the traced function with its
    parameters, after which a ``scan`` (or ``grad``) traced in it finds the mesh axes of
    its values, as in a ``grad``'s (:func:`body_context`). Does nothing outside a
    shard_map body, or where the leaves' axes are not known while tracing."""
    ctx = current_mesh()
    if ctx is None or ctx.view != "local":
        return lambda params: None
    get = _vma_of(ctx)
    try:
        axes = [get(t.data if isinstance(t, Tensor) else t) for t in leaves]
    except _UnknownAxes:
        return lambda params: None

    return lambda params: _enter_body(ctx, params, axes)


def _enter_body(ctx, params, axes):
    """Called first in a function traced in shard_map body ``ctx`` (a ``grad``'s or
    ``jvp``'s): its parameters vary along ``axes``, and a ``scan`` or ``grad`` traced in
    it may ask for its values' axes (:func:`body_context`)."""
    for p, a in zip(params, axes):
        ctx.varying[p.data.id] = a
    ctx.straight.add(_context.current())


def body_vma(fn, param_axes, carry=0) -> dict:
    """``{node id: mesh axes}`` for the values of ``fn``, traced inside the shard_map body
    being traced now, its parameters varying along ``param_axes`` (the first ``carry``
    of them fed back from ``fn``'s first outputs: the axes of the fixed point)."""
    ctx = current_mesh()
    get = _vma_of(ctx)
    axes = [frozenset(a) for a in param_axes]
    while True:  # grows monotonically, so at most one round per mesh axis
        vma = analyze(fn, axes, ctx.mesh, get)
        new = [a | (vma[o.data.id] if o.data.id in vma else get(o.data))
               for a, o in zip(axes, fn.outputs[:carry])]
        if new == axes[:carry]:
            return vma
        axes = new + axes[carry:]


def _vma_of(mesh_ctx):
    """``node → axes`` for values of the shard_map body being traced now."""
    memo = mesh_ctx.varying

    def get(e):
        if e.id in memo:
            return memo[e.id]
        if e.op == "parameter":
            raise _UnknownAxes(
                "grad inside a shard_map body is supported on values of the body itself, "
                "not inside its while_loop or cond functions: take the gradient of the "
                "whole loop or branch")
        if e.op == "constant" or e.op == "tensor":
            memo[e.id] = frozenset()
            return memo[e.id]
        analyze_nodes(_subgraph(e, memo), mesh_ctx.mesh, get, memo)
        return memo[e.id]
    return get


def _subgraph(e, memo):
    seen, out, stack = set(), [], [e]
    while stack:
        n = stack.pop()
        if n.id in seen or n.id in memo:
            continue
        seen.add(n.id)
        out.append(n)
        stack.extend(n.deps())
    return sorted(out, key=lambda n: n.id)


def aux_pair(out, what, first="output"):
    """``out`` (a function's result under ``has_aux=True``), checked to be a pair."""
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{what}: with has_aux=True the function must return a pair "
                        f"({first}, aux), got {type(out).__name__}")
    return out


def _differentiate(fun, args, kwargs, argnums, has_aux):
    """``(value, aux, grads)`` of ``fun(*args, **kwargs)`` w.r.t. ``args[argnums]``, traced
    into the current scope."""
    single = S.as_int(argnums) is not None
    try:
        nums = (argnums,) if single else tuple(argnums)
    except TypeError:
        raise TypeError(f"grad: expected argnums to be an integer or a sequence of integers, "
                        f"got {argnums!r}") from None
    for n in nums:
        if S.as_int(n) is None:
            raise TypeError(f"grad: expected argnums to be an integer or a sequence of "
                            f"integers, got {argnums!r}")
        if not -len(args) <= S.as_int(n) < len(args):
            raise ValueError(f"grad: argnums {argnums!r} out of range for {len(args)} "
                             f"positional argument(s)")
    nums = tuple(S.as_int(n) for n in nums)
    nums = tuple(n % len(args) for n in nums)
    if len(set(nums)) != len(nums):
        raise ValueError(f"grad: argnums {argnums!r} names an argument twice")
    leaves, tree = tree_mod.flatten(tuple(args[n] for n in nums))
    leaves = [EXPR.lift(O.to_tensor(x, f"argument leaf {i}")) for i, x in enumerate(leaves)]

    def call(selected):
        full = list(args)
        for n, v in zip(nums, selected):
            full[n] = v
        out = fun(*full, **kwargs)
        if has_aux:
            _check_output(aux_pair(out, "grad", "scalar")[0])
            return out
        _check_output(out)
        return out

    mesh_ctx = current_mesh()
    local = mesh_ctx is not None and mesh_ctx.view == "local"
    if local:
        get = _vma_of(mesh_ctx)
        leaf_axes = [get(t.data) for t in leaves]

    def traced(selected):
        if local:  # a grad (or scan) inside this one asks about these parameters
            _enter_body(mesh_ctx, tree_mod.flatten(selected)[0], leaf_axes)
        return call(selected)

    with _context.differentiating():
        fn = trace_fn(traced, [(t.shape, t.type, t.names) for t in leaves], tree=tree,
                      parent=_context.current())
    vma = body_vma(fn, leaf_axes) if local else None
    bp = Backprop(fn, {p.data.id: x for p, x in zip(fn.params, leaves)}, vma=vma,
                  mesh=mesh_ctx.mesh if local else None, keep=_context.grad_depth() > 0)
    wanted = [p.data.id for p in fn.params]
    dep = bp.depends(wanted)
    bp.replay(dep)
    outs = [bp.value(o) for o in fn.outputs]
    y_f = fn.outputs[0].data
    seed = O.full((), 1, type=y_f.type)
    cts = bp.backward({y_f.id: seed}, wanted, dep) if y_f.id in dep else {}
    grads = []
    for p, x in zip(fn.params, leaves):
        c = cts.get(p.data.id)
        if c is None:
            c = zeros(x.shape, x.type if _differentiable(x) else T.F32)
        if c.names != x.names:
            c = O.reshape(c, x.shape, names=x.names)
        grads.append(c)
    grads = tree_mod.unflatten(tree, grads)
    grads = grads[0] if single else tuple(grads)
    result = tree_mod.unflatten(fn.tree, outs)
    value, aux = (result[0], result[1]) if has_aux else (result, None)
    return value, aux, grads


def not_an_argnum(argnums, arg, n_args) -> bool:
    """Whether ``arg`` (a keyword, or a position among ``n_args``) is not among
    ``argnums``; False where ``argnums`` is not valid (tracing then says why)."""
    if isinstance(arg, str):
        return True
    nums = (argnums,) if S.as_int(argnums) is not None else argnums
    try:
        nums = {S.as_int(k) % n_args for k in nums}
    except TypeError:
        return False
    return arg not in nums


class _Grad(Transform):
    """What ``grad(fun)`` and ``value_and_grad(fun)`` return."""

    def __init__(self, fun, argnums, has_aux, with_value):
        if not callable(fun):
            raise TypeError(f"grad: expected a function to differentiate, got "
                            f"{type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self.fun, self.argnums, self.has_aux, self.with_value = fun, argnums, has_aux, with_value

    def _passes_through(self, arg, n_args=None):
        return not_an_argnum(self.argnums, arg, n_args)

    def _traced(self, *args, **kwargs):
        if not args:
            raise TypeError("grad: the function needs at least one positional argument to "
                            "differentiate with respect to")
        value, aux, grads = _differentiate(self.fun, args, kwargs, self.argnums, self.has_aux)
        if self.with_value:
            return ((value, aux) if self.has_aux else value), grads
        return (grads, aux) if self.has_aux else grads


def _dispatch_form(first, second, has_aux, with_value, argnums):
    if callable(first) and not isinstance(first, Tensor):
        return _Grad(first, 0 if second is None else second, has_aux, with_value)
    # Nx's form: grad(x, fun) with x a tensor or a container of them
    if not callable(second):
        raise TypeError(f"grad: expected grad(fun, argnums=0) or, as in Nx, grad(x, fun); "
                        f"got a {type(first).__name__} and a {type(second).__name__}")
    return _Grad(second, 0, has_aux, with_value)(first)


def grad(fun, argnums=None, has_aux=False):
    """The gradient of ``fun``'s scalar output with respect to its positional argument(s)
    ``argnums`` (an int, default 0, or a tuple: a tuple of gradients). Arguments may be
    containers (tuples, lists, dicts of tensors): their gradients have the same structure.
    With ``has_aux``, ``fun`` returns ``(scalar, aux)`` and the result is ``(grad, aux)``.
    Nx's form ``grad(x, fun)`` (inside a defn) is the gradient of ``fun(x)`` at ``x``.

    >>> import nxpy as nx
    >>> from nxpy.defn import grad
    >>> g = grad(lambda p: p["w"] ** 2 + p["b"])({"w": nx.tensor(3.0), "b": nx.tensor(1.0)})
    >>> {k: v.tolist() for k, v in g.items()}
    {'w': 6.0, 'b': 1.0}
    """
    return _dispatch_form(fun, argnums, has_aux, False, argnums)


def value_and_grad(fun, argnums=None, has_aux=False):
    """``(value, grad)`` (or ``((value, aux), grad)`` with ``has_aux``): see :func:`grad`."""
    return _dispatch_form(fun, argnums, has_aux, True, argnums)

