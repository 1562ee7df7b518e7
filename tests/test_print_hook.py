"""print_value, print_expr and hook inside defn: eagerly (NumPy backend), on the Evaluator
and on EXLA (jaxlib's host-callback custom call), inside while_loop and cond, under grad,
and per device under shard_jit and shard_map. Oracles: NumPy values, captured stdout
built from the expected tensors, jax.grad."""
import re
import traceback

import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt
from nxpy.compilers import exla
from nxpy.defn import axis_index, grad, jit, shard_jit, shard_map
from nxpy.defn.sharding import specs as SH
from nxpy.layout import read_sharding
from nxpy.stablehlo import load, parse, roundtrip
from nxpy.stablehlo.rules import UnsupportedOpError

from helpers import COMPILERS

import jax  # after nxpy started XLA (conftest)
import jax.numpy as jnp

PATHS = [None, *COMPILERS]  # None: eagerly, outside any defn


def run(fun, path, *args):
    return fun(*args) if path is None else jit(fun, compiler=path)(*args)


def shown(label, values, type="f32", device=None):
    """What print_value prints for a tensor of ``values``: the tensor's own repr."""
    head = label if device is None else (f"{label} (device {device})" if label else
                                         f"device {device}")
    t = repr(nx.tensor(np.asarray(values), type=type))
    return f"{head}: {t}" if head else t


@pytest.mark.parametrize("path", PATHS)
def test_print_value_prints_the_runtime_value_and_returns_it(path, capsys):
    x = np.array([[1.0, -2.0], [0.5, 4.0]], np.float32)
    out = run(lambda a: nx.print_value(a * 3 - 1, label="e") * 2, path, nx.tensor(x))
    np.testing.assert_array_equal(out.to_numpy(), (x * 3 - 1) * 2)
    assert capsys.readouterr().out == shown("e", x * 3 - 1) + "\n"
    # no label; a container prints each tensor with its path
    res = run(lambda a: nx.print_value({"a": a, "b": (a + 1, None)}), path, nx.tensor([1, 2]))
    assert res["a"].tolist() == [1, 2] and res["b"][1] is None
    assert capsys.readouterr().out == (shown("['a']", [1, 2], "s32") + "\n" +
                                       shown("['b'][0]", [2, 3], "s32") + "\n")


@pytest.mark.parametrize("path", PATHS)
def test_hook_gets_the_computed_tensor(path):
    seen = []
    x = np.array([1.5, -2.0, 3.0], np.float32)

    def f(a):
        nx.hook(nx.as_type(a, "bf16"), seen.append)  # result unused: still called
        return nx.hook(nx.rename(a * 3, ["i"]), seen.append) - 1

    out = run(f, path, nx.tensor(x))
    np.testing.assert_allclose(out.to_numpy(), x * 3 - 1)
    assert [(str(t.type), t.shape, t.names) for t in seen] == [("bf16", (3,), (None,)),
                                                               ("f32", (3,), ("i",))]
    np.testing.assert_array_equal(seen[0].to_numpy().astype(np.float32), x)
    np.testing.assert_allclose(seen[1].to_numpy(), x * 3)
    assert all(t.device_id is None for t in seen)
    if path == "exla":  # the callback's tensor is a host value
        assert all(t.backend.name == "numpy" for t in seen)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_program_order_loops_and_branches(compiler):
    log = []

    def tag(name):
        return lambda t: log.append((name, t.tolist()))

    def f(x, n):
        x = nx.hook(x, tag("start"))

        def body(s):
            i, v = s
            nx.hook(i, tag("i"))
            v = nx.cond([(i % 3 == 0, lambda: nx.hook(v * 2, tag("double"))),
                         (i % 3 == 1, lambda: nx.hook(v + 1, tag("inc"))),
                         (True, lambda: nx.hook(-v, tag("neg")))])
            return i + 1, v

        i, v = nx.while_loop(lambda s: s[0] < n, body, (0, x))
        return nx.hook(v, tag("end"))

    out = jit(f, compiler=compiler)(nx.tensor(1.0), nx.tensor(5))
    want, v = [("start", 1.0)], 1.0
    for i in range(5):
        want.append(("i", i))
        v, name = [(v * 2, "double"), (v + 1, "inc"), (-v, "neg")][i % 3]
        want.append((name, v))
    want.append(("end", v))
    assert log == want and out.tolist() == v
    log.clear()
    jit(f, compiler=compiler)(nx.tensor(2.0), nx.tensor(0))  # no iteration: no body call
    assert log == [("start", 2.0), ("end", 2.0)]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_hooks_are_identity_for_grad_and_run_once(compiler):
    seen = []

    def nx_f(x):
        y = nx.hook(nx.sin(x) * x, lambda t: seen.append(t.to_numpy()))
        return nx.sum(nx.print_value(y * y, label="sq"))

    x = np.array([0.5, -1.25, 2.0], np.float32)
    g = jit(grad(nx_f), compiler=compiler)(nx.tensor(x))
    want = jax.grad(lambda a: jnp.sum((jnp.sin(a) * a) ** 2))(x)
    np.testing.assert_allclose(g.to_numpy(), np.asarray(want), rtol=1e-5)
    assert len(seen) == 1  # the forward pass only (the backward pass does not call again)
    np.testing.assert_allclose(seen[0], np.sin(x) * x, rtol=1e-6)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_each_device_calls_back_under_shard_jit(compiler, capsys):
    mesh = nx.Mesh("mesh", (2, 2), axis_names=("x", "y"))
    seen = []
    x = np.arange(16, dtype=np.float32).reshape(4, 4)

    def f(a):
        b = nx.hook(a * 2, lambda t: seen.append((t.device_id, t.to_numpy())))
        return nx.print_value(nx.sum(b, axes=[1]), label="rows") + 1

    spec = {0: ["x"], 1: ["y"]}
    h = shard_jit(f, mesh, input_shardings=[spec], compiler=compiler)
    h([[s] for s in SH.shard(nx.tensor(x), mesh, spec)])
    got = dict((d, v) for d, v in seen)
    assert sorted(got) == list(mesh.devices) and len(seen) == 4
    pieces = read_sharding(spec, x.shape, mesh).shard_array(x * 2)
    for p, d in enumerate(mesh.devices):
        np.testing.assert_array_equal(got[d], pieces[p])
    lines = capsys.readouterr().out
    printed = sorted(re.findall(r"rows \(device (\d+)\)", lines))
    assert printed == sorted(str(d) for d in mesh.devices)
    total = x.sum(axis=1) * 2  # the rows' sums, replicated or sharded over "x"
    for d in mesh.devices:
        block = lines[lines.index(f"rows (device {d})"):].split(">", 1)[0]
        values = [float(v) for v in re.findall(r"-?\d+\.\d+", block)]
        assert values in (total.tolist(), total[:2].tolist(), total[2:].tolist())


@pytest.mark.parametrize("compiler", COMPILERS)
def test_each_device_calls_back_in_shard_map(compiler):
    mesh = nx.Mesh("mesh", (4,), axis_names=("d",))
    seen = {}

    def body(a):
        return nx.hook(a + nx.as_type(axis_index("d"), "f32") * 10,
                       lambda t: seen.__setitem__(t.device_id, t.tolist()))

    shard_map(body, mesh, in_specs=("d",), out_specs=("d",), compiler=compiler)(
        nx.tensor(np.arange(8, dtype=np.float32)))
    assert seen == {d: [2.0 * p + 10 * p, 2.0 * p + 1 + 10 * p]
                    for p, d in enumerate(mesh.devices)}


@pytest.mark.parametrize("path", PATHS)
def test_print_expr_prints_while_tracing_only(path, capsys):
    def f(a):
        return nx.print_expr(a * 2, label="twice") + 1
    if path is None:
        f(nx.tensor([1.0]))
        assert capsys.readouterr().out == "twice: " + repr(nx.tensor([2.0])) + "\n"
        return
    j = jit(f, compiler=path)
    j(nx.tensor([1.0]))
    text = capsys.readouterr().out
    assert text.startswith("twice: #Nx.Tensor<\n  f32[1]\n") and "Nx.Defn.Expr" in text
    assert re.search(r"b = multiply a, 2\.0", text)
    j(nx.tensor([3.0]))  # cached: not traced, nothing printed
    assert capsys.readouterr().out == ""


def test_the_callbacks_of_equal_programs_stay_apart(compiles):
    a, b = [], []
    fa = jit(lambda x: nx.hook(x + 1, a.append), compiler="exla")
    fb = jit(lambda x: nx.hook(x + 1, b.append), compiler="exla")
    fa(nx.tensor([1])), fb(nx.tensor([5])), fa(nx.tensor([2]))
    assert [t.tolist() for t in a] == [[2], [3]] and [t.tolist() for t in b] == [[6]]
    assert len(compiles) == 2
    # two print_values with the same label make the same program: compiled once
    jit(lambda x: nx.print_value(x, "p"), compiler="exla")(nx.tensor([1]))
    jit(lambda x: nx.print_value(x, "p"), compiler="exla")(nx.tensor([1]))
    assert len(compiles) == 3


def test_not_kept_in_the_persistent_cache(tmp_path):
    pjrt.set_cache_dir(tmp_path)
    try:
        seen = []
        jit(lambda x: nx.hook(x * 7, seen.append) - 1, compiler="exla")(nx.tensor([3]))
        jit(lambda x: x * 7 - 2, compiler="exla")(nx.tensor([3]))
    finally:
        pjrt.set_cache_dir(None)
    assert len(list(tmp_path.glob("*.exe"))) == 1 and seen[0].tolist() == [21]


def test_the_importer_rejects_host_callbacks_and_the_round_trip_skips_them():
    text = exla.to_mlir(lambda x: nx.print_value(x) + 1, nx.tensor([1.0]))
    (call,) = [op for op in parse(text).walk() if op.name == "stablehlo.custom_call"]
    assert call.attributes["call_target_name"] == pjrt.host_callback_target()
    with pytest.raises(UnsupportedOpError, match="calls back into Python"):
        load(text)
    jax_text = jax.jit(lambda x: (jax.debug.print("{}", x), x + 1)[1]).lower(1.0).as_text()
    with pytest.raises(UnsupportedOpError, match="xla_ffi_python_cpu_callback"):
        load(jax_text)
    seen = []
    with roundtrip.checking() as stats:
        jit(lambda x: nx.hook(x, seen.append) * 2, compiler="exla")(nx.tensor([4.0]))
    assert stats["modules"] == 0 and stats["skipped_host_callbacks"] == 1 and len(seen) == 1


def test_errors():
    x = nx.tensor([1.0])
    with pytest.raises(TypeError,
                       match="hook: expected fn to be a callable taking the tensor, got int"):
        nx.hook(x, 3)
    with pytest.raises(TypeError, match="hook: expected x to be a tensor .* got tuple"):
        jit(lambda a: nx.hook((a, a), print))(x)
    with pytest.raises(TypeError,
                       match="print_value: expected label to be a string or None, got int"):
        nx.print_value(x, label=3)
    with pytest.raises(TypeError, match="print_expr: expected label"):
        nx.print_expr(x, label=[1])

    def bad(t):
        raise ValueError("no thanks")
    with pytest.raises(ValueError, match="no thanks"):  # the Evaluator calls it directly
        jit(lambda a: nx.hook(a, bad) + 1)(x)
    f = jit(lambda a: nx.hook(a, bad) + 1, compiler="exla")
    with pytest.raises(ValueError, match="^no thanks$") as info:  # the user's own exception
        f(x)
    assert info.value.__traceback__ is not None and any(
        fr.name == "bad" for fr in traceback.extract_tb(info.value.__traceback__))
    ok = jit(lambda a: nx.hook(a, lambda t: None) + 1, compiler="exla")
    assert ok(x).tolist() == [2.0]  # XLA carries on after a failed callback
