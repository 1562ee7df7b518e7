"""Static arguments (``static_argnums`` / ``static_argnames``) of ``jit``, ``defn``,
``compile``, ``shard_jit`` and ``shard_map``, with JAX's semantics.

A static argument reaches the Python function as the value itself (never a tensor), so it
can be a shape, an axis, a flag or a count. It is part of the cache key: each distinct
value traces and compiles once; an equal value (same type, ``==``) reuses that program. It
must therefore be hashable. ``static_argnames`` and ``static_argnums`` name the same
arguments through the signature (given one, the other is inferred, as in JAX), so a static
argument is static whether it is passed by position or by keyword. Negative argnums count
from the end of the call's positional arguments; argnums past the function's positional
parameters are an error when the function is wrapped.

>>> import nxpy as nx
>>> from nxpy.defn import jit
>>> f = jit(lambda x, n: nx.reshape(x, (n, -1)), static_argnums=1)
>>> f(nx.iota((6,)), 2).shape, f(nx.iota((6,)), 3).shape, f.trace_count
((2, 3), (3, 2), 2)
>>> f(nx.iota((6,)), 2).shape, f.trace_count             # 2 again: cached
((2, 3), 2)
>>> f(nx.iota((6,)), [2])  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
TypeError: <lambda>: static argument 1 (n) must be hashable, as it is part of the cache key
(Non-hashable static arguments are not supported); got an unhashable list: [2]
"""
from __future__ import annotations

import inspect

import numpy as np

from .. import shape as S
from ..tensor import Tensor
from . import tree as tree_mod
from .tracing import signature_arg_names

__all__ = ["StaticArgs", "check_static_options"]

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def _signature(fun):
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def _index_tuple(x, option, what) -> tuple:
    if x is None:
        return ()
    if S.as_int(x) is not None:  # bools are not positions (as for donate_argnums)
        return (S.as_int(x),)
    try:
        nums = tuple(S.as_int(i) for i in x)
    except TypeError:
        nums = (None,)
    if None in nums:
        raise TypeError(f"{what}: {option} must be an int or a sequence of ints (positions "
                        f"of the static arguments), got {x!r}")
    return nums


def _str_tuple(x, option, what) -> tuple:
    if x is None:
        return ()
    xs = (x,) if isinstance(x, str) else x
    try:
        xs = tuple(xs)
    except TypeError:
        xs = (xs,)
    if not all(isinstance(s, str) for s in xs):
        raise TypeError(f"{what}: {option} must be a str or a sequence of str (names of the "
                        f"static arguments), got {x!r}")
    return xs


def check_static_options(fun, static_argnums, static_argnames, what):
    """A :class:`StaticArgs` for these options, or None when there are none."""
    if static_argnums is None and static_argnames is None:
        return None
    st = StaticArgs(fun, static_argnums, static_argnames, what)
    return st if st.argnums or st.argnames else None


class StaticArgs:
    """Which arguments of ``fun`` are static, validated against its signature as JAX does
    (``jax._src.api_util.resolve_argnums``): the argnums and argnames complete each other
    through the positional-or-keyword parameters; an argnum beyond the positional
    parameters (of a function without ``*args``) or a name that is no parameter is a
    ``ValueError`` here, when the function is wrapped.

    >>> st = StaticArgs(lambda x, n, axis=0: x, None, "axis", "jit(f)")
    >>> st.argnums, st.argnames
    ((2,), ('axis',))
    >>> StaticArgs(lambda x, n: x, 2, None, "jit(f)")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    ValueError: jit(f): static_argnums=(2,) but the function takes only 2 positional
    arguments (x, n)
    """

    def __init__(self, fun, static_argnums, static_argnames, what):
        self.what = what
        self.name = getattr(fun, "__name__", type(fun).__name__)
        nums = _index_tuple(static_argnums, "static_argnums", what)
        names = _str_tuple(static_argnames, "static_argnames", what)
        sig = self.sig = _signature(fun)
        if sig is not None:
            params = list(sig.parameters.values())
            pk = [(i, p.name) for i, p in enumerate(params)
                  if p.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD]
            if static_argnames is None:
                names = tuple(k for i, k in pk if i in nums)
            elif static_argnums is None:
                nums = tuple(i for i, k in pk if k in names)
            positional = [p.name for p in params if p.kind in _POSITIONAL]
            if not any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params):
                n = len(positional)
                bad = [i for i in nums if not -n <= i < n]
                if bad:
                    raise ValueError(f"{what}: static_argnums={nums} but the function takes "
                                     f"only {n} positional argument{'' if n == 1 else 's'} "
                                     f"({', '.join(positional)})")
            only_pos = {p.name for p in params if p.kind == inspect.Parameter.POSITIONAL_ONLY}
            if set(names) & only_pos:
                raise ValueError(f"{what}: static_argnames names positional-only parameters "
                                 f"{sorted(set(names) & only_pos)}; use static_argnums")
            if not any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
                kw = {p.name for p in params if p.kind in _KEYWORD}
                unknown = sorted(set(names) - kw)
                if unknown:
                    raise ValueError(f"{what}: static_argnames names {unknown}, which the "
                                     f"function does not take (its parameters: "
                                     f"{', '.join(sig.parameters)})")
        self.argnums, self.argnames = nums, names

    def positions(self, n_args) -> tuple:
        """The static positions of a call with ``n_args`` positional arguments (negative
        argnums from its end; those it does not reach are not static)."""
        return tuple(sorted({i + n_args if i < 0 else i for i in self.argnums
                             if -n_args <= i < n_args}))

    def label(self, i, n_args) -> str:
        names = signature_arg_names(self.sig, n_args)
        return f"static argument {i} ({names[i]})"

    def key_of(self, v, label):
        """The cache key of static value ``v``: its type and value (``1``, ``1.0`` and
        ``True`` differ, as in JAX); a tensor or an unhashable value is a TypeError."""
        if isinstance(v, (Tensor, np.ndarray)):
            raise TypeError(f"{self.name}: {label} must be hashable, as it is part of the "
                            f"cache key; got a {type(v).__name__} (a tensor cannot be static: "
                            f"pass it as a non-static argument)")
        try:
            hash(v)
        except TypeError:
            raise TypeError(f"{self.name}: {label} must be hashable, as it is part of the "
                            f"cache key (Non-hashable static arguments are not supported); "
                            f"got an unhashable {type(v).__name__}: {v!r}") from None
        try:
            return tree_mod.static_key(v)
        except tree_mod.StaticError:  # a hashable tuple holding a tensor
            raise TypeError(f"{self.name}: {label} must be hashable and hold no tensor, "
                            f"as it is part of the cache key; got {v!r}") from None

    def split(self, args, kwargs):
        """``(dynamic args, dynamic kwargs, key, {position: value}, {name: value})``."""
        pos = self.positions(len(args))
        static_pos = {i: args[i] for i in pos}
        key = [(i, self.key_of(v, self.label(i, len(args)))) for i, v in static_pos.items()]
        static_kw, dyn_kw = {}, {}
        for k, v in kwargs.items():
            if k in self.argnames:
                static_kw[k] = v
                key.append((k, self.key_of(v, f"static argument {k!r}")))
            else:
                dyn_kw[k] = v
        dyn = tuple(a for i, a in enumerate(args) if i not in static_pos) if pos else tuple(args)
        return dyn, dyn_kw, tuple(key), static_pos, static_kw

    def bind(self, fun, static_pos, static_kw):
        """``fun`` with the static values bound: it takes the dynamic arguments only (its
        signature says which, so error messages name them)."""
        def bound(*dyn, **kw):
            it = iter(dyn)
            full = [static_pos[i] if i in static_pos else next(it)
                    for i in range(len(dyn) + len(static_pos))]
            return fun(*full, **kw, **static_kw)
        bound.__name__ = self.name
        bound.__qualname__ = getattr(fun, "__qualname__", self.name)
        if self.sig is not None:
            params = list(self.sig.parameters.values())
            kept = [p for i, p in enumerate(params)
                    if not (i in static_pos and p.kind in _POSITIONAL) and p.name not in static_kw]
            try:
                bound.__signature__ = self.sig.replace(parameters=kept)
            except ValueError:
                pass
        return bound

    def donate(self, donate_argnums, static_pos) -> tuple:
        """``donate_argnums`` (positions among all the arguments, as in JAX) as positions
        among the dynamic ones; donating a static argument is an error."""
        both = sorted(set(donate_argnums) & set(static_pos))
        if both:
            raise ValueError(f"{self.what}: argument{'s' if len(both) > 1 else ''} "
                             f"{', '.join(map(str, both))} cannot be both static and donated "
                             f"(static_argnums and donate_argnums overlap)")
        return tuple(j - sum(1 for s in static_pos if s < j) for j in donate_argnums)
