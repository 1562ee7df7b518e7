"""The EXLA compiler: Expr graph → StableHLO text → PJRT executable, cached by ``defn``."""
from __future__ import annotations

import numpy as np

from ... import pjrt, shape as S, telemetry
from ...backend import get_backend
from ...defn import tree as tree_mod
from ...defn.compiler import Compiler, register_compiler_factory
from ...tensor import Tensor, template
from .lowering import default_platform, lower_module, lowers
from .sharded import compile_replicated, compile_sharded, uses_shard_map

__all__ = ["ExlaCompiler"]


def _device_option(opts) -> int:
    dev = opts.get("device_id")
    if dev is None:
        return pjrt.default_device()
    n = pjrt.device_count()
    if S.as_int(dev) is None or not 0 <= S.as_int(dev) < n:
        raise ValueError(f"option device_id must be an integer in [0, {n}) (the devices of "
                         f"the {pjrt.platform()} client), got {dev!r}")
    if not pjrt.is_local(dev):
        raise ValueError(f"option device_id={dev} names a device of process "
                         f"{pjrt.process_of(dev)}; this is process {pjrt.process_index()} "
                         f"(its devices: {pjrt.local_positions()})")
    return dev


class ExlaCompiler(Compiler):
    """Compiles with XLA through PJRT. Option ``device_id``: the device to run on."""

    name = "exla"
    options = frozenset({"device_id"})

    def supports(self, op: str) -> bool:
        """Whether ``op`` has a lowering on the platform nxpy's client runs on (ops with a
        portable implementation and none there are traced as their composition:
        :func:`nxpy.defn.core.expansions`; e.g. the linear-algebra solvers on ``tpu``)."""
        return lowers(op, default_platform())

    def executable(self, text: str, dev: int):
        """The executable of ``text`` on device ``dev``: compiled once per process, whichever
        Jit, ``compile`` or eager op asks for it (``nxpy.pjrt.compile`` keeps them)."""
        return pjrt.compile(text, [dev])

    def result_backend(self, opts):
        return get_backend("exla")

    def lower(self, graph, opts) -> str:
        """The module text of ``graph`` for nxpy's client's platform (lowered once per
        graph and platform)."""
        platform = default_platform()
        key = ("exla_module", platform)
        text = graph.cache.get(key)
        if text is None:
            with telemetry.timed("lower", key=id(graph)):
                text = graph.cache[key] = lower_module(graph, platform=platform)
        return text

    def compile(self, graph, opts):
        dev = _device_option(opts)
        meshes = uses_shard_map(graph)
        if meshes:  # a shard_map inside a plain jit: an SPMD program over its mesh
            if len(meshes) > 1:
                raise ValueError(f"one program can use one mesh, got {meshes}")
            return compile_replicated(graph, meshes[0], opts)
        text = self.lower(graph, opts)
        exe = self.executable(text, dev)
        backend = get_backend("exla")
        templates = [(t.shape, t.type, t.names, template(t.shape, t.type, t.names))
                     for t in graph.outputs]
        # device buffers go to PJRT's execute directly (cheaper than any dispatcher); host
        # arrays go through JAX's C++ dispatch, which copies them in (faster than Python)
        outputs = [(t.shape, t.type.dtype) for t in graph.outputs]
        execute = pjrt.executor(exe, outputs, dev)
        cpp = None if graph.donated else pjrt.dispatcher(
            exe, [(p.shape, p.type.dtype) for p in graph.params], outputs, dev)
        move = backend.buffer_on
        array = pjrt.array_type()
        ndarray = np.ndarray
        single = len(templates) == 1
        (s0, t0, n0, k0) = templates[0] if single else (None,) * 4
        # no host callbacks to wait for: the hot path calls PJRT itself (no frame between)
        raw = None if pjrt.is_synchronous(exe) else exe.execute_sharded
        handlers = execute.handlers

        def tensors(outs):
            if single:  # no zip, no loop
                return [Tensor(outs[0], s0, t0, n0, backend, dev, k0)]
            return [Tensor(o, s, t, n, backend, dev, k)
                    for o, (s, t, n, k) in zip(outs, templates)]

        def run(args):  # any tensors (of any backend, anywhere), or caller's arrays
            bufs = []
            host = 0  # arrays JAX's dispatch copies in (counted here: it copies in C++)
            for a in args:
                if type(a) is ndarray:  # a caller's array (``takes_arrays``), dtype checked
                    bufs.append(a)
                    host += 1
                    continue
                d = a.data
                if type(d) is array and a.device_id == dev and a.backend is backend:
                    bufs.append(d)
                elif type(d) is ndarray and cpp is not None and d.dtype == a.type.dtype:
                    bufs.append(d)
                    host += 1
                else:
                    bufs.append(move(a, dev))  # counted where it is copied
            if host:
                telemetry.count("transfer_to_device", host)
                return tensors(cpp(*bufs))
            return tensors(execute(bufs))

        tree = graph.tree
        whole = single and tree is tree_mod.LEAF  # the result is the one output tensor

        def call(args):  # the hot path: tensors (defn checked their templates)
            bufs = []
            for a in args:
                d = a._data
                if type(d) is array and a.device_id == dev and a.backend is backend:
                    bufs.append(d)  # the common case: buffers of ours on `dev`
                else:
                    return run(args)[0] if whole else tree_mod.unflatten(tree, run(args))
            outs = (raw(bufs).consume_with_handlers(handlers) if raw is not None
                    else execute(bufs))
            if whole:
                return Tensor(outs[0], s0, t0, n0, backend, dev, k0)
            return tree_mod.unflatten(tree, tensors(outs))

        # call and call_arrays build a lone result inline (not through tensors()): one
        # frame less on the two hot paths
        def call_arrays(arrays):  # NumPy arrays (defn checked their shapes and dtypes)
            copied()  # every array is copied in: one C call counts them all
            outs = cpp(*arrays)
            if whole:
                return Tensor(outs[0], s0, t0, n0, backend, dev, k0)
            return tree_mod.unflatten(tree, tensors(outs))

        copied = None if cpp is None else telemetry.tally(
            "transfer_to_device", len(graph.params), call_arrays)
        run.module = text
        run.executable = exe
        run.memory_stats = lambda: pjrt.memory_stats(exe)
        run.copies_inputs = True  # results are fresh buffers: host arrays need no copy first
        run.takes_arrays = cpp is not None
        run.call = call
        run.call_arrays = call_arrays if cpp is not None else None
        return run

    def compile_sharded(self, graph, mesh, in_shardings, out_shardings, propagator, opts):
        """The sharded entry point (used by ``shard_jit``): an SPMD module over ``mesh``."""
        return compile_sharded(graph, mesh, in_shardings, out_shardings, propagator, opts)


register_compiler_factory("exla", ExlaCompiler)
