"""The EXLA compiler: Expr graph → StableHLO text → PJRT executable, cached by ``defn``."""
from __future__ import annotations

from ... import pjrt
from ...backend import get_backend
from ...defn.compiler import Compiler, register_compiler_factory
from ...tensor import Tensor
from .lowering import lower_module
from .sharded import compile_replicated, compile_sharded, uses_shard_map

__all__ = ["ExlaCompiler"]


def _device_option(opts) -> int:
    dev = opts.get("device_id", 0)
    n = pjrt.device_count()
    if isinstance(dev, bool) or not isinstance(dev, int) or not 0 <= dev < n:
        raise ValueError(f"option device_id must be an integer in [0, {n}) (the devices of "
                         f"the {pjrt.platform()} client), got {dev!r}")
    return dev


class ExlaCompiler(Compiler):
    """Compiles with XLA through PJRT. Option ``device_id``: the device to run on."""

    name = "exla"
    options = frozenset({"device_id"})

    #: executables by (module text, device): the same program is compiled once per process,
    #: whichever Jit, ``compile`` or eager op asks for it
    _executables: dict = {}

    def executable(self, text: str, dev: int):
        key = (text, dev)
        exe = self._executables.get(key)
        if exe is None:
            exe = self._executables[key] = pjrt.compile(text, [dev])
        return exe

    def result_backend(self, opts):
        return get_backend("exla")

    def lower(self, graph, opts) -> str:
        return lower_module(graph)

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
        templates = [(t.shape, t.type, t.names) for t in graph.outputs]
        execute = pjrt.executor(exe, [(t.shape, t.type.dtype) for t in graph.outputs], dev)
        move = backend.buffer_on

        def run(args):
            bufs = [a.data if a.backend is backend and a.device_id == dev else move(a, dev)
                    for a in args]
            outs = execute(bufs)
            return [Tensor(o, s, t, n, backend, dev) for o, (s, t, n) in zip(outs, templates)]

        run.module = text
        run.executable = exe
        return run

    def compile_sharded(self, graph, mesh, in_shardings, out_shardings, propagator, opts):
        """The sharded entry point (used by ``shard_jit``): an SPMD module over ``mesh``."""
        return compile_sharded(graph, mesh, in_shardings, out_shardings, propagator, opts)


register_compiler_factory("exla", ExlaCompiler)
