"""``load(text)``: a parsed module as an nxpy function.

Calling the :class:`Program` ``load`` returns runs the module's ``@main`` op by op with
nxpy's front-end ops (``nx.add``, ``nx.dot``, ``nx.cond``, ``nx.while_loop``, the
collectives, ...). Under a compiler (``jit``, ``shard_jit``) or ``debug_expr`` that
rebuilds the program as an nxpy Expr graph; called on tensors outside a defn it runs
eagerly.

Each StableHLO op maps to nxpy through one entry of :data:`OPS` (tables for the
elementwise families, a function per structural op). An op nxpy cannot express raises
:class:`UnsupportedOpError` naming the op and where it is in the text.

>>> import nxpy as nx
>>> from nxpy.stablehlo import load
>>> prog = load('''
... func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
...   %c = stablehlo.constant dense<0.0> : tensor<f32>
...   %e = stablehlo.exponential %x : tensor<3xf32>
...   %s = stablehlo.reduce(%e init: %c) applies stablehlo.add across dimensions = [0]
...        : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
...   return %s : tensor<f32>
... }''')
>>> round(prog(nx.tensor([0.0, 0.0, 0.0])).tolist(), 3)
3.0
>>> from nxpy.defn import debug_expr
>>> print(debug_expr(prog)(*prog.templates))
#Nx.Tensor<
  f32
<BLANKLINE>
  Nx.Defn.Expr
  parameter a:0                            f32[3]
  b = exp a                                f32[3]
  c = sum b, axes: [0], keep_axes: false   f32
>
"""
from __future__ import annotations

import re

from .. import _context, ops as nx
from ..defn import debug_expr, jit
from ..tensor import Tensor, shape_str
from . import rules_indexing  # noqa: F401 - registers gather and scatter
from .parser import parse
from .rules import OPS, TERMINATORS, LoadError, Scope, UnsupportedOpError, register_op
from . import rules_complex  # noqa: F401 - registers the complex family's rules
from . import rules_compositions  # noqa: F401 - registers the compositions family's rules
from . import rules_conv, rules_windows  # noqa: F401 - the window family's and conv's rules
# after rules_windows: its reduce_window rule takes the cumulative forms and hands the
# others to the rule registered before it
from . import rules_sorting  # noqa: F401 - the sorting family's importer rules
from . import rules_linalg  # noqa: F401 - custom_call: the LAPACK targets (linear algebra)
# after rules: its while rule reads JAX's scan loops as scan and hands the others back
from . import rules_scan  # noqa: F401 - stablehlo.while in JAX's scan pattern → nxpy.defn.scan
from .sharding import (debug_expr_sharded, identical_meshes, is_sharded, program_mesh,
                       shard_jit_program)
from .syntax import Module, TensorType, TupleType

__all__ = ["load", "Program", "LoadError", "UnsupportedOpError", "OPS", "register_op"]


# ----------------------------------------------------------------------------------------
# Checks at load: what would only fail at the first call otherwise
# ----------------------------------------------------------------------------------------
def _tensor_types(ty):
    if isinstance(ty, TensorType):
        yield ty
    elif isinstance(ty, TupleType):
        for t in ty.types:
            yield from _tensor_types(t)


def _check_types(types, where, at=""):
    for ty in types:
        for t in _tensor_types(ty):
            try:
                t.nx_type
            except ValueError as e:
                raise LoadError(f"{where}: type {t}: {e}{at}") from None


class MissingFunctionError(LoadError, KeyError):
    """The entry function asked for (or ``@main``) is not in the module."""

    __str__ = Exception.__str__


def _inherit_positions(ops, line=None, column=None):
    """Ops the parser made up (the body of a compact ``applies stablehlo.add`` reduce) take
    the position of the op they stand in, so every error names a line."""
    for op in ops:
        if op.line is None and line is not None:
            op.line, op.column = line, column
        for r in op.regions:
            for b in r.blocks:
                _inherit_positions(b.ops, op.line, op.column)


def func_where(f) -> str:
    """``@name`` and the line of its definition, for errors about a function."""
    return f"@{f.name}" + (f" at line {f.line}, column {f.column}" if f.line is not None else "")


def _check_module(module):
    """Every element type of every function and op maps to an nxpy type, and every op
    has an importer rule: a module nxpy cannot run is rejected by ``load``, naming the
    op or function and its position, not at the first call."""
    aliases = getattr(module, "aliases", None)
    for f in module.funcs:
        if f.body is not None:
            for b in f.body.blocks:
                _inherit_positions(b.ops, f.line, f.column)
        at = f" (@{f.name} is at line {f.line}, column {f.column})" if f.line is not None else ""
        _check_types([a.type for a in f.args] + [r.type for r in f.results], f"@{f.name}", at)
        for op in f.walk():
            where = f"{op.name} at {op.where(aliases)}"
            if op.name not in OPS and op.name not in TERMINATORS:
                raise UnsupportedOpError(f"{where}: nxpy has no equivalent of {op.name}", op.name)
            _check_types(list(op.operand_types) + list(op.result_types), where)
            for r in op.regions:
                for b in r.blocks:
                    _check_types([a.type for a in b.args], f"{where}, a region argument")


# ----------------------------------------------------------------------------------------
# Programs
# ----------------------------------------------------------------------------------------
#: custom-call targets that call a Python function of the process that compiled the module
#: (jax.debug.print/callback, io_callback, pure_callback; nxpy's print_value, hook and
#: runtime_call)
HOST_CALLBACK = re.compile(r"^xla(_ffi)?(_partitioned)?_python_(cpu|gpu)_callback$")


def host_callbacks(module) -> list:
    """The custom calls of ``module`` (text or parsed) that call back into Python."""
    module = parse(module) if isinstance(module, str) else module
    return [op for op in module.walk() if op.name == "stablehlo.custom_call"
            and HOST_CALLBACK.match(str(op.attributes.get("call_target_name", "")))]


class Program:
    """A module loaded into nxpy: call it like the module's entry function (tensors in,
    a tensor or a tuple of tensors out) under ``jit``, ``shard_jit``, ``debug_expr`` or
    eagerly. ``templates`` are the entry function's argument templates."""

    def __init__(self, module: Module, entry=None, meshes=None):
        self.module = module
        calls = host_callbacks(module)
        if calls:
            op = calls[0]
            raise UnsupportedOpError(
                f"{op.name} at {op.where(module.aliases)}: the module calls back into Python "
                f"({op.attributes.get('call_target_name')}: jax.debug.print/callback, or "
                f"nxpy's print_value/hook/runtime_call); the function it calls belongs to "
                f"the process that compiled the module and cannot be loaded: remove the "
                f"callbacks first",
                op.name)
        try:
            self.func = module.func(entry) if entry else module.main
        except KeyError as e:
            raise MissingFunctionError(e.args[0]) from None
        _check_module(module)
        self.__name__ = f"stablehlo_{self.func.name}"
        self._meshes = dict(meshes or {})
        self._depth = 0

    # --- signature ------------------------------------------------------------------------
    @property
    def templates(self) -> list:
        """``nx.template`` of each argument of the entry function."""
        out = []
        for i, a in enumerate(self.func.args):
            if not isinstance(a.type, TensorType):
                raise LoadError(f"argument {i} ({a.name}) has type {a.type}, not a tensor")
            out.append(nx.template(tuple(a.type.shape), a.type.nx_type))
        return out

    def __call__(self, *args):
        f = self.func
        if len(args) != len(f.args):
            raise TypeError(f"{self.__name__}: @{f.name} takes {len(f.args)} argument(s), "
                            f"got {len(args)}")
        vals = []
        for i, (x, a) in enumerate(zip(args, f.args)):
            x = nx.to_tensor(x, f"argument {i}")
            want = (tuple(a.type.shape), a.type.nx_type)
            if (x.shape, x.type) != want:
                raise ValueError(f"{self.__name__}: argument {i} ({a.name}) must be "
                                 f"{want[1]}{shape_str(want[0])} ({a.type}), got "
                                 f"{x.type}{shape_str(x.shape)}")
            vals.append(x)
        outs = self.run_func(f, vals)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_func(self, f, args, caller=None):
        if f.body is None:
            raise LoadError(f"{func_where(f)} is only declared (it has no body)")
        if self._depth > 64:
            raise LoadError(f"calls nested more than 64 deep at @{f.name} (recursion?)")
        self._depth += 1
        try:
            scope = Scope(self, eager=caller.eager if caller else False)
            if len(f.body.blocks) != 1:
                raise LoadError(f"{func_where(f)} has {len(f.body.blocks)} blocks; nxpy reads "
                                f"functions of one block")
            scope.bind([a.name for a in f.args], list(args))
            outs = scope.run_ops(f.body.blocks[0].ops)
        finally:
            self._depth -= 1
        if len(outs) != len(f.results):
            raise LoadError(f"{func_where(f)} returns {len(outs)} value(s) but declares "
                            f"{len(f.results)} result(s)")
        for i, (v, r) in enumerate(zip(outs, f.results)):
            if isinstance(r.type, TensorType) and isinstance(v, Tensor):
                if (v.shape, v.type) != (tuple(r.type.shape), r.type.nx_type):
                    raise LoadError(f"{func_where(f)} returns {v.type}{shape_str(v.shape)} as "
                                    f"result "
                                    f"{i}, declared {r.type}")
        return outs

    # --- compilers ------------------------------------------------------------------------
    def jit(self, compiler=None, **opts):
        """``nxpy.defn.jit`` of this program."""
        return jit(self, compiler=compiler, **opts)

    def debug_expr(self, *args):
        """The program's Expr graph (traced on ``args``, default: the templates; sharded
        modules are traced at global shapes under their mesh, as ``shard_jit`` does)."""
        if is_sharded(self):
            return debug_expr_sharded(self)
        return debug_expr(self)(*(args or self.templates))

    def shard_jit(self, compiler=None, mesh=None, **opts):
        """``nxpy.defn.shard_jit`` of this program with the module's mesh and argument and
        result shardings: the callable takes one list of local shards per device."""
        return shard_jit_program(self, compiler, mesh, **opts)

    def mesh(self, name=None):
        """The ``nx.Mesh`` for the module's ``sdy.mesh`` ``name`` (default: the only one)."""
        return program_mesh(self, name)

    def with_meshes(self, meshes) -> "Program":
        """The same program with ``meshes`` (sdy.mesh name → ``nx.Mesh``) added; a mesh
        given for one name is used for every identical ``sdy.mesh`` definition."""
        kept = dict(self._meshes)
        names = {m.name for m in self.module.meshes}
        for name in meshes:
            for same in identical_meshes(self.module, name) if name in names else [name]:
                kept.pop(same, None)
        return Program(self.module, self.func.name, {**kept, **meshes})

    def __repr__(self):
        return (f"<Program @{self.func.name}: {len(self.func.args)} argument(s), "
                f"{len(self.func.results)} result(s)>")


def load(text, entry=None, meshes=None, *, check=True) -> Program:
    """Parses ``text`` (or takes a parsed :class:`~nxpy.stablehlo.syntax.Module`) and
    returns it as a :class:`Program`. ``entry`` picks the function (default ``@main``);
    ``meshes`` maps ``sdy.mesh`` names to ``nx.Mesh`` objects to use for them (default:
    meshes of the module's shape on the first devices).

    A module nxpy cannot run fails here, not at the first call: element types nxpy lacks
    and ops without an importer rule always; with ``check`` (the default) the entry
    function of an unsharded module is also traced once on its templates (nothing is
    compiled or run), so types the module declares inconsistently are reported too."""
    module = text if isinstance(text, Module) else parse(text)
    prog = Program(module, entry, meshes)
    if check and not is_sharded(prog) and not _context.tracing():
        debug_expr(prog)(*prog.templates)
    return prog
