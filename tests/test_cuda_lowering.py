"""Lowering for a GPU on a machine without one: ``to_mlir(..., platform="cuda")``.

No GPU is needed (nothing here compiles for one). For every op family (elementwise,
reductions, indexing, sorting, windows, conv, FFT/complex, linear algebra, random,
while/cond, host callbacks, the gradient of a small model, a sharded program) the CUDA
module must name no CPU-only custom-call target (``lapack_*``,
``xla_ffi_python_cpu_callback``: only the GPU targets of
``nxpy.compilers.exla.lower_linalg.TARGETS`` and the GPU host callback), and XLA's
StableHLO → HLO translation (platform-independent, run here through jaxlib) must accept
it. The linear-algebra custom calls are compared, call by call, with what ``jax.export``
prints for ``platforms=["cuda"]`` (and ``["rocm"]``) with the running jax, after both
modules are translated to HLO: target, result shapes and layouts, operand layouts,
aliasing, API version, ``backend_config`` and the batch dims (and the
``triangular-solve`` attributes). The default platform still emits the LAPACK calls
(``tests/test_ops_linalg.py`` checks their values), and a ``tpu`` module (no solver
targets: the portable compositions lowered in place) runs on the CPU with LAPACK's
results.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import nxpy as nx
from nxpy import linalg as L
from nxpy import nn, pjrt
from nxpy import random as R
from nxpy.compilers.exla import ExlaCompiler, to_mlir
from nxpy.compilers.exla.lower_linalg import GPU_PREFIX, TARGETS
from nxpy.compilers.exla.lowering import lowers
from nxpy.defn import grad, runtime_call

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp
from jax import lax
from jax._src.lib import xla_client

T = nx.template

#: jaxlib's GPU host-callback target (nxpy.pjrt's table)
GPU_CALLBACK = "xla_ffi_python_gpu_callback"


def _gpu_targets(platform) -> set:
    """Every custom-call target nxpy may emit on a GPU platform."""
    out = {GPU_CALLBACK}
    for by_platform in TARGETS.values():
        for target in by_platform[platform].values():
            if not target.startswith(("stablehlo.", "nxpy.")):
                out.add(target)
    return out


def targets_of(text: str) -> list:
    """The custom-call targets a module names, in order."""
    return re.findall(r'call_target_name = "([^"]+)"', text) + \
        re.findall(r"stablehlo\.custom_call @([\w.]+)", text)


def to_hlo(text: str) -> str:
    """XLA's translation of a StableHLO module to HLO text (what every PJRT client,
    CUDA's included, compiles; it needs no device)."""
    comp = xla_client._xla.mlir.mlir_module_to_xla_computation(
        str(text), use_tuple_args=False, return_tuple=False)
    return comp.as_hlo_text()


def _split_attrs(s: str) -> dict:
    """``, a=1, b={x, y}`` → ``{"a": "1", "b": "{x, y}"}`` (top-level commas only)."""
    parts, cur, depth, quoted = [], "", 0, False
    for ch in s:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "{([":
            depth += 1
        elif not quoted and ch in "})]":
            depth -= 1
        elif not quoted and depth == 0 and ch == ",":
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    return dict(p.strip().split("=", 1) for p in parts if "=" in p)


_KEYS = ("custom_call_target", "operand_layout_constraints", "output_to_operand_aliasing",
         "api_version", "backend_config", "left_side", "lower", "transpose_a",
         "unit_diagonal")


def solver_calls(hlo: str) -> list:
    """The custom calls and triangular solves of an HLO module, each as the fields that
    define the call (result shapes with layouts, target, layouts, aliasing, API version,
    backend_config, batch dims), in program order."""
    calls = []
    for line in hlo.splitlines():
        m = re.search(r"=\s*(.+?)\s+(custom-call|triangular-solve)\([^)]*\)(.*)$", line)
        if m is None:
            continue
        attrs = _split_attrs(m.group(3))
        call = {"kind": m.group(2), "shape": m.group(1)}
        call.update({k: attrs[k] for k in _KEYS if k in attrs})
        nb = re.search(r'num_batch_dims="(\d+)"', attrs.get("frontend_attributes", ""))
        call["num_batch_dims"] = nb and nb.group(1)
        calls.append(call)
    return calls


def jax_module(f, args, platform: str) -> str:
    with jax.enable_x64(True):
        specs = [jax.ShapeDtypeStruct(a.shape, np.dtype(a.type.dtype)) for a in args]
        return jax.export.export(jax.jit(f), platforms=[platform])(*specs).mlir_module()


# ----------------------------------------------------------------------------------------
# Linear algebra: the solver calls, as JAX emits them for CUDA and ROCm
# ----------------------------------------------------------------------------------------
def _linalg_cases():
    cases = []
    for t in ("f32", "f64", "c64", "c128"):
        cases += [
            (f"cholesky-{t}", L.cholesky, jnp.linalg.cholesky, [T((3, 3), t)]),
            (f"cholesky-batched-{t}", L.cholesky, jnp.linalg.cholesky, [T((2, 3, 3), t)]),
            (f"trsm-{t}", lambda a, b: L.triangular_solve(a, b),
             lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True),
             [T((3, 3), t), T((3, 2), t)]),
            (f"trsm-right-upper-transposed-{t}",
             lambda a, b: L.triangular_solve(a, b, left_side=False, lower=False,
                                             transform_a="transpose"),
             lambda a, b: lax.linalg.triangular_solve(a, b, left_side=False, lower=False,
                                                      transpose_a=True),
             [T((2, 3, 3), t), T((2, 4, 3), t)]),
            (f"lu-{t}", L.lu, lax.linalg.lu, [T((2, 4, 4), t)]),
            (f"solve-{t}", L.solve, jnp.linalg.solve, [T((2, 4, 4), t), T((2, 4, 2), t)]),
            (f"solve-vector-{t}", L.solve, jnp.linalg.solve, [T((4, 4), t), T((4,), t)]),
            (f"qr-{t}", L.qr, jnp.linalg.qr, [T((2, 5, 3), t)]),
            (f"qr-complete-{t}", lambda x: L.qr(x, mode="complete"),
             lambda x: jnp.linalg.qr(x, mode="complete"), [T((5, 3), t)]),
            (f"qr-wide-{t}", L.qr, jnp.linalg.qr, [T((3, 5), t)]),
            (f"eigh-{t}", L.eigh, jnp.linalg.eigh, [T((2, 4, 4), t)]),
        ]
    for t in ("f32", "f64"):  # nxpy's svd is real only (as Nx's)
        full = (L.svd, jnp.linalg.svd)
        reduced = (lambda x: L.svd(x, full_matrices=False),
                   lambda x: jnp.linalg.svd(x, full_matrices=False))
        cases += [
            (f"svd-{t}", *full, [T((2, 5, 3), t)]),
            (f"svd-wide-reduced-{t}", *reduced, [T((3, 5), t)]),
            (f"svd-econ-{t}", *reduced, [T((40, 36), t)]),  # gesvdj's economy mode
            (f"svd-tall-gesvd-{t}", *full, [T((1030, 4), t)]),  # over 1024: gesvd
            (f"svd-wide-gesvd-{t}", *reduced, [T((2, 4, 1030), t)]),  # gesvd, transposed
        ]
    return cases


LINALG = _linalg_cases()


@pytest.mark.parametrize("platform", ["cuda", "rocm"])
@pytest.mark.parametrize("case", LINALG, ids=lambda c: c[0])
def test_linalg_calls_are_jaxs(case, platform):
    _, f, jf, args = case
    text = to_mlir(f, *args, platform=platform)
    assert "lapack_" not in text and set(targets_of(text)) <= _gpu_targets(platform)
    # as multisets: HLO text prints called computations (JAX's solve) before the entry
    ours = sorted(map(repr, solver_calls(to_hlo(text))))
    theirs = sorted(map(repr, solver_calls(to_hlo(jax_module(jf, args, platform)))))
    assert ours == theirs, f"nxpy:\n{ours}\nJAX {jax.__version__}:\n{theirs}"
    assert ours  # every op calls a solver (or XLA's triangular solve)


def test_the_table_names_what_jax_names():
    """TARGETS on the GPUs holds exactly the targets JAX's linalg emits there."""
    jax_names = {p: set() for p in GPU_PREFIX}
    for platform in GPU_PREFIX:
        for _, _, jf, args in LINALG:
            if str(args[0].type) in ("f32", "c64"):
                jax_names[platform] |= set(targets_of(jax_module(jf, args, platform)))
        assert jax_names[platform] == _gpu_targets(platform) - {GPU_CALLBACK}, platform


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_half_precision_linalg_computes_in_f32_on_cuda(t):
    text = to_mlir(lambda a, b: (L.cholesky(a), L.solve(a, b), *L.eigh(a), *L.svd(a)),
                   T((4, 4), t), T((4, 2), t), platform="cuda")
    assert "lapack_" not in text and set(targets_of(text)) <= _gpu_targets("cuda")
    for call in solver_calls(to_hlo(text)):
        if "pivots" not in call.get("custom_call_target", ""):
            assert call["shape"].lstrip("(").startswith("f32["), call


def test_empty_matrices_need_no_solver():
    text = to_mlir(lambda a: (L.cholesky(a), *L.qr(a), *L.eigh(a)), T((0, 0), "f32"),
                   platform="cuda")
    assert targets_of(text) == []


def test_a_sharded_batch_calls_the_solver_per_device():
    """to_mlir with a mesh, for CUDA: the batch-sharded cholesky calls cuSOLVER inside the
    manual region, and the module (Shardy) translates."""
    mesh = nx.Mesh("mesh", (2,))
    x = nx.tensor(np.stack([np.eye(3, dtype=np.float32)] * 4))
    shards = [[x[0:2]], [x[2:4]]]
    text = to_mlir(L.cholesky, shards, mesh=mesh, input_shardings=[{0: [0]}],
                   platform="cuda")
    assert "sdy.manual_computation" in text and targets_of(text) == ["cusolver_potrf_ffi"]
    to_hlo(text)
    cpu = to_mlir(L.cholesky, shards, mesh=mesh, input_shardings=[{0: [0]}])
    assert targets_of(cpu) == ["lapack_spotrf_ffi"]


# ----------------------------------------------------------------------------------------
# Every op family: no CPU-only target, and XLA translates the module
# ----------------------------------------------------------------------------------------
def _mlp_loss(w1, b1, w2, x, y):
    h = nn.relu(nx.dot(x, w1) + b1)
    logits = nx.dot(h, w2)
    return -nx.mean(nx.sum(nn.log_softmax(logits) * y, axes=[1]))


def _while(x):
    return nx.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, s[1] * 2.0), (0, x))[1]


def _cond(x):
    return nx.cond(nx.sum(x) > 0, lambda: x * 2, lambda: x - 1)


def _random(seed):
    k = R.key(seed)
    k1, k2 = R.split(k)
    return (R.normal(k1, shape=(3, 4)), R.uniform(k2, shape=(5,), type="f64"),
            R.randint(k, 0, 10, shape=(4,)), R.shuffle(k2, nx.iota((6,))))


FAMILIES = [
    ("elementwise", lambda x, i: (nx.sin(x) * 2 + nx.erf_inv(x / 10), nx.pow(i, 3),
                                  nx.bitcast(nx.as_type(x, "c64"), "u64"), nx.clip(x, -1, 1)),
     [T((3, 4), "f32"), T((3, 4), "s32")]),
    ("reductions", lambda x: (nx.sum(x, axes=[1]), nx.argmax(x, axis=0), nx.logsumexp(x),
                              nx.reduce(x, 0.0, lambda a, b: a + b * b)),
     [T((3, 4), "f32")]),
    ("indexing", lambda x, i: (nx.take(x, i, axis=1),
                               nx.gather(x, nx.stack([i[:2], i[:2]], axis=1)),
                               nx.indexed_add(x, nx.stack([i[:2], i[:2]], axis=1),
                                              nx.tensor([1.0, 2.0])),
                               nx.put_slice(x, [1, i[0]], nx.full((1, 2), 1.0))),
     [T((3, 4), "f32"), T((3,), "s32")]),
    ("sorting", lambda x, d: (nx.sort(x, axis=1), nx.argsort(x, axis=1, direction="desc"),
                              nx.sort(d), nx.top_k(x, k=2),
                              nx.cumulative_sum(nx.reshape(x, (12, 1)) * nx.full((12, 20), 1.0),
                                                axis=1)),
     [T((3, 4), "f32"), T((5,), "f64")]),
    ("windows", lambda x: (nx.window_sum(x, (2, 2)), nx.window_max(x, (2, 2), padding="same"),
                           nx.window_scatter_max(x, nx.full((2, 3), 1.0), 0.0, (2, 2)),
                           nx.window_reduce(x, 1.0, (1, 2), lambda a, b: a * b)),
     [T((3, 4), "f32")]),
    ("conv", lambda x, k: nx.conv(x, k, padding="same", feature_group_size=1),
     [T((1, 2, 8, 8), "f32"), T((3, 2, 3, 3), "f32")]),
    ("fft-complex", lambda x, z: (nx.fft(x), nx.rfft(x), nx.irfft(z), nx.fft2(z),
                                  nx.conjugate(z), nx.real(z) + nx.imag(z)),
     [T((4, 8), "f32"), T((4, 8), "c64")]),
    ("linalg-compositions", lambda a, b: (L.determinant(a), L.invert(a), L.pinv(a),
                                          L.least_squares(a, b[:, 0])),
     [T((4, 4), "f32"), T((4, 2), "f32")]),
    ("random", _random, [T((), "u32")]),
    ("while-cond", lambda x: (_while(x), _cond(x)), [T((3,), "f32")]),
    ("grad-mlp", grad(_mlp_loss, argnums=[0, 1, 2]),
     [T((4, 8), "f32"), T((8,), "f32"), T((8, 3), "f32"), T((5, 4), "f32"), T((5, 3), "f32")]),
    ("grad-linalg", grad(lambda a: nx.sum(L.cholesky(a)) + nx.sum(L.eigh(a)[0])
                         + nx.sum(L.solve(a, a))),
     [T((3, 3), "f64")]),
    ("host-callbacks", lambda x: nx.hook(x * 2, lambda v: None) + runtime_call(
        x, [x], lambda xs: [xs[0]]), [T((3,), "f32")]),
]


@pytest.mark.parametrize("case", FAMILIES, ids=lambda c: c[0])
def test_every_family_lowers_for_cuda(case):
    _, f, args = case
    text = to_mlir(f, *args, platform="cuda")
    named = targets_of(text)
    assert "lapack_" not in text and "xla_ffi_python_cpu_callback" not in text
    assert set(named) <= _gpu_targets("cuda"), named
    to_hlo(text)  # XLA's translation accepts it
    if case[0] == "host-callbacks":
        assert named == [GPU_CALLBACK] * 2


# ----------------------------------------------------------------------------------------
# The platform parameter: the default, its check, and platforms without solver targets
# ----------------------------------------------------------------------------------------
def test_the_default_platform_is_the_clients_and_emits_lapack():
    def f(a, b):
        return (L.cholesky(a), L.solve(a, b), *L.qr(a), *L.eigh(a), *L.svd(a))
    args = [T((3, 3), "f32"), T((3, 2), "f32")]
    text = to_mlir(f, *args)
    assert pjrt.requested_platform() == "cpu" and text == to_mlir(f, *args, platform="cpu")
    assert set(targets_of(text)) == {"lapack_spotrf_ffi", "lapack_sgetrf_ffi",
                                     "lapack_strsm_ffi", "lapack_sgeqrf_ffi",
                                     "lapack_sorgqr_ffi", "lapack_ssyevd_ffi",
                                     "lapack_sgesdd_ffi"}
    with pytest.raises(ValueError, match="platform must be one of cpu, cuda, rocm, tpu"):
        to_mlir(f, *args, platform="metal")


def test_platforms_without_solver_targets_get_the_portable_compositions():
    assert all(lowers(op, "cuda") and lowers(op, "cpu") and not lowers(op, "tpu")
               for op in TARGETS)
    assert ExlaCompiler().supports("cholesky")  # on this (cpu) client
    a = np.array([[4.0, 2.0, 0.5], [2.0, 5.0, 1.0], [0.5, 1.0, 3.0]])
    b = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    def f(a, b):
        return (L.cholesky(a), L.solve(a, b), L.eigh(a)[0])
    text = to_mlir(f, T((3, 3), "f64"), T((3, 2), "f64"), platform="tpu")
    assert targets_of(text) == [] and "stablehlo.while" in text
    # the module runs on the CPU (nothing in it is TPU's): the portable results are LAPACK's
    dev = pjrt.default_device()
    run = pjrt.executor(pjrt.compile(text, [dev]),
                        [((3, 3), np.float64), ((3, 2), np.float64), ((3,), np.float64)], dev)
    got = run([nx.tensor(v, backend="exla").data for v in (a, b)])
    want = (np.linalg.cholesky(a), np.linalg.solve(a, b), np.linalg.eigvalsh(a))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-10)
