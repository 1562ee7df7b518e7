"""How a global array is laid out over a device mesh: :class:`NamedSharding` (JAX's), the
normalised sharding tuples nxpy computes with, and the arithmetic of shards.

A *sharding tuple* has one entry per tensor dim: the mesh axes (indices, major to minor)
that split that dim; ``()`` is replicated. Users write a sharding as a :class:`~nxpy.P`
(``P("data", None)``), as Nx's dict ``{tensor_dim: [mesh_axes]}`` (dims as index,
negative index or name; axes as index or name; unlisted dims replicated), or as a
:class:`NamedSharding` (a mesh and a ``P``).

>>> from nxpy import Mesh, P
>>> m = Mesh("mesh", (2, 2))
>>> normalize({0: [0], -1: ["axis_1"]}, (8, 2), m)
((0,), (1,))
>>> local_shape((8, 2), ((0,), (1,)), m), global_shape((4, 1), ((0,), (1,)), m)
((4, 1), (8, 2))
>>> normalize({0: [0], 1: [0]}, (8, 2), m)
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

__all__ = ["P", "PartitionSpec", "as_partition_spec", "NamedSharding", "normalize",
           "spec_to_dict", "local_shape", "global_shape", "factor", "block_count", "replicated",
           "to_dict", "to_p", "partition_spec", "block_index", "shard_index", "shard_array",
           "unshard_arrays"]


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


def replicated(rank: int) -> tuple:
    return ((),) * rank


def _is_axis_entry(e) -> bool:
    return e is None or isinstance(e, (str, int)) or (
        isinstance(e, tuple) and all(isinstance(a, (str, int)) for a in e))


def spec_to_dict(spec):
    """A per-dim spec (``P("x", None, ("x", "y"))``, JAX's ``PartitionSpec`` or a plain
    tuple like it) as an ``input_shardings`` dict; a dict or None passes through.

    >>> spec_to_dict(P("x", None, ("x", "y"))), spec_to_dict(("x",)), spec_to_dict(None)
    ({0: ['x'], 2: ['x', 'y']}, {0: ['x']}, {})
    """
    p = as_partition_spec(spec)
    if p is not None:
        spec = tuple(p)
    if isinstance(spec, dict):
        return spec
    if spec is None:
        return {}
    if not isinstance(spec, (tuple, list)):
        raise TypeError(f"expected a spec: a dict {{tensor_dim: [mesh_axes]}}, a P(...) or a "
                        f"per-dim tuple (None, an axis, or a tuple of axes per dim), got {spec!r}")
    return {d: list(e) if isinstance(e, (tuple, list)) else [e]
            for d, e in enumerate(spec) if e is not None}


def normalize(spec, shape, mesh, names=None, *, what="input sharding") -> tuple:
    """A spec → a sharding tuple. Specs: a ``{tensor_dim: [mesh_axes]}`` dict, a
    :class:`~nxpy.P` (or JAX's ``PartitionSpec``; at most one entry per dim), a per-dim
    tuple like one, a :class:`NamedSharding` over ``mesh``, None (replicated) or a
    normalised tuple."""
    rank = len(shape)
    if isinstance(spec, NamedSharding):
        if spec.mesh != mesh:
            raise ValueError(f"{what}: {spec!r} is over {spec.mesh!r}, but the program runs "
                             f"over {mesh!r}: every sharding of one program names the same "
                             f"mesh")
        spec = spec.spec
    p = as_partition_spec(spec)
    if p is not None:
        if len(p) > rank:
            raise ValueError(f"{what}: {p!r} has {len(p)} entries but the tensor has rank "
                             f"{rank} (shape {tuple(shape)})")
        spec = tuple(p)
    elif isinstance(spec, tuple) and all(_is_axis_entry(e) for e in spec) and len(spec) > rank:
        raise ValueError(f"{what}: {spec!r} has {len(spec)} entries but the tensor has rank "
                         f"{rank} (shape {tuple(shape)})")
    if isinstance(spec, tuple) and len(spec) == rank and all(isinstance(a, tuple) for a in spec):
        items = list(enumerate(spec))
    elif isinstance(spec, dict):
        items = list(spec.items())
    elif spec is None or (isinstance(spec, tuple) and all(_is_axis_entry(e) for e in spec)):
        items = list(spec_to_dict(spec).items())
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
    return tuple(out)


def factor(sharding, mesh, d) -> int:
    """How many blocks dim ``d`` is split into."""
    return math.prod(mesh.shape[a] for a in sharding[d])


def block_count(sharding, mesh) -> int:
    """How many distinct blocks an array laid out by ``sharding`` is split into."""
    return math.prod(factor(sharding, mesh, d) for d in range(len(sharding)))


def local_shape(shape, sharding, mesh) -> tuple:
    return tuple(n // factor(sharding, mesh, d) for d, n in enumerate(shape))


def global_shape(shape, sharding, mesh) -> tuple:
    return tuple(n * factor(sharding, mesh, d) for d, n in enumerate(shape))


def to_dict(sharding) -> dict:
    """``((0,), ())`` → ``{0: [0]}``."""
    return {d: list(a) for d, a in enumerate(sharding) if a}


def to_p(sharding, mesh):
    """A sharding as the ``P`` a user would write for it: axes by name, a one-axis dim as
    the axis, trailing replicated dims left out.

    >>> m = Mesh("m", (2, 2), axis_names=("x", "y"))
    >>> to_p(((), (0, 1), ()), m), to_p(((1,), ()), m), to_p(((),), m)
    (P(None, ('x', 'y')), P('y'), P())
    """
    entries = list(partition_spec(sharding, mesh))
    while entries and entries[-1] is None:
        entries.pop()
    return P(*entries)


def partition_spec(sharding, mesh) -> tuple:
    """JAX ``PartitionSpec`` entries for a sharding."""
    out = []
    for axes in sharding:
        names = tuple(mesh.axis_names[a] for a in axes)
        out.append(None if not names else (names[0] if len(names) == 1 else names))
    return tuple(out)


def block_index(p, d, sharding, mesh) -> int:
    """Which block of dim ``d`` partition ``p`` holds (axes major to minor)."""
    coords = mesh.coords(p)
    idx = 0
    for a in sharding[d]:
        idx = idx * mesh.shape[a] + coords[a]
    return idx


def check_divisible(shape, sharding, mesh, what="tensor") -> None:
    for d, n in enumerate(shape):
        f = factor(sharding, mesh, d)
        if n % f:
            axes = [mesh.axis_names[a] for a in sharding[d]]
            raise ValueError(f"cannot shard dim {d} of {what} (size {n}) over mesh axes "
                             f"{axes} ({f} shards): the size must be divisible by {f}")


def shard_index(shape, sharding, mesh, p) -> tuple:
    """The slices of the global array (of ``shape``) partition ``p`` holds."""
    out = []
    for d, n in enumerate(shape):
        f = factor(sharding, mesh, d)
        b = block_index(p, d, sharding, mesh)
        out.append(slice(b * n // f, (b + 1) * n // f))
    return tuple(out)


def shard_array(arr: np.ndarray, sharding, mesh, *, what="tensor", partitions=None) -> list:
    """Per-partition views of a global array (``partitions``: only those, in that order)."""
    check_divisible(arr.shape, sharding, mesh, what)
    parts = range(mesh.size) if partitions is None else partitions
    return [arr[shard_index(arr.shape, sharding, mesh, p)] for p in parts]


def unshard_arrays(shards: list, sharding, mesh, *, check=True, what="tensor",
                   partitions=None) -> np.ndarray:
    """The global array from per-partition shards (``partitions``: whose they are, by
    default every partition's in order); with ``check``, replicated copies must agree.
    The shards must cover the whole array."""
    local = shards[0].shape
    gshape = global_shape(local, sharding, mesh)
    out = np.empty(gshape, dtype=shards[0].dtype)
    filled = {}
    for p, s in zip(range(mesh.size) if partitions is None else partitions, shards):
        idx = tuple(block_index(p, d, sharding, mesh) for d in range(len(local)))
        if idx in filled:
            if check and not np.array_equal(filled[idx][1], s, equal_nan=s.dtype.kind in "fc"):
                raise ValueError(
                    f"the shards of {what} on partitions {filled[idx][0]} and {p} must be equal "
                    f"(the sharding {to_dict(sharding)} replicates them over the other mesh "
                    f"axes), but they differ")
            continue
        filled[idx] = (p, s)
        out[tuple(slice(i * n, (i + 1) * n) for i, n in zip(idx, local))] = s
    blocks = block_count(sharding, mesh)
    if len(filled) != blocks:
        raise ValueError(f"the shards of {what} cover {len(filled)} of its {blocks} blocks: "
                         f"the others live on devices of other processes")
    return out


class NamedSharding:
    """A layout of global arrays over a mesh, as JAX's ``NamedSharding``: ``mesh`` (an
    ``nx.Mesh``) and ``spec`` (a ``P``; Nx's ``{tensor_dim: [mesh_axes]}`` dict with
    non-negative integer dims is accepted and read as the ``P`` it means). Immutable and
    hashable; two shardings are equal when they lay out every array alike (``P("x")``
    and ``P("x", None)`` are equal).

    >>> from nxpy import Mesh, P
    >>> mesh = Mesh("m", (2, 4), axis_names=("data", "model"))
    >>> s = NamedSharding(mesh, P("data", ("model",)))
    >>> s
    NamedSharding(mesh=Mesh('m', [data=2, model=4]), spec=P('data', 'model'))
    >>> s.shard_shape((8, 8)), s.num_devices, s.is_fully_replicated
    ((4, 2), 8, False)
    >>> s.devices_indices_map((4, 4))[5]
    (slice(2, 4, None), slice(1, 2, None))
    >>> NamedSharding(mesh, P("rows"))
    Traceback (most recent call last):
    ...
    ValueError: NamedSharding: axis 'rows' is not an axis of mesh 'm' (axes ['data', 'model'])
    """

    __slots__ = ("mesh", "spec", "_key", "_axes", "_hash")

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
        while axes and not axes[-1]:
            axes.pop()
        object.__setattr__(self, "mesh", mesh)
        object.__setattr__(self, "_axes", tuple(axes))
        # spec in its shortest spelling, axes by name
        object.__setattr__(self, "spec", to_p(self._axes, mesh))
        object.__setattr__(self, "_key", (mesh, self._axes))
        object.__setattr__(self, "_hash", hash(self._key))

    def __setattr__(self, name, value):
        raise AttributeError("NamedSharding is immutable")

    def __eq__(self, other):
        return self is other or (isinstance(other, NamedSharding) and self._key == other._key)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"

    def __reduce__(self):
        return (NamedSharding, (self.mesh, self.spec))

    def tuple_for(self, rank: int, what="sharding") -> tuple:
        """The sharding tuple of this layout for an array of ``rank`` dims."""
        if len(self._axes) > rank:
            raise ValueError(f"{what}: {self.spec!r} has {len(self._axes)} entries but the "
                             f"tensor has rank {rank}")
        return self._axes + ((),) * (rank - len(self._axes))

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holds the whole array."""
        return all(self.mesh.shape[a] == 1 for e in self._axes for a in e)

    def shard_shape(self, global_shape) -> tuple:
        """The shape of each shard of an array of ``global_shape``."""
        shape = S.dims(global_shape, "shard_shape: global_shape")
        sh = self.tuple_for(len(shape), "shard_shape")
        check_divisible(shape, sh, self.mesh, f"an array of shape {shape}")
        return local_shape(shape, sh, self.mesh)

    def devices_indices_map(self, global_shape) -> dict:
        """``{device position: the slices of the global array it holds}``."""
        shape = S.dims(global_shape, "devices_indices_map: global_shape")
        sh = self.tuple_for(len(shape), "devices_indices_map")
        check_divisible(shape, sh, self.mesh, f"an array of shape {shape}")
        return {d: shard_index(shape, sh, self.mesh, p) for p, d in enumerate(self.mesh.devices)}


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
