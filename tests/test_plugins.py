"""Plugins: registration, entry-point discovery, errors, extending ops, and the worked
example (examples/nxpy_counting) installed with pip and passing the conformance kit."""
import importlib
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest

import nxpy as nx
from nxpy import plugins
from nxpy import pjrt
from nxpy.compilers.exla import LOWERINGS, to_mlir
from nxpy.backends.numpy import NumpyBackend
from nxpy.defn import Compiler, jit
from nxpy import extend
from nxpy.extend import implement, register_lowering, register_op
from nxpy.stablehlo import parse
from nxpy.tensor import Deferred

from helpers import PATHS

# one worker runs them all under pytest-xdist: they pip-install the example plugin
pytestmark = pytest.mark.xdist_group("pip")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "nxpy_counting"


@pytest.fixture(scope="module")
def counting_installed(tmp_path_factory):
    """The example plugin, installed with pip (as a user would) from a fresh copy of the
    repository's, into a directory of this run's put on ``sys.path``: its entry points are
    found there. The environment's own site-packages is never changed, so runs (``make
    test``, then ``make roundtrip``) cannot trip over each other's build or install."""
    src = tmp_path_factory.mktemp("plugin") / "nxpy_counting"
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns(
        "build", "*.egg-info", "__pycache__"))
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--target", str(site), str(src)], check=True)
    sys.path.insert(0, str(site))
    importlib.invalidate_caches()
    yield site
    sys.path.remove(str(site))
    plugins.BACKENDS.unregister("counting")
    plugins.COMPILERS.unregister("counting")


def test_example_found_by_entry_point(counting_installed):
    assert "counting" in plugins.BACKENDS.names() and "counting" in plugins.COMPILERS.names()
    b = nx.get_backend("counting")
    assert type(b).__name__ == "CountingBackend"
    assert "entry point 'nxpy_counting:CountingBackend'" in plugins.BACKENDS.origin("counting")
    old = nx.default_backend("counting")
    try:
        t = nx.tensor([1.0, 2.0]) * 3 + 1
        assert t.backend is b and t.tolist() == [4.0, 7.0]
        assert b.counts["multiply"] >= 1 and b.counts["add"] >= 1
    finally:
        nx.default_backend(old)
    c = nx.defn.compiler.get_compiler("counting")
    f = jit(lambda x: nx.sum(x * 2), compiler="counting")
    assert f(nx.tensor([1, 2, 3])).tolist() == 12
    f(nx.tensor([4, 5, 6]))
    assert c.compiles == 1 and c.backend.counts["sum"] == 2


def test_plugin_compiler_runs_gradients(counting_installed):
    """A compiler that knows nothing of gradients runs them: they are ordinary graphs."""
    from nxpy.defn import grad
    c = nx.defn.compiler.get_compiler("counting")
    before = dict(c.backend.counts)
    f = jit(grad(lambda x: nx.sum(nx.sin(x) * x)), compiler="counting")
    x = np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(f(nx.tensor(x)).to_numpy(), np.sin(x) + x * np.cos(x), rtol=1e-6)
    assert c.backend.counts["cos"] > before.get("cos", 0)  # the rule's ops ran on the plugin


def test_example_passes_the_conformance_kit(counting_installed):
    env = dict(os.environ)  # the kit's process finds the plugin where it was installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(counting_installed),
                                                    env.get("PYTHONPATH")) if p)
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--pyargs",
                        "nxpy.testing", "--nxpy-backend=counting", "--nxpy-compiler=counting"],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert " passed" in r.stdout and "failed" not in r.stdout.splitlines()[-1]


def test_kit_reports_unsupported_ops(tmp_path):
    """A backend without some kernels: the kit skips those cases and lists the ops."""
    conftest = tmp_path / "conftest.py"
    conftest.write_text(
        "import nxpy as nx\nfrom nxpy.backends.numpy import NumpyBackend\n"
        "class Partial(NumpyBackend):\n    name = 'partial'\n    dot = None\n"
        "    window_sum = None\n"
        "nx.register_backend('partial', Partial)\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--rootdir", str(tmp_path), "-c", "/dev/null", str(tmp_path),
                        "--pyargs", "nxpy.testing", "--nxpy-backend=partial",
                        "-k", "dot or window_sum"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:]
    assert "nxpy conformance kit: unsupported ops" in r.stdout
    assert "backend 'partial': 2 op(s) unsupported: dot, window_sum" in r.stdout


# ----------------------------------------------------------------------------------------
# Registration and its errors
# ----------------------------------------------------------------------------------------
class Lacking(nx.Backend):
    name = "lacking"

    def from_numpy(self, array, type, names=None):
        raise AssertionError

    def constant(self, out, value):
        raise AssertionError


def test_missing_required_method_is_named():
    with pytest.raises(nx.PluginError, match=r"backend plugin 'lacking' \(.*Lacking\) does not "
                                             r"implement the required method 'to_numpy'"):
        nx.register_backend("lacking", Lacking())
    nx.register_backend("lacking2", Lacking)  # a class is checked when first instantiated
    try:
        with pytest.raises(nx.PluginError, match="'lacking2'.*'to_numpy'"):
            nx.default_backend("lacking2")
    finally:
        plugins.BACKENDS.unregister("lacking2")

    class NoCompile(Compiler):
        name = "nocompile"
    with pytest.raises(nx.PluginError, match="compiler plugin 'nocompile'.*'compile'"):
        nx.register_compiler("nocompile", NoCompile())

    class NoOptions:
        def compile(self, graph, opts):
            pass
    with pytest.raises(nx.PluginError, match="must declare `options`"):
        nx.register_compiler("noopts", NoOptions())


def test_two_plugins_with_one_name():
    with pytest.raises(nx.PluginError, match=r"two backend plugins are named 'numpy': built into "
                                             r"nxpy, and registered at .*test_plugins.py"):
        nx.register_backend("numpy", NumpyBackend())
    nx.register_compiler("twice", lambda: None)
    try:
        with pytest.raises(nx.PluginError, match=r"two compiler plugins are named 'twice': "
                                                 r"registered at .*test_plugins.py:\d+, "
                                                 r"and registered at"):
            nx.register_compiler("twice", lambda: None)
    finally:
        plugins.COMPILERS.unregister("twice")


def _fake_entry_points(monkeypatch, registry, eps):
    monkeypatch.setattr(registry, "_entry_points", lambda: eps)


def test_entry_point_errors(monkeypatch):
    EP = metadata.EntryPoint
    _fake_entry_points(monkeypatch, plugins.BACKENDS, [
        EP("broken", "nxpy_no_such_module:Backend", "nxpy.backends"),
        EP("dup", "pkg_a:Backend", "nxpy.backends"), EP("dup", "pkg_b:Backend", "nxpy.backends"),
        EP("numpy", "pkg_c:NumpyClone", "nxpy.backends")])
    with pytest.raises(nx.PluginError, match=r"the backend plugin 'broken' \(entry point "
                                             r"'nxpy_no_such_module:Backend' of .*\) failed to "
                                             r"import: ModuleNotFoundError"):
        nx.default_backend("broken")
    with pytest.raises(nx.PluginError, match=r"two backend plugins are named 'dup': entry point "
                                             r"'pkg_a:Backend' .* and entry point 'pkg_b:Backend'"):
        nx.tensor([1], backend="dup")
    plugins.BACKENDS._instances.pop("numpy", None)
    try:
        with pytest.raises(nx.PluginError, match=r"two backend plugins are named 'numpy': built "
                                                 r"into nxpy, and entry point 'pkg_c:NumpyClone'"):
            nx.get_backend("numpy")
    finally:
        monkeypatch.undo()
        nx.get_backend("numpy")
    with pytest.raises(ValueError,
                       match=r"unknown backend 'nope': expected one of \[.*'exla'.*'numpy'"):
        nx.default_backend("nope")


def test_registered_by_name_everywhere():
    class Twice(Compiler):
        name = "twice_eval"
        options = frozenset({"factor"})

        def compile(self, graph, opts):
            inner = nx.defn.compiler.get_compiler("evaluator").compile(graph, {})
            return lambda args: [o * opts.get("factor", 2) for o in inner(args)]

    nx.register_compiler("twice_eval", Twice)
    nx.register_backend("numpy2", NumpyBackend)
    try:
        assert jit(lambda x: x + 1, compiler="twice_eval")(nx.tensor(1)).tolist() == 4
        assert jit(lambda x: x + 1, compiler="twice_eval", factor=10)(nx.tensor(1)).tolist() == 20

        @nx.defn.defn(compiler="twice_eval")
        def g(x):
            return x - 1
        assert g(nx.tensor(5)).tolist() == 8
        assert nx.tensor([1, 2], backend="numpy2").backend is nx.get_backend("numpy2")
        old = nx.default_backend("numpy2")
        nx.default_backend(old)
        assert old.name == "numpy"
    finally:
        plugins.COMPILERS.unregister("twice_eval")
        plugins.BACKENDS.unregister("numpy2")


# ----------------------------------------------------------------------------------------
# Extending ops
# ----------------------------------------------------------------------------------------
def _logaddexp_infer(a, b):
    return nx.shape.broadcast(a.shape, b.shape, op="logaddexp"), nx.types.to_floating(
        nx.types.merge(a.type, b.type))


logaddexp = register_op("test_logaddexp", _logaddexp_infer,
                        evaluate=lambda out, a, b: np.logaddexp(a.to_numpy(), b.to_numpy()))


@register_lowering("test_logaddexp")
def _lower_logaddexp(ctx, e, a, b):
    a, b = (ctx.bcast(ctx.convert(v, e.type), e.shape) for v in (a, b))
    m = ctx.binop("stablehlo.maximum", a, b)
    d = ctx.op("stablehlo.negate", [ctx.op("stablehlo.abs", [ctx.binop("stablehlo.subtract", a, b)],
                                           (e.shape, e.type))], (e.shape, e.type))
    exp = ctx.op("stablehlo.exponential", [d], (e.shape, e.type))
    return ctx.binop("stablehlo.add", m, ctx.op("stablehlo.log_plus_one", [exp],
                                                 (e.shape, e.type)))


@pytest.mark.parametrize("path", PATHS)
def test_a_new_op_on_every_path(path):
    a, b = np.array([[0.0, 1.0], [2.0, -3.0]], np.float32), np.array([1.0, 5.0], np.float32)
    want = np.logaddexp(a, b)
    if path == "numpy":
        r = logaddexp(a, b)
    elif path == "exla_eager":
        r = logaddexp(nx.tensor(a, backend="exla"), nx.tensor(b, backend="exla"))
        assert r.backend.name == "exla"
    else:
        r = jit(logaddexp, compiler=path)(nx.tensor(a), nx.tensor(b))
    assert str(r.type) == "f32" and r.shape == (2, 2)
    np.testing.assert_allclose(r.to_numpy(), want, rtol=1e-6)


def test_new_op_graph_errors_and_backend_kernels():
    g = nx.defn.debug_expr(lambda x, y: logaddexp(x, y))(nx.template((2,), "f32"),
                                                         nx.template((2,), "f32"))
    assert "c = test_logaddexp a, b" in str(g)
    with pytest.raises(ValueError, match=r"logaddexp: cannot broadcast tensor of shape \(2,\) "
                                         r"with tensor of shape \(3,\)"):
        logaddexp(nx.iota((2,)), nx.iota((3,)))
    with pytest.raises(ValueError, match="op 'add' already exists"):
        register_op("add", _logaddexp_infer)
    bare = register_op("test_bare", lambda x: (x.shape, x.type))
    with pytest.raises(NotImplementedError,
                       match="backend 'numpy' does not implement the op 'test_bare'"):
        bare(nx.iota((2,)))
    with pytest.raises(NotImplementedError, match="no lowering for op 'test_bare'"):
        jit(bare, compiler="exla")(nx.iota((2,)))
    implement("numpy", "test_bare",
              lambda self, out, x: self.from_numpy(x.to_numpy() + 100, out.type))
    try:
        assert bare(nx.iota((2,))).tolist() == [100, 101]
        assert jit(bare)(nx.iota((2,))).tolist() == [100, 101]  # the Evaluator uses the kernel
    finally:
        delattr(NumpyBackend, "test_bare")


def test_override_a_lowering_and_custom_call():
    original = LOWERINGS["erf"]
    calls = []

    @register_lowering("erf")
    def erf_via_tanh(ctx, e, x):  # a (deliberately rough) different lowering
        calls.append(e)
        x = ctx.convert(x, e.type)
        k = ctx.const(1.2, e.type, e.shape)
        return ctx.op("stablehlo.tanh", [ctx.binop("stablehlo.multiply", x, k)], (e.shape, e.type))
    try:
        r = jit(nx.erf, compiler="exla")(nx.tensor([0.5], type="f64"))
        assert calls and abs(r.tolist()[0] - np.tanh(0.6)) < 1e-12
    finally:
        register_lowering("erf")(original)

    @register_lowering("test_custom")
    def _(ctx, e, x):
        return ctx.custom_call("my_kernel", [x], (e.shape, e.type),
                               backend_config='alpha = 1 : i32')
    custom = register_op("test_custom", lambda x: (x.shape, x.type))
    (call,) = parse(to_mlir(custom, nx.template((3,), "f32"))).find("stablehlo.custom_call")
    assert call.attrs == {"call_target_name": "my_kernel", "api_version": 4,
                          "backend_config": {"alpha": 1}}
    assert [str(t) for t in call.operand_types + call.result_types] == ["tensor<3xf32>"] * 2
    with pytest.raises(pjrt.CompileError, match="my_kernel"):  # not registered with XLA here
        jit(custom, compiler="exla")(nx.iota((3,), type="f32"))


def test_builtin_collectives_use_the_public_mechanism():
    # nxpy.extend hands plugins the very registries the built-in collectives register with
    from nxpy import extend
    from nxpy.compilers import evaluator, spmd
    from nxpy.compilers.exla import lowering
    from nxpy.defn.sharding import specs
    assert extend.register_spmd_rule is spmd.register_spmd_rule
    assert extend.register_eval_rule is evaluator.register_eval_rule
    assert extend.register_lowering is lowering.register_lowering
    assert extend.register_sharding_rule is specs.register_sharding_rule
    from nxpy.compilers.spmd import SPMD_RULES
    for op in ("all_gather", "all_reduce", "reduce_scatter", "all_to_all", "collective_permute",
               "collective_broadcast", "axis_index", "all_slice"):
        assert op in SPMD_RULES and op in LOWERINGS


def test_extend_deferred_is_data_made_on_first_read():
    """``nxpy.extend.Deferred``: a compiler plugin's result may keep its device buffer
    until the tensor is read (the IREE plugin's ``OnIree``); ops read it like any data."""
    class OnDevice(extend.Deferred):
        __slots__ = ("reads",)

        def __init__(self):
            self.reads = 0

        def resolve(self):
            self.reads += 1
            return np.array([1.0, 2.0], np.float32)

    assert extend.Deferred is Deferred and "Deferred" in extend.__all__
    d = OnDevice()
    t = nx.Tensor(d, (2,), nx.types.parse("f32"), None, nx.get_backend("numpy"))
    assert t.raw_data is d and d.reads == 0
    assert (t * 2).tolist() == [2.0, 4.0] and t.tolist() == [1.0, 2.0] and d.reads == 1
