"""Sharded modules: ``sdy.mesh``, ``sdy.sharding`` on arguments and results, and
collectives lowered on local shards inside ``sdy.manual_computation`` regions.

The module is compiled SPMD (Shardy) with ``num_partitions`` = mesh size and an explicit
device assignment; nxpy's propagated shardings are written on every result, so XLA
returns exactly the per-device results nxpy decided.
"""
from __future__ import annotations

import re

from ...backend import get_backend
from ...defn import sharding as SH
from ...tensor import Tensor
from . import pjrt
from .lowering import Ctx, lower_module, register_lowering
from .mlir import Val, dense_i64

__all__ = ["mesh_symbol", "sdy_sharding", "lower_sharded", "compile_sharded", "manual_region"]


def mesh_symbol(mesh) -> str:
    return "@" + mesh.name if re.fullmatch(r"[A-Za-z_][\w$.]*", mesh.name) else f'@"{mesh.name}"'


def _dims(sharding, mesh) -> str:
    return "[" + ", ".join("{" + ", ".join(f'"{mesh.axis_names[a]}"' for a in axes) + "}"
                           for axes in sharding) + "]"


def sdy_sharding(sharding, mesh) -> str:
    """``#sdy.sharding<@mesh, [{"axis_0"}, {}]>``"""
    return f"#sdy.sharding<{mesh_symbol(mesh)}, {_dims(sharding, mesh)}>"


def _tensor_sharding(sharding, mesh) -> str:
    return f"<{mesh_symbol(mesh)}, {_dims(sharding, mesh)}>"


def manual_region(c: Ctx, operands, in_shardings, out_results, body) -> list:
    """Emits ``sdy.manual_computation`` over all mesh axes. ``operands`` are global Vals
    with their shardings; ``out_results`` are ``(global_shape, type, sharding)``;
    ``body(ctx, local_vals)`` returns the local result Vals."""
    mesh = c.info["mesh"]
    b = c.b
    name = b.fresh()
    locals_ = [Val(b.fresh().replace("%", "%m"), SH.local_shape(v.shape, s, mesh), v.type)
               for v, s in zip(operands, in_shardings)]
    child = b.child()
    sub = Ctx(child, {}, c)
    outs = body(sub, locals_)
    n = len(out_results)
    results = [Val(name if n == 1 else f"{name}#{i}", shape, t)
               for i, (shape, t, _) in enumerate(out_results)]
    lhs = name if n == 1 else f"{name}:{n}"
    axes = ", ".join(f'"{a}"' for a in mesh.axis_names)
    b.raw(f"{lhs} = sdy.manual_computation({', '.join(v.name for v in operands)}) "
          f"in_shardings=[{', '.join(_tensor_sharding(s, mesh) for s in in_shardings)}] "
          f"out_shardings=[{', '.join(_tensor_sharding(s, mesh) for _, _, s in out_results)}] "
          f"manual_axes={{{axes}}} ({', '.join(f'{v.name}: {v.ty}' for v in locals_)}) {{")
    b.lines.extend(child.lines)
    b.raw(f"  sdy.return {', '.join(v.name for v in outs)} : {', '.join(v.ty for v in outs)}")
    in_t = ", ".join(v.ty for v in operands)
    out_t = ", ".join(v.ty for v in results)
    b.raw(f"}} : ({in_t}) -> {out_t if n == 1 else '(' + out_t + ')'}")
    return results


def channel_handle(channel: int) -> str:
    return f"#stablehlo.channel_handle<handle = {channel}, type = 1>"


@register_lowering("all_gather")
def _all_gather(c: Ctx, e, x: Val, opts):
    prop = c.info.get("propagator")
    if prop is None:
        raise ValueError("all_gather in the global view needs a mesh (shard_jit)")
    mesh = c.info["mesh"]
    in_sh, out_sh = prop.of(e.args[0]), prop.of(e)
    d = opts["all_gather_dim"]
    lout = SH.local_shape(e.shape, out_sh, mesh)

    def body(s: Ctx, locals_):
        return [s.op("stablehlo.all_gather", locals_, (lout, x.type), {
            "all_gather_dim": f"{d} : i64", "channel_handle": channel_handle(opts["channel_id"]),
            "replica_groups": dense_i64(opts["replica_groups"]), "use_global_device_ids": "unit"})]

    return manual_region(c, [x], [in_sh], [(e.shape, e.type, out_sh)], body)[0]


def lower_sharded(graph, mesh, in_shardings, out_shardings, propagator, name="nxpy") -> str:
    axes = ", ".join(f'"{a}"={d}' for a, d in zip(mesh.axis_names, mesh.shape))
    preamble = f"  sdy.mesh {mesh_symbol(mesh)} = <[{axes}]>"
    return lower_module(
        graph, name=name, num_partitions=mesh.size, preamble=preamble,
        arg_attrs=[{"sdy.sharding": sdy_sharding(s, mesh)} for s in in_shardings],
        result_attrs=[{"sdy.sharding": sdy_sharding(s, mesh)} for s in out_shardings],
        info={"mesh": mesh, "propagator": propagator})


def compile_sharded(graph, mesh, in_shardings, out_shardings, propagator, opts):
    """``run(per_device_leaves) -> per_device_outputs`` and the module text."""
    text = lower_sharded(graph, mesh, in_shardings, out_shardings, propagator)
    exe = pjrt.compile(text, mesh.devices, spmd=True)
    backend = get_backend("exla")
    check = opts.get("check_replicas", False)
    devices = mesh.devices
    n = mesh.size
    arg_specs = [(p.shape, p.type.dtype, SH.partition_spec(s, mesh), s)
                 for p, s in zip(graph.params, in_shardings)]
    out_t = [(SH.local_shape(o.shape, s, mesh), o.type, o.names)
             for o, s in zip(graph.outputs, out_shardings)]
    assemble, execute, move = pjrt.assemble, pjrt.execute_sharded, backend.buffer_on

    def run(per_device):
        arrays = []
        for i, (gshape, dtype, spec, sh) in enumerate(arg_specs):
            if check:
                SH.unshard_arrays([per_device[p][i].to_numpy() for p in range(n)], sh, mesh,
                                  what=f"argument leaf {i}")
            bufs = []
            for p in range(n):
                a = per_device[p][i]
                bufs.append(a.data if a.backend is backend and a.device_id == devices[p]
                            else move(a, devices[p]))
            arrays.append(assemble(gshape, dtype, bufs, devices, mesh.shape, mesh.axis_names, spec))
        outs = execute(exe, arrays)
        return [[Tensor(outs[o][p], s, t, nm, backend, devices[p])
                 for o, (s, t, nm) in enumerate(out_t)] for p in range(n)]

    return run, text
