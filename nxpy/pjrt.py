"""Every jaxlib touchpoint of nxpy, in one file, version-checked: the PJRT client, its
devices, compiling, buffers, executing. It imports nothing else of nxpy, so any layer can
ask it about devices (``nx.Mesh`` does) and the EXLA compiler builds on it.

jaxlib's PJRT client methods (``compile_and_load``, ``execute_sharded``,
``batched_device_put``) are undocumented, so nxpy pins jax/jaxlib 0.10.2 and an
upgrade touches only this module.

Host CPU devices: nxpy asks XLA for ``NXPY_CPU_DEVICES`` host devices (default 8)
before the client starts, so a 2x2 or 2x4 mesh works with no flags.
"""
from __future__ import annotations

import os
import threading
import weakref

import numpy as np

SUPPORTED_VERSION = "0.10.2"
DEFAULT_CPU_DEVICES = 8

_lock = threading.Lock()
_state: dict = {}


def _import():
    import jax
    import jaxlib
    if jax.__version__ != SUPPORTED_VERSION or jaxlib.__version__ != SUPPORTED_VERSION:
        raise ImportError(f"nxpy's EXLA compiler needs jax=={SUPPORTED_VERSION} and "
                          f"jaxlib=={SUPPORTED_VERSION}, found jax {jax.__version__} and "
                          f"jaxlib {jaxlib.__version__}: pip install "
                          f"'jax=={SUPPORTED_VERSION}' 'jaxlib=={SUPPORTED_VERSION}'")
    return jax


def requested_cpu_devices() -> int:
    v = os.environ.get("NXPY_CPU_DEVICES", str(DEFAULT_CPU_DEVICES))
    try:
        n = int(v)
        if n < 1:
            raise ValueError
    except ValueError:
        raise ValueError(f"NXPY_CPU_DEVICES must be a positive integer, got {v!r}") from None
    return n


def _client():
    st = _state
    if "client" in st:
        return st["client"]
    with _lock:
        if "client" in st:
            return st["client"]
        jax = _import()
        try:
            jax.config.update("jax_num_cpu_devices", requested_cpu_devices())
            st["configured"] = True
        except RuntimeError:  # jax created its CPU client before nxpy: keep its devices
            st["configured"] = False
        from jax import core
        from jax.extend import backend as jeb
        from jax.sharding import SingleDeviceSharding
        from jaxlib import _jax, xla_client
        client = jeb.get_backend("cpu")
        st.update(jax=jax, core=core, jeb=jeb, xc=xla_client, J=_jax,
                  SingleDeviceSharding=SingleDeviceSharding,
                  devices=client.local_devices(), single={})
        st["client"] = client
        return client


def how_to_get_devices(needed: int) -> str:
    """Advice for a mesh larger than the client, depending on who started XLA."""
    if _state.get("configured", True):
        return (f"on CPU, set NXPY_CPU_DEVICES={needed} (or more) in the environment before "
                f"nxpy starts XLA (the default is {DEFAULT_CPU_DEVICES})")
    return (f"jax created its CPU client before nxpy could configure it, so NXPY_CPU_DEVICES "
            f"had no effect: import nxpy and call nxpy.pjrt.devices() before "
            f"using jax, or set XLA_FLAGS=--xla_force_host_platform_device_count={needed}")


def devices() -> list:
    _client()
    return _state["devices"]


def device_count() -> int:
    return len(devices())


def platform() -> str:
    return _client().platform


# --------------------------------------------------------------------------------------
# Compile
# --------------------------------------------------------------------------------------
class CompileError(RuntimeError):
    """XLA rejected a module nxpy emitted (a bug in nxpy or a plugin's lowering)."""


def compile(module_text: str, device_ids, *, spmd: bool = False):
    """Compiles MLIR text for the given device positions (one per partition)."""
    client = _client()
    st = _state
    devs = [st["devices"][i] for i in device_ids]
    n = len(devs)
    opts = st["jeb"].get_compile_options(num_replicas=1, num_partitions=n,
                                         device_assignment=np.array(devs).reshape(1, n))
    if spmd:
        opts.executable_build_options.use_spmd_partitioning = True
        opts.executable_build_options.use_shardy_partitioner = True
    try:
        return client.compile_and_load(module_text, st["xc"].DeviceList(tuple(devs)), opts)
    except Exception as e:  # XLA's own error text, with the module for debugging
        raise CompileError(f"XLA could not compile the module nxpy emitted: {e}\n\n"
                           f"{module_text}") from None


def hlo_text(exe) -> str:
    return exe.get_hlo_text()


# --------------------------------------------------------------------------------------
# Buffers
# --------------------------------------------------------------------------------------
def _single(device_index: int):
    s = _state["single"].get(device_index)
    if s is None:
        s = _state["single"][device_index] = _state["SingleDeviceSharding"](
            _state["devices"][device_index])
    return s


def to_device(array: np.ndarray, device_index: int = 0):
    """A single-device buffer holding ``array`` (64-bit types kept as they are)."""
    _client()
    st = _state
    array = np.ascontiguousarray(array).reshape(np.shape(array))  # keeps 0-d arrays 0-d
    aval = st["core"].ShapedArray(array.shape, array.dtype)
    return st["J"].batched_device_put(aval, _single(device_index), [array],
                                      [st["devices"][device_index]], True, False,
                                      st["J"].HostBufferSemantics.ZERO_COPY, True)


def to_host(buffer) -> np.ndarray:
    return np.asarray(buffer)


def device_index_of(buffer) -> int:
    return _state["devices"].index(next(iter(buffer.devices())))


def executor(exe, outputs, device_index: int):
    """``run(buffers) -> [buffer per output]`` for a single-partition executable whose
    outputs are ``[(shape, dtype), ...]``. The result arrays are built in C++ by result
    handlers made here once (JAX's path; ~1.5 µs a call cheaper than disassembling)."""
    st = _state
    handlers = [st["J"].array_result_handler(st["core"].ShapedArray(tuple(shape), np.dtype(dt)),
                                             _single(device_index), True, True)
                for shape, dt in outputs]

    def run(buffers):
        return exe.execute_sharded(buffers).consume_with_handlers(handlers)
    return run


def _named_sharding(mesh_devices, mesh_shape, axis_names, spec):
    key = (tuple(mesh_devices), tuple(mesh_shape), tuple(axis_names), spec)
    cache = _state.setdefault("named", {})
    s = cache.get(key)
    if s is None:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec
        devs = np.empty(len(mesh_devices), dtype=object)
        devs[:] = [_state["devices"][i] for i in mesh_devices]
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
    st = _state
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


def sharded_executor(exe, outputs, mesh_devices, mesh_shape, axis_names):
    """``run(global arrays) -> [global array per output]`` for an SPMD executable whose
    outputs are ``[(global shape, dtype, partition spec), ...]``; see :func:`executor`."""
    st = _state
    shardings = [_named_sharding(mesh_devices, mesh_shape, axis_names, spec)
                 for _, _, spec in outputs]
    handlers = [st["J"].array_result_handler(st["core"].ShapedArray(tuple(shape), np.dtype(dt)),
                                             sh, True, True)
                for (shape, dt, _), sh in zip(outputs, shardings)]

    def run(arrays):
        return exe.execute_sharded(arrays).consume_with_handlers(handlers)
    run.shardings = shardings  # the results' sharding objects, comparable by identity
    return run


def shards_of(array) -> list:
    """A global array's per-partition single-device buffers, in partition order (the
    order its executable's device assignment gave them)."""
    return array._arrays


def block_until_ready(buffers) -> None:
    """Waits until every buffer (single-device or global) is computed."""
    st = _state
    if buffers:
        st["xc"].batched_block_until_ready(list(buffers))
