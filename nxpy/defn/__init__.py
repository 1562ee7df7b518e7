"""Numerical definitions: trace a Python function into an Expr graph, compile, cache.

>>> import nxpy as nx
>>> from nxpy.defn import defn, debug_expr
>>> @defn
... def f(x, y):
...     return nx.sum(x * y, axes=[1])
>>> f(nx.tensor([[1, 2], [3, 4]]), nx.tensor([[1, 1], [2, 2]])).tolist()
[3, 14]
>>> print(debug_expr(f)(nx.template((2, 2), "f32"), nx.template((2, 2), "f32")))
#Nx.Tensor<
  f32[2]
<BLANKLINE>
  Nx.Defn.Expr
  parameter a:0                            f32[2][2]
  parameter b:1                            f32[2][2]
  c = multiply a, b                        f32[2][2]
  d = sum c, axes: [1], keep_axes: false   f32[2]
>
"""
from __future__ import annotations

import functools
import inspect

import numpy as np

from .. import _context
from ..tensor import Tensor, shape_str
from ..ops import to_tensor
from . import tree as tree_mod
from .compiler import Compiler, check_options, get_compiler, register_compiler_factory
from .expr import EXPR, Expr, Fn, trace_fn

__all__ = ["defn", "jit", "compile", "debug_expr", "default_options", "Compiler", "Jit",
           "register_compiler_factory", "trace"]

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
        raise TypeError(f"expected {what} to be a tensor, a NumPy array, a number or a "
                        f"container of them, got {type(x).__name__}") from None


def _template_str(t):
    return f"{t.type}{shape_str(t.shape)}"


def trace(fun, args, kwargs=None, templates=None) -> Fn:
    """Traces ``fun(*args, **kwargs)`` into a graph. Tensor leaves of ``args`` (and tensor
    values of ``kwargs``) become parameters; other kwargs are static."""
    kwargs = kwargs or {}
    static = {k: v for k, v in kwargs.items() if not isinstance(v, (Tensor, np.ndarray))}
    tensor_kw = {k: v for k, v in kwargs.items() if k not in static}
    leaves, tree = tree_mod.flatten((tuple(args), tensor_kw))
    if templates is None:
        templates = [(t.shape, t.type, t.names) for t in
                     (_leaf(x, f"argument leaf {i}") for i, x in enumerate(leaves))]

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
                hit = self._fast.get((_VERSION[0],) + tuple([(a.shape, a.type) for a in args]))
            except AttributeError:
                hit = None
            if hit is not None:
                run, out_tree = hit
                outs = run(args)
                return outs[0] if out_tree is tree_mod.LEAF else tree_mod.unflatten(out_tree, outs)
        comp, opts = _resolve(self.compiler, self.opts)
        if kwargs:
            static = tuple(sorted((k, v) for k, v in kwargs.items()
                                  if not isinstance(v, (Tensor, np.ndarray))))
            tkw = {k: v for k, v in kwargs.items() if isinstance(v, (Tensor, np.ndarray))}
            try:
                hash(static)
            except TypeError:
                raise TypeError(f"{self.__name__}: keyword arguments that are not tensors are "
                                f"static and must be hashable, got {static!r}") from None
        else:
            static, tkw = (), {}
        leaves, tree = tree_mod.flatten((args, tkw))
        leaves = [x if isinstance(x, Tensor) else _leaf(x, f"argument leaf {i}")
                  for i, x in enumerate(leaves)]
        key = (comp, tuple(sorted(opts.items())), tree, static,
               tuple((t.shape, t.type) for t in leaves))
        exe = self.cache.get(key)
        if exe is None:
            self._check_arity(args, kwargs)
            graph = trace(self.fun, args, kwargs, [(t.shape, t.type, t.names) for t in leaves])
            self.trace_count += 1
            exe = self.cache[key] = (comp.compile(graph, opts), graph.tree)
        if not kwargs and all(isinstance(a, Tensor) for a in args):
            self._fast[(_VERSION[0],) + tuple([(a.shape, a.type) for a in args])] = exe
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
    """An ahead-of-time compiled function for fixed argument templates."""

    def __init__(self, fun, templates, compiler, opts):
        self.fun = fun
        leaves, self.tree = tree_mod.flatten(tuple(templates))
        self.templates = [_leaf(t, f"template {i}") if not isinstance(t, Tensor) else t
                          for i, t in enumerate(leaves)]
        self._arg_names = _arg_names(fun, len(templates))
        comp, opts = _resolve(compiler, opts)
        graph = trace(fun, tree_mod.unflatten(self.tree, self.templates), None,
                      [(t.shape, t.type, t.names) for t in self.templates])
        self.graph = graph
        self._run = comp.compile(graph, opts)

    def __call__(self, *args):
        if len(args) != len(self._arg_names):
            raise TypeError(f"{getattr(self.fun, '__name__', 'function')}: expected "
                            f"{len(self._arg_names)} arguments, got {len(args)}")
        leaves, tree = tree_mod.flatten(tuple(args))
        if tree != self.tree:
            raise TypeError(f"arguments have structure {tree}, compiled for {self.tree}")
        leaves = [_leaf(x, f"argument leaf {i}") for i, x in enumerate(leaves)]
        for i, (x, t) in enumerate(zip(leaves, self.templates)):
            if x.shape != t.shape or x.type != t.type:
                raise ValueError(f"argument {self._leaf_name(i)}: expected "
                                 f"{_template_str(t)}, got {_template_str(x)} (compiled "
                                 f"ahead of time for fixed shapes and types)")
        return tree_mod.unflatten(self.graph.tree, self._run(leaves))

    def _leaf_name(self, i):
        count = 0
        for j, a in enumerate(tree_mod.unflatten(self.tree, list(range(len(self.templates))))):
            n = len(tree_mod.flatten(a)[0])
            if i < count + n:
                suffix = "" if n == 1 and not isinstance(a, (list, tuple, dict)) else f" (leaf {i - count})"
                return f"{j} ({self._arg_names[j]}){suffix}"
            count += n
        return str(i)


def _arg_names(fun, n):
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(n)]


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


from .kernel import cond, while_loop  # noqa: E402

__all__ += ["cond", "while_loop", "Fn", "Expr", "EXPR"]

from . import sharding  # noqa: E402
from .kernel import (all_gather, all_reduce, all_slice, all_to_all, axis_index,  # noqa: E402
                     collective_broadcast, collective_permute, pmax, pmean, pmin, ppermute,
                     psum, psum_scatter, reduce_scatter, shift)
from .shard_jit import shard_jit, ShardJit  # noqa: E402
from .shard_map import shard_map, ShardMap  # noqa: E402

__all__ += ["shard_jit", "ShardJit", "shard_map", "ShardMap", "sharding", "all_gather",
            "all_reduce", "psum", "pmax", "pmin", "pmean", "reduce_scatter", "psum_scatter",
            "all_to_all", "collective_permute", "ppermute", "shift", "collective_broadcast",
            "axis_index", "all_slice"]
