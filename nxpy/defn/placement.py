"""Placing tensors on a mesh's devices and pinning layouts (JAX's sharding model):
``nx.device_put``, ``with_sharding_constraint``, and eager ops on sharded tensors.

>>> import nxpy as nx
>>> mesh = nx.Mesh("m", (2, 2), axis_names=("data", "model"))
>>> x = nx.device_put(nx.iota((4, 4), type="f32"), nx.NamedSharding(mesh, nx.P("data", "model")))
>>> x.sharding.spec, x.shape, [s.index for s in x.addressable_shards][3]
(P('data', 'model'), (4, 4), (slice(2, 4, None), slice(2, 4, None)))
>>> y = nx.device_put(x, nx.NamedSharding(mesh, nx.P("model", "data")))   # on the devices
>>> y.addressable_shards[1].data.tolist()
[[8.0, 9.0], [12.0, 13.0]]
>>> (x + 1).sharding.spec                     # an eager op on sharded tensors stays sharded
P('data', 'model')
"""
from __future__ import annotations

import functools

import numpy as np

from .. import _context, pjrt, types as T
from ..backend import get_backend
from ..cache import PROCESS_FACTOR, program_cache_size, put_bounded
from ..layout import NamedSharding, as_partition_spec, read_sharding
from ..mesh import AxisType, is_device, mesh_for
from ..ops import to_tensor
from ..ops.core import (primitive, register_out_sharding, register_sharded_dispatch,
                        replace_tensors, tensor_leaves)
from ..tensor import Tensor
from .sharding import explicit as EX, specs as SH
from . import tree as tree_mod
from .sharding.collectives import current_mesh
from .core import jit
from .expr import EXPR

__all__ = ["device_put", "with_sharding_constraint", "reshard", "auto_axes", "explicit_axes",
           "with_out_sharding", "out_sharding_option"]

primitive("sharding", "sharding_constraint")


def _identity(x):
    return x


_NUMPY_TYPES = {t.dtype: t for t in T.ALL_TYPES}
_RESHARD: dict = {}  # (backend, sharding) -> jit of the identity


def _jit_on(fun, b, **kw):
    """``jit(fun)`` with the compiler that runs backend ``b``'s sharded tensors (the
    Evaluator on ``b`` itself)."""
    opts = {"backend": b} if b.compiler == "evaluator" else {}
    return jit(fun, compiler=b.compiler, **opts, **kw)


def _reshard(x, s, b):
    """``x`` (sharded, on backend ``b``) laid out as ``s`` over the same mesh: a compiled
    identity whose result has sharding ``s`` (the partitioner moves the data between the
    devices, as JAX's ``device_put`` does)."""
    key = (b, s)
    f = _RESHARD.get(key)
    if f is None:
        f = put_bounded(_RESHARD, key, _jit_on(_identity, b, out_shardings=s),
                        program_cache_size())
    return f(x)


def _put(x, s, backend, what):
    if is_device(s):  # a device (nx.pjrt.devices())
        s = pjrt.position_of(s)
    if isinstance(s, (int, np.integer)) and not isinstance(s, bool):  # one device
        t = to_tensor(x, what)
        b = get_backend(backend if backend is not None else "exla")
        return b.from_numpy(np.asarray(t.to_numpy()), t.type, t.names, device_id=int(s)) \
            if b.name == "exla" else b.from_tensor(t)
    if not isinstance(s, (NamedSharding, dict, tuple)) and as_partition_spec(s) is None:
        raise TypeError(f"device_put: expected the sharding of {what} to be an "
                        f"nx.NamedSharding(mesh, spec), a P over the context mesh, a device or "
                        f"a device position, got {s!r}")
    array = type(x) is np.ndarray and x.dtype in _NUMPY_TYPES  # placed with no copy first
    t = None if array else to_tensor(x, what)
    shape = x.shape if array else t.shape
    if not isinstance(s, NamedSharding):  # a P (or dict, or per-dim tuple): over the context mesh
        s = read_sharding(s, shape, mesh_for(s, f"device_put: the sharding of {what}"),
                          None if array else t.names, what=f"device_put: the sharding of {what}")
    s.axes(len(shape), f"device_put: the sharding of {what}")
    s.check_divisible(shape, what)
    if array:
        return get_backend(backend if backend is not None else "exla").place(
            x, _NUMPY_TYPES[x.dtype], None, s)
    if t.sharding is not None:
        b = get_backend(backend) if backend is not None else t.backend
        if t.sharding == s and b is t.backend:
            return t
        if t.sharding.mesh == s.mesh and b is t.backend:
            moved = b.reshard(t, s)
            return moved if moved is not None else _reshard(t, s, b)
    else:
        b = get_backend(backend if backend is not None else "exla")
    arr = np.asarray(t.to_numpy())  # to another mesh or backend, or from the host
    return b.place(arr, t.type, t.names, s)


def device_put(x, sharding, *, backend=None):
    """Places ``x`` (a tensor, array or number, or a container of them) on devices:
    ``sharding`` is an :class:`nx.NamedSharding`, a ``P`` laid over the context mesh
    (:func:`nx.set_mesh`), a device (``nx.pjrt.devices()[i]``) or a device position, or a
    container of them for a container ``x`` (a prefix, as in ``jax.device_put``). The
    result is one sharded tensor per leaf: its global ``shape``, its ``sharding``, its
    ``addressable_shards``, each on its device.

    A sharded tensor put to another layout over the same mesh is resharded **on the
    devices** (a compiled identity with the new result sharding: XLA moves the pieces,
    nothing goes through the host); to another mesh or backend it goes through the host.
    Other tensors (host tensors, a single device's) are sliced on the host and each slice
    copied to its device. With several processes each process places only its own shards
    (``x`` is the whole value, the same on every process).

    ``backend``: where the result lives: ``"exla"`` (XLA devices, the default for
    anything not sharded yet) or another backend (``"numpy"``: the Evaluator's
    simulation of the mesh, shard for shard the same); a sharded ``x`` keeps its own.

    Inside a traced function it is :func:`with_sharding_constraint`.
    """
    if _context.tracing():
        return with_sharding_constraint(x, sharding)
    leaves, tree = tree_mod.flatten(x)
    specs = SH.leaf_specs(sharding, tree, "x", "sharding")
    out = [_put(leaf, s, backend, label if tree != tree_mod.LEAF else "x")
           for leaf, (label, s) in zip(leaves, specs)]
    return tree_mod.unflatten(tree, out)


def with_sharding_constraint(x, sharding):
    """Pins the layout of ``x`` (a value inside a traced function, or a container of
    them) to ``sharding`` (an :class:`nx.NamedSharding`, or a ``P``/dict over the mesh of
    the program being traced, else over the context mesh: :func:`nx.set_mesh`), as
    ``jax.lax.with_sharding_constraint``: EXLA lowers it to
    ``sdy.sharding_constraint`` and the partitioner lays the value out so; nxpy's
    propagation starts again from it, so later values (and the results) follow, on every
    compiler. A program that uses one runs over that mesh. Outside a traced function it
    is :func:`device_put`.

    >>> import nxpy as nx
    >>> from nxpy.defn import jit, with_sharding_constraint
    >>> mesh = nx.Mesh("m", (2, 2), axis_names=("data", "model"))
    >>> by_model = nx.NamedSharding(mesh, nx.P(None, "model"))
    >>> f = jit(lambda x: with_sharding_constraint(x * 2, by_model), compiler="exla")
    >>> y = f(nx.iota((2, 4)))
    >>> y.sharding.spec, y.addressable_shards[1].data.tolist()
    (P(None, 'model'), [[4, 6], [12, 14]])
    """
    if not _context.tracing():
        return device_put(x, sharding)
    return _constrain_all(x, sharding, "with_sharding_constraint")


def _constrain_all(x, sharding, what):
    SH.check_spec_kinds(sharding, "sharding", what)
    leaves, tree = tree_mod.flatten(x)
    specs = SH.leaf_specs(sharding, tree, "x", "sharding")
    return tree_mod.unflatten(tree, [_constrain(leaf, s, what)
                                     for leaf, (_, s) in zip(leaves, specs)])


def _constrain(x, spec, what="with_sharding_constraint"):
    x = EXPR.lift(x, f"{what}: x")
    ctx = current_mesh()
    if ctx is not None and ctx.view == "local":
        raise ValueError(f"{what}: inside shard_map values are each device's own shard; "
                         f"{'constrain' if what != 'reshard' else 'reshard'} the global value "
                         f"outside the shard_map instead")
    if isinstance(spec, NamedSharding):
        mesh = spec.mesh
        if ctx is not None and ctx.mesh != mesh:
            raise ValueError(f"with_sharding_constraint: {spec!r} is over {mesh!r} but the "
                             f"program runs over {ctx.mesh!r}: one program runs over one "
                             f"mesh")
    elif ctx is not None:
        mesh = ctx.mesh
    else:
        mesh = mesh_for(spec, what)
    sh = read_sharding(spec, x.shape, mesh, x.names, what=what)
    sh.check_divisible(x.shape, f"{what}: x")
    if what == "with_sharding_constraint" and ctx is not None and ctx.propagator is not None \
            and x.data.scope.parent is None:
        explicit = EX.explicit_axes_of(mesh)
        if explicit and EX.explicit_part(ctx.propagator.of(x), explicit) != \
                EX.explicit_part(sh.axes(len(x.shape)), explicit):
            raise AssertionError(
                f"with_sharding_constraint acts as an assert over explicit mesh axes: the "
                f"value is laid out as {EX.typeof(x)} but the constraint says {sh.spec!r}; "
                f"use nx.reshard(x, {sh.spec!r}) to change its layout")
    return EXPR.node("sharding_constraint", Tensor(None, x.shape, x.type, x.names), x,
                     sharding=sh, mesh=mesh)


def reshard(x, sharding):
    """``x`` (a tensor, a traced value, or a container of them) laid out as ``sharding`` (a
    ``P`` over the context mesh or the program's, or an ``nx.NamedSharding``), as
    ``jax.sharding.reshard``: :func:`device_put` outside a traced function, a change of
    layout inside one (over explicit axes, of the value's type; the devices move the
    data).

    >>> import nxpy as nx
    >>> with nx.set_mesh(nx.make_mesh((2,), ("X",))):
    ...     print(nx.typeof(nx.reshard(nx.iota((4, 2)), nx.P(None, "X"))))
    int32[4,2@X]
    """
    if not _context.tracing():
        return device_put(x, sharding)
    return _constrain_all(x, sharding, "reshard")


def with_out_sharding(compute, out_sharding):
    """``compute()`` laid out as ``out_sharding`` (None: as its operands make it): the
    ``out_sharding=`` of an op, whose explicit-sharding checks it turns off (the result's
    layout is said)."""
    if out_sharding is None:
        return compute()
    with EX.no_checks():
        out = compute()
    return reshard(out, out_sharding)


def out_sharding_option(fn):
    """``fn`` with JAX's keyword ``out_sharding=`` (:func:`with_out_sharding`)."""
    @functools.wraps(fn)
    def run(*args, out_sharding=None, **kwargs):
        return with_out_sharding(lambda: fn(*args, **kwargs), out_sharding)
    return run


def _axes_of(axes, what):
    mesh = EX.get_abstract_mesh()
    if mesh is None:
        raise ValueError(f"{what}: no mesh: set a context mesh (nx.set_mesh(mesh)) or call "
                         f"it inside a program over one")
    names = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) \
        else tuple(axes)
    for n in names:
        mesh.axis_index(n)
    return names


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
    """``f`` run with mesh axes ``axes`` (all, by default) of type ``AxisType.Auto``, as
    ``jax.sharding.auto_axes``: inside, the layouts over them are the partitioner's (no
    explicit-mode errors); the result is laid out as ``out_sharding`` (given here or to
    the call: required). A decorator without ``f``.

    >>> import nxpy as nx
    >>> with nx.set_mesh(nx.make_mesh((2,), ("X",))):
    ...     a = nx.reshard(nx.iota((4, 4), type="f32"), nx.P("X"))
    ...     b = nx.reshard(nx.iota((4, 4), type="f32"), nx.P(None, "X"))
    ...     print(nx.typeof(auto_axes(lambda u, v: u + v)(a, b, out_sharding=nx.P("X"))))
    float32[4@X,4]
    """
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)

    def run(*args, out_sharding=out_sharding, **kwargs):
        if out_sharding is None:
            raise TypeError("auto_axes: out_sharding is missing (the layout of the result "
                            "over the explicit axes: give it to auto_axes or to the call)")
        names = _axes_of(axes, "auto_axes")
        with EX.axis_types_in(names, AxisType.Auto), EX.no_checks():
            out = f(*args, **kwargs)
        return reshard(out, out_sharding)
    return functools.wraps(f)(run)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
    """``f`` run with mesh axes ``axes`` (all, by default) of type ``AxisType.Explicit``,
    its arguments first laid out as ``in_sharding`` (given here or to the call), as
    ``jax.sharding.explicit_axes``: inside, layouts are part of the values' types and the
    explicit-mode errors apply. A decorator without ``f``."""
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)

    def run(*args, in_sharding=in_sharding, **kwargs):
        if in_sharding is None:
            raise TypeError("explicit_axes: in_sharding is missing (the layout of the "
                            "arguments over the explicit axes: give it to explicit_axes or "
                            "to the call)")
        names = _axes_of(axes, "explicit_axes")
        with EX.axis_types_in(names, AxisType.Explicit):
            placed = reshard(args if len(args) != 1 else args[0], in_sharding)
            return f(*(placed if len(args) != 1 else (placed,)), **kwargs)
    return functools.wraps(f)(run)


@SH.register_sharding_rule("sharding_constraint")
def _propagate(prop, e, args):
    return e.attrs["sharding"].axes(len(e.shape))


# ----------------------------------------------------------------------------------------
# Eager ops on sharded tensors: a one-op sharded program, compiled once per signature
# ----------------------------------------------------------------------------------------
_ONE_OP: dict = {}


def _key(a):
    if isinstance(a, Tensor):
        return None  # a parameter: its template is the program's key
    if isinstance(a, (list, tuple)):
        return (type(a), tuple(_key(x) for x in a))
    if isinstance(a, np.ndarray):
        return (np.ndarray, a.shape, a.dtype.str, a.tobytes())
    try:
        hash(a)
    except TypeError:
        return ("id", id(a))
    return (type(a), a)  # 1, 1.0 and True build different programs


def _run_sharded_op(name, out, args, attrs, multi):
    """Runs op ``name`` (``out``: its template, or its templates for a ``multi`` op) on
    arguments of which some are sharded tensors: a jitted one-op program over their mesh,
    with the compiler of their backend (EXLA's: one XLA program on the devices)."""
    params = tensor_leaves(args)
    sharded = [t for t in params if t.sharding is not None]
    b = max((t.backend for t in sharded), key=lambda x: x.priority)
    outs = tuple((tuple(s), t, n) for s, t, n in out) if multi else \
        (out.shape, out.type, out.names)
    key = (name, outs, multi, _key(list(args)), tuple(sorted((k, _key(v)) for k, v in
                                                               attrs.items())), b)
    f = _ONE_OP.get(key)
    if f is None:
        def one_op(*ps):
            a = replace_tensors(list(args), iter(ps))
            if multi:
                return list(EXPR.multi(name, list(outs), *a, **attrs))
            return EXPR.node(name, Tensor(None, out.shape, out.type, out.names), *a, **attrs)
        one_op.__name__ = name
        f = put_bounded(_ONE_OP, key, _jit_on(one_op, b), PROCESS_FACTOR * program_cache_size())
    return f(*params)


register_sharded_dispatch(_run_sharded_op)
register_out_sharding(with_out_sharding)
