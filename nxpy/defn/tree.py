"""Containers (tuples, lists, dicts, None) of tensors: flatten and rebuild.

>>> leaves, tree = flatten({"a": 1, "b": (2, [3])})
>>> leaves
[1, 2, 3]
>>> unflatten(tree, [10, 20, 30])
{'a': 10, 'b': (20, [30])}
"""
from __future__ import annotations

__all__ = ["flatten", "unflatten", "LEAF"]

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
