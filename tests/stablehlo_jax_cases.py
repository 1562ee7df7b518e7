"""Sharded JAX programs whose lowered modules the StableHLO importer must read: every
collective JAX lowers with replica groups (``psum``/``pmax``/``pmin``/``pmean``,
``all_gather``, ``psum_scatter``, ``all_to_all``) plus ``ppermute`` and ``axis_index``,
under ``jax.shard_map`` over one axis, several axes (in and out of mesh order) and axis
subsets of 1-, 2- and 3-D meshes, and the data-parallel ``jax.jit`` with
``NamedSharding`` in and out.

``tests/test_stablehlo_jax.py`` loads the modules stored under
``tests/data/sharded_jax/<jax version>/`` (printed by jax 0.10.2: dense replica groups;
by jax 0.12: ``#stablehlo.replica_group_mesh_axes`` over a duplicated ``sdy.mesh``) and
also lowers these programs live with the running jax. Running this file writes the
fixtures for the running jax version::

    python tests/stablehlo_jax_cases.py          # tests/data/sharded_jax/<jax.__version__>/

Each case is ``(name, mesh shape, axis names, build)``; ``build(mesh)`` returns the
jitted function, its arguments (NumPy arrays, and the ``PartitionSpec`` each is placed
with, or None for a host array) and one ``PartitionSpec`` per result saying how each
device's part of it is laid out (the shard_map cases stack every device's local outputs
along dim 0, so each device's own results are compared).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

DATA = Path(__file__).resolve().parent / "data" / "sharded_jax"


def _x(*shape, seed=0):
    """Small integers as f32 (exact sums in any order; the fixtures compress)."""
    return np.random.default_rng(seed).integers(-9, 10, shape).astype(np.float32)


def _shard_map(body, mesh, in_specs, out_specs, check_vma=False):
    return jax.jit(jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs,
                                 check_vma=check_vma))


def _collectives(axes, size, permute=True):
    """Every collective over ``axes`` (``size`` devices per group), one result each."""
    def body(a):
        out = [lax.psum(a, axes), lax.pmax(a, axes), lax.pmin(a, axes), lax.pmean(a, axes),
               lax.all_gather(a, axes, axis=0, tiled=True),
               lax.all_gather(a, axes, axis=1, tiled=False),
               lax.psum_scatter(a, axes, scatter_dimension=1, tiled=True),
               lax.all_to_all(a, axes, 1, 0, tiled=True),
               a + lax.axis_index(axes)]
        if permute:
            out.append(lax.ppermute(a, axes, [(i, (i + 1) % size) for i in range(size)]))
        return tuple(out)
    return body


def _stacked(mesh, body, n_out, shape, in_spec):
    """``body`` under shard_map on an input of ``shape`` placed by ``in_spec``, each
    device's local results stacked along dim 0 (out spec: all mesh axes)."""
    every = P(tuple(mesh.axis_names))
    return _shard_map(body, mesh, in_spec, (every,) * n_out), [(_x(*shape), in_spec)], \
        [every] * n_out


def _over(axes, permute=True):
    def build(mesh):
        names = axes if isinstance(axes, tuple) else (axes,)
        size = int(np.prod([mesh.shape[a] for a in names]))
        body = _collectives(axes, size, permute)
        return _stacked(mesh, body, 10 if permute else 9, (8, 32), P(*mesh.axis_names))
    return build


def _subsets(mesh):
    def body(a):
        return (lax.psum(a, "b"), lax.psum(a, ("a", "c")),
                lax.all_gather(a, ("c", "a"), axis=1, tiled=True),
                lax.psum_scatter(a, ("a", "b"), scatter_dimension=0, tiled=True),
                lax.pmax(a, ("b", "c")), lax.all_to_all(a, "c", 0, 1, tiled=True),
                lax.ppermute(a, "a", [(0, 1), (1, 0)]), a * lax.axis_index(("c", "b")))
    return _stacked(mesh, body, 8, (16, 32), P(("a", "b"), "c"))


def _issue_2x2(mesh):
    """The module of issue 25 (an all_reduce over "x" and an all_gather over "y")."""
    f = _shard_map(lambda a: (lax.psum(a, "x"), lax.all_gather(a, "y", tiled=True)), mesh,
                   P("x", "y"), (P("x", "y"), P("x", None)))
    return f, [(np.arange(16.0, dtype=np.float32).reshape(4, 4), P("x", "y"))], \
        [P("x", "y"), P("x", None)]


def _mixed_forms(mesh):
    """axis_index_groups keep the dense form under jax 0.12: both forms in one module."""
    def body(a):
        return (lax.psum(a, "y", axis_index_groups=[[0, 1], [2, 3]]), lax.psum(a, "y"),
                lax.all_gather(a, "y", axis=0, tiled=True, axis_index_groups=[[0, 3], [1, 2]]),
                lax.pmax(a, ("x", "y")))
    return _stacked(mesh, body, 4, (8, 32), P("x", "y"))


def _checked_vma(mesh):
    """shard_map with its default check_vma=True (psum/all_gather lower as invariant ops)."""
    outs = (P(None, "y"), P("x", "y"), P())
    f = _shard_map(lambda a: (lax.psum(a, "x"), lax.all_gather(a, "y", axis=1, tiled=True),
                              lax.pmax(a, ("x", "y"))), mesh, P("x", "y"), outs, check_vma=True)
    return f, [(_x(8, 16), P("x", "y"))], list(outs)


def _host_input(mesh):
    """A shard_map called on a host array: the module's arguments are not sharded."""
    f, args, outs = _stacked(mesh, _collectives("y", 4), 10, (8, 32), P("x", "y"))
    return f, [(args[0][0], None)], outs


def _data_parallel(mesh):
    """jit with NamedSharding in and out: batch over "data", weights over "model"."""
    def f(x, w, b):
        h = jnp.tanh(x @ w + b)
        return h, (h ** 2).mean()
    def ns(*s):
        return NamedSharding(mesh, P(*s))
    jf = jax.jit(f, in_shardings=(ns("data"), ns(None, "model"), ns("model")),
                 out_shardings=(ns("data", "model"), ns()))
    return jf, [(_x(16, 8, seed=1), P("data")), (_x(8, 6, seed=2), P(None, "model")),
                (_x(6, seed=3), P("model"))], [P("data", "model"), P()]


def _train_step(mesh):
    """A data-parallel SGD step: jit with NamedSharding around a shard_map whose
    gradients are averaged with pmean over "data"."""
    def local(w, x, y):
        g = jax.grad(lambda w: ((x @ w - y) ** 2).mean())(w)
        return w - 0.1 * lax.pmean(g, "data")
    body = jax.shard_map(local, mesh=mesh, in_specs=(P(), P("data"), P("data")), out_specs=P(),
                         check_vma=False)
    def ns(*s):
        return NamedSharding(mesh, P(*s))
    jf = jax.jit(body, in_shardings=(ns(), ns("data"), ns("data")), out_shardings=ns())
    return jf, [(_x(8, 3, seed=4), P()), (_x(16, 8, seed=5), P("data")),
                (_x(16, 3, seed=6), P("data"))], [P()]


CASES = [
    ("mesh1d_x", (4,), ("x",), _over("x")),
    ("mesh2d_x", (2, 4), ("x", "y"), _over("x")),
    ("mesh2d_y", (2, 4), ("x", "y"), _over("y")),
    ("mesh2d_xy", (2, 4), ("x", "y"), _over(("x", "y"))),
    ("mesh2d_yx", (2, 4), ("x", "y"), _over(("y", "x"), permute=False)),
    ("mesh3d_subsets", (2, 2, 2), ("a", "b", "c"), _subsets),
    ("issue_2x2", (2, 2), ("x", "y"), _issue_2x2),
    ("mixed_forms", (2, 4), ("x", "y"), _mixed_forms),
    ("check_vma", (2, 2), ("x", "y"), _checked_vma),
    ("host_input", (2, 4), ("x", "y"), _host_input),
    ("data_parallel_jit", (4, 2), ("data", "model"), _data_parallel),
    ("train_step", (4,), ("data",), _train_step),
]


def jax_mesh(shape, names) -> Mesh:
    """A JAX mesh of ``shape`` on the first devices, in order."""
    devices = np.empty(int(np.prod(shape)), dtype=object)
    devices[:] = jax.devices()[:devices.size]
    return Mesh(devices.reshape(shape), names)


def lower_and_run(case):
    """``(module text, arguments, results, result specs)`` of one case under the running
    jax: the arguments and results as NumPy arrays (global values)."""
    _, shape, names, build = case
    mesh = jax_mesh(shape, names)
    f, args, out_specs = build(mesh)
    placed = [a if s is None else jax.device_put(a, NamedSharding(mesh, s)) for a, s in args]
    text = f.lower(*placed).as_text()
    outs = jax.tree_util.tree_leaves(f(*placed))
    return text, [a for a, _ in args], [np.asarray(o) for o in outs], out_specs


def write_fixtures(root: Path = DATA) -> Path:
    """Writes ``<case>.mlir`` (the module as ``lower(...).as_text()`` prints it) and
    ``<case>.npz`` (``arg<i>``, ``out<i>``: global values) for every case, under
    ``root/<jax version>/``."""
    out = root / jax.__version__
    out.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        text, args, outs, _ = lower_and_run(case)
        (out / f"{case[0]}.mlir").write_text(text)
        np.savez_compressed(out / f"{case[0]}.npz", **{f"arg{i}": a for i, a in enumerate(args)},
                 **{f"out{i}": o for i, o in enumerate(outs)})
    return out


if __name__ == "__main__":
    jax.config.update("jax_num_cpu_devices", 8)
    where = write_fixtures(Path(sys.argv[1]) if sys.argv[1:] else DATA)
    print(f"wrote {len(CASES)} cases to {where}")
