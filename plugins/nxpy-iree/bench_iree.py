"""IREE (llvm-cpu) vs EXLA on the same CPU: ``python plugins/nxpy-iree/bench_iree.py``.

First call: a fresh ``jit`` of a new function, trace + lower + compile + run. Steady
state: the median of repeated calls with the same arguments (results fetched to host).
"""
import statistics
import sys
import time

import numpy as np

import nxpy as nx
from nxpy.defn import jit, value_and_grad

RNG = np.random.default_rng(0)


def mlp_step():
    def step(w1, w2, x, y):
        def loss(w1, w2):
            return nx.mean((nx.dot(nx.tanh(nx.dot(x, w1)), w2) - y) ** 2)
        val, (g1, g2) = value_and_grad(loss, argnums=(0, 1))(w1, w2)
        return val, w1 - 0.01 * g1, w2 - 0.01 * g2
    f32 = np.float32
    return step, [RNG.standard_normal(s).astype(f32) for s in
                  ((256, 256), (256, 10), (128, 256), (128, 10))]


def matmul():
    return (lambda a, b: nx.dot(a, b)), [RNG.standard_normal((1000, 1000)).astype(np.float32)
                                         for _ in range(2)]


def conv():
    return (lambda x, k: nx.conv(x, k, padding="same")), [
        RNG.standard_normal((8, 16, 64, 64)).astype(np.float32),
        RNG.standard_normal((32, 16, 3, 3)).astype(np.float32)]


def chain():
    def f(x):
        for i in range(50):  # 200 elementwise ops
            x = nx.tanh(x * 1.01 + 0.1) - 0.001 * x
        return x
    return f, [RNG.standard_normal((512, 512)).astype(np.float32)]


CASES = {"MLP training step (128x256x10)": mlp_step, "matmul 1000x1000 f32": matmul,
         "conv 8x16x64x64 * 32x16x3x3": conv, "200-op elementwise chain 512x512": chain}


def measure(make, compiler, reps):
    fn, arrays = make()
    args = [nx.tensor(a) for a in arrays]
    g = jit(lambda *xs: fn(*xs), compiler=compiler)
    t = time.perf_counter()
    out = g(*args)
    nx.block_until_ready(out)
    first = time.perf_counter() - t
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = g(*args)
        leaves = out if isinstance(out, tuple) else (out,)
        [x.to_numpy() for x in leaves]
        times.append(time.perf_counter() - t)
    return first, statistics.median(times)


def main(reps=10):
    for c in ("exla", "iree"):  # start the XLA client and IREE's device outside the timings
        jit(lambda x: x + 1, compiler=c)(nx.tensor(1.0)).to_numpy()
    print("| case | EXLA first | IREE first | ratio | EXLA steady | IREE steady | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, make in CASES.items():
        e1, es = measure(make, "exla", reps)
        i1, is_ = measure(make, "iree", reps)
        print(f"| {name} | {e1 * 1e3:.0f} ms | {i1 * 1e3:.0f} ms | {i1 / e1:.1f}x | "
              f"{es * 1e3:.2f} ms | {is_ * 1e3:.2f} ms | {is_ / es:.1f}x |", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
