"""The Backend protocol, the backend registry (:data:`BACKENDS`) and the default backend.

Every op method of a backend receives the output template ``out`` first (a
:class:`~nxpy.tensor.Tensor` with shape, type and names but no data), then the
operands (Tensors already on this backend, or static values), then static options
as keyword arguments. The front end (:mod:`nxpy.ops`) has validated everything and
inferred ``out``; a backend only computes and returns a Tensor shaped like ``out``.

>>> import nxpy as nx
>>> nx.default_backend().name
'numpy'
"""
from __future__ import annotations

import contextlib
import contextvars

from . import _context
from .format import format_array
from .registry import Registry
from .tensor import Tensor

__all__ = ["Backend", "BACKENDS", "default_backend", "with_default_backend", "get_backend",
           "backend_transfer", "backend_copy", "block_until_ready", "register_backend",
           "register_backend_factory", "pick"]


class Backend:
    """The eager backend protocol (as Nx's ``Nx.Backend``). Register a backend with
    :func:`nxpy.register_backend` or the ``nxpy.backends`` entry point group.

    Required (checked when the plugin is registered or first instantiated):

    ``from_numpy(array, type, names=None) -> Tensor``
        A tensor of this backend holding ``array`` (already of ``type``'s dtype).
    ``to_numpy(t) -> np.ndarray``
        The values, on the host (treat the result as read-only).
    ``constant(out, value) -> Tensor``
        A tensor shaped like the template ``out`` filled with the Python scalar ``value``.

    Ops: one method per op of the op set (``nxpy.testing.OP_SET``), each receiving the
    output template ``out`` first — a Tensor with the inferred shape, type and names and
    no data — then the operands (tensors already on this backend), then static options as
    keyword arguments. The front end has validated everything; a kernel only computes and
    returns a Tensor shaped like ``out``. Signatures, by family:

    * unary ``op(out, x)`` for ``nxpy.UNARY``; binary ``op(out, a, b)`` for ``nxpy.BINARY``
      (operands broadcast to ``out.shape``; comparisons compute in the merged type and
      return pred; see ``nxpy.ops.binary_compute_type``)
    * ``select(out, pred, on_true, on_false)``, ``clip(out, x, lo, hi)``,
      ``as_type(out, x)``, ``bitcast(out, x)``
    * ``reshape(out, x)``, ``broadcast(out, x, axes)``, ``transpose(out, x, axes)``,
      ``reverse(out, x, axes)``, ``pad(out, x, value, config)``,
      ``slice(out, x, start_indices, lengths, strides)``,
      ``dynamic_slice(out, x, starts, lengths, strides)``, ``put_slice(out, x, starts, update)``,
      ``concatenate(out, tensors, axis)``
    * reductions ``op(out, x, axes, keep_axes)`` for ``nxpy.REDUCTIONS``;
      ``argmax``/``argmin(out, x, axis, keep_axis, tie_break)``
    * ``dot(out, a, b, contract_a, batch_a, contract_b, batch_b)``;
      ``window_sum``/``window_max(out, x, window_dimensions, strides, padding, window_dilations)``
    * ``iota(out, axis)``, ``eye(out)``

    A missing op raises NotImplementedError naming the backend and the op when it is
    first used (unless the op has a portable implementation, see :mod:`nxpy.extend`);
    the conformance kit reports every missing op. Optional: ``name``, ``priority``
    (which backend an op with operands on several backends runs on: the highest wins and
    the other operands are transferred), ``from_tensor(t)`` (a faster transfer in),
    ``inspect(t)`` (the values part of ``repr``), ``block_until_ready(tensors)`` (waits
    until asynchronously computed tensors of this backend are ready; the default returns
    at once).

    ``fast_kernel(name, out, *args) -> kernel or None`` (optional, for speed): for an
    elementwise op of ``nxpy.UNARY``/``nxpy.BINARY`` with tensor operands of this backend,
    a function ``kernel(*datas) -> data`` computing ``out``'s data from the operands' data
    with no further checks. The front end asks once per op and operand signature (shapes,
    types, names), keeps the answer, and calls the kernel directly next time; None means
    "use the op method". A kernel may raise to decline one call (the NumPy backend's do
    when another thread is inside the same kernel): the op then runs its full path, which
    reports a real error properly.

    Sharded tensors (``t.sharding`` set: one global value whose shards live on a mesh's
    devices) never reach an op method: the front end runs ops on them as sharded
    programs, compiled with the backend's ``compiler`` (``"evaluator"`` by default:
    the Evaluator simulates the mesh on this backend). How a backend holds one is its
    own: by default ``data`` is a tuple with one data object per partition of this process
    (``mesh.local_partitions``); a device backend overrides ``shards(t) -> [Tensor]``
    (the shards as tensors of this backend, each with its ``device_id``),
    ``from_shards(shards, shape, type, names, sharding) -> Tensor``,
    ``place(array, type, names, sharding) -> Tensor`` (a host array's shards put on their
    devices) and ``sharded_to_numpy(t)`` (the global value on the host).
    """

    name = "backend"
    priority = 0
    is_expr = False  # True only for the tracer's backend (values do not exist yet)
    compiler = "evaluator"  # what runs eager ops on this backend's sharded tensors

    def from_numpy(self, array, type, names=None) -> Tensor:  # pragma: no cover - protocol
        raise NotImplementedError

    def to_numpy(self, t: Tensor):  # pragma: no cover - protocol
        raise NotImplementedError

    def inspect(self, t: Tensor) -> str:
        return format_array(t.to_numpy())

    def from_tensor(self, t: Tensor) -> Tensor:
        """Takes a tensor of another backend onto this one (host round trip by default)."""
        return self.from_numpy(t.to_numpy(), t.type, t.names)

    def block_until_ready(self, tensors) -> None:
        """Waits until every tensor of ``tensors`` (all of this backend) is computed."""

    def fast_kernel(self, name, out, *args):
        """A direct kernel for elementwise op ``name`` on these operands, or None."""
        return None

    # --- sharded tensors ---------------------------------------------------------------
    def shards(self, t: Tensor) -> list:
        """``t``'s shards in this process (one per local partition of its mesh, in
        partition order), as tensors of this backend on their devices."""
        mesh = t.sharding.mesh
        local = t.sharding.local_shape(t.shape)
        return [Tensor(d, local, t.type, t.names, self, mesh.devices[p])
                for p, d in zip(mesh.local_partitions, t.data)]

    def from_shards(self, shards, shape, type, names, sharding) -> Tensor:
        """The sharded tensor (global ``shape``) whose shards in this process are
        ``shards`` (tensors of any backend, one per local partition of
        ``sharding.mesh``, in partition order)."""
        datas = tuple((s if s.backend is self and s.sharding is None else
                       self.from_tensor(s)).data for s in shards)
        return Tensor(datas, tuple(shape), type, names, self, None, sharding=sharding)

    def reshard(self, t: Tensor, sharding):
        """``t`` laid out as ``sharding`` over the same mesh without a compiled program
        (moving whole blocks, for instance), or None: then ``nx.device_put`` compiles an
        identity with the new result sharding."""
        return None

    def place(self, array, type, names, sharding) -> Tensor:
        """A sharded tensor of the global host ``array`` (of ``type``'s dtype): this
        process's shards of it, per ``sharding``, placed on their devices."""
        parts = sharding.shard_array(array, partitions=sharding.mesh.local_partitions)
        return self.from_shards([self.from_numpy(a.copy(), type, names) for a in parts],
                                array.shape, type, names, sharding)

    def covers(self, t: Tensor) -> bool:
        """Whether this process's shards of ``t`` hold its whole value (always in one
        process; with several, when the axes that split it are this process's own)."""
        sh = t.sharding
        blocks = {tuple(sh.block_index(p, d) for d in range(len(t.shape)))
                  for p in sh.mesh.local_partitions}
        return len(blocks) == sh.block_count

    def sharded_to_numpy(self, t: Tensor):
        """The global value of sharded tensor ``t`` from this process's shards."""
        mesh = t.sharding.mesh
        if not self.covers(t):
            raise ValueError(
                f"this tensor is sharded over {t.sharding.mesh!r} with {t.sharding.spec!r}, "
                f"and its shards live on the devices of several processes; this process "
                f"holds only its own (t.addressable_shards). Gather the whole value with "
                f"nxpy.distributed.process_allgather(t) (every process calls it)")
        return t.sharding.unshard([s.to_numpy() for s in self.shards(t)], check=False,
                                  what="the tensor", partitions=mesh.local_partitions)

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"


#: backends by name: built-ins, register_backend calls, entry points (group nxpy.backends)
BACKENDS = Registry("backend", "nxpy.backends", Backend, ("from_numpy", "to_numpy", "constant"),
                    "a Backend implements from_numpy, to_numpy and constant, plus the ops it "
                    "supports (see nxpy.backends.Backend and docs/plugins.md)")

_DEFAULT: list[Backend] = []


def register_backend(name, backend, *, replace=False):
    """Makes ``backend`` (an instance, a Backend subclass or a factory) usable by name:
    ``nx.default_backend(name)``, ``nx.tensor(..., backend=name)``, the conformance kit."""
    BACKENDS.register(name, backend, replace=replace)


def register_backend_factory(name: str, factory) -> None:
    """Registers a built-in backend (plugins use :func:`register_backend`)."""
    BACKENDS.register(name, factory, origin="built into nxpy", replace=True)


def get_backend(backend) -> Backend:
    """A backend by name (built-in, registered or an installed entry point) or instance."""
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, str):
        return BACKENDS.get(backend)
    raise TypeError(f"backend must be a name or a Backend instance, got {backend!r}")


#: the backend of the innermost with_default_backend block of this thread (or task)
_SCOPED: contextvars.ContextVar = contextvars.ContextVar("nxpy_default_backend", default=None)


def default_backend(backend=None) -> Backend:
    """With no argument, the current default backend; with one, sets it and returns the
    previous one (as ``Nx.default_backend/1``). Not allowed inside a defn.

    The default is the process's, shared by every thread, except inside a
    :func:`with_default_backend` block, where it is the block's (in that thread only);
    setting it there changes the block's until the block ends."""
    if backend is None:
        scoped = _SCOPED.get()
        if scoped is not None:
            return scoped[0]
        if not _DEFAULT:
            _DEFAULT.append(get_backend("numpy"))
        return _DEFAULT[0]
    _context.forbid_inside_defn("nx.default_backend(...) (setting the default backend)")
    new = get_backend(backend)
    old = default_backend()
    scoped = _SCOPED.get()
    if scoped is not None:
        scoped[0] = new
    else:
        _DEFAULT[0] = new
    return old


@contextlib.contextmanager
def with_default_backend(backend):
    """A block that runs with ``backend`` as the default backend (``Nx.with_default_backend``),
    in this thread (or asyncio task) only; the previous default comes back when the block
    ends, however it ends. Blocks nest. Not allowed inside a defn.

    >>> import nxpy as nx
    >>> with nx.with_default_backend("exla"):
    ...     nx.tensor([1, 2]).backend.name
    'exla'
    >>> nx.tensor([1, 2]).backend.name
    'numpy'
    """
    _context.forbid_inside_defn("nx.with_default_backend")
    token = _SCOPED.set([get_backend(backend)])
    try:
        yield _SCOPED.get()[0]
    finally:
        _SCOPED.reset(token)


def backend_transfer(t: Tensor, backend=None) -> Tensor:
    """Moves ``t`` to ``backend`` (default: the default backend)."""
    _context.forbid_inside_defn("nx.backend_transfer")
    b = get_backend(backend) if backend is not None else default_backend()
    return t if t.backend is b else b.from_tensor(t)


def backend_copy(t: Tensor, backend=None) -> Tensor:
    """A copy of ``t`` on ``backend`` (default: the default backend)."""
    _context.forbid_inside_defn("nx.backend_copy")
    b = get_backend(backend) if backend is not None else default_backend()
    return b.from_numpy(t.to_numpy().copy(), t.type, t.names)


def block_until_ready(tree):
    """Waits until every tensor in ``tree`` (a tensor, or a tuple/list/dict of them, such
    as the per-device results of a sharded program) is computed, and returns ``tree``.
    Compiled programs on device backends return before their results are computed; time
    them with this (as ``jax.block_until_ready``).

    >>> import nxpy as nx
    >>> nx.block_until_ready([nx.tensor([1, 2]), {"b": nx.tensor(3.0)}])[1]["b"].item()
    3.0
    """
    by_backend: dict = {}
    stack = [tree]
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            if x.backend is not None:
                by_backend.setdefault(x.backend, []).append(x)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, dict):
            stack.extend(x.values())
    for b, ts in by_backend.items():
        b.block_until_ready(ts)
    return tree


def pick(tensors) -> Backend:
    """The backend an op on ``tensors`` runs on: the highest priority among them."""
    best = None
    for t in tensors:
        b = t.backend
        if best is None or (b is not best and b.priority > best.priority):
            best = b
    return best if best is not None else default_backend()
