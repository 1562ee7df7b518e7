"""The Backend protocol, the backend registry and the default backend.

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

from . import _context
from .tensor import Tensor

__all__ = ["Backend", "default_backend", "get_backend", "backend_transfer", "backend_copy", "op_method",
           "register_backend_factory", "pick"]


class Backend:
    """Base class of eager backends. Subclasses implement ``from_numpy``, ``to_numpy``,
    ``constant`` and one method per op (``add(out, a, b)``, ``sum(out, x, axes=...,
    keep_axes=...)``, ...). ``priority`` decides which backend an op with operands on
    several backends runs on (the highest wins, the others' operands are transferred).
    """

    name = "backend"
    priority = 0
    is_expr = False  # True only for the tracer's backend (values do not exist yet)

    def from_numpy(self, array, type, names=None) -> Tensor:  # pragma: no cover - protocol
        raise NotImplementedError

    def to_numpy(self, t: Tensor):  # pragma: no cover - protocol
        raise NotImplementedError

    def inspect(self, t: Tensor) -> str:
        from .backends.numpy import format_array
        return format_array(self.to_numpy(t))

    def from_tensor(self, t: Tensor) -> Tensor:
        """Takes a tensor of another backend onto this one (host round trip by default)."""
        return self.from_numpy(t.to_numpy(), t.type, t.names)

    def __repr__(self):
        return f"<{type(self).__name__} {self.name!r}>"


_DEFAULT: list[Backend] = []


def register_backend_factory(name: str, factory) -> None:
    """Registers a built-in backend (plugins use :func:`nxpy.register_backend`)."""
    from .plugins import BACKENDS
    BACKENDS.register(name, factory, origin="built into nxpy", replace=True)


def get_backend(backend) -> Backend:
    """A backend by name (built-in, registered or an installed entry point) or instance."""
    if isinstance(backend, Backend):
        return backend
    if isinstance(backend, str):
        from .plugins import BACKENDS
        return BACKENDS.get(backend)
    raise TypeError(f"backend must be a name or a Backend instance, got {backend!r}")


def default_backend(backend=None) -> Backend:
    """With no argument, the current default backend; with one, sets it and returns the
    previous one (as ``Nx.default_backend/1``). Not allowed inside a defn."""
    if backend is None:
        if not _DEFAULT:
            _DEFAULT.append(get_backend("numpy"))
        return _DEFAULT[0]
    _context.forbid_inside_defn("nx.default_backend(...) (setting the default backend)")
    new = get_backend(backend)
    old = default_backend()
    _DEFAULT[0] = new
    return old


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


def op_method(backend: Backend, op: str, needed_by: str = ""):
    """``backend``'s kernel for ``op`` (a callable ``(out, *args, **options)``): its own
    method, else the op's portable implementation (``nxpy.extend.register_op(...,
    evaluate=...)``); a NotImplementedError naming both when there is neither."""
    fn = getattr(backend, op, None)
    if fn is not None:
        return fn
    from .extend import fallback
    fb = fallback(op)
    if fb is None:
        raise NotImplementedError(f"backend {backend.name!r} does not implement the op {op!r}"
                                  f"{needed_by}")
    return lambda out, *args, **options: fb(backend, out, *args, **options)


def pick(tensors) -> Backend:
    """The backend an op on ``tensors`` runs on: the highest priority among them."""
    best = None
    for t in tensors:
        b = t.backend
        if best is None or (b is not best and b.priority > best.priority):
            best = b
    return best if best is not None else default_backend()
