"""Importer rules for the sorting family: ``stablehlo.sort`` (the comparators JAX emits for
``jnp.sort``, ``jnp.argsort`` and ``lax.sort`` with several operands), ``chlo.top_k``
(``lax.top_k``), and the ``stablehlo.reduce_window`` forms of ``jnp.cumsum``,
``cumprod``, ``lax.cummax`` and ``cummin`` (a window spanning the whole axis, padded on
one side). Other reduce_windows go on to the rule registered before this module.

A sort's comparator is classified by running it on probe values: it must order its
first operand as Nx does (ascending or descending; NaN above everything, ``-0.0 ==
0.0``) and ignore the other operands.
"""
from __future__ import annotations

import numpy as np

from .. import ops as nx
from .. import types as T
from .assembly import EQ, Group, Use, _with, attr_of, register_form
from .rules import OPS, LoadError, _fail, _is_identity, binary_body, register_op, rtype

__all__ = []


# ----------------------------------------------------------------------------------------
# stablehlo.sort
# ----------------------------------------------------------------------------------------
def _comparator_says(scope, region, types, pairs):
    """The comparator run eagerly: ``pairs`` is one ``(lhs, rhs)`` per operand."""
    args = []
    for t, (a, b) in zip(types, pairs):
        args += [nx.tensor(a, type=t, backend="numpy"), nx.tensor(b, type=t, backend="numpy")]
    (r,) = scope.run_region(region, args, eager=True)
    return bool(r.to_numpy())


def _classify(scope, region, types):
    """``"asc"`` or ``"desc"`` when ``region`` orders operand 0 as Nx does, else None."""
    t = types[0]
    rest = [(0, 0)] * (len(types) - 1)

    def less(a, b, others=None):
        return _comparator_says(scope, region, types, [(a, b)] + (others or rest))
    lo, hi = (0, 1) if t.is_pred else (1, 2)
    if less(lo, hi) and not less(hi, lo):
        direction = "asc"
    elif less(hi, lo) and not less(lo, hi):
        direction = "desc"
    else:
        return None
    before = (lambda a, b: a < b) if direction == "asc" else (lambda a, b: a > b)
    cases = [(lo, lo), (hi, hi)]
    if t.kind == "s":
        cases += [(-1, 1), (1, -1), (np.iinfo(t.dtype).min, np.iinfo(t.dtype).max)]
    if t.kind == "u":
        cases += [(1, np.iinfo(t.dtype).max), (np.iinfo(t.dtype).max, 1)]
    if t.is_inexact:
        cases += [(-np.inf, np.inf), (-1.5, 0.5), (-0.0, 0.0), (0.0, -0.0)]
    for a, b in cases:
        if less(a, b) != before(a, b):
            return None
    if t.is_inexact:
        nan = float("nan")
        nan_first = direction == "desc"
        for a, b, want in [(nan, 1.0, nan_first), (1.0, nan, not nan_first), (nan, nan, False),
                           (nan, np.inf, nan_first), (-nan, 1.0, nan_first)]:
            if less(a, b) != want:
                return None
    if rest:  # only operand 0 may decide
        for others in ([(0, 1)] * len(rest), [(1, 0)] * len(rest)):
            if less(lo, hi, others) != less(lo, hi) or less(lo, lo, others):
                return None
    return direction


@register_op("stablehlo.sort")
def _sort(scope, op, *operands):
    axis = int(op.attributes.get("dimension", -1))
    keys = operands[0]
    axis = axis % keys.rank if keys.rank else 0
    types = [v.type for v in operands]
    try:
        direction = _classify(scope, op.regions[0], types)
    except LoadError as e:
        _fail(op, scope, f"its comparator cannot be evaluated: {e}", unsupported=True)
    if direction is None:
        _fail(op, scope, "a sort whose comparator does not order its first operand as nxpy's "
                         "sort does (ascending or descending, NaN above everything, -0.0 == "
                         "0.0) or depends on other operands", unsupported=True)
    out = [nx.sort(keys, axis=axis, direction=direction)]
    for i, v in enumerate(operands[1:], 1):
        if scope.fact(op.operands[i]) == ("iota", axis) and v.type.is_int:
            out.append(nx.argsort(keys, axis=axis, direction=direction, type=v.type))
        else:
            out.append(nx.permute_by_key(keys, v, axis=axis, direction=direction))
    return out


# ----------------------------------------------------------------------------------------
# chlo.top_k
# ----------------------------------------------------------------------------------------
@register_form("chlo.top_k")
def _top_k_form(form):
    """``chlo.top_k(%x, k = 2) : tensor<..> -> (tensor<..>, tensor<..>)``."""
    e = form.take(form.entries[0])
    if len(e) != 1 or not isinstance(e[0], Group) or e[0].kind != "(":
        return _with(form, form.uses(), form.attr_dict())
    operands, attrs = [], {}
    for x in e[0].entries:
        segs = x.segments(EQ)
        if len(x) == 1 and isinstance(x[0], Use):
            operands.append(x[0])
        elif len(segs) == 2:
            attrs[str(segs[0][0])] = attr_of(segs[1])
    return _with(form, operands, attrs)


@register_op("chlo.top_k")
def _top_k(scope, op, x):
    k = int(op.attributes["k"])
    values, indices = nx.top_k(x, k=k)
    _, it = rtype(op, 1)
    return [values, indices if it == indices.type else nx.as_type(indices, it)]


# ----------------------------------------------------------------------------------------
# reduce_window: the cumulative forms
# ----------------------------------------------------------------------------------------
_CUMULATIVE = {"stablehlo.add": ("cumulative_sum", lambda t: 0),
               "stablehlo.multiply": ("cumulative_product", lambda t: 1),
               "stablehlo.maximum": ("cumulative_max", T.min_value),
               "stablehlo.minimum": ("cumulative_min", T.max_value)}
_PRED_CUMULATIVE = {"stablehlo.or": "cumulative_max", "stablehlo.maximum": "cumulative_max",
                    "stablehlo.and": "cumulative_min", "stablehlo.minimum": "cumulative_min"}

#: the reduce_window rule this module found registered (the general one), for the forms
#: that are not cumulative
_GENERAL = OPS.get("stablehlo.reduce_window")


def _cumulative_form(scope, op, x, init):
    """``(op name, axis, reverse)`` if the reduce_window is a cumulative scan, else None."""
    a = op.attributes
    r = x.rank
    if r == 0:
        return None
    kind = binary_body(op.regions[0])
    if x.type.is_pred:
        name = _PRED_CUMULATIVE.get(kind)
        identity = name == "cumulative_min"
    else:
        name, ident = _CUMULATIVE.get(kind, (None, None))
        identity = ident(x.type) if name else None
    if name is None or not _is_identity(scope, op.operands[1], identity):
        return None
    window = [int(v) for v in a["window_dimensions"]]
    def ones(key):
        return all(int(v) == 1 for v in a.get(key, [1] * r))
    if not (ones("window_strides") and ones("base_dilations") and ones("window_dilations")):
        return None
    pad = a.get("padding")
    pads = [tuple(int(v) for v in p) for p in pad.tolist()] if pad is not None and \
        pad.array.size else [(0, 0)] * r
    axes = [i for i, w in enumerate(window) if w != 1]
    if len(axes) > 1 or any(p != (0, 0) for i, p in enumerate(pads) if i not in axes):
        return None
    if not axes:  # a window of one element: the identity, which is a scan along an axis
        # of length one only (along a longer axis the scan would combine its elements)
        if any(p != (0, 0) for p in pads):
            return None
        return next(((name, i, False) for i, n in enumerate(x.shape) if n == 1), None)
    ax = axes[0]
    n = x.shape[ax]
    if window[ax] != n:
        return None
    if pads[ax] == (n - 1, 0):
        return name, ax, False
    if pads[ax] == (0, n - 1):
        return name, ax, True
    return None


@register_op("stablehlo.reduce_window")
def _reduce_window(scope, op, *operands):
    found = _cumulative_form(scope, op, *operands) if len(operands) == 2 else None
    if found is None:
        if _GENERAL is None:
            _fail(op, scope, "a reduce_window that is not a cumulative scan", unsupported=True)
        return _GENERAL(scope, op, *operands)
    name, axis, reverse = found
    x = operands[0]
    _, t = rtype(op)
    r = getattr(nx, name)(x, axis=axis, reverse=reverse)
    return r if r.type == t else nx.as_type(r, t)
