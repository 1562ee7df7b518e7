"""``shard_map``: per-shard programs (the local view, JAX semantics).

Inside, a function sees its own shard and calls collectives by mesh axis. Specs are
``P(...)`` (nxpy's or JAX's ``PartitionSpec``), ``None``, Nx's ``{tensor_dim: [mesh_axes]}``
dicts, or per-dim tuples (``("x", None)``). A ``P``, ``None`` or a dict is one spec for all
arguments; a list, or a tuple of specs, has one per argument (JAX's pytree prefix); a
per-dim tuple is one spec where it cannot be one per argument and an error where the two
readings differ (:func:`nxpy.defn.sharding.specs.is_one_spec`, docs/containers_and_specs.md).

>>> import nxpy as nx
>>> from nxpy.defn import shard_map, psum, axis_index
>>> mesh = nx.Mesh("mesh", (2, 2), axis_names=("x", "y"))
>>> f = shard_map(lambda a: psum(a * (axis_index("x") + 1), "x"), mesh,
...               in_specs=("x", None), out_specs=(None, None))
>>> f(nx.tensor([[1, 1], [10, 10]])).tolist()
[[21, 21]]
>>> g = shard_map(lambda a: a, mesh, in_specs=(("x", "y"),), out_specs=nx.P())
>>> g(nx.iota((4, 2)))  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
nxpy.defn.sharding.specs.AmbiguousSpecError: shard_map: in_specs for the 1 argument(s) (a):
(('x', 'y'),) is ambiguous: a plain tuple of axes reads as one spec for every entry,
P(('x', 'y')), or as one spec per entry, (P('x', 'y'),). Write P(('x', 'y')) for the first
or (P('x', 'y'),) for the second
"""
from __future__ import annotations

import functools

from .. import _context
from .. import shape as S
from ..cache import program_cache_size, put_bounded
from ..layout import NamedSharding, read_sharding
from ..mesh import Mesh, get_mesh
from ..ops import primitive, to_tensor
from .sharding import explicit as EX, specs as SH
from . import tree as tree_mod
from .sharding.collectives import current_mesh, mesh_context
from .core import jit
from .static_args import check_static_options
from .tracing import _arg_names, check_donate_argnums
from .expr import EXPR, trace_fn
from .sharding.varying import analyze, divergent_collective, op_axes

__all__ = ["shard_map", "ShardMap", "varying_axes"]

primitive("control flow", "shard_map")


def _normalized(labelled, templates, mesh, what):
    """Each ``(label, spec)`` read for its template, errors naming the tensor."""
    out = []
    for (label, spec), (shape, _, names) in zip(labelled, templates):
        try:
            out.append(read_sharding(spec, shape, mesh, names, what=f"{what} of {label}"))
        except (ValueError, TypeError) as e:
            raise type(e)(f"shard_map: {e}") from None
    return out


def _fmt_axes(mesh, axes):
    return ", ".join(repr(mesh.axis_names[a]) for a in sorted(axes))


class ShardMap:
    """The callable ``shard_map`` returns. Inside a defn it records a ``shard_map`` node;
    called directly it jits itself (with ``compiler=`` if given)."""

    def __init__(self, fun, mesh, in_specs, out_specs, check_vma=True, *, static_argnums=None,
                 static_argnames=None, **jit_opts):
        if not callable(fun):
            raise TypeError(f"shard_map: expected fun to be a callable, got {fun!r}")
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"shard_map: expected mesh to be an nx.Mesh (or None: the context "
                            f"mesh), got {mesh!r}")
        functools.update_wrapper(self, fun, updated=())
        self.fun, self.mesh = fun, mesh
        self.in_specs, self.out_specs = in_specs, out_specs
        self.check_vma = S.boolean(check_vma, "shard_map: check_vma")
        self._jit = None
        self._jit_opts = jit_opts
        self._statics = check_static_options(fun, static_argnums, static_argnames,
                                             "shard_map")
        self._by_static: dict = {}

    def __call__(self, *args, **kwargs):
        if self._statics is not None:
            return self._call_static(args, kwargs)
        if kwargs:
            raise TypeError(f"shard_map: arguments are passed by position (in_specs gives "
                            f"one spec per positional argument), got keyword arguments "
                            f"{sorted(kwargs)}")
        if not _context.tracing():
            if self._jit is None:
                self._jit = jit(lambda *a: self(*a), **self._jit_opts)
            return self._jit(*args)
        return self._trace(args)

    def _call_static(self, args, kwargs):
        """The ShardMap of ``fun`` with these static values bound (one per distinct
        values, see :mod:`nxpy.defn.static_args`) on the dynamic arguments: ``in_specs``
        gives their specs; ``donate_argnums`` counts every argument, as in JAX."""
        st = self._statics
        dyn, dyn_kw, key, static_pos, static_kw = st.split(args, kwargs)
        inner = self._by_static.get(key)
        if inner is None:
            opts = dict(self._jit_opts)
            if opts.get("donate_argnums") is not None:
                opts["donate_argnums"] = st.donate(
                    check_donate_argnums(opts["donate_argnums"], "shard_map"), static_pos)
            inner = put_bounded(self._by_static, key, ShardMap(
                st.bind(self.fun, static_pos, static_kw), self.mesh, self.in_specs,
                self.out_specs, self.check_vma, **opts), program_cache_size())
        return inner(*dyn, **dyn_kw)

    def _trace(self, args):
        ctx = current_mesh()
        if ctx is not None and ctx.view == "local":
            raise ValueError("shard_map cannot be nested inside another shard_map")
        mesh = self.mesh if self.mesh is not None else ctx.mesh if ctx is not None else \
            get_mesh()
        if mesh is None:
            raise ValueError("shard_map: no mesh: pass mesh=, or set a context mesh with "
                             "nx.set_mesh(mesh) (as a context manager: `with "
                             "nx.set_mesh(mesh):`)")
        explicit = EX.explicit_axes_of(mesh)
        if self.in_specs is INFER and not explicit:
            raise TypeError(
                f"shard_map: in_specs was not given, and inferring it from the arguments' "
                f"sharding types needs mesh axes of type AxisType.Explicit (as in JAX); the "
                f"axes of {mesh!r} are AxisType.Auto, whose layouts are not part of a "
                f"value's type: give in_specs")
        if ctx is not None and ctx.mesh != mesh:
            raise ValueError(f"shard_map over {mesh!r} inside a shard_jit over {ctx.mesh!r}: "
                             f"use the same mesh")
        leaves, tree = tree_mod.flatten(tuple(args))
        inputs = [EXPR.lift(to_tensor(x, f"argument leaf {i}")) for i, x in enumerate(leaves)]
        # over explicit axes an argument's layout is part of its type: in_specs left out
        # are inferred from it, and given ones must agree with it (JAX's rules)
        types = [_explicit_layout(x, mesh, explicit) for x in inputs] if explicit else None
        if self.in_specs is INFER:
            labelled = [(f"argument leaf {i}", t) for i, t in enumerate(types)]
        else:
            try:
                labelled = SH.per_argument_specs(self.in_specs, tree,
                                                 _arg_names(self.fun, len(args)), "in_specs")
            except (ValueError, TypeError) as e:
                raise type(e)(f"shard_map: {e}") from None
        in_sh = _normalized(labelled, [(x.shape, x.type, x.names) for x in inputs], mesh,
                            "in_specs")
        if types is not None and self.in_specs is not INFER:
            for x, sh, t in zip(inputs, in_sh, types):
                if EX.explicit_part(sh.axes(len(x.shape)), explicit) != t.axes(len(x.shape)):
                    raise ValueError(
                        f"in_specs passed to shard_map: {sh.spec!r} does not match the specs "
                        f"of the input: {t.spec!r} for arg: {EX.typeof(x)}. `in_specs` is an "
                        f"optional argument so you can omit specifying it and shard_map will "
                        f"infer the in_specs from the arguments. If you want to reshard your "
                        f"inputs, you can use `nx.reshard` on the arguments and then pass "
                        f"those args to shard_map.")
        for (label, _), x, sh in zip(labelled, inputs, in_sh):
            for d, axes in enumerate(sh.axes(len(x.shape))):
                f = sh.factor(d)
                if x.shape[d] % f:
                    raise ValueError(f"shard_map: dim {d} of {label} (size "
                                     f"{x.shape[d]}) is not divisible by {f} (mesh axes "
                                     f"[{_fmt_axes(mesh, axes)}])")
        local = [(s.local_shape(x.shape), x.type, x.names) for x, s in zip(inputs, in_sh)]
        in_axes = [s.used_axes for s in in_sh]

        def run(a, ctx):
            for p, axes in zip(tree_mod.flatten(a)[0], in_axes):
                ctx.varying[p.data.id] = axes  # what grad inside the body starts from
            ctx.straight.add(_context.current())
            return self.fun(*a)

        with mesh_context(mesh, view="local") as ctx:
            body = trace_fn(lambda a: run(a, ctx), local, tree=tree, parent=_context.current())
        try:
            out_labels = SH.output_specs(self.out_specs, body.tree, "out_specs")
        except (ValueError, TypeError) as e:
            raise type(e)(f"shard_map: {e}") from None
        out_sh = _normalized(out_labels, body.templates, mesh, "out_specs")
        templates = [(sh.global_shape(o.shape), o.type, o.names)
                     for o, sh in zip(body.outputs, out_sh)]
        if self.check_vma:
            memo = analyze(body, in_axes, mesh)
            found = divergent_collective(body, memo)
            if found:
                raise ValueError(_divergence_message(mesh, *found))
            outs_vma = [memo.get(o.data.id, frozenset()) for o in body.outputs]
            for (label, _), v, sh in zip(out_labels, outs_vma, out_sh):
                missing = v - sh.used_axes
                if missing:
                    raise ValueError(
                        f"shard_map: {label} is declared replicated over mesh axes "
                        f"[{_fmt_axes(mesh, missing)}] (its out_spec does not name them) but "
                        f"its value varies along them; name them in out_specs, reduce over "
                        f"them (psum, all_gather), or pass check_vma=False")
        outs = EXPR.multi("shard_map", templates, *inputs, fns=(body,), mesh=mesh,
                          in_specs=tuple(in_sh), out_specs=tuple(out_sh))
        return tree_mod.unflatten(body.tree, outs)


def _explicit_layout(x, mesh, explicit) -> NamedSharding:
    """The layout over ``mesh``'s explicit axes that ``x``'s type carries."""
    sh = EX.typeof(x).sharding
    if sh is None or sh.mesh.abstract != mesh.abstract:
        return NamedSharding(mesh)
    return NamedSharding.from_axes(mesh, EX.explicit_part(sh.axes(len(x.shape)), explicit))


#: what the front end calls the collective a node records
_FRONT_NAMES = {("all_reduce", "sum"): "psum", ("all_reduce", "max"): "pmax",
                ("all_reduce", "min"): "pmin", ("reduce_scatter", None): "psum_scatter",
                ("collective_permute", None): "ppermute"}


def _divergence_message(mesh, ctl, index, axes, coll):
    """The error for a collective under control flow that devices may run differently."""
    where = ctl.fns[-1].where
    at = f" at {where.split(', body ')[0]}" if where else ""
    c_axes = op_axes(coll)
    front = _FRONT_NAMES.get((coll.op, coll.attrs.get("reduction")))
    name = f"{coll.op} ({front})" if front else coll.op
    both = axes & c_axes
    arg = _axes_arg(mesh, both)
    if ctl.op == "cond":
        part = (("the on_true branch", "the on_false branch")[index] if len(ctl.fns) == 2
                else f"branch {index}")
        what = (f"the cond{at} has a predicate that varies along mesh axes "
                f"[{_fmt_axes(mesh, axes)}] (devices may take different branches), and "
                f"{part} runs the collective {name} over mesh axes [{_fmt_axes(mesh, c_axes)}]")
        fix = (f"make the predicate the same on every device of a group first (compute it "
               f"from values reduced over {arg} with pmax/pmin/psum, or all_gathered), or "
               f"move the collective out of the cond")
    else:
        part = "condition" if index == 0 else "body"
        what = (f"the while_loop{at} has a condition that varies along mesh axes "
                f"[{_fmt_axes(mesh, axes)}] (devices may run different numbers of "
                f"iterations), and its {part} runs the collective {name} over mesh axes "
                f"[{_fmt_axes(mesh, c_axes)}]")
        fix = (f"make the condition the same on every device of a group (compute it from "
               f"values reduced over {arg} with pmax/pmin/psum, for example a trip count "
               f"pmax(n, {arg})), or move the collective out of the loop")
    return (f"shard_map: {what}: on XLA the devices of a group along "
            f"[{_fmt_axes(mesh, both)}] would not all run it (they wait for each other "
            f"forever, or the collective combines values of devices on different paths). "
            f"Fix: {fix}. check_vma=False skips this check (docs/sharding.md says what each "
            f"compiler then does)")


def _axes_arg(mesh, axes):
    names = [mesh.axis_names[a] for a in sorted(axes)]
    return repr(names[0]) if len(names) == 1 else repr(tuple(names))


#: ``in_specs`` left out: JAX's ``jax.sharding.Infer`` (inferred from the arguments' types)
INFER = type("Infer", (), {"__repr__": lambda self: "Infer", "__slots__": ()})()
_REQUIRED = object()


def shard_map(fun=None, mesh=None, in_specs=INFER, out_specs=_REQUIRED, *, axis_names=None,
              check_vma=True, static_argnums=None, static_argnames=None,
              **jit_opts) -> ShardMap:
    """Runs ``fun`` on each device's shard, over ``mesh`` (by default the context mesh:
    :func:`nx.set_mesh`, or the mesh of the ``jit`` it is traced in). Nx's positional
    form ``shard_map(fun, mesh, in_specs, out_specs)`` and JAX's keyword form
    ``shard_map(fun, out_specs=..., in_specs=..., mesh=...)`` are the same; without
    ``fun`` it is a decorator (``@shard_map(out_specs=P())``).

    >>> import nxpy as nx
    >>> from nxpy.defn import shard_map, psum
    >>> with nx.set_mesh(nx.make_mesh((2,), ("i",))):
    ...     @shard_map(out_specs=nx.P())
    ...     def total(a):
    ...         return psum(nx.sum(a, keep_axes=True), "i")
    ...     total(nx.reshard(nx.iota((4,)), nx.P("i"))).tolist()
    [6]

    ``in_specs``: one spec per argument (or one
    spec for all); ``out_specs``: one per output (or one for all); which a tuple is
    follows :func:`nxpy.defn.sharding.specs.is_one_spec`. Over explicit mesh axes
    (``nx.make_mesh``'s) an argument's layout is part of its type: left out, ``in_specs``
    are inferred from it, and given ones must agree with it (a ValueError otherwise, as in
    JAX: ``nx.reshard`` the argument first); over Auto axes they are required.
    ``axis_names``: the mesh axes the body sees per device (JAX's manual axes); all of
    them, the default, is the one choice nxpy takes. With ``check_vma`` (the
    default) an output declared replicated over an axis along which its value provably
    varies is an error, and so is a collective inside a ``cond`` (or ``while_loop``) whose
    predicate (condition) varies along the collective's axes: the devices of one of its
    groups could take different paths (with ``check_vma=False`` the Evaluator raises when
    they do, and EXLA runs what XLA runs: see docs/sharding.md).
    ``static_argnums``/``static_argnames`` pass those arguments to ``fun`` as the values
    themselves, one program per distinct values (as for :func:`~nxpy.defn.jit`);
    ``in_specs`` then gives the specs of the other arguments."""
    if out_specs is _REQUIRED:
        raise TypeError("shard_map: out_specs is missing (one spec per output, or one for "
                        "all: out_specs=P() for a replicated result)")
    if axis_names is not None:
        names = {axis_names} if isinstance(axis_names, str) else set(axis_names)
        mesh_of = mesh if mesh is not None else get_mesh()
        if mesh_of is None or names != set(mesh_of.axis_names):
            raise NotImplementedError(
                f"shard_map: axis_names={sorted(names)} makes only some mesh axes manual "
                f"(the others automatic), which nxpy does not support; the body sees every "
                f"mesh axis per device (leave axis_names out)"
                + ("" if mesh_of is None else f": the mesh's axes are {list(mesh_of.axis_names)}"))
    if fun is None:
        return lambda f: ShardMap(f, mesh, in_specs, out_specs, check_vma,
                                  static_argnums=static_argnums,
                                  static_argnames=static_argnames, **jit_opts)
    return ShardMap(fun, mesh, in_specs, out_specs, check_vma, static_argnums=static_argnums,
                    static_argnames=static_argnames, **jit_opts)


def varying_axes(fn, param_axes, mesh) -> list[frozenset]:
    """For each output of ``fn`` (a shard_map body), the mesh axes along which its value
    varies between devices (see :mod:`nxpy.defn.sharding.varying`)."""
    memo = analyze(fn, param_axes, mesh)
    return [memo.get(o.data.id, frozenset()) for o in fn.outputs]


@SH.register_result_rule("shard_map")
def _propagate_result(prop, e, index):
    """Global view: a shard_map result is laid out as its out_spec says."""
    return e.attrs["out_specs"][index].axes(len(e.outs[index][0]))
