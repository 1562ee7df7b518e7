"""runtime_call: a Python function on host values from inside defn (Nx's runtime_call/4),
eagerly, on the Evaluator and on EXLA (jaxlib's host-callback custom call, with
results); in while_loop and cond; per device under shard_map; with the global values
under shard_jit; errors; grad. Oracles: NumPy on the same values, jax.pure_callback."""
import numpy as np
import pytest

import nxpy as nx
from nxpy.compilers import exla
from nxpy.defn import axis_index, grad, jit, shard_jit, shard_map, stop_grad
from nxpy.defn.sharding import specs as SH
from nxpy.stablehlo import load
from nxpy.stablehlo.rules import UnsupportedOpError

from helpers import COMPILERS

import jax  # after nxpy started XLA (conftest)

PATHS = [None, *COMPILERS]  # None: eagerly, outside any defn


def run(fun, path, *args):
    return fun(*args) if path is None else jit(fun, compiler=path)(*args)


def host_stats(ts, opts):
    """A host function of a container: (cumsum of x scaled, per-row argmax of y as s32)."""
    x, y = ts["x"].to_numpy(), ts["y"].to_numpy()
    return (np.cumsum(x) * opts["scale"]).astype(np.float32), np.argmax(y, axis=1).astype(np.int32)


@pytest.mark.parametrize("path", PATHS)
def test_container_in_and_out_with_a_static_argument(path):
    x = np.array([1.5, -2.0, 3.0], np.float32)
    y = np.array([[1, 9, 2], [7, 0, 3]], np.int32)
    seen = []

    def f(a, b):
        def fn(ts, opts):
            seen.append({k: (str(t.type), t.shape, t.backend.name) for k, t in ts.items()})
            return host_stats(ts, opts)
        c, i = nx.runtime_call((nx.template((3,), "f32"), nx.template((2,), "s32")),
                               {"x": a * 2, "y": b}, fn, static={"scale": 0.5})
        return c + 1, i * 10

    c, i = run(f, path, nx.tensor(x), nx.tensor(y))
    want_c, want_i = host_stats({"x": nx.tensor(x * 2), "y": nx.tensor(y)}, {"scale": 0.5})
    np.testing.assert_allclose(c.to_numpy(), want_c + 1, rtol=1e-6)
    np.testing.assert_array_equal(i.to_numpy(), want_i * 10)
    assert (str(c.type), str(i.type)) == ("f32", "s32")
    assert len(seen) == 1 and {k: v[:2] for k, v in seen[0].items()} == {
        "x": ("f32", (3,)), "y": ("s32", (2, 3))}
    if path == "exla":  # the callback gets host values
        assert {v[2] for v in seen[0].values()} == {"numpy"}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("type", ["f32", "f64", "s64", "u8", "bf16", "pred", "c64"])
def test_types_and_a_single_template_against_pure_callback(path, type):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(2, 3)) * 4).astype(nx.tensor(0, type=type).to_numpy().dtype) \
        if type != "pred" else rng.normal(size=(2, 3)) > 0
    def host(a):  # any host work
        return np.flip(np.asarray(a), axis=1).T.copy()
    out = run(lambda a: nx.runtime_call(nx.template((3, 2), type), a,
                                        lambda t: host(t.to_numpy())),
              path, nx.tensor(x, type=type))
    assert str(out.type) == type and out.shape == (3, 2)
    if type in ("f32", "u8", "pred", "c64"):  # JAX's dtypes (x64 off: no 64-bit)
        spec = jax.ShapeDtypeStruct((3, 2), x.dtype)
        want = jax.jit(lambda a: jax.pure_callback(host, spec, a))(x)
        np.testing.assert_array_equal(out.to_numpy(), np.asarray(want))
    np.testing.assert_array_equal(out.to_numpy(), host(x))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_in_loops_and_branches_once_per_run(compiler):
    calls = []

    def double(t):
        calls.append(float(t))
        return t.to_numpy() * 2

    def f(x):
        x = nx.while_loop(lambda s: s < 20, lambda s: nx.runtime_call(s, s, double), x)
        return nx.cond(x > 22, lambda: nx.runtime_call(x, x, lambda t: -t.to_numpy()),
                       lambda: x + 1)
    g = jit(f, compiler=compiler)
    assert float(g(nx.tensor(3.0))) == -24.0 and calls == [3.0, 6.0, 12.0]
    calls.clear()
    assert float(g(nx.tensor(5.0))) == 21.0 and calls == [5.0, 10.0]
    # a result nobody uses is not computed
    jit(lambda a: (nx.runtime_call(a, a, double), a + 1)[1], compiler=compiler)(nx.tensor(1.0))
    assert calls == [5.0, 10.0]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_map_calls_each_device_with_its_shard(compiler):
    mesh = nx.Mesh("mesh", (4,), axis_names=("d",))
    seen = {}

    def fn(t):
        seen[t.device_id] = t.to_numpy().copy()
        return np.cumsum(t.to_numpy()).astype(np.float32)

    def body(a):
        b = a + nx.as_type(axis_index("d"), "f32") * 10
        return nx.runtime_call(b, b, fn) * 2

    x = np.arange(8, dtype=np.float32)
    out = shard_map(body, mesh, in_specs=("d",), out_specs=("d",), compiler=compiler)(
        nx.tensor(x))
    shards = [x[2 * p:2 * p + 2] + 10 * p for p in range(4)]  # NumPy, per shard
    assert sorted(seen) == sorted(mesh.devices)
    for p, d in enumerate(mesh.devices):
        np.testing.assert_array_equal(seen[d], shards[p])
    np.testing.assert_array_equal(out.to_numpy(),
                                  np.concatenate([np.cumsum(s) * 2 for s in shards]))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_an_exception_in_fn_reaches_the_caller_from_every_sharded_path(compiler):
    """Raised on XLA's threads of several devices, it reaches the caller as itself."""
    mesh = nx.Mesh("mesh", (2,), axis_names=("x",))

    def bad(t):
        raise KeyError(f"no value for {t.to_numpy().tolist()}")

    def body(a):
        return nx.runtime_call(a, a, bad)
    per_shard = shard_map(body, mesh, in_specs=nx.P("x"), out_specs=nx.P("x"), compiler=compiler)
    with pytest.raises(KeyError, match=r"no value for \[[12]\.0\]"):
        per_shard(nx.tensor([1.0, 2.0]))
    whole = shard_jit(body, mesh, input_shardings=[nx.P("x")], compiler=compiler)
    with pytest.raises(KeyError, match=r"no value for \[1\.0, 2\.0\]"):
        whole([[nx.tensor([1.0])], [nx.tensor([2.0])]])
    ok = shard_jit(lambda a: nx.runtime_call(a, a, lambda t: t) * 2, mesh,
                   input_shardings=[nx.P("x")], compiler=compiler)
    # the result is replicated (docs/debugging.md)
    assert [o.tolist() for o in ok([[nx.tensor([1.0])], [nx.tensor([2.0])]])] == [[2.0, 4.0]] * 2


@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_jit_calls_with_the_global_value_and_replicates(compiler):
    mesh = nx.Mesh("mesh", (2, 2), axis_names=("x", "y"))
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    spec = {0: ["x"], 1: ["y"]}
    seen = []

    def fn(t):
        seen.append((t.device_id, t.to_numpy().copy()))
        return t.to_numpy().sum(axis=0)

    def f(a):
        return nx.runtime_call(nx.template((4,), "f32"), a * 2, fn) + 1
    h = shard_jit(f, mesh, input_shardings=[spec], compiler=compiler)
    out = h([[s] for s in SH.shard(nx.tensor(x), mesh, spec)])
    # JAX's pure_callback under a sharded jit also sees the global value
    jmesh = jax.make_mesh((2, 2), ("x", "y"), devices=jax.devices()[:4])
    sharding = jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec("x", "y"))
    want = jax.jit(lambda a: jax.pure_callback(lambda v: np.asarray(v).sum(axis=0),
                                               jax.ShapeDtypeStruct((4,), np.float32),
                                               a * 2) + 1)(jax.device_put(x, sharding))
    assert len(out) == 4  # replicated: every device has the whole result
    for o in out:
        np.testing.assert_array_equal(o[0].to_numpy() if isinstance(o, list) else o.to_numpy(),
                                      np.asarray(want))
    assert sorted(d for d, _ in seen) == sorted(mesh.devices)
    for _, v in seen:
        np.testing.assert_array_equal(v, x * 2)


@pytest.mark.parametrize("path", PATHS)
def test_results_not_matching_the_template_raise(path):
    x = nx.tensor([1.0, 2.0, 3.0])
    three = nx.template((3,), "f32")
    cases = [
        (three, lambda t: np.zeros(2, np.float32),
         r"expected output to be f32\[3\] \(its template in out\), got f32\[2\]"),
        (three, lambda t: np.zeros(3),
         r"expected output to be f32\[3\] \(its template in out\), got f64\[3\]"),
        ((three, three), lambda t: [t, t],
         r"expected fn to return the structure of out, \(tensor, tensor\), got \[tensor, tensor\]"),
        ({"a": three}, lambda t: {"a": "text"},
         r"expected output\['a'\] to be f32\[3\] .* a tensor or NumPy array, got str"),
        (three, lambda t: 1.0, r"expected output to be f32\[3\] .* got float"),
    ]
    for out, fn, message in cases:
        def f(a, out=out, fn=fn):
            return nx.runtime_call(out, a, fn)
        # EXLA: raised on XLA's thread, re-raised in the caller's as itself
        want = ValueError if "structure" in message else TypeError
        with pytest.raises(want, match="^runtime_call: " + message):
            run(f, path, x)
    # a scalar template takes a Python number, in the template's type
    s = run(lambda a: nx.runtime_call(nx.template((), "s32"), a, lambda t: 7), path, x)
    assert (s.tolist(), str(s.type)) == (7, "s32")


def test_errors_of_the_arguments_and_of_fn():
    x = nx.tensor([1.0])
    with pytest.raises(TypeError, match="runtime_call: expected fn to be a callable taking the "
                                        "tensors, got int"):
        nx.runtime_call(x, x, 3)
    with pytest.raises(TypeError,
                       match=r"runtime_call: expected out\[1\] to be a template .* got str"):
        jit(lambda a: nx.runtime_call((a, "f32"), a, lambda t: t))(x)
    with pytest.raises(ValueError,
                       match=r"runtime_call: expected out to hold at least one template, got \(\)"):
        nx.runtime_call((), x, lambda t: ())

    def bad(t):
        raise ValueError("no thanks")
    with pytest.raises(ValueError, match="no thanks"):  # the Evaluator calls it directly
        jit(lambda a: nx.runtime_call(a, a, bad) + 1)(x)
    with pytest.raises(ValueError, match="^no thanks$"):  # EXLA: the same exception
        jit(lambda a: nx.runtime_call(a, a, bad) + 1, compiler="exla")(x)
    ok = jit(lambda a: nx.runtime_call(a, a, lambda t: t) + 1, compiler="exla")
    assert ok(x).tolist() == [2.0]  # XLA carries on after a failed callback


@pytest.mark.parametrize("compiler", COMPILERS)
def test_grad_through_it_raises_and_stop_grad_makes_it_a_constant(compiler):
    def host(t):
        return np.sin(t.to_numpy())
    x = np.array([0.5, -1.0, 2.0], np.float32)
    with pytest.raises(ValueError, match="grad: runtime_call is not differentiable .* stop_grad"):
        jit(grad(lambda a: nx.sum(nx.runtime_call(a, a * 2, host))),
            compiler=compiler)(nx.tensor(x))
    g = jit(grad(lambda a: nx.sum(a * nx.runtime_call(a, stop_grad(a * 2), host))),
            compiler=compiler)(nx.tensor(x))
    np.testing.assert_allclose(g.to_numpy(), np.sin(x * 2), rtol=1e-6)  # d/da sum(a * c) = c
    # an input independent of the differentiated value needs no gradient
    g = jit(grad(lambda a, b: nx.sum(a * nx.runtime_call(b, b, host))), compiler=compiler)(
        nx.tensor(x), nx.tensor(x + 1))
    np.testing.assert_allclose(g.to_numpy(), np.sin(x + 1), rtol=1e-6)


def test_the_importer_rejects_it_as_a_host_callback():
    text = exla.to_mlir(lambda x: nx.runtime_call(x, x, lambda t: t) + 1, nx.tensor([1.0]))
    assert "xla_ffi_python_" in text
    with pytest.raises(UnsupportedOpError, match="calls back into Python"):
        load(text)
