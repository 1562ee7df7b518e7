"""The tracing state: which defn traces are active (a stack of scopes)."""
from __future__ import annotations

import threading

class _Local(threading.local):
    # class-level defaults: a thread that never traced reads them without the
    # AttributeError a plain threading.local raises (and getattr catches) on every call
    stack = None
    grad_depth = 0
    mesh = None  # the context mesh (nxpy.mesh.set_mesh)
    axis_types = None  # {mesh axis name: AxisType}: auto_axes/explicit_axes in this block
    explicit_off = 0  # explicit sharding's checks are off (an op given out_sharding=)
    #: what a traced program depends on of the three above: None when none is set, else
    #: the mesh, or (mesh, axis types, checks off); jit keys its calls by it
    jit_key = None
    node_check = None  # called with each Expr node recorded (explicit sharding's checks)


_local = _Local()
_KEEP = object()


def set_sharding_state(*, mesh=_KEEP, axis_types=_KEEP, explicit_off=_KEEP) -> None:
    """Sets the context mesh, the axis-type overrides and the checks' switch of this
    thread (the sharding state a program is traced in), and the jit key they make."""
    loc = _local
    if mesh is not _KEEP:
        loc.mesh = mesh
    if axis_types is not _KEEP:
        loc.axis_types = axis_types or None
    if explicit_off is not _KEEP:
        loc.explicit_off = explicit_off
    types = loc.axis_types
    if not types and not loc.explicit_off:
        loc.jit_key = loc.mesh
    else:
        loc.jit_key = (loc.mesh, tuple(sorted((n, t.name) for n, t in (types or {}).items())),
                       loc.explicit_off > 0)


def stack() -> list:
    s = _local.stack
    if s is None:
        s = _local.stack = []
    return s


def current():
    s = stack()
    return s[-1] if s else None


def tracing() -> bool:
    return bool(stack())


class HostOnlyError(TypeError):
    """A host-only operation was called inside a defn: reading a tensor's values
    (``bool(t)``, ``t.to_numpy()``, ``int(t)``, ``np.asarray(t)``), or changing the
    process's defaults. Tensors there are symbolic: their values exist only when the
    compiled function runs. A TypeError, as JAX's tracer conversion errors are."""


def forbid_inside_defn(what: str) -> None:
    if tracing():
        raise HostOnlyError(f"{what} is a host-only operation and cannot be called inside a "
                           f"defn; call it outside the defn, or pass the value in as an argument")


def grad_depth() -> int:
    """How many ``grad`` transforms are tracing the function being traced now (markers
    such as ``stop_grad`` only matter, and are only recorded, when this is above 0)."""
    return _local.grad_depth


class differentiating:
    """Active while ``grad`` traces the function it differentiates."""

    def __enter__(self):
        _local.grad_depth = grad_depth() + 1
        return self

    def __exit__(self, *exc):
        _local.grad_depth -= 1
