"""Device meshes: a name, a shape, axis names and the device of each partition (how a
tensor is laid out over one, ``P`` and ``NamedSharding``, is :mod:`nxpy.layout`).

Partition ``p`` sits at the row-major mesh coordinates of ``p`` (2x2: p = 2·a0 + a1).

>>> from nxpy import Mesh
>>> m = Mesh("mesh", (2, 2))
>>> m.axis_names, m.size, m.coords(3)
(('axis_0', 'axis_1'), 4, (1, 1))
>>> m.groups([0]), m.groups([1]), m.groups([1, 0])
([[0, 2], [1, 3]], [[0, 1], [2, 3]], [[0, 2, 1, 3]])
"""
from __future__ import annotations

import math

import numpy as np

from . import pjrt, shape as S

__all__ = ["Mesh"]


class Mesh:
    """``Mesh(name, shape, axis_names=None, devices=None)``; ``devices`` are device
    positions of the XLA client: global positions, in process order, when several
    processes share the distributed runtime (``processes`` says which process owns each
    partition, ``local_partitions`` which are this process's). A mesh built without devices
    is *abstract*: a ``shard_jit`` over it runs on the devices its arguments already live
    on (EXLA tensors, one distinct device per partition) and otherwise on the first
    ``size`` devices, which ``devices`` reports. Programs are traced and lowered per
    abstract mesh (name, shape, axis names) and compiled per device assignment.

    >>> m = Mesh("m", (2,))
    >>> m.is_abstract, m.devices, m.bind([3, 1]).devices, m.bind([3, 1]).is_abstract
    (True, (0, 1), (3, 1), False)
    """

    def __init__(self, name, shape, axis_names=None, devices=None):
        if not isinstance(name, str) or not name:
            raise ValueError(f"mesh name must be a non-empty string, got {name!r}")
        shape = S.dims(shape, "mesh shape")
        if not shape or any(d < 1 for d in shape):
            raise ValueError(f"mesh shape must be a non-empty tuple of positive ints, "
                             f"got {shape!r}")
        if axis_names is None:
            axis_names = tuple(f"axis_{i}" for i in range(len(shape)))
        axis_names = tuple(axis_names)
        if len(axis_names) != len(shape) or len(set(axis_names)) != len(axis_names) or not all(
                isinstance(a, str) and a for a in axis_names):
            raise ValueError(f"axis_names must be {len(shape)} distinct non-empty strings, "
                             f"got {axis_names!r}")
        self.name, self.shape, self.axis_names = name, shape, axis_names
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

    def bind(self, devices) -> "Mesh":
        """This mesh on ``devices`` (one device position per partition)."""
        return Mesh(self.name, self.shape, self.axis_names, devices)

    @property
    def abstract(self) -> tuple:
        """What a program compiled for this mesh depends on besides its devices: the name,
        shape and axis names (a same-shaped mesh of other devices reuses its trace and
        lowering, and only compiles for the new devices)."""
        return (self.name, self.shape, self.axis_names)

    def __repr__(self):
        axes = ", ".join(f"{a}={d}" for a, d in zip(self.axis_names, self.shape))
        return f"Mesh({self.name!r}, [{axes}])"

    def __eq__(self, other):
        return self is other or (isinstance(other, Mesh) and (
            self.name, self.shape, self.axis_names, self.devices) == (
            other.name, other.shape, other.axis_names, other.devices))

    def __hash__(self):
        h = self.__dict__.get("_hash")
        if h is None:  # a mesh is not changed after it is made: hash it once
            h = self._hash = hash((self.name, self.shape, self.axis_names, self.devices))
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
