"""nxpy's benchmarks: nxpy and JAX side by side in one process, reported as ratios.

Run ``python -m bench`` (about two minutes) or ``python -m bench --quick``
(about 20 seconds, noisier). nxpy starts the XLA client first, so both use one CPU
client with nxpy's device count (``NXPY_CPU_DEVICES``, default 8).

Cases live in the modules listed in :data:`CASE_MODULES`; each registers itself with
:func:`bench.core.case` (see that module for how to add one).
"""
from __future__ import annotations

import importlib

from .core import REGISTRY, Case, Config, Pair, Skip, case

__all__ = ["CASE_MODULES", "load_cases", "REGISTRY", "Case", "Config", "Pair", "Skip", "case"]

# Modules defining cases, in table order. Import them only after core.start_xla().
CASE_MODULES = ["bench.single_device", "bench.call_path", "bench.grad", "bench.vmap",
                "bench.transforms", "bench.sharded", "bench.ops_indexing",
                "bench.ops_windows", "bench.ops_sorting", "bench.ops_complex",
                "bench.ops_random", "bench.ops_linalg", "bench.nn", "bench.numpy",
                "bench.interop", "bench.gpt", "bench.grad_program"]


def load_cases() -> dict[str, Case]:
    for m in CASE_MODULES:
        importlib.import_module(m)
    return REGISTRY
