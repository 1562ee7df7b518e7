"""The Evaluator: walks an Expr graph, calling a backend once per node.

Each node is evaluated once; a value is dropped right after its last use (the use
counts are computed once per graph, at compile time). ``EVAL_RULES`` holds the ops
that are not plain backend calls (control flow, and plugins' own ops).

>>> import nxpy as nx
>>> from nxpy.defn import jit
>>> softmax = jit(lambda x: nx.exp(x) / nx.sum(nx.exp(x)), compiler="evaluator")
>>> softmax(nx.tensor([0.0, 0.0])).tolist()
[0.5, 0.5]
"""
from __future__ import annotations

import json

import numpy as np

from .. import pjrt
from ..backend import default_backend, get_backend
from ..defn.compiler import Compiler, register_compiler_factory
from ..defn.expr import Expr, Fn
from ..ops import op_method
from ..ops.core import ops_with
from ..registry import rule_registrar
from ..tensor import Tensor

__all__ = ["Evaluator", "EVAL_RULES", "register_eval_rule", "Plan", "taken_branch", "host_args"]

EVAL_RULES: dict = {}


register_eval_rule = rule_registrar(
    EVAL_RULES, "register_eval_rule", "an evaluation rule",
    """Decorator: ``rule(ev, expr, out, args, env, backend, **ctx) -> value`` for ops that
    are not a single backend call (``args`` are the evaluated args, ``out`` the template).""")


class Plan:
    """Per-function evaluation order and, for each node, which values die after it."""

    __slots__ = ("fn", "steps", "outputs", "fast", "_local_operands", "output_steps",
                 "output_names")

    def __init__(self, fn: Fn):
        self.fn = fn
        nodes = fn.nodes
        local = {e.id for e in nodes}
        last = {}
        for i, e in enumerate(nodes):
            for d in e.deps():
                if d.id in local:
                    last[d.id] = i
        keep = {t.data.id for t in fn.outputs}
        release = [[] for _ in nodes]
        for nid, i in last.items():
            if nid not in keep:
                release[i].append(nid)
        # a node with several results gets one template per result (its kernel's ``outs``)
        self.steps = [(e, Tensor(None, e.shape, e.type, e.names) if e.outs is None else
                       [Tensor(None, s, t, n) for s, t, n in e.outs], release[i])
                      for i, e in enumerate(nodes)]
        self.outputs = [t.data for t in fn.outputs]
        #: an output may be another value renamed (broadcast to its own shape): its names win
        self.output_names = [t.names for t in fn.outputs]
        step_of = {e.id: i for i, e in enumerate(nodes)}
        #: the step computing each output (the last step for outputs from outside)
        self.output_steps = [step_of.get(o.id, -1) for o in self.outputs]
        #: per backend, per step: the backend's fast kernel for an elementwise node whose
        #: operands are values of this function (found on the first run), or None
        self.fast: dict = {}
        self._local_operands = [
            [a.data.id for a in e.args] if e.op in _FAST_OPS and all(
                isinstance(a, Tensor) and isinstance(a.data, Expr) and a.data.id in local
                for a in e.args) else None
            for e in nodes]


class Env:
    __slots__ = ("values", "parent")

    def __init__(self, parent=None):
        self.values = {}
        self.parent = parent

    def get(self, e: Expr):
        env = self
        while env is not None:
            v = env.values.get(e.id, env)
            if v is not env:
                return v
            env = env.parent
        raise RuntimeError(f"internal error: {e!r} read before it was evaluated")


class Evaluator(Compiler):
    """The default compiler: interprets the graph on a backend (option ``backend``,
    default: the default backend at call time)."""

    name = "evaluator"
    options = frozenset({"backend"})

    def supports(self, op: str) -> bool:
        """Every op: a node runs as its backend's kernel, and a backend without one runs
        the op's portable implementation (``nxpy.ops.core.op_method``)."""
        return True

    def plan(self, fn: Fn) -> Plan:
        """``fn``'s Plan, computed once and kept on ``fn`` (so it dies with the graph)."""
        p = fn.cache.get("evaluator_plan")
        if p is None:
            p = fn.cache["evaluator_plan"] = Plan(fn)
        return p

    def compile(self, graph, opts):
        fixed = get_backend(opts["backend"]) if opts.get("backend") is not None else None
        self.plan(graph)

        def run(args):
            b = fixed or default_backend()
            args = [a if a.backend is b else b.from_tensor(a) for a in args]
            return self.run_fn(graph, args, None, b)
        return run

    def result_backend(self, opts):
        if opts.get("backend") is not None:
            return get_backend(opts["backend"])
        return default_backend()

    def compile_sharded(self, graph, mesh, in_shardings, out_shardings, propagator, opts):
        """The sharded entry point: simulates the mesh on the host. Shards are assembled into
        global values (replicated copies must agree unless ``check_replicas=False``), the
        graph runs in the global view, and results are split per ``out_shardings``."""
        fixed = get_backend(opts["backend"]) if opts.get("backend") is not None else None
        check = opts.get("check_replicas", True)
        self.plan(graph)

        parts = mesh.local_partitions
        everywhere = len(parts) == mesh.size

        def run(per_device):
            """``per_device``: the argument leaves of this process's partitions. With
            several processes every process simulates the whole mesh: the sharded
            arguments' local shards are exchanged through the distributed runtime's
            coordination service (replicated ones are taken as they are here)."""
            b = fixed or default_backend()
            local = [[a.to_numpy() for a in d] for d in per_device]
            every = local if everywhere else _gather_shards(local, parts, in_shardings, mesh)
            args = []
            for i, (p, s) in enumerate(zip(graph.params, in_shardings)):
                shards = [d[i] for d in every]
                g = s.unshard(shards, check=check, what=f"argument leaf {i}")
                args.append(b.from_numpy(g, p.type, p.names))
            outs = self.run_fn(graph, args, None, b, mesh=mesh, propagator=propagator)
            per = [[None] * len(outs) for _ in parts]
            for o, (t, s) in enumerate(zip(outs, out_shardings)):
                pieces = s.shard_array(t.to_numpy())
                for j, p in enumerate(parts):
                    r = b.from_numpy(pieces[p], t.type, t.names)
                    r.device_id = mesh.devices[p]
                    per[j][o] = r
            return per
        return run, None

    def run_fn(self, fn: Fn, args, parent: Env | None, backend, **ctx):
        plan = self.plan(fn)
        env = Env(parent)
        vals = env.values
        for p, a in zip(fn.params, args):
            vals[p.data.id] = a
        fast = plan.fast.get(backend)
        first = fast is None
        if first:
            fast = plan.fast[backend] = [None] * len(plan.steps)
        for i, (e, out, release) in enumerate(plan.steps):
            f = fast[i]
            if f is not None:
                if type(f) is Tensor:  # a constant, computed on the first run
                    vals[e.id] = f
                else:
                    k, ids, dev = f
                    operands = [vals[j] for j in ids]
                    if operands[0].device_id == dev:
                        try:
                            vals[e.id] = Tensor(k(*[v.data for v in operands]), out.shape,
                                                out.type, out.names, backend, dev)
                        except Exception:  # the kernel declines this call: the op method
                            vals[e.id] = self.eval_node(e, out, env, backend, **ctx)
                    else:
                        vals[e.id] = self.eval_node(e, out, env, backend, **ctx)
            elif e.op != "parameter":
                v = vals[e.id] = self.eval_node(e, out, env, backend, **ctx)
                if first:
                    ids = plan._local_operands[i]
                    if ids is not None:
                        fast[i] = _fast_step(backend, e, out, [vals[j] for j in ids], ids)
                    elif e.op == "constant" and type(v) is Tensor:
                        fast[i] = v
            for nid in release:
                del vals[nid]
        outs = [env.get(o) for o in plan.outputs]
        # a result that is a kept constant gets a tensor of its own (callers may donate it)
        return [Tensor(v.raw_data, v.shape, v.type, n, v.backend, v.device_id)
                if (j >= 0 and type(v) is Tensor and fast[j] is v) or v.names != n else v
                for v, j, n in zip(outs, plan.output_steps, plan.output_names)]

    def eval_node(self, e: Expr, out, env: Env, backend, **ctx):
        args = [_arg(a, env) for a in e.args]
        rule = EVAL_RULES.get(e.op)
        if rule is not None:
            return rule(self, e, out, args, env, backend, **ctx)
        return op_method(backend, e.op, " needed by the Evaluator")(out, *args, **e.attrs)


def _gather_shards(local, parts, in_shardings, mesh) -> list:
    """Every partition's argument shards (``[partition][leaf]`` NumPy arrays) from this
    process's (``local``, for partitions ``parts``): the shards of sharded arguments go
    through the coordination service (:func:`nxpy.pjrt.allgather_bytes`); a replicated
    argument's local copy stands for every partition's."""
    sharded = [i for i, s in enumerate(in_shardings) if not s.is_replicated]
    every = [[local[0][i] for i in range(len(in_shardings))] for _ in range(mesh.size)]
    if not sharded:
        return every
    for blob in pjrt.allgather_bytes(_pack({(p, i): local[j][i] for j, p in enumerate(parts)
                                             for i in sharded})):
        for (p, i), arr in _unpack(blob).items():
            every[p][i] = arr
    return every


def _pack(arrays: dict) -> bytes:
    """``{(partition, leaf): array}`` as bytes: a JSON header (keys, dtypes, shapes) and the
    raw data (no pickle: peers' bytes are never executed)."""
    head, data = [], []
    for (p, i), a in arrays.items():
        a = np.ascontiguousarray(a)
        head.append([p, i, a.dtype.name, list(a.shape), a.nbytes])
        data.append(a.tobytes())
    h = json.dumps(head).encode()
    return len(h).to_bytes(8, "little") + h + b"".join(data)


def _unpack(blob: bytes) -> dict:
    n = int.from_bytes(blob[:8], "little")
    out, off = {}, 8 + n
    for p, i, dt, shape, nbytes in json.loads(blob[8:off]):
        out[(p, i)] = np.frombuffer(blob[off:off + nbytes], dtype=np.dtype(dt)).reshape(shape)
        off += nbytes
    return out


#: the ops a backend may have a direct kernel for (``Backend.fast_kernel``)
_FAST_OPS = frozenset(ops_with("elementwise"))


def _fast_step(backend, e, out, operands, ids):
    """The backend's direct kernel for elementwise node ``e`` (Backend.fast_kernel), when
    every operand is a tensor of ``backend`` on one device and the node has no attributes."""
    if e.attrs or not all(isinstance(v, Tensor) and v.backend is backend for v in operands):
        return None
    dev = operands[0].device_id
    if any(v.device_id != dev for v in operands):
        return None
    k = backend.fast_kernel(e.op, out, *operands)
    return None if k is None else (k, ids, dev)


def _arg(a, env):
    if isinstance(a, Tensor):
        return env.get(a.data) if isinstance(a.data, Expr) else a
    if isinstance(a, Expr):
        return env.get(a)
    if isinstance(a, list):
        return [_arg(x, env) for x in a]
    return a


@register_eval_rule("constant")
def _constant(ev, e, out, args, env, backend, **ctx):
    return backend.constant(out, e.attrs["value"])


@register_eval_rule("tensor")
def _tensor(ev, e, out, args, env, backend, **ctx):
    return backend.from_numpy(e.attrs["value"], e.type, e.names)


@register_eval_rule("elem")
def _elem(ev, e, out, args, env, backend, **ctx):
    v = args[0][e.attrs["index"]]
    if v.names != out.names:  # a branch's or the body's value: the node's names win
        v = Tensor(v.data, v.shape, v.type, out.names, v.backend, v.device_id)
    return v


@register_eval_rule("sharding_constraint")
def _sharding_constraint(ev, e, out, args, env, backend, **ctx):
    return args[0]  # values are global here: a layout (what propagation decides) only


@register_eval_rule("cond")
def _cond(ev, e, out, args, env, backend, **ctx):
    return ev.run_fn(e.fns[taken_branch(args)], [], env, backend, **ctx)


@register_eval_rule("call")
def _call(ev, e, out, args, env, backend, **ctx):
    return ev.run_fn(e.fns[0], args, env, backend, **ctx)


def taken_branch(preds) -> int:
    """The branch a ``cond`` node takes: the first clause whose predicate holds, else the
    last (the node's args are the predicates of all clauses but the last)."""
    for i, p in enumerate(preds):
        if bool(p):
            return i
    return len(preds)


@register_eval_rule("hook")
def _hook(ev, e, out, args, env, backend, mesh=None, propagator=None, **ctx):
    """Calls the hook with the value; in a sharded program (the global view) once per
    partition of this process, with that partition's shard and device."""
    x, fn = args[0], e.attrs["fn"]
    if x.names != out.names:  # the node's names (a rename's value may not carry them)
        x = Tensor(x.data, x.shape, x.type, out.names, x.backend, x.device_id)
    if mesh is None:
        fn(x)
        return x
    pieces = propagator.layout(e).shard_array(x.to_numpy())
    for p in mesh.local_partitions:
        t = backend.from_numpy(pieces[p], x.type, x.names)
        t.device_id = mesh.devices[p]
        fn(t)
    return x


@register_eval_rule("runtime_call")
def _runtime_call(ev, e, out, args, env, backend, mesh=None, propagator=None, **ctx):
    """Calls ``fn`` with the values (see :class:`nxpy.defn.kernel.RuntimeCall`); in a
    sharded program (the global view) once per partition of this process, each with the
    global values and its device, as on EXLA (the results are replicated: the first
    partition's are kept)."""
    call = e.attrs["call"]
    devices = [None] if mesh is None else [mesh.devices[p] for p in mesh.local_partitions]
    arrays = None
    for d in devices:
        got = call(host_args(e.args[0], args[0], d))
        arrays = got if arrays is None else arrays
    return [backend.from_numpy(a, o.type, o.names) for a, o in zip(arrays, out)]


def host_args(nodes, values, device):
    """The tensors a host call gets: the nodes' names (a value may not carry them) and
    ``device``."""
    return [Tensor(v.data, v.shape, v.type, n.names, v.backend, device)
            for n, v in zip(nodes, values)]


@register_eval_rule("while")
def _while(ev, e, out, args, env, backend, **ctx):
    c_fn, b_fn = e.fns
    state = list(args[0])
    while bool(ev.run_fn(c_fn, state, env, backend, **ctx)[0]):
        state = ev.run_fn(b_fn, state, env, backend, **ctx)
    return state


#: ops a reduction function may hold for the Evaluator to run it on whole arrays at once
_ELEMENTWISE = _FAST_OPS | {"constant", "parameter"}


def _fn_caller(ev, fn: Fn, env, backend, ctx):
    """``fun(a, b)`` running ``fn`` (a reduction function of two scalars): on whole arrays
    when it is made of elementwise ops only (marked ``nxpy_elementwise``), else on scalars."""
    if all(n.op in _ELEMENTWISE and n.outs is None for n in fn.nodes):
        p0, p1 = (p.data.id for p in fn.params)

        def call(a, b):
            vals = {p0: a, p1: b}
            for n in fn.nodes:
                if n.op == "parameter":
                    continue
                out = Tensor(None, a.shape, n.type, None)
                if n.op == "constant":
                    vals[n.id] = backend.constant(out, n.attrs["value"])
                    continue
                args = [vals[x.data.id] if isinstance(x, Tensor) and isinstance(x.data, Expr)
                        else x for x in n.args]
                vals[n.id] = op_method(backend, n.op, " needed by the Evaluator")(
                    out, *args, **n.attrs)
            return vals[fn.outputs[0].data.id]
        call.nxpy_elementwise = True
        return call

    def call(a, b):
        return ev.run_fn(fn, [a, b], env, backend, **ctx)[0]
    return call


@register_eval_rule("reduce", "window_reduce")
def _with_fun(ev, e, out, args, env, backend, **ctx):
    fun = _fn_caller(ev, e.fns[0], env, backend, ctx)
    return op_method(backend, e.op, " needed by the Evaluator")(out, *args, fun=fun, **e.attrs)


@register_eval_rule("all_gather")
def _all_gather(ev, e, out, args, env, backend, **ctx):
    return args[0]  # global view: the values do not change (shard_map bodies: nxpy.compilers.spmd)


register_compiler_factory("evaluator", Evaluator)
