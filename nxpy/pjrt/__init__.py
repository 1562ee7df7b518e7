"""Every jaxlib touchpoint of nxpy, in this one package, version-checked: the PJRT
client, its devices, compiling (each program once per process, and through a persistent
cache across processes), buffers, executing. No module of nxpy outside it imports jax or
jaxlib. It imports only nxpy's foundations (telemetry, cache, watchdog), so any layer can
ask it about devices (``nx.Mesh`` does) and the EXLA compiler builds on it. Callers use
the package (``from nxpy import pjrt``; ``pjrt.devices()``), which re-exports the names
they need from its modules, each importing only those before it:

* ``lib``: the jax/jaxlib import, version checks, what differs between releases, and
  ``_state``, the package's one dict of process-wide state;
* ``distributed``: PJRT's distributed runtime (the coordination service, the watch of
  the processes, the key-value exchanges);
* ``client``: the client, its platform and devices (it starts the distributed runtime
  first when ``python -m nxpy.launch`` asked for it);
* ``errors``: the errors the runtime raises, and a runtime failure translated into one;
* ``disk_cache``: the persistent executable cache;
* ``callbacks``: host callbacks (registration, the module texts that hold them);
* ``compiler``: compiling, with the in-process executable cache (``_EXECUTABLES``);
* ``buffers``: transfers, global arrays and their shards;
* ``execute``: running executables (executors, JAX's C++ dispatch);
* ``jax_functions``: JAX functions lowered to StableHLO and JAX's pytrees, for
  ``nxpy.interop``.

jaxlib's PJRT client methods (``compile_and_load``, ``execute_sharded``,
``batched_device_put``) are undocumented, so nxpy supports a tested range of jax/jaxlib
releases (:data:`SUPPORTED`, checked at start-up) and every call that differs between
them is chosen by the running version in one place (:data:`DIFFERENCES`,
:func:`differences`).

Host CPU devices: nxpy asks XLA for ``NXPY_CPU_DEVICES`` host devices (default 8)
before the client starts, so a 2x2 or 2x4 mesh works with no flags.

Platforms: the client is chosen by ``NXPY_PLATFORM`` (or :func:`set_platform`): ``cpu``
(the default), or ``cuda``/``rocm``/``tpu`` when jaxlib's plugin for it is installed.

Several processes: :func:`initialize_distributed` (before the client starts) connects
to PJRT's distributed runtime (the coordination service; gloo collectives on CPU, NCCL
on GPUs); then device *positions* number the GLOBAL devices, in process order, and only
this process's devices (:func:`is_local`) hold buffers here. A lost process raises
:class:`ProcessLostError` in the others (:mod:`nxpy.watchdog`).
"""
from .lib import (DIFFERENCES, SUPPORTED, _state, _version, check_versions, differences,
                  jaxlib_version)
from .distributed import (ENV, DistributedError, ProcessLostError, allgather_bytes,
                          distributed_from_env, distributed_info, initialize_distributed,
                          shutdown_distributed)
from .client import (PLATFORMS, default_device, device_count, device_kind, devices,
                     how_to_get_devices, is_local, local_positions, oracle, platform,
                     position_of, process_count, process_index, process_of,
                     requested_platform, set_platform)
from .errors import BufferDeletedError, CompileError, raise_runtime_failure
from .disk_cache import _digest, cache_dir, set_cache_dir
from .callbacks import (CallbackModule, HostCallback, SynchronousExecutable, _callbacks,
                        host_callback, host_callback_target, is_synchronous, module_text)
from .compiler import compile, hlo_text, lapack_ready, memory_stats
from .buffers import (array_type, assemble, assembler, block_until_ready, device_index_of,
                      global_array, move_blocks, put_sharded, shards_of, to_device, to_host)
from .execute import dispatcher, executor, sharded_executor
from .jax_functions import (describe_array, is_jax_array, is_jax_tracer, jax_function, jvp_function,
                            lower_function, tree_flatten, tree_unflatten, vjp_function)

__all__ = [
    "SUPPORTED", "DIFFERENCES", "check_versions", "differences", "jaxlib_version",
    "ENV", "DistributedError", "ProcessLostError", "allgather_bytes", "distributed_from_env",
    "distributed_info", "initialize_distributed", "shutdown_distributed",
    "PLATFORMS", "default_device", "device_count", "device_kind", "devices",
    "how_to_get_devices", "is_local", "local_positions", "oracle", "platform", "position_of",
    "process_count", "process_index", "process_of", "requested_platform", "set_platform",
    "BufferDeletedError", "CompileError", "raise_runtime_failure",
    "cache_dir", "set_cache_dir",
    "CallbackModule", "HostCallback", "SynchronousExecutable", "host_callback",
    "host_callback_target", "is_synchronous", "module_text",
    "compile", "hlo_text", "lapack_ready", "memory_stats",
    "array_type", "assemble", "assembler", "block_until_ready", "device_index_of",
    "global_array", "move_blocks", "put_sharded", "shards_of", "to_device", "to_host",
    "dispatcher", "executor", "sharded_executor",
    "lower_function", "vjp_function", "jvp_function", "tree_flatten", "tree_unflatten",
    "describe_array", "is_jax_array", "is_jax_tracer", "jax_function",
    # private, for the tests and docs that look inside (state: read or changed in place,
    # never rebound; what a test rebinds it patches on the module that defines it)
    "_state", "_version", "_digest", "_callbacks",
]
