"""The defn core: trace a Python function into an Expr graph, compile it, cache it
(``defn``, ``jit``, ``compile``, ``debug_expr``, ``trace``, ``default_options``).

>>> import nxpy as nx
>>> from nxpy.defn import jit
>>> double = jit(lambda x: x * 2)
>>> double(nx.tensor([1, 2])).tolist(), double(nx.tensor([1.5])).tolist(), double.trace_count
([2, 4], [3.0], 2)
>>> double(nx.tensor([3, 4])).tolist(), double.trace_count     # same shape and type: cached
([6, 8], 2)
"""
from __future__ import annotations

import copy
import functools
import inspect
import operator
import threading
import weakref

import numpy as np

from .. import _context, pjrt, types as T
from ..backend import default_backend
from ..cache import FunctionCache, program_cache_size, put_bounded
from ..layout import NamedSharding, read_sharding
from ..mesh import Mesh
from ..tensor import Tensor, template
from .sharding import specs as SH
from . import tree as tree_mod
from .compiler import check_options, compile_graph, get_compiler
from .sharding.programs import (MeshMixError, compile_program, one_mesh, program_meshes,
                                result_shardings, trace_sharded)
from .static_args import check_static_options
from .tracing import (_arg_names, _leaf, _leaf_names, _leaves_of, _static_key, _template_str,
                      check_donate_argnums, donated_leaves, donating, expansions, trace)

__all__ = ["defn", "jit", "compile", "debug_expr", "default_options", "Jit", "Compiled",
           "trace", "compatible", "Transform"]

_DEFAULTS: dict = {"compiler": "evaluator"}
_JITS: weakref.WeakSet = weakref.WeakSet()  # every Jit: default_options clears their hot paths
_JITS_LOCK = threading.Lock()
_LOCAL = _context._local  # the defn stack lives here (read directly on the hot path)


def default_options(**opts) -> dict:
    """With no arguments, the current default options; otherwise sets them (``compiler=``
    and that compiler's options) and returns the previous ones. ``cache_dir=`` sets the
    persistent executable cache (``NXPY_CACHE_DIR``; None turns it off), for every
    compiler that compiles with XLA (the previous value is returned under ``cache_dir``
    when it is given)."""
    if not opts:
        return dict(_DEFAULTS)
    _context.forbid_inside_defn("nxpy.defn.default_options(...)")
    new = dict(opts)
    if "cache_dir" in new:
        old = {**_DEFAULTS, "cache_dir": pjrt.cache_dir()}
        pjrt.set_cache_dir(new.pop("cache_dir"))
        if new:
            default_options(**new)
        return old
    new.setdefault("compiler", _DEFAULTS["compiler"])
    comp = get_compiler(new["compiler"])
    check_options(comp, {k: v for k, v in new.items() if k != "compiler"})
    old = dict(_DEFAULTS)
    _DEFAULTS.clear()
    _DEFAULTS.update(new)
    with _JITS_LOCK:  # their hot paths hold programs made under the old defaults
        jits = list(_JITS)
    for j in jits:
        j.forget_programs()
    return old


def _resolve(compiler, opts):
    if compiler is None:
        compiler = _DEFAULTS["compiler"]
        opts = {**{k: v for k, v in _DEFAULTS.items() if k != "compiler"}, **opts}
    comp = get_compiler(compiler)
    check_options(comp, opts)
    return comp, opts


def compatible(left, right) -> bool:
    """Whether ``left`` and ``right`` have the same shape, type and compatible names
    (Nx's ``compatible?``): names match where both name an axis. Containers (see
    :mod:`nxpy.defn.tree`) are compared leaf by leaf and must have the same structure;
    numbers and arrays count as the tensors they become. The data is not looked at.

    >>> import nxpy as nx
    >>> nx.compatible(nx.iota((3, 2)), nx.iota((3, 2), names=["rows", "cols"]))
    True
    >>> nx.compatible(nx.iota((3, 2), names=["rows", None]), nx.iota((3, 2), names=[None, "cols"]))
    True
    >>> nx.compatible(nx.iota((3, 2), names=["a", "b"]), nx.iota((3, 2), names=["rows", "cols"]))
    False
    >>> nx.compatible(nx.iota((2, 2)), nx.iota((2, 2), type="f32"))
    False
    >>> nx.compatible((nx.iota((3, 2)), (1, 2)), (nx.iota((3, 2)), (3, 4)))
    True
    >>> nx.compatible({"foo": nx.iota((3, 2))}, {"bar": nx.iota((3, 2))})
    False
    """
    ls, ltree = tree_mod.flatten(left)
    rs, rtree = tree_mod.flatten(right)
    if ltree != rtree:
        return False
    for a, b in zip(ls, rs):
        a, b = _leaf(a, "compatible: left"), _leaf(b, "compatible: right")
        if a.shape != b.shape or a.type != b.type:
            return False
        if a.names is not None and b.names is not None and any(
                m is not None and n is not None and m != n for m, n in zip(a.names, b.names)):
            return False
    return True


#: NumPy dtypes that are nxpy types (arrays of these take the hot path as they are)
_NUMPY_TYPES = {t.dtype: t for t in T.ALL_TYPES}

_ARRAY_TEMPLATES: dict = {}  # (shape, dtype) -> Template, for NumPy arguments
_TEMPLATE_OF = operator.attrgetter("_tk")  # a tensor's template, if made yet (else None)
_LEAF = tree_mod.LEAF
_NDARRAY = np.ndarray


def _array_template(a: np.ndarray):
    """The template of the host tensor a NumPy array argument becomes (None for dtypes
    that are no nxpy type), remembered for the hot path's lookup."""
    key = (a.shape, a.dtype)
    t = _ARRAY_TEMPLATES.get(key)
    if t is None:
        typ = _NUMPY_TYPES.get(a.dtype)
        if typ is None:
            return None
        if len(_ARRAY_TEMPLATES) >= 4096:  # bounded: shapes may change on every call
            _ARRAY_TEMPLATES.clear()
        t = _ARRAY_TEMPLATES[key] = template(a.shape, typ, (None,) * a.ndim)
    return t


def _wrap_arrays(args, run):
    """``args`` with NumPy arrays made host tensors: copies, as ``to_tensor`` makes (a
    result must not alias the caller's array), unless ``run`` copies its inputs itself."""
    if all(type(a) is Tensor for a in args):
        return args
    copy = not getattr(run, "copies_inputs", False)
    b = default_backend()
    out = []
    for a in args:
        if type(a) is not Tensor:  # a hot-path hit: its template is known
            t = _array_template(a)
            a = b.from_numpy(a.copy() if copy else a, t.type, t.names)
        out.append(a)
    return out


def _call_of(run, out_tree):
    """``call(args) -> result`` of a compiled ``run``: its own (``run.call``, see the
    Compiler protocol), or ``run`` and the result built from ``out_tree``."""
    call = getattr(run, "call", None)
    if call is not None:
        return call
    if out_tree is _LEAF:
        return lambda args: run(args)[0]
    return lambda args: tree_mod.unflatten(out_tree, run(args))


def _shallow_key(args):
    """The hot-path key of arguments that are tensors or plain tuples/lists of tensors
    (a training step's parameters): their templates, nested as the arguments are; None
    for anything else."""
    key = []
    for a in args:
        t = type(a)
        if t is Tensor:
            key.append(a._tk or a.template)
        elif t is tuple or t is list:
            sub = []
            for x in a:
                if type(x) is not Tensor:
                    return None
                sub.append(x._tk or x.template)
            key.append((t, tuple(sub)))
        else:
            return None
    return tuple(key)


def _nested_call(run, out_tree):
    """``call(args)`` for arguments :func:`_shallow_key` accepts: their leaves are the
    tensors in order."""
    def call(args):
        leaves = []
        for a in args:
            if type(a) is Tensor:
                leaves.append(a)
            else:
                leaves.extend(a)
        return tree_mod.unflatten(out_tree, run(leaves))
    return call


#: compiled programs of every jitted function, process-wide: ``function → {(compiler,
#: options, argument structure, static options, argument templates) → (run, out_tree)}``.
#: A second ``jit`` of the same function finds them; concurrent first calls compile once.
PROGRAMS = FunctionCache(bounded=True)


class Jit:
    """A function compiled on first call for each distinct set of argument shapes and
    types (and static keyword arguments), then cached (process-wide: another ``jit`` of
    the same function reuses it). Calling it inside another defn inlines it."""

    def __init__(self, fun, compiler=None, donate_argnums=None, *, in_shardings=None,
                 out_shardings=None, mesh=None, static_argnums=None, static_argnames=None,
                 **opts):
        if not callable(fun):
            raise TypeError(f"jit: expected fun to be a callable, got {fun!r}")
        functools.update_wrapper(self, fun)
        if "__name__" not in self.__dict__:  # a partial, a callable object: still named
            self.__name__ = getattr(fun, "__name__", type(fun).__name__)
        self.fun = fun
        self.compiler = compiler
        self.opts = opts
        self.sharding_opts = ShardingOptions(in_shardings, out_shardings, mesh,
                                             f"jit({self.__name__})")
        self.donate_argnums = check_donate_argnums(
            donate_argnums, f"jit({getattr(fun, '__name__', 'function')})")
        # the hot paths (see _remember): argument templates -> call(args) -> result, ...
        self._fast: dict = {}
        self._fast_arrays: dict = {}  # ((shape, dtype) per argument) -> call(arrays)
        self._fast_nested: dict = {}  # tensors and tuples/lists of tensors -> call(args)
        self._mixed: dict = {}  # argument templates -> (run, out_tree)
        # calls under a context mesh (nx.set_mesh, or auto_axes' types) run through a view
        # of this Jit for that state, whose hot paths are its own (a program traced in one
        # is not taken in another); the view counts its traces here
        self._view_of, self._parent, self._views = None, None, {}  # _parent: a weakref
        with _JITS_LOCK:
            _JITS.add(self)
        self.trace_count = 0
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        # static arguments (see nxpy.defn.static_args): one inner Jit per static values
        self.static_argnums, self.static_argnames = static_argnums, static_argnames
        self._statics = check_static_options(fun, static_argnums, static_argnames,
                                             f"jit({self.__name__})")
        self._by_static: dict = {}
        if compiler is not None or opts:
            _resolve(compiler, opts)  # reject unknown compilers and options early

    def __call__(self, *args, **kwargs):
        # hot path: positional tensors whose templates were seen (looked up in C), or
        # positional NumPy arrays whose shapes and dtypes were seen
        if not kwargs and args and not _LOCAL.stack:
            key = _LOCAL.jit_key
            if key is not self._view_of and key != self._view_of:
                return self._view(key)(*args)
            a0 = type(args[0])
            if a0 is Tensor:
                try:
                    call = self._fast.get(tuple(map(_TEMPLATE_OF, args)))
                except AttributeError:  # a NumPy array among them
                    call = None
            elif a0 is _NDARRAY:  # a tensor among arrays makes a key no entry has
                call = self._fast_arrays.get(tuple([
                    (a.shape, a.dtype) if type(a) is _NDARRAY else a for a in args]))
            else:
                call = None
            if call is not None:
                return call(args)
            if self._fast_nested:  # tuples or lists of tensors among the arguments
                key = _shallow_key(args)
                if key is not None:
                    call = self._fast_nested.get(key)
                    if call is not None:
                        return call(args)
        return self._call(args, kwargs)

    def _call(self, args, kwargs):
        if _LOCAL.stack:  # a defn calling a defn inlines it
            return self.fun(*args, **kwargs)
        if self._statics is not None:
            return self._call_static(args, kwargs)
        state = _LOCAL.jit_key  # the context mesh (...): part of the key; hot paths per view
        hot = state is self._view_of or state == self._view_of
        if not kwargs and hot:  # tensors and arrays mixed, templates not made yet
            hit = self._mixed.get(tuple([
                (a._tk or a.template) if type(a) is Tensor
                else _ARRAY_TEMPLATES.get((a.shape, a.dtype)) if type(a) is _NDARRAY
                else None for a in args]))
            if hit is not None:
                run, out_tree = hit
                if not getattr(run, "takes_arrays", False):  # wrap the caller's arrays
                    args = _wrap_arrays(args, run)
                return tree_mod.unflatten(out_tree, run(args))
        comp, opts = _resolve(self.compiler, self.opts)
        if kwargs:
            static = tuple(sorted((k, _static_key(v, f"{self.__name__}: keyword argument {k}"))
                                  for k, v in kwargs.items()
                                  if not isinstance(v, (Tensor, np.ndarray))))
            tkw = {k: v for k, v in kwargs.items() if isinstance(v, (Tensor, np.ndarray))}
        else:
            static, tkw = (), {}
        leaves, tree = _leaves_of(self.fun, args, tkw)
        templates = tuple([(t.shape, t.type, t.names) for t in leaves])
        shardings = tuple([t.sharding for t in leaves])
        key = (comp, tuple(sorted(opts.items())), tree, static, templates, self.donate_argnums,
               shardings, self.sharding_opts.key, state)

        def build():
            self._check_arity(args, kwargs)
            where = (f"{getattr(self.fun, '__name__', 'function')} "
                     f"(donate_argnums={self.donate_argnums})")
            donated = donated_leaves(args, self.donate_argnums, where)
            self._root().trace_count += 1
            labels = _leaf_names(self.fun, tree, len(args))
            mesh = self.sharding_opts.mesh_of(leaves, labels)
            if mesh is not None:  # sharded arguments, or shardings asked for
                return self.sharding_opts.build(self.fun, comp, opts, args, kwargs, leaves, tree,
                                         labels, mesh, donated, where)
            graph = trace(self.fun, args, kwargs, list(templates), expand=expansions(comp))
            graph.donated = donated
            meshes = program_meshes(graph)
            if meshes:  # the program names a mesh itself (a sharding constraint)
                if len(meshes) > 1:
                    raise MeshMixError(f"{self.__name__}: one program runs over one mesh, "
                                       f"this one names {meshes}")
                graph.donated_where = where
                return self.sharding_opts.compile(comp, opts, graph, leaves, labels, meshes[0],
                                                  None)
            return donating(compile_graph(comp, graph, opts), donated, where), graph.tree

        exe = PROGRAMS.get(self.fun, key, build)
        if not kwargs and hot:
            self._remember(args, leaves, exe)
        run, out_tree = exe
        return tree_mod.unflatten(out_tree, run(leaves))

    def _call_static(self, args, kwargs):
        """A call with static arguments: the Jit of ``fun`` with these static values
        bound (made, and traced and compiled, once per distinct values) on the dynamic
        arguments; ``donate_argnums`` count every argument, as in JAX."""
        st = self._statics
        dyn, dyn_kw, key, static_pos, static_kw = st.split(args, kwargs)
        inner = self._by_static.get(key)
        if inner is None:
            self._check_arity(args, kwargs)
            inner = Jit(st.bind(self.fun, static_pos, static_kw), self.compiler,
                        st.donate(self.donate_argnums, static_pos),
                        in_shardings=self.sharding_opts.in_shardings,
                        out_shardings=self.sharding_opts.out_shardings,
                        mesh=self.sharding_opts.mesh,
                        **self.opts)
            put_bounded(self._by_static, key, inner, program_cache_size())
        before = inner.trace_count
        try:
            return inner(*dyn, **dyn_kw)
        finally:
            self.trace_count += inner.trace_count - before

    def _remember(self, args, leaves, exe) -> None:
        """Puts program ``exe`` on the hot path of calls like this one: positional tensors
        (``_fast``), positional NumPy arrays (``_fast_arrays``), any mix of both
        (``_mixed``, also for tensors whose templates are not made yet)."""
        kinds = {type(a) for a in args}
        if not kinds <= {Tensor, _NDARRAY}:
            key = _shallow_key(args)
            if key is not None:
                put_bounded(self._fast_nested, key, _nested_call(*exe),
                            program_cache_size())
            return
        run, out_tree = exe
        size = program_cache_size()
        for a in args:
            if type(a) is _NDARRAY:
                _array_template(a)  # known from now on: the mixed lookup finds it
        key = tuple([t.template for t in leaves])
        put_bounded(self._mixed, key, exe, size)
        put_bounded(self._fast, key, _call_of(run, out_tree), size)
        call_arrays = getattr(run, "call_arrays", None)
        if call_arrays is not None and kinds == {_NDARRAY} \
                and all(a.dtype in _NUMPY_TYPES for a in args):
            put_bounded(self._fast_arrays, tuple([(a.shape, a.dtype) for a in args]),
                        call_arrays, size)

    def _view(self, key) -> "Jit":
        """This Jit as called in sharding state ``key`` (a context mesh, ...; itself for
        None): the same function and options, hot paths of its own."""
        root = self._root()
        if key is None:
            return root
        view = root._views.get(key)
        if view is None:
            view = copy.copy(root)
            view._fast, view._fast_arrays, view._fast_nested, view._mixed = {}, {}, {}, {}
            view._view_of, view._views, view._parent = key, {}, weakref.ref(root)
            view = put_bounded(root._views, key, view, program_cache_size())
        return view

    def _root(self) -> "Jit":
        return self if self._parent is None else self._parent()

    def forget_programs(self) -> None:
        """Empties the hot paths (the programs stay in the process-wide cache)."""
        self._views.clear()
        for inner in list(self._by_static.values()):
            inner.forget_programs()
        self._fast.clear()
        self._fast_nested.clear()
        self._fast_arrays.clear()
        self._mixed.clear()

    def _check_arity(self, args, kwargs):
        if self._sig is not None:
            try:
                self._sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{self.__name__}: {e}") from None

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


def place_leaf(x, layout, what, backend=None):
    """Argument ``x`` laid out as ``layout`` (a ``NamedSharding``): a sharded tensor laid
    out so already is returned as it is, one laid out otherwise (or over another mesh) is
    an error (JAX's rule: move it with ``nx.device_put`` first); an unsharded one stays as
    it is when ``layout`` is replicated (the program copies it to every device), and is
    placed (through the host, on ``backend``) otherwise."""
    s = x.sharding
    if s is not None:
        if s.mesh != layout.mesh:
            one_mesh([(layout.mesh, "the program"), (s.mesh, what)], what)
        if s != layout:
            want = layout.spec
            raise ValueError(f"{what} is laid out as {s.spec!r} but the program takes it as "
                             f"{want!r} (in_shardings): reshard it on the devices first, "
                             f"nx.device_put(x, nx.NamedSharding(mesh, {want!r}))")
        return x
    if layout.is_replicated:
        return x
    b = backend if backend is not None else x.backend
    if b.is_expr:
        raise ValueError(f"{what}: a traced value cannot be placed on devices")
    return b.place(np.asarray(x.to_numpy()), x.type, x.names, layout)


class ShardingOptions:
    """The sharding options of a ``jit``/``compile`` (``in_shardings``, ``out_shardings``,
    ``mesh``), and how a program on sharded tensors is built from them: the specs are
    checked here when they are handed in, and read into one layout per argument and result
    when a call's arguments give their shapes."""

    def __init__(self, in_shardings, out_shardings, mesh, what):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"{what}: expected mesh to be an nx.Mesh, got {mesh!r}")
        SH.check_spec_kinds(in_shardings, "in_shardings", what)
        SH.check_spec_kinds(out_shardings, "out_shardings", what)
        self.in_shardings, self.out_shardings, self.mesh = in_shardings, out_shardings, mesh
        self.what = what
        self.key = None if in_shardings is None and out_shardings is None and mesh is None \
            else (SH.spec_key(in_shardings), SH.spec_key(out_shardings), mesh)

    def mesh_of(self, leaves, labels):
        """The mesh of a call: the one every sharded argument, NamedSharding asked for and
        ``mesh=`` name (a mix is an error); None when none does."""
        found = []
        if self.mesh is not None:
            found.append((self.mesh, "mesh="))
        for spec, who in ((self.in_shardings, "in_shardings"),
                          (self.out_shardings, "out_shardings")):
            for s in _named_in(spec):
                found.append((s.mesh, f"{who} {s!r}"))
        for x, label in zip(leaves, labels):
            if x.sharding is not None:
                found.append((x.sharding.mesh, label))
        mesh = one_mesh(found, self.what)
        if mesh is None and (self.in_shardings is not None or self.out_shardings is not None):
            mesh = _LOCAL.mesh
            if mesh is None:
                raise ValueError(f"{self.what}: in_shardings/out_shardings given as P (or "
                                 f"dicts) need a mesh: give NamedSharding(mesh, spec), pass "
                                 f"mesh=, set a context mesh (nx.set_mesh(mesh)), or call it "
                                 f"on sharded tensors")
        return mesh

    def in_sh(self, leaves, tree, labels, mesh, n_args, fun) -> list:
        """One layout per argument leaf: ``in_shardings``' (a prefix of the positional
        arguments; None: unspecified), else the leaf's own, else replicated."""
        specs = [None] * len(leaves)
        if self.in_shardings is not None:
            n_pos = tree_mod.count_leaves(tree[1][0])
            labelled = SH.per_argument_specs(self.in_shardings, tree[1][0],
                                             _arg_names(fun, n_args), "in_shardings")
            specs[:n_pos] = [s for _, s in labelled]
        out = []
        for x, spec, label in zip(leaves, specs, labels):
            if spec is None:
                out.append(x.sharding if x.sharding is not None else NamedSharding(mesh))
                continue
            sh = read_sharding(spec, x.shape, mesh, x.names, what=f"in_shardings of {label}")
            sh.check_divisible(x.shape, label)
            out.append(sh)
        return out

    def build(self, fun, comp, opts, args, kwargs, leaves, tree, labels, mesh, donated, where):
        """Traces and compiles ``fun`` over ``mesh`` for these arguments; returns ``(run,
        out_tree)`` where ``run(leaves)`` takes global tensors and returns sharded ones."""
        in_sh = self.in_sh(leaves, tree, labels, mesh, len(args), fun)
        graph, out_sh, prop = trace_sharded(
            fun, args, kwargs, [(t.shape, t.type, t.names) for t in leaves], mesh, in_sh,
            self.out_shardings, comp, donated=donated, where=where)
        return self._run(comp, opts, graph, mesh, in_sh, out_sh, prop, leaves, labels)

    def compile(self, comp, opts, graph, leaves, labels, mesh, out_specs):
        """A graph traced without a mesh that names one itself: every argument replicated."""
        in_sh = [NamedSharding(mesh)] * len(leaves)
        prop = SH.Propagator(mesh, in_sh)
        out_specs = self.out_shardings if out_specs is None else out_specs
        out_sh = result_shardings(graph, mesh, prop, out_specs)
        return self._run(comp, opts, graph, mesh, in_sh, out_sh, prop, leaves, labels)

    @staticmethod
    def _run(comp, opts, graph, mesh, in_sh, out_sh, prop, leaves, labels):
        """``(run, out_tree)`` of the compiled program, for calls whose leaves are
        sharded (or not) as ``leaves`` are: a sharded leaf must be laid out as the program
        takes it (checked here, once: the caller's cache key holds the shardings); an
        unsharded one the program takes sharded is placed on each call."""
        for x, sh, label in zip(leaves, in_sh, labels):
            if x.sharding is not None:
                place_leaf(x, sh, label)  # raises unless laid out so
        exe = compile_program(comp, graph, mesh, in_sh, out_sh, prop, opts)
        backend = comp.result_backend(opts)
        call_global = exe.call_global
        todo = [(i, sh, labels[i]) for i, (x, sh) in enumerate(zip(leaves, in_sh))
                if x.sharding is None and not sh.is_replicated]
        if todo:
            def run(leaves):
                leaves = list(leaves)
                for i, sh, label in todo:
                    leaves[i] = place_leaf(leaves[i], sh, label, backend)
                return call_global(leaves)
        else:
            run = call_global
        out_tree = graph.tree
        if out_tree is _LEAF:
            run.call = lambda args: run(args)[0]
        else:
            run.call = lambda args: tree_mod.unflatten(out_tree, run(args))
        run.executable = exe
        run.module = exe.module
        if hasattr(exe, "memory_stats"):
            run.memory_stats = exe.memory_stats
        return run, out_tree


def _named_in(spec) -> list:
    """The NamedShardings in a spec or container of specs."""
    if isinstance(spec, NamedSharding):
        return [spec]
    if isinstance(spec, dict) and not SH.is_one_spec(spec):
        return [s for v in spec.values() for s in _named_in(v)]
    if isinstance(spec, (list, tuple)):
        return [s for v in spec for s in _named_in(v)]
    if tree_mod.is_container(spec):
        return [s for v in tree_mod.flatten(spec)[0] for s in _named_in(v)]
    return []


class Transform:
    """The base of what the function transforms return (``grad``, ``vmap``,
    ``jacobian``): ``_traced(*args, **kwargs)`` builds the transformed graph in the
    defn being traced. Called inside a defn, a transform traces into it; called outside,
    it jits itself (the default compiler) and calls that.

    Outside a defn, as JAX's transforms run eagerly, an argument the transform leaves
    alone (:meth:`_passes_through`) that is a plain Python value (a number, a string,
    None, a tuple of them) reaches the function as that value, not as a tensor: it is
    static, with one trace per distinct value (pass a tensor to trace it once).

    >>> import nxpy as nx
    >>> from nxpy.defn import grad
    >>> g = grad(lambda x, n: nx.sum(nx.reshape(x, (n, -1)) ** 2))
    >>> g(nx.tensor([1.0, 2.0, 3.0, 4.0]), 2).tolist()
    [2.0, 4.0, 6.0, 8.0]
    """

    _jits = None

    def __call__(self, *args, **kwargs):
        if _context.tracing():
            return self._traced(*args, **kwargs)
        nums = tuple(i for i, a in enumerate(args)
                     if tree_mod.is_plain(a) and self._passes_through(i, len(args)))
        names = tuple(k for k, v in kwargs.items()
                      if tree_mod.is_plain(v) and self._passes_through(k))
        if self._jits is None:
            self._jits = {}
        j = self._jits.get((nums, names))
        if j is None:
            j = self._jits[nums, names] = jit(self._traced, static_argnums=nums or None,
                                               static_argnames=names or None)
        return j(*args, **kwargs)

    def _passes_through(self, arg, n_args=None) -> bool:
        """Whether the transform leaves argument ``arg`` (a position among ``n_args``, or
        a keyword) as it is: not differentiated, not batched."""
        return False

    def _traced(self, *args, **kwargs):  # pragma: no cover - protocol
        raise NotImplementedError


def jit(fun, compiler=None, *, donate_argnums=None, in_shardings=None, out_shardings=None,
        mesh=None, static_argnums=None, static_argnames=None, **opts) -> Jit:
    """Compiles ``fun`` with ``compiler`` (``"evaluator"`` by default, or ``"exla"``).

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> jit(lambda x: x * 2 + 1, compiler="exla")(nx.tensor([1.0, 2.0])).tolist()
    [3.0, 5.0]

    ``donate_argnums`` (positions) gives those arguments' memory to the call: EXLA writes
    a result of the same shape and type in place of each (an update of a large state
    needs no second copy), and the donated tensors are unusable afterwards, on every
    compiler:

    >>> step = jit(lambda w, g: w - 0.5 * g, compiler="exla", donate_argnums=0)
    >>> w = nx.tensor([1.0, 2.0])
    >>> w2 = step(w, nx.tensor([2.0, 2.0]))
    >>> w2.tolist(), w.donated
    ([0.0, 1.0], True)
    >>> w.tolist()  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    nxpy.tensor.DonatedError: this tensor was donated to <lambda> (donate_argnums=(0,))
    (argument leaf 0) and cannot be used after that call (its memory may hold the result
    now); pass a copy (nx.backend_copy(t, 'exla') for example) if you need it afterwards,
    or do not donate it

    ``static_argnums`` (positions) and ``static_argnames`` (names) make arguments static,
    as in JAX: the function gets the values themselves (a shape, an axis, a count), each
    distinct value traces and compiles once, and they must be hashable (see
    :mod:`nxpy.defn.static_args`):

    >>> rows = jit(lambda x, n: nx.reshape(x, (n, -1)), static_argnums=1)
    >>> rows(nx.iota((6,)), 2).tolist(), rows(nx.iota((6,)), n=3).shape, rows.trace_count
    ([[0, 1, 2], [3, 4, 5]], (3, 2), 2)
    """
    return Jit(fun, compiler, donate_argnums, in_shardings=in_shardings,
               out_shardings=out_shardings, mesh=mesh, static_argnums=static_argnums,
               static_argnames=static_argnames, **opts)


def defn(fun=None, **opts):
    """Decorator form of :func:`jit`, with or without options: ``@defn`` or
    ``@defn(compiler="exla")``."""
    if fun is None:
        return lambda f: Jit(f, **opts)
    return Jit(fun, **opts)


class Compiled:
    """An ahead-of-time compiled function for fixed argument templates. Calling it inside
    a defn inlines it (after the same argument checks)."""

    def __init__(self, fun, templates, compiler, opts):
        if not callable(fun):
            raise TypeError(f"compile: expected fun to be a callable, got {fun!r}")
        self.__name__ = getattr(fun, "__name__", "function")
        opts = dict(opts)
        argnums = check_donate_argnums(opts.pop("donate_argnums", None),
                                       f"compile({self.__name__})")
        self._statics = check_static_options(fun, opts.pop("static_argnums", None),
                                             opts.pop("static_argnames", None),
                                             f"compile({self.__name__})")
        self._n_all = len(templates)
        if self._statics is not None:  # the static values are given among the templates
            templates, _, self._static_key, static_pos, _ = self._statics.split(templates, {})
            argnums = self._statics.donate(argnums, static_pos)
            fun = self._statics.bind(fun, static_pos, {})
        self.fun = fun
        leaves, tree = tree_mod.flatten((tuple(templates), {}))
        self.tree = tree
        self._n = len(templates)
        self._names = _leaf_names(fun, tree, self._n)
        self.templates = [t if isinstance(t, Tensor) else _leaf(t, f"template {self._names[i]}")
                          for i, t in enumerate(leaves)]
        try:
            sig = inspect.signature(fun)
        except (TypeError, ValueError):
            sig = None
        if sig is not None:
            try:
                sig.bind(*templates)
            except TypeError as e:
                raise TypeError(f"compile: {self.__name__} cannot be called with the "
                                f"{len(templates)} templates given: {e}") from None
        options = ShardingOptions(opts.pop("in_shardings", None),
                                  opts.pop("out_shardings", None), opts.pop("mesh", None),
                                  f"compile({self.__name__})")
        comp, opts = _resolve(compiler, opts)
        self._compiler = comp
        where = f"{self.__name__} (donate_argnums={argnums})"
        donated = donated_leaves(templates, argnums, where)
        args = tree_mod.unflatten(tree, self.templates)[0]
        mesh = options.mesh_of(self.templates, self._names)
        if mesh is not None:  # sharded example tensors, or shardings asked for
            run, _ = options.build(fun, comp, opts, args, None, self.templates, tree,
                                   self._names, mesh, donated, where)
            self.graph, self._run = run.executable.graph, run
            self.shardings = [t.sharding for t in self.templates]
            return
        self.shardings = [None] * len(self.templates)
        graph = trace(fun, args, None, [(t.shape, t.type, t.names) for t in self.templates],
                      expand=expansions(comp))
        graph.donated = donated
        meshes = program_meshes(graph)
        if meshes:  # the program names a mesh itself
            graph.donated_where = where
            self._run = options.compile(comp, opts, graph, self.templates, self._names,
                                        meshes[0], None)[0]
            self.graph = graph
            return
        self.graph = graph
        self._run = donating(compile_graph(comp, graph, opts), donated, where)

    def memory_stats(self) -> dict:
        """The device memory the compiled program reserves, from the compiler (EXLA: XLA's
        buffer assignment, as JAX's ``compiled.memory_analysis()``), in bytes per device:
        ``argument``, ``output``, ``alias`` (outputs written in place of donated
        arguments), ``temp`` (everything the program allocates while it runs: the
        activations a gradient keeps, loop carries) and ``generated_code``.

        >>> import nxpy as nx
        >>> from nxpy.defn import compile
        >>> f = compile(lambda x: x * 2, nx.template((1000,), "f32"), compiler="exla")
        >>> m = f.memory_stats()
        >>> m["argument"], m["output"]
        (4000, 4000)

        A compiler that does not report memory (the Evaluator) raises:

        >>> compile(lambda x: x * 2, nx.template((3,), "f32"),
        ...         compiler="evaluator").memory_stats()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        NotImplementedError: compile(<lambda>).memory_stats: the compiler ... does not report...
        """
        stats = getattr(self._run, "memory_stats", None)
        if stats is None:
            raise NotImplementedError(
                f"compile({self.__name__}).memory_stats: the compiler {self._compiler!r} "
                f"does not report the memory of its programs (its run has no memory_stats; "
                f"docs/plugins.md); compile with compiler='exla' to read XLA's")
        return stats()

    def __call__(self, *args):
        if self._statics is not None and len(args) == self._n_all != self._n:
            dyn, _, key, _, _ = self._statics.split(args, {})
            if key != self._static_key:  # called with every argument: the same static ones
                raise ValueError(f"{self.__name__}: compiled for other static arguments "
                                 f"(static_argnums={self._statics.argnums}); compile it for "
                                 f"these, or pass only the dynamic arguments")
            args = dyn
        if len(args) != self._n:
            raise TypeError(f"{self.__name__}: expected {self._n} argument"
                            f"{'' if self._n == 1 else 's'} (as compiled), got {len(args)}")
        leaves, tree = _leaves_of(self.fun, args, {})
        if tree != self.tree:
            raise TypeError(f"{self.__name__}: compiled for arguments structured as "
                            f"{tree_mod.tree_str(self.tree[1][0])}, got "
                            f"{tree_mod.tree_str(tree[1][0])}")
        for i, (x, t, s) in enumerate(zip(leaves, self.templates, self.shardings)):
            if x.shape != t.shape or x.type != t.type:
                raise ValueError(f"{self._names[i]}: expected {_template_str(t)}, got "
                                 f"{_template_str(x)} (compiled ahead of time for fixed "
                                 f"shapes and types)")
            if x.sharding != s and not _context.stack():
                raise ValueError(f"{self._names[i]}: compiled for a tensor {_laid_out(s)}, "
                                 f"got one {_laid_out(x.sharding)}: lay it out so with "
                                 f"nx.device_put, or compile for it")
        if _context.stack():  # inside a defn: inline
            return self.fun(*args)
        return tree_mod.unflatten(self.graph.tree, self._run(leaves))


def _laid_out(s) -> str:
    return "not sharded" if s is None else f"sharded {s!r}"


def compile(fun, *templates, compiler=None, **opts) -> Compiled:
    """Compiles ``fun`` ahead of time for ``templates`` (``nx.template(shape, type)`` or
    example tensors); the result rejects arguments of other shapes or types.

    >>> import nxpy as nx
    >>> from nxpy.defn import compile
    >>> f = compile(lambda x: x + 1, nx.template((2,), "s32"))
    >>> f(nx.tensor([1, 2])).tolist()
    [2, 3]
    >>> f(nx.tensor([1.0, 2.0]))  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: argument 0 (x): expected s32[2], got f32[2] (compiled ahead of time for
    fixed shapes and types)

    Static arguments (``static_argnums``/``static_argnames``) are given as their values
    among the templates; the result is called with the dynamic arguments only (or with
    all of them, the static ones equal to those compiled for):

    >>> g = compile(lambda x, n: nx.reshape(x, (n, -1)), nx.template((6,), "s32"), 3,
    ...             static_argnums=1)
    >>> g(nx.iota((6,))).shape, g(nx.iota((6,)), 3).shape
    ((3, 2), (3, 2))
    """
    if isinstance(fun, Jit):
        compiler = compiler if compiler is not None else fun.compiler
        opts = {**fun.opts, "donate_argnums": fun.donate_argnums,
                "static_argnums": fun.static_argnums, "static_argnames": fun.static_argnames,
                **opts}
        fun = fun.fun
    return Compiled(fun, templates, compiler, opts)


def debug_expr(fun, **opts):
    """``debug_expr(fun)(*args)`` returns ``fun``'s result as Expr tensors; printing one
    shows its graph, one node per line."""
    if isinstance(fun, Jit):
        fun = fun.fun

    def run(*args, **kwargs):
        _context.forbid_inside_defn("debug_expr")
        graph = trace(fun, args, kwargs)
        return tree_mod.unflatten(graph.tree, graph.outputs)
    return run
