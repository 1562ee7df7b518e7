"""Expr: the graph a defn traces into, and the Expr backend that records it.

Inside a trace every op dispatches to :class:`ExprBackend`, which creates an
:class:`Expr` node instead of computing. Node ids grow monotonically, so sorting the
nodes of a scope by id is a topological order. A sub-function (a cond branch, a while
body) is an :class:`Fn` traced in its own :class:`Scope`; the outer nodes it uses are
its ``captures``.
"""
from __future__ import annotations

import itertools

import numpy as np

from .. import _context
from ..backend import Backend
from ..format import format_array
from ..ops import primitive, to_tensor
from ..ops.core import PORTABLE
from ..tensor import Tensor, shape_str
from ..types import convert
from . import tree as tree_mod

__all__ = ["Expr", "Scope", "Fn", "ExprBackend", "EXPR", "trace_fn", "format_graph", "EFFECTS",
           "has_effects"]

_ids = itertools.count()

primitive("graph", "parameter", "elem")

#: ops run for their side effect (a host callback): a scope keeps each such node even when
#: nothing uses its result, and compilers run them in program order
EFFECTS = {"hook"}


class Expr:
    """One node: ``op`` applied to ``args`` (tensors, lists of tensors, nodes or static
    values) with static ``attrs``; ``fns`` are sub-functions; ``outs`` is set instead of
    shape/type on nodes with several results (read them with ``elem`` nodes)."""

    __slots__ = ("id", "op", "args", "attrs", "shape", "type", "names", "scope", "fns", "outs")

    def __init__(self, op, args, attrs, shape, type, names, scope, fns=(), outs=None):
        self.id = next(_ids)
        self.op = op
        self.args = args
        self.attrs = attrs
        self.shape = shape
        self.type = type
        self.names = names
        self.scope = scope
        self.fns = fns
        self.outs = outs

    def deps(self):
        """The nodes this node reads, in order (sub-function captures last)."""
        out = []
        for a in self.args:
            _collect(a, out)
        for fn in self.fns:
            out.extend(fn.captures)
        return out

    def tensor_args(self):
        out = []
        for a in self.args:
            _collect(a, out)
        return out

    def __repr__(self):
        return f"<Expr {self.id} {self.op} {self.type}{shape_str(self.shape or ())}>"


def _collect(a, out):
    if isinstance(a, Tensor):
        if isinstance(a.data, Expr):
            out.append(a.data)
    elif isinstance(a, Expr):
        out.append(a)
    elif isinstance(a, (list, tuple)):
        for x in a:
            _collect(x, out)


class Scope:
    """One level of tracing: the top of a defn, or a sub-function inside it."""

    _ids = itertools.count()

    def __init__(self, parent=None, expand=None):
        self.id = next(Scope._ids)
        self.parent = parent
        self.effects = []  # nodes of EFFECTS ops recorded here, in program order
        self.backend = EXPR
        #: built-in ops recorded as their portable implementation (``nxpy.ops.core.PORTABLE``)
        #: rather than as one node: those the target compiler has no rule for (see
        #: :func:`nxpy.defn.core.expansions`); sub-functions inherit the set
        self.expand = expand if expand is not None else (
            parent.expand if parent is not None else frozenset())
        #: the closed functions ``nxpy.defn.call`` traced in this program, by what selects
        #: them (function, argument templates, static keywords): one per program
        self.calls = parent.calls if parent is not None else {}

    def __enter__(self):
        _context.stack().append(self)
        return self

    def __exit__(self, *exc):
        _context.stack().pop()


class Fn:
    """A traced function: parameter tensors, flat output tensors with their container
    ``tree``, and the outer nodes it captures."""

    __slots__ = ("params", "outputs", "tree", "scope", "captures", "_nodes", "cache", "where",
                 "donated", "donated_where")

    def __init__(self, params, outputs, tree, scope):
        self.where = None  # where the function was traced from, for error messages
        #: the parameters (flat positions) the caller donates: a compiler may reuse their
        #: memory for results (EXLA aliases each to an output of the same shape and type)
        self.donated = ()
        self.donated_where = None  # how a donation error names the function
        self.params = params
        self.outputs = outputs
        self.tree = tree
        self.scope = scope
        self.cache = {}  # per-compiler derived data (the Evaluator's Plan, ...)
        self.finalize()

    def finalize(self):
        """Recomputes the node list and captures (after outputs changed)."""
        seen, caps, nodes = set(), {}, []
        stack = [t.data for t in self.outputs] + list(self.scope.effects)
        while stack:
            e = stack.pop()
            if e.id in seen:
                continue
            seen.add(e.id)
            if e.scope is not self.scope:
                caps[e.id] = e
                continue
            nodes.append(e)
            stack.extend(e.deps())
        nodes.sort(key=lambda e: e.id)
        self._nodes = nodes
        self.captures = [caps[k] for k in sorted(caps)]
        if getattr(self, "cache", None):
            self.cache.clear()

    @property
    def nodes(self):
        """The scope's nodes reachable from the outputs, in topological order."""
        return self._nodes

    @property
    def templates(self):
        return [(t.shape, t.type, t.names) for t in self.outputs]


def has_effects(fn: Fn) -> bool:
    """Whether ``fn`` or a sub-function of it runs an :data:`EFFECTS` op."""
    v = fn.cache.get("has_effects")
    if v is None:
        v = fn.cache["has_effects"] = any(e.op in EFFECTS or any(has_effects(f) for f in e.fns)
                                          for e in fn.nodes)
    return v


def trace_fn(fun, templates, *, tree=None, parent=None, wrap_output=None, expand=None) -> Fn:
    """Traces ``fun`` in a new scope with one parameter per template (rebuilt into
    ``tree`` when given); outputs may be any container of tensors and numbers. Ops in
    ``expand`` are traced as their portable implementations (default: the parent's set)."""
    scope = Scope(parent, expand)
    with scope:
        params = [EXPR.parameter(Tensor(None, s, t, n), index=i)
                  for i, (s, t, n) in enumerate(templates)]
        args = tree_mod.unflatten(tree, params) if tree is not None else params
        result = fun(*args) if tree is None else fun(args)
        if wrap_output is not None:
            result = wrap_output(result)
        leaves, out_tree = tree_mod.flatten(result)
        outputs = [EXPR.lift(x, f"output {i}") for i, x in enumerate(leaves)]
    return Fn(params, outputs, out_tree, scope)


# ----------------------------------------------------------------------------------------
# The backend
# ----------------------------------------------------------------------------------------
class ExprBackend(Backend):
    """Records every op as an :class:`Expr` node in the current scope."""

    name = "expr"
    priority = 100
    is_expr = True

    def _new(self, op, out, args, attrs, fns=(), outs=None) -> Tensor:
        scope = _context.current()
        if scope is None:
            raise RuntimeError(f"an Expr tensor was used outside of its defn (op {op!r}): "
                               f"Expr tensors exist only while a defn is being traced; "
                               f"return the value from the defn instead of keeping it")
        e = Expr(op, args, attrs, out.shape, out.type, out.names, scope, fns, outs)
        check = _context._local.node_check
        if check is not None:
            check(e)
        return Tensor(e, out.shape, out.type, out.names, self)

    def node(self, op, out, *args, fns=(), **attrs) -> Tensor:
        """A node of any op (the generic entry used by ``dispatch`` and kernels)."""
        if "fun" in attrs:  # an op taking a reduction function (reduce, window_reduce)
            return self._fun_node(op, out, list(args), attrs)
        return self._new(op, out, list(args), attrs, fns)

    def reduce(self, out, *args, **attrs) -> Tensor:
        return self._fun_node("reduce", out, list(args), attrs)

    def window_reduce(self, out, *args, **attrs) -> Tensor:
        return self._fun_node("window_reduce", out, list(args), attrs)

    def _fun_node(self, op, out, args, attrs) -> Tensor:
        """A node whose ``fun`` (a function of two scalars of the output type, as Nx's
        ``reduce``/``window_reduce`` take) is traced into its sub-function ``fns[0]``; an
        already traced :class:`Fn` is kept as it is."""
        attrs = dict(attrs)
        fun = attrs.pop("fun")
        if isinstance(fun, Fn):
            return self._new(op, out, args, attrs, (fun,))
        scalar = (), out.type, None
        fn = trace_fn(fun, [scalar, scalar], parent=_context.current())
        if len(fn.outputs) != 1 or fn.outputs[0].shape != ():
            got = [tuple(o.shape) for o in fn.outputs]
            raise ValueError(f"{op}: the reduction function must return one scalar tensor, "
                             f"got shape(s) {got}")
        if fn.captures:
            raise ValueError(f"{op}: the reduction function can only use its two arguments "
                             f"and constants, but it uses {len(fn.captures)} tensor(s) from "
                             f"outside it (as in Nx, pass values in through the arguments)")
        if fn.outputs[0].type != out.type:
            with fn.scope:
                from_t = fn.outputs[0]
                fn.outputs = [self.as_type(Tensor(None, (), out.type), from_t)]
            fn.finalize()
        return self._new(op, out, args, attrs, (fn,))

    def multi(self, op, templates, *args, fns=(), **attrs) -> list[Tensor]:
        """A node with several results; returns one ``elem`` tensor per result."""
        scope = _context.current()
        if scope is not None and op in scope.expand:
            return list(PORTABLE[op]([Tensor(None, s, t, n) for s, t, n in templates],
                                     *args, **attrs))
        e = Expr(op, list(args), attrs, None, None, None, scope, fns, tuple(templates))
        return [self._new("elem", Tensor(None, s, t, n), [e], {"index": i})
                for i, (s, t, n) in enumerate(templates)]

    def parameter(self, out, index):
        return self._new("parameter", out, [], {"index": index})

    def effect(self, op, out, *args, **attrs) -> Tensor:
        """A node of an :data:`EFFECTS` op, kept by its scope whether or not it is used."""
        t = self._new(op, out, list(args), attrs)
        _context.current().effects.append(t.data)
        return t

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)

        def method(out, *args, **attrs):
            scope = _context.current()
            if scope is not None and op in scope.expand:
                return PORTABLE[op](out, *args, **attrs)
            return self._new(op, out, list(args), attrs)
        method.__name__ = op
        object.__setattr__(self, op, method)
        return method

    # --- data in and out ------------------------------------------------------------------
    def constant(self, out, value):
        v = convert(np.asarray(value), out.type)
        return self._new("constant", out, [], {"value": v[()]})

    def from_numpy(self, array, type, names=None):
        arr = np.asarray(array)
        out = Tensor(None, arr.shape, type, names)
        if arr.shape == ():
            return self.constant(out, arr)
        return self._new("tensor", out, [], {"value": arr})

    def from_tensor(self, t):
        if t.backend is self:
            return t
        if t.backend is None:
            raise TypeError(f"a template ({t.type}{shape_str(t.shape)}) has no data and "
                            f"cannot be used in a computation")
        return self.from_numpy(t.to_numpy(), t.type, t.names)

    def lift(self, x, what="value") -> Tensor:
        """Any leaf (tensor, array, number) as an Expr tensor of the current scope."""
        t = to_tensor(x, what)
        return self.from_tensor(t)

    def to_numpy(self, t):
        raise _context.HostOnlyError("to_numpy (reading a tensor's values) is a host-only "
                                     "operation and cannot be called inside a defn: the values "
                                     "do not exist yet while the defn is traced; return the "
                                     "tensor from the defn instead, and use nx.cond / nx.select "
                                     "instead of Python if on tensors")

    def inspect(self, t):
        return "\nNx.Defn.Expr\n" + format_graph([t])


EXPR = ExprBackend()


# ----------------------------------------------------------------------------------------
# Printing
# ----------------------------------------------------------------------------------------
def _letters(n):
    s = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        s = chr(97 + r) + s
    return s


def _fmt_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_value(x) for x in v) + "]"
    if isinstance(v, np.generic) or (isinstance(v, np.ndarray) and v.ndim == 0):
        return format_array(np.asarray(v))
    if isinstance(v, np.ndarray):
        return " ".join(format_array(v, limit=8).split())
    if v is None:
        return "nil"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def _node_nodes(outputs):
    """Nodes of the outputs' scope reachable from them, with outer ones not descended."""
    seen, nodes = set(), []
    stack = [t.data if isinstance(t, Tensor) else t for t in outputs]
    scope = stack[0].scope if stack else None
    while stack:
        e = stack.pop()
        if e.id in seen:
            continue
        seen.add(e.id)
        nodes.append(e)
        if e.scope is scope:
            stack.extend(e.deps())
    nodes.sort(key=lambda e: e.id)
    return nodes


def format_graph(outputs, indent="") -> str:
    """One line per node: ``b = add a, c   f32[2][2]``."""
    names = {}
    lines = []
    _format_into(_node_nodes(outputs), names, lines, indent)
    for t in outputs:  # an output that is a constant has no line of its own
        e = t.data if isinstance(t, Tensor) else t
        if e.op == "constant":
            lines.append((f"{indent}{_ref(e, names)}", f"{e.type}{shape_str(e.shape, e.names)}"))
    width = max((len(left) for left, _ in lines), default=0) + 3
    return "\n".join(left.ljust(width) + right if right else left for left, right in lines)


def _ref(a, names):
    if isinstance(a, Tensor):
        a = a.data
    if isinstance(a, Expr):
        if a.op == "constant":
            return _fmt_value(a.attrs["value"])
        return names.setdefault(a.id, _letters(len(names)))
    if isinstance(a, (list, tuple)) and any(isinstance(x, (Tensor, Expr)) for x in a):
        return "[" + ", ".join(_ref(x, names) for x in a) + "]"
    return _fmt_value(a)


def _format_into(nodes, names, lines, indent):
    for e in nodes:
        if e.op == "constant":
            continue
        ty = f"{e.type}{shape_str(e.shape, e.names)}" if e.outs is None else \
            "{" + ", ".join(f"{t}{shape_str(s)}" for s, t, _ in e.outs) + "}"
        if e.op == "parameter":
            lines.append((f"{indent}parameter {_ref(e, names)}:{e.attrs['index']}", ty))
            continue
        args = [_ref(a, names) for a in e.args]
        attrs = [f"{k}: {_fmt_value(v)}" for k, v in e.attrs.items()]
        left = f"{indent}{_ref(e, names)} = {e.op} {', '.join(args + attrs)}".rstrip()
        lines.append((left, ty))
        for i, fn in enumerate(e.fns):
            lines.append((f"{indent}  fn {i}:", ""))
            _format_into(fn.nodes, names, lines, indent + "    ")
            outs = ", ".join(_ref(t, names) for t in fn.outputs)
            lines.append((f"{indent}    return {outs}", ""))
