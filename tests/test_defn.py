"""defn / jit / compile / debug_expr, the Evaluator, the EXLA compiler, cond and while_loop,
and the errors of all of them.

Results are checked against plain NumPy / Python computations of the same function.
"""
from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import nxpy as nx
import nxpy.defn as D
from nxpy import _context
from nxpy.compilers.evaluator import Evaluator
from nxpy import pjrt
from nxpy.compilers.exla import to_mlir
from nxpy.backends.numpy import NumpyBackend
from nxpy.defn import compile, debug_expr, default_options, defn, jit
from nxpy.stablehlo import parse

from helpers import COMPILERS, default_backend


@pytest.fixture(autouse=True)
def _clean_defaults():
    old_b = nx.default_backend("numpy")
    old_o = default_options()
    try:
        yield
    finally:
        nx.default_backend(old_b)
        default_options(**old_o)


def same(t, want, type=None, names=None):
    """``t`` is a tensor equal to ``want`` (a NumPy oracle) with ``type`` if given."""
    assert isinstance(t, nx.Tensor), t
    want = np.asarray(want)
    assert t.shape == want.shape
    if type is not None:
        assert str(t.type) == type
    if names is not None:
        assert t.names == tuple(names)
    np.testing.assert_allclose(np.asarray(t.to_numpy(), np.float64), want.astype(np.float64),
                               rtol=1e-6)


# ----------------------------------------------------------------------------------------
# defn, jit, arguments and outputs
# ----------------------------------------------------------------------------------------
def test_defn_without_and_with_options():
    @defn
    def f(x, y):
        return nx.sum(x * y, axes=[1])

    @defn(compiler="exla")
    def g(x, y):
        return nx.exp(x) / nx.sum(nx.exp(y))

    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    b = np.array([[1.0, 1.0], [2.0, 2.0]], np.float32)
    r = f(nx.tensor(a), nx.tensor(b))
    same(r, (a * b).sum(1), "f32")
    assert r.backend.name == "numpy"  # the Evaluator runs on the default backend
    r = g(nx.tensor(a), nx.tensor(b))
    same(r, np.exp(a) / np.exp(b).sum(), "f32")
    assert r.backend.name == "exla"
    assert f.__name__ == "f" and isinstance(f, D.Jit) and f.compiler is None
    assert g.compiler == "exla"


@pytest.mark.parametrize("compiler", COMPILERS)
def test_jit_function_with_options(compiler):
    def f(x):
        return x * 2 + 1
    j = jit(f, compiler=compiler)
    assert j.fun is f and j.__name__ == "f"
    same(j(nx.tensor([1.0, 2.0])), [3.0, 5.0], "f32")
    assert j(nx.tensor([1.0])).backend.name == ("exla" if compiler == "exla" else "numpy")
    # options of the compiler
    if compiler == "exla":
        r = jit(f, compiler="exla", device_id=1)(nx.tensor([1.0]))
        assert r.device_id == 1 and r.backend.name == "exla"
        same(r, [3.0])
    else:
        r = jit(f, compiler="evaluator", backend="exla")(nx.tensor([1.0]))
        assert r.backend.name == "exla"
        same(r, [3.0])
    # a compiler object works as well as its name
    same(jit(f, compiler=D.compiler.get_compiler(compiler))(nx.tensor(1)), 3, "s32")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_arguments_numbers_arrays_and_containers(compiler):
    @defn(compiler=compiler)
    def f(t, d, n):
        x, ys = t
        return {"sum": x + ys[0] + ys[1] + d["k"], "n": n * 2, "pair": (x, [d["k"]]), "none": None}

    x = nx.tensor([1.0, 2.0])
    out = f((x, [np.array([10.0, 20.0], np.float32), 3]), {"k": 0.5}, 7)
    assert set(out) == {"sum", "n", "pair", "none"}
    same(out["sum"], [14.5, 25.5], "f32")
    same(out["n"], 14, "s32")  # a Python int is an s32 scalar tensor
    assert isinstance(out["pair"], tuple) and isinstance(out["pair"][1], list)
    same(out["pair"][0], [1.0, 2.0])
    same(out["pair"][1][0], 0.5, "f32")
    assert out["none"] is None
    # NumPy arrays keep their dtype; Python numbers become tensors
    same(jit(lambda a, b: a + b, compiler=compiler)(np.arange(3), 1), [1, 2, 3], "s64")
    same(jit(lambda a: a, compiler=compiler)(2.5), 2.5, "f32")
    same(jit(lambda a: a, compiler=compiler)(True), True, "pred")
    # outputs: a Python number is a constant tensor; the same tensor may be returned twice
    r = jit(lambda a: (a, a, 3), compiler=compiler)(nx.tensor([1, 2]))
    same(r[0], [1, 2]) and same(r[1], [1, 2])
    same(r[2], 3, "s32")
    # no arguments at all
    same(jit(lambda: nx.iota((3,)), compiler=compiler)(), [0, 1, 2], "s32")


def test_argument_errors_name_the_argument():
    f = jit(lambda x, t: x)
    with pytest.raises(TypeError, match=r"^argument 1 \(t\[0\]\['k'\]\): expected a tensor, a "
                                        r"NumPy array, a jax.Array, a number or a container of "
                                        r"them \(a tuple, list, dict, namedtuple, dataclass or "
                                        r"a class given "
                                        r"to nxpy.defn.register_container\), got str$"):
        f(1, ({"k": "a"},))
    with pytest.raises(TypeError, match=r"argument 0 \(x\): .*got object"):
        f(object(), 1)
    with pytest.raises(OverflowError,
                       match=r"argument 0 \(x\): tensor: integer 1099511627776 does not "
                             r"fit in s32"):
        f(2**40, 1)
    with pytest.raises(TypeError, match=r"argument 1 \(xs\[1\]\): .*got str"):
        jit(lambda *xs: xs[0])(1, "a")


def test_wrong_number_of_arguments():
    @defn
    def f(x, y):
        return x + y
    with pytest.raises(TypeError, match="^f: missing a required argument: 'y'$"):
        f(nx.tensor(1))
    with pytest.raises(TypeError, match="^f: too many positional arguments$"):
        f(1, 2, 3)
    with pytest.raises(TypeError, match="^f: got an unexpected keyword argument 'z'$"):
        f(1, 2, z=3)
    same(f(1, y=np.array(2, np.int32)), 3, "s32")  # tensor keyword arguments are arguments
    assert f.trace_count == 1


def test_static_keyword_arguments_are_part_of_the_cache_key():
    @defn
    def f(x, scale=2, mode="add", axes=None):
        r = x * scale
        return r + 1 if mode == "add" else nx.sum(r, axes=axes)

    x = nx.tensor([[1, 2], [3, 4]])
    same(f(x), [[3, 5], [7, 9]], "s32")
    same(f(x, scale=3), [[4, 7], [10, 13]], "s32")
    same(f(x, scale=3), [[4, 7], [10, 13]], "s32")
    assert f.trace_count == 2
    # 1, 1.0 and True are equal in Python but trace differently
    same(f(x, scale=1), [[2, 3], [4, 5]], "s32")
    same(f(x, scale=1.0), [[2.0, 3.0], [4.0, 5.0]], "f32")
    same(f(x, scale=True), [[2, 3], [4, 5]], "s32")
    assert f.trace_count == 5
    # lists (unhashable) are compared by content
    same(f(x, mode="sum", axes=[0]), [8, 12], "s32")
    same(f(x, mode="sum", axes=[1]), [6, 14], "s32")
    same(f(x, mode="sum", axes=[1]), [6, 14], "s32")
    assert f.trace_count == 7
    with pytest.raises(TypeError, match="f: keyword argument scale is static .* must be "
                                        "hashable.*set"):
        f(x, scale={1})
    with pytest.raises(TypeError, match="f: keyword argument axes holds a tensor inside a "
                                        "container"):
        f(x, axes=[nx.tensor(1)])
    # a tensor keyword argument is a parameter: new values do not retrace
    same(f(x, scale=nx.tensor(10)), [[11, 21], [31, 41]], "s32")
    same(f(x, scale=nx.tensor(20)), [[21, 41], [61, 81]], "s32")
    assert f.trace_count == 8


def test_cache_per_function_templates_and_options():
    calls = []

    @defn
    def f(x):
        calls.append(1)
        return x + 1

    a = nx.tensor([1.0, 2.0])
    f(a)
    f(nx.tensor([5.0, 6.0]))
    f(np.array([5.0, 6.0], np.float32))  # a NumPy array of the same template
    assert f.trace_count == 1 and len(calls) == 1
    f(nx.tensor([1.0, 2.0, 3.0]))  # new shape
    assert f.trace_count == 2
    f(nx.tensor([1, 2]))  # new type
    assert f.trace_count == 3
    # names are part of the template: they decide the result's names
    r = f(nx.tensor([1.0, 2.0], names=["i"]))
    assert f.trace_count == 4 and r.names == ("i",)
    assert f(a).names == (None,)
    assert f.trace_count == 4
    # containers of the same leaves but another structure retrace
    g = jit(lambda t: t[0])
    g((a, a))
    g([a, a])
    assert g.trace_count == 2
    # the default options are part of the key
    default_options(compiler="exla")
    assert f(a).backend.name == "exla"
    assert f.trace_count == 5
    default_options(compiler="evaluator")
    assert f(a).backend.name == "numpy"
    assert f.trace_count == 5
    # the cache is per process and per function: another jit of the function reuses it
    h = jit(f.fun)
    h(a)
    assert h.trace_count == 0 and f.trace_count == 5


def test_defn_calling_defn_inlines():
    @defn(compiler="exla")
    def inner(x):
        return x * 3

    @defn
    def outer(x):
        return inner(x) + inner(x + 1)

    same(outer(nx.tensor([1.0, 2.0])), [9.0, 15.0], "f32")
    assert inner.trace_count == 0 and outer.trace_count == 1
    text = str(debug_expr(outer)(nx.template((2,), "f32")))
    assert [line.split()[2] for line in text.splitlines()[5:-1]] == [
        "multiply", "add", "multiply", "add"]
    # a compiled (ahead of time) function inlines as well
    c = compile(inner, nx.template((), "f32"))
    same(jit(lambda x: c(x) + 1)(nx.tensor(2.0)), 7.0, "f32")
    with pytest.raises(ValueError, match=r"argument 0 \(x\): expected f32, got s32"):
        jit(lambda x: c(x))(nx.tensor(1))


def test_hot_path_runs_without_tracing():
    f = jit(lambda x, y: x * 2 + y, compiler="exla")
    x = nx.tensor(np.ones((4, 4), np.float32))
    y = nx.backend_transfer(x, "exla")
    same(f(x, y), np.full((4, 4), 3.0))
    assert len(f._fast) == 1 and f.trace_count == 1
    for _ in range(3):
        same(f(x, y), np.full((4, 4), 3.0))
    assert f.trace_count == 1
    # a tensor with other names misses the fast path, retraces, and gets its own names
    r = f(nx.tensor(np.ones((4, 4), np.float32), names=["a", "b"]), y)
    assert r.names == ("a", "b") and f.trace_count == 2
    assert f(x, y).names == (None, None)


# ----------------------------------------------------------------------------------------
# compile (ahead of time)
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_compile_ahead_of_time(compiler):
    def f(x, t):
        return x * t[0] + t[1]["z"]

    c = compile(f, nx.template((2,), "f32"),
                (nx.template((), "f32"), {"z": nx.template((2,), "f32")}), compiler=compiler)
    r = c(nx.tensor([1.0, 2.0]), (nx.tensor(3.0), {"z": np.array([1.0, 1.0], np.float32)}))
    same(r, [4.0, 7.0], "f32")
    assert r.backend.name == ("exla" if compiler == "exla" else "numpy")
    with pytest.raises(ValueError, match=r"^argument 0 \(x\): expected f32\[2\], got f32\[3\] "
                                         r"\(compiled ahead of time for fixed shapes and types\)$"):
        c(nx.tensor([1.0, 2.0, 3.0]), (nx.tensor(3.0), {"z": nx.tensor([1.0, 1.0])}))
    with pytest.raises(ValueError, match=r"^argument 1 \(t\[1\]\['z'\]\): expected f32\[2\], "
                                         r"got s32\[2\]"):
        c(nx.tensor([1.0, 2.0]), (nx.tensor(3.0), {"z": nx.tensor([1, 1])}))
    with pytest.raises(ValueError, match=r"argument 1 \(t\[0\]\): expected f32, got f64"):
        c(nx.tensor([1.0, 2.0]), (np.float64(3.0), {"z": nx.tensor([1.0, 1.0])}))
    with pytest.raises(TypeError, match=r"^f: compiled for arguments structured as \(tensor, "
                                        r"\(tensor, \{'z': tensor\}\)\), got \(tensor, \(tensor, "
                                        r"\{'y': tensor\}\)\)$"):
        c(nx.tensor([1.0, 2.0]), (nx.tensor(3.0), {"y": nx.tensor([1.0, 1.0])}))
    with pytest.raises(TypeError, match=r"^f: expected 2 arguments \(as compiled\), got 1$"):
        c(nx.tensor([1.0, 2.0]))


def test_compile_details():
    # example tensors and numbers work as templates; compile(jit) uses its compiler
    j = jit(lambda x, n: x + n, compiler="exla")
    c = compile(j, nx.tensor([1, 2]), 5)
    r = c(nx.tensor([10, 20]), 1)
    same(r, [11, 21], "s32")
    assert r.backend.name == "exla"
    with pytest.raises(ValueError, match=r"argument 1 \(n\): expected s32, got f32"):
        c(nx.tensor([10, 20]), 1.0)
    with pytest.raises(TypeError, match="compile: <lambda> cannot be called with the 1 "
                                        "templates given: missing a required argument: 'y'"):
        compile(lambda x, y: x, nx.template((), "f32"))
    with pytest.raises(ValueError, match="unknown option 'foo' for compiler 'exla'"):
        compile(lambda x: x, nx.template((), "f32"), compiler="exla", foo=1)
    # nothing runs at compile time: a template-only trace
    seen = []
    c = compile(lambda x: seen.append(x.shape) or x, nx.template((3,), "u8"))
    assert seen == [(3,)]
    same(c(nx.tensor([1, 2, 3], type="u8")), [1, 2, 3], "u8")
    assert seen == [(3,)]


# ----------------------------------------------------------------------------------------
# debug_expr and printing
# ----------------------------------------------------------------------------------------
def test_debug_expr_prints_the_graph():
    def f(x, y):
        return nx.sum(x * y + 1, axes=[1])

    t = debug_expr(f)(nx.template((2, 2), "f32"), nx.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert isinstance(t, nx.Tensor) and isinstance(t.data, D.Expr)
    assert t.shape == (2,) and str(t.type) == "f32"
    assert str(t) == """\
#Nx.Tensor<
  f32[2]
  
  Nx.Defn.Expr
  parameter a:0                            f32[2][2]
  parameter b:1                            f32[2][2]
  c = multiply a, b                        f32[2][2]
  d = add c, 1.0                           f32[2][2]
  e = sum d, axes: [1], keep_axes: false   f32[2]
>"""  # noqa: W293 - the blank line of the repr is indented
    # containers come back as containers of Expr tensors; names are printed
    out = debug_expr(lambda x: {"a": x + x, "b": (x, -x)})(nx.template((3,), "s8", ["i"]))
    assert set(out) == {"a", "b"}
    assert str(out["a"]).splitlines()[4:] == [
        "  parameter a:0   s8[i: 3]", "  b = add a, a    s8[i: 3]", ">"]
    assert str(out["b"][1]).splitlines()[-2] == "  b = negate a    s8[i: 3]"
    # a constant output is printed as its value; a parameter output as the parameter
    assert str(debug_expr(lambda x: 1)(nx.template((), "f32"))).splitlines()[4] == "  1   s32"
    # debug_expr of a defn works too, and does not compile it
    g = defn(f)
    debug_expr(g)(nx.template((2, 2), "f32"), nx.template((2, 2), "f32"))
    assert g.trace_count == 0


def test_debug_expr_prints_control_flow():
    def f(x, n):
        def body(s):
            i, acc = s
            return i + 1, nx.cond(i > 1, lambda: acc + x, lambda: acc * 2.0)
        return nx.while_loop(lambda s: s[0] < n, body, (0, x))[1]

    text = str(debug_expr(f)(nx.template((2,), "f32"), nx.template((), "s32")))
    assert text == """\
#Nx.Tensor<
  f32[2]
  
  Nx.Defn.Expr
  parameter a:0                 f32[2]
  parameter b:1                 s32
  c = while [0, a]              {s32, f32[2]}
    fn 0:
      parameter d:0             s32
      e = less d, b             pred
      return e
    fn 1:
      parameter f:0             s32
      parameter g:1             f32[2]
      h = add f, 1              s32
      i = greater f, 1          pred
      j = cond i                {f32[2]}
        fn 0:
          k = add g, a          f32[2]
          return k
        fn 1:
          l = multiply g, 2.0   f32[2]
          return l
      m = elem j, index: 0      f32[2]
      return h, m
  n = elem c, index: 1          f32[2]
>"""  # noqa: W293 - as above


# ----------------------------------------------------------------------------------------
# default_options
# ----------------------------------------------------------------------------------------
def test_default_options():
    assert default_options() == {"compiler": "evaluator"}
    f = jit(lambda x: x + 1)
    assert f(nx.tensor(1)).backend.name == "numpy"
    prev = default_options(compiler="exla", device_id=2)
    assert prev == {"compiler": "evaluator"}
    assert default_options() == {"compiler": "exla", "device_id": 2}
    r = f(nx.tensor(1))
    assert r.backend.name == "exla" and r.device_id == 2
    # a Jit's own compiler wins over the defaults
    assert jit(lambda x: x, compiler="evaluator")(nx.tensor(1)).backend.name == "numpy"
    assert default_options(**prev) == {"compiler": "exla", "device_id": 2}
    assert f(nx.tensor(1)).backend.name == "numpy"
    default_options(backend="exla")  # an Evaluator option
    assert f(nx.tensor(1)).backend.name == "exla"
    with pytest.raises(ValueError, match=r"unknown option 'foo' for compiler 'exla': expected "
                                         r"one of \['device_id'\]"):
        default_options(compiler="exla", foo=1)
    with pytest.raises(ValueError, match="unknown compiler 'nope'"):
        default_options(compiler="nope")
    assert default_options() == {"compiler": "evaluator", "backend": "exla"}


def test_unknown_options_and_compilers():
    with pytest.raises(ValueError, match=r"^unknown option 'foo' for compiler 'exla': expected "
                                         r"one of \['device_id'\]$"):
        jit(lambda x: x, compiler="exla", foo=1)
    with pytest.raises(ValueError, match=r"^unknown options 'a', 'b' for compiler 'evaluator'"):
        defn(compiler="evaluator", a=1, b=2)(lambda x: x)
    with pytest.raises(ValueError, match=r"^unknown compiler 'nope': expected one of "
                                         r"\[(.*, )?'evaluator', 'exla'(, .*)?\] "
                                         r"or a Compiler instance$"):
        jit(lambda x: x, compiler="nope")
    with pytest.raises(TypeError, match="compiler must be a name or a Compiler instance"):
        jit(lambda x: x, compiler=3)
    with pytest.raises(ValueError, match=r"option device_id must be an integer in \[0, 8\).* "
                                         r"got 99"):
        jit(lambda x: x, compiler="exla", device_id=99)(nx.tensor(1))


# ----------------------------------------------------------------------------------------
# Host-only operations inside a defn
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("what, fun", [
    ("to_numpy", lambda x: x.to_numpy()),
    ("to_numpy", lambda x: x.tolist()),
    (r"bool\(tensor\) \(a Python if", lambda x: x if x > 0 else -x),
    (r"bool\(tensor\)", lambda x: x and x),
    (r"int\(tensor\)", lambda x: int(x)),
    (r"float\(tensor\)", lambda x: float(x)),
    (r"np.asarray\(tensor\)", lambda x: np.asarray(x)),
    (r"operator.index\(tensor\)", lambda x: [1, 2][x]),
    (r"nx.default_backend\(...\)", lambda x: nx.default_backend("exla")),
    ("nx.backend_transfer", lambda x: nx.backend_transfer(x, "exla")),
    ("nx.backend_copy", lambda x: nx.backend_copy(x)),
    ("debug_expr", lambda x: debug_expr(lambda y: y)(x)),
    (r"default_options\(...\)", lambda x: default_options(compiler="exla")),
])
@pytest.mark.parametrize("compiler", COMPILERS)
def test_host_only_operations_inside_defn(what, fun, compiler):
    with pytest.raises(nx.HostOnlyError, match=f"{what}.* is a host-only operation and cannot be "
                                           f"called inside a defn") as err:
        jit(fun, compiler=compiler)(nx.tensor(1))
    if "bool" in what:  # says what to use instead
        assert "use nx.cond, nx.select or nx.while_loop instead" in str(err.value)
    # the failed trace leaves no state behind
    assert nx.default_backend().name == "numpy"
    assert not _context.stack()
    same(jit(lambda x: x + 1, compiler=compiler)(nx.tensor(1)), 2)


def test_expr_tensors_do_not_escape():
    leaked = []
    jit(lambda x: leaked.append(x) or x)(nx.tensor(1.0))
    with pytest.raises(RuntimeError, match="an Expr tensor was used outside of its defn"):
        leaked[0] + 1
    # reading the shape, type and names is fine
    assert leaked[0].shape == () and str(leaked[0].type) == "f32"


# ----------------------------------------------------------------------------------------
# Errors inside a traced function
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_op_errors_inside_defn(compiler):
    with pytest.raises(ValueError, match=r"^add: cannot broadcast tensor of shape \(2,\) with "
                                         r"tensor of shape \(3,\)$"):
        jit(lambda x, y: x + y, compiler=compiler)(nx.tensor([1, 2]), nx.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"dot: cannot contract axis 1 of shape \(2, 3\)"):
        jit(lambda x: nx.dot(x, x), compiler=compiler)(nx.iota((2, 3)))
    with pytest.raises(TypeError, match="^bitwise_and: expected left operand to have an integer "
                                        "or pred type, got f32$"):
        jit(lambda x: x & 1, compiler=compiler)(nx.tensor([1.0]))
    with pytest.raises(TypeError, match="right_shift: expected right operand to have an integer "
                                        "type, got f64"):
        jit(lambda x, y: x >> y, compiler=compiler)(nx.tensor([1]), np.array([1.0]))


# ----------------------------------------------------------------------------------------
# The Evaluator
# ----------------------------------------------------------------------------------------
class CountingBackend(NumpyBackend):
    """The NumPy backend, counting op calls and tracking which results are still alive."""

    name = "counting"
    OPS = set(nx.UNARY) | set(nx.BINARY) | set(nx.REDUCTIONS) | {
        "constant", "dot", "reshape", "broadcast", "select", "as_type", "slice"}

    def __init__(self):
        self.calls = []
        self.results = []   # weakrefs to every result
        self.alive_at = []  # how many earlier results were alive when each op ran

    def fast_kernel(self, name, out, *args):
        return None  # every op through its (counted) method

    def __getattribute__(self, name):
        attr = object.__getattribute__(self, name)
        if name in CountingBackend.OPS:
            def counted(*args, **kw):
                gc.collect()
                self.alive_at.append(sum(r() is not None for r in self.results))
                self.calls.append(name)
                out = attr(*args, **kw)
                self.results.append(weakref.ref(out))
                return out
            return counted
        return attr


def test_evaluator_evaluates_each_node_once():
    b = CountingBackend()

    @defn(backend=b)
    def f(x):
        a = nx.exp(x)  # used four times
        return nx.sin(a) * nx.cos(a) + a * a

    x = np.array([0.1, 0.2], np.float32)
    r = f(nx.tensor(x))
    a = np.exp(x)
    same(r, np.sin(a) * np.cos(a) + a * a, "f32")
    assert r.backend is b
    assert sorted(b.calls) == sorted(["exp", "sin", "cos", "multiply", "multiply", "add"])
    # a second run evaluates the same nodes again, once each
    f(nx.tensor(x))
    assert len(b.calls) == 12 and f.trace_count == 1


class FastCountingBackend(NumpyBackend):
    """The NumPy backend, counting the fast kernels it hands out and their calls."""

    name = "fast_counting"

    def __init__(self):
        self.asked, self.calls = [], []

    def fast_kernel(self, name, out, *args):
        k = super().fast_kernel(name, out, *args)
        self.asked.append(name)
        if k is None:
            return None

        def counted(*datas):
            self.calls.append(name)
            return k(*datas)
        return counted


def test_evaluator_runs_elementwise_nodes_through_fast_kernels_after_the_first_run():
    b = FastCountingBackend()

    @defn(backend=b)
    def f(x):
        a = nx.exp(x)
        return nx.sin(a) * nx.cos(a) + a * 2.0

    x = nx.tensor(np.array([0.1, 0.2], np.float32))
    a = np.exp(np.float32([0.1, 0.2]))
    expect = np.sin(a) * np.cos(a) + a * np.float32(2.0)
    same(f(x), expect, "f32")
    assert b.calls == [] and sorted(b.asked) == ["add", "cos", "exp", "multiply", "multiply",
                                                 "sin"]
    for _ in range(2):
        same(f(x), expect, "f32")
    assert len(b.calls) == 12 and len(b.asked) == 6  # asked once; constants kept


def test_numpy_fast_kernels_respect_a_subclass_s_own_op():
    class Doubling(NumpyBackend):
        name = "doubling"

        def add(self, out, a, b):
            return super().add(out, a, b) * 2  # the point is a different add

    b = Doubling()
    x = b.from_numpy(np.float32([1.0, 2.0]), nx.types.F32)
    for _ in range(3):
        assert nx.add(x, x).tolist() == [4.0, 8.0]


def test_evaluator_drops_intermediates_after_their_last_use():
    b = CountingBackend()

    @defn(backend=b)
    def chain(x):
        return nx.tanh(nx.cos(nx.sin(nx.negate(nx.exp(x)))))

    x = nx.tensor([0.5, 1.0])
    r = chain(x)
    want = np.tanh(np.cos(np.sin(-np.exp(np.array([0.5, 1.0], np.float32)))))
    same(r, want, "f32")
    assert b.calls == ["exp", "negate", "sin", "cos", "tanh"]
    # when each op runs, only its input (the previous result) is still alive
    assert b.alive_at == [0, 1, 1, 1, 1]
    del r
    gc.collect()
    assert all(w() is None for w in b.results)

    # and the Plan says so: each step releases the previous node
    graph = D.trace(chain.fun, [x])
    plan = Evaluator().plan(graph)
    ops = [e.op for e, _, _ in plan.steps]
    assert ops == ["parameter", "exp", "negate", "sin", "cos", "tanh"]
    ids = [e.id for e, _, _ in plan.steps]
    assert [rel for _, _, rel in plan.steps] == [[], [ids[0]], [ids[1]], [ids[2]], [ids[3]],
                                                 [ids[4]]]
    assert Evaluator().plan(graph) is plan  # computed once per graph


def test_evaluator_keeps_values_needed_later_and_outputs():
    b = CountingBackend()

    @defn(backend=b)
    def f(x):
        a = nx.exp(x)
        c = nx.sin(a)
        d = nx.cos(c)
        return a + d, c  # a lives until the add; c is an output

    x = np.array([0.3], np.float32)
    r1, r2 = f(nx.tensor(x))
    same(r1, np.exp(x) + np.cos(np.sin(np.exp(x))))
    same(r2, np.sin(np.exp(x)))
    assert b.calls == ["exp", "sin", "cos", "add"]
    assert b.alive_at == [0, 1, 2, 3]
    graph = D.trace(f.fun, [nx.tensor(x)])
    rel = {e.op: [r for r in rels] for e, _, rels in Evaluator().plan(graph).steps}
    ids = {e.op: e.id for e, _, _ in Evaluator().plan(graph).steps}
    assert rel["add"] == [ids["exp"], ids["cos"]] or sorted(rel["add"]) == sorted(
        [ids["exp"], ids["cos"]])
    assert ids["sin"] not in sum(rel.values(), [])


def test_evaluator_inside_control_flow_drops_and_reuses():
    b = CountingBackend()

    @defn(backend=b)
    def f(x):
        y = nx.exp(x)  # computed once, outside the loop, captured by the body
        return nx.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] + y), (0, x))[1]

    same(f(nx.tensor([0.0])), [3.0], "f32")
    assert b.calls.count("exp") == 1
    assert b.calls.count("less") == 4 and b.calls.count("add") == 6


def test_evaluator_uses_the_default_backend_at_call_time():
    f = jit(lambda x: x * 2)
    assert f(nx.tensor([1])).backend.name == "numpy"
    with default_backend("exla"):
        r = f(nx.tensor([1]))
        assert r.backend.name == "exla"
        same(r, [2])
    assert f.trace_count == 1


# ----------------------------------------------------------------------------------------
# EXLA
# ----------------------------------------------------------------------------------------
def test_exla_results_stay_on_device_until_read(monkeypatch):
    reads = []
    real = pjrt.to_host
    monkeypatch.setattr(pjrt, "to_host", lambda buf: reads.append(1) or real(buf))
    f = jit(lambda x, y: x * 2 + y, compiler="exla")
    x = nx.tensor(np.ones((4, 4), np.float32))
    r = f(x, x)
    assert r.backend.name == "exla" and r.device_id == 0
    assert not isinstance(r.data, np.ndarray)
    r2 = f(r, r)  # device to device: no host round trip
    r3 = jit(lambda a: nx.sum(a), compiler="exla")(r2)
    assert reads == []
    same(r3, 16 * 9.0)
    assert reads == [1]
    same(r2, np.full((4, 4), 9.0))


def test_exla_executables_are_cached(compiles):

    def fun(x, y):
        return x * 2 + y

    f = jit(fun, compiler="exla")
    x = nx.tensor(np.ones((5, 3), np.float32))
    f(x, x)
    assert len(compiles) == 1
    f(x, x)
    f(nx.tensor(np.zeros((5, 3), np.float32)), x)
    assert len(compiles) == 1
    # the same program from another Jit or from compile() reuses the executable
    jit(fun, compiler="exla")(x, x)
    compile(fun, x, x, compiler="exla")
    assert len(compiles) == 1
    f(nx.tensor(np.ones((5, 4), np.float32)), nx.tensor(np.ones((5, 4), np.float32)))
    assert len(compiles) == 2
    # another device is another executable
    jit(fun, compiler="exla", device_id=3)(x, x)
    assert len(compiles) == 3


def test_to_mlir():
    text = to_mlir(lambda x, y: x * 2 + y, nx.template((4, 4), "f32"), nx.tensor(np.ones((4, 4),
                                                                                  np.float32)))
    m = parse(text)
    assert m.name == "nxpy" and m.main.visibility == "public"
    assert [str(a.type) for a in m.main.args + m.main.results] == ["tensor<4x4xf32>"] * 3
    assert [o.name for o in m.main.body.ops] == [
        "stablehlo.constant", "stablehlo.broadcast_in_dim", "stablehlo.multiply", "stablehlo.add",
        "func.return"]
    assert m.main.body.ops[0].attrs["value"] == 2.0
    # a Jit and static keyword arguments
    j = jit(lambda x, k=1: x + k, compiler="exla")
    module = parse(to_mlir(j, nx.template((2,), "s32"), k=3))
    assert str(module.main.args[0].type) == "tensor<2xi32>"
    # the module the compiler ran is the one to_mlir shows
    module = parse(to_mlir(lambda x: nx.sum(x), nx.template((3,), "s8")))
    assert len(module.find("stablehlo.reduce")) == 1


# ----------------------------------------------------------------------------------------
# cond and while_loop, on both compilers
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_cond_basic_nested_and_containers(compiler):
    @defn(compiler=compiler)
    def f(x):
        return nx.cond(x > 0,
                       lambda: nx.cond(x > 10, lambda: x * 100, lambda: x * 10),
                       lambda: x - 1)

    for v, want in [(-1, -2), (0, -1), (5, 50), (20, 2000)]:
        same(f(nx.tensor(v)), want, "s32")
    assert f.trace_count == 1

    @defn(compiler=compiler)
    def g(x, y):
        return nx.cond(nx.sum(x) > 0,
                       lambda: {"a": x + y, "b": (x, 1)},
                       lambda: {"a": x - y, "b": (-x, 2.5)})
    x, y = np.array([1.0, 2.0], np.float32), np.array([10.0, 20.0], np.float32)
    r = g(nx.tensor(x), nx.tensor(y))
    same(r["a"], x + y, "f32")
    same(r["b"][0], x)
    same(r["b"][1], 1.0, "f32")  # s32 and f32 branches merge to f32
    r = g(nx.tensor(-x), nx.tensor(y))
    same(r["a"], -x - y)
    same(r["b"][0], x)
    same(r["b"][1], 2.5)
    # the predicate may be a pred, an integer or a float; branches may be values
    h = jit(lambda p, a, b: nx.cond(p, a, b), compiler=compiler)
    same(h(nx.tensor(True), nx.tensor(1), nx.tensor(2)), 1)
    same(h(nx.tensor(0.0), nx.tensor(1), nx.tensor(2)), 2)
    same(h(nx.tensor(-3), nx.tensor(1), nx.tensor(2)), 1)
    # branch outputs broadcast to a common shape
    same(jit(lambda p, x: nx.cond(p, lambda: x, lambda: 0.5), compiler=compiler)(
        nx.tensor(0), nx.tensor([1.0, 2.0])), [0.5, 0.5], "f32")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_while_loop_tuple_and_dict_state(compiler):
    @defn(compiler=compiler)
    def powers(x, n):
        return nx.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * x), (0, 1.0))

    i, acc = powers(nx.tensor(2.0), nx.tensor(5))
    same(i, 5, "s32")
    same(acc, 32.0, "f32")
    i, acc = powers(nx.tensor(3.0), nx.tensor(0))  # zero iterations
    same(i, 0) and same(acc, 1.0)

    @defn(compiler=compiler)
    def fib(n):
        def body(s):
            return {"i": s["i"] + 1, "a": s["b"], "b": s["a"] + s["b"]}
        return nx.while_loop(lambda s: s["i"] < n, body,
                             {"i": 0, "a": nx.tensor(0, type="s64"), "b": nx.tensor(1, type="s64")})
    r = fib(nx.tensor(50))
    assert list(r) == ["i", "a", "b"]
    same(r["a"], 12586269025, "s64")
    # a single tensor as state; a list as state; the body's narrower types are converted
    same(jit(lambda x: nx.while_loop(lambda s: nx.sum(s) < 100, lambda s: s * 3, x),
             compiler=compiler)(nx.tensor([1, 2])), [81, 162], "s32")
    r = jit(lambda x: nx.while_loop(lambda s: s[0] < 3, lambda s: [s[0] + 1, s[1] + s[0]],
                                    [x, nx.tensor(0, type="s64")]), compiler=compiler)(
        nx.tensor(0, type="s8"))
    assert isinstance(r, list)
    same(r[0], 3, "s8") and same(r[1], 3, "s64")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_control_flow_captures_outer_tensors(compiler):
    @defn(compiler=compiler)
    def f(x, y, n):
        z = x * 2  # an outer node, used in the loop's condition, body and a nested branch

        def body(s):
            i, acc = s
            acc = nx.cond(i % 2 == 0, lambda: acc + y, lambda: acc * 2 + z)
            return i + 1, acc
        return nx.while_loop(lambda s: (s[0] < n) & (nx.sum(s[1]) < nx.sum(z) * 100), body,
                             (0, x))

    def oracle(x, y, n):
        z, i, acc = x * 2, 0, x
        while i < n and acc.sum() < z.sum() * 100:
            acc = acc + y if i % 2 == 0 else acc * 2 + z
            i += 1
        return i, acc

    x, y = np.array([1.0, 2.0], np.float32), np.array(10.0, np.float32)
    for n in (0, 1, 4, 50):
        i, acc = f(nx.tensor(x), nx.tensor(y), nx.tensor(n))
        wi, wacc = oracle(x, y, n)
        same(i, wi, "s32")
        same(acc, wacc, "f32")


@pytest.mark.parametrize("compiler", COMPILERS)
def test_while_inside_cond_and_cond_inside_while(compiler):
    @defn(compiler=compiler)
    def f(x, p):
        return nx.cond(p > 0,
                       lambda: nx.while_loop(lambda s: s < 100, lambda s: s * 2, x),
                       lambda: {"k": x - 1}["k"])
    same(f(nx.tensor(3), nx.tensor(1)), 192, "s32")
    same(f(nx.tensor(3), nx.tensor(-1)), 2, "s32")

    @defn(compiler=compiler)
    def g(x):
        # a while inside a while, each capturing x
        def outer_body(s):
            i, acc = s
            inner = nx.while_loop(lambda t: t[0] < i, lambda t: (t[0] + 1, t[1] + x), (0, acc))
            return i + 1, inner[1]
        return nx.while_loop(lambda s: s[0] < 4, outer_body, (0, nx.tensor(0.0)))[1]
    same(g(nx.tensor(1.5)), 1.5 * (0 + 1 + 2 + 3), "f32")


def test_eager_control_flow():
    # outside a defn, cond and while_loop are Python control flow
    assert nx.cond(nx.tensor(1) > 0, lambda: "yes", lambda: "no") == "yes"
    assert nx.cond(False, 1, 2) == 2
    assert nx.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2), (0, 1)) == (3, 8)
    r = nx.while_loop(lambda s: s["i"] < 4, lambda s: {"i": s["i"] + 1, "v": s["v"] * 2},
                      {"i": nx.tensor(0), "v": nx.tensor([1.0, 2.0])})
    same(r["i"], 4, "s32") and same(r["v"], [16.0, 32.0], "f32")
    # the body's narrower types are converted, as in a defn
    r = nx.while_loop(lambda s: s < 10, lambda s: nx.as_type(s * 2, "s8"), nx.tensor(1))
    same(r, 16, "s32")
    with pytest.raises(ValueError, match=r"cond: expected pred to be a scalar, got shape \(2,\)"):
        nx.cond(nx.tensor([1, 1]), 1, 2)
    with pytest.raises(ValueError, match=r"while_loop: state leaf 0 has shape \(2,\) but the "
                                         r"body returned shape \(4,\)"):
        nx.while_loop(lambda s: nx.sum(s) < 10, lambda s: nx.concatenate([s, s]),
                      nx.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"while_loop: the body must return the state's "
                                         r"structure \(tensor, tensor\), got tensor"):
        nx.while_loop(lambda s: True, lambda s: s[0], (nx.tensor(1), nx.tensor(2)))
    with pytest.raises(TypeError, match="state leaf 0 has type s32 but the body returned f32"):
        nx.while_loop(lambda s: s < 10, lambda s: s * 1.5, nx.tensor(1))
    with pytest.raises(ValueError, match=r"while_loop: the condition must return a scalar, got "
                                         r"shape \(2,\)"):
        nx.while_loop(lambda s: s < 10, lambda s: s, nx.tensor([1, 2]))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_control_flow_errors(compiler):
    def run(f, *args):
        return jit(f, compiler=compiler)(*args)
    x = nx.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match=r"^while_loop: state leaf 0 has shape \(2,\) but the "
                                         r"body returned shape \(4,\)$"):
        run(lambda x: nx.while_loop(lambda s: nx.sum(s) < 10, lambda s: nx.concatenate([s, s]),
                                    x), x)
    with pytest.raises(ValueError, match=r"^while_loop: the body must return the state's "
                                         r"structure \{'a': tensor, 'b': tensor\}, got "
                                         r"\{'a': tensor\}$"):
        run(lambda x: nx.while_loop(lambda s: s["a"] < 3, lambda s: {"a": s["a"] + 1},
                                    {"a": 0, "b": x}), x)
    with pytest.raises(TypeError, match=r"^while_loop: state leaf 1 has type s32 but the body "
                                        r"returned f32; convert it with nx.as_type$"):
        run(lambda x: nx.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] / 2), (0, 1)),
            x)
    with pytest.raises(ValueError, match=r"while_loop: the condition must return a scalar, got "
                                         r"shape \(2,\)"):
        run(lambda x: nx.while_loop(lambda s: s < 3, lambda s: s + 1, x), x)
    with pytest.raises(ValueError, match=r"^cond: both branches must return the same container "
                                         r"structure, got \(tensor, tensor\) and tensor$"):
        run(lambda x: nx.cond(nx.sum(x) > 0, lambda: (x, x), lambda: x), x)
    with pytest.raises(ValueError, match=r"cond: both branches must return the same container "
                                         r"structure, got \{'a': tensor\} and \{'b': tensor\}"):
        run(lambda x: nx.cond(nx.sum(x) > 0, lambda: {"a": x}, lambda: {"b": x}), x)
    with pytest.raises(ValueError, match=r"^cond: output 0 has shape \(2,\) in one branch and "
                                         r"\(3,\) in the other$"):
        run(lambda x: nx.cond(nx.sum(x) > 0, lambda: x, lambda: nx.iota((3,), type="f32")), x)
    with pytest.raises(ValueError, match=r"^cond: expected pred to be a scalar, got shape "
                                         r"\(2,\)$"):
        run(lambda x: nx.cond(x > 0, 1, 2), x)
    # errors inside a branch surface as they are, and leave no trace state behind
    with pytest.raises(ValueError, match=r"add: cannot broadcast"):
        run(lambda x: nx.cond(nx.sum(x) > 0, lambda: x + nx.iota((3,)), lambda: x), x)
    assert not _context.stack()


@pytest.mark.parametrize("compiler", COMPILERS)
def test_control_flow_results_have_the_nodes_names(compiler):
    # the result's names are decided by the graph, not by which branch ran or how many
    # iterations the loop made, so both compilers agree
    f = jit(lambda p, x, y: nx.cond(p, lambda: x, lambda: y), compiler=compiler)
    x, y = nx.tensor([1, 2], names=["i"]), nx.tensor([3, 4], names=["j"])
    assert f(nx.tensor(1), x, y).names == (None,)
    assert f(nx.tensor(0), x, y).names == (None,)
    assert f(nx.tensor(0), x, nx.tensor([3, 4])).names == ("i",)
    g = jit(lambda x: nx.while_loop(lambda s: s[0] < 2,
                                    lambda s: (s[0] + 1, nx.reshape(s[1] + 5, (2,), names=["k"])),
                                    (0, x)), compiler=compiler)
    r = g(nx.tensor([1, 2], names=["i"]))
    assert r[1].names == ("i",)
    same(r[1], [11, 12])


def test_compiler_plugins_register_by_name():
    graphs = []

    class Recording(D.Compiler):
        """A plugin compiler: records the graphs it is given, runs them with the Evaluator."""
        name = "recording"
        options = frozenset({"tag"})

        def compile(self, graph, opts):
            graphs.append((graph, opts))
            return Evaluator().compile(graph, {})

    nx.register_compiler("recording", Recording)
    try:
        f = jit(lambda x: x * 2, compiler="recording", tag="t1")
        same(f(nx.tensor([1, 2])), [2, 4], "s32")
        f(nx.tensor([3, 4]))
        assert len(graphs) == 1 and graphs[0][1] == {"tag": "t1"}
        graph = graphs[0][0]
        assert [e.op for e in graph.nodes] == ["parameter", "constant", "multiply"] or \
            [e.op for e in graph.nodes] == ["constant", "parameter", "multiply"]
        assert [(p.shape, str(p.type)) for p in graph.params] == [((2,), "s32")]
        with pytest.raises(ValueError, match="unknown option 'foo' for compiler 'recording': "
                                             r"expected one of \['tag'\]"):
            jit(lambda x: x, compiler="recording", foo=1)
        default_options(compiler="recording")
        same(jit(lambda x: x + 1)(nx.tensor(1)), 2)
        assert len(graphs) == 2
    finally:
        default_options(compiler="evaluator")
        nx.plugins.COMPILERS.unregister("recording")
