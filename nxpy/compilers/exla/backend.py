"""The EXLA eager backend: tensors live in PJRT device buffers; each eager op runs a
cached one-op compiled program (as Nx's EXLA.Backend does)."""
from __future__ import annotations

import numpy as np

from ... import pjrt
from ...cache import PROCESS_FACTOR, program_cache_size, put_bounded
from ...backend import Backend, register_backend_factory
from ...ops.core import replace_tensors, tensor_leaves
from ...defn.expr import EXPR, trace_fn
from ...format import format_array
from ...tensor import Tensor
from ...types import convert
from .buffers import Piece
from .compiler import ExlaCompiler
from .lowering import LOWERINGS

__all__ = ["ExlaBackend"]


def _key(a):
    if isinstance(a, Tensor):
        return ("T", a.shape, a.type, a.device_id)
    if isinstance(a, (list, tuple)):
        return tuple(_key(x) for x in a)
    return (type(a), a)  # 1, 1.0 and True build different programs


class ExlaBackend(Backend):
    """Tensors on an XLA device; ``t.device_id`` says which."""

    name = "exla"
    priority = 10
    compiler = "exla"

    def __init__(self):
        self._programs: dict = {}

    def from_numpy(self, array, type, names=None, device_id=None) -> Tensor:
        arr = convert(np.asarray(array), type)
        if device_id is None:
            device_id = pjrt.default_device()
        return Tensor(pjrt.to_device(arr, device_id), arr.shape, type, names, self, device_id)

    def from_tensor(self, t: Tensor) -> Tensor:
        if t.backend is self:
            return t
        return self.from_numpy(t.to_numpy(), t.type, t.names)

    def buffer_on(self, t: Tensor, device_id: int):
        """``t``'s data as a buffer on ``device_id``: its own buffer when it is an unsharded
        tensor of ours there, else a copy through the host."""
        if t.backend is self and t.device_id == device_id and t.sharding is None:
            return t.data
        return pjrt.to_device(convert(np.asarray(t.to_numpy()), t.type), device_id)

    def to_numpy(self, t: Tensor) -> np.ndarray:
        return pjrt.to_host(t.data)

    # --- sharded tensors: one global PJRT array over the mesh (as a jax.Array) ---------
    def shards(self, t: Tensor) -> list:
        mesh = t.sharding.mesh
        local = t.sharding.local_shape(t.shape)
        return [Tensor(b, local, t.type, t.names, self, mesh.devices[p])
                for p, b in zip(mesh.local_partitions, pjrt.shards_of(t.data))]

    def from_shards(self, shards, shape, type, names, sharding) -> Tensor:
        mesh = sharding.mesh
        bufs = [self.buffer_on(s, mesh.devices[p]) for s, p in zip(shards, mesh.local_partitions)]
        array = pjrt.global_array(shape, type.dtype, mesh.devices, mesh.shape, mesh.axis_names,
                                  sharding.entries(len(shape)), bufs)
        return Tensor(array, tuple(shape), type, names, self, None, sharding=sharding)

    def place(self, array, type, names, sharding) -> Tensor:
        mesh = sharding.mesh
        arr = convert(np.asarray(array), type)
        parts = sharding.shard_array(arr, partitions=mesh.local_partitions)
        g = pjrt.put_sharded(parts, arr.shape, arr.dtype, mesh.devices, mesh.shape,
                             mesh.axis_names, sharding.entries(arr.ndim), mesh.local_partitions)
        return Tensor(g, arr.shape, type, names, self, None, sharding=sharding)

    def reshard(self, t: Tensor, sharding):
        """``t`` laid out as ``sharding`` over the same mesh by moving whole blocks, when
        every block the new layout puts on a device of this process is a block of the old
        layout on one of them (a permutation of the blocks, as P('x', 'y') -> P('y',
        'x')): blocks that stay are reused, the others copied device to device (as JAX
        does). None otherwise (the caller compiles the move)."""
        mesh, rank = t.sharding.mesh, len(t.shape)
        old, new = t.sharding, sharding
        if old.local_shape(t.shape) != new.local_shape(t.shape):
            return None
        parts = mesh.local_partitions

        def block(sh, p):
            return tuple(sh.block_index(p, d) for d in range(rank))
        held = {block(old, q): i for i, q in enumerate(parts)}
        bufs = pjrt.shards_of(t.data)
        picked = []
        for i, p in enumerate(parts):
            ix = block(new, p)
            if block(old, p) == ix:
                picked.append(bufs[i])  # stays on its device
            elif ix in held:
                picked.append(bufs[held[ix]])
            else:
                return None
        g = pjrt.move_blocks(t.shape, t.type.dtype, mesh.devices, mesh.shape, mesh.axis_names,
                             new.entries(rank), picked, parts)
        return Tensor(g, t.shape, t.type, t.names, self, None, sharding=sharding)

    def sharded_to_numpy(self, t: Tensor) -> np.ndarray:
        if not t.is_fully_addressable:  # this process's shards, if they hold it all
            return super().sharded_to_numpy(t)
        return pjrt.to_host(t.data, t.sharding.block_count)

    def block_until_ready(self, tensors) -> None:
        bufs = {}
        for t in tensors:
            d = t.raw_data
            d = d.whole.array if type(d) is Piece else d
            bufs[id(d)] = d
        pjrt.block_until_ready(list(bufs.values()))

    def inspect(self, t: Tensor) -> str:
        return format_array(self.to_numpy(t))

    def constant(self, out, value):
        arr = np.broadcast_to(convert(np.asarray(value), out.type), out.shape)
        return self.from_numpy(arr, out.type, out.names)

    def __getattr__(self, op):
        if op.startswith("_") or op not in LOWERINGS:  # no lowering: no eager kernel either
            raise AttributeError(op)

        def method(out, *args, **attrs):
            return self._run(op, out, args, attrs)
        method.__name__ = op
        object.__setattr__(self, op, method)
        return method

    def fast_kernel(self, name, out, *args):
        """The op's executable called on the operands' buffers directly (operands on one
        device, one result)."""
        dev = args[0].device_id
        if any(a.device_id != dev for a in args):
            return None
        run = self._program(name, out, args, {}, dev)
        execute = pjrt.executor(run.executable, [(out.shape, out.type.dtype)], dev)
        return lambda *datas: execute(list(datas))[0]

    @staticmethod
    def _key(op, out, args, attrs, dev):
        # names do not change the program: they are not part of the key
        multi = isinstance(out, (list, tuple))
        return (op, tuple((o.shape, o.type) for o in out) if multi else (out.shape, out.type),
                _key(args), tuple(sorted((k, _key(v)) for k, v in attrs.items())), dev)

    def _program(self, op, out, args, attrs, dev):
        """The one-op program (compiled on first use; the table keeps the most recently
        made, see ``nxpy.cache``)."""
        key = self._key(op, out, args, attrs, dev)
        run = self._programs.get(key)
        if run is None:
            multi = isinstance(out, (list, tuple))
            templates = [(t.shape, t.type, None) for t in tensor_leaves(args)]

            def one_op(*params):
                a = replace_tensors(list(args), iter(params))
                if multi:  # an op with several results (its templates in ``out``)
                    return EXPR.multi(op, [(o.shape, o.type, None) for o in out], *a, **attrs)
                return EXPR.node(op, Tensor(None, out.shape, out.type), *a, **attrs)
            graph = trace_fn(one_op, templates)
            run = put_bounded(self._programs, key,
                              ExlaCompiler().compile(graph, {"device_id": dev}),
                              PROCESS_FACTOR * program_cache_size())
        return run

    def _run(self, op, out, args, attrs):
        tensors = tensor_leaves(args)
        dev = tensors[0].device_id if tensors else pjrt.default_device()
        multi = isinstance(out, (list, tuple))
        run = self._program(op, out, args, attrs, dev)
        if multi:
            rs = run(tensors)
            for r, o in zip(rs, out):
                r.rename_in_place(o.names)
            return rs
        r = run(tensors)[0]
        if out.names != r.names:
            r.rename_in_place(out.names)
        return r


register_backend_factory("exla", ExlaBackend)
