"""Programs that crash XLA:CPU itself (jaxlib 0.10.2) when emitted the obvious way, and
that nxpy's EXLA lowering emits another way. Each runs in a child process, so a
regression fails this test instead of killing the test worker; results are compared
with NumPy.

* A reduce whose signed narrowing (``as_type`` s64 -> s32, s32 -> s16, ...) feeds a
  ``bitwise_and``/``bitwise_or`` while the reduce has another use: XLA segfaults while
  compiling (found by the fuzzer's vmap check; ``jax.jit`` of the same program crashes
  too). nxpy narrows through the unsigned type of the target width and a bitcast (the
  same bits: two's complement truncation). JAX's form, for a report upstream::

      jax.config.update("jax_enable_x64", True)
      red = lambda c: lax.reduce(c, np.int64(0), lax.add, (1,))
      f = lambda c, p: (lax.bitwise_and(red(c).astype(jnp.int32), p.astype(jnp.int32)), red(c))
      jax.jit(f)(np.arange(9).reshape(3, 3), np.array([True, False, True]))  # SIGSEGV
"""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nxpy as nx
from nxpy.compilers.exla import to_mlir

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = """
import sys
import numpy as np
import nxpy as nx
from nxpy.defn import jit
src, dst, op = sys.argv[1:4]
def f(c, p):
    r = nx.sum(c, axes=[1])
    return getattr(nx, op)(nx.as_type(r, dst), nx.as_type(p, dst)), r
c = np.arange(12).reshape(3, 4) * 37 + 11
p = np.array([True, False, True])
out = jit(f, compiler="exla")(nx.tensor(c.tolist(), type=src), nx.tensor(p))
print(repr([o.tolist() for o in out]))
"""

NP = {"s64": np.int64, "s32": np.int32, "s16": np.int16, "s8": np.int8}


@pytest.mark.parametrize("src, dst, op", [
    ("s64", "s32", "bitwise_and"), ("s64", "s16", "bitwise_or"),
    ("s32", "s16", "bitwise_and"), ("s32", "s8", "bitwise_and"), ("s16", "s8", "bitwise_or"),
])
def test_narrowing_a_reduce_into_a_bitwise_op(src, dst, op):
    r = subprocess.run([sys.executable, "-c", PROGRAM, src, dst, op], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
    c = (np.arange(12).reshape(3, 4) * 37 + 11).astype(NP[src])
    total = c.sum(axis=1, dtype=NP[src])
    p = np.array([1, 0, 1], NP[dst])
    want = getattr(np, op)(total.astype(NP[dst]), p)  # NumPy's astype wraps as XLA does
    assert eval(r.stdout.strip()) == [want.tolist(), total.tolist()]


def test_the_narrowing_is_the_same_bits():
    text = to_mlir(lambda x: nx.as_type(x, "s8"), nx.template((4,), "s32"))
    assert "stablehlo.bitcast_convert" in text and "tensor<4xui8>" in text
    x = np.array([300, -129, 127, -2**31], np.int32)
    for compiler in ("exla", "evaluator"):
        got = nx.defn.jit(lambda a: nx.as_type(a, "s8"), compiler=compiler)(nx.tensor(x))
        assert got.tolist() == x.astype(np.int8).tolist()
