"""examples/gpt.py's training step against its JAX twin (examples/gpt_jax.py): the same
model, AdamW, parameters and batch, both jitted with the parameters and optimizer state
donated, results waited for.

* ``gpt_step``: the issue's small size (width 32, 2 layers, 4 heads, context 16, batch 8)
  on one device;
* ``gpt_step_mesh``: the same on a 2x2 mesh (batch over "data", heads and MLP over
  "model", ``with_sharding_constraint`` on the global view);
* ``gpt_step_default``: the example's default size (width 128, 4 layers, context 128,
  batch 16) on one device.

``python -m bench.gpt [--default]`` prints, in one run and side by side, the step time and
tokens/s of both on one device (plain and with each block checkpointed) and on the 2x2
mesh, the compile time of the step (nxpy: trace + lower + XLA compile of the first call;
JAX: ``lower`` + ``compile``) and its peak device memory per device (arguments + results
- donated + temporaries, from XLA's buffer assignment: nxpy's
``Compiled.memory_stats()``, JAX's ``memory_analysis()``), with the ratios nxpy / JAX.
"""
from __future__ import annotations

import dataclasses
import sys
import time

import numpy as np

from .core import Pair, Skip, case


_MODULES: list = []


def _modules():
    """examples/gpt.py and examples/gpt_jax.py as modules (loaded once: the examples are
    scripts, not a package)."""
    if not _MODULES:
        import importlib.util
        from pathlib import Path
        root = Path(__file__).resolve().parents[1] / "examples"
        for name in ("gpt", "gpt_jax"):                 # gpt first: it starts nxpy's XLA
            spec = importlib.util.spec_from_file_location(f"nxpy_example_{name}",
                                                          root / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            _MODULES.append(module)
    return tuple(_MODULES)


def small(gpt):
    return gpt.Config(layers=2, width=32, heads=4, context=16, batch=8, steps=1000, warmup=5)


class Side:
    """One side's step with its state carried between calls (the step donates it)."""

    def __init__(self, step, params, state, x, y, block):
        self.step, self.params, self.state, self.x, self.y = step, params, state, x, y
        self.block = block

    def __call__(self):
        self.params, self.state, loss = self.step(self.params, self.state, self.x, self.y)
        return self.block(loss)


def _peak(argument, output, alias, temp):
    """A compiled step's peak device memory: its arguments and results (less what the
    donated arguments' buffers hold in place) and its temporaries."""
    return argument + output - alias + temp


def setup(cfg, mesh_text=None):
    """``(nxpy_side, jax_side, compile_seconds, peak_bytes)``: both steps called once
    (compiled), ``compile_seconds`` and ``peak_bytes`` (per device, from XLA's buffer
    assignment) each ``(nxpy, jax)``."""
    import jax
    import nxpy as nx
    from nxpy import telemetry
    from nxpy.defn import compile as compile_ahead
    gpt, gpt_jax = _modules()
    mesh = gpt.parse_mesh(mesh_text)
    if mesh is not None and len(jax.devices()) < 4:
        raise Skip("needs 4 devices")
    train, _ = gpt.corpus()
    xb, yb = gpt.batch(train, cfg, 0)
    tr = gpt.Trainer(cfg, mesh=mesh)
    params, state = tr.start()
    np_params = gpt.tree_map(lambda p: np.asarray(p.to_numpy()), gpt.init_params(cfg))
    x, y = tr.place_batch(xb, yb)
    events = []
    detach = telemetry.attach(lambda e: events.append(e))
    try:
        params, state, loss = tr.step(params, state, x, y)
    finally:
        detach()
    nx_compile = sum(e.duration for e in events if e.name in ("trace", "lower", "compile"))
    jmesh = None if mesh is None else gpt_jax.jax_mesh(mesh)
    jstep, jparams, jstate, put = gpt_jax.place(cfg, np_params, jmesh)
    jx, jy = put(xb), put(yb)
    t0 = time.perf_counter()
    compiled = jstep.lower(jparams, jstate, jx, jy).compile()
    jax_compile = time.perf_counter() - t0
    jparams, jstate, jloss = compiled(jparams, jstate, jx, jy)
    first = float(loss.to_numpy())
    assert abs(first - float(jloss)) <= 1e-4 * abs(float(jloss)), (first, float(jloss))
    m = compile_ahead(tr.step, params, state, x, y).memory_stats()   # the same executable
    j = compiled.memory_analysis()
    peaks = (_peak(m["argument"], m["output"], m["alias"], m["temp"]),
             _peak(j.argument_size_in_bytes, j.output_size_in_bytes, j.alias_size_in_bytes,
                   j.temp_size_in_bytes))
    return (Side(tr.step, params, state, x, y, nx.block_until_ready),
            Side(compiled, jparams, jstate, jx, jy, jax.block_until_ready),
            (nx_compile, jax_compile), peaks)


def _pair(cfg, mesh_text, what):
    nside, jside, _, _ = setup(cfg, mesh_text)
    tokens = cfg.batch * cfg.context
    return Pair(nxpy=nside, jax=jside,
                info=f"{what}: one AdamW step ({tokens} tokens), params and state donated")


@case("gpt_step", "GPT training step, width 32, 2 layers, ctx 16, batch 8, 1 device",
      aim=1.05, rounds=9, round_seconds=0.3)
def gpt_step(cfg):
    gpt, _ = _modules()
    return _pair(small(gpt), None, "examples/gpt.py vs examples/gpt_jax.py, small, 1 device")


@case("gpt_step_mesh", "GPT training step, small, 2x2 mesh (data x model)", aim=1.05,
      devices=4, rounds=9, round_seconds=0.3)
def gpt_step_mesh(cfg):
    gpt, _ = _modules()
    return _pair(small(gpt), "2x2", "examples/gpt.py vs examples/gpt_jax.py, small, 2x2")


@case("gpt_step_default", "GPT training step, width 128, 4 layers, ctx 128, batch 16",
      aim=1.05, rounds=5, round_seconds=1.0)
def gpt_step_default(cfg):
    gpt, _ = _modules()
    c = small(gpt) if cfg.quick else gpt.Config()
    return _pair(c, None, "examples/gpt.py vs examples/gpt_jax.py, default size, 1 device")


# ----------------------------------------------------------------------------------------
# python -m bench.gpt: everything side by side in one run
# ----------------------------------------------------------------------------------------
def _time(side, n, rounds=5):
    side()
    best = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            side()
        best.append((time.perf_counter() - t0) / n)
    return float(np.median(best))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    from . import core
    import nxpy  # noqa: F401 - nxpy first: it starts XLA with its device count
    core.start_xla()
    gpt, _ = _modules()
    remat = dataclasses.replace(small(gpt), remat=True)
    rows = [("small, 1 device", small(gpt), None, 20),
            ("small, 1 dev, remat", remat, None, 20),
            ("small, 2x2 mesh", small(gpt), "2x2", 20)]
    if "--default" in argv:
        rows += [("default, 1 device", gpt.Config(), None, 3),
                 ("default, remat", dataclasses.replace(gpt.Config(), remat=True), None, 3)]
    print(f"{'':20} {'nxpy ms':>9} {'JAX ms':>9} {'ratio':>6} {'nxpy tok/s':>11} "
          f"{'JAX tok/s':>10} {'nxpy compile s':>15} {'JAX compile s':>14} {'ratio':>6} "
          f"{'nxpy peak MiB':>14} {'JAX peak MiB':>13} {'ratio':>6}")
    for name, c, mesh, n in rows:
        nside, jside, (nc, jc), (nm, jm) = setup(c, mesh)
        ts = {}
        for _ in range(2):                      # alternate the sides, keep the best
            for k, side in (("nxpy", nside), ("jax", jside)):
                t = _time(side, n)
                ts[k] = min(ts.get(k, t), t)
        tok = c.batch * c.context
        print(f"{name:20} {1e3 * ts['nxpy']:9.2f} {1e3 * ts['jax']:9.2f} "
              f"{ts['nxpy'] / ts['jax']:6.2f} {tok / ts['nxpy']:11.0f} {tok / ts['jax']:10.0f} "
              f"{nc:15.2f} {jc:14.2f} {nc / jc:6.2f} {nm / 2**20:14.2f} {jm / 2**20:13.2f} "
              f"{nm / jm:6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
