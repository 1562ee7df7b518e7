"""What the CPU this suite runs on decides in JAX's results, found by asking XLA.

nxpy's NumPy backend gives the same bits on every CPU (docs/guarantees.md, "Results on
every CPU"). XLA:CPU does not: it compiles for the CPU it runs on, and two of its
choices change the last bits of ``jax.random``'s floats (and of nxpy's EXLA programs):

* **f32 multiply-adds**: on a CPU with FMA (x86-64 since 2013) XLA contracts ``a * b + c``
  into one fused multiply-add, rounded once; without FMA it rounds the product and the
  sum (``XLA_FLAGS=--xla_cpu_max_isa=AVX`` shows it on any CPU);
* **f16 and bf16 arithmetic**: XLA computes it in f32 and rounds every op to the narrow
  type; a CPU with native half-precision arithmetic (AVX512-FP16) can fuse it too.

The *reference arithmetic* is the first of each: what the tests' bit-for-bit comparisons
with JAX assume (and what the NumPy backend computes everywhere). On a CPU that differs,
those comparisons hold the documented bound instead of the bits (:func:`reference`), so
the suite passes on every CPU and still fails on a wrong bit where the bits are the
contract.

>>> isinstance(reference(), bool)
True
"""
import functools

import ml_dtypes
import numpy as np

import jax  # nxpy's conftest has started XLA: jax shares its client

_HALF = (np.float16, ml_dtypes.bfloat16)


def _operands(dt, n=512):
    rng = np.random.default_rng(20261207)
    return [rng.uniform(-2, 2, n).astype(dt) for _ in range(3)]


@functools.cache
def fused_f32() -> bool:
    """Whether XLA on this CPU rounds an f32 ``a * b + c`` once (a fused multiply-add)."""
    a, b, c = _operands(np.float32)
    got = np.asarray(jax.jit(lambda a, b, c: a * b + c)(a, b, c))
    once = (a.astype(np.float64) * b + c).astype(np.float32)  # exact in f64, then rounded
    return bool(np.array_equal(got, once))


@functools.cache
def half_rounds_each_op() -> bool:
    """Whether XLA on this CPU rounds each f16/bf16 op of ``a * b + c`` to its type."""
    for dt in _HALF:
        a, b, c = _operands(dt)
        got = np.asarray(jax.jit(lambda a, b, c: a * b + c)(a, b, c))
        prod = (a.astype(np.float32) * b.astype(np.float32)).astype(dt)
        each = (prod.astype(np.float32) + c.astype(np.float32)).astype(dt)
        if not np.array_equal(got, each):
            return False
    return True


def reference() -> bool:
    """Whether XLA on this CPU computes the reference arithmetic (see the module's text):
    then nxpy's samplers give JAX's bits on every path, and the tests check every bit."""
    return fused_f32() and half_rounds_each_op()


def why_not() -> str:
    """Why :func:`reference` is False here, for a test's message."""
    return "; ".join(
        [m for ok, m in ((fused_f32(), "XLA rounds an f32 a * b + c twice (no FMA)"),
                         (half_rounds_each_op(), "XLA fuses f16/bf16 arithmetic"))
         if not ok]) or "reference arithmetic"


def exact(dtype) -> bool:
    """Whether a result of ``dtype`` must equal JAX's bit for bit here: integers and bools
    on every CPU, floats (and complex) where XLA computes the reference arithmetic."""
    return np.dtype(dtype).kind in "iub" or reference()
