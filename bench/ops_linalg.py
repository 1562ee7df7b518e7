"""The linear-algebra family's cases: cholesky and solve on 512x512 (f32 and f64) and
eigh on 256x256 f32.

* ``<op>_<n>_<type>``: ``jit(nxpy.linalg.<op>, compiler="exla")`` against
  ``jax.jit(jnp.linalg.<op>)``, both on device arrays, waiting for the result: the same
  LAPACK custom calls (``potrf``; ``getrf`` + two ``trsm``; ``syevd``), so the ratio is
  the cost of the programs around them (JAX symmetrizes cholesky's input; nxpy reads the
  lower triangle, as LAPACK and Nx). f64 cases run JAX under ``jax.enable_x64``.
* ``<op>_<n>_<type>_evaluator``: the Evaluator (NumPy-backend kernels) against
  ``numpy.linalg`` on the same array -- in these rows the JAX column is NumPy.
"""
from __future__ import annotations

import numpy as np

from .core import Pair, case

CALL_TIMING = dict(rounds=7, round_seconds=0.3)


def _inputs(n, dt):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n))
    spd = (a @ a.T + n * np.eye(n)).astype(dt)
    b = rng.standard_normal((n, 1)).astype(dt)
    return spd, b


def _exla_case(op, n, dt):
    def make(cfg):
        import jax
        import jax.numpy as jnp
        import nxpy as nx
        from nxpy import linalg as L
        from nxpy.defn import jit
        spd, b = _inputs(n, dt)
        nfun = {"cholesky": L.cholesky, "solve": L.solve, "eigh": L.eigh}[op]
        jfun = {"cholesky": jnp.linalg.cholesky, "solve": jnp.linalg.solve,
                "eigh": jnp.linalg.eigh}[op]
        args = (spd, b) if op == "solve" else (spd,)
        def x64():
            return jax.enable_x64(bool(dt == np.float64))
        with x64():
            nf = jit(nfun, compiler="exla")
            xs = [nx.tensor(a, backend="exla") for a in args]
            jf = jax.jit(jfun)
            js = [jax.device_put(a, jax.devices()[0]) for a in args]
            got = nf(*xs)
            want = jf(*js)
            g0 = (got[0] if isinstance(got, (list, tuple)) else got).to_numpy()
            w0 = np.asarray(want[0] if isinstance(want, tuple) else want)
            tol = 1e-3 if dt == np.float32 else 1e-8
            np.testing.assert_allclose(g0, w0, rtol=tol, atol=tol)

        def nxpy_side():
            nx.block_until_ready(nf(*xs))

        def jax_side():
            with x64():
                jax.block_until_ready(jf(*js))

        return Pair(nxpy=nxpy_side, jax=jax_side,
                    info=f"jit(nxpy.linalg.{op}, compiler='exla') vs jax.jit(jnp.linalg.{op}), "
                         f"device arrays, block_until_ready")
    return make


def _evaluator_case(op, n, dt):
    def make(cfg):
        import nxpy as nx
        from nxpy import linalg as L
        from nxpy.defn import jit
        spd, b = _inputs(n, dt)
        nfun = {"cholesky": L.cholesky, "solve": L.solve, "eigh": L.eigh}[op]
        npf = {"cholesky": np.linalg.cholesky, "solve": np.linalg.solve,
               "eigh": np.linalg.eigh}[op]
        args = (spd, b) if op == "solve" else (spd,)
        nf = jit(nfun, compiler="evaluator")
        xs = [nx.tensor(a) for a in args]
        nf(*xs)
        return Pair(nxpy=lambda: nf(*xs), jax=lambda: npf(*args),
                    info=f"jit(nxpy.linalg.{op}, compiler='evaluator') vs numpy.linalg.{op}")
    return make


for _op, _n, _dt in [("cholesky", 512, np.float32), ("cholesky", 512, np.float64),
                     ("solve", 512, np.float32), ("solve", 512, np.float64),
                     ("eigh", 256, np.float32)]:
    _t = "f32" if _dt == np.float32 else "f64"
    case(f"{_op}_{_n}_{_t}", f"linalg.{_op}: {_n}x{_n} {_t} on EXLA", aim=1.1,
         **CALL_TIMING)(_exla_case(_op, _n, _dt))
    case(f"{_op}_{_n}_{_t}_evaluator", f"linalg.{_op}: {_n}x{_n} {_t}, Evaluator vs NumPy",
         **CALL_TIMING)(_evaluator_case(_op, _n, _dt))
