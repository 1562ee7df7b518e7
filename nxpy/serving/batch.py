"""Batches of examples for a serving (Nx's ``Nx.Batch``): stacked or concatenated
entries, a key, padding, and the template a batch's entries share.

A batch keeps its entries on the host (NumPy arrays, one per leaf of the entries'
container) and joins them only when it runs: merging batches, splitting one across
several runs and padding it to a compiled size cost no device work.

>>> import nxpy as nx
>>> from nxpy.serving import Batch
>>> b = Batch.stack([nx.tensor([1, 2]), nx.tensor([3, 4])])
>>> b.size, b.template
(2, s32[2])
>>> b = Batch.pad(Batch.concatenate([b, nx.tensor([[5, 6]])]), 2)
>>> b.size, b.padding, b.to_tree().tolist()
(3, 2, [[1, 2], [3, 4], [5, 6], [0, 0], [0, 0]])
"""
from __future__ import annotations

import numpy as np

from .. import ops as O, types as T
from ..defn import tree as tree_mod
from ..tensor import Tensor

__all__ = ["Batch", "Template"]


class Template:
    """The shape of one example of a batch: the entries' container (its tree) and, per
    leaf, the shape after the batch axis and the dtype. Batches whose templates differ
    are never merged (a serving queues them apart).

    >>> import nxpy as nx
    >>> b = Batch.stack([(nx.tensor([1.0, 2.0]), nx.tensor(3))])
    >>> b.template.leaves[0][0], str(b.template.leaves[1][1])
    ((2,), 'int32')
    """

    __slots__ = ("tree", "leaves", "_hash")

    def __init__(self, tree, leaves):
        self.tree = tree
        self.leaves = tuple(leaves)  # ((shape without the batch axis), numpy dtype) per leaf
        self._hash = hash((tree, self.leaves))

    def __eq__(self, other):
        return isinstance(other, Template) and self.tree == other.tree \
            and self.leaves == other.leaves

    def __hash__(self):
        return self._hash

    def __repr__(self):
        parts = [_type_str(shape, dt) for shape, dt in self.leaves]
        if self.tree == tree_mod.LEAF:
            return parts[0]
        return tree_mod.tree_str(self.tree) + " of " + ", ".join(parts)


def _type_str(shape, dtype) -> str:
    try:
        name = str(T.from_dtype(dtype))
    except (TypeError, ValueError, KeyError):
        name = str(dtype)
    return name + str(list(shape)).replace(" ", "")


def _leaf_array(v, what: str) -> np.ndarray:
    if isinstance(v, np.ndarray):
        return v
    if isinstance(v, Tensor):
        if v.backend.is_expr:
            raise TypeError(f"{what}: a traced value cannot go into a batch")
        return np.asarray(v.to_numpy())
    return np.asarray(O.to_tensor(v, what).to_numpy())


#: templates by ``(tree, leaves)``: batches of one shape share one template object, so
#: that a serving's queue lookups compare them by identity (a bounded cache)
_TEMPLATES: dict = {}


def _template(tree, leaves: tuple) -> Template:
    key = (tree, leaves)
    t = _TEMPLATES.get(key)
    if t is None:
        if len(_TEMPLATES) >= 1024:
            _TEMPLATES.clear()
        t = _TEMPLATES[key] = Template(tree, leaves)
    return t


def _arrays(entry, what: str, stacked: bool):
    """``(tree, [array per leaf], rows)`` of one entry; ``stacked``: the entry is one
    example (it gains a batch axis), otherwise its leaves share a leading batch axis."""
    if isinstance(entry, Batch):
        raise TypeError(f"{what}: expected a tensor or a container of tensors, got a Batch "
                        f"(merge batches with Batch.merge)")
    try:
        leaves, tree = tree_mod.flatten(entry)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: expected a tensor or a container of tensors, got "
                        f"{type(entry).__name__} ({e})") from None
    if not leaves:
        raise ValueError(f"{what}: expected a tensor or a container with tensors, got one "
                         f"without any")
    arrays = [_leaf_array(v, what) for v in leaves]
    if stacked:
        return tree, [a[None] for a in arrays], 1
    for a in arrays:
        if a.ndim == 0:
            raise ValueError(f"{what}: expected tensors with a leading batch axis, got a "
                             f"scalar (use Batch.stack for single examples)")
    rows = {a.shape[0] for a in arrays}
    if len(rows) != 1:
        raise ValueError(f"{what}: expected every tensor of an entry to have the same batch "
                         f"size (leading axis), got {sorted(rows)}")
    return tree, arrays, rows.pop()


class Batch:
    """A batch: entries that share a :class:`Template`, a ``batch_key`` (batches of
    different keys run apart) and ``padding`` rows of zeros after them. Build one with
    :meth:`stack` (examples) or :meth:`concatenate` (entries with a batch axis); ``size``
    counts the rows of data (not the padding). ``Batch.key(b, k)``, ``Batch.pad(b, n)``
    and ``Batch.split(b, n)`` are also methods (``b.key(k)``, ...); they return a new
    batch."""

    __slots__ = ("template", "size", "padding", "batch_key", "_parts")

    def __init__(self):
        self.template = None
        self.size = 0
        self.padding = 0
        self.batch_key = None
        self._parts: list = []  # [arrays per leaf] per entry, each with a leading axis

    def __repr__(self):
        return (f"Batch(size={self.size}, pad={self.padding}, key={self.batch_key!r}, "
                f"template={self.template!r})")

    # ---- building ------------------------------------------------------------------------
    @classmethod
    def new(cls) -> "Batch":
        """An empty batch (Nx's ``Nx.Batch.new/0``); add to it with :meth:`merge`.

        >>> Batch.new().size
        0
        """
        return cls()

    @classmethod
    def _of(cls, entries, what: str, stacked: bool) -> "Batch":
        if isinstance(entries, (Tensor, np.ndarray)) or not isinstance(entries, (list, tuple)):
            raise TypeError(f"{what}: expected a list of entries, got {type(entries).__name__}")
        b = cls()
        for i, entry in enumerate(entries):
            if type(entry) is np.ndarray and (stacked or entry.ndim):
                # the common entry, one array: no container to walk
                a = entry[None] if stacked else entry
                b._add(_template(tree_mod.LEAF, ((a.shape[1:], a.dtype),)), [a], a.shape[0],
                       what, i)
                continue
            if isinstance(entry, Batch):
                b = cls.merge([b, entry])
                continue
            tree, arrays, rows = _arrays(entry, f"{what}: entry {i}", stacked)
            tmpl = _template(tree, tuple([(a.shape[1:], a.dtype) for a in arrays]))
            b._add(tmpl, arrays, rows, what, i)
        return b

    def _add(self, tmpl, arrays, rows, what, entry=None):
        """Appends an entry's arrays; ``what`` (and ``entry``, its position) name it in
        errors."""
        if self.padding or (self.template is not None and tmpl is not self.template
                            and tmpl != self.template):
            where = what if entry is None else f"{what}: entry {entry}"
            if self.padding:
                raise ValueError(f"{where}: cannot add entries to a padded batch")
            raise ValueError(f"{where}: expected entries of template {self.template!r}, "
                             f"got {tmpl!r}")
        if self.template is None:
            self.template = tmpl
        if rows:
            self._parts.append(arrays)
            self.size += rows

    @classmethod
    def stack(cls, entries) -> "Batch":
        """A batch of one row per entry (Nx's ``Nx.Batch.stack/2``): each entry is one
        example, a tensor or a container of tensors, and all share a template.

        >>> import nxpy as nx
        >>> b = Batch.stack([{"x": nx.tensor([1.0, 2.0])}, {"x": nx.tensor([3.0, 4.0])}])
        >>> b.size, b.to_tree()["x"].shape
        (2, (2, 2))
        """
        return cls._of(entries, "Batch.stack", True)

    @classmethod
    def concatenate(cls, entries) -> "Batch":
        """A batch of the entries' rows (Nx's ``Nx.Batch.concatenate/2``): each entry
        already has a leading batch axis (each of its tensors, the same length).

        >>> import nxpy as nx
        >>> Batch.concatenate([nx.iota((2, 3)), nx.iota((1, 3))]).size
        3
        """
        return cls._of(entries, "Batch.concatenate", False)

    @classmethod
    def merge(cls, batches) -> "Batch":
        """One batch of the rows of ``batches`` in order (Nx's ``Nx.Batch.merge/1``); they
        must share their template and key, and carry no padding.

        >>> import nxpy as nx
        >>> Batch.merge([Batch.stack([nx.tensor(1)]), Batch.stack([nx.tensor(2)])]).size
        2
        """
        if not isinstance(batches, (list, tuple)):
            raise TypeError(f"Batch.merge: expected a list of batches, got "
                            f"{type(batches).__name__}")
        out = cls()
        keys = {b.batch_key for b in batches if isinstance(b, Batch) and b.size}
        if len(keys) > 1:
            raise ValueError(f"Batch.merge: expected batches of one key, got keys {keys}")
        for i, b in enumerate(batches):
            if not isinstance(b, Batch):
                raise TypeError(f"Batch.merge: expected batches, got {type(b).__name__} at "
                                f"position {i}")
            if b.padding:
                raise ValueError(f"Batch.merge: batch {i} is padded; merge before padding")
            if b.size:
                for arrays in b._parts:
                    out._add(b.template, arrays, arrays[0].shape[0], f"Batch.merge: batch {i}")
                out.batch_key = b.batch_key
            elif out.template is None:
                out.template = b.template
        return out

    def key(batch: "Batch", key) -> "Batch":
        """``batch`` with ``key`` (Nx's ``Nx.Batch.key/2``): a serving runs batches of
        different keys apart (a key is any hashable value, say a model variant).

        >>> import nxpy as nx
        >>> Batch.key(Batch.stack([nx.tensor(1)]), "small").batch_key
        'small'
        """
        if not isinstance(batch, Batch):
            raise TypeError(f"Batch.key: expected a Batch, got {type(batch).__name__}")
        try:
            hash(key)
        except TypeError:
            raise TypeError(f"Batch.key: expected a hashable key, got "
                            f"{type(key).__name__}") from None
        out = batch._copy()
        out.batch_key = key
        return out

    def pad(batch: "Batch", n: int) -> "Batch":
        """``batch`` with ``n`` more rows of zeros after its data (Nx's
        ``Nx.Batch.pad/2``); ``size`` still counts the data only.

        >>> import nxpy as nx
        >>> Batch.pad(Batch.stack([nx.tensor(1)]), 3).to_tree().tolist()
        [1, 0, 0, 0]
        """
        if not isinstance(batch, Batch):
            raise TypeError(f"Batch.pad: expected a Batch, got {type(batch).__name__}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"Batch.pad: expected n to be a non-negative integer, got {n!r}")
        out = batch._copy()
        out.padding += int(n)
        return out

    def split(batch: "Batch", n: int) -> tuple["Batch", "Batch"]:
        """The first ``n`` rows of ``batch`` and the rest (Nx's ``Nx.Batch.split/2``);
        padding stays with the rest.

        >>> import nxpy as nx
        >>> a, b = Batch.split(Batch.concatenate([nx.iota((5,))]), 2)
        >>> a.to_tree().tolist(), b.to_tree().tolist()
        ([0, 1], [2, 3, 4])
        """
        if not isinstance(batch, Batch):
            raise TypeError(f"Batch.split: expected a Batch, got {type(batch).__name__}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"Batch.split: expected n to be a non-negative integer, got {n!r}")
        first, rest = batch._slice(0, min(n, batch.size)), batch._slice(n, batch.size)
        rest.padding = batch.padding
        return first, rest

    # ---- reading -------------------------------------------------------------------------
    def _copy(self) -> "Batch":
        out = Batch()
        out.template, out.size = self.template, self.size
        out.padding, out.batch_key = self.padding, self.batch_key
        out._parts = list(self._parts)
        return out

    def _slice(self, start: int, stop: int) -> "Batch":
        """The rows ``[start, stop)`` (no padding) as a batch sharing the arrays."""
        out = Batch()
        out.template, out.batch_key = self.template, self.batch_key
        pos = 0
        for arrays in self._parts:
            n = arrays[0].shape[0]
            lo, hi = max(start - pos, 0), min(stop - pos, n)
            if lo < hi:
                out._parts.append(arrays if (lo, hi) == (0, n) else [a[lo:hi] for a in arrays])
                out.size += hi - lo
            pos += n
        return out

    def arrays(self) -> list:
        """One NumPy array per leaf of the template: the rows, then the padding.

        >>> import nxpy as nx
        >>> [a.tolist() for a in Batch.stack([(nx.tensor(1), nx.tensor(2.0))]).pad(1).arrays()]
        [[1, 0], [2.0, 0.0]]
        """
        if self.template is None:
            raise ValueError("Batch: an empty batch has no data")
        out = []
        for i, (shape, dtype) in enumerate(self.template.leaves):
            pieces = [p[i] for p in self._parts]
            if self.padding:
                pieces.append(np.zeros((self.padding, *shape), dtype))
            out.append(pieces[0] if len(pieces) == 1 else np.concatenate(pieces))
        return out

    def to_tree(self):
        """The batch's data as its entries' container of tensors (NumPy backend), each
        with a leading axis of ``size + padding`` rows.

        >>> import nxpy as nx
        >>> Batch.stack([{"a": nx.tensor(1)}, {"a": nx.tensor(2)}]).to_tree()["a"].tolist()
        [1, 2]
        """
        return tree_mod.unflatten(self.template.tree,
                                  [O.from_numpy(a) for a in self.arrays()])
