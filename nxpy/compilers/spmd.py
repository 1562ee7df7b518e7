"""SPMD simulation on the host: how the Evaluator runs ``shard_map`` bodies.

The body runs for every device of the mesh in lockstep, node by node; each value is a
list with one tensor per device. Ordinary ops run per device on the Evaluator's backend;
collectives (``SPMD_RULES``) exchange data between the simulated devices with exactly
XLA's semantics, so per-device results equal EXLA's. Control flow may diverge between
devices (each runs its own branch or iteration count) as long as no collective runs on a
device whose group partners are not running it too — that would deadlock XLA, and here
it is an error.
"""
from __future__ import annotations

import numpy as np

from ..ops import op_method
from ..defn.expr import Expr
from ..tensor import Tensor
from ..registry import rule_registrar
from ..types import compute_dtype
from .evaluator import EVAL_RULES, Env, host_args, register_eval_rule, taken_branch

__all__ = ["Spmd", "SPMD_RULES", "register_spmd_rule"]

SPMD_RULES: dict = {}


register_spmd_rule = rule_registrar(
    SPMD_RULES, "register_spmd_rule", "an SPMD rule",
    """Decorator: ``rule(spmd, expr, out, per_device_args, active, env) -> per_device_values``
    where ``per_device_args[p]`` are device ``p``'s evaluated args (None when inactive).""")


def _contiguous(arr):
    arr = np.asarray(arr)  # (np.ascontiguousarray would turn a scalar into a 1-d array)
    return arr if arr.flags.c_contiguous else arr.copy()


class _Vals(dict):
    """Per-device values of one (sub-)function, chained to the enclosing one's."""

    def __init__(self, parent=None):
        super().__init__()
        self.parent = parent

    def lookup(self, key):
        env = self
        while env is not None:
            v = dict.get(env, key)
            if v is not None:
                return v
            env = env.parent
        return None


class Spmd:
    """Runs a body for all devices of ``mesh`` with the Evaluator ``ev`` on ``backend``."""

    def __init__(self, ev, backend, mesh, outer: Env):
        self.ev, self.backend, self.mesh, self.outer = ev, backend, mesh, outer
        self.n = mesh.size

    def run(self, fn, per_device_params, active, parent=None):
        """``per_device_params[p]``: device p's parameter values; ``parent``: the enclosing
        body's values (for captures). Returns per-device outputs."""
        plan = self.ev.plan(fn)
        env = _Vals(parent)
        for i, prm in enumerate(fn.params):
            env[prm.data.id] = [per_device_params[p][i] if p in active else None
                                for p in range(self.n)]
        for e, out, release in plan.steps:
            if e.op != "parameter":
                env[e.id] = self.node(e, out, env, active)
            for nid in release:
                env.pop(nid, None)
        outs = [self.get(o, env) for o in plan.outputs]
        return [[o[p] for o in outs] if p in active else None for p in range(self.n)]

    def get(self, e: Expr, env):
        v = env.lookup(e.id)
        if v is None:  # an outer (global) value: the same on every device
            g = self.outer.get(e)
            v = env[e.id] = [g] * self.n
        return v

    def _args(self, a, env, p):
        if isinstance(a, Tensor):
            return self.get(a.data, env)[p] if isinstance(a.data, Expr) else a
        if isinstance(a, Expr):
            return self.get(a, env)[p]
        if isinstance(a, list):
            return [self._args(x, env, p) for x in a]
        return a

    def node(self, e: Expr, out, env, active):
        n = self.n
        per = [[self._args(a, env, p) for a in e.args] if p in active else None for p in range(n)]
        rule = SPMD_RULES.get(e.op)
        if rule is not None:
            return rule(self, e, out, per, active, env)
        if e.op in ("constant", "tensor"):
            v = EVAL_RULES[e.op](self.ev, e, out, [], None, self.backend)
            return [v if p in active else None for p in range(n)]
        if e.op == "elem":
            return [per[p][0][e.attrs["index"]] if p in active else None for p in range(n)]
        fn = op_method(self.backend, e.op, " needed by the Evaluator")
        return [fn(out, *per[p], **e.attrs) if p in active else None for p in range(n)]

    # --- helpers for collective rules ----------------------------------------------------
    def np(self, t):
        return t.to_numpy()

    def wrap(self, arr, out):
        return self.backend.from_numpy(_contiguous(arr), out.type, out.names)

    def check_groups(self, groups, active, op):
        for g in groups:
            on = [p in active for p in g]
            if any(on) and not all(on):
                raise RuntimeError(
                    f"{op}: partitions {[p for p in g if p in active]} run this collective but "
                    f"{[p for p in g if p not in active]} of the same group do not (they took "
                    f"another branch of a cond or left a while_loop); on XLA this deadlocks")


# ----------------------------------------------------------------------------------------
# Control flow inside a body: devices may diverge
# ----------------------------------------------------------------------------------------
@register_spmd_rule("cond")
def _cond(s: Spmd, e, out, per, active, env):
    take = {p: taken_branch(per[p]) for p in active}
    res = [None] * s.n
    for i, fn in enumerate(e.fns):
        sub = {p for p in active if take[p] == i}
        if sub:
            outs = s.run(fn, [[] for _ in range(s.n)], sub, env)
            for p in sub:
                res[p] = outs[p]
    return res


@register_spmd_rule("call")
def _call(s: Spmd, e, out, per, active, env):
    return s.run(e.fns[0], per, active, env)


@register_spmd_rule("hook")
def _hook(s: Spmd, e, out, per, active, env):
    fn = e.attrs["fn"]
    local = set(s.mesh.local_partitions)
    for p in sorted(active):
        x = per[p][0]
        if p in local:
            fn(Tensor(x.data, x.shape, x.type, out.names, x.backend, s.mesh.devices[p]))
    return [per[p][0] if p in active else None for p in range(s.n)]


@register_spmd_rule("runtime_call")
def _runtime_call(s: Spmd, e, out, per, active, env):
    """Each device calls ``fn`` with its own shard and device and gets its own result
    (every simulated device, the other processes' too: their values feed collectives)."""
    call = e.attrs["call"]
    res = [None] * s.n
    for p in sorted(active):
        got = call(host_args(e.args[0], per[p][0], s.mesh.devices[p]))
        res[p] = [s.wrap(a, o) for a, o in zip(got, out)]
    return res


@register_spmd_rule("while")
def _while(s: Spmd, e, out, per, active, env):
    c_fn, b_fn = e.fns
    state = [list(per[p][0]) if p in active else None for p in range(s.n)]
    running = set(active)
    while running:
        preds = s.run(c_fn, state, running, env)
        running = {p for p in running if bool(preds[p][0])}
        if not running:
            break
        new = s.run(b_fn, state, running, env)
        for p in running:
            state[p] = new[p]
    return state


# ----------------------------------------------------------------------------------------
# Collectives (local view)
# ----------------------------------------------------------------------------------------
@register_spmd_rule("all_gather")
def _all_gather(s: Spmd, e, out, per, active, env):
    o = e.args[1]
    groups, d = o["replica_groups"], o["all_gather_dim"]
    s.check_groups(groups, active, "all_gather")
    res = [None] * s.n
    for g in groups:
        if g[0] not in active:
            continue
        parts = [s.np(per[p][0]) for p in g]
        arr = np.concatenate(parts, axis=d) if o["tiled"] else np.stack(parts, axis=d)
        for p in g:
            res[p] = s.wrap(arr, out)
    return res


_REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


def _reduce_group(s, parts, op, t):
    dt = compute_dtype(parts[0].dtype)
    acc = parts[0].astype(dt)
    with np.errstate(all="ignore"):
        for x in parts[1:]:
            acc = _REDUCE[op](acc, x.astype(dt))
    return acc


@register_spmd_rule("all_reduce")
def _all_reduce(s: Spmd, e, out, per, active, env):
    groups = e.attrs["groups"]
    s.check_groups(groups, active, "all_reduce")
    res = [None] * s.n
    for g in groups:
        if g[0] not in active:
            continue
        r = s.wrap(_reduce_group(s, [s.np(per[p][0]) for p in g], e.attrs["reduction"],
                                 out.type), out)
        for p in g:
            res[p] = r
    return res


@register_spmd_rule("reduce_scatter")
def _reduce_scatter(s: Spmd, e, out, per, active, env):
    a = e.attrs
    s.check_groups(a["groups"], active, "reduce_scatter")
    res = [None] * s.n
    for g in a["groups"]:
        if g[0] not in active:
            continue
        total = _reduce_group(s, [s.np(per[p][0]) for p in g], "sum", out.type)
        chunks = np.split(total, len(g), axis=a["scatter_dim"])
        for k, p in enumerate(g):
            res[p] = s.wrap(chunks[k].reshape(out.shape), out)
    return res


@register_spmd_rule("all_to_all")
def _all_to_all(s: Spmd, e, out, per, active, env):
    a = e.attrs
    s.check_groups(a["groups"], active, "all_to_all")
    sa, ca = a["split_axis"], a["concat_axis"]
    res = [None] * s.n
    for g in a["groups"]:
        if g[0] not in active:
            continue
        chunks = [np.split(s.np(per[p][0]), len(g), axis=sa) for p in g]
        for j, p in enumerate(g):
            recv = [chunks[k][j] for k in range(len(g))]
            if a["tiled"]:
                arr = np.concatenate(recv, axis=ca)
            else:
                arr = np.stack([np.squeeze(r, axis=sa) for r in recv], axis=ca)
            res[p] = s.wrap(arr, out)
    return res


@register_spmd_rule("collective_permute")
def _collective_permute(s: Spmd, e, out, per, active, env):
    pairs = e.attrs["pairs"]
    for src, dst in pairs:
        if (src in active) != (dst in active):
            raise RuntimeError(f"collective_permute: partition {src} sends to {dst} but only "
                               f"one of them runs it (divergent control flow); on XLA this "
                               f"deadlocks")
    res = [s.wrap(np.zeros(out.shape, out.type.dtype), out) if p in active else None
           for p in range(s.n)]
    for src, dst in pairs:
        if src in active:
            res[dst] = per[src][0]
    return res


@register_spmd_rule("collective_broadcast")
def _collective_broadcast(s: Spmd, e, out, per, active, env):
    groups = e.attrs["groups"]
    s.check_groups(groups, active, "collective_broadcast")
    res = [None] * s.n
    for g in groups:
        if g[0] in active:
            for p in g:
                res[p] = per[g[e.attrs["source"]]][0]
    return res


def _axis_index(mesh, axes, p):
    coords = mesh.coords(p)
    idx = 0
    for a in axes:
        idx = idx * mesh.shape[a] + coords[a]
    return idx


@register_spmd_rule("axis_index")
def _axis_index_rule(s: Spmd, e, out, per, active, env):
    return [s.wrap(np.array(_axis_index(s.mesh, e.attrs["axes"], p)), out) if p in active else None
            for p in range(s.n)]


@register_spmd_rule("all_slice")
def _all_slice(s: Spmd, e, out, per, active, env):
    a = e.attrs
    n = 1
    for ax in a["axes"]:
        n *= s.mesh.shape[ax]
    res = [None] * s.n
    for p in active:
        k = _axis_index(s.mesh, a["axes"], p)
        res[p] = s.wrap(np.split(s.np(per[p][0]), n, axis=a["slice_dim"])[k], out)
    return res


# ----------------------------------------------------------------------------------------
# The shard_map node, in the Evaluator
# ----------------------------------------------------------------------------------------
@register_eval_rule("shard_map")
def _shard_map(ev, e, out, args, env, backend, **ctx):
    mesh = e.attrs["mesh"]
    (body,) = e.fns
    in_sh, out_sh = e.attrs["in_specs"], e.attrs["out_specs"]
    per_device = [[None] * len(args) for _ in range(mesh.size)]
    for i, (x, sh) in enumerate(zip(args, in_sh)):
        for p, part in enumerate(sh.shard_array(x.to_numpy())):
            per_device[p][i] = backend.from_numpy(_contiguous(part), x.type, x.names)
    spmd = Spmd(ev, backend, mesh, env)
    outs = spmd.run(body, per_device, set(range(mesh.size)))
    result = []
    for o, sh in enumerate(out_sh):
        parts = [outs[p][o].to_numpy() for p in range(mesh.size)]
        g = sh.unshard(parts, check=False, what=f"shard_map output {o}")
        t = outs[0][o]
        result.append(backend.from_numpy(g, t.type, t.names))
    return result
