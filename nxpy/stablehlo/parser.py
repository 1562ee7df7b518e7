r"""``parse(text)``: MLIR text → :class:`~nxpy.stablehlo.syntax.Module`.

The lark grammar (:mod:`nxpy.stablehlo.grammar`) is parsed LALR(1); a lark transformer
builds the typed syntax tree while parsing, decoding custom op forms and dialect
attributes through :mod:`nxpy.stablehlo.assembly`. Errors are
:class:`StableHLOSyntaxError`, with the line, the column, what was expected, and the
offending line with a caret.

>>> m = parse('''
... module @m {
...   func.func public @main(%a: tensor<2xi32>) -> (tensor<2xi32>) {
...     %0 = "stablehlo.multiply"(%a, %a) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
...     return %0 : tensor<2xi32>
...   }
... }''')
>>> m.name, m.main.name, [o.name for o in m.main.body.ops]
('m', 'main', ['stablehlo.multiply', 'func.return'])
>>> parse("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
...       "  return %a : tensor<2xf32>\n")  # doctest: +NORMALIZE_WHITESPACE
Traceback (most recent call last):
...
nxpy.stablehlo.parser.StableHLOSyntaxError: line 2, column 28: unexpected end of input;
expected ',', '->', 'loc', '}', a block label (^bb0), an identifier or an op
>>> try:
...     parse("func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a tensor<2xf32>\n}")
... except StableHLOSyntaxError as e:
...     print(e)
...     print(e.line, e.column)
line 2, column 3: func.return: cannot read `%a tensor<2xf32>`
    return %a tensor<2xf32>
    ^
2 3
"""
from __future__ import annotations

import functools
import re

import lark
from lark import Lark, Token, Transformer

from . import assembly as A
from .grammar import GRAMMAR
from .syntax import (UNIT, Block, BlockArg, CallSiteLoc, ComplexType, FileLoc, Float, Func,
                     FuncArg, FuncResult, FunctionType, FusedLoc, Integer, LocRef, Location,
                     Mesh, Module, NameLoc, OpaqueType, Op, Region, ScalarType, SymbolRef,
                     TensorType, TupleType, UnknownLoc, Use, Word, DenseArray)

__all__ = ["parse", "StableHLOError", "StableHLOSyntaxError", "parser"]


class StableHLOError(Exception):
    """Base of nxpy.stablehlo's errors."""


class StableHLOSyntaxError(StableHLOError, SyntaxError):
    """The text is not a module nxpy can read: ``line``/``column`` (1-based) locate the
    problem, ``expected`` lists what would have been accepted there. ``str(e)`` is the
    message followed by the offending line and a caret under the column."""

    def __init__(self, message, line=None, column=None, expected=(), source_line=None):
        where = f"line {line}, column {column}: " if line is not None else ""
        SyntaxError.__init__(self, where + message)
        self.message = message
        self.line, self.column, self.expected = line, column, list(expected)
        self.source_line = source_line
        # what Python's traceback shows for a SyntaxError
        self.filename, self.lineno, self.offset = "<stablehlo>", line, column
        self.text = source_line

    def __str__(self):
        text = self.msg
        if self.source_line is not None and self.column is not None:
            text += ("\n  " + self.source_line.rstrip("\n") + "\n  " + " " * (self.column - 1)
                     + "^")
        return text


# ----------------------------------------------------------------------------------------
# Tokens → values
# ----------------------------------------------------------------------------------------
_ESCAPE = re.compile(r'\\([0-9A-Fa-f]{2}|.)')
_SIMPLE = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def unquote(s: str) -> str:
    """An MLIR string literal's value (``\\22`` hex escapes, ``\\n``, ``\\"``)."""
    body = s[1:-1]
    if "\\" not in body:
        return body

    def repl(m):
        e = m.group(1)
        return chr(int(e, 16)) if len(e) == 2 else _SIMPLE.get(e, e)
    return _ESCAPE.sub(repl, body)


def _use(tok: str) -> Use:
    name, _, idx = str(tok).partition("#")
    return Use(name, int(idx) if idx else None)


def _atom(t):
    """A token of a custom form as a value."""
    if not isinstance(t, Token):
        return t
    k = t.type
    if k == "VALUE_ID":
        return _use(t)
    if k == "SYMBOL":
        return SymbolRef(unquote(t[1:]) if t[1] == '"' else t[1:])
    if k in ("BARE_ID", "OP_NAME", "QMARK"):
        return A.Word(str(t))
    if k == "INT":
        return Integer(int(t))
    if k == "FLOAT":
        return Float(float(t))
    if k == "HEX":
        return A.Hex(int(t, 16))
    if k == "STRING":
        return unquote(t)
    if k == "TRUE":
        return True
    if k == "FALSE":
        return False
    return A.Word(str(t))


class _Results(list):
    pass


class _Regions(list):
    pass


class _Props(dict):
    pass


class _Custom:
    def __init__(self, name, entries, sig, labeled):
        self.name, self.entries, self.sig, self.labeled = name, entries, sig, labeled


class _Generic:
    def __init__(self, name, operands, attrs, regions, ftype):
        self.name, self.operands, self.attrs, self.regions, self.ftype = \
            name, operands, attrs, regions, ftype


def _with_attrs_and_loc(obj, items):
    """``obj`` (a function argument or result) with its attribute dict and location."""
    for x in items:
        if isinstance(x, dict):
            obj.attributes = x
        elif isinstance(x, Location):
            obj.location = x
    return obj


class _Build(Transformer):
    """Builds the syntax tree while lark parses (an internal LALR transformer)."""

    # --- module level ---------------------------------------------------------------------
    def start(self, items):
        modules = [x for x in items if isinstance(x, Module)]
        funcs = [x for x in items if isinstance(x, Func)]
        aliases = dict(x for x in items if isinstance(x, tuple))
        if len(modules) > 1 or (modules and funcs):
            raise StableHLOSyntaxError("expected one module per text")
        m = modules[0] if modules else Module(funcs=funcs)
        m.aliases.update(aliases)
        return m

    def module(self, c):
        m = Module()
        for x in c:
            if isinstance(x, Token) and x.type == "SYMBOL":
                m.name = str(_atom(x))
            elif isinstance(x, dict):
                m.attributes = x
            elif isinstance(x, Func):
                m.funcs.append(x)
            elif isinstance(x, Mesh):
                m.meshes.append(x)
            elif isinstance(x, Op):
                m.ops.append(x)
            elif isinstance(x, Location):
                m.location = x
        return m

    def alias(self, c):
        return (str(c[0]), c[1])

    def func(self, c):
        f = Func(name="", args=[], results=[])
        for x in c:
            if isinstance(x, Token) and x.type == "VISIBILITY":
                f.visibility = str(x)
                f.line, f.column = x.line, x.column
            elif isinstance(x, Token) and x.type == "SYMBOL":
                f.name = str(_atom(x))
                if f.line is None:
                    f.line, f.column = x.line, x.column
            elif isinstance(x, FuncArg):
                f.args.append(x)
            elif isinstance(x, _Results):
                f.results = list(x)
            elif isinstance(x, dict):
                f.attributes = x
            elif isinstance(x, Region):
                f.body = x
            elif isinstance(x, Location):
                f.location = x
        return f

    def func_arg(self, c):
        return _with_attrs_and_loc(FuncArg(str(c[0]), c[1]), c[2:])

    def single_result(self, c):
        return _Results([FuncResult(c[0])])

    def func_results(self, c):
        return _Results(c)

    def func_result(self, c):
        return _with_attrs_and_loc(FuncResult(c[0]), c[1:])

    def mesh(self, c):
        name = str(_atom(c[0]))
        try:
            m = A.mesh_of(c[1].entries, name)
        except A.FormError as e:
            raise StableHLOSyntaxError(f"sdy.mesh @{name}: {e}", c[0].line, c[0].column) from None
        m.line, m.column = c[0].line, c[0].column
        for x in c[2:]:
            if isinstance(x, dict):
                m.attributes = x
        return m

    # --- ops ------------------------------------------------------------------------------
    def op(self, c):
        results, body, loc = [], None, None
        first = None
        for x in c:
            if isinstance(x, _Results):
                results = x
            elif isinstance(x, (_Custom, _Generic)):
                body = x
            elif isinstance(x, Location):
                loc = x
        names, pos_tok = [], None
        for tok, count in results:
            pos_tok = pos_tok or tok
            if "#" in tok:
                raise StableHLOSyntaxError(f"a result name cannot have a #index: {tok}",
                                           tok.line, tok.column)
            names += [str(tok)] if count is None else [f"{tok}#{i}" for i in range(int(count))]
        first = pos_tok or body.name
        op = Op(name=_op_name(body.name), results=names, location=loc, line=first.line,
                column=first.column)
        if isinstance(body, _Generic):
            op.operands = [_use(t) for t in body.operands]
            op.attributes = body.attrs
            op.regions = body.regions
            op.operand_types = list(body.ftype.inputs)
            op.result_types = list(body.ftype.results)
        else:
            op.form = "custom"
            form = A.Form(op.name, body.entries, body.sig, body.labeled, len(names))
            try:
                fields = A.custom_form(form)
            except (A.FormError, ValueError, IndexError, TypeError) as e:
                msg = str(e) if isinstance(e, A.FormError) else \
                    f"{op.name}: cannot read this custom form ({type(e).__name__}: {e})"
                raise StableHLOSyntaxError(msg, op.line, op.column) from None
            for k, v in fields.items():
                setattr(op, k, v)
        if op.results and len(op.result_types) != len(op.results):
            raise StableHLOSyntaxError(f"{op.name} defines {len(op.results)} result(s) but its "
                                       f"type has {len(op.result_types)}", op.line, op.column)
        return op

    def results(self, c):
        return _Results(c)

    def result(self, c):
        return (c[0], c[1] if len(c) > 1 else None)

    def generic_op(self, c):
        name = c[0]
        operands, attrs, regions, ftype = [], {}, [], None
        for x in c[1:]:
            if isinstance(x, Token):
                operands.append(x)
            elif isinstance(x, _Props):
                attrs.update(x)
            elif isinstance(x, _Regions):
                regions = list(x)
            elif isinstance(x, dict):
                attrs.update(x)
            elif isinstance(x, FunctionType):
                ftype = x
        return _Generic(name, operands, attrs, regions, ftype)

    def properties(self, c):
        return _Props(c[0])

    def regions(self, c):
        return _Regions(c)

    def custom_op(self, c):
        name, entries, sig, labeled = c[0], [], None, []
        for x in c[1:]:
            if isinstance(x, list) and not isinstance(x, A.Entry):
                entries = x
            elif isinstance(x, tuple) and len(x) == 2 and x[0] == "sig":
                sig = x[1]
            elif isinstance(x, tuple):
                labeled.append(x)
        # MLIR prints an op's custom operands on one line: text on a later line means the
        # op's ':' and types are missing and the next op was read into it
        later = sorted(p for e in entries for p in getattr(e, "positions", ())
                       if p[0] != name.line)
        if later:
            raise StableHLOSyntaxError(f"expected ':' and the types of {name} before the end "
                                       f"of line {name.line}", *later[0])
        return _Custom(name, entries, sig, labeled)

    def op_name(self, c):
        return c[0]

    def custom_args(self, c):
        return list(c)

    def labeled_region(self, c):
        return (str(c[0]), list(c[1:-1]), c[-1])

    def type_sig(self, c):
        return ("sig", (c[0], c[1] if len(c) > 1 else None))

    def sig_part(self, c):
        return c[0] if len(c) == 1 and isinstance(c[0], list) else list(c)

    def type_group(self, c):
        return list(c)

    # --- regions --------------------------------------------------------------------------
    def region(self, c):
        blocks, entry_ops = [], []
        for x in c:
            if isinstance(x, Block):
                blocks.append(x)
            else:
                entry_ops.append(x)
        if entry_ops or not blocks:
            blocks.insert(0, Block([], entry_ops))
        return Region(blocks)

    def block(self, c):
        b = Block([], [], str(c[0]))
        for x in c[1:]:
            (b.args if isinstance(x, BlockArg) else b.ops).append(x)
        return b

    def block_arg(self, c):
        return BlockArg(str(c[0]), c[1], c[2] if len(c) > 2 else None)

    # --- custom-form entries ----------------------------------------------------------------
    def top_entry(self, c):
        e = A.Entry(_atom(x) for x in c)
        e.positions = [(x.line, x.column) for x in c if isinstance(x, Token)]
        return e

    def entry(self, c):
        return A.Entry(_atom(x) for x in c)

    def eq(self, c):
        return A.EQ

    def colon(self, c):
        return A.COLON

    def paren(self, c):
        return A.Group("(", list(c))

    def bracket(self, c):
        return A.Group("[", list(c))

    def angle(self, c):
        return A.Group("<", list(c))

    def brace(self, c):
        return A.Brace(list(c))

    def brace_item(self, c):
        key = unquote(c[0]) if c[0].type == "STRING" else str(c[0])
        return (key, [_atom(x) for x in c[2:]] if len(c) > 1 else None)

    # --- attributes -----------------------------------------------------------------------
    def attr_dict(self, c):
        return dict(c)

    def attr_entry(self, c):
        key = unquote(c[0]) if c[0].type == "STRING" else str(c[0])
        return (key, c[1] if len(c) > 1 else UNIT)

    def attr_value(self, c):
        v = _atom(c[0])
        if len(c) == 1:
            if isinstance(v, A.Word) and v == "unit":
                return UNIT
            return v
        ty = c[1]
        if isinstance(v, A.DenseLiteral):
            try:
                return A.dense_elements(v, ty)
            except ValueError:
                return v  # an element type nxpy does not have: kept undecoded
        if isinstance(v, bool):
            return v
        if isinstance(v, int):
            return Integer(v, ty)
        if isinstance(v, float):
            return Float(v, ty)
        return v

    def list_attr(self, c):
        return list(c)

    def dialect_attr(self, c):
        name = str(c[0])[1:-1]
        try:
            return A.decode_dialect(name, list(c[1:]))
        except A.FormError as e:
            raise StableHLOSyntaxError(f"#{name}<...>: {e}", c[0].line, c[0].column) from None

    def attr_ref(self, c):
        return Word(str(c[0]))

    def dense(self, c):
        return A.DenseLiteral(_dense_value(c[0]) if c else None)

    def dense_list(self, c):
        return [_dense_value(x) for x in c]

    def dense_complex(self, c):
        return (_dense_value(c[0]), _dense_value(c[1]))

    def array(self, c):
        return DenseArray([_atom(x) for x in c[1:]], c[0])

    # --- types ----------------------------------------------------------------------------
    def type(self, c):
        return c[0]

    def scalar_type(self, c):
        return ScalarType(str(c[0]))

    def tensor_type(self, c):
        dims, rest = (), list(c)
        if isinstance(rest[0], Token) and rest[0].type == "DIMS":
            dims = tuple(None if d == "?" else int(d) for d in rest[0].split("x")[:-1])
            rest = rest[1:]
        elem = rest[0]
        enc = _atom(rest[1]) if len(rest) > 1 else None
        return TensorType(dims, elem, enc)

    def complex_type(self, c):
        return ComplexType(c[0])

    def tuple_type(self, c):
        return TupleType(tuple(c))

    def opaque_type(self, c):
        return OpaqueType(str(c[0]))

    def function_type(self, c):
        outs = c[1] if isinstance(c[1], list) else [c[1]]
        return FunctionType(tuple(c[0]), tuple(outs))

    # --- locations ------------------------------------------------------------------------
    def loc(self, c):
        return c[0]

    def loc_unknown(self, c):
        return UnknownLoc()

    def loc_file(self, c):
        file, line, col = unquote(c[0]), int(c[1]), int(c[2])
        end_line = end_col = None
        ints = [int(x) for x in c[3:] if x.type == "INT"]
        if len(ints) == 1:
            end_line, end_col = line, ints[0]
        elif len(ints) == 2:
            end_line, end_col = ints
        return FileLoc(file, line, col, end_line, end_col)

    def loc_name(self, c):
        return NameLoc(unquote(c[0]), c[1] if len(c) > 1 else None)

    def loc_callsite(self, c):
        return CallSiteLoc(c[0], c[1])

    def loc_fused(self, c):
        locs = tuple(x for x in c if isinstance(x, Location))
        meta = next((x for x in c if not isinstance(x, Location)), None)
        return FusedLoc(locs, _atom(meta) if meta is not None else None)

    def loc_ref(self, c):
        return LocRef(str(c[0]))


def _op_name(tok):
    if tok.type == "STRING":
        return unquote(tok)
    return {"return": "func.return", "call": "func.call"}.get(str(tok), str(tok))


def _dense_value(x):
    if isinstance(x, Token):
        if x.type == "STRING":
            return unquote(x)
        return _atom(x)
    return x


# ----------------------------------------------------------------------------------------
# The parser and its errors
# ----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def parser() -> Lark:
    """The lark LALR parser (built once per process)."""
    return Lark(GRAMMAR, parser="lalr", lexer="contextual", transformer=_Build(),
                maybe_placeholders=False)


_READABLE = {
    "VALUE_ID": "a value (%name)", "BLOCK_ID": "a block label (^bb0)",
    "SYMBOL": "a symbol (@name)", "DIALECT_OPEN": "a dialect attribute (#dialect<...>)",
    "HASH_ID": "an alias (#name)", "BANG_ID": "a dialect type (!dialect.type)",
    "OP_NAME": "an op name", "BARE_ID": "an identifier", "DIMS": "tensor dimensions (2x3x)",
    "HEX": "a hex number", "FLOAT": "a float", "INT": "an integer", "STRING": "a string",
    "VISIBILITY": "a visibility (public, private)", "$END": "end of input",
}


def _describe(name: str) -> str:
    if name in _READABLE:
        return _READABLE[name]
    try:
        pat = parser().get_terminal(name).pattern
    except KeyError:
        return name
    if isinstance(pat, lark.lexer.PatternStr):
        return repr(pat.value)
    return name.lower()


def _expected(names) -> list:
    names = set(names)
    # an op can start with a value, a string or an op name: say "an op" once
    op_starts = {"VALUE_ID", "STRING", "OP_NAME", "RETURN", "CALL"}
    out = []
    if op_starts <= names:
        names -= op_starts
        out.append("an op")
    out = sorted({_describe(n) for n in names}) + out
    return out


def _or(items):
    if not items:
        return "something else"
    if len(items) == 1:
        return items[0]
    return ", ".join(items[:-1]) + " or " + items[-1]


def _accepted(e) -> set:
    """The terminals the parser would really accept at the error (LALR's lookahead sets
    are merged between states, so ``e.expected`` can list more)."""
    ip = getattr(e, "interactive_parser", None)
    if ip is not None:
        try:
            return set(ip.accepts())
        except Exception:  # fall back to lark's own list
            pass
    return set(getattr(e, "expected", None) or getattr(e, "allowed", None) or ())


def _syntax_error(e: lark.exceptions.UnexpectedInput, text: str) -> StableHLOSyntaxError:
    lines = text.splitlines() or [""]
    line, col = getattr(e, "line", None), getattr(e, "column", None)
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        acc = _accepted(e)
        expected = _expected(acc - {"$END"}) + (["end of input"] if "$END" in acc else [])
        got = repr(text[e.pos_in_stream]) if e.pos_in_stream < len(text) else "end of input"
        msg = f"unexpected character {got}; expected {_or(expected)}"
    elif isinstance(e, lark.exceptions.UnexpectedEOF) or (
            isinstance(e, lark.exceptions.UnexpectedToken) and e.token.type == "$END"):
        expected = _expected(_accepted(e) - {"$END"})
        msg = f"unexpected end of input; expected {_or(expected)}"
        line, col = len(lines), len(lines[-1]) + 1
    else:
        expected = _expected(_accepted(e))
        msg = f"unexpected {str(e.token)!r}; expected {_or(expected)}"
    src = lines[line - 1] if line is not None and 0 < line <= len(lines) else None
    return StableHLOSyntaxError(msg, line, col, expected, src)


def parse(text: str) -> Module:
    """Parses an MLIR module (or bare ``func.func`` definitions) as nxpy and JAX print
    them; raises :class:`StableHLOSyntaxError` with the position of the first error."""
    if not isinstance(text, str):
        raise TypeError(f"parse expects the module text as a str, got {type(text).__name__}")
    try:
        module = parser().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise _syntax_error(e, text) from None
    except StableHLOSyntaxError as e:
        if e.line is not None and e.source_line is None:
            lines = text.splitlines()
            if 0 < e.line <= len(lines):
                raise StableHLOSyntaxError(e.message, e.line, e.column, e.expected,
                                           lines[e.line - 1]) from None
        raise
    module.source = text
    return module
