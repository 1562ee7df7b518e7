"""Lowerings of the window family: window_min/window_product (``stablehlo.reduce_window``
with a named reducer), window_reduce and reduce (``reduce_window`` / ``reduce`` whose
body region is the traced reduction function) and window_scatter_max/min
(``stablehlo.select_and_scatter``). See docs/ops_windows.md for the forms."""
from __future__ import annotations

import numpy as np

from ... import types as T
from ...defn.expr import Expr, Fn
from .lowering import Ctx, out_of, reducer_region, register_lowering
from .mlir import dense_i64, i64_array


def _window_attrs(at):
    return {"padding": dense_i64(at["padding"]) if at["padding"] else "dense<> : tensor<0x2xi64>",
            "window_dilations": i64_array(at["window_dilations"]),
            "window_dimensions": i64_array(at["window_dimensions"]),
            "window_strides": i64_array(at["strides"])}


@register_lowering("window_min", "window_product")
def _named_window(c: Ctx, e: Expr, x):
    name, init = (("stablehlo.minimum", T.max_value(e.type)) if e.op == "window_min"
                  else ("stablehlo.multiply", 1))
    x = c.convert(x, e.type)
    return c.op("stablehlo.reduce_window", [x, c.const(init, e.type)], out_of(e),
                _window_attrs(e.attrs), [reducer_region(c, name, e.type)])


def fun_region(c: Ctx, fn: Fn, t: T.Type) -> str:
    """The reducer region of a traced ``fun(x, acc)``: XLA calls its body with the
    accumulator first, ``body(acc, x)``."""
    def build(cb, args):
        sub = Ctx(cb, {}, c)
        return sub.lower_body(fn, [args[1], args[0]])
    return c.b.region([((), t), ((), t)], build)


@register_lowering("window_reduce")
def _window_reduce(c: Ctx, e: Expr, x, acc):
    x, acc = c.convert(x, e.type), c.convert(acc, e.type)
    if not e.shape:
        # XLA returns a rank-0 reduce_window's operand as it is, without folding in the
        # init value: a window of one element at rank 1 does fold it in (Nx's semantics)
        at = {"padding": [(0, 0)], "window_dilations": (1,), "window_dimensions": (1,),
              "strides": (1,)}
        r = c.op("stablehlo.reduce_window", [c.reshape(x, (1,)), acc], ((1,), e.type),
                 _window_attrs(at), [fun_region(c, e.fns[0], e.type)])
        return c.reshape(r, ())
    return c.op("stablehlo.reduce_window", [x, acc], out_of(e), _window_attrs(e.attrs),
                [fun_region(c, e.fns[0], e.type)])


@register_lowering("reduce")
def _reduce_fun(c: Ctx, e: Expr, x, acc):
    axes = list(e.attrs["axes"])
    x, acc = c.convert(x, e.type), c.convert(acc, e.type)
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    r = c.op("stablehlo.reduce", [x, acc], (shape, e.type), {"dimensions": i64_array(axes)},
             [fun_region(c, e.fns[0], e.type)])
    return c.reshape(r, e.shape)


#: (op, tie_break) → the select region's comparison (XLA keeps the current element while
#: ``select(current, candidate)`` holds: >= keeps the first maximum, > moves to the last)
SELECT = {("window_scatter_max", "low"): "GE", ("window_scatter_max", "high"): "GT",
          ("window_scatter_min", "low"): "LE", ("window_scatter_min", "high"): "LT"}


@register_lowering("window_scatter_max", "window_scatter_min")
def _window_scatter(c: Ctx, e: Expr, x, source, init):
    """As JAX emits it: XLA wants one element type for the operand, the source and the
    result, and the operand padded by hand before a select_and_scatter without padding,
    then sliced back. The padding value must lose to every element, ties included (on a
    tie, Nx's > moves to the later candidate): JAX's (the type's lowest value for max) ties
    with -inf or an unsigned zero, and the source value would go to the padding. So padded
    operands of at most 32 bits are widened: integers and pred to s64, padded with its
    lowest value; f16/bf16/f32 to f64 with their infinities moved to f64's largest finite
    values (the order is kept), padded with -inf (+inf for min)."""
    at = e.attrs
    direction = SELECT[(e.op, at["tie_break"])]
    is_max = e.op == "window_scatter_max"
    m = T.merge(x.type, e.type)
    pads = at["padding"]
    shape = x.shape
    if not shape:
        # one window holding the one element: init + source. (XLA's CPU compiler aborts
        # the process on a rank-0 select_and_scatter, JAX's too.)
        return c.convert(c.binop("stablehlo.add", c.convert(init, m), c.convert(source, m)),
                         e.type)
    padded = any(lo or hi for lo, hi in pads)
    if padded and m.bits <= 32:
        narrow_float = m.is_inexact
        m = T.F64 if m.is_inexact else T.S64
        x = c.convert(x, m)
        if narrow_float:
            inf = np.inf if is_max else -np.inf
            big = np.finfo(np.float64).max * (-1 if is_max else 1)
            hit = c.compare(x, c.bcast(c.const(-inf, m), shape), "EQ")
            x = c.select(hit, c.bcast(c.const(big, m), shape), x)
    x, source, init = c.convert(x, m), c.convert(source, m), c.convert(init, m)
    if padded:
        fill = T.min_value(m) if is_max else T.max_value(m)
        padded_shape = tuple(d + lo + hi for d, (lo, hi) in zip(shape, pads))
        x = c.op("stablehlo.pad", [x, c.const(fill, m)], (padded_shape, m), {
            "edge_padding_low": i64_array([lo for lo, _ in pads]),
            "edge_padding_high": i64_array([hi for _, hi in pads]),
            "interior_padding": i64_array([0] * len(pads))})
    select = c.scalar_region(m, 1, lambda s, lhs, rhs: [s.compare(lhs[0], rhs[0], direction)])
    scatter = reducer_region(c, "stablehlo.add", m)
    r = c.op("stablehlo.select_and_scatter", [x, source, init], (x.shape, m), {
        "padding": dense_i64([(0, 0)] * len(shape)),
        "window_dimensions": i64_array(at["window_dimensions"]),
        "window_strides": i64_array(at["strides"])}, [select, scatter])
    if x.shape != shape:
        r = c.op("stablehlo.slice", [r], (shape, m), {
            "start_indices": i64_array([lo for lo, _ in pads]),
            "limit_indices": i64_array([lo + d for d, (lo, _) in zip(shape, pads)]),
            "strides": i64_array([1] * len(shape))})
    return c.convert(r, e.type)


__all__ = ["fun_region", "SELECT"]
