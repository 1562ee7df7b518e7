"""Collectives across processes: all_gather and psum of 4 x 8 MiB (one f32 shard of 8 MiB
per device) on a 2x2 mesh, as ratios.

* nxpy over 2 processes (2 CPU devices each, ``python -m nxpy.launch``; gloo over loopback)
* nxpy in one process (the same mesh on 4 devices of one client)
* JAX over 2 processes on the same layout (``jax.distributed``, ``jax.shard_map``)

Run ``python -m bench.distributed`` (about a minute; ``--quick``: fewer calls). Each
measurement is the median over calls of one call's wall time, the results waited for,
on process 0 (every process runs the same calls). Not part of ``python -m bench``: it
starts its own processes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARD = 8 << 20  # bytes per device
OPS = ("all_gather", "psum")


def _median_time(fn, calls):
    fn()  # compile and warm up
    fn()
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def worker_nxpy(calls):
    import numpy as np
    import nxpy as nx
    from nxpy import distributed, pjrt
    from nxpy.backend import get_backend
    from nxpy.defn import all_gather, psum, shard_jit, shard_map
    mesh = nx.Mesh("bench", (2, 2), axis_names=("x", "y"))
    n = SHARD // 4
    exla = get_backend("exla")
    parts = mesh.local_partitions
    args = [[exla.from_numpy(np.full(n, p, np.float32), nx.types.parse("f32"),
                             device_id=mesh.devices[p])] for p in parts]
    bodies = {"all_gather": lambda a: all_gather(a, axes=("x", "y"), all_gather_dim=0),
              "psum": lambda a: psum(a, ("x", "y"))}
    out = {}
    for op in OPS:
        sm = shard_map(bodies[op], mesh, in_specs=nx.P(("x", "y")), out_specs=(None,),
                       check_vma=False)
        f = shard_jit(lambda a, sm=sm: sm(a), mesh, input_shardings=[{0: ["x", "y"]}],
                      output_shardings=[{}], compiler="exla")

        def call(f=f):
            nx.block_until_ready(f(args))
        out[op] = _median_time(call, calls)
        if op == "all_gather":  # check once: every device has every shard
            got = f(args)[0].to_numpy()
            assert np.array_equal(got[::n], np.arange(4, dtype=np.float32)), got[::n]
    if distributed.process_index() == 0:
        print("RESULT " + json.dumps({"processes": pjrt.process_count(), **out}), flush=True)
    distributed.shutdown()


def worker_jax(calls):
    import numpy as np
    import jax
    jax.config.update("jax_num_cpu_devices", 2)
    addr = os.environ["NXPY_COORDINATOR"]
    jax.distributed.initialize(coordinator_address=addr, coordinator_bind_address=addr,
                               num_processes=int(os.environ["NXPY_NUM_PROCESSES"]),
                               process_id=int(os.environ["NXPY_PROCESS_ID"]),
                               initialization_timeout=60)
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    devs = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    mesh = Mesh(np.array(devs).reshape(2, 2), ("x", "y"))
    n = SHARD // 4
    sharding = NamedSharding(mesh, P(("x", "y")))
    order = list(mesh.devices.flat)
    local = [jax.device_put(np.full(n, order.index(d), np.float32), d)
             for d in jax.local_devices()]
    local.sort(key=lambda a: order.index(next(iter(a.devices()))))
    x = jax.make_array_from_single_device_arrays((4 * n,), sharding, local)
    bodies = {"all_gather": lambda a: jax.lax.all_gather(a, ("x", "y"), axis=0, tiled=True),
              "psum": lambda a: jax.lax.psum(a, ("x", "y"))}
    out = {}
    for op in OPS:
        f = jax.jit(jax.shard_map(bodies[op], mesh=mesh, in_specs=P(("x", "y")),
                                  out_specs=P(), check_vma=False))
        out[op] = _median_time(lambda f=f: f(x).block_until_ready(), calls)
    if jax.process_index() == 0:
        print("RESULT " + json.dumps({"processes": jax.process_count(), **out}), flush=True)
    jax.distributed.shutdown()


def _run(cmd, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NXPY_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(env_extra or {})
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    for line in r.stdout.splitlines():
        if "RESULT " in line:
            return json.loads(line.split("RESULT ", 1)[1])
    raise RuntimeError(f"{cmd} failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    calls = 5 if "--quick" in argv else 20
    me = str(Path(__file__).resolve())
    launch = [sys.executable, "-m", "nxpy.launch", "-n", "2", "--local-devices", "2",
              "--timeout", "300"]
    rows = {
        "nxpy, 2 processes x 2": _run(launch + [me, "--worker", "nxpy", str(calls)]),
        "nxpy, 1 process x 4": _run([sys.executable, me, "--worker", "nxpy", str(calls)],
                                    {"NXPY_CPU_DEVICES": "4"}),
        "JAX, 2 processes x 2": _run(launch + [me, "--worker", "jax", str(calls)]),
    }
    mp, sp, jx = (rows["nxpy, 2 processes x 2"], rows["nxpy, 1 process x 4"],
                  rows["JAX, 2 processes x 2"])
    print(f"2x2 mesh, one f32 shard of {SHARD >> 20} MiB per device; median of {calls} calls "
          f"on process 0")
    print("| op | nxpy 2 proc | nxpy 1 proc | JAX 2 proc | nxpy 2p / nxpy 1p | nxpy 2p / JAX 2p |")
    print("|---|---|---|---|---|---|")
    for op in OPS:
        print(f"| {op} | {mp[op] * 1e3:.1f} ms | {sp[op] * 1e3:.1f} ms | {jx[op] * 1e3:.1f} ms | "
              f"{mp[op] / sp[op]:.2f}x | {mp[op] / jx[op]:.2f}x |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        {"nxpy": worker_nxpy, "jax": worker_jax}[sys.argv[2]](int(sys.argv[3]))
    else:
        sys.exit(main())
