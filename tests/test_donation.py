"""Buffer donation: ``jit``/``compile``/``shard_jit`` with ``donate_argnums`` alias the
donated arguments to results in the EXLA module, PJRT reuses their memory, and the donated
tensors are unusable afterwards on every compiler, with an error naming the donation."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import nxpy as nx
from nxpy.compilers import exla
from nxpy.defn import compile as aot, jit, shard_jit

from helpers import COMPILERS


@pytest.mark.parametrize("compiler", COMPILERS)
def test_donated_argument_is_given_up(compiler):
    step = jit(lambda w, g: w - g * 0.5, compiler=compiler, donate_argnums=0)
    w, g = nx.tensor([1.0, 2.0]), nx.tensor([2.0, 2.0])
    w2 = step(w, g)
    assert w2.tolist() == [0.0, 1.0]
    assert w.donated and not g.donated and not w2.donated
    with pytest.raises(nx.DonatedError, match=r"donated to <lambda> \(donate_argnums=\(0,\)\)"):
        w.to_numpy()
    with pytest.raises(nx.DonatedError):
        nx.add(w, 1)
    with pytest.raises(nx.DonatedError):
        step(w, g)  # a donated tensor passed again
    assert "donated to <lambda>" in repr(w)
    # the result is an ordinary tensor: it can be donated in turn
    w3 = step(w2, g)
    assert w3.tolist() == [-1.0, 0.0] and w2.donated


@pytest.mark.parametrize("compiler", COMPILERS)
def test_container_arguments_donate_every_leaf(compiler):
    f = jit(lambda p, x: {"a": p["a"] + x, "b": p["b"] * 2}, compiler=compiler,
            donate_argnums=(0,))
    p = {"a": nx.tensor([1.0]), "b": nx.tensor([2, 3])}
    x = nx.tensor([1.0])
    out = f(p, x)
    assert out["a"].tolist() == [2.0] and out["b"].tolist() == [4, 6]
    assert p["a"].donated and p["b"].donated and not x.donated


@pytest.mark.parametrize("compiler", COMPILERS)
def test_result_that_is_the_donated_argument_stays_usable(compiler):
    f = jit(lambda x, y: (x, y + 1), compiler=compiler, donate_argnums=0)
    x = nx.tensor([1, 2])
    a, b = f(x, nx.tensor([0]))
    assert x.donated and a.tolist() == [1, 2] and b.tolist() == [1]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_same_tensor_donated_and_passed_again_is_an_error(compiler):
    f = jit(lambda x, y: x + y, compiler=compiler, donate_argnums=0)
    x = nx.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="donated argument leaf 0 and as argument leaf 1"):
        f(x, x)
    assert not x.donated  # nothing ran


def test_numpy_inputs_are_copied_not_consumed():
    f = jit(lambda x: x + 1, compiler="exla", donate_argnums=0)
    a = np.array([1.0, 2.0], np.float32)
    assert f(a).tolist() == [2.0, 3.0]
    assert a.tolist() == [1.0, 2.0]


def test_exla_module_aliases_donated_parameters_as_jax_does():
    import jax
    import jax.numpy as jnp

    def fn(x, y, z):
        return x + y, z * 2, y - 1

    t = nx.template((3,), "f32")
    s = nx.template((2,), "s32")
    text = exla.to_mlir(jit(fn, donate_argnums=(0, 1, 2)), t, t, s)
    sig = text.splitlines()[1]
    # x → output 0, y → output 2 (output 0 is taken), z → output 1: JAX pairs them the same
    ours = sorted(int(v) for v in __import__("re").findall(r"tf.aliasing_output = (\d+)", sig))
    jtext = jax.jit(fn, donate_argnums=(0, 1, 2)).lower(
        jnp.zeros(3, jnp.float32), jnp.zeros(3, jnp.float32), jnp.zeros(2, jnp.int32)).as_text()
    theirs = sorted(int(v) for v in __import__("re").findall(r"tf.aliasing_output = (\d+)",
                                                                jtext))
    assert ours == theirs == [0, 1, 2]
    assert "%arg0: tensor<3xf32> {tf.aliasing_output = 0 : i32}" in sig
    assert "%arg1: tensor<3xf32> {tf.aliasing_output = 2 : i32}" in sig
    assert "%arg2: tensor<2xi32> {tf.aliasing_output = 1 : i32}" in sig


def test_unusable_donation_warns_and_still_gives_up():
    f = jit(lambda x: nx.sum(x), compiler="exla", donate_argnums=0)
    x = nx.tensor([1.0, 2.0])
    with pytest.warns(UserWarning, match=r"could not be reused.*f32\[2\]"):
        assert f(x).tolist() == 3.0
    assert x.donated


def test_exla_really_reuses_the_donated_buffer():
    x = nx.backend_transfer(nx.tensor([1.0, 2.0]), "exla")
    buf = x.data
    jit(lambda x: x + 1, compiler="exla", donate_argnums=0)(x)
    assert buf.is_deleted()  # PJRT took the memory


@pytest.mark.parametrize("compiler", COMPILERS)
def test_ahead_of_time_compile_donates(compiler):
    f = aot(lambda x, y: x * y, nx.template((2,), "f32"), nx.template((2,), "f32"),
            compiler=compiler, donate_argnums=1)
    x, y = nx.tensor([1.0, 2.0]), nx.tensor([3.0, 4.0])
    assert f(x, y).tolist() == [3.0, 8.0]
    assert y.donated and not x.donated
    # a jit's donation carries over to compile()
    g = aot(jit(lambda x: x + 1, compiler=compiler, donate_argnums=0), nx.template((1,), "s32"))
    z = nx.tensor([1])
    assert g(z).tolist() == [2] and z.donated


@pytest.mark.parametrize("bad, err, match", [
    (True, TypeError, "must be an int or a sequence of ints"),
    ("x", TypeError, "must be an int or a sequence of ints"),
    ((0, 1.0), TypeError, "must be an int or a sequence of ints"),
    (-1, ValueError, "non-negative"),
    ((1, 1), ValueError, "names argument 1 twice"),
])
def test_bad_donate_argnums(bad, err, match):
    with pytest.raises(err, match=match):
        jit(lambda x: x, donate_argnums=bad)
    with pytest.raises(err, match=match):
        shard_jit(lambda x: x, nx.Mesh("m", (2,), axis_names=("a",)), input_shardings=[{}],
                  donate_argnums=bad)


def test_donate_argnums_beyond_the_arguments():
    f = jit(lambda *xs: xs[0], donate_argnums=2)
    with pytest.raises(ValueError, match=r"donate_argnums=\(2,\) but it was called with 2 "
                                         r"positional arguments"):
        f(nx.tensor(1), nx.tensor(2))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_jit_donation(compiler):
    mesh = nx.Mesh("m", (2, 2), axis_names=("a", "b"))
    f = shard_jit(lambda w, g: w - g, mesh, input_shardings=[{0: ["a"]}, {0: ["a"]}],
                  compiler=compiler, donate_argnums=0)
    args = [[nx.tensor(np.full((2, 3), p // 2, np.float32)), nx.tensor(np.ones((2, 3), np.float32))]
            for p in range(4)]
    out = f(args)
    assert [o.tolist()[0][0] for o in out] == [-1.0, -1.0, 0.0, 0.0]
    assert all(a[0].donated for a in args) and not any(a[1].donated for a in args)
    with pytest.raises(nx.DonatedError, match="shard_jit"):
        f(args)
    out2 = f([[o, nx.tensor(np.ones((2, 3), np.float32))] for o in out])
    assert [o.tolist()[0][0] for o in out2] == [-2.0, -2.0, -1.0, -1.0]
    assert all(o.donated for o in out)
    if compiler == "exla":
        text = f.lower([[o, nx.tensor(np.ones((2, 3), np.float32))] for o in out2])
        assert "tf.aliasing_output = 0 : i32" in text.splitlines()[2]


_MEMORY = textwrap.dedent("""
    import sys, nxpy as nx
    from nxpy.defn import compile as aot
    N = 64 * 1024 * 1024  # 256 MiB of f32
    donate = 0 if sys.argv[1] == "1" else None

    def status(key):
        for line in open("/proc/self/status"):
            if line.startswith(key):
                return int(line.split()[1]) * 1024

    make = aot(lambda s: nx.broadcast(s, (N,)), nx.template((), "f32"), compiler="exla")
    step = aot(lambda x: x * 0.5 + 1.0, nx.template((N,), "f32"), compiler="exla",
               donate_argnums=donate)
    s = nx.tensor(1.0)
    open("/proc/self/clear_refs", "w").write("5")  # resets the peak (VmHWM)
    rss0 = status("VmRSS:")
    x = make(s)
    for _ in range(3):
        x = step(x)
    nx.block_until_ready(x)
    peak = status("VmHWM:")
    assert x.to_numpy()[0] == 1.875
    print((peak - rss0) / (4 * N))
""")


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="needs Linux /proc")
def test_in_place_update_of_256_mib_keeps_peak_memory_near_one_copy():
    """The issue's measure: updating a 256 MiB f32 tensor in place (donated) keeps the peak
    RSS under 1.5x the tensor; without donation it needs at least two copies."""
    def peak(donate):
        r = subprocess.run([sys.executable, "-c", _MEMORY, "1" if donate else "0"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return float(r.stdout.split()[-1])
    donated, copied = peak(True), peak(False)
    assert donated < 1.5, donated
    assert copied >= 1.9, copied  # the measure can tell the two apart


@pytest.mark.parametrize("backend,compiler", [("numpy", "evaluator"), ("exla", "exla")])
def test_eager_fast_kernels_refuse_a_donated_tensor(backend, compiler):
    """Eager ops whose fast kernels have seen the tensor's template still raise for a
    donated tensor, in either operand position and for unary ops."""
    x = nx.tensor([1.0, 2.0], backend=backend)
    y = nx.tensor([3.0, 4.0], backend=backend)
    for _ in range(2):  # the second calls run the fast kernels
        nx.add(x, y), nx.add(y, x), nx.exp(x)
    jit(lambda a: a * 2, donate_argnums=0, compiler=compiler)(x)
    for op in (lambda: nx.add(x, y), lambda: nx.add(y, x), lambda: nx.exp(x)):
        with pytest.raises(nx.DonatedError, match="donated to"):
            op()
    assert nx.add(y, y).tolist() == [6.0, 8.0]
