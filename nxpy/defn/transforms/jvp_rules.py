"""Forward-mode rules: for each op, the tangent of its result given the tangents of its
inputs (JAX's JVP rules), one entry per op in :data:`JVP_RULES`, next to the gradient
rules of :mod:`nxpy.defn.transforms.grad_rules`.

A rule is ``rule(ctx, e, xs, ts, out) -> tangent``: ``e`` is the Expr node (its options
are ``e.attrs``), ``xs`` the primal values of its tensor arguments in the order
:meth:`Expr.tensor_args` lists them, ``ts`` their tangents (``None`` for a tangent known to
be zero: zeros are symbolic and cost nothing), ``out`` its primal result (for an op with
several results, the node, as gradient rules receive it); it returns the result's tangent
(a list for several results; ``None`` for zero). The engine (:mod:`nxpy.defn.transforms.jvp`) calls
a rule only when some input tangent is not zero, and broadcasts and converts what it
returns to the result's shape and type. Rules build their result with the front-end ops,
so tangents are ordinary Expr graphs.

The table is explicit for every op of ``nxpy.ops.PRIMITIVES`` (``tests/test_jvp.py``
checks it), in four kinds:

* **formulas**: the elementwise ops use the derivative formulas of the gradient rules
  (``t * f'(x)``: the same expressions, so forward and reverse mode agree to the bit, as
  JAX's JVP and transpose rules do); ``dot`` and ``conv`` are bilinear
  (``dot(ta, b) + dot(a, tb)``); ``select`` picks the tangents as it picks the values;
* **linear ops** (:func:`linear`): shapes, slices, sums, gathers and scatters, the FFTs,
  the collectives whose reduction is a sum or a move (``psum``'s tangent is the ``psum``
  of the tangent, an ``all_gather``'s the ``all_gather`` of it, ...): the op itself,
  applied to the tangents of its linear operands (index operands keep their primal);
* **by transposing the gradient rule** (:func:`via_transpose`): ``J t`` is the gradient
  of ``<J^T g, t>`` with respect to ``g``, ``J^T g`` being the op's gradient rule (linear in
  ``g``): the ops whose tangent JAX derives from sort permutations, window selections,
  pivots or factorizations (``sort``, ``top_k``, ``window_max``, ``cholesky``,
  ``eigh``, ``qr``, ``svd``, ``lu``, ``solve``, ...). Exact, and XLA folds the extra
  transpose away; a formula can replace any of them later without other changes;
* **zero tangents** (:data:`ZERO_TANGENT`): the ops declared non-differentiable where
  they are defined (``non_differentiable(...)``: integer or boolean results, piecewise
  constant ones such as ``floor``, ``sign``, comparisons, ``argsort``, values that depend
  on no input, ``stop_grad``): a zero derivative is a zero tangent (JAX's ``float0``),
  so the one declaration serves both modes.

Control flow (``cond``, ``while``, ``shard_map``), ``checkpoint``, ``elem`` and the markers
(``custom_grad``, ``checkpoint_name``) are handled by the engine itself, which carries
tangents through their sub-functions (:data:`ENGINE`).

>>> from nxpy.defn.transforms.jvp_rules import JVP_RULES, ZERO_TANGENT
>>> "sin" in JVP_RULES, "floor" in ZERO_TANGENT
(True, True)
"""
from __future__ import annotations

import contextlib
import functools

from ... import _context
from ... import ops as O
from ... import types as T
from ...ops.core import GRAD_RULES, NON_DIFFERENTIABLE, rule_registrar
from ...tensor import Tensor
from ..sharding.collectives import current_mesh, mesh_context, psum
from ..expr import EXPR, Expr
from .grad import grad
from .grad_rules import _BINARY, _UNARY, _aig, _subgroups, unbroadcast, zeros

__all__ = ["JVP_RULES", "ZERO_TANGENT", "ENGINE", "register_jvp_rule", "zero_tangent",
           "linear", "via_transpose", "emit", "Poison"]

#: each op's forward-mode rule (see the module's docstring)
JVP_RULES: dict = {}

#: ops whose result has a zero tangent whatever their inputs' tangents: the set of ops
#: declared non-differentiable (one declaration for both modes)
ZERO_TANGENT: set = NON_DIFFERENTIABLE

#: ops the engine (:mod:`nxpy.defn.transforms.jvp`) differentiates itself: control flow and
#: sub-functions, the graph's own nodes, the markers
ENGINE = {"cond", "while", "shard_map", "checkpoint", "call", "elem", "custom_grad",
          "checkpoint_name", "runtime_call", "hook"}

register_jvp_rule = rule_registrar(
    JVP_RULES, "register_jvp_rule", "a forward-mode (JVP) rule",
    """Decorator: ``rule(ctx, e, xs, ts, out) -> tangent`` for the ops named (see
    :mod:`nxpy.defn.transforms.jvp_rules`).""")


def zero_tangent(*ops: str) -> None:
    """Declares that ``ops``' results have zero tangents (integer, boolean or piecewise
    constant results): the same declaration as :func:`nxpy.ops.core.non_differentiable`,
    so their inputs get no cotangent either."""
    ZERO_TANGENT.update(ops)


def _c(like, value):
    return O.full((), value, type=like.type)


def _as(t, type):
    return t if t is None or t.type == type else O.as_type(t, type)


def emit(e, values, fns=None):
    """Node ``e`` again, in the scope being traced, with its tensor arguments replaced by
    ``values`` (in :meth:`Expr.tensor_args` order) and its options unchanged."""
    it = iter(values)

    def sub(a):
        if isinstance(a, Tensor) and isinstance(a.data, Expr) or isinstance(a, Expr):
            return next(it)
        if isinstance(a, list):
            return [sub(x) for x in a]
        if isinstance(a, tuple):
            return tuple(sub(x) for x in a)
        return a
    args = [sub(a) for a in e.args]
    new = Expr(e.op, args, dict(e.attrs), e.shape, e.type, e.names, _context.current(),
               tuple(fns if fns is not None else e.fns), e.outs)
    return new if e.outs is not None else Tensor(new, e.shape, e.type, e.names, EXPR)


# ----------------------------------------------------------------------------------------
# Elementwise
# ----------------------------------------------------------------------------------------
def _unary(f):
    def rule(ctx, e, xs, ts, out):
        (x,), (t,) = xs, ts
        if not out.type.is_inexact:
            return None
        if x.type.is_complex and not out.type.is_complex:
            if e.op == "abs":  # JAX's rule: real(conj(x) * t) / |x|, |x| == 0 read as 1
                safe = O.select(O.equal(out, 0), O.broadcast(_c(out, 1), out.shape), out)
                return O.real(O.conjugate(x) * t) / safe
            raise NotImplementedError(f"jvp: the tangent of {e.op} of a complex value is not "
                                      f"supported yet")
        return f(O.as_type(x, out.type), out, _as(t, out.type))
    return rule


for _op, _f in _UNARY.items():
    JVP_RULES[_op] = _unary(_f)


def _binary(f):
    def rule(ctx, e, xs, ts, out):
        if not out.type.is_inexact:
            return None
        a, b = (O.as_type(v, out.type) for v in xs)
        ta, tb = (_as(t, out.type) for t in ts)
        parts = []
        if ta is not None:
            parts.append(f(a, b, out, ta)[0])
        if tb is not None:
            parts.append(f(a, b, out, tb)[1])
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]
    return rule


for _op, _f in _BINARY.items():
    JVP_RULES[_op] = _binary(_f)


@register_jvp_rule("select")
def _select(ctx, e, xs, ts, out):
    p, a, b = xs
    _, ta, tb = ts
    ta = _as(ta, out.type) if ta is not None else zeros(a.shape, out.type)
    tb = _as(tb, out.type) if tb is not None else zeros(b.shape, out.type)
    p = p if p.type.is_pred else O.not_equal(p, 0)
    return O.select(p, ta, tb)


@register_jvp_rule("clip")
def _clip(ctx, e, xs, ts, out):
    # clip(x, lo, hi) = min(hi, max(lo, x)) (jnp.clip), each with JAX's tie rule
    x, lo, hi = (O.as_type(v, out.type) for v in xs)
    tx, tlo, thi = (_as(t, out.type) for t in ts)
    inner = O.max(lo, x)
    t_inner = _BINARY["max"](lo, x, inner, tlo)[0] if tlo is not None else None
    if tx is not None:
        part = _BINARY["max"](lo, x, inner, tx)[1]
        t_inner = part if t_inner is None else t_inner + part
    parts = []
    if thi is not None:
        parts.append(_BINARY["min"](hi, inner, out, thi)[0])
    if t_inner is not None:
        parts.append(_BINARY["min"](hi, inner, out, t_inner)[1])
    return parts[0] if len(parts) == 1 else parts[0] + parts[1]


@register_jvp_rule("as_type")
def _as_type(ctx, e, xs, ts, out):
    (x,), (t,) = xs, ts
    if not (x.type.is_inexact and out.type.is_inexact):
        return None
    if x.type.is_complex and not out.type.is_complex:
        return O.as_type(O.real(t), out.type)
    return O.as_type(t, out.type)


# ----------------------------------------------------------------------------------------
# Linear ops: the op itself on the tangents
# ----------------------------------------------------------------------------------------
def linear(*positions):
    """The rule of an op linear in its tensor arguments at ``positions`` (all of them when
    none are given), the others (indices, starts) taken from the primal: the op applied
    to those arguments' tangents (zeros where a tangent is zero)."""
    def rule(ctx, e, xs, ts, out):
        if not (out.type.is_inexact if not isinstance(out, list) else True):
            return None
        lin = range(len(xs)) if not positions else positions
        vals = list(xs)
        for i in lin:
            t = ts[i]
            vals[i] = _as(t, xs[i].type) if t is not None else zeros(xs[i].shape, xs[i].type)
        return emit(e, vals)
    return rule


for _op in ("negate", "reshape", "broadcast", "transpose", "reverse", "slice", "concatenate",
            "sum", "cumulative_sum", "pad", "real", "imag", "conjugate", "complex", "fft",
            "fft2", "ifft", "ifft2", "rfft", "irfft", "window_sum", "sharding_constraint",
            "all_gather", "reduce_scatter", "all_to_all",
            "collective_permute", "collective_broadcast", "all_slice"):
    JVP_RULES[_op] = linear()
JVP_RULES["dynamic_slice"] = linear(0)


@register_jvp_rule("optimization_barrier")
def _optimization_barrier(ctx, e, xs, ts, out):
    return list(ts)  # the identity; the primals keep their barrier
JVP_RULES["gather"] = linear(0)


@register_jvp_rule("put_slice")
def _put_slice(ctx, e, xs, ts, out):
    return linear(0, len(xs) - 1)(ctx, e, xs, ts, out)


@register_jvp_rule("indexed_add", "indexed_put")
def _indexed(ctx, e, xs, ts, out):
    return linear(0, 2)(ctx, e, xs, ts, out)


@register_jvp_rule("reduce_max", "reduce_min")
def _reduce_chooser(ctx, e, xs, ts, out):
    # JAX's rule: the tangents where the extreme is, averaged over ties
    (x,), (t,) = xs, ts
    if not out.type.is_inexact:
        return None
    axes, keep = e.attrs["axes"], e.attrs["keep_axes"]
    kept = out if keep else O.reshape(out, [1 if i in axes else d
                                            for i, d in enumerate(x.shape)])
    where = O.as_type(O.equal(x, O.broadcast(kept, x.shape)), out.type)
    return (O.sum(_as(t, out.type) * where, axes=axes, keep_axes=keep)
            / O.sum(where, axes=axes, keep_axes=keep))


@register_jvp_rule("product")
def _product(ctx, e, xs, ts, out):
    # the sum over the reduced axes of t * (the product of the other elements), the
    # products being the gradient rule's (prefix scans: exact at zeros; complex too)
    (t,) = ts
    if not out.type.is_inexact:
        return None
    (others,) = GRAD_RULES["product"](ctx, e, xs, out, O.broadcast(_c(out, 1), out.shape))
    return O.sum(others * _as(t, out.type), axes=e.attrs["axes"],
                 keep_axes=e.attrs["keep_axes"])


@register_jvp_rule("all_reduce")
def _all_reduce(ctx, e, xs, ts, out):
    if e.attrs["reduction"] == "sum":  # psum's tangent is the psum of the tangent
        return linear()(ctx, e, xs, ts, out)
    if not out.type.is_inexact:
        return None
    # pmax / pmin: the tangent of the devices holding the extreme value, averaged over
    # ties (as the gradient rule shares the cotangent)
    (x,), (t,) = xs, ts
    aig = _aig(e, ctx.mesh) if _subgroups(e, ctx.mesh) else None
    where = O.as_type(O.equal(x, out), out.type)
    axes = e.attrs["axes"]
    return (psum(_as(t, out.type) * where, axes, axis_index_groups=aig)
            / psum(where, axes, axis_index_groups=aig))


def _bilinear(ctx, e, xs, ts, out):
    a, b = xs
    ta, tb = ts
    if not out.type.is_inexact:
        return None
    parts = []
    if ta is not None:
        parts.append(emit(e, [_as(ta, a.type), b]))
    if tb is not None:
        parts.append(emit(e, [a, _as(tb, b.type)]))
    return parts[0] if len(parts) == 1 else parts[0] + parts[1]


JVP_RULES["dot"] = _bilinear
JVP_RULES["conv"] = _bilinear


# ----------------------------------------------------------------------------------------
# By transposing the gradient rule
# ----------------------------------------------------------------------------------------
def via_transpose(ctx, e, xs, ts, out):
    """The tangent ``J t`` as the gradient, with respect to the cotangent ``g``, of
    ``<J^T g, t>``, ``J^T g`` being the op's gradient rule (linear in ``g``): exact for
    any op with a gradient rule (real values)."""
    rule = GRAD_RULES[e.op]
    many = e.outs is not None  # then ``out`` is the node (as gradient rules receive it)
    outs = [Tensor(None, *o) for o in e.outs] if many else [out]
    live = [i for i, o in enumerate(outs) if o.type.is_inexact]
    if not live:
        return None
    complex_ = any(o.type.is_complex for o in outs) or any(
        t is not None and t.type.is_complex for t in ts)
    if complex_ and not (e.op in COMPLEX_LINEAR and all(outs[i].type.is_complex
                                                         for i in live)):
        raise NotImplementedError(f"jvp: the tangent of {e.op} of complex values is not "
                                  f"supported yet")

    def pairing(gs, which=live):
        full = [None] * len(outs)
        for i, g in zip(which, gs):
            full[i] = g
        cts = rule(ctx, e, xs, out, full if many else full[0])
        total = None
        for x, c, t in zip(xs, cts, ts):
            if c is None or t is None or not x.type.is_inexact:
                continue
            c = unbroadcast(c, x.shape)
            term = O.sum(O.as_type(c, t.type) * t)
            total = term if total is None else total + term
        if total is None:
            return O.full((), 0.0, type=outs[live[0]].type)
        return total

    with _per_device():
        if not complex_:
            return _transposed(pairing, outs, live, many)
        # J is complex-linear: <g, J t> = g^T (J t) for complex g, so J t's real and
        # imaginary parts are the gradients of the pairing's real and imaginary parts
        # with respect to real seeds (JAX's transposes: no conjugation)
        def part(take):
            def real_pairing(rs, which=live):
                return take(pairing([O.as_type(r, outs[i].type) for i, r in zip(which, rs)],
                                    which))
            return real_pairing
        re = _transposed(part(O.real), outs, live, many, real=True)
        im = _transposed(part(O.imag), outs, live, many, real=True)
        if not many:
            return O.complex(re, im)
        return [None if a is None else a if isinstance(a, Poison) else O.complex(a, b)
                for a, b in zip(re, im)]


def _per_device():
    """Inside a shard_map body, the transpose is each device's own linear map: ``grad``
    must not treat the seeds (constants, so invariant across the mesh) as values whose
    cotangents add up over devices, as it does for the body's own values. A mesh context
    of view ``"device"`` (neither the global nor the local view) makes it a plain local
    gradient; no collective runs inside the transposed rules."""
    ctx = current_mesh()
    if ctx is not None and ctx.view == "local":
        return mesh_context(ctx.mesh, view="device")
    return contextlib.nullcontext()


def _transposed(pairing, outs, live, many, real=False):
    def seed(i):  # the cotangent ``pairing`` is differentiated at (real with ``real``)
        return zeros(outs[i].shape, T.to_real(outs[i].type) if real else outs[i].type)
    if not many:
        return grad(pairing)([seed(0)])[0]
    full = [None] * len(outs)
    try:
        tans = grad(pairing)([seed(i) for i in live])
        for i, t in zip(live, tans):
            full[i] = t
    except NotImplementedError:
        # some result has no gradient here (the singular vectors of a non-square
        # full_matrices svd): the others' tangents one by one, and that result's an error
        # only if a tangent that is used depends on it
        for i in live:
            try:
                full[i] = grad(functools.partial(pairing, which=[i]))([seed(i)])[0]
            except NotImplementedError as err:
                full[i] = Poison(f"{err}")
    return full


class Poison:
    """The tangent of a value forward mode cannot differentiate (a ``custom_vjp``
    function's result, a result whose rule is missing): an error if a tangent that is
    used depends on it (:mod:`nxpy.defn.transforms.jvp` propagates it and raises at the outputs)."""

    def __init__(self, message):
        self.message = message


#: the transposed ops whose tangent map is complex-linear on complex values (products,
#: permutations, linear solves): their complex tangents come from the same
#: transposes; the others (Hermitian factorizations) involve conjugates
COMPLEX_LINEAR = frozenset({"window_product", "window_reduce", "reduce", "permute_by_key",
                            "cumulative_product", "solve", "triangular_solve"})

for _op in ("window_max",
            "window_min", "window_product", "window_reduce", "reduce", "window_scatter_max",
            "window_scatter_min", "sort", "top_k", "permute_by_key", "cumulative_max",
            "cumulative_min", "cumulative_product", "cholesky", "eigh", "lu", "qr", "solve",
            "svd", "triangular_solve"):
    JVP_RULES[_op] = via_transpose
