"""The typed syntax tree of an MLIR module: modules, functions, meshes, ops, regions,
types, attributes and locations.

Every op is held in one canonical shape whichever form it was printed in: the generic
form (``"stablehlo.add"(%a, %b) : (...) -> ...``) and the custom (pretty) form
(``stablehlo.add %a, %b : tensor<2xf32>``) give the same :class:`Op` (operands,
attributes named as in the generic form, regions, operand and result types).

Attribute values are Python values with their MLIR type kept where it matters:
integers are :class:`Integer` (an ``int``), floats :class:`Float`, ``dense<...>`` is
:class:`DenseElements` (a NumPy array inside), ``array<i64: ...>`` is :class:`DenseArray`
(a ``list``), ``#stablehlo<comparison_direction LT>`` is :class:`EnumAttr` (a ``str``),
other dialect attributes are :class:`DialectAttr` (their parameters as a ``dict``),
``#sdy.sharding<...>`` is :class:`Sharding`, the replica groups JAX 0.12 prints
(``#stablehlo.replica_group_mesh_axes<mesh = @m, axes = [...]>``) are
:class:`ReplicaGroupMeshAxes` of :class:`AxisRef` objects. :func:`to_python` turns the others
into plain lists, dicts and numbers.

>>> from nxpy.stablehlo import parse
>>> m = parse('''
... func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
...   %0 = stablehlo.add %x, %x : tensor<2xf32>
...   return %0 : tensor<2xf32>
... }''')
>>> op = m.main.body.ops[0]
>>> op.name, [str(u) for u in op.operands], [str(t) for t in op.result_types]
('stablehlo.add', ['%x', '%x'], ['tensor<2xf32>'])
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from .. import types as T

__all__ = ["Location", "UnknownLoc", "FileLoc", "NameLoc", "CallSiteLoc", "FusedLoc",
           "LocRef", "Type", "TensorType", "ScalarType", "ComplexType", "TupleType",
           "OpaqueType", "FunctionType", "Use", "Op", "Block", "BlockArg", "Region", "Func",
           "FuncArg", "FuncResult", "Mesh", "Module", "Integer", "Float", "Unit", "UNIT",
           "SymbolRef", "Word", "DenseArray", "DenseElements", "EnumAttr", "DialectAttr",
           "Sharding", "DimSharding", "AxisRef", "ReplicaGroupMeshAxes", "to_python"]


# ----------------------------------------------------------------------------------------
# Locations
# ----------------------------------------------------------------------------------------
class Location:
    """Base of ``loc(...)`` information."""

    def describe(self, aliases=None) -> str:
        """A short human-readable form, resolving ``#loc`` references through ``aliases``."""
        return str(self)


@dataclass(frozen=True)
class UnknownLoc(Location):
    def __str__(self):
        return "unknown"


@dataclass(frozen=True)
class FileLoc(Location):
    """``"file.py":3:7`` (optionally ``to`` an end line/column)."""
    file: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self):
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class NameLoc(Location):
    """``"jit(f)/add"(child)``: a name, usually of the op that made the value."""
    name: str
    child: Location | None = None

    def describe(self, aliases=None):
        if self.child is None:
            return self.name
        inner = self.child.describe(aliases)
        return self.name if inner == "unknown" else f"{self.name} at {inner}"

    def __str__(self):
        return self.describe()


@dataclass(frozen=True)
class CallSiteLoc(Location):
    callee: Location
    caller: Location

    def describe(self, aliases=None):
        return f"{self.callee.describe(aliases)} called from {self.caller.describe(aliases)}"

    def __str__(self):
        return self.describe()


@dataclass(frozen=True)
class FusedLoc(Location):
    locations: tuple
    metadata: object = None

    def describe(self, aliases=None):
        return " + ".join(x.describe(aliases) for x in self.locations)

    def __str__(self):
        return self.describe()


@dataclass(frozen=True)
class LocRef(Location):
    """A reference to a location alias (``loc(#loc3)``), defined elsewhere in the file."""
    alias: str

    def describe(self, aliases=None):
        target = (aliases or {}).get(self.alias)
        if isinstance(target, Location) and not isinstance(target, LocRef):
            return target.describe(aliases)
        return self.alias

    def __str__(self):
        return self.alias


# ----------------------------------------------------------------------------------------
# Types
# ----------------------------------------------------------------------------------------
class Type:
    """Base of types."""


@dataclass(frozen=True)
class ScalarType(Type):
    """A builtin scalar type: ``f32``, ``i1``, ``ui8``, ``bf16``, ``index``..."""
    name: str

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class ComplexType(Type):
    element: Type

    def __str__(self):
        return f"complex<{self.element}>"


@dataclass(frozen=True)
class OpaqueType(Type):
    """A dialect type (``!stablehlo.token``) kept as text."""
    text: str

    def __str__(self):
        return self.text


@dataclass(frozen=True)
class TupleType(Type):
    types: tuple

    def __str__(self):
        return "tuple<" + ", ".join(map(str, self.types)) + ">"


@dataclass(frozen=True)
class TensorType(Type):
    """``tensor<2x3xf32>``: ``shape`` (``None`` for a dynamic ``?`` dim) and ``element``.

    >>> t = TensorType((2, 3), ScalarType("f32"))
    >>> str(t), str(t.nx_type), t.rank
    ('tensor<2x3xf32>', 'f32', 2)
    """
    shape: tuple
    element: Type
    encoding: object = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def nx_type(self):
        """The nxpy type of the elements (raises ``ValueError`` for types nxpy lacks)."""
        return nx_type(self.element)

    def __str__(self):
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        enc = f", {self.encoding}" if self.encoding is not None else ""
        return f"tensor<{dims}{self.element}{enc}>"


@dataclass(frozen=True)
class FunctionType(Type):
    inputs: tuple
    results: tuple

    def __str__(self):
        return (f"({', '.join(map(str, self.inputs))}) -> "
                f"({', '.join(map(str, self.results))})")


_ELEMENT_TYPES = {"i1": "pred", "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64"}
for _b in (8, 16, 32, 64):
    _ELEMENT_TYPES[f"i{_b}"] = _ELEMENT_TYPES[f"si{_b}"] = f"s{_b}"
    _ELEMENT_TYPES[f"ui{_b}"] = f"u{_b}"


def nx_type(element: Type):
    """The nxpy :class:`~nxpy.types.Type` of an MLIR element type.

    >>> str(nx_type(ScalarType("ui8"))), str(nx_type(ComplexType(ScalarType("f64"))))
    ('u8', 'c128')
    """
    if isinstance(element, ComplexType) and str(element.element) in ("f32", "f64"):
        return T.parse(f"c{2 * int(str(element.element)[1:])}")
    name = _ELEMENT_TYPES.get(str(element)) if isinstance(element, ScalarType) else None
    if name is None:
        raise ValueError(f"element type {element} has no nxpy equivalent (nxpy has i1, "
                         f"i8-i64, ui8-ui64, f16, bf16, f32, f64, complex<f32>, complex<f64>)")
    return T.parse(name)


# ----------------------------------------------------------------------------------------
# Attributes
# ----------------------------------------------------------------------------------------
class Integer(int):
    """An integer attribute (``2 : i64``); ``type`` is its MLIR type or None."""

    def __new__(cls, value, type=None):
        self = super().__new__(cls, value)
        self.type = type
        return self

    def __repr__(self):
        return int.__repr__(self)


class Float(float):
    """A float attribute (``1.0 : f32``); ``type`` is its MLIR type or None."""

    def __new__(cls, value, type=None):
        self = super().__new__(cls, value)
        self.type = type
        return self

    def __repr__(self):
        return float.__repr__(self)


class Unit:
    """The unit attribute (a key with no value, or ``= unit``); true as a condition."""

    _it = None

    def __new__(cls):
        if cls._it is None:
            cls._it = super().__new__(cls)
        return cls._it

    def __bool__(self):
        return True

    def __repr__(self):
        return "unit"


UNIT = Unit()


class SymbolRef(str):
    """``@name`` (the string is the name without ``@``)."""

    def __repr__(self):
        return f"@{str.__str__(self)}"


class Word(str):
    """A bare identifier in a custom form (``DEFAULT``, ``GT``, an axis keyword)."""


class EnumAttr(str):
    """A dialect enum: ``#stablehlo<comparison_direction LT>`` is ``EnumAttr("LT")`` with
    ``dialect == "stablehlo"`` and ``kind == "comparison_direction"``."""

    def __new__(cls, value, dialect=None, kind=None):
        self = super().__new__(cls, value)
        self.dialect, self.kind = dialect, kind
        return self


class DenseArray(list):
    """``array<i64: 1, 2>``: a list of numbers with its element type."""

    def __init__(self, values=(), element=None):
        super().__init__(values)
        self.element = element


class DenseElements:
    """``dense<...> : tensor<...>``: the values as a NumPy array of the tensor's type.

    Compares equal to nested lists of the same values (``replica_groups == [[0, 1]]``).
    """

    def __init__(self, array: np.ndarray, type: TensorType | None = None):
        self.array = array
        self.type = type

    def tolist(self):
        return self.array.tolist()

    @property
    def is_splat(self) -> bool:
        """Whether every element has the same bits."""
        flat = np.ascontiguousarray(self.array).reshape(-1)
        if flat.size == 0:
            return False
        raw = flat.view(np.dtype((np.void, flat.itemsize)))
        return bool((raw == raw[0]).all())

    def __eq__(self, other):
        if isinstance(other, DenseElements):
            return self.array.shape == other.array.shape and bool(np.array_equal(
                self.array, other.array))
        if isinstance(other, (list, tuple, int, float, bool)):
            return self.tolist() == other
        return NotImplemented

    def __hash__(self):
        return hash((self.array.shape, self.array.tobytes()))

    def __repr__(self):
        return f"DenseElements({self.tolist()!r}, {self.type})"


class DialectAttr:
    """Another dialect attribute: ``#stablehlo.channel_handle<handle = 1, type = 1>``
    has ``name == "stablehlo.channel_handle"`` and ``params == {"handle": 1, "type": 1}``;
    positional parts (without ``=``) are in ``args``."""

    def __init__(self, name, params=None, args=()):
        self.name = name
        self.params = dict(params or {})
        self.args = list(args)

    def __getitem__(self, key):
        return self.params[key]

    def get(self, key, default=None):
        return self.params.get(key, default)

    def __eq__(self, other):
        if isinstance(other, DialectAttr):
            return (self.name, self.params, self.args) == (other.name, other.params, other.args)
        if isinstance(other, dict):
            return to_python(self) == other
        return NotImplemented

    __hash__ = None

    def __repr__(self):
        body = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.params.items()]
        return f"#{self.name}<{', '.join(body)}>"


@dataclass
class DimSharding:
    """How one tensor dim is split: mesh ``axes`` (major to minor); ``closed`` is False
    for an open dim (``{"x", ?}``); ``priority`` is the ``pN`` suffix if any."""
    axes: tuple
    closed: bool = True
    priority: int | None = None


@dataclass
class Sharding:
    """``#sdy.sharding<@mesh, [{"x"}, {}]>`` (or the ``<@mesh, [...]>`` of a manual
    computation): ``mesh`` names the mesh (or is an inline :class:`Mesh`), ``dims`` has
    one :class:`DimSharding` per tensor dim.

    >>> s = Sharding("mesh", [DimSharding(("x",)), DimSharding(())])
    >>> s.axes, s.spec, s.is_replicated
    ([('x',), ()], {0: ['x']}, False)
    """
    mesh: object
    dims: list
    replicated: tuple = ()
    unreduced: tuple = ()

    @property
    def axes(self) -> list:
        """The mesh axes of each dim, as tuples of axis names."""
        return [d.axes for d in self.dims]

    @property
    def spec(self) -> dict:
        """As an nxpy ``input_shardings`` dict: ``{dim: [axis names]}``."""
        return {i: list(d.axes) for i, d in enumerate(self.dims) if d.axes}

    @property
    def is_replicated(self) -> bool:
        return not any(d.axes for d in self.dims)

    def __str__(self):
        def dim(d):
            body = ", ".join(f'"{a}"' for a in d.axes)
            if not d.closed:
                body = body + ", ?" if body else "?"
            return "{" + body + "}" + (f"p{d.priority}" if d.priority is not None else "")
        mesh = f"@{self.mesh}" if isinstance(self.mesh, str) else str(self.mesh)
        extra = ""
        if self.replicated:
            extra += ", replicated={" + ", ".join(f'"{a}"' for a in self.replicated) + "}"
        if self.unreduced:
            extra += ", unreduced={" + ", ".join(f'"{a}"' for a in self.unreduced) + "}"
        return f"#sdy.sharding<{mesh}, [{', '.join(dim(d) for d in self.dims)}]{extra}>"


@dataclass(frozen=True, repr=False)
class AxisRef:
    """``#stablehlo.axis_ref<name = "x">``: mesh axis ``name``; with
    ``sub_axis_info = (pre_size)size`` (``sub_axis == (pre_size, size)``) only the sub-axis
    of that size that follows the axis's first (major) ``pre_size`` positions.

    >>> print(AxisRef("x", (2, 2)))
    #stablehlo.axis_ref<name = "x", sub_axis_info = (2)2>
    """
    name: str
    sub_axis: tuple | None = None

    def __str__(self):
        sub = "" if self.sub_axis is None else \
            f", sub_axis_info = ({self.sub_axis[0]}){self.sub_axis[1]}"
        return f'#stablehlo.axis_ref<name = "{self.name}"{sub}>'

    __repr__ = __str__


@dataclass(repr=False)
class ReplicaGroupMeshAxes:
    """``#stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [...]>``: the replica
    groups of a collective over mesh ``axes`` (:class:`AxisRef` objects, major to minor) of
    ``mesh`` — a mesh name (an ``sdy.mesh`` of the module) or an inline :class:`Mesh`
    (``#stablehlo.mesh<axes = [...], device_ids = ...>``). JAX 0.12 prints replica groups
    this way; ``nxpy.stablehlo.sharding.replica_groups`` resolves them to device groups.

    >>> print(ReplicaGroupMeshAxes("mesh_0", [AxisRef("y")]))
    #stablehlo.replica_group_mesh_axes<mesh = @mesh_0, axes = [#stablehlo.axis_ref<name = "y">]>
    >>> inline = Mesh(None, [("x", 2)], [1, 0])
    >>> print(ReplicaGroupMeshAxes(inline, []))  # doctest: +NORMALIZE_WHITESPACE
    #stablehlo.replica_group_mesh_axes<mesh = #stablehlo.mesh<axes = [<name = "x", size = 2>],
    device_ids = dense<[1, 0]> : tensor<2xi64>>, axes = []>
    """
    mesh: object
    axes: list

    def __str__(self):
        if isinstance(self.mesh, str):
            mesh = f"@{self.mesh}"
        else:
            axes = ", ".join(f'<name = "{n}", size = {k}>' for n, k in self.mesh.axes)
            ids = self.mesh.device_ids
            dev = "" if not ids else \
                f", device_ids = dense<[{', '.join(map(str, ids))}]> : tensor<{len(ids)}xi64>"
            mesh = f"#stablehlo.mesh<axes = [{axes}]{dev}>"
        return (f"#stablehlo.replica_group_mesh_axes<mesh = {mesh}, "
                f"axes = [{', '.join(str(a) for a in self.axes)}]>")

    __repr__ = __str__


def to_python(value):
    """An attribute as plain Python: numbers, strings, lists, dicts (a :class:`Sharding`
    and a :class:`ReplicaGroupMeshAxes` stay themselves).

    >>> to_python({"groups": DenseElements(np.array([[0, 1], [2, 3]])), "d": Integer(1)})
    {'groups': [[0, 1], [2, 3]], 'd': 1}
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, Integer):
        return int(value)
    if isinstance(value, Float):
        return float(value)
    if isinstance(value, (EnumAttr, Word, SymbolRef)):
        return str(value)
    if isinstance(value, DenseElements):
        return value.tolist()
    if isinstance(value, Unit):
        return True
    if isinstance(value, DialectAttr):
        if value.params and not value.args:
            return {k: to_python(v) for k, v in value.params.items()}
        return {"args": [to_python(a) for a in value.args],
                **{k: to_python(v) for k, v in value.params.items()}}
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in value]
    if isinstance(value, dict):
        return {k: to_python(v) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------------------
# Ops, regions, functions, modules
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Use:
    """A use of an SSA value: ``%x`` or result ``index`` of a multi-result op (``%x#1``)."""
    name: str
    index: int | None = None

    def __str__(self):
        return self.name if self.index is None else f"{self.name}#{self.index}"


@dataclass
class Op:
    """One operation, in canonical form whichever way it was printed.

    ``results`` are the names its results are used by (``%0``, or ``%0#0``, ``%0#1``
    for ``%0:2 = ...``); ``attributes`` are named as in the generic form; ``line`` and
    ``column`` locate it in the source text, ``location`` is its ``loc(...)`` if any.
    """
    name: str
    operands: list = field(default_factory=list)
    results: list = field(default_factory=list)
    attributes: dict = field(default_factory=dict)
    regions: list = field(default_factory=list)
    operand_types: list = field(default_factory=list)
    result_types: list = field(default_factory=list)
    location: Location | None = None
    line: int | None = None
    column: int | None = None
    form: str = "generic"

    @property
    def attrs(self) -> dict:
        """The attributes as plain Python values (see :func:`to_python`)."""
        return {k: to_python(v) for k, v in self.attributes.items()}

    def walk(self):
        """This op, then every op nested in its regions, in order."""
        yield self
        for r in self.regions:
            yield from r.walk()

    def find(self, name: str) -> list:
        """The ops named ``name`` nested in this op's regions (and this op, if it is one)."""
        return [o for o in self.walk() if o.name == name]

    def where(self, aliases=None) -> str:
        """``line L, column C`` plus the ``loc(...)`` information if any."""
        pos = f"line {self.line}, column {self.column}" if self.line is not None else \
            "an unknown position"
        if self.location is not None:
            desc = self.location.describe(aliases)
            if desc not in ("unknown", "#loc"):
                pos += f" ({desc})"
        return pos

    def __repr__(self):
        res = ", ".join(self.results)
        return (f"<Op {res + ' = ' if res else ''}{self.name}"
                f"({', '.join(map(str, self.operands))}) at {self.line}:{self.column}>")


@dataclass
class BlockArg:
    name: str
    type: Type
    location: Location | None = None


@dataclass
class Block:
    args: list
    ops: list
    label: str | None = None


@dataclass
class Region:
    blocks: list

    @property
    def args(self) -> list:
        """The entry block's arguments."""
        return self.blocks[0].args if self.blocks else []

    @property
    def ops(self) -> list:
        """The entry block's ops (StableHLO regions have a single block)."""
        return self.blocks[0].ops if self.blocks else []

    def walk(self):
        for b in self.blocks:
            for o in b.ops:
                yield from o.walk()


@dataclass
class FuncArg:
    name: str
    type: Type
    attributes: dict = field(default_factory=dict)
    location: Location | None = None

    @property
    def sharding(self):
        return self.attributes.get("sdy.sharding")


@dataclass
class FuncResult:
    type: Type
    attributes: dict = field(default_factory=dict)
    location: Location | None = None

    @property
    def sharding(self):
        return self.attributes.get("sdy.sharding")


@dataclass
class Func:
    """``func.func [visibility] @name(args) -> results [attributes {...}] { body }``."""
    name: str
    args: list
    results: list
    body: Region | None = None
    visibility: str | None = None
    attributes: dict = field(default_factory=dict)
    location: Location | None = None
    line: int | None = None
    column: int | None = None

    def walk(self):
        if self.body is not None:
            yield from self.body.walk()

    def find(self, name: str) -> list:
        return [o for o in self.walk() if o.name == name]


@dataclass
class Mesh:
    """``sdy.mesh @name = <["x"=2, "y"=2]>``: the axes as ``(name, size)`` pairs, and the
    device ids if given."""
    name: str
    axes: list
    device_ids: list | None = None
    attributes: dict = field(default_factory=dict)
    line: int | None = None
    column: int | None = None

    @property
    def shape(self) -> tuple:
        return tuple(s for _, s in self.axes)

    @property
    def axis_names(self) -> tuple:
        return tuple(n for n, _ in self.axes)

    def __str__(self):
        axes = ", ".join(f'"{n}"={s}' for n, s in self.axes)
        dev = f", device_ids=[{', '.join(map(str, self.device_ids))}]" if self.device_ids else ""
        return f"<[{axes}]{dev}>"


@dataclass
class Module:
    """A parsed module: its functions, meshes, other top-level ops, attributes and the
    location aliases (``#loc3 = loc(...)``) of the file."""
    name: str | None = None
    attributes: dict = field(default_factory=dict)
    funcs: list = field(default_factory=list)
    meshes: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    aliases: dict = field(default_factory=dict)
    location: Location | None = None
    source: str | None = field(default=None, repr=False)

    def func(self, name: str) -> Func:
        for f in self.funcs:
            if f.name == name:
                return f
        raise KeyError(f"no function @{name} in the module (functions: "
                       f"{', '.join('@' + f.name for f in self.funcs) or 'none'})")

    @property
    def main(self) -> Func:
        """``@main``, or the only public function."""
        names = [f.name for f in self.funcs]
        if "main" in names:
            return self.func("main")
        public = [f for f in self.funcs if f.visibility != "private"]
        if len(public) == 1:
            return public[0]
        raise KeyError(f"the module has no @main function (functions: "
                       f"{', '.join('@' + n for n in names) or 'none'})")

    def mesh(self, name: str) -> Mesh:
        for m in self.meshes:
            if m.name == name:
                return m
        raise KeyError(f"no sdy.mesh @{name} in the module")

    @property
    def num_partitions(self) -> int:
        return int(self.attributes.get("mhlo.num_partitions", 1))

    def walk(self):
        """Every op of every function (nested ones included), in order."""
        for o in self.ops:
            yield from o.walk()
        for f in self.funcs:
            yield from f.walk()

    def find(self, name: str) -> list:
        """Every op named ``name`` (``module.find("stablehlo.all_gather")``)."""
        return [o for o in self.walk() if o.name == name]
