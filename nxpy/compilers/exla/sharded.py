"""Sharded modules: ``sdy.mesh``, ``sdy.sharding`` on arguments and results, and
collectives lowered on local shards inside ``sdy.manual_computation`` regions.

The module is compiled SPMD (Shardy) with ``num_partitions`` = mesh size and an explicit
device assignment; nxpy's propagated shardings are written on every result, so XLA
returns exactly the per-device results nxpy decided.
"""
from __future__ import annotations

import re

from ... import pjrt, telemetry
from ... import types as T
from ...backend import get_backend
from ...defn.kernel import identity_key
from ...defn.sharding import specs as SH
from ...layout import NamedSharding
from ...tensor import Tensor, template
from .buffers import GlobalResult, Piece
from .lowering import Ctx, check_platform, lower_module, reducer_region, register_lowering
from .mlir import Val, dense_i64, i64_array

__all__ = ["mesh_symbol", "sdy_sharding", "lower_sharded", "lower_replicated", "lowered",
           "compile_sharded", "manual_region"]


def mesh_symbol(mesh) -> str:
    return "@" + mesh.name if re.fullmatch(r"[A-Za-z_][\w$.]*", mesh.name) else f'@"{mesh.name}"'


def _tensor_sharding(sharding, rank) -> str:
    """``<@mesh, [{"axis_0"}, {}]>`` of a ``NamedSharding`` for a value of ``rank`` dims."""
    names = sharding.mesh.axis_names
    dims = ", ".join("{" + ", ".join(f'"{names[a]}"' for a in axes) + "}"
                     for axes in sharding.axes(rank))
    return f"<{mesh_symbol(sharding.mesh)}, [{dims}]>"


def sdy_sharding(sharding, rank) -> str:
    """``#sdy.sharding<@mesh, [{"axis_0"}, {}]>``"""
    return "#sdy.sharding" + _tensor_sharding(sharding, rank)


def manual_region(c: Ctx, operands, in_shardings, out_results, body) -> list:
    """Emits ``sdy.manual_computation`` over all mesh axes. ``operands`` are global Vals
    with their layouts (``NamedSharding``); ``out_results`` are ``(global_shape, type,
    layout)``; ``body(ctx, local_vals)`` returns the local result Vals."""
    mesh = c.info["mesh"]
    b = c.b
    name = b.fresh()
    locals_ = [Val(b.fresh().replace("%", "%m"), s.local_shape(v.shape), v.type)
               for v, s in zip(operands, in_shardings)]
    child = b.child()
    sub = Ctx(child, {}, c, info={**c.info, "manual": True})  # lowerings may ask where they are
    outs = body(sub, locals_)
    n = len(out_results)
    results = [Val(name if n == 1 else f"{name}#{i}", shape, t)
               for i, (shape, t, _) in enumerate(out_results)]
    lhs = "" if n == 0 else f"{name} = " if n == 1 else f"{name}:{n} = "
    axes = ", ".join(f'"{a}"' for a in mesh.axis_names)
    ins = ", ".join(_tensor_sharding(s, len(v.shape)) for v, s in zip(operands, in_shardings))
    outs_sh = ", ".join(_tensor_sharding(s, len(shape)) for shape, _, s in out_results)
    b.raw(f"{lhs}sdy.manual_computation({', '.join(v.name for v in operands)}) "
          f"in_shardings=[{ins}] out_shardings=[{outs_sh}] "
          f"manual_axes={{{axes}}} ({', '.join(f'{v.name}: {v.ty}' for v in locals_)}) {{")
    b.lines.extend(child.lines)
    b.raw(f"  sdy.return {', '.join(v.name for v in outs)} : {', '.join(v.ty for v in outs)}"
          if outs else "  sdy.return")
    in_t = ", ".join(v.ty for v in operands)
    out_t = ", ".join(v.ty for v in results)
    b.raw(f"}} : ({in_t}) -> {out_t if n == 1 else '(' + out_t + ')'}")
    return results


# ----------------------------------------------------------------------------------------
# Host callbacks (hook, print_value, runtime_call)
# ----------------------------------------------------------------------------------------
@register_lowering("hook")
def _hook(c: Ctx, e, x: Val):
    """A host callback with the value: on one device in program order (a token chain);
    in a sharded program each device calls back with its own shard and device (inside a
    manual region in the global view, where the values are global)."""
    fn = e.attrs["fn"]
    mesh = c.info.get("mesh")
    if mesh is None or c.info.get("manual"):
        c.host_callback(_callback(fn, x.shape, e.type, e.names, mesh is not None), [x])
        return x
    sh = c.info["propagator"].layout(e)
    cb = _callback(fn, sh.local_shape(e.shape), e.type, e.names, True)

    def body(sub: Ctx, locals_):
        sub.host_callback(cb, locals_)
        return []
    manual_region(c, [x], [sh], [], body)
    return x


def _callback(fn, shape, type, names, sharded):
    """The registration (:func:`nxpy.pjrt.host_callback`) of ``fn`` called with
    NumPy-backend tensors of this template (a shard's ``device_id`` set in sharded
    programs)."""
    spec = (tuple(shape), type, names)

    def call(device, arr):
        fn(*_host_tensors([arr], [spec], device, sharded))
    # an unhashable fn goes by its id: registered only while the registration lives, and
    # it holds fn, so the id is never stale
    return pjrt.host_callback(("hook", identity_key(fn), *spec, sharded), call)


def _host_tensors(arrays, specs, device, sharded) -> list:
    """NumPy-backend tensors of ``arrays`` (what XLA passes) with their ``(shape, type,
    names)``; in sharded programs each knows its ``device_id``."""
    numpy = get_backend("numpy")
    out = []
    for arr, (shape, type, names) in zip(arrays, specs):
        t = numpy.from_numpy(arr.reshape(shape), type, names)
        t.device_id = device if sharded else None
        out.append(t)
    return out


@register_lowering("runtime_call")
def _runtime_call(c: Ctx, e, xs):
    """``fn`` called back with the values, its results the custom call's (in program order,
    on the token chain, as a hook). Inside a manual region (shard_map) each device calls
    with its shard; in the global view (shard_jit) the inputs are gathered and every
    device calls with the global values, its results replicated."""
    call = e.attrs["call"]
    mesh = c.info.get("mesh")
    results = [(tuple(s), t) for s, t, _ in e.outs]
    specs = [(x.shape, x.type, n.names) for x, n in zip(xs, e.args[0])]
    cb = pjrt.host_callback(("runtime_call", call, tuple(specs), mesh is not None),
                            lambda device, *arrays: call(_host_tensors(
                                arrays, specs, device, mesh is not None)))
    if mesh is None or c.info.get("manual"):
        return c.host_callback(cb, xs, results)

    def body(sub: Ctx, locals_):
        return sub.host_callback(cb, locals_, results)
    whole = NamedSharding(mesh)
    return manual_region(c, xs, [whole] * len(xs), [(s, t, whole) for s, t in results], body)


@register_lowering("sharding_constraint")
def _sharding_constraint(c: Ctx, e, x: Val):
    mesh = c.info.get("mesh")
    if mesh is None or c.info.get("manual"):  # no mesh here: a layout hint with no layout
        return x
    r = Val(c.b.fresh(), x.shape, x.type)
    c.b.raw(f"{r.name} = sdy.sharding_constraint {x.name} "
            f"{_tensor_sharding(e.attrs['sharding'], len(x.shape))} : {x.ty}")
    return r


def channel_handle(channel: int) -> str:
    return f"#stablehlo.channel_handle<handle = {channel}, type = 1>"


@register_lowering("all_gather")
def _all_gather(c: Ctx, e, x: Val, opts):
    if opts.get("view") == "local":
        return _local_all_gather(c, e, x, opts)
    prop = c.info.get("propagator")
    if prop is None:
        raise ValueError("all_gather in the global view needs a mesh (shard_jit)")
    in_sh, out_sh = prop.layout(e.args[0]), prop.layout(e)
    d = opts["all_gather_dim"]
    lout = out_sh.local_shape(e.shape)

    def body(s: Ctx, locals_):
        return [s.op("stablehlo.all_gather", locals_, (lout, x.type), {
            "all_gather_dim": f"{d} : i64", "channel_handle": channel_handle(opts["channel_id"]),
            "replica_groups": dense_i64(opts["replica_groups"]), "use_global_device_ids": "unit"})]

    return manual_region(c, [x], [in_sh], [(e.shape, e.type, out_sh)], body)[0]


# ----------------------------------------------------------------------------------------
# shard_map and the local view
# ----------------------------------------------------------------------------------------
@register_lowering("shard_map")
def _shard_map(c: Ctx, e, *inputs):
    mesh = e.attrs["mesh"]
    if c.info.get("mesh") != mesh:
        raise ValueError(f"shard_map over {mesh!r} in a module over {c.info.get('mesh')!r}")
    (body,) = e.fns
    caps = body.captures
    cap_vals = [c.lookup(x) for x in caps]
    in_sh = list(e.attrs["in_specs"]) + [NamedSharding(mesh)] * len(cap_vals)
    outs = [(s, t, sh) for (s, t, _), sh in zip(e.outs, e.attrs["out_specs"])]
    n = len(inputs)

    def build(sub: Ctx, locals_):
        for x, v in zip(caps, locals_[n:]):  # the region is isolated: captures come in as operands
            sub.env[x.id] = v
        return sub.lower_body(body, locals_[:n])

    return manual_region(c, list(inputs) + cap_vals, in_sh, outs, build)


def _common(opts_or_attrs, groups_key="groups"):
    return {"channel_handle": channel_handle(opts_or_attrs.get("channel_id", 1)),
            "replica_groups": dense_i64(opts_or_attrs[groups_key])}


def _local_all_gather(c: Ctx, e, x: Val, o):
    d = o["all_gather_dim"]
    if not o["tiled"]:  # a new dim: insert it with size 1, then gather along it
        x = c.reshape(x, x.shape[:d] + (1,) + x.shape[d:])
    attrs = {"all_gather_dim": f"{d} : i64", **_common(o, "replica_groups"),
             "use_global_device_ids": "unit"}
    return c.op("stablehlo.all_gather", [x], (e.shape, e.type), attrs)


_REDUCER_OPS = {"sum": "stablehlo.add", "max": "stablehlo.maximum", "min": "stablehlo.minimum"}


def _reducer(c: Ctx, op, t):
    return reducer_region(c, _REDUCER_OPS[op], t)


@register_lowering("all_reduce")
def _all_reduce(c: Ctx, e, x: Val):
    a = e.attrs
    return c.op("stablehlo.all_reduce", [x], (e.shape, e.type),
                {**_common(a), "use_global_device_ids": "unit"},
                [_reducer(c, a["reduction"], e.type)])


@register_lowering("reduce_scatter")
def _reduce_scatter(c: Ctx, e, x: Val):
    a = e.attrs
    d, n = a["scatter_dim"], len(a["groups"][0])
    tiled_shape = x.shape[:d] + (x.shape[d] // n,) + x.shape[d + 1:]
    r = c.op("stablehlo.reduce_scatter", [x], (tiled_shape, e.type),
             {**_common(a), "scatter_dimension": f"{d} : i64", "use_global_device_ids": "unit"},
             [_reducer(c, "sum", e.type)])
    return c.reshape(r, e.shape)


@register_lowering("all_to_all")
def _all_to_all(c: Ctx, e, x: Val):
    a = e.attrs
    sa, ca, n = a["split_axis"], a["concat_axis"], len(a["groups"][0])
    concat = ca if a["tiled"] else sa
    shape = list(x.shape)
    shape[sa] //= n
    shape[concat] *= n
    r = c.op("stablehlo.all_to_all", [x], (tuple(shape), e.type),
             {**_common(a), "concat_dimension": f"{concat} : i64", "split_count": f"{n} : i64",
              "split_dimension": f"{sa} : i64"})
    if a["tiled"] or sa == ca:
        return c.reshape(r, e.shape)
    # untiled: the gathered dim sits at split_axis; move it to concat_axis
    perm = [i for i in range(len(shape)) if i != sa]
    perm.insert(ca, sa)
    return c.op("stablehlo.transpose", [r], (e.shape, e.type),
                {"permutation": i64_array(perm)})


@register_lowering("collective_permute")
def _collective_permute(c: Ctx, e, x: Val):
    pairs = e.attrs["pairs"]
    if not pairs:
        return c.const(0, e.type, e.shape)
    return c.op("stablehlo.collective_permute", [x], (e.shape, e.type),
                {"channel_handle": channel_handle(1), "source_target_pairs": dense_i64(pairs)})


def axis_index_val(c: Ctx, axes) -> Val:
    """This partition's index along ``axes`` (s32), from ``stablehlo.partition_id``."""
    mesh = c.info["mesh"]
    u32 = T.Type("u", 32)
    pid = c.op("stablehlo.partition_id", [], ((), u32))
    idx = None
    for a in axes:
        later = 1
        for b in range(a + 1, len(mesh.shape)):
            later *= mesh.shape[b]
        coord = c.binop("stablehlo.remainder",
                        c.binop("stablehlo.divide", pid, c.const(later, u32)),
                        c.const(mesh.shape[a], u32))
        idx = coord if idx is None else c.binop(
            "stablehlo.add", c.binop("stablehlo.multiply", idx, c.const(mesh.shape[a], u32)), coord)
    return c.convert(idx, T.S32)


@register_lowering("axis_index")
def _axis_index(c: Ctx, e):
    return c.convert(axis_index_val(c, e.attrs["axes"]), e.type)


@register_lowering("collective_broadcast")
def _collective_broadcast(c: Ctx, e, x: Val):
    """XLA:CPU has no stablehlo.collective_broadcast: a masked all_reduce instead."""
    a = e.attrs
    is_src = c.compare(axis_index_val(c, a["axes"]), c.const(a["source"], T.S32), "EQ")
    masked = c.select(c.bcast(is_src, x.shape), x, c.const(0, x.type, x.shape))
    op = "stablehlo.or" if x.type.is_pred else "stablehlo.add"
    return c.op("stablehlo.all_reduce", [masked], (e.shape, e.type),
                {**_common(a), "use_global_device_ids": "unit"}, [reducer_region(c, op, e.type)])


@register_lowering("all_slice")
def _all_slice(c: Ctx, e, x: Val):
    a = e.attrs
    d = a["slice_dim"]
    start = c.binop("stablehlo.multiply", axis_index_val(c, a["axes"]), c.const(e.shape[d], T.S32))
    zero = c.const(0, T.S32)
    starts = [start if i == d else zero for i in range(len(x.shape))]
    return c.op("stablehlo.dynamic_slice", [x, *starts], (e.shape, e.type),
                {"slice_sizes": i64_array(e.shape)})


def uses_shard_map(graph) -> list:
    """The meshes of the shard_map nodes of a graph (a plain jit that contains one must be
    compiled as an SPMD program over that mesh)."""
    meshes = []
    for e in graph.nodes:
        if e.op == "shard_map" and e.attrs["mesh"] not in meshes:
            meshes.append(e.attrs["mesh"])
    return meshes


def _replicated(graph, mesh):
    in_sh = [NamedSharding(mesh)] * len(graph.params)
    out_sh = [NamedSharding(mesh)] * len(graph.outputs)
    return in_sh, out_sh, SH.Propagator(mesh, in_sh)


def lower_replicated(graph, mesh, platform=None) -> str:
    """The module of a plain-jit graph that contains shard_map (see compile_replicated),
    lowered for ``platform`` (default: nxpy's client's)."""
    return lower_sharded(graph, mesh, *_replicated(graph, mesh), platform=platform)


def compile_replicated(graph, mesh, opts):
    """A plain-jit graph containing shard_map: every argument replicated on the mesh, every
    result replicated, results read from this process's first partition."""
    run, text = compile_sharded(graph, mesh, *_replicated(graph, mesh), opts)
    n_local = len(mesh.local_partitions)

    def run_one(args):
        return run([list(args)] * n_local)[0]
    run_one.module = text
    run_one.memory_stats = run.memory_stats
    return run_one


def lower_sharded(graph, mesh, in_shardings, out_shardings, propagator, name="nxpy",
                  platform=None) -> str:
    """The SPMD module of ``graph`` over ``mesh`` (Shardy shardings on the arguments and
    results, collectives in manual regions), lowered for ``platform`` (default: nxpy's
    client's, :func:`~.lowering.default_platform`)."""
    axes = ", ".join(f'"{a}"={d}' for a, d in zip(mesh.axis_names, mesh.shape))
    preamble = f"  sdy.mesh {mesh_symbol(mesh)} = <[{axes}]>"
    return lower_module(
        graph, name=name, num_partitions=mesh.size, preamble=preamble,
        arg_attrs=[{"sdy.sharding": sdy_sharding(s, len(p.shape))}
                   for p, s in zip(graph.params, in_shardings)],
        result_attrs=[{"sdy.sharding": sdy_sharding(s, len(o.shape))}
                      for o, s in zip(graph.outputs, out_shardings)],
        info={"mesh": mesh, "propagator": propagator}, in_shardings=in_shardings,
        out_shardings=out_shardings, platform=platform)


def lowered(graph, mesh, in_shardings, out_shardings, propagator, platform=None) -> str:
    """``lower_sharded``, once per graph, abstract mesh and platform (the module names no
    devices: a same-shaped mesh of other devices reuses it)."""
    platform = check_platform(platform)
    key = ("exla_sharded", mesh.abstract, tuple(s.spec for s in in_shardings),
           tuple(s.spec for s in out_shardings), platform)
    text = graph.cache.get(key)
    if text is None:
        with telemetry.timed("lower", key=key[:2], function="shard_jit"):
            text = graph.cache[key] = lower_sharded(graph, mesh, in_shardings, out_shardings,
                                                    propagator, platform=platform)
    return text


class _SpmdProgram:
    """What both forms of a compiled SPMD program share: the module text and executable,
    this process's partitions and their devices, each argument's sharding with the
    assembler of its global array, and the executable's runner (built once, at compile
    time)."""

    __slots__ = ("text", "exe", "mesh", "backend", "parts", "devices", "check", "arg_specs",
                 "execute", "inputs", "outputs", "out_shardings", "in_shardings")

    def __init__(self, graph, mesh, in_shardings, out_shardings, propagator, opts):
        self.text = lowered(graph, mesh, in_shardings, out_shardings, propagator)
        self.exe = pjrt.compile(self.text, mesh.devices, spmd=True)
        self.mesh, self.backend = mesh, get_backend("exla")
        self.parts = mesh.local_partitions  # this process's (all of them in one process)
        if not self.parts:
            raise ValueError(f"mesh {mesh.name!r} has no device of this process")
        self.devices = [mesh.devices[p] for p in self.parts]
        # replicas can be compared only where every partition's shard is at hand
        self.check = opts.get("check_replicas", False) and len(self.parts) == mesh.size
        # per argument: its sharding and a function wrapping its per-partition buffers
        # into one global array (abstract value and sharding built here, once)
        self.arg_specs = [(s, pjrt.assembler(p.shape, p.type.dtype, mesh.devices, mesh.shape,
                                             mesh.axis_names, s.entries(len(p.shape))))
                          for p, s in zip(graph.params, in_shardings)]
        self.execute = pjrt.sharded_executor(
            self.exe, [(o.shape, o.type.dtype, s.entries(len(o.shape)))
                       for o, s in zip(graph.outputs, out_shardings)],
            mesh.devices, mesh.shape, mesh.axis_names)
        self.outputs, self.out_shardings = list(graph.outputs), out_shardings
        self.inputs, self.in_shardings = list(graph.params), in_shardings


def _whole_of(per_device, i, sharding):
    """The global array argument ``i`` already is: every (local) partition's piece of one
    result with the sharding this argument needs, in partition order; else None."""
    d = per_device[0][i].raw_data
    if type(d) is not Piece or d.p != 0 or d.whole.sharding is not sharding:
        return None
    whole = d.whole
    for p, args in enumerate(per_device):
        d = args[i].raw_data
        if type(d) is not Piece or d.whole is not whole or d.p != p:
            return None
    return whole.array


def _per_device_caller(prog: _SpmdProgram):
    """Nx's form: ``run(per_device_leaves) -> per_device_outputs``, each partition's
    argument leaves in, each partition's result tensors out (pieces of the global
    results, split off when used alone)."""
    backend, devices, check = prog.backend, prog.devices, prog.check
    arg_specs, execute = prog.arg_specs, prog.execute
    out_t = [(s.local_shape(o.shape), o.type, o.names, sh)
             for o, s, sh in zip(prog.outputs, prog.out_shardings, execute.shardings)]
    move = backend.buffer_on
    local = range(len(prog.parts))

    def run(per_device):
        """``per_device``: the argument leaves of this process's partitions."""
        arrays = []
        for i, (sh, assemble) in enumerate(arg_specs):
            if check:
                sh.unshard([per_device[p][i].to_numpy() for p in local],
                           what=f"argument leaf {i}")
            array = _whole_of(per_device, i, assemble.sharding)
            if array is None:
                bufs = []
                for args, d in zip(per_device, devices):
                    a = args[i]
                    bufs.append(a.data if a.backend is backend and a.device_id == d
                                else move(a, d))
                array = assemble(bufs)
            arrays.append(array)
        wholes = [GlobalResult(g, sh) for g, (_, _, _, sh) in zip(execute(arrays), out_t)]
        return [[Tensor(Piece(w, j), s, t, nm, backend, devices[j])
                 for w, (s, t, nm, _) in zip(wholes, out_t)] for j in local]
    return run


def _global_caller(prog: _SpmdProgram):
    """JAX's form: ``call_global(leaves) -> result tensors``, sharded tensors in (their
    data is the global array the program takes), sharded tensors out (each holds the
    global array the program returned); the hot path hands the arrays to PJRT itself."""
    backend, devices, check, mesh = prog.backend, prog.devices, prog.check, prog.mesh
    arg_specs, execute = prog.arg_specs, prog.execute
    out_g = [(o.shape, o.type, o.names, template(o.shape, o.type, o.names, ns))
             for o, ns in zip(prog.outputs, prog.out_shardings)]
    array = pjrt.array_type()
    spec_of = [s.entries(len(x.shape)) for x, s in zip(prog.inputs, prog.in_shardings)]
    move = backend.buffer_on

    def replicate(x, i):
        """An argument that is not sharded, as the global array of its sharding (its
        copies put on every device of this process)."""
        return arg_specs[i][1]([move(x, d) for d in devices])

    raw, handlers = execute.raw, execute.handlers
    single = out_g[0] if len(out_g) == 1 else None

    def call_global(leaves):
        arrays = []
        for x in leaves:
            d = x._data
            if type(d) is not array or x.sharding is None:
                return slow_global(leaves)
            arrays.append(d)
        if check or raw is None:
            return slow_global(leaves)
        try:
            outs = raw(arrays).consume_with_handlers(handlers)
        except Exception as e:
            pjrt.raise_runtime_failure(e, "a program")
        if single is not None:
            s, t, nm, tk = single
            return [Tensor(outs[0], s, t, nm, backend, None, tk, tk.sharding)]
        return [Tensor(g, s, t, nm, backend, None, tk, tk.sharding)
                for g, (s, t, nm, tk) in zip(outs, out_g)]

    def slow_global(leaves):
        arrays = []
        for i, x in enumerate(leaves):
            d = x._data
            if type(d) is array and x.sharding is not None:
                arrays.append(d)
            elif x.sharding is not None:  # another backend's, or not yet resolved
                if x.backend is backend:
                    arrays.append(x.data)
                else:
                    arrays.append(pjrt.global_array(
                        x.shape, x.type.dtype, mesh.devices, mesh.shape, mesh.axis_names,
                        spec_of[i], [move(s, dev) for s, dev in
                                     zip(x.backend.shards(x), devices)]))
            else:
                arrays.append(replicate(x, i))
        if check:
            for i, (x, (sh, _)) in enumerate(zip(leaves, arg_specs)):
                if x.sharding is not None:
                    sh.unshard([pjrt.to_host(b) for b in pjrt.shards_of(arrays[i])],
                               what=f"argument leaf {i}")
        return [Tensor(g, s, t, nm, backend, None, tk, tk.sharding)
                for g, (s, t, nm, tk) in zip(execute(arrays), out_g)]
    return call_global


def compile_sharded(graph, mesh, in_shardings, out_shardings, propagator, opts):
    """``run(per_device_leaves) -> per_device_outputs`` and the module text; the global
    form is ``run.call_global``. Both call one executable."""
    prog = _SpmdProgram(graph, mesh, in_shardings, out_shardings, propagator, opts)
    run = _per_device_caller(prog)
    run.call_global = _global_caller(prog)
    exe = prog.exe
    run.memory_stats = lambda: pjrt.memory_stats(exe)
    return run, prog.text
