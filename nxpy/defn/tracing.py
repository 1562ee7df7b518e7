"""Tracing a Python function into an Expr graph, and what every entry point of defn
(``jit``, ``compile``, ``shard_jit``, the sharded programs of :mod:`nxpy.defn.sharding.programs`)
does around it: flattening and naming the arguments, static options as cache keys, the
ops a compiler needs expanded, and donation.

>>> import nxpy as nx
>>> g = trace(lambda x, y: x * y + 1, [nx.template((2,), "f32"), nx.template((2,), "f32")])
>>> [n.op for n in g.nodes if n.op != "constant"], g.outputs[0].shape
(['parameter', 'parameter', 'multiply', 'add'], (2,))
"""
from __future__ import annotations

import inspect

import numpy as np

from .. import pjrt, shape as S, telemetry
from ..ops import to_tensor
from ..ops.core import PORTABLE
from ..tensor import Tensor, shape_str
from . import tree as tree_mod
from .expr import Fn, trace_fn

__all__ = ["trace", "expansions", "check_donate_argnums", "donated_leaves", "check_not_reused",
           "give_up", "donating", "CONTAINERS"]


def _leaf(x, what):
    if isinstance(x, Tensor):
        return x
    try:
        return to_tensor(x, "it")
    except TypeError as e:
        if _array_like(x):  # a value of the right kind: its own error
            raise TypeError(f"{what}: {e}") from None
        raise TypeError(f"{what}: expected a tensor, a NumPy array, a jax.Array, a number or "
                        f"a container of them ({CONTAINERS}), got {type(x).__name__}") from None


def _array_like(x) -> bool:
    return isinstance(x, (np.ndarray, np.generic)) or pjrt.is_jax_array(x)


CONTAINERS = ("a tuple, list, dict, namedtuple, dataclass or a class given to "
              "nxpy.defn.register_container")


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


def _static_where(fun, path, n_args):
    """``argument 0 (p.cfg)`` for a path ``['[0]', '[0]', '.cfg']`` into ``(args, kw)``."""
    if len(path) < 2:
        return "argument"
    rest = "".join(path[2:])
    if path[0] == "[0]":
        i = int(path[1][1:-1])
        return f"argument {i} ({_arg_names(fun, n_args)[i]}{rest})"
    return f"keyword argument {path[1][2:-2]}{rest}"


def _leaves_of(fun, args, kwargs_tensors):
    """Flattens the arguments; every leaf becomes a tensor (errors name the argument)."""
    try:
        leaves, tree = tree_mod.flatten((args, kwargs_tensors))
    except tree_mod.StaticError as e:
        raise tree_mod.StaticError(f"{_static_where(fun, e.path, len(args))}: {e.detail}") \
            from None
    for i, x in enumerate(leaves):
        if not isinstance(x, Tensor):
            try:
                leaves[i] = to_tensor(x, "it")
            except (TypeError, ValueError, OverflowError) as e:
                what = _leaf_names(fun, tree, len(args))[i]
                if not isinstance(e, TypeError) or _array_like(x):
                    raise type(e)(f"{what}: {e}") from None  # a value of the right kind
                raise TypeError(f"{what}: expected a tensor, a NumPy array, a jax.Array, a "
                                f"number or a container of them ({CONTAINERS}), got "
                                f"{type(x).__name__}") from None
    return leaves, tree


def _static_key(v, what):
    """A hashable cache key for a static option (:func:`nxpy.defn.tree.static_key`:
    ``1``, ``1.0`` and ``True`` differ; containers compare by content)."""
    try:
        return tree_mod.static_key(v)
    except tree_mod.StaticError as e:
        if e.tensor:
            raise TypeError(f"{what} holds a tensor inside a container: keyword arguments are "
                            f"static options; pass tensors positionally or as top-level "
                            f"keyword arguments") from None
        raise TypeError(f"{what} is static (it is not a tensor) and must be hashable, as it "
                        f"is part of the cache key; got {e.detail.split('got ')[-1]}") from None


def _template_str(t):
    return f"{t.type}{shape_str(t.shape)}"


def expansions(compiler) -> frozenset:
    """The built-in ops with a portable implementation (``nxpy.ops.core.PORTABLE``) that
    ``compiler`` has no rule for, so a trace for it records their compositions instead:
    a compiler declares what it runs natively with ``supports(op) -> bool``; one that does
    not declare it gets every portable op expanded (it cannot know ops added after it)."""
    supports = getattr(compiler, "supports", None)
    if supports is None:
        return frozenset(PORTABLE)
    return frozenset(op for op in PORTABLE if not supports(op))


def trace(fun, args, kwargs=None, templates=None, expand=None) -> Fn:
    """Traces ``fun(*args, **kwargs)`` into a graph. Tensor leaves of ``args`` (and tensor
    values of ``kwargs``) become parameters; other kwargs are static. Ops in ``expand``
    are recorded as their portable implementations (see :func:`expansions`)."""
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

    name = getattr(fun, "__name__", "function")
    telemetry.note_trace(fun, name)
    with telemetry.timed("trace", key=tuple(templates), function=name):
        graph = trace_fn(call, templates, expand=expand)
    graph.where = name
    return graph


def check_donate_argnums(donate_argnums, what: str) -> tuple:
    """``donate_argnums`` (an int or a sequence of ints) as a sorted tuple, or an error."""
    if donate_argnums is None:
        return ()
    nums = donate_argnums if isinstance(donate_argnums, (list, tuple)) else (donate_argnums,)
    out = set()
    for n in nums:
        if S.as_int(n) is None:
            raise TypeError(f"{what}: donate_argnums must be an int or a sequence of ints "
                            f"(positions of the arguments to donate), got {donate_argnums!r}")
        if n < 0:
            raise ValueError(f"{what}: donate_argnums must be non-negative positions, got "
                             f"{donate_argnums!r}")
        if int(n) in out:
            raise ValueError(f"{what}: donate_argnums names argument {int(n)} twice: "
                             f"{donate_argnums!r}")
        out.add(int(n))
    return tuple(sorted(out))


def donated_leaves(args, argnums, what: str) -> tuple:
    """The flat leaf positions of the positional arguments ``argnums`` (every tensor of a
    donated container argument is donated)."""
    if argnums and argnums[-1] >= len(args):
        raise ValueError(f"{what}: donate_argnums={argnums} but it was called with "
                         f"{len(args)} positional argument{'' if len(args) == 1 else 's'}")
    leaves, start = [], 0
    for i, a in enumerate(args):
        n = len(tree_mod.flatten(a)[0])
        if i in argnums:
            leaves.extend(range(start, start + n))
        start += n
    return tuple(leaves)


def check_not_reused(leaves, donated, where: str) -> None:
    """A donated tensor must not also be another argument of the same call."""
    seen = {id(leaves[i]): i for i in donated}
    for j, x in enumerate(leaves):
        i = seen.get(id(x))
        if i is not None and i != j:
            raise ValueError(f"{where}: the same tensor is passed as donated argument leaf {i} "
                             f"and as argument leaf {j}; a donated tensor cannot also be used "
                             f"by the same call (pass a copy)")


def give_up(leaves, outs, donated, where: str) -> None:
    """Marks the donated argument tensors unusable (a result that is one of them itself is
    replaced by a fresh tensor of the same data, so it stays usable)."""
    ids = {id(leaves[i]) for i in donated}
    for k, o in enumerate(outs):
        if id(o) in ids:
            outs[k] = Tensor(o.raw_data, o.shape, o.type, o.names, o.backend, o.device_id,
                             sharding=o.sharding)
    for i in donated:
        x = leaves[i]
        if isinstance(x, Tensor) and not x.donated:
            x.donate(f"{where} (argument leaf {i})")


def donating(run, donated, where: str):
    """``run`` that, after each call, marks the donated argument tensors unusable (on every
    compiler, so a program does not work on one and fail on another)."""
    if not donated:
        return run

    def run_donating(leaves):
        check_not_reused(leaves, donated, where)
        outs = run(leaves)
        give_up(leaves, outs, donated, where)
        return outs
    if hasattr(run, "memory_stats"):
        run_donating.memory_stats = run.memory_stats
    return run_donating


def _arg_names(fun, n):
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        sig = None
    return signature_arg_names(sig, n)


def signature_arg_names(sig, n):
    """The names of ``n`` positional arguments of a function of signature ``sig`` (None:
    unknown): parameter names, ``args[j]`` for a ``*args``, ``arg<i>`` past the end."""
    params = list(sig.parameters.values()) if sig is not None else []
    out = []
    for i in range(n):
        if i < len(params) and params[i].kind == inspect.Parameter.VAR_POSITIONAL:
            out += [f"{params[i].name}[{j}]" for j in range(n - i)]
            break
        out.append(params[i].name if i < len(params) else f"arg{i}")
    return out
