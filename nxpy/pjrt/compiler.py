"""Compiling: MLIR text to a loaded executable, once per process (the in-process
cache), through the persistent cache when one is set, and with host callbacks; the
executables' memory statistics and HLO."""
from __future__ import annotations

import threading
import warnings
import weakref

import numpy as np

from .. import telemetry
from ..cache import PROCESS_FACTOR, LockedCache, program_cache_size
from . import lib
from .callbacks import _HOST_CALLBACK_MARK, _compile_with_host_callbacks
from .client import _client
from .disk_cache import _digest, _disk_cache
from .distributed import ProcessLostError
from .errors import _compiling


#: executables by (module text, devices, SPMD): each program compiles once per process
_EXECUTABLES = LockedCache(PROCESS_FACTOR * program_cache_size())


def lapack_ready() -> None:
    """Makes the LAPACK custom-call targets jaxlib ships for CPU (``lapack_spotrf_ffi``,
    ...) runnable: importing jax registers them with XLA's CPU FFI registry
    (``jax._src.lax.linalg.register_module_custom_calls(jaxlib.lapack)``), but their
    LAPACK function pointers are only bound by ``jaxlib.cpu._lapack.initialize()`` (from
    scipy's ``cython_lapack``), which JAX calls when it first lowers a linalg op. Running a
    module that calls them before that crashes the process (a null function pointer), so
    :func:`compile` calls this for every module that names a ``lapack_`` target."""
    if lib._state.get("lapack"):
        return
    _client()
    from jax._src.lax import linalg as _jax_linalg  # noqa: F401 - registers the FFI targets
    from jaxlib import lapack
    lapack._lapack.initialize()
    lib._state["lapack"] = True


def compile(module_text: str, device_ids, *, spmd: bool = False):
    """The executable of MLIR text for the given device positions (one per partition):
    compiled once per process (concurrent callers wait for the one compile), and loaded
    from the persistent cache when one is set (:func:`set_cache_dir`)."""
    key = (module_text, tuple(int(d) for d in device_ids), bool(spmd))
    own = getattr(module_text, "executables", None)
    if own is not None:  # a program with callbacks: the text holds its executables
        return own.get(key[1:], lambda: _callback_executable(module_text, key))
    return _EXECUTABLES.get(key, lambda: _compile_or_load(module_text, key[1], spmd))


def memory_stats(executable) -> dict:
    """The device memory a compiled executable reserves, from XLA's buffer assignment
    (``LoadedExecutable.get_compiled_memory_stats``), in bytes: ``argument``, ``output``,
    ``alias`` (outputs written in place of donated arguments), ``temp`` (everything the
    program allocates while it runs, loop carries included) and ``generated_code``.

    >>> import nxpy as nx
    >>> from nxpy.defn import compile
    >>> f = compile(lambda x: x * 2, nx.template((1000,), "f32"), compiler="exla")
    >>> memory_stats(f._run.executable)["argument"]
    4000
    """
    m = executable.get_compiled_memory_stats()
    return {"argument": int(m.argument_size_in_bytes), "output": int(m.output_size_in_bytes),
            "alias": int(m.alias_size_in_bytes), "temp": int(m.temp_size_in_bytes),
            "generated_code": int(m.generated_code_size_in_bytes)}


#: executables of programs with host callbacks, held by the texts that lowered them
#: (CallbackModule.executables) and found here by equal texts (equal print_values)
_CALLBACK_EXECUTABLES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_callback_executables_lock = threading.Lock()


def _callback_executable(module_text, key):
    key = (str(module_text),) + key[1:]  # a plain copy: the text holds its executable
    with _callback_executables_lock:
        exe = _CALLBACK_EXECUTABLES.get(key)
    if exe is None:
        exe = _compile_or_load(module_text, key[1], key[2])
        with _callback_executables_lock:
            exe = _CALLBACK_EXECUTABLES.setdefault(key, exe)
    return exe


def _compile_or_load(module_text, device_ids, spmd):
    client = _client()
    st = lib._state
    if "lapack_" in module_text and not st.get("lapack"):
        lapack_ready()
    devs = [st["devices"][i] for i in device_ids]
    n = len(devs)
    opts = st["jeb"].get_compile_options(num_replicas=1, num_partitions=n,
                                         device_assignment=np.array(devs).reshape(1, n))
    if spmd:
        opts.executable_build_options.use_spmd_partitioning = True
        opts.executable_build_options.use_shardy_partitioner = True
    device_list = st["xc"].DeviceList(tuple(devs))
    if _HOST_CALLBACK_MARK in module_text:
        return _compile_with_host_callbacks(client, module_text, device_list, opts, device_ids)
    disk = _disk_cache()
    if disk is not None:
        digest = _digest(module_text, opts, devs)
        payload = disk.load(digest)
        if payload is not None:
            try:
                exe = client.deserialize_executable(payload, device_list, opts)
            except ProcessLostError:
                raise
            except Exception as e:  # an entry of another jaxlib, or damaged past the checks
                warnings.warn(f"nxpy: the cached executable {digest[:16]}... in {disk.root} "
                              f"could not be loaded ({type(e).__name__}: {e}); compiling it "
                              f"again", RuntimeWarning, stacklevel=2)
            else:
                telemetry.event("disk_hit", key=digest)
                return exe
        telemetry.event("disk_miss", key=digest)
    with _compiling(module_text):
        exe = client.compile_and_load(module_text, device_list, opts)
    if disk is not None:
        disk.store(digest, client.serialize_executable(exe))
    return exe


def hlo_text(exe) -> str:
    return exe.get_hlo_text()
