"""Importer rules for the compositions family: ``stablehlo.popcnt`` and
``stablehlo.count_leading_zeros`` (what nxpy lowers ``population_count`` /
``count_leading_zeros`` to, and what JAX emits for ``lax.population_count`` / ``lax.clz``)
read back as the nxpy ops. The family's other functions lower to ops the base rules read.
"""
from __future__ import annotations

from .. import ops as nx
from ..compilers.exla.lower_compositions import BIT_COUNT_HLO
from .rules import register_op

__all__ = []


def _bit_count(name):
    def handler(scope, op, x):
        return getattr(nx, name)(x)
    return handler


for _op, _hlo in BIT_COUNT_HLO.items():
    register_op(_hlo)(_bit_count(_op))
