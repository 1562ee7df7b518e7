"""Automatic differentiation: ``grad``, ``value_and_grad``, ``stop_grad``, ``custom_grad``.

Gradients are a transform of the traced Expr graph into another Expr graph (as Nx's
``Nx.Defn.Grad``; reverse mode, with JAX's rules): ``grad(fun)(x)`` traces ``fun`` on fresh
parameters, replays the traced nodes where it was called (so values ``fun`` closes over
are constants, as in JAX), then walks them backwards from the output, asking each op's
rule (:mod:`nxpy.defn.transforms.grad_rules`) for its inputs' cotangents (the engine: the
replay in :mod:`nxpy.defn.transforms.replay`, the node-by-node pass in
:mod:`nxpy.defn.transforms.backprop`, the rules of nodes with sub-functions in
:mod:`nxpy.defn.transforms.grad_bodies`). The result is ordinary
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
``max_iterations`` loop's, when ``N`` of them would exceed
``nxpy.defn.transforms.grad_bodies.RESIDUAL_BYTES``, as checkpoints in a fixed buffer thinned as the
loop runs, so memory does not grow with ``N``: see :mod:`nxpy.defn.transforms.grad_bodies`) and the
loop is run backwards. Collectives
inside ``shard_map`` are transposed as JAX transposes them, with the varying/invariant
axes of every value (:mod:`nxpy.defn.sharding.varying`) deciding where a cotangent is summed
across devices.
"""
from __future__ import annotations

import functools

from ... import _context
from ... import ops as O
from ... import shape as S, types as T
from ...ops import primitive
from ...tensor import Tensor, shape_str
from . import grad_bodies  # noqa: F401 - registers the rules of cond, while and shard_map
from .. import tree as tree_mod
from .backprop import Backprop, differentiable
from ..sharding import explicit as EX
from ..sharding.collectives import current_mesh
from ..core import Transform
from ..expr import EXPR, trace_fn
from .grad_rules import non_differentiable, zeros
from .loop_bounds import trip_bound as trip_bound  # vmap keeps a loop's bound
from .replay import ENGINE_RULES as ENGINE_RULES  # checkpoint and call register there
from ..sharding.varying import analyze, analyze_nodes, subgraph

__all__ = ["grad", "value_and_grad", "stop_grad", "custom_grad", "Backprop"]

# the markers (nxpy.defn.transforms.replay.MARKERS): nodes that exist only while differentiating
primitive("grad markers", "stop_grad", "checkpoint_name", props=("elementwise",))
primitive("grad markers", "custom_grad")
non_differentiable("stop_grad")


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
        analyze_nodes(subgraph(e, memo), mesh_ctx.mesh, get, memo)
        return memo[e.id]
    return get


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
        else:  # laid out as what they stand for (explicit sharding's types)
            EX.alias(leaves, tree_mod.flatten(selected)[0])
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
    with EX.no_checks():  # cotangents are laid out as their primals (JAX's transposes)
        cts = bp.backward({y_f.id: seed}, wanted, dep) if y_f.id in dep else {}
    grads = []
    for p, x in zip(fn.params, leaves):
        c = cts.get(p.data.id)
        if c is None:
            c = zeros(x.shape, x.type if differentiable(x) else T.F32)
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

