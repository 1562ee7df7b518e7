"""``make gpu-check``: nxpy on a CUDA GPU, checked and timed in a few minutes.

Run it on a machine with an NVIDIA GPU and jax's CUDA plugin installed (``pip install
'jax[cuda13]'``, or the ``jax-cuda12-plugin``); it needs nothing else beyond nxpy's own
dependencies. It has two parts:

1. **Lowering for CUDA** (any machine, no GPU needed): ``tests/test_cuda_lowering.py``,
   every op family lowered for ``platform="cuda"`` with no CPU-only custom call and the
   GPU solver targets JAX uses.
2. **On the GPU** (skipped, with a message, where there is none), with
   ``NXPY_PLATFORM=cuda``: the checks of :data:`CHECKS` (the differential fuzzer's
   programs, every op family against NumPy and JAX; ``grad`` and ``vmap`` against JAX;
   linear algebra by reconstruction; random bits equal to ``jax.random``'s; donation and
   host callbacks; a 1-GPU ``shard_jit``; the collectives on a mesh of the local GPUs when
   there are two or more), ``examples/demo.py``, and :data:`BENCHMARKS` against
   ``jax.jit`` on the same GPU, as ratios, and ``bench/serving.py`` (requests/s of a
   served MLP against per-request calls).

The last line is one summary. ``--platform cpu`` runs part 2 on the host CPU devices
instead (how the script itself is tested; ``--small`` shrinks the sizes).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# sizes: (full run on a GPU, --small)
SIZES = {"fuzz": (150, 12), "matmul": (4096, 128), "mlp": ((1024, 1024), (64, 32)),
         "conv": ((32, 64, 56), (2, 8, 12)), "attention": ((8, 8, 512, 64), (2, 2, 16, 8))}


def _size(name, small):
    return SIZES[name][1 if small else 0]


def gpus() -> tuple[int, str]:
    """How many CUDA devices jax sees here (in a fresh process, so this one's platform
    stays unchosen), and why none when none."""
    code = "import jax; d = jax.devices('cuda'); print(len(d), d[0].device_kind)"
    try:
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=180)
    except subprocess.TimeoutExpired:
        return 0, "asking jax for CUDA devices timed out"
    if p.returncode == 0:
        n, kind = p.stdout.strip().split(" ", 1)
        return int(n), kind
    last = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return 0, last


def lowering_part() -> tuple[bool, str]:
    """Part 1: the CUDA lowering tests, in a fresh process on the CPU."""
    test = os.path.join(ROOT, "tests", "test_cuda_lowering.py")
    env = dict(os.environ, NXPY_PLATFORM="cpu")
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "no:xdist", test], capture_output=True, text=True, env=env,
                       cwd=ROOT)
    last = (p.stdout.strip().splitlines() or ["no output"])[-1]
    if p.returncode != 0:
        print(p.stdout[-4000:], p.stderr[-2000:])
    return p.returncode == 0, last


# ----------------------------------------------------------------------------------------
# Part 2: the checks (each returns a short detail, or raises)
# ----------------------------------------------------------------------------------------
def _close(got, want, rtol, atol, what):
    import numpy as np
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want)) if got.shape == want.shape else "shape"
        raise AssertionError(f"{what}: got {got.shape} differs from {want.shape} (max "
                             f"abs error {err})")


def check_fuzz(env):
    from nxpy.testing import fuzz
    n = _size("fuzz", env["small"])
    # sharded programs use 2x2 and 2x4 meshes
    every = 10 if env["devices"] >= 8 else 0
    with contextlib.redirect_stdout(io.StringIO()):
        found = fuzz.run_many(1, n, sharded_every=every, vmap_every=5)
    if found:
        raise AssertionError(f"{len(found)} of {n} programs mismatch; first: {found[0]}")
    return f"{n} random programs, every way nxpy runs them, against NumPy and JAX" + \
        ("" if every else " (no sharded ones: fewer than 8 devices)")


def check_grad_vmap(env):
    import numpy as np
    import nxpy as nx
    jax, jnp = env["jax"], env["jnp"]
    rng = np.random.default_rng(0)
    w = rng.normal(size=(16, 8)).astype(np.float32)
    x = rng.normal(size=(32, 16)).astype(np.float32)

    def loss(w, x, np_=nx):
        return np_.sum(np_.tanh(np_.dot(x, w)) ** 2) if np_ is nx else \
            jnp.sum(jnp.tanh(x @ w) ** 2)
    g = nx.defn.jit(nx.defn.grad(loss), compiler="exla")(nx.tensor(w), nx.tensor(x))
    _close(g, jax.jit(jax.grad(lambda w, x: loss(w, x, jnp)))(w, x), 1e-4, 1e-4, "grad")
    per = nx.defn.jit(nx.defn.vmap(lambda r: nx.dot(r, w)), compiler="exla")(nx.tensor(x))
    _close(per, jax.vmap(lambda r: r @ w)(x), 1e-4, 1e-4, "vmap")
    return "grad and vmap of a tanh layer equal jax.grad's and jax.vmap's"


def check_linalg(env):
    import numpy as np
    import nxpy as nx
    rng = np.random.default_rng(1)
    done = []
    for t, tol in (("f32", 2e-3), ("f64", 1e-9)):
        a = rng.normal(size=(3, 6, 6)).astype(t.replace("f", "float"))
        spd = a @ np.swapaxes(a, -1, -2) + 6 * np.eye(6)
        def jit(f):
            return nx.defn.jit(f, compiler="exla")
        low = np.asarray(jit(nx.linalg.cholesky)(nx.tensor(spd)))
        _close(low @ np.swapaxes(low, -1, -2), spd, tol, tol, f"cholesky {t}")
        q, r = (np.asarray(v) for v in jit(nx.linalg.qr)(nx.tensor(a)))
        _close(q @ r, a, tol, tol, f"qr {t}")
        w, v = (np.asarray(u) for u in jit(nx.linalg.eigh)(nx.tensor(spd)))
        _close(v @ (w[..., None] * np.swapaxes(v, -1, -2)), spd, tol * 10, tol * 10, f"eigh {t}")
        u, s, vt = (np.asarray(u) for u in jit(nx.linalg.svd)(nx.tensor(a)))
        _close(u @ (s[..., None] * vt), a, tol * 10, tol * 10, f"svd {t}")
        p, lo, up = (np.asarray(u) for u in jit(nx.linalg.lu)(nx.tensor(a)))
        _close(p @ lo @ up, a, tol, tol, f"lu {t}")
        b = rng.normal(size=(3, 6, 2)).astype(a.dtype)
        x = np.asarray(jit(nx.linalg.solve)(nx.tensor(a), nx.tensor(b)))
        _close(a @ x, b, tol * 10, tol * 10, f"solve {t}")
        lt = np.tril(spd)
        y = np.asarray(jit(nx.linalg.triangular_solve)(nx.tensor(lt), nx.tensor(b)))
        _close(lt @ y, b, tol, tol, f"triangular_solve {t}")
        done.append(t)
    return "cholesky, qr, eigh, svd, lu, solve, triangular_solve reconstruct (" + \
        ", ".join(done) + ")"


def check_random(env):
    import numpy as np
    import nxpy as nx
    jax = env["jax"]
    def jit(f):
        return nx.defn.jit(f, compiler="exla")
    for seed in (0, 42):
        k = jax.random.key(seed)
        ours = jit(lambda s: nx.random.uniform_split(nx.random.key(s), shape=(4, 1000)))(seed)
        theirs = jax.random.uniform(k, (4, 1000))
        if not np.array_equal(np.asarray(ours), np.asarray(theirs)):
            raise AssertionError(f"uniform bits differ from jax.random's (seed {seed})")
        ours = jit(lambda s: nx.random.normal_split(nx.random.key(s), shape=(1000,)))(seed)
        _close(ours, jax.random.normal(k, (1000,)), 1e-6, 1e-6, f"normal (seed {seed})")
    # bit for bit on CPU (docs/random.md); on a GPU JAX unrolls threefry everywhere, and
    # XLA's fusions decide the last bits of these: reported, not a failure
    samplers = {
        "gamma": (lambda k: nx.random.gamma_split(k, 2.5, shape=(1000,)),
                  lambda k: jax.random.gamma(k, 2.5, (1000,))),
        "poisson": (lambda k: nx.random.poisson_split(k, 3.0, shape=(1000,)),
                    lambda k: jax.random.poisson(k, 3.0, (1000,))),
        "maxwell": (lambda k: nx.random.maxwell_split(k, shape=(1000,)),
                    lambda k: jax.random.maxwell(k, (1000,))),
        "wald": (lambda k: nx.random.wald_split(k, 1.5, shape=(1000,)),
                 lambda k: jax.random.wald(k, 1.5, (1000,))),
    }
    equal, differ = [], []
    for name, (ours_f, theirs_f) in samplers.items():
        ours = np.asarray(jit(lambda s, f=ours_f: f(nx.random.key(s)))(7))
        theirs = np.asarray(jax.jit(theirs_f)(jax.random.key(7)))
        n = int(np.sum(ours != theirs))
        (equal if n == 0 else differ).append(name if n == 0 else f"{name} ({n}/1000)")
    return (f"uniform equals jax.random's bit for bit; normal to 1e-6; bit-equal samplers: "
            f"{', '.join(equal) or 'none'}; differing: {', '.join(differ) or 'none'}")


def check_runtime(env):
    import numpy as np
    import nxpy as nx
    seen = []
    f = nx.defn.jit(lambda x: nx.defn.hook(x * 2, lambda v: seen.append(np.asarray(v))) + 1,
                    compiler="exla")
    out = f(nx.tensor([1.0, 2.0]))
    nx.block_until_ready(out)
    if not seen or seen[0].tolist() != [2.0, 4.0] or np.asarray(out).tolist() != [3.0, 5.0]:
        raise AssertionError(f"host callback saw {seen}, result {out}")
    step = nx.defn.jit(lambda p, g: p - 0.5 * g, compiler="exla", donate_argnums=0)
    p = nx.backend_transfer(nx.tensor(np.ones(1024, np.float32)), "exla")
    q = step(p, nx.tensor(np.ones(1024, np.float32)))
    if not np.allclose(np.asarray(q), 0.5):
        raise AssertionError("donated update is wrong")
    try:
        np.asarray(p)
    except Exception:  # the donated buffer is gone, as it must be
        pass
    else:
        raise AssertionError("a donated argument is still readable")
    return "host callback ran; a donated buffer was consumed"


def check_sharded(env):
    import numpy as np
    import nxpy as nx
    from nxpy.defn import all_gather, psum, shard_jit, shard_map
    n = env["devices"]
    x = np.arange(8 * n * 4, dtype=np.float32).reshape(8 * n, 4)
    one = nx.Mesh("one", (1,))
    y = shard_jit(lambda a: nx.sin(a) * 2, one, input_shardings=[{0: [0]}],
                  compiler="exla")([[nx.tensor(x)]])
    _close(y[0], np.sin(x) * 2, 1e-5, 1e-5, "1-device shard_jit")
    if n < 2:
        return "shard_jit on one device (one device: no collectives to check)"
    mesh = nx.Mesh("gpus", (n,), axis_names=("d",))
    f = shard_map(lambda a: (psum(a, "d"), all_gather(a, all_gather_dim=0, axes=["d"])),
                  mesh, in_specs=("d", None), out_specs=(("d", None), (None, None)),
                  compiler="exla")
    s, g = f(nx.tensor(x))
    blocks = np.split(x, n)
    _close(s, np.concatenate([sum(blocks)] * n), 1e-5, 1e-5, "psum")
    _close(g, x, 0, 0, "all_gather")
    return f"shard_jit on one device; psum and all_gather across {n} devices"


CHECKS = {"fuzz": check_fuzz, "grad_vmap": check_grad_vmap, "linalg": check_linalg,
          "random": check_random, "runtime": check_runtime, "sharded": check_sharded}


def run_demo(platform: str, devices: int) -> tuple[bool, str]:
    """``examples/demo.py`` (its sharded part needs 4 devices: on fewer GPUs it runs on
    the host CPU, and says so)."""
    where = platform if devices >= 4 else "cpu"
    p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "demo.py")],
                       capture_output=True, text=True, cwd=ROOT,
                       env=dict(os.environ, NXPY_PLATFORM=where), timeout=600)
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:])
    note = "" if where == platform else f" (on cpu: {devices} {platform} device(s) < 4)"
    return p.returncode == 0, f"examples/demo.py{note}"


# ----------------------------------------------------------------------------------------
# Part 2: the benchmarks (nxpy's EXLA against jax.jit on the same device)
# ----------------------------------------------------------------------------------------
def benchmarks(env):
    """``[(name, title, nxpy callable, jax callable)]``, built for this run's sizes."""
    import numpy as np
    import nxpy as nx
    jax, jnp = env["jax"], env["jnp"]
    small = env["small"]
    dev = jax.devices()[0]
    rng = np.random.default_rng(0)

    def both(a):  # the same values on the device, for each side
        return nx.backend_transfer(nx.tensor(a), "exla"), jax.device_put(a, dev)

    def timed(f):
        return lambda *a: nx.block_until_ready(f(*a))

    out = []
    n = _size("matmul", small)
    for t in ("f32", "bf16"):
        x = rng.normal(size=(n, n)).astype(np.float32)
        nxx, jx = both(x)
        nxx, jx = nx.as_type(nxx, t), jx.astype(t.replace("bf16", "bfloat16").replace(
            "f32", "float32"))
        nf = nx.defn.jit(lambda a: nx.dot(a, a), compiler="exla")
        jf = jax.jit(lambda a: a @ a)
        out.append((f"matmul_{t}", f"{n}x{n} @ {n}x{n} {t}",
                    lambda nf=nf, a=nxx: nx.block_until_ready(nf(a)),
                    lambda jf=jf, a=jx: jf(a).block_until_ready()))

    batch, hidden = _size("mlp", small)
    xs = rng.normal(size=(batch, hidden)).astype(np.float32)
    ws = [(rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
          for _ in range(3)]

    def nx_loss(w, x):
        h = x
        for wi in w:
            h = nx.tanh(nx.dot(h, wi))
        return nx.mean(h ** 2)

    def jax_loss(w, x):
        h = x
        for wi in w:
            h = jnp.tanh(h @ wi)
        return jnp.mean(h ** 2)
    nstep = nx.defn.jit(lambda w, x: [wi - 0.1 * g for wi, g in
                                      zip(w, nx.defn.grad(nx_loss)(w, x))], compiler="exla")
    jstep = jax.jit(lambda w, x: [wi - 0.1 * g for wi, g in zip(w, jax.grad(jax_loss)(w, x))])
    nw, jw = zip(*(both(w) for w in ws))
    nxs, jxs = both(xs)
    out.append(("mlp_step", f"3-layer tanh MLP SGD step, batch {batch}, width {hidden}",
                lambda: nx.block_until_ready(nstep(list(nw), nxs)),
                lambda: jax.block_until_ready(jstep(list(jw), jxs))))

    b, c, hw = _size("conv", small)
    img = rng.normal(size=(b, c, hw, hw)).astype(np.float32)
    ker = (rng.normal(size=(c, c, 3, 3)) / (3 * np.sqrt(c))).astype(np.float32)
    nconv = nx.defn.jit(lambda i, k: nx.conv(i, k, padding="same"), compiler="exla")
    jconv = jax.jit(lambda i, k: jax.lax.conv_general_dilated(i, k, (1, 1), "SAME"))
    (ni, ji), (nk, jk) = both(img), both(ker)
    out.append(("conv", f"3x3 conv, {b}x{c}x{hw}x{hw}, {c} -> {c} channels",
                lambda: nx.block_until_ready(nconv(ni, nk)),
                lambda: jconv(ji, jk).block_until_ready()))

    bb, h, s, d = _size("attention", small)
    q = rng.normal(size=(bb, h, s, d)).astype(np.float32)

    def nx_attn(q):
        w = nx.dot(q, [3], [0, 1], q, [3], [0, 1]) / np.sqrt(d)
        w = nx.exp(w - nx.reduce_max(w, axes=[-1], keep_axes=True))
        w = w / nx.sum(w, axes=[-1], keep_axes=True)
        return nx.dot(w, [3], [0, 1], q, [2], [0, 1])

    def jax_attn(q):
        return jax.nn.softmax(q @ jnp.swapaxes(q, -1, -2) / np.sqrt(d), axis=-1) @ q
    nattn, jattn = nx.defn.jit(nx_attn, compiler="exla"), jax.jit(jax_attn)
    nq, jq = both(q)
    _close(nattn(nq), jattn(jq), 1e-3, 1e-3, "attention")
    out.append(("attention", f"softmax(q q^T / sqrt d) q, {bb}x{h}x{s}x{d}",
                lambda: nx.block_until_ready(nattn(nq)),
                lambda: jattn(jq).block_until_ready()))
    return out


def run_benchmarks(env) -> list[tuple[str, float]]:
    from bench import core
    cfg = core.Config(rounds=3 if env["small"] else 5,
                      round_seconds=0.02 if env["small"] else 0.3,
                      warmup_seconds=0.01 if env["small"] else 0.2)
    cases = [core.Case(name, title, lambda c, a=a, b=b: core.Pair(nxpy=a, jax=b))
             for name, title, a, b in benchmarks(env)]
    results = core.run_cases(cases, cfg, env["devices"])
    print(core.format_table(results))
    return [(r.case.name, r.ratio) for r in results]


def run_serving(env) -> float:
    """``bench/serving.py`` on this device (issue 30's aim: ``batch_size`` 64 serving
    ≥ 10x the requests/s of per-request calls, which a 2-core CPU cannot show: its
    ceiling is below 10x); prints its table, returns that ratio."""
    from bench import serving
    small = env["small"]
    clients, requests, rounds = (8, 3, 1) if small else (64, 20, 3)
    load = os.getloadavg()
    rows = serving.run(clients, requests, rounds=rounds)
    print(serving.table(rows, clients, requests, rounds, load), flush=True)
    full = next(r for r in rows if r["what"] == "Serving, batch_size=64")
    return full["rps"] / rows[0]["rps"]


# ----------------------------------------------------------------------------------------
def gpu_part(platform: str, small: bool) -> tuple[list, list]:
    """Part 2 in this process: ``NXPY_PLATFORM=platform``, then every check, the demo and
    the benchmarks. Returns ``[(name, ok, detail)]`` and ``[(benchmark, ratio)]``."""
    os.environ["NXPY_PLATFORM"] = platform
    import nxpy as nx  # noqa: F401 - nxpy starts XLA first (its platform and devices)
    from nxpy import pjrt
    pjrt.devices()
    import jax
    import jax.numpy as jnp
    env = {"jax": jax, "jnp": jnp, "small": small, "devices": pjrt.device_count()}
    print(f"platform {pjrt.platform()}: {pjrt.device_count()} x {pjrt.device_kind()}, "
          f"jax {jax.__version__}, jaxlib {pjrt.jaxlib_version()}", flush=True)
    results = []
    for name, check in CHECKS.items():
        t0 = time.perf_counter()
        try:
            detail, ok = check(env), True
        except Exception as e:  # report every check, not just the first failure
            detail, ok = f"{type(e).__name__}: {e}", False
            traceback.print_exc()
        results.append((name, ok, detail))
        print(f"  {'ok  ' if ok else 'FAIL'} {name:10} {time.perf_counter() - t0:6.1f} s  "
              f"{detail}", flush=True)
    ok, detail = run_demo(platform, env["devices"])
    results.append(("demo", ok, detail))
    print(f"  {'ok  ' if ok else 'FAIL'} demo       {detail}", flush=True)
    try:
        ratios = run_benchmarks(env)
    except Exception as e:
        traceback.print_exc()
        results.append(("bench", False, f"{type(e).__name__}: {e}"))
        ratios = []
    try:
        serving = run_serving(env)
    except Exception as e:
        traceback.print_exc()
        results.append(("serving", False, f"{type(e).__name__}: {e}"))
    else:
        results.append(("serving", True, f"batch_size=64 serves {serving:.1f}x the "
                                         f"requests/s of per-request calls"))
    return results, ratios


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.gpu_check",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--platform", default="cuda", choices=["cuda", "rocm", "cpu"],
                    help="where part 2 runs (cpu: the host devices, to test this script)")
    ap.add_argument("--small", action="store_true", help="small sizes, short timings")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    print("part 1: lowering for CUDA (no GPU needed)", flush=True)
    low_ok, low = lowering_part()
    print(f"  {'ok  ' if low_ok else 'FAIL'} lowering   {low}", flush=True)
    n, kind = (8, "host CPU") if a.platform == "cpu" else gpus()
    if n == 0:
        print(f"part 2: skipped: no {a.platform.upper()} GPU here ({kind}). Run make "
              f"gpu-check on a machine with a GPU and jax's plugin for it")
        print(f"gpu-check: lowering {'ok' if low_ok else 'FAILED'}; no GPU, GPU part "
              f"skipped ({time.perf_counter() - t0:.0f} s)")
        return 0 if low_ok else 1
    print(f"part 2: on {a.platform} ({n} x {kind})", flush=True)
    results, ratios = gpu_part(a.platform, a.small)
    passed = sum(ok for _, ok, _ in results) + low_ok
    total = len(results) + 1
    import jax
    summary = ", ".join(f"{k} {r:.2f}x" for k, r in ratios)
    serving = next((d for k, ok, d in results if k == "serving" and ok), "not run")
    print(f"gpu-check: {a.platform} ({n} x {kind}), jax {jax.__version__}: {passed}/{total} "
          f"checks passed; nxpy/JAX time: {summary or 'no benchmarks'}; serving: "
          f"{serving} ({time.perf_counter() - t0:.0f} s)")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
