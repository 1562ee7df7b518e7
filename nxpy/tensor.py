"""The Tensor: a shape, a type, names, and backend-specific data.

>>> import nxpy as nx
>>> t = nx.tensor([[1, 2], [3, 4]])
>>> t.shape, str(t.type)
((2, 2), 's32')
>>> t
#Nx.Tensor<
  s32[2][2]
  [
    [1, 2],
    [3, 4]
  ]
>
>>> (t + 1)[1]
#Nx.Tensor<
  s32[2]
  [4, 5]
>
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from . import pjrt
from ._context import HostOnlyError

__all__ = ["Deferred", "Donated", "DonatedError", "Shard", "Template", "Tensor", "shape_str",
           "template"]


def shape_str(shape, names=None) -> str:
    names = names or (None,) * len(shape)
    return "".join(f"[{n}: {d}]" if n else f"[{d}]" for d, n in zip(shape, names))


def _host_only(what, hint="return the tensor from the defn instead"):
    raise HostOnlyError(f"{what} is a host-only operation and cannot be called inside a "
                       f"defn: tensors there are symbolic (their values do not exist until "
                       f"the compiled function runs); {hint}")


class Deferred:
    """Tensor data a backend produces on first use: a tensor built with a ``Deferred`` as
    its data calls :meth:`resolve` once, when ``t.data`` is first read, and keeps the
    result. EXLA uses it for the per-device results of sharded programs, which are
    pieces of one global array and are only split off when a piece is used on its own."""

    __slots__ = ()

    def resolve(self):
        raise NotImplementedError


class DonatedError(RuntimeError):
    """A tensor was used after it was donated to a compiled function
    (``jit(f, donate_argnums=...)``): its memory holds that function's result now."""


class Donated(Deferred):
    """The data of a donated tensor: reading it raises :class:`DonatedError`, naming the
    function and the argument it was donated as."""

    __slots__ = ("where",)

    def __init__(self, where: str):
        self.where = where

    def resolve(self):
        raise DonatedError(f"this tensor was donated to {self.where} and cannot be used after "
                           f"that call (its memory may hold the result now); pass a copy "
                           f"(nx.backend_copy(t, 'exla') for example) if you need it afterwards, "
                           f"or do not donate it")


class Template:
    """A tensor's shape, type, names and sharding (None unless it lives sharded across a
    mesh), interned: equal templates are one object, so a cache key made of templates
    hashes and compares by identity (``defn``'s call path looks compiled programs up by
    them). Made by :func:`template`.

    >>> import nxpy as nx
    >>> x, y = nx.iota((2, 3), names=["i", None]), nx.iota((2, 3), names=["i", None])
    >>> x.template is y.template, x.template
    (True, Template((2, 3), s32, ('i', None)))
    """

    __slots__ = ("shape", "type", "names", "sharding", "__weakref__")

    def __repr__(self) -> str:
        tail = "" if self.sharding is None else f", {self.sharding!r}"
        return f"Template({self.shape}, {self.type}, {self.names}{tail})"


_TEMPLATES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_TEMPLATES_LOCK = threading.Lock()


def template(shape, type, names, sharding=None) -> Template:
    """The one :class:`Template` of ``(shape, type, names, sharding)`` (kept while
    something uses it)."""
    key = (shape, type, names, sharding)
    t = _TEMPLATES.get(key)
    if t is None:
        with _TEMPLATES_LOCK:  # two threads must not make two templates of one key
            t = _TEMPLATES.get(key)
            if t is None:
                t = Template()
                t.shape, t.type, t.names, t.sharding = key
                _TEMPLATES[key] = t
    return t


class Shard:
    """One addressable shard of a tensor (JAX's ``Shard``): ``device_id`` (the device
    position it lives on), ``index`` (the slices of the global value it holds),
    ``partition`` (its position in the mesh, row-major) and ``data`` (the shard as a
    tensor on that device)."""

    __slots__ = ("device_id", "index", "partition", "data")

    def __init__(self, device_id, index, partition, data):
        self.device_id, self.index, self.partition, self.data = device_id, index, partition, data

    @property
    def device(self):
        """The device it lives on (``nx.pjrt.devices()[device_id]``), as JAX's ``Shard``."""
        return pjrt.devices()[self.device_id]

    def __repr__(self):
        return (f"Shard(device_id={self.device_id}, index={self.index}, "
                f"partition={self.partition}, data={self.data.type}"
                f"{shape_str(self.data.shape)})")


class Tensor:
    """An n-dimensional array. ``data`` belongs to ``backend``; everything else is generic.

    ``device_id`` is the device a tensor of a device backend lives on (the per-device
    results of ``shard_jit`` have it too). A *sharded* tensor (``nx.device_put(x,
    NamedSharding(mesh, spec))``, the results of programs on sharded tensors) has a
    ``sharding``: it is one global value whose shards live on the mesh's devices
    (``addressable_shards``); its ``data`` is the backend's global array, and its
    ``device_id`` is None.
    """

    __slots__ = ("_data", "shape", "type", "names", "backend", "device_id", "_tk",
                 "sharding", "__weakref__")
    __array_priority__ = 1000  # numpy defers binary operators to us

    def __init__(self, data, shape, type, names=None, backend=None, device_id=None,
                 template=None, sharding=None):
        self._data = data
        self.shape = shape
        self.type = type
        self.names = names if names is not None else (None,) * len(shape)
        self.backend = backend
        self.device_id = device_id
        self._tk = template  # None, or the given template of (shape, type, names, sharding)
        self.sharding = sharding

    @property
    def template(self) -> Template:
        """The interned :class:`Template` of the tensor's shape, type, names and sharding."""
        tk = self._tk
        if tk is None:
            tk = self._tk = template(self.shape, self.type, self.names, self.sharding)
        return tk

    @property
    def addressable_shards(self) -> list:
        """The shards of this tensor that live in this process, in partition order (a
        :class:`Shard` each: ``device_id``, ``index``, ``partition``, ``data``); a tensor
        that is not sharded is its own one shard."""
        if self.backend is None or self.backend.is_expr:
            _host_only("addressable_shards")
        s = self.sharding
        if s is None:
            return [Shard(self.device_id, tuple(slice(0, n) for n in self.shape), 0, self)]
        mesh = s.mesh
        return [Shard(mesh.devices[p], s.shard_index(self.shape, p), p, t)
                for p, t in zip(mesh.local_partitions, self.backend.shards(self))]

    def devices(self) -> set:
        """The devices holding this tensor, as JAX's ``Array.devices()``: a sharded
        tensor's mesh devices, a device backend's tensor its device (``nx.pjrt.devices()``'s
        objects); a host tensor (the NumPy backend) is on none: the empty set.

        >>> import nxpy as nx
        >>> nx.backend_copy(nx.iota((2,)), "exla").devices() == {nx.pjrt.devices()[0]}
        True
        >>> nx.tensor([1, 2]).devices()
        set()
        """
        if self.backend is None or self.backend.is_expr:
            _host_only("devices")
        if self.sharding is not None:
            positions = self.sharding.mesh.devices
        elif self.device_id is not None:
            positions = (self.device_id,)
        else:
            return set()
        devs = pjrt.devices()
        return {devs[p] for p in positions}

    @property
    def is_fully_addressable(self) -> bool:
        """Whether every shard lives in this process (always, with one process)."""
        return self.sharding is None or len(self.sharding.mesh.local_partitions) == \
            self.sharding.mesh.size

    def rename_in_place(self, names) -> None:
        """Sets ``names`` on a tensor nothing else has seen yet (a backend finishing its
        result); tensors are otherwise immutable."""
        self.names = tuple(names)
        self._tk = None

    @property
    def data(self):
        """The backend's data (a :class:`Deferred` is resolved here, once)."""
        d = self._data
        if isinstance(d, Deferred):
            d = self._data = d.resolve()
        return d

    @property
    def raw_data(self):
        """The data as the backend stored it: possibly a :class:`Deferred` not yet
        resolved (for backends that can use it as it is)."""
        return self._data

    def donate(self, where: str) -> None:
        """Marks the tensor donated to ``where`` (a compiled function that may reuse its
        memory): any later use raises :class:`DonatedError`."""
        self._data = Donated(where)

    @property
    def donated(self) -> bool:
        """Whether the tensor was donated to a compiled function (and so is unusable)."""
        return type(self._data) is Donated

    # --- inspection -----------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def dtype(self) -> np.dtype:
        return self.type.dtype

    def to_numpy(self) -> np.ndarray:
        """The values as a NumPy array (a host copy for device backends). Tensors are
        immutable: an array that shares the tensor's memory is returned read-only."""
        b = self.backend
        if b is None:
            raise ValueError(f"this is a template ({self.type}{shape_str(self.shape)}), "
                             f"it holds no data")
        if b.is_expr:
            _host_only("to_numpy (reading a tensor's values)")
        if self.sharding is not None:
            return b.sharded_to_numpy(self)
        a = b.to_numpy(self)
        if a is self.data and a.flags.writeable:
            a = a.view()
            a.flags.writeable = False
        return a

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """The DLPack protocol: the tensor's own buffer (a NumPy array's, or an EXLA
        tensor's device buffer), so ``np.from_dlpack(t)`` and ``jnp.from_dlpack(t)`` share
        it. A sharded tensor has no one buffer: take its shards."""
        if self.backend is not None and self.backend.is_expr:
            _host_only("__dlpack__ (handing a tensor's buffer to another library)")
        if self.sharding is not None:
            raise BufferError("__dlpack__: a sharded tensor has one buffer per device; hand "
                              "over its shards (nxpy.distributed or t.backend.shards(t)), or "
                              "the whole tensor with nxpy.interop.to_jax_array")
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
                 "copy": copy}
        return self.data.__dlpack__(**{k: v for k, v in given.items() if v is not None})

    def __dlpack_device__(self):
        if self.sharding is not None:
            raise BufferError("__dlpack_device__: a sharded tensor lives on several devices")
        return self.data.__dlpack_device__()

    def __array__(self, dtype=None, copy=None):
        if self.backend is not None and self.backend.is_expr:
            _host_only("converting a tensor to a NumPy array (np.asarray(tensor))")
        a = self.to_numpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a

    def tolist(self):
        return self.to_numpy().tolist()

    def item(self):
        return self.to_numpy().item()

    def __repr__(self) -> str:
        head = f"{self.type}{shape_str(self.shape, self.names)}"
        if type(self._data) is Donated:
            return f"#Nx.Tensor<\n  {head}\n  donated to {self._data.where}\n>"
        if self.backend is None:
            return f"#Nx.Tensor<\n  {head}\n  template\n>"
        if self.sharding is not None:
            head += f"\n  {self.sharding!r}"
            if not self.is_fully_addressable and not self.backend.covers(self):
                return f"#Nx.Tensor<\n  {head}\n  (shards on several processes)\n>"
        body = self.backend.inspect(self)
        inner = "\n".join("  " + line for line in body.splitlines())
        return f"#Nx.Tensor<\n  {head}\n" + inner + "\n>"

    __str__ = __repr__

    def __bool__(self):
        if self.backend is not None and self.backend.is_expr:
            _host_only("bool(tensor) (a Python if, while, and, or or not on a tensor)",
                       "use nx.cond, nx.select or nx.while_loop instead")
        if self.size != 1:
            raise ValueError(f"the truth value of a tensor of shape {self.shape} is ambiguous: "
                             f"use nx.all or nx.any")
        return bool(self.to_numpy().reshape(()))

    def _scalar(self, what):
        if self.backend is not None and self.backend.is_expr:
            _host_only(f"{what}(tensor)", "keep the value as a tensor")
        if self.size != 1:
            raise TypeError(f"only tensors with one element can be converted to Python "
                            f"scalars, got shape {self.shape}")
        return self.to_numpy().reshape(())

    def __int__(self):
        return int(self._scalar("int"))

    def __float__(self):
        return float(self._scalar("float"))

    def __complex__(self):
        return complex(self._scalar("complex"))

    def __index__(self):
        if not (self.type.is_int or self.type.is_pred):
            raise TypeError(f"only integer tensors can be used as an index, got {self.type}")
        return int(self._scalar("operator.index"))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a scalar tensor")
        return self.shape[0]

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    __hash__ = object.__hash__

    def __pos__(self):
        return self

    # Operators (+, -, *, /, //, %, **, @, &, |, ^, <<, >>, comparisons, unary -, abs, ~),
    # indexing (x[...]) and the methods reshape, as_type and T are the front-end ops of
    # nxpy.ops, which installs them on this class: the op layer sits above the tensor.
