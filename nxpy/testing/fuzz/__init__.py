"""Differential fuzzing: seeded random programs, run every way nxpy can run them (the
NumPy backend, the Evaluator, EXLA, the StableHLO round trip; sharded programs per
device; ``vmap`` and ``jvp`` of them) and compared with one another and with a JAX twin.
``docs/fuzzing.md`` states the rules: what a program is made of, which paths are
compared, the tolerances, how a mismatch is reported and reproduced, how an op gets its
twin (``twins.py``).

The modules, each over the ones before it: ``twins`` (the op table: each op's nxpy call
and JAX twin), ``program`` (inputs, steps, programs), ``generator`` (:func:`generate`),
``compare`` (tolerances, comparing arrays), ``sharded`` (sharded programs), ``checks``
(:func:`check_vmap`, :func:`check_jvp`), ``run`` (:func:`check`, :func:`run_many`),
``cli`` (``python -m nxpy.testing.fuzz``, :func:`main`).

>>> from nxpy.testing import fuzz
>>> fuzz.check(fuzz.generate(0, 3))   # raises fuzz.Mismatch when two paths disagree
"""
from .checks import VMAP_SIZE, VmapSpec, check_jvp, check_vmap, vmap_spec
from .cli import main
from .compare import TOLERANCES, tolerances
from .generator import generate
from .program import Leaf, Mismatch, Program, Step
from .run import check, run_many
from .sharded import ShardedProgram, check_sharded, generate_sharded
from .twins import OPS

__all__ = ["Program", "Leaf", "Step", "generate", "generate_sharded", "check", "Mismatch",
           "run_many", "TOLERANCES", "tolerances", "main", "VmapSpec", "vmap_spec", "check_vmap",
           "VMAP_SIZE", "check_jvp", "ShardedProgram", "check_sharded", "OPS"]
