"""Single-device cases: the cost of calling a compiled function, and of tracing plus
lowering a long program."""
from __future__ import annotations

import numpy as np

from .core import Pair, case

CHAIN_BLOCKS = 50  # 4 ops each: multiply, add, sin, tanh -> 200 ops


def _call_fn(x, y):
    return x * 2 + y


def _operands():
    a = np.arange(16, dtype=np.float32).reshape(4, 4) / 7
    b = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    return a, b


def _call_sides():
    import jax
    import nxpy as nx
    from nxpy.defn import jit
    a, b = _operands()
    x, y = nx.tensor(a, backend="exla"), nx.tensor(b, backend="exla")
    nf = jit(_call_fn, compiler="exla")
    dev = jax.devices()[0]
    jx, jy = jax.device_put(a, dev), jax.device_put(b, dev)
    jf = jax.jit(_call_fn)
    expected = a * 2 + b
    np.testing.assert_allclose(nf(x, y).to_numpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jf(jx, jy)), expected, rtol=1e-6)
    return nf, (x, y), jf, (jx, jy)


@case("call", "call: compiled 4x4 f32 x * 2 + y", aim=1.2)
def call(cfg):
    nf, (x, y), jf, (jx, jy) = _call_sides()
    return Pair(nxpy=lambda: nf(x, y), jax=lambda: jf(jx, jy),
                info="nxpy.defn.jit(f, compiler='exla') on EXLA tensors vs jax.jit(f) on "
                     "device arrays; dispatch only (results not waited for), cache hit")


@case("call_to_host", "call + result to host (NumPy)")
def call_to_host(cfg):
    nf, (x, y), jf, (jx, jy) = _call_sides()
    return Pair(nxpy=lambda: nf(x, y).to_numpy(), jax=lambda: np.asarray(jf(jx, jy)),
                info="as 'call', then the result copied to a NumPy array "
                     "(t.to_numpy() vs np.asarray)")


def chain(m, x):
    """``CHAIN_BLOCKS`` x (multiply, add, sin, tanh) on ``x`` with op namespace ``m``."""
    for _ in range(CHAIN_BLOCKS):
        x = x * 1.0001 + 0.5
        x = m.sin(x)
        x = m.tanh(x)
    return x


def _trace_sides():
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    from nxpy.compilers.exla import to_mlir
    from nxpy.defn import trace

    template = nx.template((4, 4), "f32")
    spec = jax.ShapeDtypeStruct((4, 4), jnp.float32)
    graph = trace(lambda x: chain(nx, x), (template,))
    n_ops = sum(e.op not in ("parameter", "constant") for e in graph.nodes)
    assert n_ops == 4 * CHAIN_BLOCKS, n_ops
    # a fresh function object per call on both sides: JAX caches traces and lowerings
    # per function, and the point is to measure the work, not a cache hit

    def nxpy_side():
        return to_mlir(lambda x: chain(nx, x), template)

    def jax_lower():
        return jax.jit(lambda x: chain(jnp, x)).lower(spec)

    assert "stablehlo.tanh" in nxpy_side() and "stablehlo.tanh" in jax_lower().as_text()
    return nxpy_side, jax_lower, n_ops


@case("trace_lower", f"trace+lower: {4 * CHAIN_BLOCKS}-op elementwise chain", aim=1.0)
def trace_lower(cfg):
    nxpy_side, jax_lower, n = _trace_sides()
    return Pair(nxpy=nxpy_side, jax=jax_lower,
                info=f"{n} ops on f32[4][4], no XLA compile. nxpy: "
                     "nxpy.compilers.exla.to_mlir (trace to Expr + StableHLO text, its "
                     "final form). JAX: jax.jit(f).lower(spec) (jaxpr + ir.Module, its "
                     "final form); .as_text() NOT included")


@case("trace_lower_text", f"trace+lower+as_text: {4 * CHAIN_BLOCKS}-op chain")
def trace_lower_text(cfg):
    nxpy_side, jax_lower, n = _trace_sides()
    return Pair(nxpy=nxpy_side, jax=lambda: jax_lower().as_text(),
                info="as 'trace_lower', with JAX's .as_text() included (nxpy's result "
                     "is already text)")
