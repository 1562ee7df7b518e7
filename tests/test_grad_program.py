"""The gradient program XLA compiles, against JAX's (issue 31): ``value_and_grad`` of the
pieces of a small GPT (attention through ``nn.dot_product_attention`` and written with
``nx.dot``/``nx.matmul``, layer norm, softmax, softmax cross-entropy), each next to its
``jax.numpy`` twin. Structural checks read the optimized HLO of both executables (nxpy's
from ``pjrt.hlo_text`` of its compiled module, JAX's from ``.compile().as_text()``, the
same XLA): the dots XLA leaves stand-alone (a dot outside a fusion is one XLA:CPU runs
outside its fused matmul kernels, looped over the batch dims), no ``reduce-window`` (XLA
splits a long reduction into one), and no more top-level fusions (kernels) than JAX's.
Every case also checks the values and gradients against ``jax.value_and_grad``, and the
dot rule on the Evaluator and the NumPy backend.

The attention written with ``nx.dot`` is compared with the ``jnp.einsum`` twin a JAX user
writes and with ``lax.dot_general`` at nxpy's own dimension numbers: the gradient of
``dot`` transposes its left operand to contract its minor dims (``_contract`` in
``nxpy/defn/transforms/grad_rules.py``), so nxpy leaves no more stand-alone dots than either.
"""
from __future__ import annotations

import collections
import re

import numpy as np
import pytest

import nxpy as nx
from nxpy import nn, pjrt
from nxpy.compilers.exla import to_mlir
from nxpy.defn import grad, jit, value_and_grad

from helpers import EAGER_JIT, on

import jax  # after nxpy (nxpy's conftest starts XLA)
import jax.numpy as jnp

B, T, H, D, V = 4, 16, 4, 8, 64  # batch, positions, heads, head width, vocabulary
W = H * D
SCALE = 1.0 / float(np.sqrt(D))


def entry_ops(hlo: str) -> collections.Counter:
    """Op names of the top-level computation (ENTRY) of an HLO module's text: what the
    executable runs as separate kernels."""
    entry = hlo[hlo.index("\nENTRY"):]
    entry = entry[:entry.index("\n}")]
    return collections.Counter(re.findall(r"^\s*(?:ROOT )?%\S+ = \S+ ([a-z][\w-]*)\(", entry,
                                          re.M))


def all_ops(hlo: str) -> collections.Counter:
    """Op names of every instruction of the module (fusion bodies too)."""
    return collections.Counter(re.findall(r"^\s*(?:ROOT )?%\S+ = \S+ ([a-z][\w-]*)\(", hlo,
                                          re.M))


def programs(nf, jf, args):
    """Optimized HLO of ``nf`` (nxpy, EXLA) and ``jf`` (JAX) on ``args`` (NumPy arrays),
    after checking their results agree."""
    temps = [nx.template(a.shape, str(a.dtype).replace("float", "f").replace("int", "s"))
             for a in args]
    nx_hlo = pjrt.hlo_text(pjrt.compile(to_mlir(nf, *temps), [0]))
    compiled = jax.jit(jf).lower(*args).compile()
    jax_hlo = compiled.as_text()
    got = jax.tree_util.tree_leaves(jit(nf, compiler="exla")(*[nx.tensor(a) for a in args]))
    want = jax.tree_util.tree_leaves(compiled(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.to_numpy(), np.asarray(w), rtol=2e-5, atol=2e-6)
    return nx_hlo, jax_hlo


def assert_as_lean(nx_hlo, jax_hlo, *, fusions=True):
    """nxpy's program leaves no more stand-alone dots (nor kernels) than JAX's, runs the
    same dots, and has no reduce-window."""
    n, j = entry_ops(nx_hlo), entry_ops(jax_hlo)
    assert n["dot"] <= j["dot"], (n, j)
    assert all_ops(nx_hlo)["dot"] == all_ops(jax_hlo)["dot"]
    assert all_ops(nx_hlo)["reduce-window"] == 0
    if fusions:
        assert n["fusion"] <= j["fusion"], (n, j)


_rng = np.random.default_rng(0)


def _f32(*shape):
    return _rng.normal(size=shape).astype(np.float32)


Q, K, VAL, OUT = (_f32(B, T, H, D) for _ in range(4))


# ----------------------------------------------------------------------------------------
# Attention
# ----------------------------------------------------------------------------------------
def nx_attention_dot(q, k, v):
    """Causal attention with Nx's dot: heads as batch dims of (B, T, H, D) operands."""
    s = nx.dot(q, [3], [0, 2], k, [3], [0, 2]) * SCALE            # (B, H, T, S)
    s = nx.select(nx.greater_equal(nx.iota((T, T), axis=0), nx.iota((T, T), axis=1)), s, -1e9)
    o = nx.dot(nn.softmax(s, axis=-1), [3], [0, 1], v, [1], [0, 2])  # (B, H, T, D)
    return nx.transpose(o, [0, 2, 1, 3])


def nx_attention_matmul(q, k, v):
    """Causal attention as a GPT tutorial writes it: (B, H, T, D) heads and matmul."""
    q, k, v = (nx.transpose(a, [0, 2, 1, 3]) for a in (q, k, v))
    s = nx.matmul(q, nx.transpose(k, [0, 1, 3, 2])) * SCALE
    s = nx.select(nx.greater_equal(nx.iota((T, T), axis=0), nx.iota((T, T), axis=1)), s, -1e9)
    return nx.transpose(nx.matmul(nn.softmax(s, axis=-1), v), [0, 2, 1, 3])


def _causal(s):
    return jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -1e9)


def jax_attention_einsum(q, k, v):
    s = _causal(jnp.einsum("bthd,bshd->bhts", q, k) * SCALE)
    return jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(s, axis=-1), v)


def jax_attention_dot_general(q, k, v):
    dg = jax.lax.dot_general
    s = _causal(dg(q, k, (((3,), (3,)), ((0, 2), (0, 2)))) * SCALE)
    o = dg(jax.nn.softmax(s, axis=-1), v, (((3,), (1,)), ((0, 1), (0, 2))))
    return jnp.transpose(o, (0, 2, 1, 3))


def jax_attention_matmul(q, k, v):
    q, k, v = (jnp.transpose(a, (0, 2, 1, 3)) for a in (q, k, v))
    s = _causal((q @ jnp.swapaxes(k, -1, -2)) * SCALE)
    return jnp.transpose(jax.nn.softmax(s, axis=-1) @ v, (0, 2, 1, 3))


def _attention_programs(nf, jf):
    def n(q, k, v, w):
        return value_and_grad(lambda q, k, v: nx.sum(nf(q, k, v) * w), argnums=(0, 1, 2))(
            q, k, v)

    def j(q, k, v, w):
        return jax.value_and_grad(lambda q, k, v: jnp.sum(jf(q, k, v) * w),
                                  argnums=(0, 1, 2))(q, k, v)
    return programs(n, j, [Q, K, VAL, OUT])


def test_dot_product_attention():
    def nf(q, k, v):
        return nn.dot_product_attention(q, k, v, is_causal=True)

    def jf(q, k, v):
        return jax.nn.dot_product_attention(q, k, v, is_causal=True)
    # the same dots and no more kernels or copies: with the group dim anywhere but first
    # in the logits (B, K, T, G, S), XLA copied the probabilities' cotangent to move the
    # unit G (27 kernels, 16 copies against JAX's 26 and 15), and with the probabilities
    # on the left of the value dot it read the value in a second layout
    nx_hlo, jax_hlo = _attention_programs(nf, jf)
    assert_as_lean(nx_hlo, jax_hlo)
    assert all_ops(nx_hlo)["copy"] <= all_ops(jax_hlo)["copy"]


@pytest.mark.parametrize("twin", [jax_attention_einsum, jax_attention_dot_general],
                         ids=["einsum", "dot_general"])
def test_attention_with_dot(twin):
    # before the dot rule made its left operands minor-contracting: 2 stand-alone batched
    # dots per attention, against JAX's 1 (einsum) and 2 (the same dot_general)
    nx_hlo, jax_hlo = _attention_programs(nx_attention_dot, twin)
    assert_as_lean(nx_hlo, jax_hlo, fusions=False)
    assert entry_ops(nx_hlo)["dot"] <= 1


def test_attention_with_matmul():
    assert_as_lean(*_attention_programs(nx_attention_matmul, jax_attention_matmul),
                   fusions=False)


# ----------------------------------------------------------------------------------------
# Layer norm, softmax, cross-entropy
# ----------------------------------------------------------------------------------------
def test_layer_norm():
    x, g, b, w = _f32(B, T, W), _f32(W), _f32(W), _f32(B, T, W)

    def ln(m, x, g, b):
        mu = m.mean(x, **({"axes": [-1], "keep_axes": True} if m is nx else
                          {"axis": -1, "keepdims": True}))
        d = x - mu
        var = m.mean(d * d, **({"axes": [-1], "keep_axes": True} if m is nx else
                               {"axis": -1, "keepdims": True}))
        return d * (nx.rsqrt if m is nx else jax.lax.rsqrt)(var + 1e-5) * g + b

    def n(x, g, b, w):
        return value_and_grad(lambda x, g, b: nx.sum(ln(nx, x, g, b) * w), argnums=(0, 1, 2))(
            x, g, b)

    def j(x, g, b, w):
        return jax.value_and_grad(lambda x, g, b: jnp.sum(ln(jnp, x, g, b) * w),
                                  argnums=(0, 1, 2))(x, g, b)
    assert_as_lean(*programs(n, j, [x, g, b, w]))


def test_softmax():
    # JAX's custom derivative: y * g - y * sum(y * g), no quotient rule through the sum
    x, w = _f32(B, H, T, T), _f32(B, H, T, T)
    nx_hlo, jax_hlo = programs(
        lambda x, w: value_and_grad(lambda x: nx.sum(nn.softmax(x) * w))(x),
        lambda x, w: jax.value_and_grad(lambda x: jnp.sum(jax.nn.softmax(x) * w))(x),
        [x, w])
    assert_as_lean(nx_hlo, jax_hlo)
    assert all_ops(nx_hlo)["divide"] <= all_ops(jax_hlo)["divide"]


def test_softmax_cross_entropy():
    logits, labels = _f32(B, T, V), _rng.integers(0, V, (B, T)).astype(np.int32)

    def n(x, y):
        return value_and_grad(lambda x: -nx.mean(nx.sum(nn.log_softmax(x) * nn.one_hot(y, V),
                                                        axes=[-1])))(x)

    def j(x, y):
        return jax.value_and_grad(lambda x: -jnp.mean(jnp.sum(
            jax.nn.log_softmax(x) * jax.nn.one_hot(y, V), axis=-1)))(x)
    assert_as_lean(*programs(n, j, [logits, labels]))


def test_softmax_grad_matches_jax_with_where():
    x = _f32(3, 5)
    where = np.array([[True, True, False, True, False]] * 3)
    g = jit(lambda x: grad(lambda x: nx.sum(nn.softmax(x, where=where) * x))(x),
            compiler="exla")(nx.tensor(x))
    want = jax.jit(jax.grad(lambda x: jnp.sum(jax.nn.softmax(x, where=where) * x)))(x)
    np.testing.assert_allclose(g.to_numpy(), np.asarray(want), rtol=1e-6, atol=1e-7)


# ----------------------------------------------------------------------------------------
# The dot rule on every path
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", EAGER_JIT)
def test_dot_rule_transposed_operands(path):
    # contractions over middle dims on both sides, batch dims not leading
    a, b = _f32(2, 3, 4, 5), _f32(4, 2, 3, 6)

    def f(m, a, b):
        if m is nx:
            return nx.dot(a, [1], [0, 2], b, [2], [1, 0])
        return jax.lax.dot_general(a, b, (((1,), (2,)), ((0, 2), (1, 0))))

    w = _f32(2, 4, 5, 6)

    def n(a, b):
        return grad(lambda a, b: nx.sum(f(nx, a, b) * w), argnums=(0, 1))(a, b)
    want = jax.grad(lambda a, b: jnp.sum(f(jnp, a, b) * w), argnums=(0, 1))(a, b)
    got = on(path, n)(nx.tensor(a), nx.tensor(b))
    for g, w_ in zip(got, want):
        np.testing.assert_allclose(g.to_numpy(), np.asarray(w_), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------------------
# On a mesh
# ----------------------------------------------------------------------------------------
def collectives(hlo: str) -> collections.Counter:
    """The collectives of an HLO module's text (tuple-shaped ones and async starts too)."""
    return collections.Counter(re.findall(
        r" (all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all)(?:-start)?\(",
        hlo))


def test_picked_cross_entropy_on_a_mesh():
    # the gradient of take_along_axis (the GPT's loss picks each position's label) with
    # the batch over "data" of a 2x2 mesh: was a scatter of flattened indices, which hid
    # the batch dim from XLA's partitioner: it re-laid the indices out
    # (collective-permute) and all-reduced the whole cotangent over "model"
    from jax.sharding import Mesh, NamedSharding as JNS, PartitionSpec as JP
    from nxpy import P
    from nxpy.defn.core import PROGRAMS
    logits, labels = _f32(B, T, V), _rng.integers(0, V, (B, T)).astype(np.int32)
    m = nx.Mesh("picked", (2, 2), axis_names=("data", "model"))
    jm = Mesh(np.array([pjrt.devices()[i] for i in m.devices]).reshape(2, 2),
              ("data", "model"))

    def n(x, y):
        return value_and_grad(lambda x: -nx.mean(nx.take_along_axis(
            nn.log_softmax(x, axis=-1), nx.reshape(y, y.shape + (1,)), axis=2)))(x)

    def j(x, y):
        return jax.value_and_grad(lambda x: -jnp.mean(jnp.take_along_axis(
            jax.nn.log_softmax(x, axis=-1), y[..., None], axis=2)))(x)
    f = jit(n, compiler="exla")
    loss, g = f(nx.device_put(logits, nx.NamedSharding(m, P("data", None, None)),
                              backend="exla"),
                nx.device_put(labels, nx.NamedSharding(m, P("data", None)), backend="exla"))
    ((run, _),) = PROGRAMS.of(f.fun)._values.values()
    nx_hlo = pjrt.compile(run.module, m.devices, spmd=True).get_hlo_text()
    jx = jax.device_put(logits, JNS(jm, JP("data", None, None)))
    jy = jax.device_put(labels, JNS(jm, JP("data", None)))
    compiled = jax.jit(j).lower(jx, jy).compile()
    jloss, jg = compiled(jx, jy)
    np.testing.assert_allclose(float(loss.to_numpy()), float(jloss), rtol=1e-6)
    np.testing.assert_allclose(g.to_numpy(), np.asarray(jg), rtol=1e-5, atol=1e-8)
    assert collectives(nx_hlo) == collectives(compiled.as_text()) == {"all-reduce": 1}


def test_picked_grad_clamps_as_gather():
    # the select form of take_along_axis's gradient sends an out-of-range index's
    # cotangent where the clamped index read, as the gather does
    x, w = _f32(3, 4, 5), _f32(3, 1, 5)
    idx = np.array([[[-2, 0, 3, 4, 9]], [[1, 1, 1, 7, -1]], [[3, 2, 0, 4, 5]]], np.int32)

    def n(x, i):
        return grad(lambda x: nx.sum(nx.take_along_axis(x, i, axis=1) * w))(x)
    want = jax.grad(lambda x: jnp.sum(jnp.take_along_axis(
        x, jnp.clip(idx, 0, 3), axis=1) * w))(x)
    for got in (n(nx.tensor(x), nx.tensor(idx)),
                jit(n, compiler="exla")(nx.tensor(x), nx.tensor(idx))):
        np.testing.assert_allclose(got.to_numpy(), np.asarray(want), rtol=1e-6)


# ----------------------------------------------------------------------------------------
# einsum: the dot jnp.einsum emits
# ----------------------------------------------------------------------------------------
def dot_generals(module: str) -> list:
    """``(operand and result types, lhs batch, rhs batch, lhs contracting, rhs
    contracting)`` of each dot_general of a StableHLO module's text (generic or pretty)."""
    out = []
    for line in module.splitlines():
        if "dot_general" not in line:
            continue
        types = re.search(r": (\(tensor<[^)]*\) -> tensor<[^>]*>)", line).group(1)
        if "dot_dimension_numbers" in line:  # nxpy's generic form; empty lists left out
            lb, rb, lc, rc = (re.search(rf"{k} = \[([\d, ]*)\]", line) for k in (
                "lhs_batching_dimensions", "rhs_batching_dimensions",
                "lhs_contracting_dimensions", "rhs_contracting_dimensions"))
            lb, rb, lc, rc = (m.group(1) if m else "" for m in (lb, rb, lc, rc))
        else:  # JAX's pretty form
            b = re.search(r"batching_dims = \[([\d, ]*)\] x \[([\d, ]*)\]", line)
            c = re.search(r"contracting_dims = \[([\d, ]*)\] x \[([\d, ]*)\]", line)
            lb, rb = b.groups() if b else ("", "")
            lc, rc = c.groups()
        out.append((types,) + tuple(tuple(int(i) for i in s.split(",") if i.strip())
                                    for s in (lb, rb, lc, rc)))
    return out


@pytest.mark.parametrize("spec,shapes", [
    ("BNTS,BSNH->BTNH", [(2, 3, 4, 5), (2, 5, 3, 6)]),    # attention's value product
    ("bthd,bshd->bhts", [(2, 4, 3, 6), (2, 5, 3, 6)]),    # its logits
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,kj->ki", [(3, 4), (5, 4)]),
    ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
    ("abc,cba->b", [(2, 3, 4), (4, 3, 2)]),
])
def test_einsum_emits_jaxs_dot(spec, shapes):
    # nxpy.numpy.einsum (nx.einsum) puts the operands, batch and contracting dims of its
    # dot where jnp.einsum does: the probabilities-by-value product was dot(probs, value)
    # against JAX's dot(value, probs), which has XLA lay the value out differently
    import nxpy.numpy as xnp
    args = [_f32(*s) for s in shapes]
    temps = [nx.template(a.shape, "f32") for a in args]
    mine = dot_generals(to_mlir(lambda *xs: xnp.einsum(spec, *xs), *temps))
    theirs = dot_generals(jax.jit(lambda *xs: jnp.einsum(spec, *xs)).lower(*args).as_text())
    assert mine == theirs
    got = jit(lambda *xs: xnp.einsum(spec, *xs), compiler="exla")(*map(nx.tensor, args))
    np.testing.assert_allclose(got.to_numpy(), np.einsum(spec, *args), rtol=1e-5, atol=1e-5)
