"""The iree compiler against EXLA: op families, grad and vmap of an MLP loss, while_loop,
cond, linalg.solve through the portable fallback, random bits, errors, caching and the
entry point. Each test compiles one or two programs (an IREE compile takes seconds)."""
import numpy as np
import pytest

import nxpy as nx
from nxpy import plugins
from nxpy.defn import defn, grad, jit, vmap

import nxpy_iree

RNG = np.random.default_rng(0)


def both(f, *args, rtol=1e-5, atol=1e-6, exact=False):
    """``f`` jitted with iree and with exla on ``args``: results compared, iree's returned."""
    got = jit(f, compiler="iree")(*args)
    want = jit(f, compiler="exla")(*args)
    gl, wl = (x if isinstance(x, (tuple, list)) else (x,) for x in (got, want))
    assert len(gl) == len(wl)
    for g, w in zip(gl, wl):
        assert (g.shape, str(g.type)) == (w.shape, str(w.type))
        if exact:
            np.testing.assert_array_equal(g.to_numpy(), w.to_numpy())
        else:
            np.testing.assert_allclose(g.to_numpy(), w.to_numpy(), rtol=rtol, atol=atol)
    return got


def test_found_by_entry_point():
    assert "iree" in plugins.COMPILERS.names()
    assert "entry point 'nxpy_iree:IreeCompiler'" in plugins.COMPILERS.origin("iree")
    assert isinstance(plugins.COMPILERS.get("iree"), nxpy_iree.IreeCompiler)


def test_elementwise_dtypes():
    """f32, f64, i64, bool and bf16 in one program: IREE's demotion of f64/i64 is off."""
    def f(a, b, i, m):
        y = nx.tanh(a) * nx.exp(-nx.abs(b)) + nx.log1p(a * a) / (1 + b * b)
        return (y, nx.sqrt(b.astype("f64") + 3.0) * 1e300 / 1e300, i * 3 - (i >> 1),
                m & (a > 0), (a * 2).astype("bf16"))
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((4,)).astype(np.float32)
    i = RNG.integers(-2**40, 2**40, (4,))
    m = np.array([[True, False, True, True]] * 3)
    out = both(f, a, b, i, m)
    assert [str(t.type) for t in out] == ["f32", "f64", "s64", "pred", "bf16"]


def test_dot_and_reductions():
    def f(x, w):
        y = nx.dot(x, w)
        return nx.sum(y, axes=[0]), nx.reduce_max(y, axes=[-1]), nx.argmin(y, axis=1), \
            nx.mean(y), nx.cumulative_sum(x, axis=1)
    both(f, RNG.standard_normal((5, 3)).astype(np.float32),
         RNG.standard_normal((3, 2)).astype(np.float32))


def _loss(w1, w2, x, y):
    h = nx.tanh(nx.dot(x, w1))
    return nx.mean((nx.dot(h, w2) - y) ** 2)


W1 = RNG.standard_normal((4, 8)).astype(np.float32)
W2 = RNG.standard_normal((8, 1)).astype(np.float32)
X = RNG.standard_normal((6, 4)).astype(np.float32)
Y = RNG.standard_normal((6, 1)).astype(np.float32)


def test_grad_of_mlp_loss():
    both(grad(_loss, argnums=(0, 1)), W1, W2, X, Y, rtol=1e-4, atol=1e-5)


def test_defn_with_the_iree_compiler():
    """``@defn(compiler="iree")``: compiled once per templates, calling another defn (the
    call inlines), results on the host backend as the protocol's result_backend says."""
    @defn
    def act(x):
        return nx.tanh(x)

    @defn(compiler="iree")
    def layer(w, x):
        return act(nx.dot(x, w)) * 2.0

    got = layer(W1, X)
    want = jit(lambda w, x: nx.tanh(nx.dot(x, w)) * 2.0, compiler="exla")(W1, X)
    np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-5, atol=1e-6)
    before = len(nxpy_iree._COMPILED)
    again = layer(W1, nx.add(X, 1.0))                 # same templates: no new compile
    assert len(nxpy_iree._COMPILED) == before and again.shape == got.shape
    assert got.backend is nx.get_backend("numpy")


def test_vmap_of_mlp_grad():
    per_example = vmap(grad(_loss), in_axes=(None, None, 0, 0))
    both(per_example, W1, W2, X[:, None], Y[:, None], rtol=1e-4, atol=1e-5)


def test_while_loop_and_cond():
    def f(x, n):
        def body(s):
            return {"i": s["i"] + 1, "x": nx.cond(s["i"] % 2 == 0, lambda: s["x"] * 2,
                                                  lambda: s["x"] - 1)}
        s = nx.defn.while_loop(lambda s: s["i"] < n, body, {"i": 0, "x": x})
        return s["x"], nx.cond(nx.sum(x) > 0, lambda: x + 100, lambda: -x)
    both(f, np.array([1.0, -3.0], np.float32), np.int32(5))


def test_linalg_solve_takes_the_portable_fallback():
    a = RNG.standard_normal((4, 4)).astype(np.float32) + 4 * np.eye(4, dtype=np.float32)
    b = RNG.standard_normal((4, 2)).astype(np.float32)
    comp = plugins.COMPILERS.get("iree")
    text = comp.lower(nx.defn.trace(nx.linalg.solve, [nx.tensor(a), nx.tensor(b)]))
    assert "custom_call" not in text and "lapack" not in text
    got = both(nx.linalg.solve, a, b, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got.to_numpy(), np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)


def test_random_normal_split_bit_for_bit():
    f = lambda k: nx.random.normal_split(k, shape=(3, 5))  # noqa: E731
    both(f, nx.random.key(42), exact=True)


def test_host_callbacks_are_refused_with_the_op_named():
    f = jit(lambda x: nx.defn.hook(x * 2, lambda v: None) + 1, compiler="iree")
    with pytest.raises(NotImplementedError,
                       match=r"nxpy-iree plugin: op 'hook' lowers to the custom call .* which "
                             r"compiler 'iree' cannot run"):
        f(nx.tensor([1.0]))


def test_padded_window_reduce_is_refused_unpadded_runs():
    """IREE reduces padded positions as the initial value where XLA leaves them out: a
    padded window_reduce is refused, not silently different; without padding it runs."""
    x = np.arange(1, 8, dtype=np.int32)
    f = jit(lambda t: nx.window_reduce(t, 1, (2,), {"strides": (2,), "padding": [(0, 1)]},
                                       lambda a, b: a + b), compiler="iree")
    with pytest.raises(NotImplementedError, match=r"op 'window_reduce' with padding "
                                                  r"\(\(0, 1\),\): XLA leaves"):
        f(nx.tensor(x))
    got = both(lambda t: nx.window_reduce(t, 1, (2,), {"strides": (2,)}, lambda a, b: a + b),
               x[:6], exact=True)
    assert got.tolist() == [4, 8, 12]


def test_known_iree_compile_failures_are_unsupported():
    """An IREE compile failure of IREE_LIMITS (here its scatter's update windows) is an
    IreeUnsupported naming the plugin and the reason; the same program runs on EXLA."""
    x = np.zeros((2, 3, 4), np.float32)
    i = np.array([[1], [1]], np.int32)
    u = np.ones((2, 2, 3), np.float32)
    f = lambda x, i, u: nx.indexed_add(x, i, u, axes=[1])  # noqa: E731
    with pytest.raises(nxpy_iree.IreeUnsupported, match=r"nxpy-iree plugin.*cannot compile "
                                                        r"this module: IREE's scatter"):
        jit(f, compiler="iree")(nx.tensor(x), nx.tensor(i), nx.tensor(u))
    assert float(jit(f, compiler="exla")(nx.tensor(x), nx.tensor(i), nx.tensor(u)).sum()) \
        == 12.0


def test_shard_map_is_refused_by_the_protocol():
    """No compile_sharded: nxpy's protocol refuses shard_map (collectives) for the plugin."""
    mesh = nx.Mesh("m", (1,), ("x",))
    f = jit(nx.defn.shard_map(lambda x: nx.defn.psum(x, "x"), mesh, in_specs=(nx.P("x"),),
                              out_specs=nx.P()), compiler="iree")
    with pytest.raises(ValueError, match=r"compiler 'iree' has no sharded entry point"):
        f(nx.tensor([1.0, 2.0]))


def test_options_and_cache():
    with pytest.raises(ValueError, match="unknown option 'device_id' for compiler 'iree'"):
        jit(lambda x: x + 1, compiler="iree", device_id=0)(nx.tensor(1.0))
    f = lambda x: x * 3 - 1  # noqa: E731
    x = nx.tensor([1.0, 2.0])
    jit(f, compiler="iree", driver="local-sync")(x)
    before = len(nxpy_iree._COMPILED)
    got = jit(f, compiler="iree", driver="local-sync")(nx.tensor([5.0, 6.0]))
    assert len(nxpy_iree._COMPILED) == before and got.tolist() == [14.0, 17.0]


def test_sorts_order_ties_and_nans_as_exla():
    """IREE's sort is not stable and its top_k ranks neither NaN nor ties as XLA's: the
    plugin lowers with ``stable_sort=False`` (nxpy's unique-order forms), so top_k,
    permute_by_key (a key given twice too) and the 64-bit argsort match EXLA bit for bit
    on data full of ties."""
    x = np.round(RNG.uniform(-3, 3, (3, 40)).astype(np.float32))
    x[0, :4] = [np.nan, -0.0, np.nan, 0.0]
    k = np.round(RNG.uniform(-3, 3, (3, 40))).astype(np.int32)

    def f(x, k):
        return (*nx.top_k(x, k=6), *nx.top_k(k, k=6), nx.permute_by_key(k, x, axis=1),
                nx.permute_by_key(k, k, axis=1), nx.argsort(x.astype("f64"), axis=1),
                nx.permute_by_key(x, nx.iota(x.shape, axis=0), axis=0, direction="desc"))
    got = both(f, x, k, exact=True)
    assert np.isnan(got[0].to_numpy()[0, :2]).all() and got[1].to_numpy()[0, :2].tolist() == [0, 2]


def test_results_survive_later_calls():
    """Each call's results are the caller's: IREE reuses a result buffer's memory for a
    later call once its DeviceArray is gone, so the plugin copies results out."""
    f = jit(lambda v: v * 2, compiler="iree")
    x = np.arange(2100.0, dtype=np.float32).reshape(3, 700)
    first = f(x).to_numpy()
    kept = first.copy()
    for i in range(3):
        f(x + i + 1)
    np.testing.assert_array_equal(first, kept)


def test_results_stay_on_iree_between_calls():
    """A result is kept in IREE's buffer (``OnIree`` data) until read; passed to another
    program on the same device it goes in as it is, without a copy to the host."""
    f = jit(lambda v: v * 2 + 1, compiler="iree")
    g = jit(lambda v, w: nx.sum(v * w, axes=[1]), compiler="iree")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = f(x)
    assert type(y.raw_data) is nxpy_iree.OnIree
    z = g(f(y), y)  # two programs, device buffers in
    assert type(y.raw_data) is nxpy_iree.OnIree  # not read: not copied to the host
    want = np.sum((4 * x + 3) * (2 * x + 1), axis=1)
    np.testing.assert_allclose(z.to_numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal(y.to_numpy(), 2 * x + 1)  # read: copied once
    assert isinstance(y.raw_data, np.ndarray)
    np.testing.assert_array_equal((f(x) + 1).to_numpy(), 2 * x + 2)  # eager ops read it
