"""Sharding specs of arguments and results (containers of them), splitting/assembling
tensors, and sharding propagation over Expr graphs.

The entry points read the specs a user hands in here: one spec, or a container of specs
matching the arguments or the result (JAX's pytree prefix), each read for its tensor by
:func:`nxpy.layout.read_sharding` into a :class:`~nxpy.NamedSharding`. Propagation
computes with each value's per-dim axes (a tuple with one entry per dim: the mesh axes,
indices major to minor, that split it; ``()`` is replicated), the form its rules take
and return; :meth:`Propagator.layout` gives a value's ``NamedSharding``.

>>> leaf_specs({"w": {1: [1]}, "b": None}, tree_mod.flatten({"w": 1, "b": 2})[1], "p", "spec")
[("p['w']", {1: [1]}), ("p['b']", None)]
"""
from __future__ import annotations

import math

from ... import ops as O
from ...layout import NamedSharding, P, as_partition_spec, is_axes_entry, read_sharding
from ...ops.core import derive_rule
from ...registry import rule_registrar
from ...tensor import Tensor
from .. import tree as tree_mod
from ..expr import Expr

__all__ = ["is_one_spec", "leaf_specs", "per_argument_specs", "output_specs",
           "AmbiguousSpecError", "Propagator", "SHARDING_RULES", "RESULT_RULES",
           "register_result_rule", "register_sharding_rule", "shard", "assemble", "spec_key",
           "check_spec_kinds"]


class AmbiguousSpecError(ValueError):
    """A plain tuple of per-dim entries that reads both as one spec for all and as one
    spec per entry (argument, output, container field), with different meanings."""


def _positional_count(subtree):
    """How many specs a plain tuple may hold for ``subtree`` read one per entry (the
    arguments' tuple, a tuple, list, positional container or namedtuple); None where a
    tuple can only be one spec (a tensor, a dict or a keyed container)."""
    if not isinstance(subtree, tuple):
        return None
    if subtree[0] in ("tuple", "list"):
        return len(subtree[1])
    if subtree[0] == "node":
        if subtree[3] is None:
            return len(subtree[4])
        if hasattr(subtree[1], "_fields"):
            return len(subtree[1]._fields)
    return None


def _as_p(entries):
    """A per-dim tuple as the P it means, in its shortest spelling (trailing None
    dropped, a one-axis tuple as the axis)."""
    entries = list(entries or ())
    while entries and entries[-1] is None:
        entries.pop()
    return P(*[e[0] if isinstance(e, tuple) and len(e) == 1 else e for e in entries])


def _per_dim_is_one_spec(spec, n) -> bool:
    """The rule for a plain tuple of per-dim entries (each None, an axis, or a tuple of
    axes) standing where ``n`` specs could stand one per entry. It is one spec for all
    when it cannot be one per entry: it names an axis directly (``("x", None)``) or its
    length is not ``n``. Otherwise it is one per entry when both readings give every
    entry the same spec (``(None, None)``), and ambiguous when they differ: an error,
    never a guess."""
    if n is None or any(isinstance(e, (str, int)) for e in spec) or len(spec) != n:
        return True
    one, each = _as_p(spec), [_as_p(e) for e in spec]
    if all(e == one for e in each):
        return False
    each = "(" + ", ".join(map(repr, each)) + ("," if n == 1 else "") + ")"
    raise AmbiguousSpecError(
        f"{spec!r} is ambiguous: a plain tuple of axes reads as one spec for every entry, "
        f"{one!r}, or as one spec per entry, {each}. Write {one!r} for the first or {each} "
        f"for the second")


def is_one_spec(spec, subtree=None) -> bool:
    """Whether ``spec`` is one spec (for every tensor of ``subtree``, a container tree)
    rather than a container of specs: a ``P``, None, a per-dim tuple of axes, or a dict
    of ``{tensor_dim: axes}`` (a dict whose values are not axes, or whose keys are those
    of a dict ``subtree`` or the fields of a namedtuple/dataclass one, is a container of
    specs). A list is always a container; a plain tuple is one unless it holds only
    per-dim entries, and then :func:`_per_dim_is_one_spec` decides (or raises
    :class:`AmbiguousSpecError`).

    >>> from nxpy.defn.tree import flatten
    >>> args = flatten((1, 2))[1]  # two arguments
    >>> is_one_spec(("x", None), args), is_one_spec((None, None), args)
    (True, False)
    >>> is_one_spec((("x", "y"),), flatten((1,))[1])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    nxpy.defn.sharding.specs.AmbiguousSpecError: (('x', 'y'),) is ambiguous: a plain tuple of axes
    reads as one spec for every entry, P(('x', 'y')), or as one spec per entry,
    (P('x', 'y'),). Write P(('x', 'y')) for the first or (P('x', 'y'),) for the second
    """
    if spec is None or as_partition_spec(spec) is not None:
        return True
    if isinstance(spec, dict):
        if not all(is_axes_entry(v) or (isinstance(v, list) and is_axes_entry(tuple(v)))
                   for v in spec.values()):
            return False  # its values are specs
        if isinstance(subtree, tuple) and subtree[0] in ("dict", "node"):
            keys = subtree[1] if subtree[0] == "dict" else subtree[3]
            return keys is None or not set(keys) <= set(spec)
        return True
    if type(spec) is tuple:  # a tuple of specs holds a P, a dict or a container
        return all(is_axes_entry(e) for e in spec) and \
            _per_dim_is_one_spec(spec, _positional_count(subtree))
    return not isinstance(spec, (tuple, list)) and not tree_mod.is_container(spec)


def check_spec_kinds(spec, option, what, path=""):
    """Every spec in ``spec`` (one spec or a container of them) is a kind of spec; a leaf
    that is none (``3.5``, a string) is a TypeError naming ``option``, before any mesh is
    looked for (JAX's "leaf specifications are expected to be PartitionSpec")."""
    if spec is None or isinstance(spec, NamedSharding) or as_partition_spec(spec) is not None:
        return
    if isinstance(spec, dict):
        if not is_one_spec(spec):  # a dict of specs, not {tensor_dim: axes}
            for k, v in spec.items():
                check_spec_kinds(v, option, what, f"{path}[{k!r}]")
        return
    if isinstance(spec, (list, tuple)):
        if not (type(spec) is tuple and all(is_axes_entry(e) for e in spec)):  # per-dim
            for i, v in enumerate(spec):
                check_spec_kinds(v, option, what, f"{path}[{i}]")
        return
    if tree_mod.is_container(spec):  # a dataclass or registered container of specs
        for i, v in enumerate(tree_mod.flatten(spec)[0]):
            check_spec_kinds(v, option, what, f"{path} leaf {i}")
        return
    at = f" at {option}{path}" if path else ""
    raise TypeError(f"{what}: expected {option} to be a P (PartitionSpec), a NamedSharding, a "
                    f"{{tensor_dim: [mesh_axes]}} dict, None, or a container of them, got "
                    f"{spec!r} ({type(spec).__name__}){at}")


def leaf_specs(specs, tree, root, what) -> list:
    """``[(label, spec)]`` for each leaf of ``tree`` (a value's tree): ``specs`` is one
    spec or a container of specs matching ``tree`` (JAX's pytree prefix)."""
    return tree_mod.match_prefix(specs, tree, is_one_spec, root, what)


def per_argument_specs(specs, args_tree, names, what, one_for_all=True) -> list:
    """``[(label, spec)]`` for each tensor of the arguments (``args_tree``: their tuple's
    tree; ``names``: theirs): ``specs`` is one spec per argument (a list or tuple, each
    a spec or a container of specs for that argument's containers) or, with
    ``one_for_all``, one spec for all (see :func:`is_one_spec` for which a tuple is)."""
    children = args_tree[1]
    try:
        one = one_for_all and is_one_spec(specs, args_tree)
    except AmbiguousSpecError as e:
        raise AmbiguousSpecError(f"{what} for the {len(children)} argument(s) "
                                 f"({', '.join(names)}): {e}") from None
    if one:
        specs = [specs] * len(children)
    if not isinstance(specs, (list, tuple)):
        raise TypeError(f"expected {what} to be a list with one spec per argument, got "
                        f"{specs!r}")
    if len(specs) != len(children):
        raise ValueError(f"expected {len(children)} {what} (one per argument), got {len(specs)}")
    out = []
    for i, (spec, t, name) in enumerate(zip(specs, children, names)):
        for path, s in leaf_specs(spec, t, name, what):
            out.append((f"argument {i} ({path})", s))
    return out


_ONE = ("tuple", (tree_mod.LEAF,))  # where a one-tensor result may take a 1-tuple of specs


def output_specs(specs, out_tree, what) -> list:
    """``[(label, spec)]`` for each output tensor: one spec for all, a container of specs
    matching the result (a prefix of it), or a flat list with one spec per output tensor."""
    n = tree_mod.count_leaves(out_tree)
    try:
        one = is_one_spec(specs, _ONE if out_tree == tree_mod.LEAF else out_tree)
    except AmbiguousSpecError as e:
        raise AmbiguousSpecError(f"{what} for the result "
                                 f"({tree_mod.tree_str(out_tree)}): {e}") from None
    if out_tree != tree_mod.LEAF:
        try:
            return [(f"output {i} (result{p})", s) for i, (p, s) in enumerate(
                tree_mod.match_prefix(specs, out_tree, is_one_spec, "", what))]
        except AmbiguousSpecError:
            raise
        except ValueError:
            if not isinstance(specs, (list, tuple)) or len(specs) != n:
                raise
    elif one:
        return [("output 0", specs)]
    elif not isinstance(specs, (list, tuple)) or len(specs) != 1:
        raise ValueError(f"expected 1 {what} (the result is one tensor), got {specs!r}")
    return [(f"output {i}", s) for i, s in enumerate(specs)]


def spec_key(spec):
    """A user's sharding spec (dicts, lists, P, NamedSharding, containers of them) as a
    hashable cache key."""
    p = as_partition_spec(spec)
    if p is not None or isinstance(spec, NamedSharding):
        return p if p is not None else spec
    if isinstance(spec, dict):
        return ("dict", tuple(sorted((str(k), spec_key(v)) for k, v in spec.items())))
    if isinstance(spec, (list, tuple)):
        return (type(spec), tuple(spec_key(v) for v in spec))
    if tree_mod.is_container(spec):  # a dataclass or registered container of specs
        return (type(spec), tree_mod.static_key(spec))
    return spec


def shard(t, mesh, sharding, *, partitions=None) -> list:
    """Splits a global tensor into per-device tensors (partition order) for ``sharding``
    (any one spec, see :func:`nxpy.layout.read_sharding`); ``partitions``: only those
    partitions' pieces."""
    t = O.to_tensor(t, "tensor")
    parts = read_sharding(sharding, t.shape, mesh, t.names).shard_array(
        t.to_numpy(), partitions=partitions)
    return [t.backend.from_numpy(a, t.type, t.names) for a in parts]


def assemble(per_device, mesh, sharding, *, check=True):
    """The global tensor from per-device tensors (partition order) and their sharding.
    Containers work too: ``per_device[p]`` a container of tensors and ``sharding`` one
    spec for all of them or the same container of specs (as ``output_shardings`` reports
    them)."""
    if len(per_device) != mesh.size:
        raise ValueError(f"expected {mesh.size} per-device results, got {len(per_device)}")
    flat = [tree_mod.flatten(v) for v in per_device]
    tree = flat[0][1]
    out = []
    for i, (label, spec) in enumerate(leaf_specs(sharding, tree, "output", "sharding")):
        ts = [O.to_tensor(f[0][i]) for f in flat]
        layout = read_sharding(spec, ts[0].shape, mesh, ts[0].names, what="sharding")
        arr = layout.unshard([t.to_numpy() for t in ts], check=check, what=label)
        out.append(O.tensor(arr, ts[0].type, names=ts[0].names if any(ts[0].names) else None))
    return tree_mod.unflatten(tree, out)


# ----------------------------------------------------------------------------------------
# Propagation
# ----------------------------------------------------------------------------------------
SHARDING_RULES: dict = {}


register_sharding_rule = rule_registrar(
    SHARDING_RULES, "register_sharding_rule", "a sharding rule",
    """Decorator: ``rule(prop, expr, arg_shardings) -> sharding`` for ``ops``; ops without a
    rule produce replicated results.""")


class Propagator:
    """Lazily computes (and memoises) the sharding of every node reachable from what is
    asked, from the parameters' layouts (``params``: one ``NamedSharding`` per top-level
    parameter). Results are always valid: a dim whose size is not divisible by its axes
    becomes replicated, and no axis is used twice. :meth:`of` gives a value's per-dim
    axes (what the rules compute with), :meth:`layout` its ``NamedSharding``."""

    def __init__(self, mesh, params=()):
        self.mesh = mesh
        self.params = list(params)
        self.memo: dict = {}

    def layout(self, x) -> NamedSharding:
        """The layout of ``x`` (a tensor or single-result node of the graph)."""
        return NamedSharding.from_axes(self.mesh, self.of(x))

    def of(self, x) -> tuple:
        e = x.data if isinstance(x, Tensor) else x
        if e.id in self.memo:
            return self.memo[e.id]
        todo, seen, stack = [], set(), [e]
        while stack:
            n = stack.pop()
            if n.id in seen or n.id in self.memo:
                continue
            seen.add(n.id)
            todo.append(n)
            stack.extend(n.tensor_args())
        for n in sorted(todo, key=lambda n: n.id):
            self.memo[n.id] = self._compute(n)
        return self.memo[e.id]

    def _compute(self, e: Expr):
        if e.outs is not None:  # multi-result nodes (cond, while): their elems replicate
            return None
        if e.op == "parameter" and e.scope.parent is None and self.params:
            return self.params[e.attrs["index"]].axes(len(e.shape))
        rule = SHARDING_RULES.get(e.op)
        if rule is None:
            return ((),) * len(e.shape)
        args = [self._arg(a) for a in e.args]
        return self.valid(rule(self, e, args), e.shape)

    def _arg(self, a):
        if isinstance(a, Tensor) and isinstance(a.data, Expr):
            return self.memo[a.data.id]
        if isinstance(a, list):
            return [self._arg(x) for x in a]
        return None

    def valid(self, sharding, shape) -> tuple:
        """Drops axes of non-divisible dims and axes already used by an earlier dim."""
        used, out = set(), []
        for d, axes in enumerate(sharding):
            axes = tuple(a for a in axes if a not in used)
            if shape[d] % math.prod(self.mesh.shape[a] for a in axes):
                axes = ()
            used.update(axes)
            out.append(axes)
        return tuple(out)


def _same(prop, e, args):
    return args[0]


def _merge(shardings_by_dim):
    """Per output dim, the operands' axes where they agree (as Shardy resolves them): the
    longest candidate when every other is a prefix of it (a replicated operand dim agrees
    with anything), replicated when two conflict (``("x",)`` against ``("y",)``)."""
    out = []
    for cands in shardings_by_dim:
        cands = [c for c in cands if c]
        best = max(cands, key=len, default=())
        out.append(best if all(best[:len(c)] == c for c in cands) else ())
    return tuple(out)


def _elementwise(prop, e, args):
    """Operands broadcast right-aligned; a broadcast (size-1) dim contributes nothing."""
    rank = len(e.shape)
    cands = [[] for _ in range(rank)]
    for a, sh in zip(e.args, args):
        if not isinstance(a, Tensor):
            continue
        off = rank - len(a.shape)
        for d, axes in enumerate(sh or ()):
            if a.shape[d] == e.shape[off + d]:
                cands[off + d].append(axes)
    return _merge(cands)


derive_rule(SHARDING_RULES, "elementwise")(_elementwise)
derive_rule(SHARDING_RULES, "windowed")(_same)  # a window slides over each dim in place
# the result is laid out as the first operand: its dims in place (a window by a function,
# select-and-scatter's result of the operand's shape)
register_sharding_rule("reverse", "put_slice", "hook", "window_reduce", "window_scatter_max",
                       "window_scatter_min")(_same)


#: how each result of an op with several results is laid out, by op:
#: ``rule(prop, node, index) -> sharding``; the results of other ops are replicated
RESULT_RULES: dict = {}

register_result_rule = rule_registrar(
    RESULT_RULES, "register_result_rule", "a sharding rule for the results of an op",
    """Decorator: ``rule(prop, node, index) -> sharding`` of result ``index`` of ``node``
    (an op with several results) for the ops named.""")


@register_sharding_rule("elem")
def _elem(prop, e, args):
    parent = e.args[0]
    rule = RESULT_RULES.get(parent.op)
    return rule(prop, parent, e.attrs["index"]) if rule else ((),) * len(e.shape)


@register_result_rule("optimization_barrier")
def _barrier_result(prop, e, index):
    return prop.memo[e.tensor_args()[index].id]  # each result is laid out as its operand


@register_sharding_rule("broadcast")
def _broadcast(prop, e, args):
    (x,) = e.tensor_args()
    out = [()] * len(e.shape)
    for i, a in enumerate(e.attrs["axes"]):
        if x.shape[i] == e.shape[a]:
            out[a] = args[0][i]
    return tuple(out)


@register_sharding_rule("transpose")
def _transpose(prop, e, args):
    return tuple(args[0][a] for a in e.attrs["axes"])


@register_sharding_rule("reshape")
def _reshape(prop, e, args):
    """Dims are matched in groups of equal element counts. Within a group the input's
    axes are read major to minor, going on to the next dim only past a dim its axes split
    completely (one element per shard: the blocks stay contiguous), and dealt out to the
    output dims major to minor by the same rule; an axis that does not divide what is left
    of its dim ends the group. This is the layout JAX's partitioner gives a reshape."""
    (x,) = e.tensor_args()
    src, dst, sh = x.shape, e.shape, args[0]
    mesh = prop.mesh
    out = [()] * len(dst)
    for gi, gj in _reshape_groups(src, dst):
        axes = []
        for k in gi:
            axes.extend(sh[k])
            if src[k] // math.prod(mesh.shape[a] for a in sh[k]) > 1:
                break
        for k in gj:
            left, taken = dst[k], []
            while axes and left % mesh.shape[axes[0]] == 0:
                left //= mesh.shape[axes[0]]
                taken.append(axes.pop(0))
            out[k] = tuple(taken)
            if left > 1 or not axes:
                break
    return tuple(out)


def _reshape_groups(src, dst):
    """``[(input dims, output dims)]``: the runs of dims of equal element counts."""
    groups, i, j = [], 0, 0
    while i < len(src) or j < len(dst):
        gi, gj = [i] if i < len(src) else [], [j] if j < len(dst) else []
        pi = src[i] if i < len(src) else 1
        pj = dst[j] if j < len(dst) else 1
        while pi != pj:
            if pi < pj and i + 1 < len(src):
                i += 1
                gi.append(i)
                pi *= src[i]
            elif j + 1 < len(dst):
                j += 1
                gj.append(j)
                pj *= dst[j]
            else:
                return []
        groups.append((gi, gj))
        i, j = i + 1, j + 1
    return groups


def _drop(sh, axes, keep):
    return tuple(() if d in axes else a for d, a in enumerate(sh) if keep or d not in axes)


@derive_rule(SHARDING_RULES, "reduction")
@register_sharding_rule("reduce")  # a reduction by a function: the operand is args[0]
def _reduce(prop, e, args):
    return _drop(args[0], set(e.attrs["axes"]), e.attrs["keep_axes"])


@derive_rule(SHARDING_RULES, "arg_reduction")
def _arg_reduce(prop, e, args):
    return _drop(args[0], {e.attrs["axis"]}, e.attrs["keep_axis"])


@register_sharding_rule("dot")
def _dot(prop, e, args):
    a, b = e.tensor_args()
    at = e.attrs
    sa, sb = args
    fa = [i for i in range(len(a.shape)) if i not in at["contract_a"] and i not in at["batch_a"]]
    fb = [i for i in range(len(b.shape)) if i not in at["contract_b"] and i not in at["batch_b"]]
    batch = [sa[i] or sb[j] for i, j in zip(at["batch_a"], at["batch_b"])]
    return tuple(batch + [sa[i] for i in fa] + [sb[j] for j in fb])


@register_sharding_rule("slice", "dynamic_slice")
def _slice(prop, e, args):
    (x,) = [t for t in e.tensor_args()][:1]
    return tuple(a if e.shape[d] == x.shape[d] and e.attrs["strides"][d] == 1 else ()
                 for d, a in enumerate(args[0]))


@register_sharding_rule("pad")
def _pad(prop, e, args):
    return tuple(a if cfg == (0, 0, 0) else () for a, cfg in zip(args[0], e.attrs["config"]))


@register_sharding_rule("concatenate")
def _concatenate(prop, e, args):
    axis = e.attrs["axis"]
    cands = [[sh[d] for sh in args[0]] if d != axis else [] for d in range(len(e.shape))]
    return _merge(cands)


@derive_rule(SHARDING_RULES, "along_axes")
@register_sharding_rule("permute_by_key")  # values laid out as the keys (args[0])
def _along_axes(prop, e, args):
    """The dims worked along are replicated (each needs its whole axis); the others keep
    their sharding."""
    axes = e.attrs["axes"] if "axes" in e.attrs else (e.attrs["axis"],)
    return tuple(() if d in axes else a for d, a in enumerate(args[0]))


@derive_rule(SHARDING_RULES, "batched_matrix")
def _batched_linalg(prop, e, args):
    """Linear algebra on a batch of matrices: the batch dims keep the first operand's
    sharding (each matrix is solved where it lives); the matrix dims are replicated."""
    nb = len(e.args[0].shape) - 2
    a = args[0] or ((),) * len(e.args[0].shape)
    return tuple(a[:nb]) + ((),) * (len(e.shape) - nb)


@register_sharding_rule("all_gather")
def _all_gather(prop, e, args):
    opts = e.args[1]
    d = opts["all_gather_dim"]
    sh = list(args[0])
    sh[d] = tuple(a for a in sh[d] if a not in opts["axes"])
    return tuple(sh)
