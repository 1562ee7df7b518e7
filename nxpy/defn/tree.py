"""Containers (tuples, lists, dicts, None) of tensors: flatten and rebuild.

>>> leaves, tree = flatten({"a": 1, "b": (2, [3])})
>>> leaves
[1, 2, 3]
>>> unflatten(tree, [10, 20, 30])
{'a': 10, 'b': (20, [30])}
"""
from __future__ import annotations

__all__ = ["flatten", "unflatten", "LEAF", "tree_str", "leaf_paths"]

LEAF = "*"


def flatten(x):
    """Leaves in order (dict keys in insertion order) and a hashable tree description."""
    leaves = []

    def rec(v):
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return ("tuple", tuple(rec(e) for e in v))
        if isinstance(v, list):
            return ("list", tuple(rec(e) for e in v))
        if isinstance(v, dict):
            return ("dict", tuple(v.keys()), tuple(rec(e) for e in v.values()))
        if v is None:
            return None
        leaves.append(v)
        return LEAF

    return leaves, rec(x)


def unflatten(tree, leaves):
    it = iter(leaves)

    def rec(t):
        if t == LEAF:
            return next(it)
        if t is None:
            return None
        if t[0] == "tuple":
            return tuple(rec(e) for e in t[1])
        if t[0] == "list":
            return [rec(e) for e in t[1]]
        return dict(zip(t[1], (rec(e) for e in t[2])))

    return rec(tree)


def tree_str(tree) -> str:
    """A readable description of a container structure: ``(tensor, {'a': tensor})``.

    >>> tree_str(flatten((1, {"a": 2, "b": [3]}))[1])
    "(tensor, {'a': tensor, 'b': [tensor]})"
    """
    if tree == LEAF:
        return "tensor"
    if tree is None:
        return "None"
    if tree[0] == "tuple":
        inner = ", ".join(tree_str(e) for e in tree[1])
        return f"({inner},)" if len(tree[1]) == 1 else f"({inner})"
    if tree[0] == "list":
        return "[" + ", ".join(tree_str(e) for e in tree[1]) + "]"
    return "{" + ", ".join(f"{k!r}: {tree_str(e)}" for k, e in zip(tree[1], tree[2])) + "}"


def leaf_paths(tree, root="") -> list:
    """The access path of each leaf, in flatten order: ``["x", "y[0]", "y[1]['k']"]`` for
    ``root`` names ``x`` and ``y``. The top level of ``tree`` is indexed as usual.

    >>> leaf_paths(flatten((1, {"a": 2, "b": [3]}))[1], "args")
    ['args[0]', "args[1]['a']", "args[1]['b'][0]"]
    """
    out = []

    def rec(t, path):
        if t == LEAF:
            out.append(path)
        elif t is None:
            return
        elif t[0] in ("tuple", "list"):
            for i, e in enumerate(t[1]):
                rec(e, f"{path}[{i}]")
        else:
            for k, e in zip(t[1], t[2]):
                rec(e, f"{path}[{k!r}]")

    rec(tree, root)
    return out
