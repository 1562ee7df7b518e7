"""Meshes across processes and machines, on PJRT's distributed runtime.

Every process runs the same program (SPMD, as with ``jax.distributed``). Each calls
:func:`initialize` first (or is started by ``python -m nxpy.launch``, which sets the
environment so that nxpy initializes itself); then ``nx.Mesh`` numbers the devices of
*all* processes (process 0's first), ``shard_jit`` and ``shard_map`` compile over the
global device assignment, and each process passes and gets the shards of its own devices
(``mesh.local_partitions``). XLA moves the data between processes: gloo over TCP on CPU,
NCCL on GPUs. nxpy adds no transport of its own.

In one process (nothing initialized) everything here still works, with one process:

>>> import nxpy as nx
>>> from nxpy import distributed
>>> distributed.process_index(), distributed.process_count()
(0, 1)
>>> mesh = nx.Mesh("m", (2, 2))
>>> [t.tolist() for t in distributed.local_shards(nx.iota((4,)), mesh, {0: [0]})]
[[0, 1], [0, 1], [2, 3], [2, 3]]
>>> f = nx.defn.shard_jit(lambda x: x * 2, mesh, input_shardings=[{0: [0]}])
>>> out = f.call_global(nx.iota((4,)))
>>> distributed.fetch(out, mesh, f.output_shardings).tolist()
[0, 2, 4, 6]
"""
from __future__ import annotations

import numpy as np

import io

from . import pjrt, shape as S
from .backend import get_backend
from .defn.sharding import specs as SH
from .defn import tree as tree_mod
from .defn.placement import device_put
from .defn.shard_jit import shard_jit
from .layout import NamedSharding, as_partition_spec, read_sharding
from .mesh import Mesh, mesh_for
from .ops import tensor as host_tensor, to_tensor
from .tensor import Tensor

__all__ = ["initialize", "shutdown", "process_index", "process_count", "is_initialized",
           "local_shards", "from_process_pieces", "make_array_from_process_local_data",
           "process_allgather", "fetch", "DistributedError", "ProcessLostError"]

DistributedError = pjrt.DistributedError
ProcessLostError = pjrt.ProcessLostError
DEFAULT_TIMEOUT = 60.0


def initialize(coordinator_address=None, num_processes=None, process_id=None,
               local_device_count=None, *, timeout=None, heartbeat_timeout=10,
               platform=None) -> None:
    """Joins the distributed runtime: ``coordinator_address`` (``host:port``; process 0
    serves it), ``num_processes``, this process's ``process_id``, and the number of devices
    this process contributes (``local_device_count``, CPU: host devices, default
    ``NXPY_CPU_DEVICES``). Each argument left out is read from the environment
    (``NXPY_COORDINATOR``, ``NXPY_NUM_PROCESSES``, ``NXPY_PROCESS_ID``,
    ``NXPY_LOCAL_DEVICES``; ``NXPY_DIST_TIMEOUT`` for ``timeout``, in seconds, default 60).

    Call it before anything starts the XLA backend. Errors: :class:`RuntimeError` after
    the backend started; :class:`DistributedError` when the coordinator cannot be reached
    within ``timeout`` or the processes disagree on ``num_processes``.

    When a process is lost (it dies, is killed, raises, or exits without
    :func:`shutdown`), the others raise :class:`ProcessLostError` in their main thread
    within a moment, naming it; a main thread blocked in the runtime that does not take
    it within 10 s prints the message and exits with status 75 instead. A process whose
    host stops answering is declared lost after about ``heartbeat_timeout`` seconds. A
    slow process is never declared lost. See docs/distributed.md."""
    if platform is not None:
        pjrt.set_platform(platform)
    kw = pjrt.distributed_from_env(coordinator_address=coordinator_address,
                                   num_processes=num_processes, process_id=process_id,
                                   local_device_count=local_device_count, timeout=timeout)
    for key in ("coordinator_address", "num_processes", "process_id"):
        if key not in kw:
            raise ValueError(f"nxpy.distributed.initialize: {key} was not given and "
                             f"{pjrt.ENV[key]} is not set")
    what = "nxpy.distributed.initialize: "
    n = S.integer(kw["num_processes"], what + "num_processes", minimum=1)
    kw["num_processes"] = n
    kw["process_id"] = S.integer(kw["process_id"], what + "process_id", minimum=0)
    if kw["process_id"] >= n:
        raise ValueError(f"{what}process_id must be below num_processes ({n}), got "
                         f"{kw['process_id']}")
    if kw.get("local_device_count") is not None:
        kw["local_device_count"] = S.integer(kw["local_device_count"],
                                             what + "local_device_count", minimum=1)
    for key, v in (("timeout", kw.get("timeout")), ("heartbeat_timeout", heartbeat_timeout)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
            raise ValueError(f"{what}{key} must be a positive number of seconds, got {v!r}")
    pjrt.initialize_distributed(kw.pop("coordinator_address"), kw.pop("num_processes"),
                                kw.pop("process_id"), timeout=kw.pop("timeout", DEFAULT_TIMEOUT),
                                heartbeat_timeout=heartbeat_timeout, **kw)


def shutdown() -> None:
    """Leaves the distributed runtime (every process should call it at the end; it waits
    for the others). Nothing happens when it was never initialized."""
    pjrt.shutdown_distributed()


def is_initialized() -> bool:
    return pjrt.distributed_info() is not None


def process_index() -> int:
    """This process's index (0 when there is one process)."""
    info = pjrt.distributed_info()
    return 0 if info is None else info["process_id"]


def process_count() -> int:
    return pjrt.process_count()


def local_shards(t, mesh: Mesh, sharding) -> list:
    """This process's shards of a whole tensor ``t`` (the same on every process), per
    ``sharding`` (``{dim: [mesh axes]}`` or any one spec): one per local partition, in
    partition order,
    as ``shard_jit`` takes them."""
    return SH.shard(t, mesh, sharding, partitions=mesh.local_partitions)


def from_process_pieces(piece, mesh: Mesh, sharding) -> list:
    """This process's shards of a global tensor of which each process holds only its own
    *piece*: the block its partitions cover (``jax.make_array_from_process_local_data``'s
    rule). The local partitions must cover one block of the global tensor (true when the
    sharded mesh axes split along process boundaries, as in data parallelism)."""
    piece = to_tensor(piece, "piece")
    sh = read_sharding(sharding, piece.shape, mesh, piece.names)
    parts = mesh.local_partitions
    rank = len(piece.shape)
    # block coordinates each local partition holds, per dim
    blocks = [sorted({sh.block_index(p, d) for p in parts}) for d in range(rank)]
    counts = [len(b) for b in blocks]
    for d, b in enumerate(blocks):
        if b != list(range(b[0], b[0] + len(b))):
            raise ValueError(f"from_process_pieces: this process's partitions {parts} hold "
                             f"blocks {b} of dim {d}, not one contiguous range")
        if piece.shape[d] % counts[d]:
            raise ValueError(f"from_process_pieces: dim {d} of the piece (size "
                             f"{piece.shape[d]}) is not divisible by the {counts[d]} blocks "
                             f"this process holds")
    arr = piece.to_numpy()
    out = []
    for p in parts:
        idx = []
        for d in range(rank):
            n = piece.shape[d] // counts[d]
            b = sh.block_index(p, d) - blocks[d][0]
            idx.append(slice(b * n, (b + 1) * n))
        out.append(piece.backend.from_numpy(np.ascontiguousarray(arr[tuple(idx)]), piece.type,
                                            piece.names))
    return out


def make_array_from_process_local_data(sharding, local_data, *, backend="exla") -> Tensor:
    """The sharded tensor of which this process holds ``local_data``: the block of the
    global value its partitions cover (JAX's ``jax.make_array_from_process_local_data``;
    data parallelism across processes: each process loads only its own rows). In one
    process ``local_data`` is the whole value. ``sharding``: an ``nx.NamedSharding``, or a
    ``P`` over the context mesh (:func:`nx.set_mesh`).

    >>> import nxpy as nx
    >>> mesh = nx.Mesh("m", (2, 2), axis_names=("data", "model"))
    >>> x = make_array_from_process_local_data(nx.NamedSharding(mesh, nx.P("data")),
    ...                                        nx.iota((4, 2)))
    >>> x.shape, x.sharding.spec, x.addressable_shards[2].data.tolist()
    ((4, 2), P('data'), [[4, 5], [6, 7]])

    A container of pieces (a dict of arrays, a tuple, ...) gives the same container of
    sharded tensors, ``sharding`` one for all or a container of them (JAX's prefix).
    """
    leaves, tree = tree_mod.flatten(local_data)
    if tree != tree_mod.LEAF:
        specs = SH.leaf_specs(sharding, tree, "local_data", "sharding")
        return tree_mod.unflatten(tree, [
            make_array_from_process_local_data(s, leaf, backend=backend)
            for leaf, (_, s) in zip(leaves, specs)])
    piece = to_tensor(local_data, "local_data")
    if not isinstance(sharding, NamedSharding):
        if as_partition_spec(sharding) is None:
            raise TypeError(f"make_array_from_process_local_data: expected sharding to be an "
                            f"nx.NamedSharding, or a P over the context mesh, got {sharding!r}")
        what = "make_array_from_process_local_data: sharding"
        sharding = read_sharding(sharding, piece.shape, mesh_for(sharding, what), piece.names,
                                 what=what)
    mesh = sharding.mesh
    sharding.axes(len(piece.shape), "make_array_from_process_local_data")
    shards = from_process_pieces(piece, mesh, sharding)
    parts = mesh.local_partitions
    shape = []
    for d, n in enumerate(piece.shape):
        held = len({sharding.block_index(p, d) for p in parts})
        shape.append(n // held * sharding.factor(d))
    return get_backend(backend).from_shards(shards, tuple(shape), piece.type, piece.names,
                                            sharding)


def process_allgather(x, tiled=False) -> Tensor:
    """The whole value on the host of every process (every process must call it, as for
    any collective; JAX's ``multihost_utils.process_allgather``). A sharded tensor gives
    its global value: a compiled program replicates it over its mesh (XLA moves the
    shards between the processes), then one local copy is read. Any other tensor is this
    process's own value: the processes' values are stacked along a new first axis (or,
    with ``tiled``, concatenated along the first), in process order. Returns a host tensor.

    >>> import nxpy as nx
    >>> mesh = nx.Mesh("m", (2, 2))
    >>> x = nx.device_put(nx.iota((4, 2)), nx.NamedSharding(mesh, nx.P("axis_0", "axis_1")))
    >>> process_allgather(x).tolist(), process_allgather(nx.tensor([1, 2])).tolist()
    ([[0, 1], [2, 3], [4, 5], [6, 7]], [[1, 2]])
    """
    t = to_tensor(x, "x")
    if t.sharding is not None:
        if t.backend.covers(t):  # this process holds it all already
            return host_tensor(np.array(t.to_numpy()), t.type, names=_names(t))
        whole = device_put(t, NamedSharding(t.sharding.mesh))  # replicated, on the devices
        return host_tensor(np.array(whole.addressable_shards[0].data.to_numpy()), t.type,
                           names=_names(t))
    arr = np.asarray(t.to_numpy())
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    parts = [np.load(io.BytesIO(b), allow_pickle=False) for b in pjrt.allgather_bytes(
        buf.getvalue())] if pjrt.process_count() > 1 else [arr]
    out = np.concatenate(parts) if tiled else np.stack(parts)
    return host_tensor(out, t.type)


def _names(t):
    return t.names if any(t.names) else None


_GATHER: dict = {}


def _identity(x):
    return x


def fetch(per_device, mesh: Mesh, sharding) -> Tensor:
    """The whole value of a sharded result on every process: ``per_device`` are this
    process's per-device results (as a ``shard_jit`` call returns them), ``sharding`` their
    sharding (``f.output_shardings``). A compiled all-gather over the mesh moves the data
    (every process must call it, as for any collective); a replicated result needs no
    communication."""
    if isinstance(sharding, (list, tuple)) and len(sharding) == 1 and isinstance(sharding[0], dict):
        sharding = sharding[0]
    if not isinstance(sharding, dict) and as_partition_spec(sharding) is None:
        raise TypeError(f"fetch: expected the sharding of one result, a dict {{dim: [mesh "
                        f"axes]}} or a P, got {sharding!r}")
    ts = [to_tensor(t, "result") for t in per_device]
    if not ts:
        raise ValueError("fetch: no per-device results given")
    layout = read_sharding(sharding, ts[0].shape, mesh, ts[0].names, what="fetch: sharding")
    if layout.is_replicated:
        return ts[0]
    compiler = "exla" if ts[0].backend.name == "exla" else "evaluator"
    key = (layout, compiler)
    f = _GATHER.get(key)
    if f is None:
        f = _GATHER[key] = shard_jit(_identity, mesh, input_shardings=[layout],
                                     output_shardings=[{}], compiler=compiler)
    return f([[t] for t in ts])[0]
