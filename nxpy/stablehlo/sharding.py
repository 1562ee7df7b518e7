"""Sharded modules: ``sdy.mesh``, ``#sdy.sharding``, ``sdy.manual_computation`` and the
collectives, loaded as nxpy's ``shard_jit`` / ``shard_map`` and collectives.

* The module's meshes become ``nx.Mesh`` objects (same name, axes and sizes; the
  ``device_ids`` if given, else the first devices).
* The entry function's ``sdy.sharding`` argument and result attributes become
  ``shard_jit``'s ``input_shardings`` and ``output_shardings``
  (:meth:`Program.shard_jit <nxpy.stablehlo.loader.Program.shard_jit>`).
* ``sdy.manual_computation`` over all mesh axes becomes ``shard_map`` with its in and out
  shardings as specs — except that, inside ``shard_jit``, one that only all-gathers a dim
  (what nxpy emits for the global-view ``all_gather``) becomes the global-view
  ``all_gather``.
* Inside it, ``stablehlo.all_gather`` / ``all_reduce`` / ``reduce_scatter`` /
  ``all_to_all`` / ``collective_permute`` / ``collective_broadcast`` become nxpy's
  collectives over the mesh axes whose groups are the op's replica groups (and
  ``axis_index_groups`` when the groups split those further); ``partition_id`` becomes
  ``axis_index`` over all axes.
* Replica groups are read in both forms JAX prints: dense lists of device ids
  (``dense<[[0, 2], [1, 3]]>``, jax 0.10) and mesh axes
  (``#stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [...]>``, jax 0.12), which
  :func:`replica_groups` resolves to the same device groups.
* Identical ``sdy.mesh`` definitions under several names (jax 0.12 prints ``@mesh`` and
  ``@mesh_0``) are one ``nx.Mesh``.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import ops as nx
from ..defn.sharding import collectives as C
from .rules import LoadError, _fail, binary_body, constant, register_op, rtype
from .syntax import DenseElements, Mesh as MeshSyntax, ReplicaGroupMeshAxes, Sharding
from ..mesh import Mesh
from ..defn import shard_jit
from ..defn.sharding import specs as SH
from ..defn import trace
from ..defn import tree as tree_mod
from ..defn.placement import with_sharding_constraint
from ..defn.shard_map import shard_map
from ..layout import read_sharding

__all__ = ["program_mesh", "is_sharded", "shard_jit_program", "debug_expr_sharded",
           "replica_groups", "same_mesh", "identical_meshes", "axes_for_groups",
           "axes_for_pairs"]


# ----------------------------------------------------------------------------------------
# Meshes and shardings of the entry function
# ----------------------------------------------------------------------------------------
def _nx_mesh(m: MeshSyntax, name=None):
    return Mesh(name or m.name or "mesh", m.shape, axis_names=m.axis_names,
                devices=m.device_ids or None)


def same_mesh(a: MeshSyntax, b: MeshSyntax) -> bool:
    """Whether two mesh definitions are the same mesh: the same axes (names and sizes, in
    order) and the same devices (no ``device_ids`` is ``0, 1, ...``); names and the
    ``{stablehlo.mesh = ...}`` attributes do not count."""
    def ids(m):
        return list(m.device_ids) if m.device_ids else list(range(math.prod(m.shape)))
    return list(a.axes) == list(b.axes) and ids(a) == ids(b)


def identical_meshes(module, name) -> list:
    """The names of the module's ``sdy.mesh`` definitions identical to ``@name``
    (:func:`same_mesh`; ``name`` itself included), in module order."""
    m = module.mesh(name)
    return [o.name for o in module.meshes if same_mesh(o, m)]


def _axisless(module, sh: Sharding) -> bool:
    """Whether ``sh`` is over a mesh without axes (``sdy.mesh @empty_mesh = <[]>``, which
    JAX prints for a program with a typed PRNG key): a sharding that says nothing."""
    if isinstance(sh.mesh, MeshSyntax):
        return not sh.mesh.axes
    try:
        return not module.mesh(sh.mesh).axes
    except KeyError:
        return False


def _distinct_meshes(module) -> list:
    """The module's mesh definitions with axes, one per distinct mesh (the first name of
    each); an axis-less mesh is no mesh."""
    out = []
    for m in module.meshes:
        if not m.axes:
            continue
        if not any(same_mesh(m, o) for o in out):
            out.append(m)
    return out


def program_mesh(program, name=None):
    """The ``nx.Mesh`` of the module's mesh ``name`` (default: the only one). Identical
    ``sdy.mesh`` definitions under different names (jax 0.12 prints ``@mesh`` and an
    identical ``@mesh_0``) are one mesh: the same ``nx.Mesh``, named after the first."""
    module = program.module
    if name is None:
        distinct = _distinct_meshes(module)
        if len(distinct) != 1:
            listed = ", ".join(f"@{m.name} = {m}" for m in module.meshes)
            raise LoadError(f"expected one sdy.mesh (or identical ones) to run the module over; "
                            f"it has {len(distinct)} different ones ({listed or 'none'}): "
                            f"name one")
        name = distinct[0].name
    if name not in program._meshes:
        try:
            m = module.mesh(name)
        except KeyError as e:
            raise LoadError(str(e.args[0])) from None
        same = identical_meshes(module, m.name)
        given = [program._meshes[n] for n in same if n in program._meshes]
        mesh = given[0] if given else _nx_mesh(module.mesh(same[0]))
        for n in same:
            program._meshes.setdefault(n, mesh)
    return program._meshes[name]


def _mesh_of(program, sh: Sharding):
    if isinstance(sh.mesh, MeshSyntax):
        key = "#inline" + str(sh.mesh)
        if key not in program._meshes:
            program._meshes[key] = _nx_mesh(sh.mesh, "mesh")
        return program._meshes[key]
    return program_mesh(program, sh.mesh)


def _entry_shardings(program):
    f = program.func

    def named(sh):
        return isinstance(sh, Sharding) and not _axisless(program.module, sh)
    shardings = [a.sharding for a in f.args] + [r.sharding for r in f.results]
    given = [s for s in shardings if named(s)]
    mesh = _mesh_of(program, given[0]) if given else (
        program_mesh(program) if _distinct_meshes(program.module) else None)
    ins = [a.sharding.spec if named(a.sharding) else {} for a in f.args]
    outs = [r.sharding.spec if named(r.sharding) else {} for r in f.results]
    if not any(named(r.sharding) for r in f.results):
        outs = None  # the module leaves them to propagation: so does nxpy
    return mesh, ins, outs


def is_sharded(program) -> bool:
    """Whether the entry function has a sharded argument or result (so it runs under
    ``shard_jit``, at global shapes)."""
    _, ins, outs = _entry_shardings(program)
    return any(ins) or any(outs or ())


def shard_jit_program(program, compiler=None, mesh=None, **opts):
    m, ins, outs = _entry_shardings(program)
    if m is None:
        raise LoadError("the module has no sdy.mesh: it is not a sharded program "
                        "(call it with jit instead)")
    if mesh is not None:
        if (mesh.shape, mesh.axis_names) != (m.shape, m.axis_names):
            raise ValueError(f"mesh {mesh!r} does not match the module's mesh {m!r}")
        program = program.with_meshes({m.name: mesh})
        m = mesh
    return shard_jit(program, m, input_shardings=ins, output_shardings=outs, compiler=compiler,
                     **opts)


def debug_expr_sharded(program):
    """The Expr graph of a sharded program, traced as ``shard_jit`` traces it."""
    m, ins, _ = _entry_shardings(program)
    templates = program.templates
    in_sh = [read_sharding(s, t.shape, m) for s, t in zip(ins, templates)]
    with C.mesh_context(m, SH.Propagator(m, in_sh)):
        graph = trace(program, templates)
    return tree_mod.unflatten(graph.tree, graph.outputs)


# ----------------------------------------------------------------------------------------
# Replica groups → mesh axes
# ----------------------------------------------------------------------------------------
def _mesh_axes_groups(mesh: MeshSyntax, axes) -> list:
    """The device groups of a collective over ``axes`` (:class:`AxisRef` objects) of ``mesh``:
    the mesh's device ids laid out in its shape, each axis split at its sub-axes' bounds,
    the named (sub-)axes moved to the front in the order named, one group per position of
    the other axes (JAX's rule for the dense form)."""
    sizes = dict(mesh.axes)
    cuts = {n: {1, k} for n, k in mesh.axes}
    spans = []
    for ref in axes:
        if ref.name not in sizes:
            raise ValueError(f"axis {ref.name!r} is not an axis of mesh {mesh} (axes "
                             f"{', '.join(repr(n) for n, _ in mesh.axes) or 'none'})")
        lo, hi = 1, sizes[ref.name]
        if ref.sub_axis is not None:
            pre, size = ref.sub_axis
            lo, hi = pre, pre * size
            if pre < 1 or size < 1 or sizes[ref.name] % hi:
                raise ValueError(f"sub-axis {ref} of axis {ref.name!r} (size "
                                 f"{sizes[ref.name]}): expected pre_size * size to divide the "
                                 f"axis size")
        cuts[ref.name] |= {lo, hi}
        spans.append((ref, lo, hi))
    dims, parts = [], {}
    for n, _ in mesh.axes:
        bounds = sorted(cuts[n])
        for lo, hi in zip(bounds, bounds[1:]):
            if hi % lo:
                raise ValueError(f"the sub-axes of axis {n!r} named in {', '.join(map(str, axes))} "
                                 f"do not nest (sizes {bounds})")
            parts[(n, lo)] = (len(dims), hi)
            dims.append(hi // lo)
    picked = []
    for ref, lo, hi in spans:
        picked += [d for (n, a), (d, b) in sorted(parts.items(), key=lambda kv: kv[1][0])
                   if n == ref.name and lo <= a and b <= hi]
    if len(set(picked)) != len(picked):
        raise ValueError(f"axes {', '.join(map(str, axes))} overlap")
    ids = np.asarray(mesh.device_ids if mesh.device_ids else range(math.prod(mesh.shape)),
                     dtype=np.int64)
    if ids.size != math.prod(mesh.shape):
        raise ValueError(f"mesh {mesh}: expected {math.prod(mesh.shape)} device ids, got "
                         f"{ids.size}")
    n = math.prod(dims[d] for d in picked)
    cols = np.moveaxis(ids.reshape(dims), picked, list(range(len(picked)))).reshape(n, -1).T
    return [[int(v) for v in g] for g in cols]


def replica_groups(module, value) -> list:
    """The device groups (lists of device ids) of a ``replica_groups`` attribute, in either
    form JAX prints: a dense list (``dense<[[0, 2], [1, 3]]>``, jax 0.10; JAX's ``-1``
    padding of uneven groups dropped) or mesh axes
    (``#stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [...]>``, jax 0.12) over
    an ``sdy.mesh`` of ``module`` or an inline mesh. Both resolve to the same groups: for
    mesh axes, the mesh's device ids (``0, 1, ...`` without ``device_ids``) in its shape,
    grouped along the named axes as JAX groups them for the dense form. Raises
    ``ValueError`` naming what was expected and given.

    >>> from nxpy.stablehlo.syntax import AxisRef, Mesh, Module, ReplicaGroupMeshAxes as R
    >>> m = Module(meshes=[Mesh("m", [("x", 2), ("y", 2)])])
    >>> replica_groups(m, R("m", [AxisRef("x")]))
    [[0, 2], [1, 3]]
    >>> replica_groups(m, R("m", [AxisRef("y"), AxisRef("x")]))
    [[0, 2, 1, 3]]
    >>> replica_groups(m, R(Mesh(None, [("x", 4)]), [AxisRef("x", (2, 2))]))
    [[0, 1], [2, 3]]
    >>> replica_groups(m, [[0, 1], [2, -1]])
    [[0, 1], [2]]
    """
    if isinstance(value, DenseElements):
        value = value.tolist()
    if isinstance(value, ReplicaGroupMeshAxes):
        mesh = value.mesh
        if isinstance(mesh, str):
            try:
                mesh = module.mesh(mesh)
            except KeyError:
                have = ", ".join("@" + m.name for m in module.meshes) or "none"
                raise ValueError(f"{value}: expected @{mesh} to name an sdy.mesh of the module "
                                 f"(it has {have})") from None
        try:
            return _mesh_axes_groups(mesh, value.axes)
        except ValueError as e:
            raise ValueError(f"{value}: {e}") from None
    if isinstance(value, list) and all(isinstance(g, list) for g in value):
        return [[int(p) for p in g if int(p) >= 0] for g in value]
    raise ValueError(f"expected replica groups as dense<[[...]]> or "
                     f"#stablehlo.replica_group_mesh_axes<...>, got {value!r}")


def _candidates(mesh):
    n = len(mesh.shape)
    for k in range(1, n + 1):
        yield from itertools.permutations(range(n), k)


def axes_for_groups(mesh, groups):
    """The mesh axes (indices, in order) whose collective groups are ``groups`` — and the
    ``axis_index_groups`` when ``groups`` split those groups further; None if no axes do.

    >>> from nxpy import Mesh
    >>> m = Mesh("m", (2, 2))
    >>> axes_for_groups(m, [[0, 2], [1, 3]]), axes_for_groups(m, [[0, 1, 2, 3]])
    (((0,), None), ((0, 1), None))
    >>> axes_for_groups(m, [[0], [1], [2], [3]])
    ((), None)
    """
    groups = [[int(p) for p in g] for g in groups]
    want = sorted(tuple(g) for g in groups)
    if all(len(g) == 1 for g in groups) and sorted(p for g in groups for p in g) == \
            list(range(mesh.size)):
        return (), None
    for axes in _candidates(mesh):
        if sorted(tuple(g) for g in mesh.groups(axes)) == want:
            return tuple(axes), None
    for axes in _candidates(mesh):  # a refinement: axis_index_groups
        big = mesh.groups(axes)
        aig = None
        ok = True
        for h in big:
            inside = [g for g in groups if set(g) <= set(h)]
            idx = sorted([h.index(p) for p in g] for g in inside)
            if aig is None:
                aig = idx
            ok = ok and idx == aig and sum(map(len, inside)) == len(h)
        if ok and aig and len(aig) > 1:
            return tuple(axes), aig
    return None


def axes_for_pairs(mesh, pairs):
    """``(axes, perm)`` such that nxpy's ``collective_permute(x, axes, perm)`` sends exactly
    along the source-target ``pairs`` (partition ids); None if no mesh axes do."""
    pairs = sorted((int(s), int(d)) for s, d in pairs)
    for axes in _candidates(mesh):
        groups = mesh.groups(axes)
        where = {p: (gi, g.index(p)) for gi, g in enumerate(groups) for p in g}
        perm = set()
        ok = True
        for s, d in pairs:
            (gs, ps), (gd, pd) = where[s], where[d]
            ok = ok and gs == gd
            perm.add((ps, pd))
        if not ok:
            continue
        perm = sorted(perm)
        if sorted((g[s], g[d]) for g in groups for s, d in perm) == pairs:
            return tuple(axes), perm
    return None


# ----------------------------------------------------------------------------------------
# Ops
# ----------------------------------------------------------------------------------------
def _local_mesh(scope, op):
    ctx = C.current_mesh()
    if ctx is None or ctx.view != "local":
        _fail(op, scope, "a collective outside sdy.manual_computation: nxpy runs collectives "
                         "inside shard_map (a manual computation over all mesh axes)",
              unsupported=True)
    return ctx.mesh


def _op_groups(scope, op) -> list:
    """The op's replica groups as device groups (:func:`replica_groups`)."""
    try:
        return replica_groups(scope.program.module, op.attributes["replica_groups"])
    except ValueError as e:
        _fail(op, scope, str(e))


def _groups_axes(scope, op, mesh):
    groups = _op_groups(scope, op)
    found = axes_for_groups(mesh, groups)
    if found is None:
        given = op.attributes["replica_groups"]
        how = "" if isinstance(given, DenseElements) else f" (from {given})"
        _fail(op, scope, f"replica groups {groups}{how} are not the groups of any mesh axes of "
                         f"{mesh!r}", unsupported=True)
    return found


_COLLECTIVE_REDUCERS = {"stablehlo.add": "sum", "stablehlo.maximum": "max",
                        "stablehlo.minimum": "min"}
_PRED_COLLECTIVE_REDUCERS = {"stablehlo.or": "max", "stablehlo.and": "min",
                             "stablehlo.maximum": "max", "stablehlo.minimum": "min"}


def _reducer(scope, op, t):
    kind = binary_body(op.regions[0])
    table = _PRED_COLLECTIVE_REDUCERS if t.is_pred else _COLLECTIVE_REDUCERS
    if kind not in table:
        _fail(op, scope, "a collective whose reducer is not a single add, maximum or minimum",
              unsupported=True)
    return table[kind]


def _one_operand(scope, op, xs):
    """The operand of a collective given one (the variadic forms are not supported)."""
    if len(xs) != 1:
        _fail(op, scope, f"an {op.name.split('.')[-1]} of {len(xs)} operands", unsupported=True)
    return xs[0]


@register_op("stablehlo.all_gather")
def _all_gather(scope, op, *xs):
    x = _one_operand(scope, op, xs)
    mesh = _local_mesh(scope, op)
    axes, aig = _groups_axes(scope, op, mesh)
    if not axes:
        return x
    return C.all_gather(x, all_gather_dim=int(op.attributes["all_gather_dim"]), axes=axes,
                        axis_index_groups=aig)


@register_op("stablehlo.all_reduce")
def _all_reduce(scope, op, *xs):
    x = _one_operand(scope, op, xs)
    mesh = _local_mesh(scope, op)
    how = _reducer(scope, op, x.type)
    axes, aig = _groups_axes(scope, op, mesh)
    if not axes:
        return x
    return C.all_reduce(x, axes, how, axis_index_groups=aig)


@register_op("stablehlo.reduce_scatter")
def _reduce_scatter(scope, op, x):
    mesh = _local_mesh(scope, op)
    if _reducer(scope, op, x.type) != "sum":
        _fail(op, scope, "a reduce_scatter that does not add", unsupported=True)
    axes, aig = _groups_axes(scope, op, mesh)
    if not axes:
        return x
    return C.reduce_scatter(x, axes, int(op.attributes["scatter_dimension"]), tiled=True,
                            axis_index_groups=aig)


@register_op("stablehlo.all_to_all")
def _all_to_all(scope, op, *xs):
    x = _one_operand(scope, op, xs)
    mesh = _local_mesh(scope, op)
    a = op.attributes
    axes, aig = _groups_axes(scope, op, mesh)
    if not axes:
        return x
    return C.all_to_all(x, axes, int(a["split_dimension"]), int(a["concat_dimension"]),
                        tiled=True, axis_index_groups=aig)


@register_op("stablehlo.collective_permute")
def _collective_permute(scope, op, x):
    mesh = _local_mesh(scope, op)
    pairs = op.attributes["source_target_pairs"].tolist()
    if not pairs:
        shape, t = rtype(op)
        return constant(scope, 0, t, shape)
    found = axes_for_pairs(mesh, pairs)
    if found is None:
        _fail(op, scope, f"source-target pairs {pairs} do not permute along any mesh axes of "
                         f"{mesh!r}", unsupported=True)
    axes, perm = found
    return C.collective_permute(x, axes, perm)


@register_op("stablehlo.collective_broadcast")
def _collective_broadcast(scope, op, x):
    mesh = _local_mesh(scope, op)
    axes, aig = _groups_axes(scope, op, mesh)
    if aig is not None:
        _fail(op, scope, "a collective_broadcast over part of a mesh axis group",
              unsupported=True)
    if not axes:
        return x
    return C.collective_broadcast(x, axes, 0)


@register_op("stablehlo.partition_id")
def _partition_id(scope, op):
    mesh = _local_mesh(scope, op)
    _, t = rtype(op)
    return nx.as_type(C.axis_index(tuple(range(len(mesh.shape)))), t)


@register_op("stablehlo.replica_id")
def _replica_id(scope, op):
    shape, t = rtype(op)
    return constant(scope, 0, t, shape)


@register_op("sdy.sharding_constraint", "sdy.reshard")
def _sharding_constraint(scope, op, x):
    """nxpy's ``with_sharding_constraint`` (the global values do not change; the layout
    does), or the value itself inside a manual computation, where it means nothing."""
    ctx = C.current_mesh()
    sh = op.attributes["sharding"]
    if (ctx is not None and ctx.view == "local") or _axisless(scope.program.module, sh):
        return x
    mesh = _mesh_of(scope.program, sh)
    if ctx is not None and (ctx.mesh.shape, ctx.mesh.axis_names) == (mesh.shape, mesh.axis_names):
        mesh = ctx.mesh  # the mesh the program runs over (its devices)
    return with_sharding_constraint(x, read_sharding(sh.spec, x.shape, mesh, what=op.name))


@register_op("sdy.manual_computation")
def _manual_computation(scope, op, *operands):
    a = op.attributes
    ins, outs = a["in_shardings"], a["out_shardings"]
    program = scope.program
    meshes = {id(_mesh_of(program, s)): _mesh_of(program, s) for s in ins + outs}
    if len(meshes) != 1:
        _fail(op, scope, "shardings over several meshes", unsupported=True)
    (mesh,) = meshes.values()
    if set(a["manual_axes"]) != set(mesh.axis_names):
        _fail(op, scope, f"a manual computation over axes {list(a['manual_axes'])} of "
                         f"{mesh!r}: nxpy's shard_map is manual over all mesh axes",
              unsupported=True)
    region = op.regions[0]
    ctx = C.current_mesh()
    if ctx is not None and ctx.view == "global":
        r = _global_all_gather(scope, op, operands, mesh, ins, outs)
        if r is not None:
            return r
    if ctx is not None and ctx.view == "local":
        _fail(op, scope, "a manual computation nested in another", unsupported=True)

    def body(*local):
        return tuple(scope.run_region(region, list(local)))

    sm = shard_map(body, mesh, in_specs=[s.spec for s in ins], out_specs=[s.spec for s in outs],
                   check_vma=False)
    return list(sm(*operands))


def _global_all_gather(scope, op, operands, mesh, ins, outs):
    """nxpy's global-view all_gather (a manual computation that only all-gathers one dim
    over the minor-most axes sharding it), or None."""
    region = op.regions[0]
    body = region.ops
    if len(operands) != 1 or len(body) != 2 or body[0].name != "stablehlo.all_gather" or \
            body[1].name != "sdy.return":
        return None
    ag, ret = body
    if [str(u) for u in ag.operands] != [region.args[0].name] or \
            [str(u) for u in ret.operands] != ag.results:
        return None
    found = axes_for_groups(mesh, _op_groups(scope, ag))
    if found is None or found[1] is not None or not found[0]:
        return None
    names = tuple(mesh.axis_names[i] for i in found[0])
    d = int(ag.attributes["all_gather_dim"])
    before, after = ins[0].axes, outs[0].axes
    k = len(names)
    if tuple(before[d][-k:]) != names or tuple(after[d]) != tuple(before[d][:-k]) or any(
            b != a for i, (b, a) in enumerate(zip(before, after)) if i != d):
        return None
    try:
        return [C.all_gather(operands[0], all_gather_dim=d, axes=list(names))]
    except ValueError:
        return None  # nxpy's propagated sharding differs: fall back to shard_map

