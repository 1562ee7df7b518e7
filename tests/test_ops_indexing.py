"""The indexing family: slice (clamped starts), slice_along_axis, put_slice, gather, take,
take_along_axis, indexed_add, indexed_put, ``x[tensor]``: values against jax.numpy on the
NumPy backend, the Evaluator, EXLA and EXLA's eager backend; Nx's doctests; errors;
gradients against jax.grad and jvp against jax.jvp; the StableHLO importer on JAX's
gather/scatter forms; shard_jit with the input sharded along the indexed axis."""
import numpy as np
import pytest

import nxpy as nx
from nxpy import pjrt
from nxpy.compilers.exla import to_mlir
from nxpy.defn import grad, jit
from nxpy.defn.sharding import specs as SH
from nxpy.defn.shard_jit import shard_jit
from nxpy.stablehlo import UnsupportedOpError, load, parse

from helpers import CHEAP, COMPILERS, EAGER_JIT, check, dt, jvp_matches_jax, on, run, tname

import jax  # after nxpy started XLA (conftest), so both share one client
import jax.numpy as jnp

TYPES = ["f32", "f64", "f16", "bf16", "s8", "s32", "s64", "u8", "u32", "c64", "pred"]
IDX = ["s32", "s64", "u8", "u32", "s8", "s32", "u8", "s64", "u32", "s32", "s8"]


def _data(t, shape, seed=0):
    rng = np.random.default_rng(seed)
    if t == "pred":
        return rng.integers(0, 2, shape).astype(bool)
    if t == "c64":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(np.complex64)
    if t[0] in "su":
        return rng.integers(0, 50, shape).astype(dt(t))
    return rng.normal(size=shape).astype(dt(t))


# ----------------------------------------------------------------------------------------
# Every op, every dtype, four ways, against jax.numpy
# ----------------------------------------------------------------------------------------
X_SHAPE = (4, 5, 3)
I_TAKE = np.array([[0, 4, 2], [9, 1, 1]])           # 9: clamped to 4
J = np.array([[1, 2], [0, 0], [3, 4], [9, 1], [2, 3], [0, 1]])  # [9, 1]: out of bounds
T_ALONG = np.random.default_rng(1).integers(0, 4, (2, 5, 3))


def nx_family(x, i, j, t, u, add=True):
    out = (nx.take(x, i, axis=1), nx.gather(x, j), nx.take_along_axis(x, t, axis=0),
           nx.indexed_put(x, j, u), nx.slice_along_axis(x, 1, 2, axis=-1),
           nx.slice(x, [3, nx.tensor(-2), 2], [2, 3, 1]), x[i])
    return out + ((nx.indexed_add(x, j, u),) if add else ())


def jax_family(x, i, j, t, u, add=True):
    jc = jnp.clip(j, 0, jnp.array([3, 4]))
    out = (jnp.take(x, i, axis=1, mode="clip"), x[jc[:, 0], jc[:, 1]],
           jnp.take_along_axis(x, t, axis=0), x.at[j[:, 0], j[:, 1]].set(u, mode="drop"),
           x[:, :, 1:3], x[2:4, 0:3, 2:3], jnp.take(x, i, axis=0, mode="clip"))
    return out + ((x.at[j[:, 0], j[:, 1]].add(u, mode="drop"),) if add else ())


def _family_args(t, k):
    it = dt(IDX[k])
    x = _data(t, X_SHAPE, k)
    u = _data(t, (len(J), 3), k + 1)
    return x, I_TAKE.astype(it), J.astype(it), T_ALONG.astype(it), u


def _check(results, want, t):
    """In JAX's types, exactly (f16 and bf16: within 1e-2, as adds round in the type's
    precision on both sides)."""
    want = [np.asarray(w) for w in want]
    check(results, want, [tname(w.dtype) for w in want], rtol=1e-2 if t in ("f16", "bf16") else 0,
          atol=0)


@pytest.mark.parametrize("path", CHEAP)
@pytest.mark.parametrize("k,t", list(enumerate(TYPES)))
def test_family_matches_jax_every_dtype(t, k, path):
    args = _family_args(t, k)
    add = t != "pred"
    with jax.enable_x64(t in ("f64", "s64")):
        want = jax.jit(lambda *a: jax_family(*a, add=add))(*map(jnp.asarray, args))
    _check(run(lambda *a: nx_family(*a, add=add), *args, paths=(path,)), want, t)


def test_family_on_the_exla_eager_backend():
    args = _family_args("f32", 0)
    want = jax_family(*map(jnp.asarray, args))
    _check(run(nx_family, *args, paths=("exla_eager",)), want, "f32")  # stays on EXLA


@pytest.mark.parametrize("path", ["numpy", "exla"])
def test_empty_dims_negative_axes_and_names(path):
    def f(x, e, i, j):
        return (nx.take(x, i, axis=-1), nx.take(e, nx.tensor(np.zeros((0,), np.int32))),
                nx.gather(nx.iota((3, 0)), j),
                nx.take(x, nx.tensor(np.zeros((0, 2), np.int32)), axis=0),
                nx.indexed_add(x, nx.tensor(np.zeros((0, 1), np.int32)),
                               nx.tensor(np.zeros((0, 4), np.float32))),
                nx.take_along_axis(x, nx.tensor([[0, 3, 3], [1, 1, 2], [2, 0, 0]]), axis=-1))
    x = nx.tensor(np.arange(12, dtype=np.float32).reshape(3, 4), names=["rows", None])
    e = nx.tensor(np.zeros((0, 3), np.float32))
    i = nx.tensor([3, 0], names=["k"])
    j = nx.tensor([[2], [0]])
    r = on(path, f)(x, e, i, j)
    xa = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert r[0].tolist() == xa[:, [3, 0]].tolist() and r[0].names == ("rows", "k")
    assert r[1].shape == (0, 3) and r[2].shape == (2, 0) and r[3].shape == (0, 2, 4)
    assert r[4].tolist() == xa.tolist() and r[4].names == ("rows", None)
    along = np.array([[0, 3, 3], [1, 1, 2], [2, 0, 0]])
    assert r[5].tolist() == np.take_along_axis(xa, along, 1).tolist()
    assert r[5].names == ("rows", None)


def test_duplicates_put_last_and_add_accumulate_on_every_path():
    x = nx.tensor(np.zeros(4, np.float32))
    i = nx.tensor([[1], [2], [1], [1]])
    u = nx.tensor([1.0, 2.0, 3.0, 4.0])
    for f in (lambda x, i, u: nx.indexed_put(x, i, u), lambda x, i, u: nx.indexed_add(x, i, u)):
        res = [f(x, i, u).tolist()] + [jit(f, compiler=c)(x, i, u).tolist()
                                       for c in COMPILERS]
        assert res[0] == res[1] == res[2], res
    assert nx.indexed_put(x, i, u).tolist() == [0.0, 4.0, 2.0, 0.0]
    assert nx.indexed_add(x, i, u).tolist() == [0.0, 8.0, 2.0, 0.0]


def test_windowed_updates_and_axes():
    t = nx.iota((3, 4))
    # updates narrower than the non-indexed axis are written at offset 0
    r = nx.indexed_add(t, nx.tensor([[2], [0]]), nx.tensor([[10, 10], [1, 1]]))
    assert r.tolist() == [[1, 2, 2, 3], [4, 5, 6, 7], [18, 19, 10, 11]]
    assert jit(lambda t: nx.indexed_add(t, nx.tensor([[2], [0]]), nx.tensor([[10, 10], [1, 1]])),
               compiler="exla")(t).tolist() == r.tolist()
    r = nx.indexed_put(t, nx.tensor([[3], [1]]), nx.tensor([[-1, -2, -3], [-4, -5, -6]]), axes=[1])
    assert r.tolist() == [[0, -4, 2, -1], [4, -5, 6, -2], [8, -6, 10, -3]]


# ----------------------------------------------------------------------------------------
# Nx's doctests (values, types, shapes, names)
# ----------------------------------------------------------------------------------------
def _is(t, type_, shape, values, names=None):
    assert str(t.type) == type_ and t.shape == shape and t.tolist() == values, \
        (t.type, t.shape, t.tolist())
    if names is not None:
        assert list(t.names) == names


def test_nx_doctests_slice():
    _is(nx.slice(nx.tensor([1, 2, 3, 4, 5, 6]), [0], [3]), "s32", (3,), [1, 2, 3])
    _is(nx.slice(nx.tensor([1, 2, 3, 4, 5, 6]), [0], [6], strides=[2]), "s32", (3,), [1, 3, 5])
    _is(nx.slice(nx.tensor([[1, 2], [3, 4], [5, 6]]), [0, 0], [3, 2], strides=[2, 1]), "s32",
        (2, 2), [[1, 2], [5, 6]])
    _is(nx.slice(nx.tensor([[1, 2], [3, 4], [5, 6]]), [0, 0], [3, 2], strides=2), "s32", (2, 1),
        [[1], [5]])
    t = nx.iota((2, 15, 30))
    _is(nx.slice(t, [0, 4, 11], [2, 3, 9], strides=[2, 1, 3]), "s32", (1, 3, 3),
        [[[131, 134, 137], [161, 164, 167], [191, 194, 197]]])
    _is(nx.slice(nx.tensor([[1, 2, 3], [4, 5, 6]]), [nx.tensor(1), nx.tensor(2)], [1, 1]), "s32",
        (1, 1), [[6]])
    t = nx.tensor([[0.0] * 7] * 2 + [[1.0] * 7] * 4)
    _is(nx.slice(t, [nx.tensor(0), nx.tensor(0)], [6, 7], strides=[5, 3]), "f32", (2, 3),
        [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])
    _is(nx.slice(nx.iota((3, 3)), [2, 2], [1, 1]), "s32", (1, 1), [[8]])
    _is(nx.slice(nx.iota((3, 3)), [2, 2], [2, 2]), "s32", (2, 2), [[4, 5], [7, 8]])
    _is(nx.slice(nx.iota((3, 3)), [nx.tensor(2), nx.tensor(2)], [2, 2]), "s32", (2, 2),
        [[4, 5], [7, 8]])
    _is(nx.slice(nx.tensor(42), [], []), "s32", (), 42)
    # negative integer starts clamp to 0, as tensor ones do (Nx's reference backend)
    _is(nx.slice(nx.iota((3, 3)), [-1, 1], [2, 2]), "s32", (2, 2), [[1, 2], [4, 5]])


def test_nx_doctests_slice_along_axis():
    _is(nx.slice_along_axis(nx.iota((5, 2)), 1, 2, axis=0), "s32", (2, 2), [[2, 3], [4, 5]])
    _is(nx.slice_along_axis(nx.iota((2, 5)), 1, 2, axis=1), "s32", (2, 2), [[1, 2], [6, 7]])
    _is(nx.slice_along_axis(nx.iota((2, 5), names=["x", "y"]), 0, 1, axis="x"), "s32", (1, 5),
        [[0, 1, 2, 3, 4]], ["x", "y"])
    _is(nx.slice_along_axis(nx.iota((2, 5), names=["x", "y"]), nx.tensor(0), 1, axis="x"), "s32",
        (1, 5), [[0, 1, 2, 3, 4]], ["x", "y"])
    _is(nx.slice_along_axis(nx.iota((2, 5)), 0, 3, axis=-1, strides=2), "s32", (2, 2),
        [[0, 2], [5, 7]])


def test_nx_doctests_put_slice():
    _is(nx.put_slice(nx.tensor([0, 1, 2, 3, 4]), [2], nx.tensor([5, 6])), "s32", (5,),
        [0, 1, 5, 6, 4])
    t = nx.tensor([[1, 2, 3], [4, 5, 6]])
    _is(nx.put_slice(t, [0, 1], nx.tensor([[7, 8], [9, 10]])), "s32", (2, 3),
        [[1, 7, 8], [4, 9, 10]])
    _is(nx.put_slice(t, [nx.tensor(0), nx.tensor(1)], nx.tensor([[10.0, 11.0]])), "f32", (2, 3),
        [[1.0, 10.0, 11.0], [4.0, 5.0, 6.0]])
    _is(nx.put_slice(t, [1, 1], nx.tensor([[7, 8], [9, 10]])), "s32", (2, 3),
        [[1, 7, 8], [4, 9, 10]])
    _is(nx.put_slice(t, [-3, 9], nx.tensor([[7]])), "s32", (2, 3), [[1, 2, 7], [4, 5, 6]])


def test_nx_doctests_take():
    t = nx.tensor([[1, 2], [3, 4]])
    _is(nx.take(t, nx.tensor([1, 0, 1])), "s32", (3, 2), [[3, 4], [1, 2], [3, 4]])
    _is(nx.take(t, nx.tensor([1, 0, 1]), axis=1), "s32", (2, 3), [[2, 1, 2], [4, 3, 4]])
    _is(nx.take(nx.tensor([[1, 2], [3, 4]], names=["x", "y"]), nx.tensor([1, 0, 1]), axis="y"),
        "s32", (2, 3), [[2, 1, 2], [4, 3, 4]], ["x", "y"])
    t = nx.tensor([[[1, 2], [11, 12]], [[101, 102], [111, 112]]])
    _is(nx.take(t, nx.tensor([1, 0, 1]), axis=1), "s32", (2, 3, 2),
        [[[11, 12], [1, 2], [11, 12]], [[111, 112], [101, 102], [111, 112]]])
    _is(nx.take(nx.tensor([[1, 2], [11, 12]]), nx.tensor([[0, 0], [1, 1], [0, 0]]), axis=1), "s32",
        (2, 3, 2), [[[1, 1], [2, 2], [1, 1]], [[11, 11], [12, 12], [11, 11]]])
    r = nx.take(t, nx.tensor([[0, 0, 0], [1, 1, 1], [0, 0, 0]]), axis=1)
    assert r.shape == (2, 3, 3, 2) and r.tolist()[1][1] == [[111, 112]] * 3
    # x[tensor] is take along the leading axis
    _is(nx.tensor([[1, 2], [3, 4]])[nx.tensor([[1, 0, 1]])], "s32", (1, 3, 2),
        [[[3, 4], [1, 2], [3, 4]]])
    # Nx clamps a negative tensor index (here to 0: 1); nxpy counts it from the end, as
    # NumPy and jax.numpy do (docs/ops_indexing.md)
    _is(nx.tensor([[1, 2], [3, 4]])[nx.tensor(-1)][nx.tensor(-1)], "s32", (), 4)


def test_nx_doctests_take_along_axis():
    t = nx.tensor([[1, 2, 3], [4, 5, 6]])
    _is(nx.take_along_axis(t, nx.tensor([[0, 0, 2, 2, 1, 1], [2, 2, 1, 1, 0, 0]]), axis=1), "s32",
        (2, 6), [[1, 1, 3, 3, 2, 2], [6, 6, 5, 5, 4, 4]])
    _is(nx.take_along_axis(t, nx.tensor([[0, 1, 1], [1, 0, 0], [0, 1, 0]]), axis=0), "s32", (3, 3),
        [[1, 5, 6], [4, 2, 3], [1, 5, 3]])
    t = nx.tensor([[[1, 2], [3, 4], [5, 6]]])
    _is(nx.take_along_axis(t, nx.tensor([[[2, 2], [1, 1], [0, 0]]]), axis=1), "s32", (1, 3, 2),
        [[[5, 6], [3, 4], [1, 2]]])
    _is(nx.take_along_axis(t, nx.tensor([[[1, 0], [1, 0], [1, 0]]]), axis=2), "s32", (1, 3, 2),
        [[[2, 1], [4, 3], [6, 5]]])


def test_nx_doctests_gather():
    t = nx.tensor([[1, 2], [3, 4]])
    _is(nx.gather(t, nx.tensor([[1, 1], [0, 1], [1, 0]])), "s32", (3,), [4, 2, 3])
    _is(nx.gather(t, nx.tensor([[[1, 1], [0, 0]], [[1, 0], [0, 1]]])), "s32", (2, 2),
        [[4, 1], [3, 2]])
    t = nx.tensor([[[1, 2], [11, 12]], [[101, 102], [111, 112]]])
    _is(nx.gather(t, nx.tensor([[0, 0, 0], [0, 1, 1], [1, 1, 1]])), "s32", (3,), [1, 12, 112])
    _is(nx.gather(nx.tensor([[1, 2, 3], [3, 4, 5]]), nx.tensor([[1], [0]])), "s32", (2, 3),
        [[3, 4, 5], [1, 2, 3]])
    _is(nx.gather(nx.tensor([[1, 2, 3], [4, 5, 6]]), nx.tensor([[1], [0], [2], [1]]), axes=[1]),
        "s32", (4, 2), [[2, 5], [1, 4], [3, 6], [2, 5]])
    _is(nx.gather(nx.iota((2, 1, 3)), nx.tensor([[[1], [0], [2]]]), axes=[2]), "s32", (1, 3, 2, 1),
        [[[[1], [4]], [[0], [3]], [[2], [5]]]], [None] * 4)


def test_nx_doctests_indexed_add():
    _is(nx.indexed_add(nx.tensor([[1], [2]]), nx.tensor([1, 0]), 8), "s32", (2, 1), [[1], [10]])
    idx = nx.tensor([[0, 0, 0], [0, 1, 1], [0, 0, 0], [0, 0, 2], [0, 1, 2]])
    _is(nx.indexed_add(nx.iota((1, 2, 3)), idx, nx.tensor([1, 3, 1, -2, 5])), "s32", (1, 2, 3),
        [[[2, 1, 0], [3, 7, 10]]])
    _is(nx.indexed_add(nx.tensor([1.0]), nx.tensor([[0], [0]]), nx.tensor([1, 1])), "f32", (1,),
        [3.0])
    _is(nx.indexed_add(nx.tensor([1]), nx.tensor([[0], [0]]), nx.tensor([1.0, 1.0])), "f32", (1,),
        [3.0])
    _is(nx.indexed_add(nx.tensor([1], type="s32"), nx.tensor([[0], [0]]),
                       nx.tensor([1, 1], type="s64")),
        "s64", (1,), [3])


def test_nx_doctests_indexed_put():
    _is(nx.indexed_put(nx.tensor([[1], [2]]), nx.tensor([1, 0]), 10), "s32", (2, 1), [[1], [10]])
    _is(nx.indexed_put(nx.tensor([0, 0, 0]), nx.tensor([[1], [2]]), nx.tensor([2, 4])), "s32", (3,),
        [0, 2, 4])
    _is(nx.indexed_put(nx.tensor([0, 0, 0]), nx.tensor([[1], [2]]), nx.tensor([3, 4])), "s32", (3,),
        [0, 3, 4])
    idx = nx.tensor([[0, 0, 0], [0, 1, 1], [0, 0, 2]])
    _is(nx.indexed_put(nx.iota((1, 2, 3)), idx, nx.tensor([1, 3, -2])), "s32", (1, 2, 3),
        [[[1, 1, -2], [3, 3, 5]]])
    _is(nx.indexed_put(nx.iota((1, 3, 2)), nx.tensor([[0, 0], [0, 2]]),
                       nx.tensor([[0, 10], [40, 50]])),
        "s32", (1, 3, 2), [[[0, 10], [2, 3], [40, 50]]])
    _is(nx.indexed_put(nx.iota((1, 2, 3)), nx.tensor([[0, 0], [0, 2]]),
                       nx.tensor([[0, 30], [20, 50]]), axes=[0, 2]),
        "s32", (1, 2, 3), [[[0, 1, 20], [30, 4, 50]]])
    _is(nx.indexed_put(nx.tensor([1.0]), nx.tensor([[0]]), nx.tensor([3])), "f32", (1,), [3.0])
    _is(nx.indexed_put(nx.tensor([1]), nx.tensor([[0]]), nx.tensor([3.0])), "f32", (1,), [3.0])
    _is(nx.indexed_put(nx.tensor([1], type="s32"), nx.tensor([[0]]), nx.tensor([3], type="s64")),
        "s64", (1,), [3])


# ----------------------------------------------------------------------------------------
# Errors: raised by the front end, before anything reaches XLA
# ----------------------------------------------------------------------------------------
ERRORS = [
    (lambda: nx.take(nx.tensor([[1, 2], [3, 4]]), nx.tensor([1.0, 0.0])), TypeError,
     "indices must be an integer tensor, got type f32"),
    (lambda: nx.take(nx.tensor([1, 2]), nx.tensor([True])), TypeError,
     "indices must be an integer tensor, got type pred"),
    (lambda: nx.take_along_axis(nx.iota((3, 3)), nx.tensor([[2.0], [1.0], [2.0]]), axis=1),
     TypeError, "integer tensor"),
    (lambda: nx.take_along_axis(nx.iota((2, 3, 4)), nx.iota((3, 10, 4)), axis=1), ValueError,
     "non-indexing dimensions must match. Expected {2, *, 4}"),
    (lambda: nx.take_along_axis(nx.iota((2, 3)), nx.iota((1, 2, 3)), axis=0), ValueError,
     "same number of dimensions"),
    (lambda: nx.gather(nx.tensor([[1, 2], [3, 4]]), nx.tensor([[0, 0]], type="f32")), TypeError,
     "integer tensor"),
    (lambda: nx.gather(nx.iota((3,)), nx.tensor(0)), ValueError,
     "expected indices rank to be at least 1, got: 0"),
    (lambda: nx.gather(nx.iota((3,)), nx.tensor([[0, 0]])), ValueError,
     "last dimension of indices (2)"),
    (lambda: nx.gather(nx.iota((2, 3)), nx.tensor([[0, 0]]), axes=[1, 0]), ValueError,
     "axes must be an ordered list"),
    (lambda: nx.gather(nx.iota((2, 3)), nx.tensor([[0, 0]]), axes=[1]), ValueError,
     "as many entries"),
    (lambda: nx.indexed_add(nx.tensor([[1], [2]]), nx.tensor([[[1, 2, 3]]]), nx.tensor([0])),
     ValueError, "indices must be a rank 1 or 2 tensor, got: 3"),
    (lambda: nx.indexed_add(nx.tensor([[1], [2]]), nx.tensor([[1, 2]]), nx.tensor([0, 1])),
     ValueError, "leading axis of indices (1, 2) and the leading axis of updates (2,)"),
    (lambda: nx.indexed_add(nx.tensor([[1, 2, 3]]), nx.tensor([[0]]), nx.tensor([[1, 2, 3, 4, 5]])),
     ValueError, "axis (1) of updates (1, 5) must be less than or equal to the axis (1) of (1, 3)"),
    (lambda: nx.indexed_put(nx.iota((1, 2, 3)), nx.tensor([[0, 1, 2]]), nx.tensor([10]),
                            axes=[1, 0, 2]), ValueError, "axes must be an ordered list"),
    (lambda: nx.indexed_put(nx.iota((2, 2)), nx.tensor([0]), 1), ValueError,
     "expected indices to have shape (2,)"),
    (lambda: nx.indexed_put(nx.iota((2, 2)), nx.tensor([0, 1]), nx.tensor([1, 2])), ValueError,
     "updates must be a scalar"),
    (lambda: nx.indexed_add(nx.iota((2, 2)), nx.tensor([[0]], type="f32"), nx.tensor([[1, 2]])),
     TypeError, "integer tensor"),
    (lambda: nx.slice(nx.tensor([[1, 2, 3], [4, 5, 6]]), [nx.tensor([1, 2]), nx.tensor(1)], [1, 1]),
     TypeError,
     "start index 0 must be an int or a scalar integer tensor, got a tensor of shape (2,)"),
    (lambda: nx.slice(nx.tensor([[1, 2, 3], [4, 5, 6]]), [nx.tensor(1.0), nx.tensor(0)], [1, 1]),
     TypeError, "got type f32"),
    (lambda: nx.slice(nx.iota((2, 15, 30)), [1, 4, 10], [3, 1, 1]), ValueError,
     "length at axis 0 must be between 0 and the axis size 2, got 3"),
    (lambda: nx.slice(nx.iota((3,)), [0], [1], strides=[0]), ValueError, "stride at axis 0"),
    (lambda: nx.slice_along_axis(nx.iota((2, 3)), 0, 1, axis=2), ValueError,
     "given axis (2) invalid"),
    (lambda: nx.slice_along_axis(nx.iota((2, 3)), 0, 1.5), TypeError, "length to be an int"),
    (lambda: nx.put_slice(nx.iota((2, 3)), [0, 0], nx.iota((3, 1))), ValueError, "does not fit"),
    (lambda: nx.iota((2, 2))[nx.tensor([True, False])], IndexError,
     "boolean-mask indexing gives a shape that depends on the values"),
    (lambda: nx.gather(nx.iota((0, 3)), nx.tensor([[0]])), ValueError, "axis 0, of size 0"),
    (lambda: nx.take(nx.iota((2, 3), names=[None, "data"]), nx.tensor([0], names=["re"]), axis=1),
     ValueError, "cannot merge names 'data' and 're'"),
]


@pytest.mark.parametrize("fn,exc,msg", ERRORS, ids=[f"e{i}" for i in range(len(ERRORS))])
def test_errors(fn, exc, msg, monkeypatch):
    monkeypatch.setattr(pjrt, "compile", lambda *a, **k: pytest.fail("reached XLA"))
    with pytest.raises(exc) as e:
        fn()
    assert msg in str(e.value)


# ----------------------------------------------------------------------------------------
# Lowering: the StableHLO forms JAX uses
# ----------------------------------------------------------------------------------------
def test_lowering_uses_jax_dimension_numbers():
    text = to_mlir(lambda x, i, u: (nx.take(x, i), nx.indexed_add(x, nx.new_axis(i, 1), u)),
                   nx.template((5, 4), "f32"), nx.template((3,), "s32"), nx.template((3, 4), "f32"))
    m = parse(text)
    (g,) = m.find("stablehlo.gather")
    dn = g.attributes["dimension_numbers"]
    assert (dn["offset_dims"], dn["collapsed_slice_dims"], dn["start_index_map"],
            dn["index_vector_dim"]) == ([1], [0], [0], 1)
    assert list(g.attributes["slice_sizes"]) == [1, 4]
    (s,) = m.find("stablehlo.scatter")
    dn = s.attributes["scatter_dimension_numbers"]
    assert (dn["update_window_dims"], dn["inserted_window_dims"],
            dn["scatter_dims_to_operand_dims"]) == ([1], [0], [0])
    assert [o.name for o in s.regions[0].ops] == ["stablehlo.add", "stablehlo.return"]


# ----------------------------------------------------------------------------------------
# Gradients against jax.grad
# ----------------------------------------------------------------------------------------
_rng = np.random.default_rng(0)
GX = _rng.normal(size=(5, 4)).astype(np.float32)
GU = _rng.normal(size=(4, 3)).astype(np.float32)
GI = np.array([[1], [7], [1], [6]], np.int32)       # 7, 6: out of bounds (dropped by scatters)
GIU = np.array([[1], [7], [3], [0]], np.int32)      # unique, for indexed_put
GI2 = np.array([[1, 2], [0, 0], [1, 2], [4, 9], [1, 2]], np.int32)   # repeated, one dropped
GT = np.array([[0, 1, 1, 2]] * 5, np.int32)
GU4 = np.pad(GU, ((0, 0), (0, 1)))


def _put_target(idx):
    """indexed_put at rows ``idx``, differentiated with respect to the target."""
    return (lambda y: nx.sum(nx.sin(nx.indexed_put(y, nx.tensor(idx), nx.tensor(GU)))),
            lambda y: jnp.sum(jnp.sin(y.at[idx[:, 0], :3].set(GU, mode="drop"))), GX)


def _put_updates(idx):
    """indexed_put at rows ``idx``, differentiated with respect to the updates."""
    return (lambda v: nx.sum(nx.sin(nx.indexed_put(nx.tensor(GX), nx.tensor(idx), v))),
            lambda v: jnp.sum(jnp.sin(jnp.asarray(GX).at[idx[:, 0], :3].set(v, mode="drop"))), GU)


GRADS = {
    "gather": (lambda x: nx.sum(nx.gather(x, nx.tensor([[1], [-3], [9], [1]])) ** 2),
               lambda x: jnp.sum(jnp.take(x, jnp.array([1, 0, 4, 1]), axis=0) ** 2), GX),
    "gather2": (lambda x: nx.sum(nx.sin(nx.gather(x, nx.tensor([[1, 3], [4, 0], [1, 3]])))),
                lambda x: jnp.sum(jnp.sin(x[jnp.array([1, 4, 1]), jnp.array([3, 0, 3])])), GX),
    "take_axis1": (lambda x: nx.sum(nx.take(x, nx.tensor([3, 0, 3]), axis=1) ** 3),
                   lambda x: jnp.sum(jnp.take(x, jnp.array([3, 0, 3]), axis=1) ** 3), GX),
    "take_along_axis": (lambda x: nx.sum(nx.take_along_axis(x, nx.tensor(GT), axis=1) ** 3),
                        lambda x: jnp.sum(jnp.take_along_axis(x, jnp.asarray(GT), axis=1) ** 3),
                        GX),
    "indexed_add_target": (
        lambda x: nx.sum(nx.sin(nx.indexed_add(x, nx.tensor(GI), nx.tensor(GU4)))),
        lambda x: jnp.sum(jnp.sin(x.at[GI[:, 0]].add(GU4, mode="drop"))), GX),
    "indexed_add_updates": (
        lambda v: nx.sum(nx.sin(nx.indexed_add(nx.tensor(GX), nx.tensor(GI), v))),
        lambda v: jnp.sum(jnp.sin(jnp.asarray(GX).at[GI[:, 0], :3].add(v, mode="drop"))), GU),
    "indexed_put_target": _put_target(GIU),
    "indexed_put_updates": _put_updates(GIU),
    # repeated indices: only the update that is left in the result (the last) gets a gradient
    "indexed_put_target_repeated": _put_target(GI),
    "indexed_put_updates_repeated": _put_updates(GI),
    "indexed_put_points_repeated": (
        lambda v: nx.sum(nx.indexed_put(nx.tensor(GX), nx.tensor(GI2), v) ** 3),
        lambda v: jnp.sum(jnp.asarray(GX).at[GI2[:, 0], GI2[:, 1]].set(v, mode="drop") ** 3),
        np.linspace(0.5, 1.5, 5, dtype=np.float32)),
    "slice_along_axis": (lambda x: nx.sum(nx.slice_along_axis(x, 3, 2, axis=0, strides=1) ** 2),
                         lambda x: jnp.sum(x[3:5] ** 2), GX),
    "slice_clamped": (lambda x: nx.sum(nx.slice(x, [4, -1], [2, 3]) ** 2),
                      lambda x: jnp.sum(x[3:5, 0:3] ** 2), GX),
    "x[tensor]": (lambda x: nx.sum(x[nx.tensor([[4, 0], [0, 2]])] ** 2),
                  lambda x: jnp.sum(x[jnp.array([[4, 0], [0, 2]])] ** 2), GX),
}


@pytest.mark.parametrize("path", EAGER_JIT)
@pytest.mark.parametrize("name", list(GRADS))
def test_grad_matches_jax(name, path):
    nf, jf, a = GRADS[name]
    want = np.asarray(jax.grad(jf)(jnp.asarray(a)))
    g = grad(nf)
    got = on(path, g)(nx.tensor(a))
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("path", COMPILERS)
@pytest.mark.parametrize("name", list(GRADS))
def test_jvp_matches_jax(name, path):
    nf, jf, a = GRADS[name]
    jvp_matches_jax(nf, jf, (a,), path, 2e-5)


# ----------------------------------------------------------------------------------------
# The importer: JAX's gather and scatter forms
# ----------------------------------------------------------------------------------------
_X = _rng.normal(size=(5, 4)).astype(np.float32)
_X3 = _rng.normal(size=(3, 5, 4)).astype(np.float32)
_I = np.array([1, 3, 0], np.int32)
IMPORTS = {
    "jnp.take (embedding)": (lambda x, i: jnp.take(x, i, axis=0), _X,
                             np.array([[1, 2], [3, 4]], np.int32)),
    "jnp.take axis=1 clip": (lambda x, i: jnp.take(x, i, axis=1, mode="clip"), _X,
                             np.array([[1, 9], [3, 0]], np.int32)),
    "x[:, i]": (lambda x, i: x[:, i], _X, _I),
    "x[i, 1:3]": (lambda x, i: x[i, 1:3], _X, _I),
    "x[i, i]": (lambda x, i: x[i, i], _X, _I),
    "x[:, i, 2]": (lambda x, i: x[:, i, 2], _X3, _I),
    "x[i, :, i]": (lambda x, i: x[i, :, i], _X3, _I),
    "take_along_axis 0": (lambda x, i: jnp.take_along_axis(x, i, axis=0), _X,
                          np.array([[1, 0, 2, 3], [0, 0, 1, 4]], np.int32)),
    "take_along_axis 3d": (lambda x, i: jnp.take_along_axis(x, i, axis=1), _X3,
                           _rng.integers(0, 5, (3, 2, 4)).astype(np.int32)),
    "x.at[i].get()": (lambda x, i: x.at[i].get(), _X, _I),
    "x.at[i].set(v)": (lambda x, i: x.at[i].set(2.0), _X, _I),
    "x.at[i].add(v)": (lambda x, i: x.at[i].add(1.5), _X, np.array([1, 1, 3], np.int32)),
    "x.at[:, i].add(v)": (lambda x, i: x.at[:, i].add(1.0), _X, _I),
    "x.at[i, 1:3].set(v)": (lambda x, i: x.at[i, 1:3].set(7.0), _X, _I),
    "x.at[i, :, i].add(v)": (lambda x, i: x.at[i, :, i].add(1.0), _X3, _I),
    "grad of take": (jax.grad(lambda x, i: jnp.sum(jnp.take(x, i, axis=0) ** 2)), _X,
                     np.array([[1, 2], [1, 4]], np.int32)),
}


@pytest.mark.parametrize("name", list(IMPORTS))
def test_importer_runs_jax_programs(name):
    f, a, b = IMPORTS[name]
    want = np.asarray(jax.jit(f)(a, b))
    prog = load(jax.jit(f).lower(a, b).as_text())
    eager = prog(nx.tensor(a), nx.tensor(b)).to_numpy()
    compiled = jit(prog, compiler="exla")(nx.tensor(a), nx.tensor(b)).to_numpy()
    np.testing.assert_allclose(eager, want, rtol=1e-6)
    np.testing.assert_allclose(compiled, want, rtol=1e-6)


def test_importer_names_an_unsupported_scatter():
    text = jax.jit(lambda x, i: x.at[i].multiply(2.0)).lower(_X, _I).as_text()
    with pytest.raises(UnsupportedOpError, match="stablehlo.scatter at line .*not add"):
        load(text)(nx.tensor(_X), nx.tensor(_I))


# ----------------------------------------------------------------------------------------
# Sharding: the gathered axis sharded under shard_jit gives the unsharded result
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("compiler", COMPILERS)
def test_shard_jit_along_the_indexed_axis(compiler):
    mesh = nx.Mesh("mesh", (2, 2))
    x = nx.tensor(np.arange(32, dtype=np.float32).reshape(8, 4))
    i = nx.tensor([7, 0, 3, 3, 5, 1])
    progs = [(lambda x, i: nx.take(x, i), [{0: [0]}, {}]),
             (lambda x, i: nx.take(x, i, axis=1) + 0 * nx.sum(x), [{1: [0, 1]}, {}]),
             (lambda x, i: nx.indexed_add(x, nx.new_axis(i, 1), nx.full((6, 4), 1.0)),
              [{0: [0, 1]}, {}]),
             (lambda x, i: nx.gather(x, nx.stack([i, i % 4], axis=1)), [{0: [1]}, {0: [0]}])]
    for f, ins in progs:
        args = [list(p) for p in zip(*[SH.shard(t, mesh, s) for t, s in zip([x, i], ins)])]
        want = f(x, i).to_numpy()
        for r in shard_jit(f, mesh, input_shardings=ins, compiler=compiler)(args):
            np.testing.assert_array_equal(r.to_numpy(), want)
