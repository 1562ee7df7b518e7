"""How a global array is laid out over a device mesh: ``P`` (JAX's ``PartitionSpec``) and
:class:`NamedSharding`, the one layout value nxpy computes with, and the arithmetic of
shards as its methods.

Users write a layout as a :class:`P` (``P("data", None)``), as Nx's dict
``{tensor_dim: [mesh_axes]}`` (dims as index, negative index or name; axes as index or
name; unlisted dims replicated), as a per-dim tuple (``("data", None)``) or as a
:class:`NamedSharding` (a mesh and a ``P``). :func:`read_sharding` reads any of them, for
one tensor, into a ``NamedSharding``: the entry points read each spelling once, and
everything below them takes only that.

>>> from nxpy import Mesh, P
>>> m = Mesh("mesh", (2, 2))
>>> s = read_sharding({0: [0], -1: ["axis_1"]}, (8, 2), m)
>>> s.spec, s.axes(2), s.local_shape((8, 2)), s.global_shape((4, 1))
(P('axis_0', 'axis_1'), ((0,), (1,)), (4, 1), (8, 2))
>>> read_sharding({0: [0], 1: [0]}, (8, 2), m)
Traceback (most recent call last):
...
ValueError: axis 0 was used twice in the same input sharding (dims 0 and 1)
>>> s = NamedSharding(Mesh("m", (2, 2), axis_names=("data", "model")), P("data"))
>>> s.shard_shape((8, 4)), s.is_fully_replicated, s == NamedSharding(s.mesh, {0: ["data"]})
((4, 4), False, True)
"""
from __future__ import annotations

import math

import numpy as np

from . import shape as S
from .mesh import Mesh

__all__ = ["P", "PartitionSpec", "as_partition_spec", "is_axes_entry", "NamedSharding",
           "read_sharding"]


class PartitionSpec:
    """How a tensor is laid out over a mesh, as JAX's ``PartitionSpec`` (``nx.P``): one
    entry per leading tensor dim, each ``None`` (replicated), a mesh axis (a name or an
    index) or a tuple of axes (major to minor); dims past the entries are replicated.
    Immutable and hashable. ``jax.sharding.PartitionSpec`` is accepted wherever ``P`` is.

    >>> from nxpy import P
    >>> spec = P("data", None, ("x", "y"))
    >>> spec, len(spec), spec[2], P() == P(), P("x") == P(("x",))
    (P('data', None, ('x', 'y')), 3, ('x', 'y'), True, False)
    >>> P(["x"])  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
    ...
    TypeError: P: each entry must be None, a mesh axis (a name or an index) or a tuple of
    axes; entry 0 is ['x']
    """

    __slots__ = ("_entries",)

    def __init__(self, *entries):
        out = []
        for i, e in enumerate(entries):
            if isinstance(e, tuple) and all(_is_axis(a) for a in e):
                out.append(tuple(e))
            elif e is None or _is_axis(e):
                out.append(e)
            else:
                raise TypeError(f"P: each entry must be None, a mesh axis (a name or an index) "
                                f"or a tuple of axes; entry {i} is {e!r}")
        object.__setattr__(self, "_entries", tuple(out))

    def __setattr__(self, name, value):
        raise AttributeError("P is immutable")

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __getitem__(self, i):
        return self._entries[i]

    def __eq__(self, other):
        return isinstance(other, PartitionSpec) and self._entries == other._entries

    def __hash__(self):
        return hash((PartitionSpec, self._entries))

    def __repr__(self):
        return "P(" + ", ".join(repr(e) for e in self._entries) + ")"

    def __reduce__(self):
        return (PartitionSpec, self._entries)


P = PartitionSpec


def _is_axis(a) -> bool:
    return (isinstance(a, str) and bool(a)) or (
        isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)))


def as_partition_spec(spec):
    """``spec`` as a :class:`P` if it is one, or JAX's ``PartitionSpec`` (recognised by
    its class, so nxpy needs no ``import jax``); else None."""
    if isinstance(spec, PartitionSpec):
        return spec
    cls = type(spec)
    if cls.__name__ in ("PartitionSpec", "P") and cls.__module__.split(".")[0] == "jax":
        for attr in ("unreduced", "reduced"):
            if getattr(spec, attr, None):
                raise ValueError(f"a PartitionSpec with {attr} axes ({spec!r}) is not "
                                 f"supported by nxpy")
        try:
            return PartitionSpec(*tuple(spec))
        except TypeError as e:
            raise TypeError(f"{spec!r}: {e} (PartitionSpec.UNCONSTRAINED is not supported by "
                            f"nxpy)") from None
    return None


def is_axes_entry(e) -> bool:
    """Whether ``e`` can be one dim's entry of a per-dim spec: None, a mesh axis (a name
    or an index) or a tuple of axes."""
    return e is None or isinstance(e, (str, int)) or (
        isinstance(e, tuple) and all(isinstance(a, (str, int)) for a in e))


class NamedSharding:
    """A layout of global arrays over a mesh, as JAX's ``NamedSharding``: ``mesh`` (an
    ``nx.Mesh``) and ``spec`` (a ``P``; Nx's ``{tensor_dim: [mesh_axes]}`` dict with
    non-negative integer dims is accepted and read as the ``P`` it means). Immutable and
    hashable; two shardings are equal when they lay out every array alike (``P("x")``
    and ``P("x", None)`` are equal). It is the one layout value of nxpy: the arithmetic
    of shards is its methods, and every spelling a user hands in is read into one
    (:func:`read_sharding`).

    >>> from nxpy import Mesh, P
    >>> mesh = Mesh("m", (2, 4), axis_names=("data", "model"))
    >>> s = NamedSharding(mesh, P("data", ("model",)))
    >>> s
    NamedSharding(mesh=Mesh('m', [data=2, model=4]), spec=P('data', 'model'))
    >>> s.shard_shape((8, 8)), s.num_devices, s.is_fully_replicated
    ((4, 2), 8, False)
    >>> s.devices_indices_map((4, 4))[5]
    (slice(2, 4, None), slice(1, 2, None))
    >>> s.axes(3), s.as_dict(), [s.block_index(5, d) for d in range(2)]
    (((0,), (1,), ()), {0: [0], 1: [1]}, [1, 1])
    >>> NamedSharding(mesh, P("rows"))
    Traceback (most recent call last):
    ...
    ValueError: NamedSharding: axis 'rows' is not an axis of mesh 'm' (axes ['data', 'model'])
    """

    __slots__ = ("mesh", "_axes", "_hash", "_spec")

    def __init__(self, mesh, spec=None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding: expected mesh to be an nx.Mesh, got {mesh!r}")
        p = as_partition_spec(spec)
        if p is None:
            if spec is None:
                p = P()
            elif isinstance(spec, dict):
                p = _dict_to_p(spec)
            else:
                raise TypeError(f"NamedSharding: expected spec to be a P (PartitionSpec) or a "
                                f"dict {{tensor_dim: [mesh_axes]}}, got {spec!r}")
        axes = []
        for i, e in enumerate(p):
            entry = () if e is None else e if isinstance(e, tuple) else (e,)
            resolved = []
            for a in entry:
                try:
                    resolved.append(mesh.axis_index(a))
                except (ValueError, TypeError) as err:
                    raise type(err)(f"NamedSharding: {err}") from None
            axes.append(tuple(resolved))
        flat = [a for e in axes for a in e]
        if len(set(flat)) != len(flat):
            raise ValueError(f"NamedSharding: {p!r} uses a mesh axis twice")
        self._set(mesh, axes)

    @classmethod
    def from_axes(cls, mesh, axes) -> "NamedSharding":
        """The layout that splits dim ``d`` over mesh axes ``axes[d]`` (axis indices, major
        to minor; ``()``: replicated), taken as they are: what nxpy computes (propagation,
        a program's results) is valid by construction."""
        s = object.__new__(cls)
        s._set(mesh, axes)
        return s

    def _set(self, mesh, axes):
        axes = [tuple(a) for a in axes]
        while axes and not axes[-1]:
            axes.pop()
        axes = tuple(axes)
        object.__setattr__(self, "mesh", mesh)
        object.__setattr__(self, "_axes", axes)
        object.__setattr__(self, "_hash", hash((mesh, axes)))
        object.__setattr__(self, "_spec", None)

    def __setattr__(self, name, value):
        raise AttributeError("NamedSharding is immutable")

    def __eq__(self, other):
        return self is other or (isinstance(other, NamedSharding) and self._hash == other._hash
                                 and self._axes == other._axes and self.mesh == other.mesh)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"

    def __reduce__(self):
        return (NamedSharding, (self.mesh, self.spec))

    def on(self, mesh) -> "NamedSharding":
        """This layout over ``mesh``, a mesh of the same axes (another device assignment
        of one abstract mesh)."""
        if mesh is self.mesh or mesh == self.mesh:
            return self
        if mesh.abstract != self.mesh.abstract:
            raise ValueError(f"{self!r} cannot be laid over {mesh!r}: its axes differ")
        return NamedSharding.from_axes(mesh, self._axes)

    @property
    def spec(self) -> PartitionSpec:
        """The ``P`` of this layout in its shortest spelling: axes by name, a one-axis dim
        as the axis, trailing replicated dims left out."""
        p = self._spec
        if p is None:
            names = self.mesh.axis_names
            p = P(*[None if not e else names[e[0]] if len(e) == 1
                    else tuple(names[a] for a in e) for e in self._axes])
            object.__setattr__(self, "_spec", p)
        return p

    def axes(self, rank: int, what="sharding") -> tuple:
        """The mesh axes (indices) that split each dim of an array of ``rank`` dims."""
        if len(self._axes) > rank:
            raise ValueError(f"{what}: {self.spec!r} has {len(self._axes)} entries but the "
                             f"tensor has rank {rank}")
        return self._axes + ((),) * (rank - len(self._axes))

    def entries(self, rank: int) -> tuple:
        """The ``PartitionSpec`` entries of this layout for all ``rank`` dims (what a
        ``jax.sharding.NamedSharding`` of it is built from)."""
        return tuple(self.spec) + (None,) * (rank - len(self._axes))

    def as_dict(self) -> dict:
        """The layout as Nx's ``{tensor_dim: [mesh axis indices]}`` dict."""
        return {d: list(a) for d, a in enumerate(self._axes) if a}

    @property
    def used_axes(self) -> frozenset:
        """The mesh axes (indices) that split some dim."""
        return frozenset(a for e in self._axes for a in e)

    @property
    def is_replicated(self) -> bool:
        """Whether no dim is split (no mesh axis named; :attr:`is_fully_replicated` also
        counts axes of size 1 as not splitting)."""
        return not self._axes

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""
        return all(self.mesh.shape[a] == 1 for e in self._axes for a in e)

    # --- the arithmetic of shards ----------------------------------------------------------
    def factor(self, d: int) -> int:
        """How many blocks dim ``d`` is split into."""
        return math.prod(self.mesh.shape[a] for a in self._axes[d]) if d < len(self._axes) \
            else 1

    @property
    def block_count(self) -> int:
        """How many distinct blocks an array laid out so is split into."""
        return math.prod(self.factor(d) for d in range(len(self._axes)))

    def block_index(self, p: int, d: int) -> int:
        """Which block of dim ``d`` partition ``p`` holds (axes major to minor)."""
        if d >= len(self._axes):
            return 0
        coords = self.mesh.coords(p)
        idx = 0
        for a in self._axes[d]:
            idx = idx * self.mesh.shape[a] + coords[a]
        return idx

    def local_shape(self, shape) -> tuple:
        """The shape of each shard of an array of global ``shape``."""
        return tuple(n // self.factor(d) for d, n in enumerate(shape))

    def global_shape(self, shape) -> tuple:
        """The global shape of an array whose shards have ``shape``."""
        return tuple(n * self.factor(d) for d, n in enumerate(shape))

    def check_divisible(self, shape, what="tensor") -> None:
        """Raises unless every dim of ``shape`` divides into its blocks."""
        for d, n in enumerate(shape):
            f = self.factor(d)
            if n % f:
                axes = [self.mesh.axis_names[a] for a in self._axes[d]]
                raise ValueError(f"cannot shard dim {d} of {what} (size {n}) over mesh axes "
                                 f"{axes} ({f} shards): the size must be divisible by {f}")

    def shard_index(self, shape, p: int) -> tuple:
        """The slices of the global array (of ``shape``) partition ``p`` holds."""
        out = []
        for d, n in enumerate(shape):
            f = self.factor(d)
            b = self.block_index(p, d)
            out.append(slice(b * n // f, (b + 1) * n // f))
        return tuple(out)

    def shard_array(self, arr: np.ndarray, *, what="tensor", partitions=None) -> list:
        """Per-partition views of a global array (``partitions``: only those, in that
        order)."""
        self.check_divisible(arr.shape, what)
        parts = range(self.mesh.size) if partitions is None else partitions
        return [arr[self.shard_index(arr.shape, p)] for p in parts]

    def unshard(self, shards: list, *, check=True, what="tensor", partitions=None) -> np.ndarray:
        """The global array from per-partition shards (``partitions``: whose they are, by
        default every partition's in order); with ``check``, replicated copies must agree.
        The shards must cover the whole array."""
        local = shards[0].shape
        out = np.empty(self.global_shape(local), dtype=shards[0].dtype)
        filled = {}
        for p, s in zip(range(self.mesh.size) if partitions is None else partitions, shards):
            idx = tuple(self.block_index(p, d) for d in range(len(local)))
            if idx in filled:
                if check and not np.array_equal(filled[idx][1], s,
                                                equal_nan=s.dtype.kind in "fc"):
                    raise ValueError(
                        f"the shards of {what} on partitions {filled[idx][0]} and {p} must be "
                        f"equal (the sharding {self.as_dict()} replicates them over the other "
                        f"mesh axes), but they differ")
                continue
            filled[idx] = (p, s)
            out[tuple(slice(i * n, (i + 1) * n) for i, n in zip(idx, local))] = s
        if len(filled) != self.block_count:
            raise ValueError(f"the shards of {what} cover {len(filled)} of its "
                             f"{self.block_count} blocks: the others live on devices of other "
                             f"processes")
        return out

    # --- JAX's names ------------------------------------------------------------------------
    def shard_shape(self, global_shape) -> tuple:
        """The shape of each shard of an array of ``global_shape``."""
        shape = S.dims(global_shape, "shard_shape: global_shape")
        self.axes(len(shape), "shard_shape")
        self.check_divisible(shape, f"an array of shape {shape}")
        return self.local_shape(shape)

    def devices_indices_map(self, global_shape) -> dict:
        """``{device position: the slices of the global array it holds}``."""
        shape = S.dims(global_shape, "devices_indices_map: global_shape")
        self.axes(len(shape), "devices_indices_map")
        self.check_divisible(shape, f"an array of shape {shape}")
        return {d: self.shard_index(shape, p) for p, d in enumerate(self.mesh.devices)}


def _dict_to_p(spec: dict) -> P:
    entries = {}
    for dim, axes in spec.items():
        if isinstance(dim, str) and dim.isdigit():
            dim = int(dim)
        if S.as_int(dim) is None or dim < 0:
            raise TypeError(f"NamedSharding: a dict spec needs non-negative integer dims (a "
                            f"sharding is not tied to one tensor's rank or names), got dim "
                            f"{dim!r} in {spec!r}; write a P instead")
        axes = [axes] if isinstance(axes, (int, str)) else list(axes)
        entries[int(dim)] = tuple(axes) if len(axes) != 1 else axes[0]
    rank = max(entries, default=-1) + 1
    return P(*[entries.get(d) if entries.get(d) != () else None for d in range(rank)])


def read_sharding(spec, shape, mesh, names=None, *, what="input sharding") -> NamedSharding:
    """The layout of a tensor of ``shape`` (dims named ``names``) over ``mesh`` that
    ``spec`` spells: a ``{tensor_dim: [mesh_axes]}`` dict, a :class:`P` (or JAX's
    ``PartitionSpec``; at most one entry per dim), a per-dim tuple like one, a
    :class:`NamedSharding` over ``mesh``, or None (replicated). ``what`` names the
    option in errors.

    >>> from nxpy import Mesh
    >>> m = Mesh("m", (2, 2), axis_names=("x", "y"))
    >>> read_sharding(("x", None, ("x", "y")), (4, 3, 2), m)
    Traceback (most recent call last):
    ...
    ValueError: axis 'x' was used twice in the same input sharding (dims 0 and 2)
    >>> read_sharding({"rows": ["y"]}, (4, 3), m, ("rows", None)).spec
    P('y')
    """
    rank = len(shape)
    if isinstance(spec, NamedSharding):
        if spec.mesh != mesh:
            raise ValueError(f"{what}: {spec!r} is over {spec.mesh!r}, but the program runs "
                             f"over {mesh!r}: every sharding of one program names the same "
                             f"mesh")
        if len(spec._axes) > rank:
            raise ValueError(f"{what}: {spec.spec!r} has {len(spec._axes)} entries but the "
                             f"tensor has rank {rank} (shape {tuple(shape)})")
        return spec
    p = as_partition_spec(spec)
    if p is not None:
        if len(p) > rank:
            raise ValueError(f"{what}: {p!r} has {len(p)} entries but the tensor has rank "
                             f"{rank} (shape {tuple(shape)})")
        spec = tuple(p)
    elif isinstance(spec, tuple) and all(is_axes_entry(e) for e in spec) and len(spec) > rank:
        raise ValueError(f"{what}: {spec!r} has {len(spec)} entries but the tensor has rank "
                         f"{rank} (shape {tuple(shape)})")
    if isinstance(spec, dict):
        items = list(spec.items())
    elif spec is None:
        items = []
    elif isinstance(spec, tuple) and all(is_axes_entry(e) for e in spec):
        items = [(d, e) for d, e in enumerate(spec) if e is not None]
    else:
        raise TypeError(f"expected {what} to be a dict of {{tensor_dim: [mesh_axes]}} or a "
                        f"P(...) (PartitionSpec), got {spec!r}")
    out = [()] * rank
    seen_axes, seen_dims = {}, set()
    for dim, axes in items:
        if isinstance(dim, str) and dim.lstrip("-").isdigit():
            dim = int(dim)  # JSON-style keys
        try:
            d = S.normalize_axis(dim, rank, names)
        except (ValueError, TypeError) as e:
            raise type(e)(f"{what} {spec!r}: tensor dim {dim!r} is not a dim of a tensor of "
                          f"shape {tuple(shape)}: {e}") from None
        if d in seen_dims:
            raise ValueError(f"tensor dim {dim!r} appears twice in the same {what}")
        seen_dims.add(d)
        if isinstance(axes, (int, str)):
            axes = [axes]
        try:
            axes = list(axes)
        except TypeError:
            raise TypeError(f"expected the mesh axes of dim {dim!r} to be a list, got "
                            f"{axes!r}") from None
        resolved = []
        for a in axes:
            try:
                i = mesh.axis_index(a)
            except (ValueError, TypeError) as e:
                raise type(e)(f"{what}: {e}") from None
            if i in seen_axes:
                dims = f"dim {d}" if seen_axes[i] == d else f"dims {seen_axes[i]} and {d}"
                raise ValueError(f"axis {a!r} was used twice in the same {what} ({dims})")
            seen_axes[i] = d
            resolved.append(i)
        out[d] = tuple(resolved)
    return NamedSharding.from_axes(mesh, out)
