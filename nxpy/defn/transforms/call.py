"""``call``: a function traced once and called as a function of the program, as a nested
``jax.jit`` is.

Inside a defn, ``call(fun, *args, **static)`` records one ``call`` node holding ``fun``
traced as a sub-function. The same ``fun`` with the same static keywords and argument
templates, called again in the same program (in the same context: under ``grad`` or not,
in the same mesh), reuses that sub-function, so the EXLA
compiler emits it once as a private ``func.func`` and calls it with ``func.call`` at each
site (as JAX emits a nested jit: ``_gamma`` called twice is one function). XLA inlines
calls before it optimizes, so a call costs nothing at run time; what it changes is what the
StableHLO module's own folders see: each function's constants stay its own, and values
cross a call as arguments (nxpy's samplers rely on this to give JAX's bits;
``docs/random.md``).

Outside a defn it is ``fun(*args, **static)``. The Evaluator runs the sub-function; the
transforms see through it: ``grad``, ``jvp`` and ``vmap`` differentiate or batch its body
in place (their result is inlined, as JAX's transforms of a nested jit are folded into
the outer program by XLA anyway); shard_jit propagates shardings through it.

>>> import nxpy as nx
>>> from nxpy.defn import call, jit
>>> def scaled(x, *, k):
...     return x * k + 1.0
>>> f = jit(lambda x: call(scaled, x, k=2.0) + call(scaled, x * 3, k=2.0), compiler="exla")
>>> f(nx.tensor([1.0, 2.0])).tolist()
[10.0, 18.0]
>>> from nxpy.compilers.exla import to_mlir
>>> text = to_mlir(lambda x: call(scaled, x, k=2.0) + call(scaled, x * 3, k=2.0),
...                nx.tensor([1.0, 2.0]))
>>> text.count("callee = @scaled"), text.count("func.func private @scaled")
(2, 1)
"""
from __future__ import annotations

from ... import _context
from ... import ops as O
from ...ops import primitive
from ...ops.core import PORTABLE, register_portable
from .. import tree as tree_mod
from ..sharding.collectives import current_mesh
from ..expr import EXPR, has_effects, trace_fn
from .grad import ENGINE_RULES, Backprop
from ..sharding.specs import register_result_rule

__all__ = ["call"]

primitive("control flow", "call")


def call(fun, *args, **static):
    """``fun(*args, **static)``, recorded inside a defn as one ``call`` of ``fun`` traced
    as a function of its own (see the module's docstring). ``args`` are containers of
    tensors and numbers (traced: the function's parameters); ``static`` keywords are
    passed as they are and must be hashable (with the argument templates they pick the
    traced function: one per distinct value).

    >>> import nxpy as nx
    >>> from nxpy.defn import call, grad, jit
    >>> jit(grad(lambda x: nx.sum(call(nx.sin, x))))(nx.tensor([0.0])).tolist()
    [1.0]
    >>> call(lambda x, *, n: x * n, nx.tensor([1, 2]), n=3).tolist()
    [3, 6]
    """
    if not callable(fun):
        raise TypeError(f"call: expected fun to be a function, got {type(fun).__name__}")
    if not _context.tracing():
        return fun(*args, **static)
    try:
        hash(tuple(static.values()))
    except TypeError:
        bad = next(k for k, v in static.items() if not _hashable(v))
        raise TypeError(f"call: static keyword {bad!r} must be hashable (it selects the traced "
                        f"function), got {type(static[bad]).__name__}; pass tensors as "
                        f"positional arguments") from None
    leaves, tree = tree_mod.flatten(tuple(args))
    leaves = [EXPR.lift(O.to_tensor(x, f"argument leaf {j}")) for j, x in enumerate(leaves)]
    templates = tuple((t.shape, t.type, t.names) for t in leaves)
    scope = _context.current()
    # what else shapes the trace: markers are recorded only under grad, and collectives
    # read their mesh's groups
    key = (fun, tree, templates, tuple(sorted(static.items())), _context.grad_depth() > 0,
           current_mesh())
    body = scope.calls.get(key)
    if body is None:
        body = trace_fn(lambda a: fun(*a, **static), templates, tree=tree, parent=scope)
        body.where = getattr(fun, "__name__", "function")
        if not body.captures:  # closed: any site of this program may call it
            scope.calls[key] = body
    templates = [(o.shape, o.type, o.names) for o in body.outputs]
    if has_effects(body) or "call" in scope.expand or not templates:
        # side effects (a hook: kept in place, in program order, used or not), a compiler
        # without calls (its ``supports``), or nothing returned: the body inlined
        outs = PORTABLE["call"](templates, *leaves, body=body)
    else:
        outs = EXPR.multi("call", templates, *leaves, fns=(body,), name=_symbol(body.where))
    return tree_mod.unflatten(body.tree, outs)


@register_portable("call")
def _inline(outs, *args, body, name=None):
    """A ``call``'s portable form: its body, traced in place."""
    return Backprop(None, {}, keep=True).inline(body, list(args))


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _symbol(name: str) -> str:
    """``name`` as an MLIR symbol name (letters, digits, ``_``, ``.``, ``$``)."""
    s = "".join(ch if ch.isalnum() or ch in "_.$" else "_" for ch in name)
    return s if s and not s[0].isdigit() else f"f_{s}"


# ----------------------------------------------------------------------------------------
# The gradient: the body differentiated where it is called
# ----------------------------------------------------------------------------------------
def _replay(bp: Backprop, e, augment):
    """The forward pass. A call the gradient goes through (``augment``: it depends on
    what is differentiated) runs its body in place, in a child engine of its own (a body
    called at several sites keeps each site's values apart); any other stays a call."""
    if not augment:
        return bp.copy_node(e)
    (body,) = e.fns
    sub = _body(bp, e)
    sub.replay(sub.depends([p.data.id for p in body.params] + [c.id for c in body.captures]))
    bp.aug[e.id] = sub
    return [sub.value(o) for o in body.outputs]


def _body(bp: Backprop, e) -> Backprop:
    (body,) = e.fns
    return Backprop(body, {p.data.id: bp.fwd(x) for p, x in zip(body.params, e.tensor_args())},
                    parent=bp)


def _backward(bp: Backprop, e, gs, ct, dep):
    """The backward pass: the body's, from the values its forward pass kept."""
    want, caps = bp.body_wants(e, dep)
    if not (want or caps) or all(g is None for g in gs):
        return
    sub = bp.aug.get(e.id)
    if sub is None:  # the forward pass kept the call (a nested grad keeps nodes): run it here
        sub = _body(bp, e)
        (body,) = e.fns
        sub.replay(sub.depends([body.params[i].data.id for i in want] + [c.id for c in caps]))
    bp.backward_body(e, sub, gs, want, caps, ct, dep)


ENGINE_RULES["call"] = (_replay, _backward)


@register_result_rule("call")
def _result_sharding(prop, e, index):
    """shard_jit's propagation: as the body lays its result out, from the arguments'."""
    (body,) = e.fns
    for p, x in zip(body.params, e.tensor_args()):
        prop.memo.setdefault(p.data.id, prop.memo[x.id])
    return prop.of(body.outputs[index])
