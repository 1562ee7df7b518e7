"""Host callbacks (``print_value``, ``hook``, ``runtime_call``): their registration
(:func:`host_callback`), the module texts that hold them (:class:`CallbackModule`), and
compiling a module that calls them (:class:`SynchronousExecutable`: its calls wait for
the callbacks)."""
from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from ..cache import PROCESS_FACTOR, LockedCache, program_cache_size, put_bounded
from . import errors
from .client import requested_platform
from .errors import _compiling


#: jaxlib's typed-FFI handlers that call a Python function given at compile time
_CALLBACK_TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "cuda": "xla_ffi_python_gpu_callback",
                     "rocm": "xla_ffi_python_gpu_callback"}
_HOST_CALLBACK_MARK = "xla_ffi_python_"  # both targets start so


class HostCallback:
    """A registered host callback: ``call(device_position, *arrays)`` returning None or the
    result arrays (exactly the custom call's result shapes and dtypes), named in modules by
    ``key`` (a number never given to another callback in this process). It stays
    registered while this object is alive; the module texts that name it
    (:class:`CallbackModule`) and the executables compiled from them hold it, so it goes
    with the last program that could call it (and so does whatever ``call`` holds)."""

    __slots__ = ("key", "call", "__weakref__")

    def __init__(self, key: int, call):
        self.key, self.call = key, call

    def __repr__(self):
        return f"<host callback {self.key}>"


class CallbackModule(str):
    """Module text that calls host callbacks, holding them (``callbacks``): whoever keeps
    the text (a graph's lowering cache, a compiled program's ``module``) keeps its
    callbacks registered, so compiling it again always finds them. Its executables are
    cached on the text itself (``executables``), not in the process-wide cache: no other
    program names these callbacks, so the executables (and what the callbacks hold) go
    with the text, when the function that lowered it and its programs are dropped. A
    copy (``str(text)``, a slice) names the same keys but holds nothing.

    >>> cb = host_callback(("doc", 1), lambda device, x: None)
    >>> text = CallbackModule("module {}", [cb, cb])
    >>> text == "module {}", text.callbacks == (cb,), type(str(text)) is str
    (True, True, True)
    """

    def __new__(cls, text: str, callbacks):
        self = super().__new__(cls, text)
        self.callbacks = tuple({cb.key: cb for cb in callbacks}.values())
        self.executables = LockedCache(PROCESS_FACTOR * program_cache_size())
        return self


def module_text(text: str, callbacks) -> str:
    """``text`` as it goes to :func:`compile`: a :class:`CallbackModule` holding
    ``callbacks`` (the :class:`HostCallback` objects the module names), or ``text`` itself
    when there are none."""
    return CallbackModule(text, callbacks) if callbacks else text


# registered callbacks, while alive (held by the texts and executables that use them)
_callbacks: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # key → HostCallback
_callback_keys: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # identity → same
_next_callback_key = itertools.count(1)  # never reused: a stale text cannot call another's
_callback_lock = threading.Lock()


def host_callback_target(platform: str | None = None) -> str:
    """The custom-call target of a host callback on ``platform`` (default: this
    process's): jaxlib's ``xla_ffi_python_{cpu,gpu}_callback`` (what
    ``jax.debug.callback`` lowers to). Its operands, as nxpy emits them: a token, the
    callback's key (``ui64``), the partition id (``ui32``) and the values; its results: a
    token, then the callback's values.

    >>> host_callback_target("cuda")
    'xla_ffi_python_gpu_callback'
    """
    name = platform or requested_platform()
    if name not in _CALLBACK_TARGETS:
        raise NotImplementedError(f"host callbacks (print_value, hook, runtime_call) inside "
                                  f"compiled programs are not supported on the {name!r} "
                                  f"platform by nxpy (jaxlib implements them there with send/recv "
                                  f"channels); use the Evaluator")
    return _CALLBACK_TARGETS[name]


def host_callback(identity, call) -> HostCallback:
    """The registration of host callback ``call(device_position, *arrays)``; a module names
    it by its ``key``. While a registration of an equal ``identity`` (hashable) is alive it
    is returned again, so equal programs lower to equal text and compile once. Keep it
    with the module text (:func:`module_text`): it is registered only while held."""
    with _callback_lock:
        cb = _callback_keys.get(identity)
        if cb is None:
            cb = HostCallback(next(_next_callback_key), call)
            _callback_keys[identity] = cb
            _callbacks[cb.key] = cb
        return cb


def _compile_with_host_callbacks(client, module_text, device_list, opts, device_ids):
    """Compiles a module calling host callbacks. jaxlib takes the Python callables only
    with an MLIR module object (not text): the custom calls' ``index = 0`` names the
    single dispatcher passed here, which finds the callback by the key operand and the
    device by the partition id. The dispatcher holds the callbacks ``module_text`` holds
    (:class:`CallbackModule`), and jaxlib holds the dispatcher as long as the executable:
    they stay registered while it can run. Never stored in the persistent cache (the
    callbacks are objects of this process)."""
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib.mlir import ir
    positions = list(device_ids)
    held = {cb.key: cb for cb in getattr(module_text, "callbacks", ())}

    def dispatch(token, key, partition, *arrays):
        key = int(key)
        cb = held.get(key) or _callbacks.get(key)  # the latter: a copy of a module's text
        if cb is None:
            raise RuntimeError(
                f"nxpy: host callback {key} (print_value/hook/runtime_call) is no longer "
                f"registered: "
                f"this executable was compiled from a copy of a module's text after every "
                f"program and text holding its callbacks was dropped; compile the function "
                f"again (or keep the text nxpy lowered)")
        try:  # copies: the buffers belong to XLA and are reused once the callback returns
            results = cb.call(positions[int(partition)],
                              *[np.array(a, copy=True) for a in arrays])
        except Exception as e:  # XLA fails the execution with this text; the caller's
            # thread raises e itself (errors._raise_runtime_failure)
            n = next(errors._callback_error_numbers)
            put_bounded(errors._CALLBACK_ERRORS, n, e, 64)
            raise RuntimeError(f"nxpy host callback error {n}: a host callback (print_value/"
                               f"hook/runtime_call) raised {type(e).__name__}: {e}") from e
        return (token, *(results or ()))

    with _compiling(module_text), jax_mlir.make_ir_context():
        exe = client.compile_and_load(ir.Module.parse(module_text), device_list, opts,
                                      [dispatch])
    return SynchronousExecutable(exe)


class SynchronousExecutable:
    """An executable with host callbacks: :meth:`execute_sharded` returns once every
    device's run (and so every callback) is done, so what they print comes before the
    call returns (it waits on the runtime token, as JAX waits for effects). Everything
    else is the jaxlib executable's. Its type is the flag :func:`is_synchronous` reads:
    it goes with the object (a set of ``id()`` would pass it on to whichever executable
    next takes a freed one's address)."""

    __slots__ = ("executable", "__weakref__")

    def __init__(self, executable):
        self.executable = executable

    def execute_sharded(self, buffers):
        results = self.executable.execute_sharded(buffers, with_tokens=True)
        results.consume_token().block_until_ready()
        return results

    def __getattr__(self, name):
        return getattr(self.executable, name)


def is_synchronous(exe) -> bool:
    """Whether ``exe`` has host callbacks (its calls go through :func:`executor`, which
    waits for them); without, ``exe.execute_sharded(buffers).consume_with_handlers(
    result_handlers(...))`` is the whole of a call."""
    return type(exe) is SynchronousExecutable
