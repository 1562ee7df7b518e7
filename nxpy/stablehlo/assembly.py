"""Custom (pretty) forms: from the grammar's generic entries to canonical ops and attributes.

The grammar reads the body of a custom op or dialect attribute as *entries* (the
comma-separated parts) of *atoms*. This module holds, per op and per dialect attribute,
how those decode into the canonical form — operands, attributes named as in the generic
form, regions, operand and result types — in two tables, :data:`CUSTOM_OPS` and
:data:`DIALECT_ATTRS`. An op without a table entry is decoded by :func:`default_form`
(single values are operands, ``key = value`` parts are attributes).

>>> from nxpy.stablehlo import parse
>>> op = parse('''func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
...   %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
...   return %0 : tensor<3x2xf32>
... }''').find("stablehlo.transpose")[0]
>>> op.attrs, op.form
({'permutation': [1, 0]}, 'custom')
"""
from __future__ import annotations

import numpy as np

from .syntax import (UNIT, AxisRef, Block, BlockArg, DenseArray, DenseElements, DialectAttr,
                     DimSharding, EnumAttr, Float, Integer, Mesh, Op, Region,
                     ReplicaGroupMeshAxes, ScalarType, Sharding, SymbolRef, TensorType, Type,
                     Use, Word, nx_type)

__all__ = ["EQ", "COLON", "Entry", "Group", "Brace", "DenseLiteral", "Form", "FormError",
           "CUSTOM_OPS", "DIALECT_ATTRS", "custom_form", "default_form", "decode_dialect",
           "dense_elements", "attr_of", "register_form"]


class FormError(ValueError):
    """A custom form that does not read as its op expects (the parser adds the position)."""


# ----------------------------------------------------------------------------------------
# The raw parts the grammar produces for custom forms
# ----------------------------------------------------------------------------------------
class _Sep:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text

    __str__ = __repr__


EQ, COLON = _Sep("="), _Sep(":")


class Entry(list):
    """One comma-separated part of a custom form: atoms, with ``EQ`` / ``COLON`` markers
    where ``=`` / ``:`` separate them."""

    def segments(self, sep=None) -> list:
        """The atoms split at separators (``sep``: only at that one)."""
        out, cur = [], []
        for a in self:
            if isinstance(a, _Sep) and (sep is None or a is sep):
                out.append(cur)
                cur = []
            elif not isinstance(a, _Sep) or sep is not None:
                cur.append(a)
        out.append(cur)
        return out


def render(atoms) -> str:
    """Atoms back as (approximately) the text they were read from, for messages."""
    if not isinstance(atoms, (list, tuple)):
        atoms = [atoms]
    out = []
    for a in atoms:
        if isinstance(a, str) and not isinstance(a, (Word, SymbolRef)):
            out.append(f'"{a}"')
        elif isinstance(a, (Use, Word, _Sep, Integer, Float, Type)):
            out.append(str(a))
        else:
            out.append(repr(a))
    return " ".join(out)


class Group:
    """A bracketed group of entries: ``kind`` is ``(``, ``[`` or ``<``."""

    def __init__(self, kind, entries):
        self.kind = kind
        self.entries = entries

    def __repr__(self):
        close = {"(": ")", "[": "]", "<": ">"}[self.kind]
        return self.kind + ", ".join(render(e) for e in self.entries) + close


class Brace:
    """``{a, "b", c = 1}`` in a custom form: ``items`` are ``(key, value atoms or None)``."""

    def __init__(self, items):
        self.items = items

    def __repr__(self):
        return "{" + ", ".join(k if v is None else f"{k} = {v}" for k, v in self.items) + "}"


class DenseLiteral:
    """The body of ``dense<...>`` before its tensor type is known."""

    def __init__(self, body):
        self.body = body

    def __repr__(self):
        return f"dense<{self.body!r}>"


class Hex(int):
    """A ``0x...`` literal (a bit pattern when the element type is a float)."""


# ----------------------------------------------------------------------------------------
# Dense elements
# ----------------------------------------------------------------------------------------
def _bits_to(value: int, dtype: np.dtype):
    """The element of ``dtype`` whose bits are ``value``."""
    width = dtype.itemsize * 8
    return np.array(value & ((1 << width) - 1), dtype=f"u{dtype.itemsize}").view(dtype)[()]


def _element(v, dtype: np.dtype):
    """One element of a ``dense<...>`` literal as a value of ``dtype``."""
    if dtype.kind == "c":
        half = np.dtype(f"f{dtype.itemsize // 2}")
        if isinstance(v, tuple):
            return complex(_element(v[0], half), _element(v[1], half))
        if isinstance(v, Hex):  # the raw bits: real part in the low half
            bits = dtype.itemsize * 4
            return complex(_bits_to(int(v) & ((1 << bits) - 1), half),
                           _bits_to(int(v) >> bits, half))
        return v
    if isinstance(v, Hex) and dtype.kind in "fV":
        return _bits_to(int(v), dtype)
    if dtype.kind in "iu" and isinstance(v, int) and not isinstance(v, bool):
        info = np.iinfo(dtype)
        return (int(v) - int(info.min)) % (int(info.max) - int(info.min) + 1) + int(info.min)
    return v


def dense_elements(lit: DenseLiteral, ty) -> DenseElements:
    """Decodes ``dense<...>`` for tensor type ``ty``: hex blobs (little-endian raw data,
    one element for a splat), unquoted hex bit patterns, numbers, booleans, complex
    ``(re, im)`` pairs, nested lists.

    >>> from nxpy.stablehlo.syntax import TensorType, ScalarType
    >>> dense_elements(DenseLiteral("0x0000803F"), TensorType((2,), ScalarType("f32"))).tolist()
    [1.0, 1.0]
    >>> dense_elements(DenseLiteral([[0, 1], [2, 3]]),
    ...                TensorType((2, 2), ScalarType("i64"))).tolist()
    [[0, 1], [2, 3]]
    """
    if not isinstance(ty, TensorType):
        ty = TensorType((), ty)
    dtype = nx_type(ty.element).dtype
    shape = tuple(ty.shape)
    size = int(np.prod(shape)) if shape else 1
    body = lit.body
    if body is None:
        arr = np.zeros(shape, dtype)
        if size:
            raise FormError(f"dense<> is empty but {ty} has {size} elements")
        return DenseElements(arr, ty)
    if isinstance(body, str) and not isinstance(body, Word):
        if not body.startswith("0x"):
            raise FormError(f"expected a hex string \"0x...\" in dense<...>, got {body!r}")
        raw = bytes.fromhex(body[2:])
        if dtype == np.bool_ and len(raw) not in (1, size):
            bits = np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")[:size]
            arr = bits.astype(np.bool_)
        else:
            arr = np.frombuffer(raw, dtype=dtype)
        if arr.size == 1 and size != 1:
            arr = np.full(shape, arr[0], dtype)
        elif arr.size != size:
            raise FormError(f"dense hex data holds {arr.size} elements of {ty.element}, "
                            f"expected {size} for {ty}")
        return DenseElements(arr.reshape(shape).copy(), ty)
    if isinstance(body, list):
        flat = []

        def rec(v):
            if isinstance(v, list):
                for x in v:
                    rec(x)
            else:
                flat.append(_element(v, dtype))
        rec(body)
        if len(flat) != size:
            raise FormError(f"dense<...> holds {len(flat)} elements, expected {size} for {ty}")
        arr = np.array(flat, dtype=dtype).reshape(shape)
        return DenseElements(arr, ty)
    return DenseElements(np.full(shape, _element(body, dtype), dtype=dtype), ty)


# ----------------------------------------------------------------------------------------
# Atoms to attributes
# ----------------------------------------------------------------------------------------
def attr_of(atoms, ty=None):
    """The attribute a run of custom-form atoms denotes (``[1, 2]`` → a list, ``dense<..>``
    with ``ty`` → :class:`DenseElements`, a word → :class:`Word`, ...)."""
    if not isinstance(atoms, list):
        atoms = [atoms]
    if len(atoms) != 1:
        return [attr_of(a) for a in atoms]
    a = atoms[0]
    if isinstance(a, DenseLiteral):
        return dense_elements(a, ty) if ty is not None else a
    if isinstance(a, Group):
        if a.kind == "[":
            return [_entry_attr(e) for e in a.entries]
        return a
    if isinstance(a, Brace):
        return {k: (UNIT if v is None else attr_of(v)) for k, v in a.items}
    return a


def _entry_attr(e):
    segs = e.segments()
    if len(segs) == 2 and e[-2] is COLON and len(segs[1]) == 1:  # 1 : i64
        v, t = segs[0], segs[1][0]
        if len(v) == 1 and isinstance(v[0], Integer):
            return Integer(v[0], t)
        if len(v) == 1 and isinstance(v[0], Float):
            return Float(v[0], t)
    return attr_of(list(e))


def ints(atoms, what="a list of integers") -> list:
    """``[1, 2]`` (a bracket group) → ``[1, 2]``."""
    if isinstance(atoms, list) and len(atoms) == 1:
        atoms = atoms[0]
    if isinstance(atoms, Group) and atoms.kind == "[":
        out = []
        for e in atoms.entries:
            if len(e) != 1 or not isinstance(e[0], int) or isinstance(e[0], bool):
                raise FormError(f"expected {what}, got {render(atoms)}")
            out.append(int(e[0]))
        return out
    raise FormError(f"expected {what}, got {render(atoms)}")


def i64_array(values) -> DenseArray:
    return DenseArray([int(v) for v in values], ScalarType("i64"))


def i64(v) -> Integer:
    return Integer(int(v), ScalarType("i64"))


# ----------------------------------------------------------------------------------------
# Dialect attributes
# ----------------------------------------------------------------------------------------
def _params(entries):
    params, args = {}, []
    for e in entries:
        segs = e.segments(EQ)
        if len(segs) >= 2 and len(segs[0]) == 1 and isinstance(segs[0][0], str):
            rest = list(e[e.index(EQ) + 1:])
            params[str(segs[0][0])] = _entry_attr(Entry(rest))
        else:
            args.append(_entry_attr(e))
    return params, args


def _sharding_dims(group):
    if not isinstance(group, Group) or group.kind != "[":
        raise FormError(f"expected the dim shardings [{{...}}, ...], got {render(group)}")
    dims = []
    for e in group.entries:
        if not e or not isinstance(e[0], Brace):
            raise FormError(f"expected a dim sharding {{\"axis\", ...}}, got {render(e)}")
        axes, closed = [], True
        for k, v in e[0].items:
            if k == "?":
                closed = False
            else:
                axes.append(str(k))
        prio = None
        if len(e) > 1 and isinstance(e[1], Word) and e[1].startswith("p") and e[1][1:].isdigit():
            prio = int(e[1][1:])
        dims.append(DimSharding(tuple(axes), closed, prio))
    return dims


def sharding_of(entries) -> Sharding:
    """``@mesh, [{"x"}, {}], replicated={"y"}`` (the body of ``#sdy.sharding<...>`` or of
    the ``<...>`` shardings of ``sdy.manual_computation``) → :class:`Sharding`."""
    if len(entries) < 2:
        raise FormError("expected a sharding <@mesh, [dim shardings]>")
    head = entries[0]
    if len(head) == 1 and isinstance(head[0], SymbolRef):
        mesh = str(head[0])
    elif len(head) == 1 and isinstance(head[0], Group) and head[0].kind == "<":
        mesh = mesh_of(head[0].entries)
    elif len(head) == 1 and isinstance(head[0], Mesh):
        mesh = head[0]
    else:
        raise FormError(f"expected the mesh of a sharding (@name), got {render(head)}")
    dims = _sharding_dims(entries[1][0] if len(entries[1]) == 1 else None)
    extra = {}
    for e in entries[2:]:
        segs = e.segments(EQ)
        if (len(segs) == 2 and len(segs[0]) == 1 and len(segs[1]) == 1
                and isinstance(segs[1][0], Brace)):
            extra[str(segs[0][0])] = tuple(str(k) for k, _ in segs[1][0].items)
    return Sharding(mesh, dims, extra.get("replicated", ()), extra.get("unreduced", ()))


def mesh_of(entries, name=None) -> Mesh:
    """``["x"=2, "y"=2], device_ids=[...]`` → :class:`Mesh`."""
    axes, devices = [], None
    for e in entries:
        if len(e) == 1 and isinstance(e[0], Group) and e[0].kind == "[":
            for ax in e[0].entries:
                segs = ax.segments(EQ)
                if len(segs) != 2 or len(segs[0]) != 1 or len(segs[1]) != 1:
                    raise FormError(f"expected a mesh axis \"name\"=size, got {render(ax)}")
                axes.append((str(segs[0][0]), int(segs[1][0])))
        else:
            segs = e.segments(EQ)
            if len(segs) == 2 and segs[0] == [Word("device_ids")]:
                devices = ints(segs[1], "device ids")
            else:
                raise FormError(f"unexpected {render(e)} in a mesh")
    return Mesh(name, axes, devices)


def _sharding_per_value(name, entries):
    (e,) = entries  # [<@mesh, [...]>, ...]: one sharding per result
    return [sharding_of(x[0].entries) for x in e[0].entries]


def _keyed(name, entries, keys) -> dict:
    """The ``key = atoms`` parts of a dialect attribute's body, each key one of ``keys``."""
    out = {}
    for e in entries:
        segs = e.segments(EQ)
        if len(segs) < 2 or len(segs[0]) != 1 or str(segs[0][0]) not in keys or \
                str(segs[0][0]) in out:
            raise FormError(f"#{name}: expected {' and '.join(keys)} (each once, as key = value), "
                            f"got {render(e)}")
        out[str(segs[0][0])] = list(e[e.index(EQ) + 1:])
    return out


def _int(a) -> bool:
    return isinstance(a, int) and not isinstance(a, bool)


def _axis_ref(name, entries) -> AxisRef:
    """``name = "x"`` and optionally ``sub_axis_info = (pre_size)size`` (the body of
    ``#stablehlo.axis_ref<...>``) → :class:`AxisRef`."""
    kv = _keyed(name, entries, ("name", "sub_axis_info"))
    axis = kv.get("name")
    if axis is None or len(axis) != 1 or not isinstance(axis[0], str) or isinstance(axis[0], Word):
        raise FormError(f"#{name}: expected name = \"axis\", got {render(axis or [])}")
    sub = kv.get("sub_axis_info")
    if sub is not None:
        if len(sub) != 2 or not isinstance(sub[0], Group) or sub[0].kind != "(" or \
                len(sub[0].entries) != 1 or len(sub[0].entries[0]) != 1 or \
                not _int(sub[0].entries[0][0]) or not _int(sub[1]):
            raise FormError(f"#{name}: expected sub_axis_info = (pre_size)size, got {render(sub)}")
        sub = (int(sub[0].entries[0][0]), int(sub[1]))
    return AxisRef(str(axis[0]), sub)


def _stablehlo_mesh(name, entries) -> Mesh:
    """``axes = [<name = "x", size = 2>, ...]`` and optionally ``device_ids = dense<...>``
    (the body of ``#stablehlo.mesh<...>``) → an unnamed :class:`Mesh`."""
    kv = _keyed(name, entries, ("axes", "device_ids"))
    group = kv.get("axes")
    if group is None or len(group) != 1 or not isinstance(group[0], Group) or group[0].kind != "[":
        raise FormError(f"#{name}: expected axes = [<name = \"x\", size = 2>, ...], got "
                        f"{render(group or [])}")
    axes = []
    for e in group[0].entries:
        bad = FormError(f"#{name}: expected a mesh axis <name = \"x\", size = 2>, got {render(e)}")
        if len(e) != 1 or not isinstance(e[0], Group) or e[0].kind != "<":
            raise bad
        ax = _keyed(name, e[0].entries, ("name", "size"))
        n, size = ax.get("name", []), ax.get("size", [])
        if len(n) != 1 or not isinstance(n[0], str) or isinstance(n[0], Word) or \
                len(size) != 1 or not _int(size[0]):
            raise bad
        axes.append((str(n[0]), int(size[0])))
    devices = None
    if "device_ids" in kv:
        d = kv["device_ids"]
        if d and isinstance(d[0], DenseLiteral) and isinstance(d[0].body, list) and \
                all(_int(v) for v in d[0].body):
            devices = [int(v) for v in d[0].body]
        elif len(d) == 1 and isinstance(d[0], Group):
            devices = ints(d, "device ids")
        else:
            raise FormError(f"#{name}: expected device_ids = dense<[...]>, got {render(d)}")
    return Mesh(None, axes, devices)


def _replica_group_mesh_axes(name, entries) -> ReplicaGroupMeshAxes:
    """``mesh = @m`` (or an inline ``#stablehlo.mesh<...>``) and ``axes = [axis refs]``
    (the body of ``#stablehlo.replica_group_mesh_axes<...>``) →
    :class:`ReplicaGroupMeshAxes`."""
    kv = _keyed(name, entries, ("mesh", "axes"))
    mesh, axes = kv.get("mesh"), kv.get("axes")
    if mesh is None or len(mesh) != 1 or not isinstance(mesh[0], (SymbolRef, Mesh)):
        raise FormError(f"#{name}: expected mesh = @name or mesh = #stablehlo.mesh<...>, got "
                        f"{render(mesh or [])}")
    if axes is None or len(axes) != 1 or not isinstance(axes[0], Group) or axes[0].kind != "[" \
            or not all(len(e) == 1 and isinstance(e[0], AxisRef) for e in axes[0].entries):
        raise FormError(f"#{name}: expected axes = [#stablehlo.axis_ref<...>, ...], got "
                        f"{render(axes or [])}")
    return ReplicaGroupMeshAxes(str(mesh[0]) if isinstance(mesh[0], SymbolRef) else mesh[0],
                                [e[0] for e in axes[0].entries])


DIALECT_ATTRS = {
    "sdy.sharding": lambda name, entries: sharding_of(entries),
    "sdy.mesh": lambda name, entries: mesh_of(entries),
    "sdy.sharding_per_value": _sharding_per_value,
    "stablehlo.replica_group_mesh_axes": _replica_group_mesh_axes,
    "stablehlo.axis_ref": _axis_ref,
    "stablehlo.mesh": _stablehlo_mesh,
}


def decode_dialect(name: str, entries) -> object:
    """``#name<entries>`` as a typed attribute: a table entry if there is one, else an
    enum (``#stablehlo<comparison_direction LT>``, ``#foo.kind<VALUE>``) or a
    :class:`DialectAttr` of its ``key = value`` parameters."""
    decode = DIALECT_ATTRS.get(name)
    if decode is not None:
        return decode(name, entries)
    if "." not in name and len(entries) == 1 and len(entries[0]) == 2 and all(
            isinstance(a, Word) for a in entries[0]):
        return EnumAttr(entries[0][1], name, str(entries[0][0]))
    if ("." in name and len(entries) == 1 and len(entries[0]) == 1
            and isinstance(entries[0][0], Word)):
        dialect, kind = name.split(".", 1)
        return EnumAttr(entries[0][0], dialect, kind)
    params, args = _params(entries)
    return DialectAttr(name, params, args)


# ----------------------------------------------------------------------------------------
# Custom op forms
# ----------------------------------------------------------------------------------------
class Form:
    """What the grammar read for one custom op: ``entries`` (the comma-separated parts),
    the type signature (``inputs`` and ``outputs``; ``outputs`` is None when it has no
    ``->``), the labelled trailing regions, and the number of results."""

    def __init__(self, name, entries, sig, labeled, n_results):
        self.name = name
        self.entries = entries
        self.inputs, self.outputs = sig if sig is not None else ([], None)
        self.has_sig = sig is not None
        self.labeled = labeled
        self.n_results = n_results
        self._read = set()  # ids of the entries a decoder has read

    # --- reading entries (each read entry is marked; unread ones are an error) --------------
    def take(self, e):
        """Marks entry ``e`` as read and returns it."""
        self._read.add(id(e))
        return e

    def only(self):
        """The single entry of the form."""
        if len(self.entries) != 1:
            raise FormError(f"{self.name}: expected one part before ':', got {len(self.entries)}")
        return self.take(self.entries[0])

    def unread(self) -> list:
        return [e for e in self.entries if id(e) not in self._read]

    def uses(self) -> list:
        """The entries that are a single value (``%x``): the operands of most ops."""
        return [self.take(e)[0] for e in self.entries if len(e) == 1 and isinstance(e[0], Use)]

    def keyword(self, key, required=True):
        """The atoms after ``key =`` (up to the next ``word =`` or the end of the entry)."""
        for e in self.entries:
            for i, a in enumerate(e):
                if isinstance(a, Word) and a == key and i + 1 < len(e) and e[i + 1] is EQ:
                    self.take(e)
                    out = []
                    for j in range(i + 2, len(e)):
                        if (isinstance(e[j], Word) and j + 1 < len(e) and e[j + 1] is EQ):
                            break
                        out.append(e[j])
                    return out
        if required:
            raise FormError(f"{self.name}: expected `{key} = ...`")
        return None

    def attr_dict(self) -> dict:
        """A trailing ``{...}`` attribute dictionary, if any."""
        out = {}
        for e in self.entries:
            if e and isinstance(e[-1], Brace) and not any(a is EQ for a in e):
                if len(e) == 1:
                    self.take(e)
                out.update(attr_of(e[-1]))
        return out

    def words(self) -> list:
        return [a for e in self.entries for a in e if isinstance(a, Word)]

    def region(self, label):
        for name, groups, region in self.labeled:
            if name == label:
                return groups, region
        raise FormError(f"{self.name}: expected a `{label} {{...}}` region")

    # --- types ----------------------------------------------------------------------------
    def types(self, n_operands):
        """Operand and result types from the signature (``(a, b) -> c``, ``a -> b``, or a
        list shared by operands and results)."""
        if not self.has_sig:
            if n_operands or self.n_results:
                raise FormError(f"{self.name}: expected `: ` and the op's types")
            return [], []
        ins, outs = self.inputs, self.outputs
        if outs is not None:
            return list(ins), list(outs)
        n_res = self.n_results
        if len(ins) == 1:
            return [ins[0]] * n_operands, [ins[0]] * n_res
        if n_res == 0 and len(ins) == n_operands:
            return list(ins), []
        if len(ins) == n_operands == n_res:
            return list(ins), list(ins)
        if n_operands == 0 and len(ins) == n_res:
            return [], list(ins)
        raise FormError(f"{self.name}: cannot match the types {', '.join(map(str, ins))} to "
                        f"{n_operands} operand(s) and {n_res} result(s)")


CUSTOM_OPS: dict = {}


def register_form(*names):
    """Decorator: ``decode(form) -> Op`` fields (operands, attributes, regions,
    operand_types, result_types) for the custom form of ops ``names``."""
    def deco(fn):
        for n in names:
            CUSTOM_OPS[n] = fn
        return fn
    return deco


#: StableHLO ops whose custom form is just operands (and ``name = value`` attributes): a
#: form of theirs that does not read that way is an error. Other ops' unknown forms are
#: kept as text (see :func:`default_form`).
SIMPLE_FORMS = set("""
abs add and atan2 bitcast_convert cbrt ceil clamp complex convert cosine count_leading_zeros
divide dynamic_update_slice exponential exponential_minus_one floor imag is_finite log
log_plus_one logistic maximum minimum multiply negate not optimization_barrier or popcnt
power real remainder replica_id reshape round_nearest_afz round_nearest_even rsqrt
shift_left shift_right_arithmetic shift_right_logical sign sine sqrt subtract tan tanh
tuple xor""".split())


def _strict(form) -> bool:
    dialect, _, op = form.name.partition(".")
    return (dialect == "stablehlo" and op in SIMPLE_FORMS) or form.name == "func.return"


def default_form(form: Form) -> dict:
    """Operands are the single-value entries; ``key = value`` entries and a trailing
    ``{...}`` are attributes; a lone word is an attribute named after itself. A form that
    does not read this way is an error for the simple StableHLO and CHLO ops; for other
    ops (``stablehlo.convolution``, other dialects) the values in it are the operands and
    the whole form is kept as text in the ``custom_assembly`` attribute."""
    operands, attrs = [], {}
    for e in form.entries:
        segs = e.segments(EQ)
        if len(e) == 1 and isinstance(e[0], Use):
            operands.append(e[0])
        elif len(segs) == 2 and len(segs[0]) == 1 and isinstance(segs[0][0], Word):
            attrs[str(segs[0][0])] = attr_of(segs[1])
        elif len(e) == 1 and isinstance(e[0], Brace):
            attrs.update(attr_of(e[0]))
        elif len(e) == 2 and isinstance(e[0], Use) and isinstance(e[1], Brace):
            # `%x {result_accuracy = ...} : t`: jax 0.12's unary ops with an accuracy
            operands.append(e[0])
            attrs.update(attr_of(e[1]))
        elif len(e) == 1 and isinstance(e[0], Word):
            attrs[str(e[0])] = UNIT
        elif _strict(form):
            raise FormError(f"{form.name}: cannot read `{render(e)}` (expected values separated "
                            f"by commas, and `name = value` attributes)")
        else:
            return _opaque_form(form)
    ot, rt = form.types(len(operands))
    return dict(operands=operands, attributes=attrs, operand_types=ot, result_types=rt)


def _opaque_form(form: Form) -> dict:
    operands = []
    for e in form.entries:
        for a in e:
            if isinstance(a, Use):
                operands.append(a)
            elif isinstance(a, Group) and a.kind == "(":
                operands += [x[0] for x in a.entries if len(x) == 1 and isinstance(x[0], Use)]
    text = ", ".join(render(e) for e in form.entries)
    ot, rt = form.types(len(operands))
    return dict(operands=operands, attributes={"custom_assembly": text}, operand_types=ot,
                result_types=rt)


def custom_form(form: Form) -> dict:
    """The canonical fields of a custom form (every entry must have been read)."""
    fields = CUSTOM_OPS.get(form.name, default_form)(form)
    left = form.unread() if form.name in CUSTOM_OPS else []
    if left:
        raise FormError(f"{form.name}: cannot read `{render(left[0])}`")
    return fields


def _with(form, operands, attrs, regions=(), types=None):
    ot, rt = types if types is not None else form.types(len(operands))
    return dict(operands=list(operands), attributes=attrs, regions=list(regions),
                operand_types=ot, result_types=rt)


@register_form("stablehlo.constant")
def _constant(form):
    lits = [a for e in form.entries for a in e if isinstance(a, DenseLiteral)]
    for e in form.entries:
        if any(isinstance(a, DenseLiteral) for a in e):
            form.take(e)
    if len(lits) != 1:
        raise FormError("stablehlo.constant: expected a dense<...> literal")
    _, rt = form.types(0)
    attrs = form.attr_dict()
    attrs["value"] = dense_elements(lits[0], rt[0])
    return _with(form, [], attrs, types=([], rt))


def _one_keyword(attr_name, key, convert):
    def decode(form):
        return _with(form, form.uses(), {attr_name: convert(form.keyword(key)), **form.attr_dict()})
    return decode


register_form("stablehlo.broadcast_in_dim")(
    _one_keyword("broadcast_dimensions", "dims", lambda a: i64_array(ints(a))))
register_form("stablehlo.transpose")(
    _one_keyword("permutation", "dims", lambda a: i64_array(ints(a))))
register_form("stablehlo.reverse")(
    _one_keyword("dimensions", "dims", lambda a: i64_array(ints(a))))
register_form("stablehlo.iota")(
    _one_keyword("iota_dimension", "dim", lambda a: i64(a[0])))
register_form("stablehlo.concatenate")(
    _one_keyword("dimension", "dim", lambda a: i64(a[0])))
register_form("stablehlo.dynamic_slice")(
    _one_keyword("slice_sizes", "sizes", lambda a: i64_array(ints(a))))
register_form("stablehlo.get_tuple_element")(
    _one_keyword("index", "index", lambda a: Integer(a[0], ScalarType("i32"))))


@register_form("stablehlo.compare")
def _compare(form):
    words = [form.take(e)[0] for e in form.entries if len(e) == 1 and isinstance(e[0], Word)]
    if not words:
        raise FormError("stablehlo.compare: expected a direction (EQ, NE, LT, LE, GT, GE)")
    attrs = {"comparison_direction": EnumAttr(words[0], "stablehlo", "comparison_direction")}
    if len(words) > 1:
        attrs["compare_type"] = EnumAttr(words[1], "stablehlo", "comparison_type")
    return _with(form, form.uses(), {**attrs, **form.attr_dict()})


@register_form("stablehlo.pad")
def _pad(form):
    attrs = {"edge_padding_low": i64_array(ints(form.keyword("low"))),
             "edge_padding_high": i64_array(ints(form.keyword("high"))),
             "interior_padding": i64_array(ints(form.keyword("interior")))}
    return _with(form, form.uses(), attrs)


@register_form("stablehlo.slice")
def _slice(form):
    (e,) = [form.take(e) for e in form.entries if e and isinstance(e[0], Use)]
    if len(e) != 2 or not isinstance(e[1], Group) or e[1].kind != "[":
        raise FormError("stablehlo.slice: expected %x [start:limit(:stride), ...]")
    starts, limits, strides = [], [], []
    for dim in e[1].entries:
        parts = [s[0] for s in dim.segments(COLON)]
        if len(parts) not in (2, 3):
            raise FormError(f"stablehlo.slice: expected start:limit(:stride), got {render(dim)}")
        starts.append(int(parts[0]))
        limits.append(int(parts[1]))
        strides.append(int(parts[2]) if len(parts) == 3 else 1)
    attrs = {"start_indices": i64_array(starts), "limit_indices": i64_array(limits),
             "strides": i64_array(strides)}
    return _with(form, [e[0]], attrs)


@register_form("stablehlo.dot_general")
def _dot_general(form):
    dn = {}
    for key, lhs, rhs in (("batching_dims", "lhs_batching_dimensions", "rhs_batching_dimensions"),
                          ("contracting_dims", "lhs_contracting_dimensions",
                           "rhs_contracting_dimensions")):
        v = form.keyword(key, required=False)
        if v is None:
            continue
        if len(v) != 3 or v[1] != "x":
            raise FormError(f"stablehlo.dot_general: expected `{key} = [...] x [...]`")
        dn[lhs], dn[rhs] = i64_array(ints(v[0])), i64_array(ints(v[2]))
    attrs = {"dot_dimension_numbers": DialectAttr("stablehlo.dot", dn)}
    prec = form.keyword("precision", required=False)
    if prec is not None:
        attrs["precision_config"] = [EnumAttr(str(e[0]), "stablehlo", "precision")
                                     for e in prec[0].entries]
    alg = form.keyword("algorithm", required=False)
    if alg is not None:
        attrs["algorithm"] = DialectAttr("stablehlo.dot_algorithm", *_params(alg[0].entries))
    return _with(form, form.uses(), {**attrs, **form.attr_dict()})


@register_form("stablehlo.dot")
def _dot(form):
    attrs = {}
    prec = form.keyword("precision", required=False)
    if prec is not None:
        attrs["precision_config"] = [EnumAttr(str(e[0]), "stablehlo", "precision")
                                     for e in prec[0].entries]
    return _with(form, form.uses(), attrs)


@register_form("stablehlo.select")
def _select(form):
    ops = form.uses()
    if form.outputs is None and len(form.inputs) == 2:
        p, t = form.inputs
        return _with(form, ops, form.attr_dict(), types=([p, t, t], [t]))
    return _with(form, ops, form.attr_dict())


@register_form("call", "func.call")
def _call(form):
    e = form.only()
    if len(e) != 2 or not isinstance(e[0], SymbolRef) or not isinstance(e[1], Group):
        raise FormError(f"{form.name}: expected @callee(%args...)")
    operands = [x[0] for x in e[1].entries]
    return _with(form, operands, {"callee": e[0]})


@register_form("return", "func.return", "stablehlo.return", "sdy.return")
def _return(form):
    return _with(form, form.uses(), {})


def _block_args(groups, types=None):
    """``(%a: t, %b: t)`` groups → :class:`BlockArg` lists, one per group."""
    out = []
    for g in groups:
        args = []
        for e in g.entries:
            segs = e.segments(COLON)
            if len(segs) != 2 or len(segs[0]) != 1 or not isinstance(segs[0][0], Use):
                raise FormError(f"expected a block argument %name: type, got {render(e)}")
            args.append(BlockArg(str(segs[0][0]), _type_atom(segs[1][0])))
        out.append(args)
    return out


def _type_atom(a):
    if isinstance(a, Word):
        return ScalarType(str(a))
    return a


def _set_args(region: Region, args):
    if region.blocks[0].args:
        raise FormError("a region of a custom form cannot also declare ^bb arguments")
    region.blocks[0].args = list(args)
    return region


@register_form("stablehlo.reduce")
def _reduce(form):
    pairs = []
    for e in form.entries:
        if e and isinstance(e[0], Group) and e[0].kind == "(":
            form.take(e)
            for p in e[0].entries:
                segs = p.segments(COLON)
                if len(segs) != 2 or len(segs[0]) != 2 or segs[0][1] != "init":
                    raise FormError("stablehlo.reduce: expected (%operand init: %init)")
                pairs.append((segs[0][0], segs[1][0]))
    dims = form.keyword("dimensions")
    operands = [a for a, _ in pairs] + [b for _, b in pairs]
    ot, rt = form.types(len(operands))
    n = len(pairs)
    attrs = {"dimensions": i64_array(ints(dims))}
    words = form.words()
    if "applies" in words:
        body_op = words[words.index("applies") + 1]
        scalars = [TensorType((), t.element) for t in ot[n:]]
        lhs = [BlockArg(f"%lhs{i}", t) for i, t in enumerate(scalars)]
        rhs = [BlockArg(f"%rhs{i}", t) for i, t in enumerate(scalars)]
        ops = [Op(str(body_op), [Use(a.name), Use(b.name)], [f"%r{i}"], {}, [], [a.type, b.type],
                  [a.type], form="custom") for i, (a, b) in enumerate(zip(lhs, rhs))]
        ops.append(Op("stablehlo.return", [Use(f"%r{i}") for i in range(n)], [], {}, [],
                      list(scalars), [], form="custom"))
        region = Region([Block(lhs + rhs, ops)])
    else:
        groups, region = form.region("reducer")
        args = _block_args(groups)
        region = _set_args(region, [g[0] for g in args] + [g[1] for g in args])
    return _with(form, operands, attrs, [region], (ot, rt))


@register_form("stablehlo.while")
def _while(form):
    e = form.only()
    if len(e) != 1 or not isinstance(e[0], Group):
        raise FormError("stablehlo.while: expected (%iterArg = %init, ...)")
    names, operands = [], []
    for p in e[0].entries:
        segs = p.segments(EQ)
        if len(segs) != 2:
            raise FormError("stablehlo.while: expected (%iterArg = %init, ...)")
        names.append(str(segs[0][0]))
        operands.append(segs[1][0])
    ot, rt = form.types(len(operands))
    regions = []
    for label in ("cond", "do"):
        _, region = form.region(label)
        regions.append(_set_args(region, [BlockArg(n, t) for n, t in zip(names, ot)]))
    return _with(form, operands, {}, regions, (ot, rt))


@register_form("sdy.manual_computation")
def _manual_computation(form):
    e = form.only()
    if not e or not isinstance(e[0], Group) or not isinstance(e[-1], Region):
        raise FormError("sdy.manual_computation: expected (%operands) in_shardings=[...] "
                        "out_shardings=[...] manual_axes={...} (%args) {...}")
    operands = [x[0] for x in e[0].entries]

    def shardings(key):
        v = form.keyword(key)
        return [sharding_of(x[0].entries) for x in v[0].entries]
    attrs = {"in_shardings": shardings("in_shardings"),
             "out_shardings": shardings("out_shardings"),
             "manual_axes": [str(k) for k, _ in form.keyword("manual_axes")[0].items]}
    (args,) = _block_args([e[-2]])
    region = _set_args(e[-1], args)
    return _with(form, operands, attrs, [region])


@register_form("sdy.sharding_constraint", "sdy.reshard")
def _sharding_constraint(form):
    e = form.only()
    if len(e) != 2 or not isinstance(e[1], Group) or e[1].kind != "<":
        raise FormError(f"{form.name}: expected %value <@mesh, [...]>")
    return _with(form, [e[0]], {"sharding": sharding_of(e[1].entries)})


@register_form("stablehlo.custom_call")
def _custom_call(form):
    e = form.take(form.entries[0])
    if len(e) < 2 or not isinstance(e[0], SymbolRef):
        raise FormError("stablehlo.custom_call: expected @target(%operands)")
    operands = [x[0] for x in e[1].entries]
    attrs = {"call_target_name": str(e[0]), **form.attr_dict()}
    return _with(form, operands, attrs)
