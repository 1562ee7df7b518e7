"""``shard_jit``: a defn run across a device mesh, in the global view (Nx/EXLA semantics).

``fun`` is traced at global shapes; ``input_shardings`` (one ``{tensor_dim: [mesh_axes]}``
dict per argument) say how each argument is split; nxpy propagates shardings through the
graph and decides the result shardings itself, so every compiler returns the same
per-device results.

>>> import nxpy as nx
>>> from nxpy.defn import shard_jit, all_gather
>>> mesh = nx.Mesh("mesh", (2, 2))
>>> f = shard_jit(lambda x: all_gather(x * 10, all_gather_dim=0), mesh,
...               input_shardings=[{0: [0], 1: [1]}], compiler="evaluator")
>>> args = [[t] for t in nx.defn.sharding.shard(nx.iota((4, 2)), mesh, {0: [0], 1: [1]})]
>>> [r.tolist() for r in f(args)]  # doctest: +NORMALIZE_WHITESPACE
[[[0], [20], [40], [60]], [[10], [30], [50], [70]],
 [[0], [20], [40], [60]], [[10], [30], [50], [70]]]
>>> f.output_shardings, f.output_sharding_dicts
(P(None, 'axis_1'), {1: [1]})
>>> f.compile_for(args).input_shardings
[P('axis_0', 'axis_1')]
"""
from __future__ import annotations

from .. import _context
from .. import shape as S
from ..cache import FunctionCache, program_cache_size, put_bounded
from ..layout import as_partition_spec, read_sharding
from ..mesh import Mesh
from ..ops import template, to_tensor
from ..tensor import Tensor, shape_str
from .sharding import specs as SH
from . import tree as tree_mod
from .core import Jit, _resolve, place_leaf
from .sharding.programs import ShardedExecutable, compile_program, trace_sharded
from .static_args import check_static_options
from .tracing import _arg_names, check_donate_argnums, donated_leaves

__all__ = ["shard_jit", "ShardJit", "ShardedExecutable"]


_SEQ = (list, tuple)
_FLAT_TREES: dict = {}

#: traced sharded programs and their executables, process-wide, keyed by the function:
#: ``(compiler, options, abstract mesh, shardings, argument templates)`` → the traced
#: program, and the same plus the mesh's devices → the compiled one
SHARDED = FunctionCache(bounded=True)


def _flat_tree(n):
    """The tree ``tree.flatten`` gives a tuple of ``n`` tensors."""
    t = _FLAT_TREES.get(n)
    if t is None:
        t = _FLAT_TREES[n] = ("tuple", (tree_mod.LEAF,) * n)
    return t


class ShardJit:
    """The callable ``shard_jit`` returns: ``f(per_device_args) -> per_device_results``."""

    def __init__(self, fun, mesh, input_shardings=None, output_shardings=None, compiler=None,
                 check_replicas=None, donate_argnums=None, *, static_argnums=None,
                 static_argnames=None, **opts):
        if not callable(fun):
            raise TypeError(f"shard_jit: expected fun to be a callable, got {fun!r}")
        self._statics = check_static_options(fun.fun if isinstance(fun, Jit) else fun,
                                             static_argnums, static_argnames, "shard_jit")
        self._by_static: dict = {}
        self._init = (mesh, input_shardings, output_shardings, compiler, check_replicas,
                      donate_argnums, opts)
        if not isinstance(mesh, Mesh):
            raise TypeError(f"shard_jit: expected mesh to be an nx.Mesh, got {mesh!r}")
        one = as_partition_spec(input_shardings)  # one P for every argument
        if one is None and not isinstance(input_shardings, (list, tuple)):
            raise ValueError(f"input_shardings are required and must be a list with one "
                             f"{{tensor_dim: [mesh_axes]}} dict per argument, got "
                             f"{input_shardings!r}")
        self.fun = fun.fun if isinstance(fun, Jit) else fun  # a jit inside shard_jit: its function
        self.mesh = mesh
        self.input_shardings = one if one is not None else list(input_shardings)
        self.output_shardings_spec = output_shardings
        if check_replicas is not None:
            S.boolean(check_replicas, "shard_jit: check_replicas")
        self.check_replicas = check_replicas
        self.donate_argnums = check_donate_argnums(donate_argnums, "shard_jit")
        self.compiler, self.opts = _resolve(compiler, opts)
        if not hasattr(self.compiler, "compile_sharded"):
            raise ValueError(f"compiler {self.compiler.name!r} has no sharded entry point "
                             f"(compile_sharded), so it cannot run shard_jit programs")
        self.cache: dict = {}
        self._read: dict = {}  # (argument tree, ranks and names) -> [(label, layout)]
        self.last = None
        self._local_parts = None

    # --- argument handling ----------------------------------------------------------------
    def _local(self):
        """This process's partitions of the mesh (all of them in one process)."""
        loc = self._local_parts
        if loc is None:
            loc = self._local_parts = self.mesh.local_partitions
            if not loc:
                raise ValueError(f"mesh {self.mesh.name!r} has no device of this process: "
                                 f"every process must own at least one of its devices")
        return loc

    def _local_args(self, per_device_args):
        """The arguments of this process's partitions: ``per_device_args`` holds either
        those (one list per local partition, in partition order) or every partition's
        (then this process keeps its own)."""
        mesh = self.mesh
        loc = self._local()
        if not isinstance(per_device_args, (list, tuple)) or len(per_device_args) not in (
                mesh.size, len(loc)):
            got = len(per_device_args) if isinstance(per_device_args, (list, tuple)) else \
                type(per_device_args).__name__
            local = "" if len(loc) == mesh.size else (
                f", or {len(loc)} (one per device of this process: partitions {loc})")
            raise ValueError(f"expected {mesh.size} argument lists (one per device of mesh "
                             f"{mesh.name!r}, in partition order){local}, got {got}")
        if len(per_device_args) != len(loc):
            per_device_args = [per_device_args[p] for p in loc]
        return per_device_args

    def _leaves(self, per_device_args):
        per_device_args = self._local_args(per_device_args)
        flat = []
        for p, args in enumerate(per_device_args):
            if not isinstance(args, (list, tuple)):
                raise TypeError(f"expected the arguments of device {p} to be a list, got "
                                f"{type(args).__name__}")
            leaves, tree = tree_mod.flatten(tuple(args))
            flat.append(([to_tensor(x, f"argument leaf {i} of device {p}")
                          for i, x in enumerate(leaves)], tree, len(args)))
        _, tree0, n0 = flat[0]
        for p, (leaves, tree, n) in enumerate(flat):
            if (tree, n) != (tree0, n0):
                raise ValueError(f"device {p} has {n} arguments of structure {tree}, device 0 "
                                 f"has {n0} of structure {tree0}: every device must get the "
                                 f"same arguments")
            for i, (a, b) in enumerate(zip(leaves, flat[0][0])):
                if (a.shape, a.type) != (b.shape, b.type):
                    raise ValueError(
                        f"argument leaf {i} is {a.type}{shape_str(a.shape)} on device {p} but "
                        f"{b.type}{shape_str(b.shape)} on device 0: every device must hold a "
                        f"shard of the same shape and type")
        return [f[0] for f in flat], tree0, n0

    def _leaf_specs(self, tree):
        """``[(label, spec)]`` for each argument tensor: one spec (or a container of specs
        for a container argument) per argument, or one P for all."""
        specs = self.input_shardings
        n = len(tree[1])
        if not isinstance(specs, list):
            specs = [specs] * n
        elif len(specs) != n:
            raise ValueError(f"expected {n} input sharding configuration(s), got {len(specs)}")
        names = _arg_names(self.fun, n)
        out = []
        for i, (spec, t) in enumerate(zip(specs, tree[1])):
            for path, s in SH.leaf_specs(spec, t, names[i], "input sharding"):
                out.append((f"input sharding {i}" if t == tree_mod.LEAF else
                            f"input sharding {i} ({path})", s))
        return out

    def _layouts(self, tree, templates) -> list:
        """``[(label, layout)]`` of the argument leaves, over ``self.mesh``: the specs read
        once per argument structure, ranks and names (all a layout depends on)."""
        key = (tree, tuple((len(t.shape), t.names) for t in templates))
        got = self._read.get(key)
        if got is None:
            got = put_bounded(self._read, key, [
                (label, read_sharding(spec, t.shape, self.mesh, t.names, what=label))
                for (label, spec), t in zip(self._leaf_specs(tree), templates)],
                program_cache_size())
        return got

    def _arg_shardings(self, tree, templates, mesh):
        return [s.on(mesh) for _, s in self._layouts(tree, templates)]

    def _fast_prepare(self, per_device_args):
        """The common case, checked quickly: every device gets a flat list (or tuple) of
        plain tensors, all devices the same shapes and types, and the program for them is
        already compiled. Returns ``(exe, per_device_leaves)``, or None for anything else
        (then ``_prepare`` validates in full and raises its errors). Accepts exactly the
        arguments ``_prepare`` accepts without compiling, with the same result."""
        loc = self._local_parts
        if type(per_device_args) not in _SEQ or loc is None or len(per_device_args) != len(loc):
            return None
        args0 = per_device_args[0]
        if type(args0) not in _SEQ:
            return None
        sig = []
        for x in args0:
            if type(x) is not Tensor:
                return None
            sig.append((x.shape, x.type))
        n = len(sig)
        for args in per_device_args:
            if type(args) not in _SEQ or len(args) != n:
                return None
            for x, (shape, type_) in zip(args, sig):
                if type(x) is not Tensor or x.shape != shape or x.type != type_:
                    return None
        key = (_flat_tree(n), tuple(sig))
        if self.mesh.is_abstract:
            key += (self._devices_of(per_device_args),)
        exe = self.cache.get(key)
        if exe is None or _context.tracing():
            return None
        self.last = exe
        return exe, per_device_args

    # --- compile and run ------------------------------------------------------------------
    def _prepare(self, per_device_args):
        _context.forbid_inside_defn("shard_jit(...)(args)")
        per_device_args = self._local_args(per_device_args)
        leaves, tree, _ = self._leaves(per_device_args)
        local = leaves[0]
        key = (tree, tuple((t.shape, t.type) for t in local))
        mesh = self.mesh
        if mesh.is_abstract:
            devices = self._devices_of(leaves)
            key += (devices,)
            if devices is not None:
                mesh = mesh.bind(devices)
        exe = self.cache.get(key)
        if exe is None:
            exe = put_bounded(self.cache, key, self._compile(tree, per_device_args[0], local, mesh),
                              program_cache_size())
        self.last = exe
        return exe, leaves

    def compile_for(self, per_device_args) -> ShardedExecutable:
        """Validates the arguments and compiles (or fetches) the program for them."""
        return self._prepare(per_device_args)[0]

    def _devices_of(self, per_device):
        """For an abstract mesh: the devices the arguments live on (the first leaf of each
        partition, when they are all on distinct devices), else None (the default)."""
        if len(per_device) != self.mesh.size:  # several processes: the default devices
            return None
        devices = []
        for args in per_device:
            if not args or type(args[0]) is not Tensor or args[0].device_id is None:
                return None
            devices.append(args[0].device_id)
        return tuple(devices) if len(set(devices)) == len(devices) else None

    def _compile(self, tree, args0, local, mesh):
        """The program for these local templates: traced and lowered once per process for
        the abstract mesh (a same-shaped mesh of other devices reuses both), compiled once
        per device assignment."""
        in_sh = tuple(self._arg_shardings(tree, local, mesh))
        key = (self.compiler, tuple(sorted(self.opts.items())), self.check_replicas,
               mesh.abstract, tuple(s.spec for s in in_sh),
               SH.spec_key(self.output_shardings_spec), tree,
               tuple((t.shape, t.type, t.names) for t in local), self.donate_argnums)
        donated = donated_leaves(args0, self.donate_argnums, self._where())
        traced = SHARDED.get(self.fun, key,
                             lambda: self._trace(tree, local, list(in_sh), donated, mesh))
        return SHARDED.get(self.fun, key + (mesh.devices,),
                           lambda: self._compile_traced(traced, mesh))

    def _where(self):
        return (f"shard_jit({getattr(self.fun, '__name__', 'function')}) "
                f"(donate_argnums={self.donate_argnums})")

    def _trace(self, tree, local, in_sh, donated, mesh):
        globals_ = [template(s.global_shape(t.shape), t.type, t.names)
                    for t, s in zip(local, in_sh)]
        args = tree_mod.unflatten(tree, globals_)
        graph, out_sh, prop = trace_sharded(
            self.fun, args, None, [(t.shape, t.type, t.names) for t in globals_], mesh, in_sh,
            self.output_shardings_spec, self.compiler, donated=donated, where=self._where(),
            what="output shardings")
        return graph, in_sh, out_sh, prop

    def _compile_traced(self, traced, mesh):
        graph, in_sh, out_sh, prop = traced  # traced over a mesh of the same axes
        in_sh, out_sh = [s.on(mesh) for s in in_sh], [s.on(mesh) for s in out_sh]
        opts = dict(self.opts)
        if self.check_replicas is not None:
            opts["check_replicas"] = self.check_replicas
        return compile_program(self.compiler, graph, mesh, in_sh, out_sh, prop, opts)

    def __call__(self, *args):
        """``f(per_device_args)`` (Nx's form: one argument list per device, see
        :func:`shard_jit`), or ``f(*global_tensors)`` (JAX's form: whole tensors, sharded
        ones or any others, laid out by ``input_shardings``; returns sharded tensors)."""
        if self._statics is not None:
            return self._call_static(args, False)
        if len(args) != 1 or _is_global(args[0]):
            return self._call_global_tensors(args)
        per_device_args = args[0]
        prepared = self._fast_prepare(per_device_args)
        exe, leaves = prepared if prepared is not None else self._prepare(per_device_args)
        outs = exe.run(leaves)
        if exe.single_output:
            return [o[0] for o in outs]
        return [tree_mod.unflatten(exe.graph.tree, o) for o in outs]

    def _inner(self, args):
        """The ShardJit of ``fun`` with the static values of ``args`` bound (one per
        distinct values, see :mod:`nxpy.defn.static_args`) and the dynamic arguments;
        ``input_shardings`` gives the dynamic arguments' shardings, ``donate_argnums``
        counts every argument, as in JAX."""
        st = self._statics
        dyn, _, key, static_pos, _ = st.split(args, {})
        inner = self._by_static.get(key)
        if inner is None:
            mesh, ins, outs, compiler, check, donate, opts = self._init
            inner = put_bounded(self._by_static, key, ShardJit(
                st.bind(self.fun, static_pos, {}), mesh, ins, outs, compiler, check,
                st.donate(self.donate_argnums, static_pos), **opts), program_cache_size())
        return inner, dyn, key

    def _call_static(self, args, whole):
        if not whole and len(args) == 1 and not _is_global(args[0]):  # per-device lists
            per_device = args[0]
            inner, _, key = self._inner(tuple(per_device[0]))
            dyn = []
            for p, a in enumerate(per_device):
                inner_p, d, k = self._inner(tuple(a))
                if k != key:
                    raise ValueError(f"shard_jit: device {p} gets other static arguments than "
                                     f"device 0; static arguments must be the same on every "
                                     f"device")
                dyn.append(list(d))
            out = inner(dyn)
        else:
            inner, dyn, _ = self._inner(args)
            out = inner.call_global(*dyn) if whole else inner(*dyn)
        self.last = inner.last
        return out

    def _call_global_tensors(self, args):
        """The global form: each argument tensor laid out as ``input_shardings`` says (a
        sharded tensor must be laid out so already; others are placed), results sharded."""
        _context.forbid_inside_defn("shard_jit(...)(args)")
        leaves, tree = tree_mod.flatten(tuple(args))
        leaves = [to_tensor(x, f"argument leaf {i}") for i, x in enumerate(leaves)]
        mesh = self.mesh
        self._local()
        placed, local = [], []
        for x, (label, sh) in zip(leaves, self._layouts(tree, leaves)):
            x = place_leaf(x, sh, f"shard_jit: {label}")
            placed.append(x)
            local.append(template(sh.local_shape(x.shape), x.type, x.names))
        key = (tree, tuple((t.shape, t.type) for t in local), "global")
        exe = self.cache.get(key)
        if exe is None:
            exe = put_bounded(self.cache, key,
                              self._compile(tree, tree_mod.unflatten(tree, placed), local, mesh),
                              program_cache_size())
        self.last = exe
        outs = exe.call_global(placed)
        return tree_mod.unflatten(exe.graph.tree, outs)

    def call_global(self, *args):
        """Calls the program with whole (global) tensors, one per argument, given alike
        on every process: each process slices out its own partitions' shards (per
        ``input_shardings``) and gets its own partitions' results."""
        if self._statics is not None:
            return self._call_static(args, True)
        leaves, tree = tree_mod.flatten(tuple(args))
        loc = self._local()
        cols = [SH.shard(to_tensor(x, label), self.mesh, spec, partitions=loc)
                for x, (label, spec) in zip(leaves, self._leaf_specs(tree))]
        per_arg = [list(tree_mod.unflatten(tree, [c[j] for c in cols])) for j in range(len(loc))]
        return self(per_arg)

    def debug_expr(self, per_device_args):
        """The program's outputs as Expr tensors, traced at global shapes under the mesh
        (so collectives appear); printing one shows the graph."""
        exe = self.compile_for(per_device_args)
        return tree_mod.unflatten(exe.graph.tree, exe.graph.outputs)

    def lower(self, per_device_args) -> str:
        """The module text (EXLA) for these arguments."""
        exe = self.compile_for(per_device_args)
        if exe.module is None:
            raise ValueError(f"compiler {self.compiler.name!r} does not produce a module")
        return exe.module

    def _last(self):
        if self.last is None:
            raise ValueError("call the function (or compile_for) first: result shardings "
                             "depend on the argument shapes")
        return self.last

    @property
    def output_shardings(self):
        """Result shardings of the most recently compiled program, as ``P``s equal to
        what one would pass as ``output_shardings`` (axes by name), in the result's
        container."""
        return self._last().output_shardings

    @property
    def output_sharding_dicts(self):
        """:attr:`output_shardings` as Nx's ``{dim: [axis indices]}`` dicts."""
        return self._last().output_sharding_dicts


def _is_global(a) -> bool:
    """Whether the one argument of a ``shard_jit`` call is a global tensor (JAX's form)
    rather than the per-device argument lists (Nx's)."""
    return not isinstance(a, (list, tuple)) or not all(isinstance(x, (list, tuple)) for x in a)


def shard_jit(fun, mesh, *, input_shardings=None, output_shardings=None, compiler=None,
              **opts) -> ShardJit:
    """Runs ``fun`` across ``mesh``. The result takes a list of per-device argument lists
    (partition order, each holding that device's local shards) and returns a list of
    per-device results (each tensor knows its ``device_id``). With several processes
    (``nxpy.distributed``) each process passes and gets its own partitions only
    (``mesh.local_partitions``; passing every partition's arguments works too), or calls
    ``f.call_global(*whole_tensors)``. ``donate_argnums`` gives
    those arguments' shards to the call, as for :func:`~nxpy.defn.jit`.

    Called with whole tensors instead (``f(x, y)``: sharded tensors, or any tensors,
    which are placed), it is ``jit(fun, in_shardings=input_shardings,
    out_shardings=output_shardings)`` over ``mesh`` and returns sharded tensors.
    ``static_argnums``/``static_argnames`` pass those arguments (the same on every
    device) to ``fun`` as the values themselves, one program per distinct values, as for
    :func:`~nxpy.defn.jit`; ``input_shardings`` then gives the other arguments'."""
    return ShardJit(fun, mesh, input_shardings, output_shardings, compiler, **opts)
