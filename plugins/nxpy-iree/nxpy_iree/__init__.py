"""nxpy-iree: an nxpy compiler plugin that compiles and runs nxpy programs with IREE.

Registered as the compiler ``iree`` through the ``nxpy.compilers`` entry point, so once
installed ``jit(f, compiler="iree")`` and ``@defn(compiler="iree")`` work. It uses only
nxpy's public plugin API:

* the Compiler protocol (:class:`nxpy.defn.Compiler`): ``defn`` traces the function and
  hands over the graph; this compiler declares no ``supports``, so the ops with a
  portable implementation (the linear-algebra primitives) reach it as compositions;
* :func:`nxpy.extend.lower_stablehlo` with ``custom_calls=False``: nxpy's own StableHLO,
  with no XLA custom-call target in it (an op that would need one, such as a host
  callback, is an error naming the op and this plugin), and ``stable_sort=False``
  (IREE's sort is not stable: sorts are lowered with a unique order);
* :func:`iree.compiler.compile_str` (``input_type="stablehlo"``) for the target backend
  (option ``target``, default ``llvm-cpu``), and :mod:`iree.runtime` on the driver
  (option ``driver``, default ``local-task``) to run it.

Compiled modules are cached per module text, so per argument templates (``defn`` already
keeps one program per templates; a second ``jit`` of the same function reuses the
compiled module). Results are tensors of the NumPy backend whose data stays in IREE's
buffer until read (:class:`OnIree`); passed to another program of this compiler, it
goes to IREE as it is.

>>> import nxpy as nx
>>> from nxpy.defn import jit
>>> jit(lambda x: nx.sum(x * 2), compiler="iree")(nx.tensor([1.0, 2.0])).tolist()
6.0
"""
from __future__ import annotations

import re
import threading

import iree.compiler as ic
import iree.runtime as ir
import numpy as np

import nxpy as nx
from nxpy.defn import Compiler
from nxpy.extend import Deferred, LoweringError, lower_stablehlo

__all__ = ["IreeCompiler", "IreeCompileError", "IreeUnsupported", "IREE_LIMITS", "UNSUPPORTED",
           "OnIree", "compile_module"]

#: nxpy ops this plugin does not run, with the reason (the plugin's declared unsupported
#: set; the README lists it). A graph using one is refused before IREE sees it, with a
#: NotImplementedError naming the op and the plugin (what the conformance kit reports as
#: unsupported).
_FFT = ("IREE 3.13's llvm-cpu does not legalize stablehlo.fft (the conformance kit's fft "
        "case fails with 'failed to legalize operation stablehlo.fft')")
_SCATTER = ("IREE's stablehlo.select_and_scatter puts the source at another position than "
            "XLA among equal window maxima (the conformance kit's int32 window_scatter_max "
            "case differs from EXLA): refused rather than silently different")
UNSUPPORTED = {**{op: _FFT for op in ("fft", "ifft", "fft2", "ifft2", "rfft", "irfft")},
               "window_scatter_max": _SCATTER, "window_scatter_min": _SCATTER}
_PADDED_WINDOW = ("XLA leaves a window's padded positions out, IREE (as the StableHLO spec "
                  "reads) reduces them as copies of the initial value, so with an initial "
                  "value that is not the reduction's identity the results differ: refused "
                  "rather than silently different (window_reduce without padding runs)")


def _refused(e):
    """What of node ``e`` of a graph this plugin does not run and why (beyond
    :data:`UNSUPPORTED`'s whole ops), or None: a ``window_reduce`` with padding (its
    reduction is the user's function, whose identity the plugin cannot know)."""
    padding = tuple(e.attrs.get("padding", ())) if e.op == "window_reduce" else ()
    if any(lo or hi for lo, hi in padding):
        return f"op {e.op!r} with padding {padding}: {_PADDED_WINDOW}"
    return None

#: the IREE flags every compile gets: keep f64 and i64 (IREE demotes them by default)
BASE_FLAGS = ("--iree-input-demote-f64-to-f32=false", "--iree-input-demote-i64-to-i32=false")


class IreeCompileError(RuntimeError):
    """IREE failed to compile a module nxpy lowered (names the StableHLO ops it reported)."""


class IreeUnsupported(NotImplementedError):
    """IREE lacks what a module needs: a math function its llvm-cpu target links from no
    library (``iree-lld: undefined symbol``: f64 ``cos``, ``tan``, ``asin``, ...), or one
    of the known compile failures of :data:`IREE_LIMITS`. A ``NotImplementedError``, which
    the conformance kit reports as an unsupported op."""


def _graph_nodes(graph):
    for e in graph.nodes:
        yield e
        for fn in getattr(e, "fns", None) or ():
            yield from _graph_nodes(fn)


class OnIree(Deferred):
    """The data of a result tensor still in IREE's device buffer (``array``, an
    ``iree.runtime.DeviceArray`` of ``device``): copied to the host the first time the
    tensor is read (``finish`` makes the tensor data of that copy), and passed to IREE as
    it is when the tensor is an argument of a program on the same device (no round trip
    through the host between calls)."""

    __slots__ = ("array", "device", "finish")

    def __init__(self, array, device, finish):
        self.array, self.device, self.finish = array, device, finish

    def resolve(self):
        # copied: to_host() maps IREE's buffer, whose memory IREE's allocator hands to a
        # later call's results once the DeviceArray is gone
        return self.finish(np.array(self.array.to_host(), copy=True))


_COMPILED: dict = {}  # (module text, target, flags) -> vmfb bytes, for the whole process
_LOCK = threading.Lock()


#: IREE compile failures on valid modules (XLA compiles and runs each), by what IREE
#: reports, with the case that showed them: reported as unsupported (``IreeUnsupported``)
#: with the reason, not as a failure of nxpy's module. Narrow on purpose: any other
#: compile failure stays an ``IreeCompileError``.
IREE_LIMITS = (
    (r"'iree_linalg_ext\.scatter' op shape of update value",
     "IREE's scatter takes no update window of another rank than the operand's (the "
     "conformance kit's indexed_add with update windows)"),
    (r"LLVM Translation failed for operation: builtin\.unrealized_conversion_cast",
     "IREE's llvm-cpu leaves an unrealized conversion in the f64 code it generates (the "
     "conformance kit's f64 eigh)"),
    (r"'arith\.subf' op requires the same type for all operands",
     "IREE's code generation produces an ill-typed arith.subf (the conformance kit's solve "
     "of a vector right-hand side through the portable fallback, whose module XLA "
     "compiles and runs)"),
)


def compile_module(text: str, target: str = "llvm-cpu", flags=()) -> bytes:
    """The IREE VM flatbuffer of StableHLO module ``text`` for ``target`` (cached)."""
    key = (str(text), target, tuple(flags))
    vmfb = _COMPILED.get(key)
    if vmfb is None:
        try:
            vmfb = ic.compile_str(str(text), input_type="stablehlo", target_backends=[target],
                                  extra_args=list(BASE_FLAGS) + list(flags))
        except ic.CompilerToolError as err:
            msg = str(err)
            # f64 math: a libm call its linker cannot resolve, or a math op its llvm-cpu
            # lowering leaves illegal (math.cbrt on f64)
            missing = sorted(set(re.findall(r"undefined symbol: (\w+)", msg))
                             | set(re.findall(r"failed to legalize operation 'math\.(\w+)'",
                                              msg)))
            if missing:
                raise IreeUnsupported(
                    f"IREE (nxpy-iree plugin, target {target}) has no implementation of the "
                    f"math function(s) {', '.join(missing)} the module needs (an undefined "
                    f"symbol when linking, or a math op it cannot lower: IREE approximates "
                    f"f32 math, not f64)") from None
            for pattern, why in IREE_LIMITS:
                if re.search(pattern, msg):
                    raise IreeUnsupported(f"IREE (nxpy-iree plugin, target {target}) cannot "
                                          f"compile this module: {why}") from None
            ops = sorted(set(re.findall(r"'(stablehlo\.[a-z_]+)'", msg)))
            first = next((ln.strip() for ln in msg.splitlines() if "error:" in ln), msg[:300])
            raise IreeCompileError(
                f"IREE (nxpy-iree plugin, target {target}) could not compile the module"
                f"{' (StableHLO ops named: ' + ', '.join(ops) + ')' if ops else ''}: "
                f"{first}") from None
        with _LOCK:
            _COMPILED[key] = vmfb
    return vmfb


class IreeCompiler(Compiler):
    """nxpy programs compiled by IREE. Options: ``target`` (IREE target backend, default
    ``llvm-cpu``), ``driver`` (IREE runtime driver, default ``local-task``),
    ``target_cpu`` (llvm-cpu's CPU, default ``host``), ``flags`` (more iree-compile
    flags, a tuple of str)."""

    name = "iree"
    options = frozenset({"target", "driver", "target_cpu", "flags"})

    def __init__(self):
        self._devices = {}
        self._lock = threading.Lock()

    def device(self, driver: str):
        """The IREE device of ``driver`` (one per driver, made on first use)."""
        with self._lock:
            dev = self._devices.get(driver)
            if dev is None:
                dev = self._devices[driver] = ir.get_driver(driver).create_default_device()
            return dev

    def lower(self, graph) -> str:
        """The StableHLO of ``graph``, with no custom calls (refused ops named)."""
        key = ("iree_module",)
        text = graph.cache.get(key)
        if text is None:
            nodes = list(_graph_nodes(graph))
            for op in sorted({e.op for e in nodes} & set(UNSUPPORTED)):
                raise NotImplementedError(f"the nxpy-iree plugin (compiler 'iree') does not run "
                                          f"op {op!r}: {UNSUPPORTED[op]}")
            for what in filter(None, map(_refused, nodes)):
                raise NotImplementedError(f"the nxpy-iree plugin (compiler 'iree') does not run "
                                          f"{what}")
            try:
                # IREE's stablehlo.sort ignores is_stable and its chlo.top_k orders
                # neither NaN nor ties as XLA: nxpy's forms with a unique order
                text = graph.cache[key] = lower_stablehlo(graph, custom_calls=False,
                                                          stable_sort=False, compiler="iree")
            except LoweringError as err:
                raise LoweringError(f"nxpy-iree plugin: {err}") from None
        return text

    def compile(self, graph, opts):
        target = opts.get("target", "llvm-cpu")
        driver = opts.get("driver", "local-task")
        flags = tuple(opts.get("flags", ()))
        if target == "llvm-cpu":
            flags = (f"--iree-llvmcpu-target-cpu={opts.get('target_cpu', 'host')}",) + flags
        try:
            vmfb = compile_module(self.lower(graph), target, flags)
        except IreeUnsupported as err:
            ops = sorted({f"{e.op} ({e.type})" for e in _graph_nodes(graph)
                          if e.op in str(err) and e.type is not None})
            raise IreeUnsupported(f"{err}; the ops: {', '.join(ops) or '?'}") from None
        config = ir.Config(device=self.device(driver))
        ctx = ir.SystemContext(config=config)
        ctx.add_vm_module(ir.VmModule.copy_buffer(ctx.instance, vmfb))
        main = ctx.modules.nxpy["main"]
        backend = self.result_backend(opts)
        outs = [(t.shape, t.type, t.names) for t in graph.outputs]
        dtypes = [p.type.dtype for p in graph.params]
        lock = threading.Lock()  # one call at a time per program (IREE's invoker state)

        device = config.device

        def arg(a, dtype):
            data = getattr(a, "raw_data", None)  # a result of an earlier call, unread
            if type(data) is OnIree and data.device is device:
                return data.array
            arr = a if isinstance(a, np.ndarray) else a.to_numpy()
            return np.asarray(arr, dtype=dtype, order="C")  # 0-d stays 0-d

        def result(r, shape, type_, names):
            if not hasattr(r, "to_host"):  # a host value
                return backend.from_numpy(np.asarray(r).reshape(shape), type_, names)

            def finish(arr):
                return backend.from_numpy(arr.reshape(shape), type_, names).data
            return nx.Tensor(OnIree(r, device, finish), shape, type_, names, backend)

        def run(args):
            arrays = [arg(a, d) for a, d in zip(args, dtypes)]
            with lock:
                res = main(*arrays)
            if not isinstance(res, (tuple, list)):
                res = (res,) if res is not None else ()
            return [result(r, s, t, n) for r, (s, t, n) in zip(res, outs)]

        run.module = vmfb
        run.copies_inputs = True
        run.takes_arrays = True
        return run

    def result_backend(self, opts):
        return nx.get_backend("numpy")
