"""Forward mode: ``jvp`` and ``linearize`` (JAX's ``jax.jvp`` and ``jax.linearize``).

A transform of Expr graphs, as ``grad`` is: ``jvp(f, primals, tangents)`` traces ``f`` on
fresh parameters, then walks its nodes forward, copying each node (the primal) and asking
its op's rule (:mod:`nxpy.defn.transforms.jvp_rules`) for its tangent from its inputs' tangents.
Zero tangents are symbolic (``None``): a node none of whose inputs has a tangent costs
nothing more than its primal. ``cond`` becomes one ``cond`` whose branches also return the
tangents; ``while_loop`` (and so ``fori_loop`` and ``scan``) one loop that carries the
tangents of the carries that need one beside them; ``shard_map`` one ``shard_map`` whose
body also maps tangents (a collective's tangent is the collective of the tangent);
``checkpoint`` is run through. ``custom_grad`` nodes follow their ``jvp``: the tangent of
how the value was computed (Nx's ``custom_grad``, ``scan``'s own gradient), the custom
rule (:class:`nxpy.defn.custom_jvp`), or JAX's error for a ``custom_vjp`` function.

>>> import nxpy as nx
>>> from nxpy.defn import jvp
>>> y, t = jvp(lambda x: nx.sin(x) * x, (nx.tensor([0.0, 1.0]),), (nx.tensor([1.0, 1.0]),))
>>> [round(v, 4) for v in t.tolist()]
[0.0, 1.3818]
"""
from __future__ import annotations

import functools

from ... import _context
from ... import ops as O
from ...tensor import Tensor, shape_str
from .. import tree as tree_mod
from ..core import jit
from ..expr import EXPR, Expr, trace_fn
from .grad import Backprop, aux_pair, straight_in_body
from .grad_rules import GRAD_RULES, zeros
from .jvp_rules import JVP_RULES, ZERO_TANGENT, Poison, via_transpose
from ..kernel import cond, while_loop
from ..shard_map import shard_map

__all__ = ["jvp", "linearize", "Forward"]

_CUSTOM_VJP = ("can't apply forward-mode autodiff (jvp) to a custom_vjp function "
               "(as in JAX: give it a custom_jvp rule instead, or differentiate it with grad)")


def _live(x) -> bool:
    return x.type.is_inexact


def _check(t, where):
    if isinstance(t, Poison):
        raise TypeError(f"jvp: {t.message}{where}")
    return t


class Forward:
    """Pushes tangents through one traced function ``fn`` into the scope being traced now:
    its nodes are copied (through a :class:`~nxpy.defn.transforms.grad.Backprop`, which owns the
    primal values) and each gets a tangent (``tan``: node id → tensor, list for several
    results, or absent for zero)."""

    def __init__(self, fn, env=None, tangents=None, *, parent=None, mesh=None, keep=False):
        self.fn = fn
        self.parent = parent
        self.bp = Backprop(fn, env, parent=parent.bp if parent is not None else None,
                           mesh=mesh, keep=keep)
        self.tan = {k: v for k, v in (tangents or {}).items() if v is not None}

    # --- values -----------------------------------------------------------------------
    def tangent(self, node):
        f = self
        while f is not None:
            t = f.tan.get(node.id)
            if t is not None:
                return t
            f = f.parent
        return None

    def fwd(self, x):
        return self.bp.fwd(x)

    def run(self):
        """Every node of ``fn``; returns ``(primal outputs, tangent outputs)``."""
        for e in self.fn.nodes:
            if e.op != "parameter":
                self.node(e)
        outs = [self.bp.value(o) for o in self.fn.outputs]
        return outs, [self.tangent(o.data) for o in self.fn.outputs]

    def _captured_tangents(self, e):
        return any(self.tangent(c) is not None for f in e.fns for c in f.captures)

    # --- one node ------------------------------------------------------------------------
    def node(self, e: Expr):
        xs = e.tensor_args()
        ts = [self.tangent(x) for x in xs]
        if e.op == "elem":
            self.bp.env[e.id] = self.bp.copy(e)
            t = self.tangent(e.args[0])
            if isinstance(t, list):
                t = t[e.attrs["index"]]
            if t is not None:
                self.tan[e.id] = t
            return
        if all(t is None for t in ts) and not self._captured_tangents(e):
            self.bp.env[e.id] = self.bp.copy(e)
            return
        if e.op == "cond":
            return self._cond(e)
        if e.op == "while":
            return self._while(e)
        if e.op == "shard_map":
            return self._shard_map(e)
        if e.op in ("checkpoint", "call"):
            return self._inline(e, e.fns[0])
        poison = next((t for t in ts if isinstance(t, Poison)), None)
        if e.op == "custom_grad" and e.attrs.get("jvp") == "custom_vjp":
            poison = poison or Poison(_CUSTOM_VJP)
        self.bp.env[e.id] = self.bp.copy(e)
        if poison is not None:
            self.tan[e.id] = poison
            return
        out = self.bp.value(e) if e.outs is not None else self.fwd(e)
        t = self._rule(e, xs, ts, out)
        if t is not None:
            self.tan[e.id] = t

    def _rule(self, e, xs, ts, out):
        if e.op in ZERO_TANGENT:
            return None
        if e.op in ("checkpoint_name", "hook"):
            return ts[0]
        if e.op == "custom_grad":
            if e.attrs.get("jvp") == "rule":
                ins = [self.fwd(x) for x in xs[1:]]
                tans = [t if t is not None else zeros(x.shape, x.type)
                        for t, x in zip(ts[1:], ins)]
                (t,) = self.bp.inline(e.fns[1], ins + tans)
                return t
            return ts[0]  # the tangent of how the value was computed
        if e.op == "runtime_call":
            raise ValueError(
                f"jvp: runtime_call is not differentiable (it calls {e.attrs['call']!r} on "
                f"the host, which nxpy cannot see into), but a tangent flows into it: wrap "
                f"its inputs in stop_grad to treat its result as a constant")
        rule = JVP_RULES.get(e.op)
        if rule is None:
            if e.op not in GRAD_RULES:
                raise NotImplementedError(
                    f"jvp: the op {e.op!r} has no forward-mode rule (give it one with "
                    f"nxpy.defn.transforms.jvp_rules.register_jvp_rule, or a gradient rule, which "
                    f"forward mode transposes)")
            rule = via_transpose  # an op from outside nxpy with a gradient rule
        vals = [self.fwd(x) for x in xs]
        t = rule(self.bp.ctx, e, vals, ts, out)
        if t is None:
            return None
        if e.outs is not None:
            return [None if ti is None or not _live(o) else _fit(ti, o)
                    for ti, o in zip(t, (Tensor(None, *o) for o in e.outs))]
        return _fit(t, out) if _live(out) else None

    def _results(self, e, res, k, live):
        """Record the results of ``e`` from ``res``: its ``k`` primal results, then the
        tangents of the results ``live``."""
        self.bp.env[e.id] = list(res[:k])
        tan = [None] * k
        for n, i in enumerate(live):
            tan[i] = res[k + n]
        self.tan[e.id] = tan

    # --- sub-functions -------------------------------------------------------------------
    def _sub(self, fn, args, tangents, **kw):
        """``fn`` run forward here with parameters ``args`` and their tangents."""
        sub = Forward(fn, {p.data.id: a for p, a in zip(fn.params, args)},
                      {p.data.id: t for p, t in zip(fn.params, tangents)}, parent=self, **kw)
        return sub.run()

    def _inline(self, e, fn):
        args = [self.fwd(x) for x in e.tensor_args()]
        ts = [self.tangent(x) for x in e.tensor_args()]
        outs, touts = self._sub(fn, args, ts)
        self.bp.env[e.id] = list(outs)
        self.tan[e.id] = list(touts)

    def _cond(self, e):
        outs_t = [Tensor(None, *o) for o in e.outs]
        live = [i for i, o in enumerate(outs_t) if _live(o)]

        def branch(fn):
            def run():
                outs, touts = self._sub(fn, [], [])
                ts = [_check(touts[i], " (in a cond branch)") for i in live]
                return tuple(outs) + tuple(
                    _fit(t, outs_t[i]) if t is not None else _zeros(outs_t[i])
                    for t, i in zip(ts, live))
            return run

        clauses = [(self.fwd(p), branch(fn)) for p, fn in zip(e.args, e.fns)]
        res = cond(clauses + [(True, branch(e.fns[-1]))])
        self._results(e, res, len(outs_t), live)

    def _while(self, e):
        c_fn, b_fn = e.fns
        init = self.bp.value(e.args[0])
        init_x = e.args[0]
        k = len(init)
        outs_t = [Tensor(None, *o) for o in e.outs]
        # the carries with a tangent: those whose initial value has one, then (to a fixed
        # point) those the body computes from a carry or a captured value with one
        def node_of(x):
            return x.data if isinstance(x, Tensor) else x
        nz = {i for i, x in enumerate(init_x)
              if _live(outs_t[i]) and self.tangent(node_of(x)) is not None}
        caps = [c.id for c in b_fn.captures if self.tangent(c) is not None]
        probe = Backprop(b_fn)
        while True:
            dep = probe.depends([b_fn.params[i].data.id for i in nz] + caps)
            more = {i for i in range(k) if _live(outs_t[i]) and b_fn.outputs[i].data.id in dep}
            if more <= nz:
                break
            nz |= more
        live = sorted(nz)
        t0 = []
        for i in live:
            x = init_x[i]
            t = self.tangent(node_of(x))
            t0.append(_fit(_check(t, " (a while_loop's initial state)"), outs_t[i])
                      if t is not None else _zeros(outs_t[i]))

        def cond_fun(state):
            sub = Backprop(c_fn, {p.data.id: v for p, v in zip(c_fn.params, state[:k])},
                           parent=self.bp)
            sub.replay()
            return sub.value(c_fn.outputs[0])

        def body_fun(state):
            carry, tans = list(state[:k]), list(state[k:])
            full = [None] * k
            for i, t in zip(live, tans):
                full[i] = t
            outs, touts = self._sub(b_fn, carry, full)
            new_t = []
            for i in live:
                t = _check(touts[i], " (in a while_loop body)")
                new_t.append(_fit(t, outs_t[i]) if t is not None else _zeros(outs_t[i]))
            return tuple(outs) + tuple(new_t)

        res = while_loop(cond_fun, body_fun, tuple(init) + tuple(t0))
        self._results(e, res, k, live)

    def _shard_map(self, e):
        (body,) = e.fns
        mesh, in_specs, out_specs = e.attrs["mesh"], e.attrs["in_specs"], e.attrs["out_specs"]
        inputs = e.tensor_args()
        if any(self.tangent(c) is not None for c in body.captures):
            raise ValueError("jvp: a shard_map body closes over a value being differentiated; "
                             "pass it to the shard_map as an argument")
        outs_t = [Tensor(None, *o) for o in e.outs]
        t_in = [i for i, x in enumerate(inputs) if _live(x) and self.tangent(x) is not None]
        live = [i for i, o in enumerate(outs_t) if _live(o)]
        n_in = len(inputs)

        def mapped(*params):
            xs, ts = params[:n_in], params[n_in:]
            full = [None] * n_in
            for i, t in zip(t_in, ts):
                full[i] = t
            outs, touts = self._sub(body, list(xs), full, mesh=mesh)
            tans = []
            for i, o in zip(live, (outs[i] for i in live)):
                t = _check(touts[i], " (in a shard_map body)")
                tans.append(_fit(t, o) if t is not None else zeros(o.shape, o.type))
            return tuple(outs) + tuple(tans)

        res = shard_map(mapped, mesh, in_specs=[*in_specs, *(in_specs[i] for i in t_in)],
                        out_specs=[*out_specs, *(out_specs[i] for i in live)],
                        check_vma=False)(*[self.fwd(x) for x in inputs],
                                         *[self.tangent(inputs[i]) for i in t_in])
        self._results(e, res, len(outs_t), live)


def _zeros(like):
    return zeros(like.shape, like.type)


def _fit(t, like):
    """A rule's tangent made the tangent of ``like``: its shape (broadcast) and type."""
    if isinstance(t, Poison):
        return t
    t = O.to_tensor(t)
    if t.type != like.type:
        t = O.as_type(t, like.type) if not (t.type.is_complex and not like.type.is_complex) \
            else O.as_type(O.real(t), like.type)
    if tuple(t.shape) != tuple(like.shape):
        t = O.broadcast(t, tuple(like.shape))
    if t.names != like.names and like.names is not None:
        t = O.reshape(t, like.shape, names=like.names)
    return t


# ----------------------------------------------------------------------------------------
# The API
# ----------------------------------------------------------------------------------------
def _leaves(values, name):
    try:
        leaves, tree = tree_mod.flatten(values)
    except TypeError as err:
        raise TypeError(f"jvp: expected {name} to be a container of tensors, got "
                        f"{type(values).__name__} ({err})") from None
    return leaves, tree


def _check_zero_tangent(p, t, i):
    """The tangent of an integer or bool primal ``p``: nxpy's spelling of JAX's ``float0``
    is a tensor (or array) of ``p``'s own type and shape (``nxpy.numpy.zeros_like(p)``;
    its values are not read: the tangent is zero), and JAX's ``float0`` array itself is
    taken too. A float tangent is JAX's TypeError: the primal was meant to be a float."""
    if _is_float0(t):  # jax.dtypes.float0, recognised without jax
        shape = tuple(t.shape)
    else:
        t = O.to_tensor(t, f"tangent leaf {i}")
        if t.type != p.type:
            raise TypeError(f"jvp: tangent leaf {i} has type {t.type}, but its primal is "
                            f"{p.type}: the tangent of an integer or bool primal is zero, "
                            f"given as a tensor of the primal's type (nxpy.numpy."
                            f"zeros_like(primal), nxpy's float0) or a jax float0 array; for a "
                            f"nonzero tangent make the primal a float")
        shape = tuple(t.shape)
    if shape != tuple(p.shape):
        raise ValueError(f"jvp: tangent leaf {i} has shape {shape_str(shape)}, its primal "
                         f"{p.type}{shape_str(p.shape)} (they must match)")


def _check_pairs(p_leaves, t_leaves, p_tree, t_tree):
    if p_tree != t_tree:
        raise ValueError(f"jvp: primals and tangents must have the same structure, got "
                         f"{tree_mod.tree_str(p_tree)} and {tree_mod.tree_str(t_tree)}")
    out = []
    for i, (p, t) in enumerate(zip(p_leaves, t_leaves)):
        if not p.type.is_inexact:
            _check_zero_tangent(p, t, i)
            out.append(None)  # an integer primal: its tangent is zero (JAX's float0)
            continue
        t = O.to_tensor(t, f"tangent leaf {i}")
        if tuple(t.shape) != tuple(p.shape):
            raise ValueError(f"jvp: tangent leaf {i} has shape {t.type}{shape_str(t.shape)}, "
                             f"its primal {p.type}{shape_str(p.shape)} (they must match)")
        if t.type != p.type:
            raise TypeError(f"jvp: tangent leaf {i} has type {t.type}, its primal {p.type} "
                            f"(they must match, as in JAX)")
        out.append(t)
    return out


def _check_args(primals, tangents):
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"jvp: expected primals to be a tuple or list of arguments, got "
                        f"{type(primals).__name__}")
    if not isinstance(tangents, (tuple, list)) or len(tangents) != len(primals):
        got = (f"{len(tangents)} tangent(s)" if isinstance(tangents, (tuple, list))
               else type(tangents).__name__)
        raise TypeError(f"jvp: expected tangents to be a tuple or list with one tangent per "
                        f"primal ({len(primals)}), got {got}")


def _jvp_traced(fun, primals, tangents, has_aux=False):
    """``(primals_out, tangents_out[, aux])`` traced into the current scope."""
    _check_args(primals, tangents)
    p_leaves, p_tree = _leaves(tuple(primals), "primals")
    t_leaves, t_tree = _leaves(tuple(tangents), "tangents")
    p_leaves = [O.to_tensor(x, f"primal leaf {i}") for i, x in enumerate(p_leaves)]
    p_leaves = [EXPR.lift(x) for x in p_leaves]
    t_vals = _check_pairs(p_leaves, t_leaves, p_tree, t_tree)

    enter = straight_in_body(p_leaves)

    def call(args):
        enter(tree_mod.flatten(args)[0])
        out = fun(*args)
        return aux_pair(out, "jvp") if has_aux else out

    keep = _context.grad_depth() > 0
    with _context.differentiating():
        fn = trace_fn(call, [(t.shape, t.type, t.names) for t in p_leaves], tree=p_tree,
                      parent=_context.current())
    fwd = Forward(fn, {p.data.id: x for p, x in zip(fn.params, p_leaves)},
                  {p.data.id: t for p, t in zip(fn.params, t_vals)}, keep=keep)
    outs, touts = fwd.run()
    result = tree_mod.unflatten(fn.tree, outs)
    n_out = len(outs)
    if has_aux:
        y_leaves, _ = tree_mod.flatten(result[0])
        n_out = len(y_leaves)
    tans = []
    for i, (o, t) in enumerate(zip(outs[:n_out], touts[:n_out])):
        o = o if isinstance(o, Tensor) else O.to_tensor(o)
        t = _check(t, "")
        tans.append(_fit(t, o) if t is not None else zeros(o.shape, o.type))
    if has_aux:
        _, y_tree = tree_mod.flatten(result[0])
        return result[0], tree_mod.unflatten(y_tree, tans), result[1]
    return result, tree_mod.unflatten(fn.tree, tans)


def jvp(fun, primals, tangents, has_aux=False):
    """``(fun(*primals), J tangents)``: the value of ``fun`` and its directional derivative
    along ``tangents`` (JAX's ``jax.jvp``). ``primals`` and ``tangents`` are tuples (or
    lists) with one entry per positional argument, containers allowed, of the same
    structure, shapes and types. The tangent of an integer or bool primal is zero: nxpy
    spells JAX's ``float0`` as a tensor of the primal's own type
    (``nxpy.numpy.zeros_like(p)``, its values unread) and takes JAX's ``float0`` arrays
    too; a float tangent for it is a TypeError, as in JAX. With ``has_aux``, ``fun``
    returns ``(output, aux)`` and the result is ``(output, tangent, aux)``. Called
    outside a defn, it jits itself (the default compiler).

    >>> import nxpy as nx
    >>> from nxpy.defn import jvp
    >>> y, t = jvp(lambda x, w: nx.sum(x * w), (nx.tensor([1.0, 2.0]), nx.tensor([3.0, 4.0])),
    ...            (nx.tensor([1.0, 0.0]), nx.tensor([0.0, 1.0])))
    >>> y.tolist(), t.tolist()
    (11.0, 5.0)
    """
    if not callable(fun):
        raise TypeError(f"jvp: expected a function to differentiate, got "
                        f"{type(fun).__name__}")
    _check_args(primals, tangents)
    if _context.tracing():
        return _jvp_traced(fun, primals, tangents, has_aux)
    return _jitted(fun, has_aux)(tuple(primals), _no_float0(primals, tangents))


def _no_float0(primals, tangents):
    """``tangents`` with JAX's ``float0`` arrays (no tensor holds one) as zeros of their
    primals' types, so that ``jit`` takes them; checked as any tangent inside."""
    p_leaves, p_tree = tree_mod.flatten(tuple(primals))
    t_leaves, t_tree = tree_mod.flatten(tuple(tangents))
    if p_tree != t_tree or not any(_is_float0(t) for t in t_leaves):
        return tuple(tangents)
    return tree_mod.unflatten(t_tree, [
        zeros(tuple(t.shape), O.to_tensor(p, f"primal leaf {i}").type) if _is_float0(t) else t
        for i, (p, t) in enumerate(zip(p_leaves, t_leaves))])


def _is_float0(t) -> bool:
    return getattr(getattr(t, "dtype", None), "names", None) == ("float0",)


@functools.lru_cache(maxsize=256)
def _jitted_cached(fun, has_aux):
    return jit(lambda p, t: _jvp_traced(fun, p, t, has_aux))


def _jitted(fun, has_aux):
    try:
        return _jitted_cached(fun, has_aux)
    except TypeError:  # an unhashable callable
        return jit(lambda p, t: _jvp_traced(fun, p, t, has_aux))


def linearize(fun, *primals):
    """``(fun(*primals), f_jvp)`` (JAX's ``jax.linearize``): ``f_jvp(*tangents)`` is the
    tangent of ``fun`` at ``primals`` along ``tangents``, a linear function. Each call of
    ``f_jvp`` computes the tangent with :func:`jvp` (inside a defn, ``f_jvp`` adds its nodes
    to the graph, where XLA shares the primal computation with the first call's).

    >>> import nxpy as nx
    >>> from nxpy.defn import linearize
    >>> y, f_jvp = linearize(lambda x: x ** 3, nx.tensor([1.0, 2.0]))
    >>> y.tolist(), f_jvp(nx.tensor([1.0, 1.0])).tolist()
    ([1.0, 8.0], [3.0, 12.0])
    """
    if not callable(fun):
        raise TypeError(f"linearize: expected a function to differentiate, got "
                        f"{type(fun).__name__}")
    if not primals:
        raise TypeError("linearize: expected at least one primal argument")
    if _context.tracing():
        out = fun(*primals)
    else:
        out = jit(fun)(*primals)

    def f_jvp(*tangents):
        if len(tangents) != len(primals):
            raise TypeError(f"linearize: f_jvp expects one tangent per primal "
                            f"({len(primals)}), got {len(tangents)}")
        return jvp(fun, primals, tangents)[1]
    return out, f_jvp
