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

import functools
import inspect

import numpy as np

from .. import _context
from ..tensor import Tensor, shape_str
from ..ops import to_tensor
from . import tree as tree_mod
from .compiler import check_options, get_compiler
from .expr import Fn, trace_fn

__all__ = ["defn", "jit", "compile", "debug_expr", "default_options", "Jit", "Compiled",
           "trace"]

_DEFAULTS: dict = {"compiler": "evaluator"}
_VERSION = [0]  # bumped when the defaults change, invalidating Jit fast paths


def default_options(**opts) -> dict:
    """With no arguments, the current default options; otherwise sets them (``compiler=``
    and that compiler's options) and returns the previous ones."""
    if not opts:
        return dict(_DEFAULTS)
    _context.forbid_inside_defn("nxpy.defn.default_options(...)")
    new = dict(opts)
    new.setdefault("compiler", _DEFAULTS["compiler"])
    comp = get_compiler(new["compiler"])
    check_options(comp, {k: v for k, v in new.items() if k != "compiler"})
    old = dict(_DEFAULTS)
    _DEFAULTS.clear()
    _DEFAULTS.update(new)
    _VERSION[0] += 1
    return old


def _resolve(compiler, opts):
    if compiler is None:
        compiler = _DEFAULTS["compiler"]
        opts = {**{k: v for k, v in _DEFAULTS.items() if k != "compiler"}, **opts}
    comp = get_compiler(compiler)
    check_options(comp, opts)
    return comp, opts


def _leaf(x, what):
    if isinstance(x, Tensor):
        return x
    try:
        return to_tensor(x, what)
    except TypeError:
        raise TypeError(f"{what}: expected a tensor, a NumPy array, a number or a container "
                        f"(tuple, list, dict) of them, got {type(x).__name__}") from None


def _leaf_names(fun, tree, n_args):
    """A readable name for each leaf of ``flatten((args, tensor_kwargs))``: ``argument 0
    (x)``, ``argument 1 (t[0]['k'])``, ``keyword argument w``."""
    args_tree, kw_tree = tree[1]
    names = _arg_names(fun, n_args)
    out = []
    for i, t in enumerate(args_tree[1]):
        out += [f"argument {i} ({p})" for p in tree_mod.leaf_paths(t, names[i])]
    if kw_tree is not None:
        for k, t in zip(kw_tree[1], kw_tree[2]):
            out += [f"keyword argument {p}" for p in tree_mod.leaf_paths(t, k)]
    return out


def _leaves_of(fun, args, kwargs_tensors):
    """Flattens the arguments; every leaf becomes a tensor (errors name the argument)."""
    leaves, tree = tree_mod.flatten((args, kwargs_tensors))
    for i, x in enumerate(leaves):
        if not isinstance(x, Tensor):
            try:
                leaves[i] = to_tensor(x)
            except (TypeError, ValueError) as e:
                what = _leaf_names(fun, tree, len(args))[i]
                if isinstance(e, ValueError):
                    raise ValueError(f"{what}: {e}") from None
                raise TypeError(f"{what}: expected a tensor, a NumPy array, a number or a "
                                f"container (tuple, list, dict) of them, got "
                                f"{type(x).__name__}") from None
    return leaves, tree


def _static_key(v, what):
    """A hashable cache key for a static option; ``1``, ``1.0`` and ``True`` differ (they
    trace differently), and lists, tuples and dicts are compared by content."""
    if isinstance(v, (list, tuple)) and not hasattr(v, "_fields"):
        return (type(v), tuple(_static_key(x, what) for x in v))
    if isinstance(v, dict):
        return (dict, tuple((k, _static_key(x, what)) for k, x in v.items()))
    if isinstance(v, (Tensor, np.ndarray)):
        raise TypeError(f"{what} holds a tensor inside a container: keyword arguments are "
                        f"static options; pass tensors positionally or as top-level keyword "
                        f"arguments")
    try:
        hash(v)
    except TypeError:
        raise TypeError(f"{what} is static (it is not a tensor) and must be hashable, as it "
                        f"is part of the cache key; got an unhashable "
                        f"{type(v).__name__}") from None
    return (type(v), v)


def _template_str(t):
    return f"{t.type}{shape_str(t.shape)}"


def trace(fun, args, kwargs=None, templates=None) -> Fn:
    """Traces ``fun(*args, **kwargs)`` into a graph. Tensor leaves of ``args`` (and tensor
    values of ``kwargs``) become parameters; other kwargs are static."""
    kwargs = kwargs or {}
    static = {k: v for k, v in kwargs.items() if not isinstance(v, (Tensor, np.ndarray))}
    tensor_kw = {k: v for k, v in kwargs.items() if k not in static}
    if templates is None:
        leaves, tree = _leaves_of(fun, tuple(args), tensor_kw)
        templates = [(t.shape, t.type, t.names) for t in leaves]
    else:
        tree = tree_mod.flatten((tuple(args), tensor_kw))[1]

    def call(*params):
        a, kw = tree_mod.unflatten(tree, params)
        return fun(*a, **static, **kw)

    return trace_fn(call, templates)


class Jit:
    """A function compiled on first call for each distinct set of argument shapes and
    types (and static keyword arguments), then cached. Calling it inside another defn
    inlines it."""

    def __init__(self, fun, compiler=None, **opts):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.compiler = compiler
        self.opts = opts
        self.cache: dict = {}
        self._fast: dict = {}  # (defaults version, arg templates) -> (run, out_tree) for plain tensor args
        self.trace_count = 0
        try:
            self._sig = inspect.signature(fun)
        except (TypeError, ValueError):
            self._sig = None
        if compiler is not None or opts:
            _resolve(compiler, opts)  # reject unknown compilers and options early

    def __call__(self, *args, **kwargs):
        if _context.stack():  # a defn calling a defn inlines it
            return self.fun(*args, **kwargs)
        # hot path: positional Tensor arguments whose templates were seen before
        if not kwargs:
            try:
                hit = self._fast.get((_VERSION[0],) + tuple([(a.shape, a.type, a.names)
                                                             for a in args]))
            except AttributeError:
                hit = None
            if hit is not None:
                run, out_tree = hit
                outs = run(args)
                return outs[0] if out_tree is tree_mod.LEAF else tree_mod.unflatten(out_tree, outs)
        comp, opts = _resolve(self.compiler, self.opts)
        if kwargs:
            static = tuple(sorted((k, _static_key(v, f"{self.__name__}: keyword argument {k}"))
                                  for k, v in kwargs.items()
                                  if not isinstance(v, (Tensor, np.ndarray))))
            tkw = {k: v for k, v in kwargs.items() if isinstance(v, (Tensor, np.ndarray))}
        else:
            static, tkw = (), {}
        leaves, tree = _leaves_of(self.fun, args, tkw)
        key = (comp, tuple(sorted(opts.items())), tree, static,
               tuple([(t.shape, t.type, t.names) for t in leaves]))
        exe = self.cache.get(key)
        if exe is None:
            self._check_arity(args, kwargs)
            graph = trace(self.fun, args, kwargs, [(t.shape, t.type, t.names) for t in leaves])
            self.trace_count += 1
            exe = self.cache[key] = (comp.compile(graph, opts), graph.tree)
        if not kwargs and all(isinstance(a, Tensor) for a in args):
            self._fast[(_VERSION[0],) + tuple([(a.shape, a.type, a.names) for a in args])] = exe
        run, out_tree = exe
        return tree_mod.unflatten(out_tree, run(leaves))

    def _check_arity(self, args, kwargs):
        if self._sig is not None:
            try:
                self._sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{self.__name__}: {e}") from None

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


def jit(fun, compiler=None, **opts) -> Jit:
    """Compiles ``fun`` with ``compiler`` (``"evaluator"`` by default, or ``"exla"``).

    >>> import nxpy as nx
    >>> from nxpy.defn import jit
    >>> jit(lambda x: x * 2 + 1, compiler="exla")(nx.tensor([1.0, 2.0])).tolist()
    [3.0, 5.0]
    """
    return Jit(fun, compiler, **opts)


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
        self.fun = fun
        self.__name__ = getattr(fun, "__name__", "function")
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
        comp, opts = _resolve(compiler, opts)
        graph = trace(fun, tree_mod.unflatten(tree, self.templates)[0], None,
                      [(t.shape, t.type, t.names) for t in self.templates])
        self.graph = graph
        self._run = comp.compile(graph, opts)

    def __call__(self, *args):
        if len(args) != self._n:
            raise TypeError(f"{self.__name__}: expected {self._n} argument"
                            f"{'' if self._n == 1 else 's'} (as compiled), got {len(args)}")
        leaves, tree = _leaves_of(self.fun, args, {})
        if tree != self.tree:
            raise TypeError(f"{self.__name__}: compiled for arguments structured as "
                            f"{tree_mod.tree_str(self.tree[1][0])}, got "
                            f"{tree_mod.tree_str(tree[1][0])}")
        for i, (x, t) in enumerate(zip(leaves, self.templates)):
            if x.shape != t.shape or x.type != t.type:
                raise ValueError(f"{self._names[i]}: expected {_template_str(t)}, got "
                                 f"{_template_str(x)} (compiled ahead of time for fixed "
                                 f"shapes and types)")
        if _context.stack():  # inside a defn: inline
            return self.fun(*args)
        return tree_mod.unflatten(self.graph.tree, self._run(leaves))


def _arg_names(fun, n):
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    out = []
    for i in range(n):
        if i < len(params) and params[i].kind == inspect.Parameter.VAR_POSITIONAL:
            out += [f"{params[i].name}[{j}]" for j in range(n - i)]
            break
        out.append(params[i].name if i < len(params) else f"arg{i}")
    return out


def compile(fun, *templates, compiler=None, **opts) -> Compiled:  # noqa: A001
    """Compiles ``fun`` ahead of time for ``templates`` (``nx.template(shape, type)`` or
    example tensors); the result rejects arguments of other shapes or types.

    >>> import nxpy as nx
    >>> from nxpy.defn import compile
    >>> f = compile(lambda x: x + 1, nx.template((2,), "s32"))
    >>> f(nx.tensor([1, 2])).tolist()
    [2, 3]
    >>> f(nx.tensor([1.0, 2.0]))
    Traceback (most recent call last):
    ...
    ValueError: argument 0 (x): expected s32[2], got f32[2] (compiled ahead of time for fixed shapes and types)
    """
    if isinstance(fun, Jit):
        compiler = compiler if compiler is not None else fun.compiler
        opts = {**fun.opts, **opts}
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
