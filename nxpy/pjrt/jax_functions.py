"""JAX functions as StableHLO, for ``nxpy.interop.from_jax``: JAX's pytree registry
(flattening the arguments a JAX function takes and the results it returns) and lowering
the function for argument templates (``jax.jit(f).lower(...)``), 64-bit types under
``jax.enable_x64`` only when an argument has one."""
from __future__ import annotations

import contextlib

import numpy as np

from . import lib
from .buffers import device_index_of
from .client import oracle

__all__ = ["tree_flatten", "tree_unflatten", "lower_function", "lower_vjp", "describe_array",
           "is_jax_array"]


def tree_flatten(tree):
    """``(leaves, treedef)`` by JAX's registry: tuples, lists, dicts, namedtuples (optax's
    states), registered dataclasses (Flax's); ``None`` is an empty subtree, and anything
    JAX does not know (an nxpy tensor, a number) is a leaf."""
    return oracle().tree_util.tree_flatten(tree)


def tree_unflatten(treedef, leaves):
    return oracle().tree_util.tree_unflatten(treedef, leaves)


def lower_function(fn, treedef, leaves, dynamic, specs):
    """StableHLO text of ``fn`` lowered by ``jax.jit`` for arguments that unflatten
    (``treedef``) from ``leaves``, whose positions ``dynamic`` are the traced arguments
    with ``specs`` ``(shape, dtype)`` (the other leaves are baked in, as Python values),
    and the treedef of its results. ``fn(*args, **kwargs)`` for ``(args, kwargs)``."""
    jax = oracle()
    out_tree = []

    def flat(*values):
        full = list(leaves)
        for i, v in zip(dynamic, values):
            full[i] = v
        args, kwargs = jax.tree_util.tree_unflatten(treedef, full)
        outs, tree = jax.tree_util.tree_flatten(fn(*args, **kwargs))
        out_tree.append(tree)
        return outs
    wide = any(dt.itemsize >= 8 for _, dt in specs)
    structs = [jax.ShapeDtypeStruct(shape, dt) for shape, dt in specs]
    with jax.enable_x64(True) if wide else contextlib.nullcontext():
        text = jax.jit(flat).lower(*structs).as_text()
    return text, out_tree[0]



def _is_float(dt) -> bool:
    return dt.kind in "fc" or dt.name == "bfloat16"


def lower_vjp(fn, treedef, leaves, dynamic, specs, out_specs):
    """StableHLO text of JAX's own reverse-mode derivative of :func:`lower_function`'s
    function: ``(*traced arguments, *cotangents of the float results) -> cotangents of the
    float arguments`` (``jax.vjp``; integer results take zero cotangents, integer
    arguments get none)."""
    jax = oracle()
    n = len(dynamic)
    float_outs = [i for i, (_, dt) in enumerate(out_specs) if _is_float(dt)]
    float_ins = [i for i, (_, dt) in enumerate(specs) if _is_float(dt)]

    def flat(*values):
        primals, cts = values[:n], values[n:]

        def f(*diff):
            full = list(leaves)
            vals = list(primals)
            for i, v in zip(float_ins, diff):
                vals[i] = v
            for i, v in zip(dynamic, vals):
                full[i] = v
            args, kwargs = jax.tree_util.tree_unflatten(treedef, full)
            return jax.tree_util.tree_flatten(fn(*args, **kwargs))[0]
        _, pullback = jax.vjp(f, *[primals[i] for i in float_ins])
        all_cts = []
        for i, (shape, dt) in enumerate(out_specs):
            all_cts.append(cts[float_outs.index(i)] if i in float_outs
                           else np.zeros(shape, jax.dtypes.float0))
        return list(pullback(all_cts))
    wide = any(dt.itemsize >= 8 for _, dt in specs + out_specs)
    structs = [jax.ShapeDtypeStruct(s, dt) for s, dt in specs] + [
        jax.ShapeDtypeStruct(*out_specs[i]) for i in float_outs]
    with jax.enable_x64(True) if wide else contextlib.nullcontext():
        return jax.jit(flat).lower(*structs).as_text(), float_ins, float_outs


def describe_array(a):
    """A ``jax.Array``'s ``(shape, dtype, device, mesh, spec)``: ``device`` the position
    of its one device (None when sharded); ``mesh`` ``(device positions, shape, axis
    names)`` and ``spec`` its ``PartitionSpec`` as a tuple, for a ``NamedSharding`` over
    several devices (None otherwise). A TypeError for anything else."""
    jax = oracle()
    if not isinstance(a, jax.Array):
        raise TypeError(f"expected a jax.Array, got {type(a).__name__}")
    devices = a.sharding.device_set
    if len(devices) == 1:
        return a.shape, a.dtype, device_index_of(a), None, None
    sh = a.sharding
    if not isinstance(sh, jax.sharding.NamedSharding):
        raise TypeError(f"expected a jax.Array on one device or with a NamedSharding, got "
                        f"one with {type(sh).__name__}: reshard it with jax.device_put(a, "
                        f"NamedSharding(mesh, spec)) first")
    positions = [lib._state["devices"].index(d) for d in sh.mesh.devices.flat]
    return (a.shape, a.dtype, None, (positions, sh.mesh.devices.shape, sh.mesh.axis_names),
            tuple(sh.spec))


def is_jax_array(x) -> bool:
    return isinstance(x, oracle().Array)
