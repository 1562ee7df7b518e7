"""EXLA lowerings of the compositions family's primitives: ``population_count`` →
``stablehlo.popcnt`` and ``count_leading_zeros`` → ``stablehlo.count_leading_zeros``
(both elementwise on signed or unsigned integers, result in the operand's type, as JAX
emits them for ``lax.population_count`` / ``lax.clz``). The other functions of the family
are compositions and need no lowering of their own."""
from __future__ import annotations

from ... import types as T
from ...defn.expr import Expr
from .lowering import Ctx, out_of, register_lowering
from .mlir import Val

__all__ = ["BIT_COUNT_HLO"]

BIT_COUNT_HLO = {"population_count": "stablehlo.popcnt",
                 "count_leading_zeros": "stablehlo.count_leading_zeros"}


@register_lowering(*BIT_COUNT_HLO)
def _bit_count(c: Ctx, e: Expr, x: Val):
    if e.op == "count_leading_zeros" and e.type.kind == "s":
        # XLA's constant folder counts a negative signed value's zeros after widening it
        # with its sign (clz(-1 as s16) folds to -48; JAX gives the same): count the bits
        # as unsigned, which folds right and is the same count
        u = T.parse(f"u{e.type.bits}")
        bits = c.op("stablehlo.bitcast_convert", [x], (x.shape, u))
        n = c.op(BIT_COUNT_HLO[e.op], [bits], (x.shape, u))
        return c.op("stablehlo.bitcast_convert", [n], out_of(e))
    return c.op(BIT_COUNT_HLO[e.op], [x], out_of(e))
