"""The collectives of tests/test_distributed.py, runnable two ways: imported by the test
process (one process, the reference per-device results) and as the script every process
of ``python -m nxpy.launch`` runs (each writes its own partitions' results to OUTDIR).

    python -m nxpy.launch -n 2 --local-devices 2 tests/distributed_worker.py OUTDIR 2x2 exla

A fourth argument ``sharded`` runs the sharded tensors and the training loop only (not
every collective's program: tests/test_distributed_netns.py).
"""
import json
import sys
from pathlib import Path

import numpy as np

import nxpy as nx
from nxpy.defn import (all_gather, all_to_all, axis_index, jit, pmax, pmean, ppermute, psum,
                       psum_scatter, shard_jit, shard_map, value_and_grad)

AXES = ("x", "y")
IN_SPEC = {0: ["x"], 1: ["y"]}


def cases(shape):
    """``(name, per-shard function)`` for every collective on each axis and both."""
    out = []
    for axes in ("x", "y", ("x", "y")):
        tag = axes if isinstance(axes, str) else "xy"
        for tiled in (True, False):
            out.append((f"all_gather-{tag}-tiled{int(tiled)}",
                        lambda a, axes=axes, tiled=tiled: all_gather(
                            a, axes=axes, all_gather_dim=0, tiled=tiled)))
        for name, f in (("psum", psum), ("pmax", pmax), ("pmean", pmean)):
            out.append((f"{name}-{tag}", lambda a, f=f, axes=axes: f(a, axes)))
        out.append((f"psum_scatter-{tag}",
                    lambda a, axes=axes: psum_scatter(a, axes, scatter_dimension=0, tiled=True)))
        out.append((f"axis_index-{tag}", lambda a, axes=axes: a + axis_index(axes)))
    # a host function on each device's shard (each process calls it for its own devices),
    # then a collective across the processes
    out.append(("runtime_call", lambda a: nx.runtime_call(a, a, _host_cumsum)))
    out.append(("runtime_call-psum-xy",
                lambda a: psum(nx.runtime_call(a, a, _host_cumsum) * (axis_index("x") + 1),
                               ("x", "y"))))
    for ax, n in zip(AXES, shape):
        out.append((f"all_to_all-{ax}", lambda a, ax=ax: all_to_all(a, ax, 0, 1, tiled=True)))
        perm = [(i, (i + 1) % n) for i in range(n)]
        out.append((f"ppermute-{ax}", lambda a, ax=ax, perm=perm: ppermute(a, ax, perm)))
    return out


def _host_cumsum(t):
    return np.cumsum(t.to_numpy(), axis=1).astype(np.float32)


def global_input(shape):
    rows, cols = 4 * shape[0] * shape[1], 2 * shape[1] * shape[0]
    return np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) - 7.5


def programs(mesh, compiler):
    """``name -> shard_jit`` whose per-device results are each partition's local output
    (shard_map inside, its output laid out over every mesh axis on dim 0)."""
    progs = {}
    for name, body in cases(mesh.shape):
        sm = shard_map(body, mesh, in_specs=("x", "y"), out_specs=nx.P(AXES), check_vma=False)
        progs[name] = shard_jit(lambda a, sm=sm: sm(a), mesh, input_shardings=[IN_SPEC],
                                output_shardings=[{0: list(AXES)}], compiler=compiler)
    # a global-view program: all_gather inside shard_jit (no shard_map)
    progs["shard_jit-all_gather"] = shard_jit(
        lambda a: all_gather(a * 2, axes=["x"], all_gather_dim=0), mesh,
        input_shardings=[IN_SPEC], compiler=compiler)
    return progs


def sharded_tensors(mesh, compiler):
    """``{name: sharded tensor}``: sharded tensors (JAX's model) across the processes:
    placed from the whole value and from each process's own rows, computed on by jit,
    resharded on the devices, gathered to the host, and a few steps of a training loop."""
    from nxpy import distributed

    backend = "exla" if compiler == "exla" else "numpy"
    def S(*spec):
        return nx.NamedSharding(mesh, nx.P(*spec))
    a = global_input(mesh.shape)
    x = nx.device_put(a, S("x", "y"), backend=backend)
    rows = a.shape[0] // mesh.shape[0]  # the blocks of rows this process's devices hold
    blocks = sorted({mesh.coords(p)[0] for p in mesh.local_partitions})
    local = distributed.make_array_from_process_local_data(
        S("x"), a[blocks[0] * rows:(blocks[-1] + 1) * rows], backend=backend)
    if distributed.process_count() > 1:  # this process holds a part: reading it all fails
        try:
            x.to_numpy()
        except ValueError as e:
            assert "nxpy.distributed.process_allgather(t)" in str(e), e
        else:
            raise AssertionError("to_numpy of a tensor sharded across processes")
    f = jit(lambda u, v: nx.sum(nx.exp(u / 30) * v, axes=[1]), compiler=compiler)
    out = {"device_put": x, "from_process_local_data": local, "jit": f(x, local),
           "reshard": nx.device_put(x, S("y", "x")), "eager": x * 2 + 1,
           "allgather": nx.tensor(distributed.process_allgather(x).to_numpy() + 0)}
    step, w, xs = training(mesh, compiler)
    for i in range(3):
        v, w = step(w, xs)
        out[f"loss{i}"] = v
    out["weights"] = w
    return out


def training(mesh, compiler):
    """A training step on sharded tensors (the loss a pmean over the whole mesh, its
    gradient, a step of gradient descent): ``(step, w, xs)``, ``step(w, xs)`` giving the
    loss and the next weights (``w`` donated)."""
    backend = "exla" if compiler == "exla" else "numpy"
    a = global_input(mesh.shape)
    w = nx.device_put(np.linspace(-1, 1, a.shape[1] * 4, dtype=np.float32).reshape(-1, 4),
                      nx.NamedSharding(mesh, nx.P(None, "y")), backend=backend)
    loss = shard_map(lambda u, w: pmean(nx.mean(nx.tanh(nx.dot(u / 30, w)) ** 2), ("x", "y")),
                     mesh, in_specs=[nx.P("x"), nx.P(None, "y")], out_specs=nx.P())
    step = jit(lambda w, u: (lambda v, g: (v, w - 0.5 * g))(*value_and_grad(
        lambda w: loss(u, w))(w)), compiler=compiler, donate_argnums=0)
    return step, w, nx.device_put(a, nx.NamedSharding(mesh, nx.P("x")), backend=backend)


def run(mesh, compiler, which="all"):
    """``{name: {partition: array}}`` for this process's partitions (``which="sharded"``:
    the sharded tensors and training loop only)."""
    x = nx.tensor(global_input(mesh.shape))
    parts = mesh.local_partitions
    out = {}
    for name, f in (programs(mesh, compiler) if which == "all" else {}).items():
        res = f.call_global(x)
        out[name] = {p: r.to_numpy() for p, r in zip(parts, res)}
    for name, t in sharded_tensors(mesh, compiler).items():
        if t.sharding is None:  # a host value, the same on every process
            out[f"sharded-{name}"] = {p: t.to_numpy() for p in parts}
        else:
            shards = t.addressable_shards
            assert [s.partition for s in shards] == parts
            out[f"sharded-{name}"] = {s.partition: s.data.to_numpy() for s in shards}
    return out


def main(outdir, mesh_shape, compiler, which="all"):
    from nxpy import distributed, pjrt
    distributed.initialize()
    shape = tuple(int(d) for d in mesh_shape.split("x"))
    mesh = nx.Mesh("mesh", shape, axis_names=AXES)
    me = distributed.process_index()
    res = run(mesh, compiler, which)
    np.savez(Path(outdir) / f"process{me}.npz",
             **{f"{name}|{p}": a for name, per in res.items() for p, a in per.items()})
    (Path(outdir) / f"process{me}.json").write_text(json.dumps(
        {"process": me, "count": distributed.process_count(), "partitions": mesh.local_partitions,
         "processes": list(mesh.processes), "coordinator": pjrt.distributed_info()["address"],
         "gloo": pjrt._state["dist"]["gloo"]}))
    distributed.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:5])
