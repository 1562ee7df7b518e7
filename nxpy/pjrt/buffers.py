"""Buffers: host arrays to devices and back, global arrays over a mesh from their
shards (and their shardings), moving blocks between devices, waiting for results."""
from __future__ import annotations

import weakref

import numpy as np

from .. import telemetry
from . import lib
from .client import _client, local_positions, process_index, process_of
from .distributed import wait_ready
from .errors import _raise_runtime_failure


def _single(device_index: int):
    st = lib._state
    s = st["single"].get(device_index)
    if s is None:
        s = st["single"][device_index] = st["SingleDeviceSharding"](st["devices"][device_index])
    return s


def to_device(array: np.ndarray, device_index: int = 0):
    """A single-device buffer holding ``array`` (64-bit types kept as they are); counted
    as one ``transfer_to_device``."""
    telemetry.count("transfer_to_device")
    return _put(array, device_index)


def _put(array: np.ndarray, device_index: int):
    """:func:`to_device` uncounted: for JAX's dispatch, whose callers count the arrays they
    hand it (see :func:`nxpy.pjrt.execute.dispatcher`)."""
    st = lib._state
    if "avals" not in st:
        _client()
    if device_index not in st["local"]:
        raise ValueError(f"device {device_index} belongs to process "
                         f"{process_of(device_index)}, not to this process "
                         f"({process_index()}): it cannot hold a buffer here (this process's "
                         f"devices: {local_positions()})")
    if type(array) is not np.ndarray or not array.flags.c_contiguous:
        array = np.ascontiguousarray(array).reshape(np.shape(array))  # keeps 0-d arrays 0-d
    key = (array.shape, array.dtype)
    aval = st["avals"].get(key)
    if aval is None:
        aval = st["avals"][key] = st["core"].ShapedArray(array.shape, array.dtype)
    # copied during the call: the buffer never aliases the array (a donated buffer may be
    # overwritten by its program's results, and host tensors share arrays with views)
    return st["J"].batched_device_put(aval, _single(device_index), [array],
                                      [st["devices"][device_index]], True, False,
                                      st["copy_in"], True)


def put_sharded(arrays, global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec,
                partitions):
    """One global array over a mesh from host arrays: ``arrays[i]`` is the shard of
    partition ``partitions[i]`` (this process's partitions, in order; views are fine),
    laid out by partition ``spec``. The arrays are copied; the call returns when the
    copies are made (so the caller may change its arrays afterwards)."""
    st = lib._state
    if "avals" not in st:
        _client()
    sharding = _named_sharding(mesh_devices, mesh_shape, axis_names, spec)
    aval = st["core"].ShapedArray(tuple(global_shape), np.dtype(dtype))
    devs = [st["devices"][mesh_devices[p]] for p in partitions]
    telemetry.count("transfer_to_device", len(arrays))
    # jaxlib 0.10.2 fails ("bad_function_call") putting several contiguous views with the
    # copy-during-call semantics to_device uses; JAX's own (zero-copy, asynchronous)
    # semantics copy on the CPU, so wait for the copies instead
    out = st["J"].batched_device_put(aval, sharding, list(arrays), devs, True, False,
                                     st["J"].HostBufferSemantics.ZERO_COPY, True)
    block_until_ready([out])
    return out


def array_type():
    """The type of the single-device buffers :func:`to_device` and executables return."""
    _client()
    return lib._state["J"].ArrayImpl


def to_host(buffer, buffers: int = 1) -> np.ndarray:
    """The values of a buffer (or of a global array whose distinct shards are
    ``buffers`` buffers) on the host."""
    telemetry.count("transfer_to_host", buffers)
    wait_ready([buffer])  # a lost process raises here, not in a collective that never ends
    try:
        return np.asarray(buffer)
    except Exception as e:  # a program's failure shows when its results are read
        _raise_runtime_failure(e, "reading a result")


def device_index_of(buffer) -> int:
    return lib._state["devices"].index(next(iter(buffer.devices())))


def _named_sharding(mesh_devices, mesh_shape, axis_names, spec):
    key = (tuple(mesh_devices), tuple(mesh_shape), tuple(axis_names), spec)
    cache = lib._state.setdefault("named", {})
    s = cache.get(key)
    if s is None:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        devs = np.empty(len(mesh_devices), dtype=object)
        devs[:] = [lib._state["devices"][i] for i in mesh_devices]
        mesh = Mesh(devs.reshape(mesh_shape), tuple(axis_names))
        s = cache[key] = NamedSharding(mesh, PartitionSpec(*spec))
    return s


def assembler(global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec, *,
              reuse=True):
    """``assemble`` with everything but the shards fixed: a function from a list of
    per-partition single-device buffers (partition order) to one global array. The
    abstract value and the sharding are built once, and the last global array is kept
    while all of its shards are alive: called again with the very same buffers (the
    same inputs to a compiled program), it is returned as it is, as JAX reuses a global
    array it is given. A dead shard drops it at once (weak references), so it never
    holds device memory its shards' owners have let go. ``reuse=False``: no reuse."""
    st = lib._state
    aval = st["core"].ShapedArray(tuple(global_shape), np.dtype(dtype))
    sharding = _named_sharding(mesh_devices, mesh_shape, axis_names, spec)
    array_impl = st["J"].ArrayImpl
    last = [None]  # [(weak references to the shards, their global array)] or [None]

    def forget(dead):
        entry = last[0]
        if entry is not None and any(r is dead for r in entry[0]):
            last[0] = None

    def assemble_shards(shards: list):
        entry = last[0]
        if entry is not None:
            refs, array = entry
            if len(refs) == len(shards):
                for r, s in zip(refs, shards):
                    if r() is not s:
                        break
                else:
                    return array
        array = array_impl(aval, sharding, shards, True, True)
        if not reuse:
            return array
        try:
            last[0] = ([weakref.ref(s, forget) for s in shards], array)
        except TypeError:  # a buffer type without weak references: no reuse
            last[0] = None
        return array
    assemble_shards.sharding = sharding  # cached per mesh and spec: compare by identity
    return assemble_shards


def assemble(global_shape, dtype, shards, mesh_devices, mesh_shape, axis_names, spec):
    """One global array from per-partition single-device buffers (partition order)."""
    return assembler(global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec,
                     reuse=False)(list(shards))


def shards_of(array) -> list:
    """A global array's per-partition single-device buffers (this process's), in
    partition order (the order its executable's device assignment gave them)."""
    return array._arrays


def move_blocks(global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec, shards,
                partitions):
    """One global array laid out by ``spec`` from existing single-device buffers:
    ``shards[i]`` holds partition ``partitions[i]``'s block, on its device already (then
    it is reused as it is) or on another (then it is copied there, device to device)."""
    st = lib._state
    aval = st["core"].ShapedArray(tuple(global_shape), np.dtype(dtype))
    sharding = _named_sharding(mesh_devices, mesh_shape, axis_names, spec)
    devs = [st["devices"][mesh_devices[p]] for p in partitions]
    try:
        return st["J"].batched_device_put(aval, sharding, list(shards), devs, True, False,
                                          st["J"].HostBufferSemantics.ZERO_COPY, True)
    except Exception as e:
        _raise_runtime_failure(e, "resharding")


def global_array(global_shape, dtype, mesh_devices, mesh_shape, axis_names, spec, shards):
    """One global array from this process's per-partition buffers (partition order), with
    no copy (they must already be on their partitions' devices)."""
    st = lib._state
    aval = st["core"].ShapedArray(tuple(global_shape), np.dtype(dtype))
    return st["J"].ArrayImpl(aval, _named_sharding(mesh_devices, mesh_shape, axis_names, spec),
                             list(shards), True, True)


def sharding_object(mesh_devices, mesh_shape, axis_names, spec):
    """The jax sharding of arrays laid out by ``spec`` over the mesh (one object per
    mesh and spec: compare by identity)."""
    return _named_sharding(mesh_devices, mesh_shape, axis_names, spec)


def sharding_of(array):
    """The jax sharding object of a global array."""
    return array.sharding


def block_until_ready(buffers) -> None:
    """Waits until every buffer (single-device or global) is computed."""
    st = lib._state
    if buffers:
        wait_ready(buffers)
        try:
            st["xc"].batched_block_until_ready(list(buffers))
        except Exception as e:
            _raise_runtime_failure(e, "waiting for results")
