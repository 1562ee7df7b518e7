"""nxpy.nn.dot_product_attention against jax.nn.dot_product_attention: every option (bias,
mask, causal, sequence lengths, local windows, the residual, scale), grouped heads
(multi-head, grouped, multi-query), rank-3 inputs, on the NumPy backend, the Evaluator and
EXLA, in f32, f64 (JAX under x64), bf16 and f16; gradients against jax.grad; vmap against
jax.vmap; argument errors.

Tolerances: f32 and f64 results are compared relative to the largest output (the
softmax runs in f32 for every type, as JAX's, so f64 is f32-accurate); bf16/f16 to two
ulps of the largest output, since XLA may keep f32 between ops JAX rounds."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import nxpy as nx
from nxpy import nn
from nxpy.defn import grad, jit, vmap

from helpers import COMPILERS, EAGER_JIT, close, covering, run_path

import jax  # after nxpy started XLA (conftest), so both share the host devices
import jax.numpy as jnp

RTOL = {"f32": 2e-6, "f64": 2e-6, "bf16": 2 * 2.0 ** -7, "f16": 2 * 2.0 ** -10}
#: JAX's result: its dtype, every value within RTOL of its type (default: f32's) times the
#: largest |output|
_close = partial(close, rtol=0, atol=RTOL["f32"], dtypes=True, scaled=1e-30)
B, T, S, H = 2, 5, 7, 8


def _dt(t):
    return nx.types.parse(t).dtype


def _data(seed, t="f32", n=4, k=2, rank=4):
    r = np.random.default_rng(seed)
    q, key, v = (r.standard_normal(shape) for shape in ((B, T, n, H), (B, S, k, H),
                                                          (B, S, k, H)))
    if rank == 3:
        q, key, v = q[0], key[0], v[0]
    return [a.astype(_dt(t)) for a in (q, key, v)]


def _options(seed, n=4):
    r = np.random.default_rng(seed)
    return {
        "bias": r.standard_normal((1, n, T, S)).astype(np.float32),
        "bias_b": r.standard_normal((B, 1, T, S)).astype(np.float32),
        "mask": r.random((B, 1, T, S)) < 0.8,
        "mask_n": r.random((1, n, T, S)) < 0.8,
        "q_len": np.array([3, 5], np.int32),
        "kv_len": np.array([7, 4], np.int32),
    }


OPTS = _options(1)
CASES = {
    "plain": {},
    "causal": {"is_causal": True},
    "bias": {"bias": OPTS["bias"]},
    "bias_per_batch": {"bias": OPTS["bias_b"], "scale": 0.3},
    "mask": {"mask": OPTS["mask"]},
    "mask_per_head": {"mask": OPTS["mask_n"], "is_causal": True},
    "lengths": {"query_seq_lengths": OPTS["q_len"], "key_value_seq_lengths": OPTS["kv_len"]},
    "window": {"local_window_size": (2, 1)},
    "window_int": {"local_window_size": 1, "is_causal": True},
    "residual": {"return_residual": True, "is_causal": True, "bias": OPTS["bias"]},
}


def _nx_options(kw):
    return {k: nx.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}


def _ref(args, kw, x64=False):
    with jax.enable_x64(x64):
        out = jax.nn.dot_product_attention(*[jnp.asarray(a) for a in args], **kw)
        return jax.tree_util.tree_map(np.asarray, out)


# each option on one path, rotating (every path in full under `make exhaustive`)
@pytest.mark.parametrize("case,path", covering(sorted(CASES), EAGER_JIT))
def test_options_f32(case, path):
    kw = CASES[case]
    args = _data(0)
    got = run_path(lambda q, k, v: nn.dot_product_attention(q, k, v, **_nx_options(kw)), args,
                   path)
    want = _ref(args, kw)
    for i, (g, w) in enumerate(zip(jax.tree_util.tree_leaves(got),
                                   jax.tree_util.tree_leaves(want))):
        _close(g, w, what=f"{case} on {path}, result {i}")


# each grouping in one rank, both ranks met (the product: make exhaustive)
@pytest.mark.parametrize("heads,rank", covering([(4, 4), (4, 2), (4, 1), (6, 3)], [3, 4]))
def test_grouped_heads_and_rank(heads, rank):
    n, k = heads
    args = _data(2, n=n, k=k, rank=rank)
    got = run_path(lambda q, kk, v: nn.dot_product_attention(q, kk, v, is_causal=True), args,
                   "exla")
    _close(got, _ref(args, {"is_causal": True}), what=f"heads {heads}, rank {rank}")


@pytest.mark.parametrize("t,path", covering(["f64", "bf16", "f16"], EAGER_JIT))
def test_types(t, path):
    kw = {"is_causal": True, "bias": OPTS["bias"].astype(_dt(t)), "mask": OPTS["mask"]}
    args = _data(3, t)
    got = run_path(lambda q, k, v: nn.dot_product_attention(q, k, v, **_nx_options(kw)), args,
                   path)
    _close(got, _ref(args, kw, x64=t == "f64"), atol=RTOL[t], what=f"{t} on {path}")


@pytest.mark.parametrize("case,path", covering(
    ["plain", "bias", "mask_per_head", "lengths", "window"], COMPILERS))
def test_grad(case, path):
    kw = {k: v for k, v in CASES[case].items()}
    args = _data(4)
    r = np.random.default_rng(5)
    cot = r.standard_normal((B, T, 4, H)).astype(np.float32)
    with_bias = "bias" in kw
    bias = kw.pop("bias", None)

    def loss(q, k, v, *b):
        out = nn.dot_product_attention(q, k, v, *b, **_nx_options(kw))
        return nx.sum(out * nx.tensor(cot))

    def jloss(q, k, v, *b):
        return jnp.sum(jax.nn.dot_product_attention(q, k, v, *b, **kw) * cot)

    inputs = args + ([bias] if with_bias else [])
    argnums = tuple(range(len(inputs)))
    got = jit(grad(loss, argnums=argnums), compiler=path)(*[nx.tensor(a) for a in inputs])
    want = jax.grad(jloss, argnums=argnums)(*[jnp.asarray(a) for a in inputs])
    for i, (g, w) in enumerate(zip(got, want)):
        _close(g.to_numpy(), np.asarray(w), what=f"{case} on {path}, d/d argument {i}")


def test_vmap_over_a_batch_of_rank_3_inputs():
    args = _data(6)                   # vmap over B of (T, N, H) attention
    f = jit(vmap(lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True)),
            compiler="exla")
    got = f(*[nx.tensor(a) for a in args]).to_numpy()
    want = jax.vmap(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=True))(
        *[jnp.asarray(a) for a in args])
    _close(got, np.asarray(want), what="vmap")


def test_residual_holds_no_gradient():
    args = _data(7)

    def loss(q):
        _, lse = nn.dot_product_attention(q, nx.tensor(args[1]), nx.tensor(args[2]),
                                          return_residual=True)
        return nx.sum(lse)
    g = jit(grad(loss), compiler="exla")(nx.tensor(args[0])).to_numpy()
    assert not g.any()


def test_empty_sequence():
    q, k, v = (np.zeros((B, 0, 4, H), np.float32), np.ones((B, S, 2, H), np.float32),
               np.ones((B, S, 2, H), np.float32))
    out = nn.dot_product_attention(nx.tensor(q), nx.tensor(k), nx.tensor(v))
    assert out.shape == (B, 0, 4, H)


@pytest.mark.parametrize("args, kw, err, match", [
    (((2, 5, 4, 8), (2, 7, 3, 8), (2, 7, 3, 8)), {}, ValueError, "multiple of the key/value"),
    (((2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 2, 4)), {}, ValueError, "value to have shape"),
    (((2, 5, 4, 6), (2, 7, 2, 8), (2, 7, 2, 8)), {}, ValueError, "query to have shape"),
    (((1, 2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 2, 8)), {}, ValueError, "rank at most 4"),
    (((2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 2, 8)), {"mask": np.ones((1, 1, 5, 7), np.float32)},
     TypeError, "mask to have type pred"),
    (((2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 2, 8)), {"implementation": "cudnn"}, ValueError,
     "cuDNN"),
    (((2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 2, 8)), {"local_window_size": (1, 2, 3)}, TypeError,
     "local_window_size"),
    (((2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 2, 8)),
     {"query_seq_lengths": np.array([1, 2, 3], np.int32)}, ValueError, "query_seq_lengths"),
    (((2, 5, 4, 8), (2, 7, 2, 8), (2, 7, 2, 8)), {"bias": np.ones((1, 3, 5, 7), np.float32)},
     ValueError, "heads dimension"),
])
def test_errors(args, kw, err, match):
    q, k, v = (nx.tensor(np.ones(s, np.float32)) for s in args)
    with pytest.raises(err, match=match):
        nn.dot_product_attention(q, k, v, **_nx_options(kw))


def test_integer_query_is_an_error():
    x = nx.tensor(np.ones((2, 5, 4, 8), np.int32))
    with pytest.raises(TypeError, match="float type"):
        nn.dot_product_attention(x, x, x)
