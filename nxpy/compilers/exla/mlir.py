"""StableHLO text emission: types, dense literals, attributes, and a function builder.

Ops are written in MLIR's generic form (``"stablehlo.add"(%a, %b) : (...) -> ...``),
the most version-stable spelling.

>>> from nxpy.types import parse
>>> (tensor_type((2, 3), parse("f32")), tensor_type((), parse("pred")),
...  tensor_type((4,), parse("c64")))
('tensor<2x3xf32>', 'tensor<i1>', 'tensor<4xcomplex<f32>>')
"""
from __future__ import annotations

import functools

import numpy as np

from ... import types as T

__all__ = ["elem_type", "tensor_type", "dense", "is_splat", "i64_array", "dense_i64", "Val",
           "TokenVal", "TOKEN", "Builder"]

#: a token (``!stablehlo.token``), where ops take ``(shape, type)`` pairs for results or
#: region arguments: what orders side effects (host callbacks)
TOKEN = "!stablehlo.token"


@functools.lru_cache(maxsize=None)
def elem_type(t: T.Type) -> str:
    if t.is_pred:
        return "i1"
    if t.kind == "s":
        return f"i{t.bits}"
    if t.kind == "u":
        return f"ui{t.bits}"
    if t.is_complex:
        return f"complex<f{t.bits // 2}>"
    return f"{t.kind}{t.bits}"


def tensor_type(shape, t: T.Type) -> str:
    return _tensor_type(tuple(shape), t)


@functools.lru_cache(maxsize=4096)  # a module spells a few types many times
def _tensor_type(shape, t):
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{elem_type(t)}>"


def is_splat(arr) -> bool:
    """All elements of ``arr`` have the same bits (so 0.0 and -0.0 differ, NaNs may match)."""
    a = np.ascontiguousarray(arr).reshape(-1)
    if a.size == 0:
        return False
    b = a.view(np.uint8).reshape(a.size, -1)
    return bool((b == b[0]).all())


def dense(value, t: T.Type) -> str:
    """A ``dense<...>`` literal holding ``value`` exactly (hex bytes for non-bools)."""
    arr = np.ascontiguousarray(np.asarray(value, dtype=t.dtype))
    if t.is_pred:
        if arr.ndim == 0 or is_splat(arr):
            return f"dense<{'true' if arr.flat[0] else 'false'}>"
        return "dense<" + np.array2string(arr, separator=", ", threshold=arr.size + 1,
                                          max_line_width=1 << 30).replace("True", "true").replace(
            "False", "false") + ">"
    if is_splat(arr):
        arr = arr.reshape(-1)[:1]
    return f'dense<"0x{arr.tobytes().hex().upper()}">'


def i64_array(values) -> str:
    if not len(values):
        return "array<i64>"
    return "array<i64: " + ", ".join(str(int(v)) for v in values) + ">"


def dense_i64(rows) -> str:
    """A 2-D i64 ``dense<[[..]]>`` literal with its type (replica groups, padding)."""
    rows = [list(r) for r in rows]
    n, m = len(rows), (len(rows[0]) if rows else 0)
    body = "[" + ", ".join("[" + ", ".join(str(int(v)) for v in r) + "]" for r in rows) + "]"
    return f"dense<{body}> : tensor<{n}x{m}xi64>"


class Val:
    """An SSA value: its name and its tensor type."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, name, shape, type):
        self.name = name
        self.shape = tuple(shape)
        self.type = type

    @property
    def ty(self) -> str:
        return tensor_type(self.shape, self.type)

    def __repr__(self):
        return f"{self.name}: {self.ty}"


class TokenVal(Val):
    """An SSA value of type ``!stablehlo.token``."""

    __slots__ = ()

    def __init__(self, name):
        super().__init__(name, (), None)

    @property
    def ty(self) -> str:
        return TOKEN


def _val(name, r) -> Val:
    return TokenVal(name) if r == TOKEN else Val(name, *r)


def _ty(r) -> str:
    return TOKEN if r == TOKEN else tensor_type(*r)


class Builder:
    """Emits the body of one function or region. Names are unique per function (shared
    counter), so nested regions can read outer values."""

    def __init__(self, counter=None, indent="    "):
        self.lines: list[str] = []
        self.counter = counter if counter is not None else [0]
        self.indent = indent

    def fresh(self) -> str:
        self.counter[0] += 1
        return f"%{self.counter[0]}"

    def child(self) -> "Builder":
        return Builder(self.counter, self.indent + "  ")

    def op(self, name, operands, results, attrs=None, regions=None, discardable=None):
        """Emits ``name`` and returns one :class:`Val` per ``(shape, type)`` in ``results``
        (a single Val when ``results`` is one pair). ``attrs`` are the op's properties
        (``<{...}>``); ``discardable`` its other attributes (``{...}`` after the regions:
        ``mhlo.frontend_attributes`` reaches XLA's HLO only from there)."""
        single = results == TOKEN or (isinstance(results, tuple) and len(results) == 2
                                      and isinstance(results[1], T.Type))
        res = [results] if single else list(results)
        base = self.fresh()
        if len(res) == 1:
            outs = [_val(base, res[0])]
            lhs = f"{base} = "
        elif res:
            outs = [_val(f"{base}#{i}", r) for i, r in enumerate(res)]
            lhs = f"{base}:{len(res)} = "
        else:
            outs, lhs = [], ""
        ops = ", ".join(v.name for v in operands)
        attr = ""
        if attrs:
            attr = " <{" + ", ".join(f"{k} = {v}" for k, v in attrs.items()) + "}>"
        reg = ""
        if regions:
            reg = " (" + ", ".join(regions) + ")"
        if discardable:
            reg += " {" + ", ".join(f"{k} = {v}" for k, v in discardable.items()) + "}"
        in_t = ", ".join(v.ty for v in operands)
        out_t = ", ".join(_ty(r) for r in res)
        if len(res) != 1:
            out_t = f"({out_t})"
        self.lines.append(f'{self.indent}{lhs}"{name}"({ops}){attr}{reg} : ({in_t}) -> {out_t}')
        return outs[0] if single else outs

    def raw(self, line: str):
        self.lines.append(self.indent + line)

    def region(self, args, build) -> str:
        """A one-block region: ``build(child, block_args)`` returns the values to yield."""
        child = self.child()
        block_args = [_val(child.fresh().replace("%", "%b"), r) for r in args]
        rets = build(child, block_args)
        head = ("^bb0(" + ", ".join(f"{v.name}: {v.ty}" for v in block_args) + "):"
                if block_args else "")
        ret = ('"stablehlo.return"(' + ", ".join(v.name for v in rets) + ") : (" +
               ", ".join(v.ty for v in rets) + ") -> ()")
        body = "\n".join(child.lines)
        return ("{\n" + (child.indent + head + "\n" if head else "") + body
                + ("\n" if body else "") + child.indent + ret + "\n" + self.indent + "}")

    def text(self) -> str:
        return "\n".join(self.lines)
