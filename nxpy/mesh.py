"""Device meshes: a name, a shape, axis names and the device of each partition (how a
tensor is laid out over one, ``P`` and ``NamedSharding``, is :mod:`nxpy.layout`), and the
*context mesh*: the mesh a bare ``P`` is laid over where no mesh is named (JAX's
``jax.set_mesh``).

Partition ``p`` sits at the row-major mesh coordinates of ``p`` (2x2: p = 2·a0 + a1).

>>> from nxpy import Mesh
>>> m = Mesh("mesh", (2, 2))
>>> m.axis_names, m.size, m.coords(3)
(('axis_0', 'axis_1'), 4, (1, 1))
>>> m.groups([0]), m.groups([1]), m.groups([1, 0])
([[0, 2], [1, 3]], [[0, 1], [2, 3]], [[0, 2, 1, 3]])

JAX's spellings build the same meshes: ``make_mesh(shape, axis_names)`` and
``Mesh(devices, axis_names)`` (an array of devices, or of device positions, in the mesh's
shape), and ``mesh.shape`` is read by axis name too:

>>> import nxpy as nx
>>> j = nx.make_mesh((2, 2), ("x", "y"))
>>> j, j.shape["y"], dict(j.shape), j.axis_sizes
(Mesh('mesh', [x=2, y=2], axis_types=(Explicit, Explicit)), 2, {'x': 2, 'y': 2}, (2, 2))
>>> import numpy as np
>>> Mesh(np.array(nx.pjrt.devices()[:4]).reshape(2, 2), ("x", "y"))  # Auto axes, as JAX's
Mesh('mesh', [x=2, y=2])
"""
from __future__ import annotations

import enum
import math

import numpy as np

from . import _context, pjrt, shape as S

__all__ = ["Mesh", "AxisType", "make_mesh", "set_mesh", "get_mesh", "mesh_for", "is_device"]


class AxisType(enum.Enum):
    """How a mesh axis is used, as JAX's ``jax.sharding.AxisType``: ``Auto`` (the
    partitioner chooses how values are laid out where the program does not say: nxpy's
    propagation and XLA's), ``Explicit`` (every value's layout is part of its type) and
    ``Manual`` (inside ``shard_map``: each device's own shard)."""
    Auto = "Auto"
    Explicit = "Explicit"
    Manual = "Manual"

    def __repr__(self):
        return self.name  # as JAX's: Mesh(..., axis_types=(Explicit, Explicit))


class MeshShape(tuple):
    """A mesh's axis sizes: a tuple (Nx's ``mesh.shape``, indexed by position) that is
    also read as JAX's mapping from axis name to size (``shape["x"]``, ``keys()``,
    ``items()``, ``dict(shape)``). Iterating it gives the sizes, as a tuple does."""
    def __new__(cls, sizes, names):
        t = super().__new__(cls, sizes)
        t._axis_names = tuple(names)
        return t

    def keys(self):
        return self._names()

    def values(self):
        return tuple(self)

    def items(self):
        return tuple(zip(self._names(), self))

    def get(self, name, default=None):
        names = self._names()
        return self[names.index(name)] if name in names else default

    def _names(self):
        return self._axis_names

    def __getitem__(self, i):
        if isinstance(i, str):
            names = self._names()
            if i not in names:
                raise KeyError(f"{i!r} is not an axis of the mesh (axes {list(names)})")
            return tuple.__getitem__(self, names.index(i))
        return tuple.__getitem__(self, i)

    def __reduce__(self):
        return (tuple, (tuple(self),))


class Mesh:
    """``Mesh(name, shape, axis_names=None, devices=None, *, axis_types=None)``;
    ``devices`` are device positions of the XLA client: global positions, in process
    order, when several processes share the distributed runtime (``processes`` says which
    process owns each partition, ``local_partitions`` which are this process's). A mesh
    built without devices is *abstract*: a ``shard_jit`` over it runs on the devices its
    arguments already live on (EXLA tensors, one distinct device per partition) and
    otherwise on the first ``size`` devices, which ``devices`` reports. Programs are traced
    and lowered per abstract mesh (name, shape, axis names, axis types) and compiled per
    device assignment.

    ``Mesh(devices, axis_names)`` is JAX's ``jax.sharding.Mesh``: ``devices`` an array
    (or a list, for one axis) of devices (``nx.pjrt.devices()``) or device positions,
    whose shape is the mesh's; ``axis_names`` a tuple of names or one name; the mesh is
    named ``"mesh"``. ``axis_types``: one :class:`AxisType` per axis (all ``Auto`` by
    default, as JAX's ``Mesh``; :func:`make_mesh`'s are ``Explicit``).

    ``with mesh:`` makes it the context mesh in its block (:func:`set_mesh`).

    >>> m = Mesh("m", (2,))
    >>> m.is_abstract, m.devices, m.bind([3, 1]).devices, m.bind([3, 1]).is_abstract
    (True, (0, 1), (3, 1), False)
    >>> Mesh([2, 3], "x")
    Mesh('mesh', [x=2])
    >>> Mesh([2, 3], "x").devices
    (2, 3)
    """

    def __init__(self, name, shape=None, axis_names=None, devices=None, *, axis_types=None):
        if not isinstance(name, str):  # JAX's Mesh(devices, axis_names)
            if devices is not None:
                raise TypeError("Mesh(devices, axis_names): the devices are the first "
                                "argument; devices= is Nx's Mesh(name, shape, ...) spelling")
            devices, axis_names = name, axis_names if shape is None else shape
            name = "mesh"
            try:
                arr = np.asarray(devices, dtype=object)
            except ValueError:  # a ragged value: said below
                arr = None
            if arr is None or arr.ndim == 0 or arr.size == 0:
                raise TypeError(f"Mesh(devices, axis_names): expected devices to be an array "
                                f"(or list) of devices or device positions, got {devices!r}")
            if isinstance(axis_names, str):
                axis_names = (axis_names,)
            if axis_names is None:
                raise TypeError("Mesh(devices, axis_names): axis_names is missing (one name "
                                "per dim of devices)")
            shape = arr.shape
            devices = [_position(d, "Mesh(devices, axis_names)") for d in arr.flat]
            if len(tuple(axis_names)) != len(shape):
                raise ValueError(f"Mesh(devices, axis_names): devices has {len(shape)} dims "
                                 f"(shape {shape}) but axis_names {tuple(axis_names)!r} "
                                 f"names {len(tuple(axis_names))}")
        elif not name:
            raise ValueError(f"mesh name must be a non-empty string, got {name!r}")
        if shape is None:
            raise TypeError(f"Mesh({name!r}): the mesh shape is missing")
        shape = S.dims(shape, "mesh shape")
        if not shape or any(d < 1 for d in shape):
            raise ValueError(f"mesh shape must be a non-empty tuple of positive ints, "
                             f"got {shape!r}")
        if axis_names is None:
            axis_names = tuple(f"axis_{i}" for i in range(len(shape)))
        axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if len(axis_names) != len(shape) or len(set(axis_names)) != len(axis_names) or not all(
                isinstance(a, str) and a for a in axis_names):
            raise ValueError(f"axis_names must be {len(shape)} distinct non-empty strings, "
                             f"got {axis_names!r}")
        self.name, self.axis_names = name, axis_names
        self.axis_sizes, self.shape = shape, MeshShape(shape, axis_names)
        self.axis_types = _axis_types(axis_types, len(shape), f"mesh {name!r}")
        self.size = math.prod(shape)
        self.is_abstract = devices is None
        if devices is None:
            devices = tuple(range(self.size))
            self._check_available()
        else:
            devices = S.integers(devices, f"mesh {name!r}: devices")
            if len(devices) != self.size or len(set(devices)) != self.size:
                raise ValueError(f"mesh {name!r} of shape {shape} needs {self.size} distinct "
                                 f"devices, got {list(devices)}")
            n = pjrt.device_count()
            bad = [d for d in devices if not 0 <= d < n]
            if bad:
                raise ValueError(f"mesh {name!r}: devices {list(devices)} include {bad[0]}, which "
                                 f"is not a device position of the {pjrt.platform()} client "
                                 f"(0 to {n - 1}); {pjrt.how_to_get_devices(max(bad) + 1)}"
                                 if bad[0] >= 0 else
                                 f"mesh {name!r}: devices {list(devices)} include {bad[0]}: "
                                 f"device positions are integers from 0 to {n - 1}")
        self.devices = devices

    def __enter__(self):
        stack = _context._local.__dict__.setdefault("mesh_stack", [])
        stack.append(get_mesh())
        _context.set_sharding_state(mesh=self)
        return self

    def __exit__(self, *exc):
        _context.set_sharding_state(mesh=_context._local.mesh_stack.pop())

    def _check_available(self, needed=None):
        needed = needed or self.size
        n = pjrt.device_count()
        if needed > n:
            raise ValueError(
                f"mesh {self.name!r} of shape {self.shape} needs {needed} devices but the "
                f"{pjrt.platform()} client has {n}; {pjrt.how_to_get_devices(needed)}")

    @property
    def processes(self) -> tuple:
        """The process owning each partition's device (all 0 in one process)."""
        return tuple(pjrt.process_of(d) for d in self.devices)

    @property
    def local_partitions(self) -> list:
        """The partitions whose devices belong to this process, in partition order: the
        ones a sharded program takes arguments for and returns results of here."""
        return [p for p, d in enumerate(self.devices) if pjrt.is_local(d)]

    @property
    def is_multiprocess(self) -> bool:
        """Whether the mesh's devices belong to more than one process."""
        return pjrt.process_count() > 1 and len(set(self.processes)) > 1

    def with_axis_types(self, axis_types) -> "Mesh":
        """This mesh with its axes of ``axis_types``."""
        m = Mesh(self.name, self.axis_sizes, self.axis_names,
                 None if self.is_abstract else self.devices, axis_types=axis_types)
        return m

    def bind(self, devices) -> "Mesh":
        """This mesh on ``devices`` (one device position per partition)."""
        return Mesh(self.name, self.axis_sizes, self.axis_names, devices,
                    axis_types=self.axis_types)

    @property
    def abstract(self) -> tuple:
        """What a program compiled for this mesh depends on besides its devices: the name,
        shape, axis names and axis types (a same-shaped mesh of other devices reuses its
        trace and lowering, and only compiles for the new devices)."""
        return (self.name, self.axis_sizes, self.axis_names, self.axis_types)

    def __repr__(self):
        axes = ", ".join(f"{a}={d}" for a, d in zip(self.axis_names, self.axis_sizes))
        types = "" if all(t is AxisType.Auto for t in self.axis_types) else \
            f", axis_types={self.axis_types!r}"
        return f"Mesh({self.name!r}, [{axes}]{types})"

    def __eq__(self, other):
        return self is other or (isinstance(other, Mesh) and hash(self) == hash(other) and (
            self.abstract, self.devices) == (other.abstract, other.devices))

    def __hash__(self):
        h = self.__dict__.get("_hash")
        if h is None:  # a mesh is not changed after it is made: hash it once
            h = self._hash = hash((self.abstract, self.devices))
        return h

    def axis_index(self, axis) -> int:
        """A mesh axis given by index or name, as an index."""
        if isinstance(axis, str):
            if axis not in self.axis_names:
                raise ValueError(f"axis {axis!r} is not an axis of mesh {self.name!r} "
                                 f"(axes {list(self.axis_names)})")
            return self.axis_names.index(axis)
        if S.as_int(axis) is None:
            raise TypeError(f"mesh axis must be an index or a name, got {axis!r}")
        axis = S.as_int(axis)
        if not 0 <= axis < len(self.shape):
            raise ValueError(f"axis {axis} is not valid for mesh with {len(self.shape)} axes")
        return int(axis)

    def coords(self, p: int) -> tuple:
        return tuple(int(c) for c in np.unravel_index(p, self.shape))

    def partition(self, coords) -> int:
        return int(np.ravel_multi_index(tuple(coords), self.shape))

    def groups(self, axes, axis_index_groups=None) -> list[list[int]]:
        """Replica groups of a collective over mesh ``axes`` (JAX's rule): move the axes to
        the front in the order named, reshape to (product of their sizes, -1), one group
        per column."""
        axes = [self.axis_index(a) for a in axes]
        iota = np.arange(self.size).reshape(self.shape)
        n = math.prod(self.shape[a] for a in axes)
        cols = np.moveaxis(iota, axes, list(range(len(axes)))).reshape(n, -1).T
        groups = [[int(v) for v in g] for g in cols]
        if axis_index_groups is not None:
            groups = [[g[i] for i in aig] for g in groups for aig in axis_index_groups]
        return groups


def is_device(d) -> bool:
    """Whether ``d`` is a device object (one of ``nx.pjrt.devices()``: a jaxlib device)."""
    return hasattr(d, "id") and hasattr(d, "platform")


def _position(d, what) -> int:
    """A device given as a device position or a device object, as its position."""
    if isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)):
        return int(d)
    if is_device(d):
        return pjrt.position_of(d)
    raise TypeError(f"{what}: expected each device to be a device (nx.pjrt.devices()) or a "
                    f"device position, got {d!r}")


def _axis_types(types, n, what) -> tuple:
    if types is None:
        return (AxisType.Auto,) * n
    if isinstance(types, AxisType):
        types = (types,) * n
    types = tuple(types)
    if len(types) != n or not all(isinstance(t, AxisType) for t in types):
        raise TypeError(f"{what}: expected axis_types to be {n} nx.AxisType values (one per "
                        f"axis), got {types!r}")
    for t in types:
        if t is AxisType.Manual:
            raise NotImplementedError(
                f"{what}: a mesh of AxisType.Manual axes is not supported: the axes are "
                f"manual inside shard_map (its body sees each device's shard); make the "
                f"mesh's axes Explicit or Auto")
    return types


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None) -> Mesh:
    """A mesh of ``axis_shapes`` with ``axis_names`` over ``devices`` (devices or device
    positions; by default the first ones), as ``jax.make_mesh``: named ``"mesh"``, its axes
    ``AxisType.Explicit`` unless ``axis_types`` says otherwise (JAX's default: a value's
    layout over them is part of its type, :func:`nx.typeof`).

    >>> import nxpy as nx
    >>> nx.make_mesh((2, 4), ("data", "model")).devices
    (0, 1, 2, 3, 4, 5, 6, 7)
    >>> nx.make_mesh((2,), ("x",), devices=nx.pjrt.devices()[6:]).devices
    (6, 7)
    """
    shape = S.dims(axis_shapes, "make_mesh: axis_shapes")
    if devices is not None:
        devices = [_position(d, "make_mesh: devices") for d in devices]
        if len(devices) < math.prod(shape):
            raise ValueError(f"make_mesh: a mesh of shape {shape} needs {math.prod(shape)} "
                             f"devices, devices has {len(devices)}")
        devices = devices[:math.prod(shape)]
    if axis_types is None:
        axis_types = (AxisType.Explicit,) * len(shape)
    return Mesh("mesh", shape, axis_names, devices, axis_types=axis_types)


def get_mesh() -> Mesh | None:
    """The context mesh of this thread (:func:`set_mesh`), or None."""
    return _context._local.mesh


class set_mesh:
    """Makes ``mesh`` (an :class:`Mesh`, or None for none) the context mesh of this thread,
    as ``jax.set_mesh``: the mesh a bare ``P`` is laid over wherever a sharding is taken
    (``device_put``, ``jit``'s ``in_shardings``/``out_shardings``,
    ``with_sharding_constraint``, ``shard_map``'s mesh, ...). Called, it sets it; used as
    a context manager, it sets it for the block and restores the one before on exit
    (nestable). ``with mesh:`` is the same as ``with set_mesh(mesh):``.

    >>> import nxpy as nx
    >>> mesh = nx.make_mesh((2,), ("x",))
    >>> with nx.set_mesh(mesh):
    ...     x = nx.device_put(nx.iota((4,)), nx.P("x"))
    ...     nx.get_mesh() is mesh
    True
    >>> x.sharding.spec, nx.typeof(x), nx.get_mesh()
    (P('x'), ShapedArray(int32[4@x]), None)
    """

    def __init__(self, mesh):
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"set_mesh: expected mesh to be an nx.Mesh (or None), got {mesh!r}")
        self.mesh = mesh
        self._before = get_mesh()
        _context.set_sharding_state(mesh=mesh)

    def __enter__(self):
        return self.mesh

    def __exit__(self, *exc):
        _context.set_sharding_state(mesh=self._before)


def mesh_for(spec, what) -> Mesh:
    """The mesh a sharding ``spec`` that names none (a bare ``P``, a dict, a per-dim
    tuple) is laid over: the context mesh; an error naming :func:`set_mesh` when none is
    set."""
    mesh = get_mesh()
    if mesh is None:
        raise ValueError(f"{what}: {spec!r} names no mesh and no mesh is set: give "
                         f"nx.NamedSharding(mesh, spec), or set a context mesh with "
                         f"nx.set_mesh(mesh) (as a context manager: `with nx.set_mesh(mesh):`)")
    return mesh
