"""Importer rules of the window family: ``stablehlo.reduce_window`` in general (named
reducers to window_sum/max/min/product, other bodies to window_reduce with the region as
the function; base dilations; padding whose value is not the identity), ``stablehlo.reduce``
whose body is not a named reduction (→ ``reduce`` with the region as the function), and
``stablehlo.select_and_scatter`` (JAX's max/min pooling gradient: a >=, >, <= or <
select and an add scatter → window_scatter_max/min)."""
from __future__ import annotations

from .. import ops as nx
from .. import types as T
from ..ops.windows import select_and_scatter
from . import rules as R
from .rules import TERMINATORS, _fail, _is_identity, binary_body, register_op, rtype

__all__ = ["region_fun", "WINDOW_REDUCTIONS"]

#: reducer op → (window op, its identity as a function of the type)
WINDOW_REDUCTIONS = {"stablehlo.add": ("window_sum", lambda t: 0),
                     "stablehlo.maximum": ("window_max", T.min_value),
                     "stablehlo.minimum": ("window_min", T.max_value),
                     "stablehlo.multiply": ("window_product", lambda t: 1)}
_COMBINE = {"window_sum": "add", "window_max": "max", "window_min": "min",
            "window_product": "multiply"}

_base_reduce = R.OPS["stablehlo.reduce"]


def region_fun(scope, region):
    """``fun(x, acc)`` running a reducer region, whose body XLA calls as ``body(acc, x)``."""
    def fun(x, acc):
        (r,) = scope.run_region(region, [acc, x])
        return r
    return fun


def _pairs(pad, rank):
    if pad is None:
        return [(0, 0)] * rank
    arr = pad.tolist() if hasattr(pad, "tolist") else pad
    return [tuple(int(v) for v in p) for p in arr] if arr else [(0, 0)] * rank


@register_op("stablehlo.reduce_window")
def _reduce_window(scope, op, *operands):
    if len(operands) != 2:
        _fail(op, scope, f"a reduce_window over {len(operands) // 2} operands", unsupported=True)
    x, init = operands
    a = op.attributes
    r = x.rank
    window = [int(v) for v in a["window_dimensions"]]
    strides = [int(v) for v in a.get("window_strides", [1] * r)]
    base = [int(v) for v in a.get("base_dilations", [1] * r)]
    dil = [int(v) for v in a.get("window_dilations", [1] * r)]
    pads = _pairs(a.get("padding"), r)
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        _fail(op, scope, "a reduce_window with negative padding", unsupported=True)
    body = op.regions[0]
    kind = binary_body(body)
    found = WINDOW_REDUCTIONS.get(kind) if not x.type.is_pred else None
    if any(b != 1 for b in base):  # the holes are no elements: fill them with the identity
        if found is None or not _is_identity(scope, op.operands[1], found[1](x.type)):
            _fail(op, scope, "a reduce_window with base dilations whose body is not a named "
                             "reducer with its identity as init value", unsupported=True)
        x = nx.pad(x, init, [(0, 0, b - 1) for b in base])
    if found is not None:
        name, identity = found
        ident = _is_identity(scope, op.operands[1], identity(x.type))
        if ident or all(p == (0, 0) for p in pads):
            out = getattr(nx, name)(x, window, strides=strides, padding=pads,
                                    window_dilations=dil)
            return out if ident else getattr(nx, _COMBINE[name])(out, init)
    return nx.window_reduce(x, init, window, region_fun(scope, body), strides=strides,
                            padding=pads, window_dilations=dil)


@register_op("stablehlo.reduce")
def _reduce(scope, op, *operands):
    n = len(operands) // 2
    if n != 1:
        return _base_reduce(scope, op, *operands)
    x, init = operands
    body = op.regions[0]
    kind = binary_body(body)
    table = R._PRED_REDUCTIONS if x.type.is_pred else R.REDUCTIONS
    if kind in table:
        return _base_reduce(scope, op, *operands)
    axes = [int(d) for d in op.attributes["dimensions"]]
    if not axes:
        _fail(op, scope, "a reduce over no dimensions with a custom body", unsupported=True)
    _, t = rtype(op)
    return nx.reduce(x, init, region_fun(scope, body), axes=axes, type=t)


def _select_kind(body):
    """``(kind, tie_break)`` of a select region ``compare(a, b)`` (or ``compare(b, a)``)."""
    args = [a.name for a in body.args]
    ops = body.ops
    if len(args) != 2 or len(ops) != 2 or ops[0].name != "stablehlo.compare" or \
            ops[1].name not in TERMINATORS or str(ops[1].operands[0]) != ops[0].results[0]:
        return None
    lhs, rhs = (str(u) for u in ops[0].operands)
    d = str(ops[0].attributes["comparison_direction"])
    if (lhs, rhs) == (args[1], args[0]):
        d = {"GE": "LE", "GT": "LT", "LE": "GE", "LT": "GT"}.get(d)
    elif (lhs, rhs) != (args[0], args[1]):
        return None
    return {"GE": ("max", "low"), "GT": ("max", "high"), "LE": ("min", "low"),
            "LT": ("min", "high")}.get(d)


@register_op("stablehlo.select_and_scatter")
def _select_and_scatter(scope, op, x, source, init):
    a = op.attributes
    r = x.rank
    sel, scat = op.regions
    found = _select_kind(sel)
    if found is None or binary_body(scat) != "stablehlo.add":
        _fail(op, scope, "a select_and_scatter whose select is not one comparison (>=, >, <= "
                         "or <) of its arguments, or whose scatter is not an add",
              unsupported=True)
    kind, tie = found
    window = [int(v) for v in a["window_dimensions"]]
    strides = [int(v) for v in a.get("window_strides", [1] * r)]
    pads = _pairs(a.get("padding"), r)
    _, t = rtype(op)
    out = select_and_scatter(f"window_scatter_{kind}", x, nx.as_type(source, t),
                             nx.as_type(init, t), window, strides, pads, tie)
    return out
