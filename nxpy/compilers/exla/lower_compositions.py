"""EXLA lowerings of the compositions family's primitives: ``population_count`` →
``stablehlo.popcnt`` and ``count_leading_zeros`` → ``stablehlo.count_leading_zeros``
(both elementwise on signed or unsigned integers, result in the operand's type, as JAX
emits them for ``lax.population_count`` / ``lax.clz``). The other functions of the family
are compositions and need no lowering of their own."""
from __future__ import annotations

from ...defn.expr import Expr
from .lowering import Ctx, out_of, register_lowering
from .mlir import Val

__all__ = ["BIT_COUNT_HLO"]

BIT_COUNT_HLO = {"population_count": "stablehlo.popcnt",
                 "count_leading_zeros": "stablehlo.count_leading_zeros"}


@register_lowering(*BIT_COUNT_HLO)
def _bit_count(c: Ctx, e: Expr, x: Val):
    return c.op(BIT_COUNT_HLO[e.op], [x], out_of(e))
