"""Containers of tensors: flatten and rebuild.

Tuples, lists, dicts and None are containers, and so are namedtuples, dataclasses and
any class given to :func:`register_container` (Nx's ``Nx.Container`` protocol). A
namedtuple's or dataclass's field that holds no tensor, array or number (a string, a
function, a tuple of strings, ...) is **static data**: it is kept in the tree
description, which is part of every cache key, so it must be hashable (lists, dicts and
dataclasses of hashable values are compared by content). A dataclass field declared with
``field(metadata={"static": True})`` is static whatever it holds.

>>> leaves, tree = flatten({"a": 1, "b": (2, [3])})
>>> leaves
[1, 2, 3]
>>> unflatten(tree, [10, 20, 30])
{'a': 10, 'b': (20, [30])}
>>> from collections import namedtuple
>>> Layer = namedtuple("Layer", "w b act")
>>> leaves, tree = flatten(Layer(1.0, 2.0, "relu"))
>>> leaves, tree_str(tree)
([1.0, 2.0], "Layer(w=tensor, b=tensor, act='relu')")
>>> unflatten(tree, [3.0, 4.0])
Layer(w=3.0, b=4.0, act='relu')
"""
from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from ..tensor import Tensor

__all__ = ["flatten", "unflatten", "LEAF", "tree_str", "leaf_paths", "register_container",
           "StaticError", "match_prefix", "static_key", "count_leaves", "has_fields",
           "is_container"]

LEAF = "*"

#: values that are leaves of data (they become tensors)
_DATA = (Tensor, np.ndarray, np.generic, numbers.Number)


class StaticError(TypeError):
    """A static field that cannot be part of a cache key; ``path`` says where it is
    (accessors from the flattened value, ``['.cfg']``)."""

    def __init__(self, detail, path=(), tensor=False):
        self.detail, self.path, self.tensor = detail, list(path), tensor
        super().__init__(self._text())

    def _text(self):
        where = "".join(self.path)
        return f"{where}: {self.detail}" if where else self.detail

    def at(self, accessor):
        self.path.insert(0, accessor)
        self.args = (self._text(),)
        return self


_PLAIN = (bool, int, float, complex, str, type(None))


def is_plain(v) -> bool:
    """Whether ``v`` is a plain Python value (a number, a string, None, or a tuple of
    them): what a transform run outside a defn passes through untouched."""
    return isinstance(v, _PLAIN) or (isinstance(v, tuple) and all(is_plain(x) for x in v))


def static_key(v):
    """A hashable key for a static value: lists, tuples, dicts and dataclasses of hashable
    values by content; ``1``, ``1.0`` and ``True`` differ (they trace
    differently). Raises :class:`StaticError` for a tensor or an unhashable value."""
    if isinstance(v, (list, tuple)):
        return (type(v), tuple(static_key(x) for x in v))
    if isinstance(v, dict):
        return (dict, tuple((k, static_key(x)) for k, x in v.items()))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v), tuple(static_key(getattr(v, f.name)) for f in dataclasses.fields(v)))
    if isinstance(v, (Tensor, np.ndarray)):
        raise StaticError("a tensor cannot be static data", tensor=True)
    try:
        hash(v)
    except TypeError:
        raise StaticError(f"static data (it is not a tensor, an array, a number or a "
                          f"container of them) must be hashable, as it is part of the cache "
                          f"key; got an unhashable {type(v).__name__}") from None
    return (type(v), v)


class Static:
    """A static value in a tree: compared and hashed by :func:`static_key`."""

    __slots__ = ("value", "key")

    def __init__(self, value):
        self.value, self.key = value, static_key(value)

    def __eq__(self, other):
        return isinstance(other, Static) and self.key == other.key

    def __hash__(self):
        return hash(self.key)

    def __repr__(self):
        return repr(self.value)


# ----------------------------------------------------------------------------------------
# Container kinds. A kind flattens an object into (children, aux) — children a tuple, or a
# dict of named children; aux hashable static data — and rebuilds it from both.
# ----------------------------------------------------------------------------------------
class _Kind:
    __slots__ = ("flatten", "unflatten", "named")

    def __init__(self, flatten, unflatten, named):
        self.flatten, self.unflatten, self.named = flatten, unflatten, named


_KINDS: dict = {}  # class -> _Kind (registered, or made on first sight)


def register_container(cls, flatten, unflatten):
    """Makes instances of ``cls`` containers, as Nx's ``Nx.Container`` protocol (and JAX's
    ``register_pytree_node``): ``flatten(obj) -> (children, aux)``, where ``children`` is
    a sequence (or a dict of named children) of tensors, numbers or containers and
    ``aux`` is hashable static data (part of the cache key);
    ``unflatten(aux, children) -> obj`` rebuilds one (``children`` as ``flatten`` gave
    them: a tuple, or a dict). Namedtuples and dataclasses need no registration.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit, register_container
    >>> class Affine:
    ...     def __init__(self, scale, shift, name):
    ...         self.scale, self.shift, self.name = scale, shift, name
    >>> register_container(Affine, lambda a: ((a.scale, a.shift), a.name),
    ...                    lambda name, ch: Affine(*ch, name))
    >>> out = jit(lambda a, x: Affine(a.scale * x, a.shift, a.name + "'"))(
    ...     Affine(nx.tensor(2.0), nx.tensor(1.0), "f"), nx.tensor(3.0))
    >>> out.scale.tolist(), out.shift.tolist(), out.name
    (6.0, 1.0, "f'")
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_container: expected a class, got {cls!r}")
    if cls in (tuple, list, dict, type(None)) or issubclass(cls, _DATA):
        raise ValueError(f"register_container: {cls.__name__} is already handled (a "
                         f"built-in container or a tensor-like value)")
    if not callable(flatten) or not callable(unflatten):
        raise TypeError("register_container: flatten and unflatten must be callables: "
                        "flatten(obj) -> (children, aux), unflatten(aux, children) -> obj")

    def flat(obj):
        out = flatten(obj)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TypeError(f"the flatten function registered for {cls.__name__} must return "
                            f"a pair (children, aux), got {type(out).__name__}")
        children, aux = out
        try:
            hash(aux)
        except TypeError:
            raise StaticError(f"the static data (aux) {cls.__name__}'s flatten returned must "
                              f"be hashable, as it is part of the cache key; got an "
                              f"unhashable {type(aux).__name__}") from None
        return (dict(children) if isinstance(children, dict) else tuple(children)), aux

    _KINDS[cls] = _Kind(flat, unflatten, False)


def _is_data(v) -> bool:
    """Whether ``v`` holds a tensor, an array or a number (so it is not static)."""
    if isinstance(v, _DATA):
        return True
    if isinstance(v, (tuple, list)):
        return any(_is_data(x) for x in v)
    if isinstance(v, dict):
        return any(_is_data(x) for x in v.values())
    kind = _kind_of(v)
    if kind is None:
        return False
    children = kind.flatten(v)[0]
    return any(_is_data(x) for x in (children.values() if isinstance(children, dict)
                                     else children))


def _fields_kind(names, static_meta, rebuild):
    """The kind of a namedtuple or dataclass: fields holding data are children (by name),
    the others static data."""
    def flat(obj):
        children, static = {}, []
        for n in names:
            v = getattr(obj, n)
            if n not in static_meta and _is_data(v):
                children[n] = v
            else:
                try:
                    static.append((n, Static(v)))
                except StaticError as e:
                    raise e.at(f".{n}") from None
        return children, tuple(static)

    def unflat(aux, children):
        values = dict(children)
        values.update((n, s.value) for n, s in aux)
        return rebuild([values[n] for n in names])

    return _Kind(flat, unflat, True)


def _new_dataclass(cls, names):
    def rebuild(values):  # without __init__ (as copy does), so init=False fields work too
        obj = object.__new__(cls)
        for n, v in zip(names, values):
            object.__setattr__(obj, n, v)
        return obj
    return rebuild


def _kind_of(v):
    """The container kind of ``v`` (registered, a namedtuple or a dataclass), or None."""
    cls = type(v)
    kind = _KINDS.get(cls)
    if kind is not None:
        return kind
    if isinstance(v, tuple) and hasattr(cls, "_fields"):
        kind = _fields_kind(tuple(cls._fields), (), cls._make)
    elif dataclasses.is_dataclass(cls):
        fields = dataclasses.fields(cls)
        names = tuple(f.name for f in fields)
        static = {f.name for f in fields if f.metadata.get("static")}
        kind = _fields_kind(names, static, _new_dataclass(cls, names))
    else:
        return None
    _KINDS[cls] = kind
    return kind


def is_container(v) -> bool:
    """Whether ``v`` is a container (not a leaf) for :func:`flatten`."""
    return v is None or isinstance(v, (tuple, list, dict)) or _kind_of(v) is not None


def flatten(x):
    """Leaves in order (dict keys in insertion order, fields in declaration order) and a
    hashable tree description. Raises :class:`StaticError` for unhashable static data."""
    leaves = []

    def rec(v):
        cls = type(v)
        if cls is Tensor:
            leaves.append(v)
            return LEAF
        if cls is tuple:
            return ("tuple", tuple(rec(e) for e in v))
        if cls is list:
            return ("list", tuple(rec(e) for e in v))
        if cls is dict:
            return ("dict", tuple(v.keys()), tuple(rec(e) for e in v.values()))
        if v is None:
            return None
        kind = _kind_of(v)
        if kind is None:  # subclasses of the built-in containers count as them
            if isinstance(v, tuple):
                return ("tuple", tuple(rec(e) for e in v))
            if isinstance(v, list):
                return ("list", tuple(rec(e) for e in v))
            if isinstance(v, dict):
                return ("dict", tuple(v.keys()), tuple(rec(e) for e in v.values()))
            leaves.append(v)
            return LEAF
        children, aux = kind.flatten(v)
        if isinstance(children, dict):
            return ("node", cls, aux, tuple(children), tuple(rec(c) for c in children.values()))
        return ("node", cls, aux, None, tuple(rec(c) for c in children))

    try:
        return leaves, rec(x)
    except StaticError as e:
        raise StaticError(e.detail, _locate(x, []) or e.path, e.tensor) from None


def _locate(v, path):
    """The path to the first unhashable static value in ``v`` (for errors), or None."""
    if isinstance(v, (tuple, list)) and _kind_of(v) is None:
        items = [(f"[{i}]", e) for i, e in enumerate(v)]
    elif isinstance(v, dict) and _kind_of(v) is None:
        items = [(f"[{k!r}]", e) for k, e in v.items()]
    else:
        kind = _kind_of(v)
        if kind is None:
            return None
        try:
            children = kind.flatten(v)[0]
        except StaticError as e:
            return path + e.path
        items = [(f".{k}" if kind.named else f"[{k!r}]", e) for k, e in children.items()] \
            if isinstance(children, dict) else [(f"[{i}]", e) for i, e in enumerate(children)]
    for a, e in items:
        found = _locate(e, path + [a])
        if found:
            return found
    return None


def unflatten(tree, leaves):
    if tree == LEAF:
        return leaves[0] if isinstance(leaves, (list, tuple)) else next(iter(leaves))
    return _build(tree, iter(leaves))


def _build(t, it):
    # a module-level function, not a closure over itself: a self-referencing closure is a
    # reference cycle per call, which keeps results alive until the garbage collector runs
    if t == LEAF:
        return next(it)
    if t is None:
        return None
    tag = t[0]
    if tag == "tuple":
        return tuple([_build(e, it) for e in t[1]])
    if tag == "list":
        return [_build(e, it) for e in t[1]]
    if tag == "dict":
        return dict(zip(t[1], [_build(e, it) for e in t[2]]))
    _, cls, aux, keys, sub = t
    children = tuple([_build(e, it) for e in sub])
    return _KINDS[cls].unflatten(aux, children if keys is None else dict(zip(keys, children)))


def _children(t):
    """``[(accessor, subtree)]`` of a container tree node."""
    tag = t[0]
    if tag in ("tuple", "list"):
        return [(f"[{i}]", e) for i, e in enumerate(t[1])]
    if tag == "dict":
        return [(f"[{k!r}]", e) for k, e in zip(t[1], t[2])]
    _, cls, _, keys, sub = t
    if keys is None:
        return [(f"[{i}]", e) for i, e in enumerate(sub)]
    named = _KINDS[cls].named
    return [(f".{k}" if named else f"[{k!r}]", e) for k, e in zip(keys, sub)]


def tree_str(tree) -> str:
    """A readable description of a container structure: ``(tensor, {'a': tensor})``.

    >>> tree_str(flatten((1, {"a": 2, "b": [3]}))[1])
    "(tensor, {'a': tensor, 'b': [tensor]})"
    """
    if tree == LEAF:
        return "tensor"
    if tree is None:
        return "None"
    tag = tree[0]
    if tag == "tuple":
        inner = ", ".join(tree_str(e) for e in tree[1])
        return f"({inner},)" if len(tree[1]) == 1 else f"({inner})"
    if tag == "list":
        return "[" + ", ".join(tree_str(e) for e in tree[1]) + "]"
    if tag == "dict":
        return "{" + ", ".join(f"{k!r}: {tree_str(e)}" for k, e in zip(tree[1], tree[2])) + "}"
    _, cls, aux, keys, sub = tree
    kind = _KINDS[cls]
    if kind.named:  # a namedtuple or a dataclass: its fields in order, static ones as values
        parts = dict(zip(keys, (tree_str(e) for e in sub)))
        parts.update((n, repr(s)) for n, s in aux)
        order = [f.name for f in dataclasses.fields(cls)] if dataclasses.is_dataclass(cls) \
            else cls._fields
        return f"{cls.__name__}(" + ", ".join(f"{n}={parts[n]}" for n in order) + ")"
    inner = ", ".join(f"{a}: {tree_str(e)}" for a, e in _children(tree))
    return f"{cls.__name__}<{inner}; static {aux!r}>"


def leaf_paths(tree, root="") -> list:
    """The access path of each leaf, in flatten order: ``["x", "y[0]", "y[1]['k']"]`` for
    ``root`` names ``x`` and ``y``; namedtuple and dataclass fields as ``p.w``. The top
    level of ``tree`` is indexed as usual.

    >>> leaf_paths(flatten((1, {"a": 2, "b": [3]}))[1], "args")
    ['args[0]', "args[1]['a']", "args[1]['b'][0]"]
    """
    out = []

    def rec(t, path):
        if t == LEAF:
            out.append(path)
        elif t is not None:
            for a, e in _children(t):
                rec(e, path + a)

    rec(tree, root)
    return out


def has_fields(tree) -> bool:
    """Whether ``tree`` holds a namedtuple, dataclass or registered container."""
    if tree == LEAF or tree is None:
        return False
    return tree[0] == "node" or any(has_fields(e) for _, e in _children(tree))


def count_leaves(tree) -> int:
    if tree == LEAF:
        return 1
    if tree is None:
        return 0
    return sum(count_leaves(e) for _, e in _children(tree))


def match_prefix(prefix, tree, is_leaf, path="", what="spec"):
    """One value per leaf of ``tree`` from ``prefix``, a tree whose leaves (by
    ``is_leaf(value, subtree)``) each apply to every leaf of the subtree they stand for
    (JAX's pytree prefixes). Sequences match tuples, lists and positional containers of
    the same length; dicts and named containers match by key. Returns
    ``[(path, value)]``.

    >>> t = flatten({"w": (1, 2), "b": 3})[1]
    >>> match_prefix({"w": "x", "b": "y"}, t, lambda v, s: isinstance(v, str), "p")
    [("p['w'][0]", 'x'), ("p['w'][1]", 'x'), ("p['b']", 'y')]
    """
    try:
        leaf = tree == LEAF or is_leaf(prefix, tree)
    except ValueError as e:  # is_leaf may refuse an ambiguous prefix: say where it stands
        raise type(e)(f"{what} for {path or 'the value'}: {e}") from None
    if leaf:
        return [(p, prefix) for p in leaf_paths(tree, path)]
    if tree is None:
        return []
    children = _children(tree)
    tag = tree[0]
    keyed = tag == "dict" or (tag == "node" and tree[3] is not None)
    if keyed:
        keys = tree[1] if tag == "dict" else tree[3]
        got = _named_children(prefix)
        if got is None and type(prefix) in (tuple, list) and tag == "node" and \
                hasattr(tree[1], "_fields") and len(prefix) == len(tree[1]._fields):
            got = dict(zip(tree[1]._fields, prefix))  # a namedtuple matched by position
        ok = got is not None and (set(got) == set(keys) if tag == "dict" else set(keys) <= set(got))
        if not ok:
            raise ValueError(f"{what} for {path or 'the value'}: expected one spec, or a "
                             f"container of specs with the keys {list(keys)} (as "
                             f"{tree_str(tree)}), got {prefix!r}")
        values = [got[k] for k in keys]
    else:
        values = prefix if isinstance(prefix, (tuple, list)) else None
        if values is None and tag == "node" and type(prefix) is tree[1]:
            values = _KINDS[tree[1]].flatten(prefix)[0]
        if values is None or len(values) != len(children):
            raise ValueError(f"{what} for {path or 'the value'}: expected one spec, or a "
                             f"container of {len(children)} specs (as {tree_str(tree)}), "
                             f"got {prefix!r}")
    out = []
    for (a, sub), v in zip(children, values):
        out += match_prefix(v, sub, is_leaf, path + a, what)
    return out


def _named_children(v):
    """``{name: child}`` of a dict, namedtuple, dataclass or named registered container
    (every field, static or not), else None: a prefix matched by field names."""
    if isinstance(v, dict):
        return v
    if isinstance(v, tuple) and hasattr(type(v), "_fields"):
        return v._asdict()
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
    kind = _kind_of(v)
    if kind is not None:
        children = kind.flatten(v)[0]
        if isinstance(children, dict):
            return children
    return None
