"""JAX functions as StableHLO, for ``nxpy.interop.from_jax``: JAX's pytree registry
(flattening the arguments a JAX function takes and the results it returns) and lowering
the function for argument templates (``jax.jit(f).lower(...)``), 64-bit types under
``jax.enable_x64`` only when an argument has one, and its ``jax.vjp``/``jax.jvp`` as JAX
functions of flat arrays; for ``nxpy.interop.to_jax``, nxpy's StableHLO embedded in JAX
programs with JAX's transform rules (:func:`jax_function`)."""
from __future__ import annotations

import contextlib

import numpy as np

from . import lib
from .buffers import device_index_of
from .client import oracle

__all__ = ["tree_flatten", "tree_unflatten", "lower_function", "vjp_function", "jvp_function",
           "describe_array", "is_jax_array", "jax_function"]


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
        for k, leaf in enumerate(outs):  # JAX's own message names this wrapper, not fn
            if not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")
                    or isinstance(leaf, (bool, int, float, complex))):
                raise TypeError(
                    f"from_jax: the JAX function {getattr(fn, '__name__', fn)!r} returned "
                    f"{type(leaf).__name__} {leaf!r:.60} as its result leaf {k}; it must "
                    f"return arrays or Python numbers (in lists, tuples or dicts)")
        out_tree.append(tree)
        return outs
    wide = any(dt.itemsize >= 8 for _, dt in specs)
    structs = [jax.ShapeDtypeStruct(shape, dt) for shape, dt in specs]
    with jax.enable_x64(True) if wide else contextlib.nullcontext():
        # keep_unused: the program takes every argument it is given (jit drops unused
        # ones, as the vjp of a linear function drops its primal)
        text = jax.jit(flat, keep_unused=True).lower(*structs).as_text()
    return text, out_tree[0]



def _is_float(dt) -> bool:
    return dt.kind in "fc" or dt.name == "bfloat16"


def _on_floats(fn, treedef, leaves, dynamic, specs):
    """``g(primals, diff)``: ``fn``'s flat results for the flat traced arguments
    ``primals`` with the float ones replaced by ``diff``, and the float positions."""
    jax = oracle()
    float_ins = [i for i, (_, dt) in enumerate(specs) if _is_float(dt)]

    def g(primals, diff):
        full, vals = list(leaves), list(primals)
        for i, v in zip(float_ins, diff):
            vals[i] = v
        for i, v in zip(dynamic, vals):
            full[i] = v
        args, kwargs = jax.tree_util.tree_unflatten(treedef, full)
        return jax.tree_util.tree_flatten(fn(*args, **kwargs))[0]
    return g, float_ins


def vjp_function(fn, treedef, leaves, dynamic, specs, out_specs):
    """JAX's reverse-mode derivative of :func:`lower_function`'s function, as a JAX
    function of flat arrays: ``(*traced arguments, *cotangents of the float results) ->
    [cotangents of the float arguments]`` (``jax.vjp``; integer results take zero
    cotangents, integer arguments get none)."""
    jax = oracle()
    n = len(dynamic)
    g, float_ins = _on_floats(fn, treedef, leaves, dynamic, specs)
    float_outs = [i for i, (_, dt) in enumerate(out_specs) if _is_float(dt)]

    def vjp(*values):
        primals, cts = values[:n], values[n:]
        _, pullback = jax.vjp(lambda *d: g(primals, d), *[primals[i] for i in float_ins])
        all_cts = [cts[float_outs.index(i)] if i in float_outs
                   else np.zeros(shape, jax.dtypes.float0)
                   for i, (shape, _) in enumerate(out_specs)]
        return list(pullback(all_cts))
    return vjp


def jvp_function(fn, treedef, leaves, dynamic, specs, out_specs):
    """JAX's forward-mode derivative of :func:`lower_function`'s function, as a JAX
    function of flat arrays: ``(*traced arguments, *tangents of the float arguments) ->
    [tangents of the float results]`` (``jax.jvp``)."""
    jax = oracle()
    n = len(dynamic)
    g, float_ins = _on_floats(fn, treedef, leaves, dynamic, specs)
    float_outs = [i for i, (_, dt) in enumerate(out_specs) if _is_float(dt)]

    def jvp(*values):
        primals, tangents = values[:n], values[n:]
        _, t_out = jax.jvp(lambda *d: g(primals, d), tuple(primals[i] for i in float_ins),
                           tuple(tangents))
        return [t_out[i] for i in float_outs]
    return jvp


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
    """Whether ``x`` is a ``jax.Array`` (its class's module first: no import of jax for
    anything else)."""
    return type(x).__module__.startswith("jax") and isinstance(x, oracle().Array)


def is_jax_tracer(x) -> bool:
    """Whether ``x`` is a value inside a JAX transformation (``jax.jit``, ``jax.grad``):
    a ``jax.Array`` with no buffer behind it."""
    return isinstance(x, oracle().core.Tracer)


def _exported(text, in_specs, out_specs, name):
    """A ``jax.export.Exported`` whose module is ``text`` (nxpy's StableHLO of a function
    of ``in_specs`` returning ``out_specs``, flat ``(shape, dtype)`` lists): JAX embeds it
    in the programs that call it (``call_exported``), under ``jax.jit`` too."""
    import dataclasses

    jax = oracle()
    from jax import export
    from jax._src.export import _export
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    def structs(specs):
        return [jax.ShapeDtypeStruct(s, dt) for s, dt in specs]
    with mlir.make_ir_context():
        bytecode = _export._module_to_bytecode(ir.Module.parse(text))
    # a template with the right inputs; the results, module and name are replaced
    template = export.export(jax.jit(lambda *a: a))(*structs(in_specs))
    outs = structs(out_specs)
    extra = {}
    if "_out_named_shardings" in export.Exported.__dataclass_fields__:
        extra["_out_named_shardings"] = (None,) * len(outs)
    return dataclasses.replace(
        template, fun_name=name, mlir_module_serialized=bytecode,
        out_tree=jax.tree_util.tree_structure(tuple(range(len(outs)))),
        out_avals=tuple(jax.core.ShapedArray(o.shape, o.dtype) for o in outs),
        out_shardings_hlo=(None,) * len(outs),
        module_kept_var_idx=tuple(range(len(in_specs))), **extra)


class _Node:
    """A flat function of JAX arrays running the StableHLO of ``nxfn`` (see
    :func:`jax_function`): one embedded module per argument specs; ``jax.vmap`` runs the
    module of ``nxfn``'s batched function (a ``jax.custom_batching.custom_vmap``);
    ``jax.jvp`` runs its ``jvp``'s module, through a ``linear_call`` whose transpose runs
    its ``vjp``'s (so ``jax.grad``, which linearizes and transposes, gets nxpy's reverse
    mode). The derived functions are nodes too (a nested ``jax.vmap`` batches the batched
    function again); JAX's ``linear_call`` has no batching rule and no derivative in its
    residuals, so ``jax.vmap`` of a derivative and second orders stop there."""

    def __init__(self, nxfn, name):
        self.nxfn, self.name, self.entries, self.derived = nxfn, name, {}, {}

    def derive(self, kind, arg):
        key = (kind, arg)
        if key not in self.derived:
            self.derived[key] = _Node(self.nxfn.derive(kind, arg), f"{self.name}_{kind}")
        return self.derived[key]

    def entry(self, specs):
        if specs not in self.entries:
            text, out_specs, out_tree = self.nxfn.lower(list(specs))
            self.entries[specs] = (_exported(text, list(specs), out_specs, self.name),
                                   out_specs, out_tree)
        return self.entries[specs]

    def __call__(self, *xs):
        """``(flat results, results' treedef)`` of the arguments ``xs``."""
        jax = oracle()
        specs = tuple((tuple(x.shape), np.dtype(x.dtype)) for x in xs)
        exported, out_specs, out_tree = self.entry(specs)
        n = len(specs)
        float_ins = [i for i, (_, dt) in enumerate(specs) if _is_float(dt)]
        float_outs = [i for i, (_, dt) in enumerate(out_specs) if _is_float(dt)]
        symbolic_zero = jax.custom_derivatives.SymbolicZero

        @jax.custom_batching.custom_vmap
        def primal(*xs):
            return list(exported.call(*xs))

        @primal.def_vmap
        def batched(axis_size, in_batched, *xs):
            outs = self.derive("vmap", tuple(in_batched))(*xs)[0]
            return outs, [True] * len(outs)

        @jax.custom_jvp
        def f(*xs):
            return primal(*xs)

        def f_jvp(primals, tangents):
            out = f(*primals)
            zero = [np.zeros(s, jax.dtypes.float0) if i not in float_outs else
                    jax.numpy.zeros(s, dt) for i, (s, dt) in enumerate(out_specs)]
            # only the tangents that are not symbolic zeros are linear inputs: JAX
            # transposes a linear_call with respect to all of them
            live = [i for i in float_ins if not isinstance(tangents[i], symbolic_zero)]
            if not live or not float_outs:
                return out, zero

            def tangent(res, lin):
                full = [jax.numpy.zeros(*specs[i]) for i in float_ins]
                for i, t in zip(live, lin):
                    full[float_ins.index(i)] = t
                return self.derive("jvp", n)(*res, *full)[0]

            def transpose(res, cts):
                got = self.derive("vjp", n)(*res, *cts)[0]
                return [got[float_ins.index(i)] for i in live]
            tans = jax.custom_derivatives.linear_call(tangent, transpose, list(primals),
                                                      [tangents[i] for i in live])
            for i, t in zip(float_outs, tans):
                zero[i] = t
            return out, zero
        f.defjvp(f_jvp, symbolic_zeros=True)
        return f(*xs), out_tree


def jax_function(make, name):
    """A function of JAX arrays and pytrees that runs StableHLO that nxpy makes:
    ``make(treedef)`` gives, for the arguments' treedef, an object with
    ``lower(specs) -> (text, out_specs, out_treedef)`` (the module for the flat
    arguments' ``(shape, dtype)``) and ``derive(kind, arg)``, the same kind of object for
    a derived flat function: ``("vmap", batched)`` takes the arguments flagged in
    ``batched`` with a leading batch axis and returns every result batched;
    ``("jvp", n)``: ``(*n arguments, *tangents of the float ones) -> tangents of the float
    results``; ``("vjp", n)``: ``(*n arguments, *cotangents of the float results) ->
    cotangents of the float arguments``. The module is embedded in the caller's program
    (``jax.export``'s ``call``), under ``jax.jit`` too; ``jax.vmap``, ``jax.jvp`` and
    ``jax.grad`` run the derived modules (:class:`_Node`). One lowering per treedef and
    specs."""
    jax = oracle()
    nodes = {}

    def call(*args, **kwargs):
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        leaves = [jax.numpy.asarray(x) for x in leaves]
        if treedef not in nodes:
            nodes[treedef] = _Node(make(treedef), name)
        outs, out_tree = nodes[treedef](*leaves)
        return jax.tree_util.tree_unflatten(out_tree, list(outs))
    call.__name__ = name
    return call
