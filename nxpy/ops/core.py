"""The op layer's core: dispatch to a backend, and the conversion boundary.

Every front-end op validates its arguments, infers the output template ``out`` (shape,
type, names) once, and calls :func:`dispatch`, which picks the backend of the operands
(the highest priority wins; creation ops use the default backend, or the tracer's inside
a defn) and calls its kernel ``kernel(out, *args, **options)``. :func:`op_method` finds
that kernel: the backend's own method, else the portable implementation of an op added
with :func:`nxpy.extend.register_op` (:data:`OPS`).

Converting values into tensors lives here too (:func:`tensor`, :func:`from_numpy`,
:func:`to_tensor`, :func:`as_type`), as every op family needs it.

>>> import nxpy as nx
>>> nx.to_tensor([1, 2]).tolist(), str(nx.as_type(nx.tensor([1.7]), "s8").type)
([1, 2], 's8')
"""
from __future__ import annotations

import builtins
import numbers
from dataclasses import dataclass

import numpy as np

from .. import _context, pjrt, shape as S, types as T
from ..backend import Backend, default_backend, get_backend, pick
from ..layout import NamedSharding, P
from ..mesh import Mesh
from ..registry import rule_registrar
from ..tensor import Tensor

__all__ = ["template", "kind_ok", "dispatch", "dispatch_multi", "register_sharded_dispatch",
           "register_out_sharding", "out_sharded",
           "tensor_leaves", "replace_tensors", "to_tensor", "tensor", "from_numpy", "as_type",
           "renamed", "op_method", "OpSpec", "OPS", "fallback", "RESERVED", "PRIMITIVES",
           "primitive", "PROPERTIES", "OP_PROPERTIES", "ops_with", "derive_rule",
           "PORTABLE", "register_portable", "portable",
           "GRAD_RULES", "NON_DIFFERENTIABLE", "register_grad_rule", "non_differentiable",
           "BATCH_RULES", "register_batch_rule"]

_Number = (numbers.Number, np.generic)


def kind_ok(t: T.Type, kinds: str) -> bool:
    """Whether type ``t`` is of ``kinds``, the accepted-kinds column of the op tables
    (``any``, ``num``, ``real``, ``int``, ``intonly``)."""
    return {"any": True, "num": not t.is_pred, "real": not t.is_complex,
            "int": t.is_int or t.is_pred, "intonly": t.is_int}[kinds]


_KIND_TEXT = {"num": "a numeric (non-pred) type", "real": "a real (non-complex) type",
              "int": "an integer or pred type", "intonly": "an integer type"}


def _axes_of(op, f, *args, **kw):
    """``S.normalize_axis``/``normalize_axes`` with the op named in their errors."""
    try:
        return f(*args, **kw)
    except (ValueError, TypeError) as e:
        raise type(e)(f"{op}: {e}") from None


def check_kind(op, arg, t: T.Type, kinds: str):
    if not kind_ok(t, kinds):
        raise TypeError(f"{op}: expected {arg} to have {_KIND_TEXT[kinds]}, got {t}")


# ----------------------------------------------------------------------------------------
# Dispatch
# ----------------------------------------------------------------------------------------
def template(shape, type, names=None) -> Tensor:
    """A tensor with a shape, type and names but no data (for ``defn.compile``)."""
    shape = S.dims(shape, "template: shape")
    return Tensor(None, shape, T.parse(type),
                  _check_names(names, shape, "template") if names else None)


def _out(shape, type, names=None) -> Tensor:
    return Tensor(None, tuple(shape), type, tuple(names) if names is not None else None)


def _flat(args):
    for a in args:
        if isinstance(a, Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _flat(a)


def tensor_leaves(a, out=None) -> list:
    """The tensors in ``a`` (an op's argument: a tensor, or lists/tuples nesting them),
    in order."""
    out = [] if out is None else out
    if isinstance(a, Tensor):
        out.append(a)
    elif isinstance(a, (list, tuple)):
        for x in a:
            tensor_leaves(x, out)
    return out


def replace_tensors(a, it):
    """``a`` with each tensor replaced by the next item of iterator ``it`` (the inverse of
    :func:`tensor_leaves`)."""
    if isinstance(a, Tensor):
        return next(it)
    if isinstance(a, list):
        return [replace_tensors(x, it) for x in a]
    if isinstance(a, tuple):
        return tuple(replace_tensors(x, it) for x in a)
    return a


def _to_backend(a, backend):
    if isinstance(a, Tensor):
        return a if a.backend is backend else backend.from_tensor(a)
    if isinstance(a, list):
        return [_to_backend(x, backend) for x in a]
    if isinstance(a, tuple):
        return tuple(_to_backend(x, backend) for x in a)
    return a


def _creation_backend(backend):
    if backend is not None:
        return get_backend(backend)
    ctx = _context.current()
    return ctx.backend if ctx is not None else default_backend()


#: ``[run]``: how an op on sharded tensors runs, ``run(name, out_or_templates, args, attrs,
#: multi)`` (registered by :mod:`nxpy.defn`, which compiles it as a sharded program)
_SHARDED: list = []


def register_sharded_dispatch(run) -> None:
    """Sets how ops with a sharded operand run (the defn layer registers itself here)."""
    _SHARDED[:] = [run]


_OUT_SHARDING: list = []


def register_out_sharding(lay_out) -> None:
    """Sets how an op given ``out_sharding=`` lays its result out: ``lay_out(compute,
    out_sharding)`` (the defn layer registers ``with_out_sharding`` here)."""
    _OUT_SHARDING[:] = [lay_out]


def out_sharded(compute, out_sharding):
    """``compute()`` laid out as ``out_sharding`` (None: as it is), for the ops of this
    layer that take JAX's ``out_sharding=`` (the defn layer's ``with_out_sharding``)."""
    if out_sharding is None:
        return compute()
    return _OUT_SHARDING[0](compute, out_sharding)


def _sharded(tensors) -> bool:
    for t in tensors:
        if t.sharding is not None:
            return True
    return False


def dispatch(name: str, out: Tensor, *args, backend=None, **attrs) -> Tensor:
    """Runs op ``name`` on the backend of its operands (or ``backend`` for creation ops).
    An op with a sharded operand runs as a sharded program over its mesh."""
    tensors = list(_flat(args))
    if tensors and _sharded(tensors):
        return _SHARDED[0](name, out, args, attrs, False)
    b = pick(tensors) if tensors else _creation_backend(backend)
    if tensors and builtins.any(t.backend is not b for t in tensors):
        args = _to_backend(args, b)
    fn = getattr(b, name, None) or op_method(b, name)
    return fn(out, *args, **attrs)


def dispatch_multi(name: str, templates, *args, **attrs) -> list:
    """Runs op ``name`` with several results (``templates``: one ``(shape, type, names)``
    per result) on the backend of its operands: a tracing backend records one node with
    several results (its ``multi``), an eager one's kernel ``kernel(templates, *args,
    **attrs)`` returns one tensor per result."""
    tensors = list(_flat(args))
    if _sharded(tensors):
        return _SHARDED[0](name, templates, args, attrs, True)
    b = pick(tensors)
    if builtins.any(t.backend is not b for t in tensors):
        args = _to_backend(args, b)
    multi = getattr(b, "multi", None)
    if multi is not None:
        return multi(name, templates, *args, **attrs)
    fn = getattr(b, name, None) or op_method(b, name)
    return list(fn([_out(*t) for t in templates], *args, **attrs))


@dataclass
class OpSpec:
    """An op added with :func:`nxpy.extend.register_op`: its ``infer`` rule and, optionally,
    ``evaluate``, a portable implementation any backend without a kernel of its own uses."""
    name: str
    infer: object
    evaluate: object = None
    doc: str = ""


#: ops added with nxpy.extend.register_op, by name
OPS: dict[str, OpSpec] = {}

#: every built-in op an Expr node can hold (the names ``dispatch`` is called with, and the
#: defn layer's own: control flow, collectives, parameters), mapped to its family. Each
#: consumer of ops (backend kernels, lowerings, gradient rules, the importer) is checked
#: against this table by the tests, so a new op cannot be half added.
PRIMITIVES: dict[str, str] = {}


#: the properties an op is declared with (``primitive(..., props=...)``): what each
#: promises. The defn layer and the compilers derive rules from them (:func:`derive_rule`)
#: instead of keeping lists of their own, so an op declared ``elementwise`` is batched,
#: sharded and evaluated as one with nothing else to add.
PROPERTIES = {
    "elementwise": "each result element is computed from the operands' elements at its "
                   "index (operands broadcast right-aligned)",
    "reduction": "reduces its operand over the attribute ``axes`` (``keep_axes``)",
    "arg_reduction": "reduces its operand over the attribute ``axis`` (``keep_axis``) to an index",
    "along_axes": "transforms its operand along the attribute ``axis`` (or ``axes``); "
                  "the other dims are independent",
    "windowed": "slides a window (``window_dimensions``, ``strides``, ...) over every dim of "
                "its operand; result dim d comes from operand dim d",
    "batched_matrix": "acts on the trailing dims of its operands; any leading dims are a "
                      "batch",
}
#: op -> the properties it was declared with
OP_PROPERTIES: dict[str, frozenset] = {}
#: ``(table, property, rule)``: rules consumers derive from a property
_DERIVED: list = []


def primitive(family: str, *names: str, props=()) -> None:
    """Declares ``names`` as built-in ops of ``family``, with properties ``props`` (names
    from :data:`PROPERTIES`)."""
    unknown = sorted(set(props) - set(PROPERTIES))
    if unknown:
        raise ValueError(f"primitive: unknown properties {unknown}; known: {sorted(PROPERTIES)}")
    for n in names:
        PRIMITIVES[n] = family
        if props:
            OP_PROPERTIES[n] = OP_PROPERTIES.get(n, frozenset()) | frozenset(props)
            for table, prop, rule in _DERIVED:
                if prop in props:
                    table.setdefault(n, rule)


def ops_with(prop: str) -> tuple:
    """The ops declared with property ``prop``, sorted.

    >>> from nxpy.ops.core import ops_with
    >>> {"add", "sin", "select"} <= set(ops_with("elementwise")), "sum" in ops_with("reduction")
    (True, True)
    """
    if prop not in PROPERTIES:
        raise ValueError(f"ops_with: unknown property {prop!r}; known: {sorted(PROPERTIES)}")
    return tuple(sorted(op for op, ps in OP_PROPERTIES.items() if prop in ps))


def derive_rule(table: dict, prop: str):
    """Decorator: the rule becomes ``table``'s rule for every op declared with ``prop``,
    now or later, except ops the table already has a rule for (a rule registered for the
    op itself, before or after, wins)."""
    if prop not in PROPERTIES:
        raise ValueError(f"derive_rule: unknown property {prop!r}; known: {sorted(PROPERTIES)}")

    def deco(rule):
        _DERIVED.append((table, prop, rule))
        for op in ops_with(prop):
            table.setdefault(op, rule)
        return rule
    return deco


#: each op's gradient rule (``nxpy.defn.grad`` runs them; the rule protocol is described in
#: :mod:`nxpy.defn.transforms.grad_rules`). The table lives with the ops so that an op family can
#: register its rules next to its definition.
GRAD_RULES: dict = {}
#: ops without a gradient (their inputs get no cotangent)
NON_DIFFERENTIABLE: set = set()

register_grad_rule = rule_registrar(
    GRAD_RULES, "register_grad_rule", "a gradient rule",
    """Decorator: ``rule(ctx, e, xs, out, g) -> [cotangent or None per tensor argument]``
    for the ops named (see :mod:`nxpy.defn.transforms.grad_rules`).""")


def non_differentiable(*ops: str) -> None:
    """Declares ``ops`` as having no gradient: their inputs get no cotangent (zero)."""
    NON_DIFFERENTIABLE.update(ops)


#: each op's batching rule (``nxpy.defn.vmap`` runs them; the protocol is described in
#: :mod:`nxpy.defn.transforms.batch_rules`); an op without one is batched by a loop over the batch
BATCH_RULES: dict = {}

register_batch_rule = rule_registrar(
    BATCH_RULES, "register_batch_rule", "a batching rule",
    """Decorator: ``rule(ctx, e, xs, dims) -> (result, dim)`` (a list of pairs for an op
    with several results, or NotImplemented to use the loop) for the ops named (see
    :mod:`nxpy.defn.transforms.batch_rules`).""")

#: names of the built-in ops (filled in by nxpy.ops and the defn layer): a registered op
#: cannot take one of them
RESERVED: set[str] = set()


primitive("conversion", "as_type", props=("elementwise",))
primitive("conversion", "constant", "tensor")


def fallback(name):
    """The portable implementation of a registered op, bound as a backend method
    ``(backend, out, *args, **options) -> Tensor``, or None."""
    spec = OPS.get(name)
    if spec is None or spec.evaluate is None:
        return None

    def run(backend, out, *args, **options):
        r = spec.evaluate(out, *args, **options)
        if isinstance(r, Tensor):
            return r if r.backend is backend else backend.from_tensor(r)
        arr = np.asarray(r)
        if arr.shape != out.shape:
            raise ValueError(f"op {name!r}: evaluate returned shape {arr.shape}, its infer "
                             f"rule said {out.shape}")
        return backend.from_numpy(T.convert(arr, out.type), out.type, out.names)
    return run


#: portable implementations of built-in primitives, by op name: ``impl(out, *args,
#: **options)`` computes the op as a composition of other ops (``out`` is the output
#: template, or the list of templates of an op with several results), so it runs on any
#: backend and traces into any compiler. :func:`op_method` uses it when a backend has no
#: kernel of its own; a compiler that does not ``supports(op)`` gets the composition
#: traced in place of the op (``nxpy.defn.core.expansions``). Filled by
#: :func:`register_portable` (the linear-algebra primitives register theirs from
#: ``nxpy.defn.portable``, as they need ``while_loop``; ``solve``'s from ``nxpy.ops.linalg``).
PORTABLE: dict = {}

register_portable = rule_registrar(
    PORTABLE, "register_portable", "a portable implementation",
    """Decorator: ``impl(out, *args, **options) -> Tensor or list of Tensors`` for the
    built-in ops named: how to compute them with other ops when a backend or a compiler
    has no kernel of its own.""")


def portable(op: str):
    """The portable implementation of built-in op ``op`` (see :data:`PORTABLE`), or None."""
    return PORTABLE.get(op)


def op_method(backend: Backend, op: str, needed_by: str = ""):
    """``backend``'s kernel for ``op`` (a callable ``(out, *args, **options)``): its own
    method, else the portable implementation of a built-in primitive (:data:`PORTABLE`,
    a composition of other ops, which runs on this backend), else the portable
    implementation of a registered op (``nxpy.extend.register_op(..., evaluate=...)``);
    a NotImplementedError naming both when there is none."""
    fn = getattr(backend, op, None)
    if fn is not None:
        return fn
    impl = PORTABLE.get(op)
    if impl is not None:
        return impl
    fb = fallback(op)
    if fb is None:
        raise NotImplementedError(f"backend {backend.name!r} does not implement the op {op!r}"
                                  f"{needed_by}")
    return lambda out, *args, **options: fb(backend, out, *args, **options)


# ----------------------------------------------------------------------------------------
# Conversion: values into tensors
# ----------------------------------------------------------------------------------------
def to_tensor(x, arg="tensor") -> Tensor:
    """Tensors pass through; NumPy arrays, numbers and nested lists become tensors; a
    ``jax.Array`` becomes an EXLA tensor holding its buffer (:func:`from_jax_array`)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (np.ndarray, np.generic)):
        return from_numpy(np.asarray(x))
    if isinstance(x, (_Number, list, tuple)):
        return tensor(x)
    if pjrt.is_jax_array(x):
        return from_jax_array(x, arg)
    raise TypeError(f"expected {arg} to be a tensor, a number, a NumPy array or a jax.Array, "
                    f"got {type(x).__name__}")


def from_jax_array(a, arg="array") -> Tensor:
    """A ``jax.Array`` as a tensor of the EXLA backend holding the same device buffer(s),
    no copy: on its one device, or sharded over an ``nx.Mesh`` of its ``NamedSharding``'s
    devices, axes and spec (another sharding is a TypeError that says to reshard). What
    ops and ``jit`` do with a ``jax.Array`` argument (:func:`to_tensor`), and
    :func:`nxpy.interop.from_jax_array` of one leaf.

    >>> import jax.numpy as jnp
    >>> t = from_jax_array(jnp.arange(3.0))
    >>> t.backend.name, t.tolist()
    ('exla', [0.0, 1.0, 2.0])
    """
    if pjrt.is_jax_tracer(a):
        raise TypeError(f"expected {arg} to be a jax.Array with values, got a JAX tracer (a "
                        f"value inside a JAX transformation such as jax.jit or jax.grad): "
                        f"call nxpy functions from JAX programs through nxpy.interop.to_jax")
    shape, dtype, device, mesh, spec = pjrt.describe_array(a)
    t, exla = T.parse(dtype), get_backend("exla")
    if mesh is None:
        return Tensor(a, tuple(shape), t, None, exla, device)
    positions, mesh_shape, axis_names = mesh
    m = Mesh("jax", mesh_shape, axis_names=axis_names, devices=positions)
    return Tensor(a, tuple(shape), t, None, exla, None, sharding=NamedSharding(m, P(*spec)))


def _no_strings(arr, data, what):
    """Strings are not numbers, even where NumPy parses them (``np.asarray("1", float)``)."""
    if arr.dtype.kind in "US":
        raise TypeError(f"{what}: cannot build a tensor from {data!r}: expected numbers, "
                        f"not strings or bytes (NumPy would parse them; nxpy, as JAX, does not)")


def _scalar_like(value, type, backend, what="value") -> Tensor:
    if isinstance(value, (str, bytes)):
        _no_strings(np.asarray(value), value, what)
    T.check_representable(value, type, what)
    return backend.constant(_out((), type), value)


def _infer_list_type(data) -> T.Type:
    arr = np.asarray(data)
    if arr.dtype == np.bool_:
        return T.PRED
    if np.issubdtype(arr.dtype, np.integer):
        return T.S32
    if np.issubdtype(arr.dtype, np.floating):
        return T.F32
    if np.issubdtype(arr.dtype, np.complexfloating):
        return T.C64
    raise TypeError(f"cannot build a tensor from {data!r}: expected numbers or nested "
                    f"lists of numbers of equal lengths")


def _big_ints(arr, data):
    """``data`` as an object array of Python ints when it holds integers NumPy could not
    represent as int64 (2**63 and up), else None."""
    if arr.dtype.kind not in "fO" or not arr.size:
        return None
    obj = np.array(data, dtype=object)
    if obj.shape != arr.shape or not builtins.all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            for v in obj.flat):
        return None
    try:
        return np.array(data, dtype=np.uint64)
    except OverflowError:
        return obj


def tensor(data, type=None, names=None, backend=None) -> Tensor:
    """A tensor from a number, nested lists, a NumPy array or another tensor.

    Lists infer s32 for integers, f32 for floats, c64 for complex and pred for bools.

    >>> import nxpy as nx
    >>> str(nx.tensor([1.5, 2]).type), nx.tensor(3, type="f64").tolist()
    ('f32', 3.0)
    """
    if isinstance(data, Tensor):
        # as Nx: the tensor's names are replaced by ``names`` (none given: all None), and
        # must not conflict with them
        if names is not None:
            names = _check_names(names, data.shape, "tensor")
            S.merge_names(data.names, names, op="tensor")
        t = data if type is None else as_type(data, type)
        return renamed(t, names)
    if isinstance(data, (np.ndarray, np.generic)):
        arr = np.array(data)  # a copy: tensors are values, later writes to `data` must not show
        t = T.parse(type) if type is not None else _numpy_type(arr, "tensor")
        if arr.dtype == object:
            raise TypeError("tensor: cannot build a tensor from a NumPy array of dtype object "
                            "(Python objects): convert it to a numeric dtype first")
    else:
        try:
            arr = np.array(data)
        except ValueError as e:
            raise ValueError(f"cannot build a tensor from {data!r}: nested lists must have "
                             f"equal lengths") from e
        big = _big_ints(arr, data)
        if big is not None:  # ints beyond int64: NumPy made floats or objects of them
            if type is None:
                raise OverflowError(f"tensor: integer {builtins.max(int(v) for v in big.flat)} "
                                    f"does not fit in s32: pass a wider type, such as type='u64'")
            T.check_representable(big, T.parse(type), "tensor")
            arr = big.astype(T.parse(type).dtype if T.parse(type).is_int else np.float64)
        if arr.dtype == object:
            raise TypeError(f"cannot build a tensor from {data!r}: expected numbers or "
                            f"nested lists of numbers of equal lengths")
        t = T.parse(type) if type is not None else _infer_list_type(arr)
        if (t == T.S32 and type is None and arr.size
                and (arr.max() > 2**31 - 1 or arr.min() < -2**31)):
            bad = arr.max() if arr.max() > 2**31 - 1 else arr.min()
            raise OverflowError(f"tensor: integer {bad} "
                                f"does not fit in s32: pass a wider type, such as type='s64'")
    _no_strings(arr, data, "tensor")
    if type is not None:
        T.check_representable(arr, t, "tensor")
    if arr.dtype != t.dtype:
        arr = T.convert(arr, t)
    if names is not None:
        names = _check_names(names, arr.shape, "tensor")
    b = get_backend(backend) if backend is not None else default_backend()
    return b.from_numpy(arr, t, tuple(names) if names is not None else None)


def _check_names(names, shape, op):
    return S.check_names(names, shape, f"{op}: names")


def renamed(t: Tensor, names) -> Tensor:
    """``t`` with other names (None: no names); the data is shared (names are metadata)."""
    names = tuple(names) if names is not None else (None,) * t.rank
    if names == tuple(t.names):
        return t
    return Tensor(t.raw_data, t.shape, t.type, names, t.backend, t.device_id,
                  sharding=t.sharding)


def from_numpy(array, names=None, backend=None) -> Tensor:
    """A tensor holding ``array`` (its dtype decides the type)."""
    array = np.asarray(array)
    return tensor(array, _numpy_type(array, "from_numpy"), names, backend)


def _numpy_type(array, op) -> T.Type:
    try:
        return T.from_dtype(array.dtype)
    except KeyError:
        raise TypeError(f"{op}: unsupported NumPy dtype {array.dtype}"
                        f"{' (Python objects)' if array.dtype == object else ''}: expected one of "
                        f"{', '.join(t.dtype.name for t in T.ALL_TYPES)}") from None


def _shape_arg(shape, op):
    if isinstance(shape, Tensor):
        return shape.shape
    return S.dims(shape, f"{op}: shape")


def as_type(x, type) -> Tensor:
    """Converts elementwise to ``type`` (floats to ints truncate; to pred tests non-zero)."""
    if isinstance(x, _Number) and not isinstance(x, np.generic):
        return tensor(x, type)  # as Nx: a number is built in the type directly
    x = to_tensor(x, "x")
    t = T.parse(type)
    if t == x.type:
        return x
    return dispatch("as_type", _out(x.shape, t, x.names), x)


def _binary_operands(a, b, op="op", args=("left operand", "right operand")):
    """Tensors for a binary op; Python scalars take the other side's type, weakly (a
    number no type of the promotion can hold is an OverflowError naming ``op`` and the
    argument)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a, b
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        _no_tensor_containers(a, b, op, args)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        if isinstance(a, _Number) and not isinstance(a, np.generic):
            a = tensor(a)
        else:
            a = to_tensor(a, args[0])
    if isinstance(a, Tensor) and isinstance(b, _Number) and not isinstance(b, np.generic):
        return a, _scalar_like(b, T.merge_scalar(a.type, b), pick([a]), f"{op}: {args[1]}")
    if isinstance(b, Tensor) and isinstance(a, _Number) and not isinstance(a, np.generic):
        return _scalar_like(a, T.merge_scalar(b.type, a), pick([b]), f"{op}: {args[0]}"), b
    return to_tensor(a, args[0]), to_tensor(b, args[1])


def _no_tensor_containers(a, b, op, args):
    """Lists of numbers are operands (as in NumPy); a list or tuple holding tensors is
    not (it is most likely an Nx-style ``(values, next_key)`` pair)."""
    for x, arg in ((a, args[0]), (b, args[1])):
        if isinstance(x, (list, tuple)) and _holds_tensor(x):
            raise TypeError(
                f"{op}: expected the {arg} to be a tensor, a number, a NumPy array or a "
                f"jax.Array, got a {type(x).__name__} holding tensors; take the tensor out "
                f"of it (Nx-style functions such as nx.random.normal return (values, "
                f"next_key)) or stack them with nx.stack")


def _holds_tensor(x) -> bool:
    return builtins.any(isinstance(v, Tensor)
                        or (isinstance(v, (list, tuple)) and _holds_tensor(v)) for v in x)
