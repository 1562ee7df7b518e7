"""Running executables: the functions that call a compiled program on buffers and
wrap its results (:func:`executor`, :func:`sharded_executor`), and JAX's own C++
dispatch around one (:func:`dispatcher`)."""
from __future__ import annotations

import numpy as np

from . import lib
from .buffers import _named_sharding, _put, _single
from .callbacks import is_synchronous
from .errors import _raise_runtime_failure


def _execute(exe, buffers):
    """``exe.execute_sharded(buffers)`` (a :class:`SynchronousExecutable` waits for its
    callbacks), a runtime failure raised as :func:`_raise_runtime_failure` says."""
    try:
        return exe.execute_sharded(buffers)
    except Exception as e:
        _raise_runtime_failure(e, "a program")


def result_handlers(outputs, device_index: int) -> list:
    """C++ builders of the result arrays of a single-partition program whose outputs are
    ``[(shape, dtype), ...]`` on device ``device_index``, for ``consume_with_handlers``
    (JAX's path; ~1.5 µs a call cheaper than disassembling)."""
    st = lib._state
    make = st["result_handler"]
    return [make(st["core"].ShapedArray(tuple(shape), np.dtype(dt)), _single(device_index))
            for shape, dt in outputs]


def executor(exe, outputs, device_index: int):
    """``run(buffers) -> [buffer per output]`` for a single-partition executable whose
    outputs are ``[(shape, dtype), ...]``; the result arrays are built by
    :func:`result_handlers` (``run.handlers``: a caller may call
    ``exe.execute_sharded(buffers).consume_with_handlers(run.handlers)`` itself, one frame
    less, when ``exe`` is not :func:`is_synchronous`)."""
    handlers = result_handlers(outputs, device_index)
    if not is_synchronous(exe):  # one device, no collectives: nothing for _execute to convert
        execute = exe.execute_sharded

        def run(buffers):
            return execute(buffers).consume_with_handlers(handlers)
    else:
        def run(buffers):
            return _execute(exe, buffers).consume_with_handlers(handlers)
    run.handlers = handlers
    return run


#: dtypes JAX's C++ dispatch would narrow when its x64 mode is off (nxpy keeps them)
_WIDE = {np.dtype(d) for d in (np.int64, np.uint64, np.float64, np.complex128)}


def dispatcher(exe, inputs, outputs, device_index: int):
    """JAX's own C++ dispatch (the one ``jax.jit`` calls go through) around a
    single-partition executable: ``call(*datas) -> [buffer per output]`` where each data is
    a buffer on the device or a NumPy array of the input's dtype (copied in by C++, on
    every call). The copies are not counted here: the caller counts the arrays it hands
    over (``telemetry.tally`` on its hot path), C++ copies them out of Python's sight.
    ``inputs``/``outputs``: ``[(shape, dtype), ...]``. The first call with a new kind of
    arguments runs :func:`executor`'s path and teaches the C++ side. None when the program
    has 64-bit inputs (JAX's dispatch narrows them unless its x64 mode is on) or host
    callbacks (its calls wait for them), or this jaxlib lacks the pieces."""
    st = lib._state
    if any(np.dtype(dt) in _WIDE for _, dt in inputs) or is_synchronous(exe):
        return None
    try:
        from jax._src import tree_util
        from jax._src.interpreters import pxla
        make, fastpath = st["J"].pjit, pxla.MeshExecutableFastpathData
        keys, registry, shard_arg = (pxla.JitGlobalCppCacheKeys(), tree_util.dispatch_registry,
                                     pxla.cc_shard_arg)
        out_tree = tree_util.tree_structure([0] * len(outputs))
    except (ImportError, AttributeError):  # pragma: no cover - another jaxlib
        return None
    execute = executor(exe, outputs, device_index)
    single = _single(device_index)
    array = st["J"].ArrayImpl
    core = st["core"]
    n = len(inputs)
    data = fastpath(exe, out_tree, [single] * n, [single] * len(outputs),
                    [core.ShapedArray(tuple(s), np.dtype(d)) for s, d in outputs],
                    [True] * len(outputs), [True] * n, [None] * n, [])

    def cache_miss(*datas):
        ours = all(type(d) is np.ndarray or (type(d) is array and d.sharding == single)
                   for d in datas)
        outs = execute([d if type(d) is array else _put(d, device_index) for d in datas])
        return outs, (data if ours else None), False

    cpp = make("nxpy", None, cache_miss, [], [], keys, registry, shard_arg)
    return cpp


def sharded_executor(exe, outputs, mesh_devices, mesh_shape, axis_names):
    """``run(global arrays) -> [global array per output]`` for an SPMD executable whose
    outputs are ``[(global shape, dtype, partition spec), ...]``; see :func:`executor`."""
    st = lib._state
    shardings = [_named_sharding(mesh_devices, mesh_shape, axis_names, spec)
                 for _, _, spec in outputs]
    make = st["result_handler"]
    handlers = [make(st["core"].ShapedArray(tuple(shape), np.dtype(dt)), sh)
                for (shape, dt, _), sh in zip(outputs, shardings)]

    def run(arrays):
        return _execute(exe, arrays).consume_with_handlers(handlers)
    run.shardings = shardings  # the results' sharding objects, comparable by identity
    run.handlers = handlers
    # no host callbacks to wait for: a caller's hot path may call PJRT itself
    run.raw = None if is_synchronous(exe) else exe.execute_sharded
    return run
