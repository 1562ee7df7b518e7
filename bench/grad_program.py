"""The gradient program of a small GPT (issue 31): ``value_and_grad`` of its loss, nxpy
against the same model in ``jax.numpy``, both compiled programs called the same way.

The model is the issue's small size: width 32, 2 pre-LayerNorm blocks, 4 heads, context
16, batch 8, a 64-token vocabulary; causal attention written with ``nx.dot`` (heads as
batch dims, Nx's form) and, in the JAX twin, with ``jnp.einsum`` (the form a JAX user
writes); a GELU MLP 4x wide, a final LayerNorm, the output tied to the token embedding,
softmax cross-entropy over one-hot labels.

``gpt_grad`` times the compiled programs alone: both StableHLO modules (nxpy's
``to_mlir``, JAX's ``.lower().as_text()``) compiled by the same PJRT client and called
on the same device buffers through the same raw ``execute_sharded`` path, so the ratio is
the programs' (no dispatch path in it). Its note gives each program's stand-alone dots
and kernels (top-level fusions). ``python -m bench.grad_program`` prints one row.
"""
from __future__ import annotations

import collections
import re

import numpy as np

from .core import Pair, case

V, D, L, NH, T, B = 64, 32, 2, 4, 16, 8
HD = D // NH
AIM = 1.02


def _params(seed=0):
    rng = np.random.default_rng(seed)

    def f(*s):
        return (rng.normal(size=s) * 0.02).astype(np.float32)
    ones, zeros = np.ones(D, np.float32), np.zeros(D, np.float32)
    p = {"wte": f(V, D), "wpe": f(T, D), "lnf_g": ones, "lnf_b": zeros}
    for i in range(L):
        p.update({f"l{i}_ln1_g": ones, f"l{i}_ln1_b": zeros, f"l{i}_wqkv": f(D, 3 * D),
                  f"l{i}_bqkv": np.zeros(3 * D, np.float32), f"l{i}_wo": f(D, D),
                  f"l{i}_bo": zeros, f"l{i}_ln2_g": ones, f"l{i}_ln2_b": zeros,
                  f"l{i}_w1": f(D, 4 * D), f"l{i}_b1": np.zeros(4 * D, np.float32),
                  f"l{i}_w2": f(4 * D, D), f"l{i}_b2": zeros})
    p = dict(sorted(p.items()))  # one leaf order for both (JAX sorts dict keys)
    tokens = rng.integers(0, V, (B, T)).astype(np.int32)
    labels = rng.integers(0, V, (B, T)).astype(np.int32)
    return p, tokens, labels


def nx_loss(p, tokens, labels):
    import nxpy as nx
    from nxpy import nn

    def ln(x, g, b):
        mu = nx.mean(x, axes=[-1], keep_axes=True)
        d = x - mu
        return d * nx.rsqrt(nx.mean(d * d, axes=[-1], keep_axes=True) + 1e-5) * g + b

    def attention(q, k, v):
        s = nx.dot(q, [3], [0, 2], k, [3], [0, 2]) * float(1 / np.sqrt(HD))
        s = nx.select(nx.greater_equal(nx.iota((T, T), axis=0), nx.iota((T, T), axis=1)),
                      s, -1e9)
        o = nx.dot(nn.softmax(s, axis=-1), [3], [0, 1], v, [1], [0, 2])
        return nx.reshape(nx.transpose(o, [0, 2, 1, 3]), (B, T, D))

    x = nx.take(p["wte"], tokens, axis=0) + p["wpe"]
    for i in range(L):
        h = ln(x, p[f"l{i}_ln1_g"], p[f"l{i}_ln1_b"])
        qkv = nx.dot(h, p[f"l{i}_wqkv"]) + p[f"l{i}_bqkv"]
        q, k, v = (nx.reshape(qkv[:, :, j * D:(j + 1) * D], (B, T, NH, HD)) for j in range(3))
        x = x + nx.dot(attention(q, k, v), p[f"l{i}_wo"]) + p[f"l{i}_bo"]
        h = ln(x, p[f"l{i}_ln2_g"], p[f"l{i}_ln2_b"])
        h = nn.gelu(nx.dot(h, p[f"l{i}_w1"]) + p[f"l{i}_b1"])
        x = x + nx.dot(h, p[f"l{i}_w2"]) + p[f"l{i}_b2"]
    x = ln(x, p["lnf_g"], p["lnf_b"])
    logits = nx.dot(x, [2], p["wte"], [1])
    return -nx.mean(nx.sum(nn.log_softmax(logits) * nn.one_hot(labels, V), axes=[-1]))


def jax_loss(p, tokens, labels):
    import jax
    import jax.numpy as jnp

    def ln(x, g, b):
        mu = jnp.mean(x, axis=-1, keepdims=True)
        d = x - mu
        return d * jax.lax.rsqrt(jnp.mean(d * d, axis=-1, keepdims=True) + 1e-5) * g + b

    def attention(q, k, v):
        s = jnp.einsum("bthd,bshd->bhts", q, k) * float(1 / np.sqrt(HD))
        s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -1e9)
        return jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(s, axis=-1), v).reshape(B, T, D)

    x = jnp.take(p["wte"], tokens, axis=0) + p["wpe"]
    for i in range(L):
        h = ln(x, p[f"l{i}_ln1_g"], p[f"l{i}_ln1_b"])
        qkv = h @ p[f"l{i}_wqkv"] + p[f"l{i}_bqkv"]
        q, k, v = (qkv[:, :, j * D:(j + 1) * D].reshape(B, T, NH, HD) for j in range(3))
        x = x + attention(q, k, v) @ p[f"l{i}_wo"] + p[f"l{i}_bo"]
        h = ln(x, p[f"l{i}_ln2_g"], p[f"l{i}_ln2_b"])
        h = jax.nn.gelu(h @ p[f"l{i}_w1"] + p[f"l{i}_b1"])
        x = x + h @ p[f"l{i}_w2"] + p[f"l{i}_b2"]
    x = ln(x, p["lnf_g"], p["lnf_b"])
    logits = jnp.einsum("btd,vd->btv", x, p["wte"])
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(labels, V), axis=-1))


def _kernels(hlo: str) -> str:
    entry = hlo[hlo.index("\nENTRY"):]
    entry = entry[:entry.index("\n}")]
    ops = collections.Counter(re.findall(r"^\s*(?:ROOT )?%\S+ = \S+ ([a-z][\w-]*)\(", entry,
                                         re.M))
    return f"{ops['dot']} stand-alone dots, {ops['fusion']} fusions"


def programs():
    """``(run_nxpy, run_jax, note)``: both compiled value_and_grad programs, called on
    the same device buffers; their results checked equal."""
    import jax
    import nxpy as nx
    from nxpy import pjrt
    from nxpy.compilers.exla import to_mlir
    from nxpy.defn import value_and_grad

    p, tokens, labels = _params()
    templates = ({k: nx.template(v.shape, "f32") for k, v in p.items()},
                 nx.template(tokens.shape, "s32"), nx.template(labels.shape, "s32"))
    nx_text = to_mlir(lambda p, t, y: value_and_grad(lambda p: nx_loss(p, t, y))(p),
                      *templates)
    jax_text = jax.jit(lambda p, t, y: jax.value_and_grad(lambda p: jax_loss(p, t, y))(p)
                       ).lower(p, tokens, labels).as_text()
    nx_exe, jax_exe = pjrt.compile(nx_text, [0]), pjrt.compile(jax_text, [0])
    buffers = [pjrt.to_device(np.asarray(a), 0)
               for a in jax.tree_util.tree_leaves((p, tokens, labels))]

    def runner(exe):
        def run():
            outs = exe.execute_sharded(buffers).disassemble_into_single_device_arrays()
            for o in outs:
                o[0].block_until_ready()
            return outs
        return run

    run_nx, run_jax = runner(nx_exe), runner(jax_exe)
    for a, b in zip(run_nx(), run_jax()):
        np.testing.assert_allclose(np.asarray(a[0]), np.asarray(b[0]), rtol=1e-4, atol=1e-6)
    note = (f"value_and_grad of a GPT loss (width {D}, {L} layers, {NH} heads, context {T}, "
            f"batch {B}; attention with nx.dot vs jnp.einsum), the compiled programs "
            f"alone: same client, same buffers, raw execute_sharded. nxpy: "
            f"{_kernels(pjrt.hlo_text(nx_exe))}; JAX: {_kernels(pjrt.hlo_text(jax_exe))}")
    return run_nx, run_jax, note


@case("gpt_grad", f"compiled value_and_grad of a small GPT loss (w{D}, {L} layers)",
      aim=AIM, rounds=21, round_seconds=0.1)
def gpt_grad(cfg):
    run_nx, run_jax, note = programs()
    return Pair(nxpy=run_nx, jax=run_jax, info=note)


def main():
    import statistics
    import time
    from .core import start_xla
    start_xla()
    run_nx, run_jax, note = programs()
    for f in (run_nx, run_jax):
        f()
    times = ([], [])
    for r in range(41):
        for i in ((0, 1) if r % 2 else (1, 0)):
            f = (run_nx, run_jax)[i]
            t0 = time.perf_counter()
            for _ in range(10):
                f()
            times[i].append((time.perf_counter() - t0) / 10)
    med = [statistics.median(t) for t in times]
    low = [min(t) for t in times]
    print(f"gpt_grad: nxpy {med[0] * 1e6:.0f} us, JAX {med[1] * 1e6:.0f} us (medians of 41 "
          f"interleaved rounds): {med[0] / med[1]:.3f}x; min/min {low[0] / low[1]:.3f}x "
          f"(aim {AIM}x)\n  {note}")


if __name__ == "__main__":
    main()
