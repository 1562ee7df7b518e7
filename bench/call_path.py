"""The call path (issue 15): what one call costs beyond the work, against JAX, against
the raw PJRT execute of the same executable, and against NumPy for eager ops; and what
compile work a second wrapper, a second mesh and a second process skip."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from .core import Pair, case
from .single_device import CHAIN_BLOCKS, _call_fn, _call_sides, _operands, chain


@case("call_vs_raw", "call vs raw PJRT execute of the same executable", aim=1.1)
def call_vs_raw(cfg):
    from nxpy import pjrt
    nf, (x, y), _, _ = _call_sides()
    run = next(iter(nf._mixed.values()))[0]
    execute = pjrt.executor(run.executable, [((4, 4), np.float32)], 0)
    bufs = [x.data, y.data]
    return Pair(nxpy=lambda: nf(x, y), jax=lambda: execute(bufs),
                info="nxpy.defn.jit call on EXLA tensors vs executing its own executable "
                     "with the device buffers directly (the 'jax' column is the raw call)")


@case("jax_vs_raw", "reference: jax.jit call vs raw PJRT execute of its executable")
def jax_vs_raw(cfg):
    from nxpy import pjrt
    _, _, jf, (jx, jy) = _call_sides()
    exe = jf.lower(jx, jy).compile()._executable.xla_executable
    execute = pjrt.executor(exe, [((4, 4), np.float32)], 0)
    bufs = [jx, jy]
    np.testing.assert_array_equal(np.asarray(execute(bufs)[0]), np.asarray(jf(jx, jy)))
    return Pair(nxpy=lambda: jf(jx, jy), jax=lambda: execute(bufs),
                info="what call_vs_raw's floor costs JAX: the 'nxpy' column is jax.jit's "
                     "call, the 'jax' column the raw execute of JAX's own executable")


@case("call_numpy", "call with NumPy array inputs (4x4 f32)", aim=1.2)
def call_numpy(cfg):
    import jax
    from nxpy.defn import jit
    a, b = _operands()
    nf, jf = jit(_call_fn, compiler="exla"), jax.jit(_call_fn)
    np.testing.assert_allclose(nf(a, b).to_numpy(), np.asarray(jf(a, b)), rtol=1e-6)
    return Pair(nxpy=lambda: nf(a, b), jax=lambda: jf(a, b),
                info="both take host NumPy arrays, copy them to the device and run")


@case("eager_numpy", "eager add on the NumPy backend vs NumPy (4x4 f32)", aim=3.0)
def eager_numpy(cfg):
    import nxpy as nx
    a, b = _operands()
    x, y = nx.tensor(a, backend="numpy"), nx.tensor(b, backend="numpy")
    np.testing.assert_array_equal(nx.add(x, y).to_numpy(), a + b)
    return Pair(nxpy=lambda: nx.add(x, y), jax=lambda: np.add(a, b),
                info="nx.add on NumPy-backend tensors vs np.add on the arrays (the 'jax' "
                     "column is NumPy)")


@case("eager_exla", "eager add on the EXLA backend vs eager jax.numpy", aim=1.5)
def eager_exla(cfg):
    import jax
    import jax.numpy as jnp
    import nxpy as nx
    a, b = _operands()
    x, y = nx.tensor(a, backend="exla"), nx.tensor(b, backend="exla")
    ja, jb = jax.device_put(a), jax.device_put(b)
    np.testing.assert_array_equal(nx.add(x, y).to_numpy(), np.asarray(jnp.add(ja, jb)))
    return Pair(nxpy=lambda: nx.add(x, y), jax=lambda: jnp.add(ja, jb),
                info="one compiled op per call on device tensors, dispatch only")


@case("evaluator_per_node", f"Evaluator: {4 * CHAIN_BLOCKS}-op chain vs NumPy (4x4 f32)")
def evaluator_per_node(cfg):
    import nxpy as nx
    from nxpy.defn import jit
    a = _operands()[0]
    x = nx.tensor(a, backend="numpy")
    f = jit(lambda x: chain(nx, x), compiler="evaluator")
    np.testing.assert_allclose(f(x).to_numpy(), chain(np, a), rtol=1e-5)
    return Pair(nxpy=lambda: f(x), jax=lambda: chain(np, a),
                info=f"the Evaluator running {4 * CHAIN_BLOCKS} nodes vs the same NumPy "
                     f"calls written by hand; per-node overhead = (nxpy - numpy) / "
                     f"{4 * CHAIN_BLOCKS} (the 'jax' column is NumPy)")


@case("new_wrapper_shard_jit", "first call of a new shard_jit wrapper (2x2), cached program",
      aim=2.0, devices=4)
def new_wrapper_shard_jit(cfg):
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import nxpy as nx
    from nxpy.defn import shard_jit
    mesh = nx.Mesh("bench_w", (2, 2), axis_names=("a", "b"))

    def body(x):
        return x * 2 + 1
    args = [[nx.tensor(np.full((2, 2), p, np.float32), backend="exla")] for p in range(4)]
    shard_jit(body, mesh, input_shardings=[{0: ["a"], 1: ["b"]}], compiler="exla")(args)
    jmesh = Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("a", "b"))
    sh = NamedSharding(jmesh, P("a", "b"))
    jx = jax.device_put(jnp.zeros((4, 4), jnp.float32), sh)
    jax.jit(body, in_shardings=sh)(jx)

    def nxpy_side():
        return shard_jit(body, mesh, input_shardings=[{0: ["a"], 1: ["b"]}],
                         compiler="exla")(args)

    def jax_side():
        return jax.jit(body, in_shardings=sh)(jx)
    return Pair(nxpy=nxpy_side, jax=jax_side,
                info="a new wrapper object of the same function and mesh, called once: "
                     "both find the compiled program in their process-wide caches")


@case("matmul_1000", "matmul 1000x1000 f32: the same XLA program, nxpy-compiled vs JAX's",
      aim=1.05)
def matmul_1000(cfg):
    import jax
    import nxpy as nx
    from nxpy.defn import jit
    a = np.random.default_rng(0).random((1000, 1000), dtype=np.float32)
    x = nx.tensor(a, backend="exla")
    ja = jax.device_put(a)
    nf = jit(lambda x, y: nx.dot(x, y), compiler="exla")
    jf = jax.jit(lambda x, y: x @ y)
    np.testing.assert_allclose(nf(x, x).to_numpy(), np.asarray(jf(ja, ja)), rtol=1e-4)
    return Pair(nxpy=lambda: nx.block_until_ready(nf(x, x)),
                jax=lambda: jf(ja, ja).block_until_ready(),
                info="both compile the same dot (one ynn fusion); results waited for")


_FIRST_CALL = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    side = sys.argv[1]
    if side == "nxpy":
        import nxpy as nx
        from nxpy.defn import jit
        from nxpy import pjrt
        pjrt.devices()
        x = nx.tensor([1.0, 2.0], backend="exla")
        f = jit(lambda x: CHAIN(nx, x), compiler="exla")
        t1 = time.perf_counter()
        f(x).to_numpy()
    else:
        import jax, jax.numpy as jnp
        jax.config.update("jax_compilation_cache_dir", sys.argv[2])
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        x = jax.device_put(jnp.array([1.0, 2.0], jnp.float32))
        f = jax.jit(lambda x: CHAIN(jnp, x))
        t1 = time.perf_counter()
        f(x).block_until_ready()
    print(time.perf_counter() - t1)
""")


def _chain_src():
    return textwrap.dedent(f"""
        def CHAIN(m, x):
            for _ in range({5 * CHAIN_BLOCKS}):
                x = x * 1.0001 + 0.5
                x = m.sin(x)
                x = m.tanh(x)
            return x
    """)


def first_call_in_processes(cache_root) -> dict:
    """First-call times (seconds) of a 1,000-op program in fresh processes: cold (empty
    persistent cache) and warm (the cache a previous process filled), nxpy and JAX."""
    out = {}
    program = _chain_src() + _FIRST_CALL
    for side in ("nxpy", "jax"):
        d = os.path.join(cache_root, side)
        os.makedirs(d, exist_ok=True)
        env = {**os.environ, "NXPY_CACHE_DIR": d}
        for phase in ("cold", "warm"):
            r = subprocess.run([sys.executable, "-c", program, side, d], capture_output=True,
                               text=True, env=env, timeout=600)
            if r.returncode != 0:
                raise RuntimeError(r.stderr)
            out[(side, phase)] = float(r.stdout.split()[-1])
    return out


def print_first_call_table():
    """Runs :func:`first_call_in_processes` and prints its table."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        t = first_call_in_processes(d)
    print("first call of a 1,000-op program in a new process (seconds; nxpy: NXPY_CACHE_DIR, "
          "JAX: jax_compilation_cache_dir):")
    print(f"{'':8}{'cold':>10}{'disk-warm':>12}{'warm/cold':>11}")
    for side in ("nxpy", "jax"):
        c, w = t[(side, "cold")], t[(side, "warm")]
        print(f"{side:8}{c:10.3f}{w:12.3f}{w / c:11.2f}")
    print(f"nxpy/jax: cold {t[('nxpy', 'cold')] / t[('jax', 'cold')]:.2f}x, "
          f"warm {t[('nxpy', 'warm')] / t[('jax', 'warm')]:.2f}x")


if __name__ == "__main__":
    print_first_call_table()
