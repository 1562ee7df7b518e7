"""The last bad inputs (issue 44, part 3): each, tried as a user would, is an nxpy error
that names the argument and the fix, raised by the front end before anything reaches
XLA: never a silent value, never an internal op's message. Beside each case, where
NumPy or JAX raise too, the same class; where nxpy is stricter, docs/guarantees.md says
so. The values that stay accepted are checked too, so a check that rejects too much
fails here."""
import numpy as np
import pytest

import nxpy as nx
import nxpy.nn as nn
import nxpy.numpy as xnp
from nxpy import interop
from nxpy.defn import (associative_scan, checkpoint, cond, fori_loop, jit, jvp, linearize,
                       map as nx_map, scan, shard_jit, shard_map, while_loop,
                       with_sharding_constraint)

import jax  # after nxpy (nxpy's conftest starts XLA)
import jax.numpy as jnp

X = nx.tensor([1.0, 2.0, 3.0])
TRACED = "a Python value, got a traced tensor .*static_argnums"


def _body(c, x):
    return c + x, x


# ----------------------------------------------------------------------------------------
# jit and shard_jit options
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("opts, match", [
    ({"out_shardings": 3.5}, r"jit\(<lambda>\): expected out_shardings to be a P "
                             r"\(PartitionSpec\), a NamedSharding.*got 3.5 \(float\)"),
    ({"in_shardings": 3.5}, r"expected in_shardings to be a P .*got 3.5"),
    ({"in_shardings": "x"}, r"expected in_shardings to be .*got 'x' \(str\)"),
    ({"in_shardings": [None, 3.5]}, r"got 3.5 \(float\) at in_shardings\[1\]"),
    ({"out_shardings": {"a": nx.P(), "b": 1.5}}, r"got 1.5 \(float\) at out_shardings\['b'\]"),
    ({"out_shardings": (1.5,)}, r"got 1.5 \(float\) at out_shardings\[0\]"),
    ({"static_argnums": True}, r"static_argnums must be an int or a sequence of ints.*True"),
    ({"static_argnums": [0, False]}, r"static_argnums must be an int .*False"),
])
def test_jit_options_of_the_wrong_kind(opts, match):
    with pytest.raises(TypeError, match=match):
        jit(lambda a: a + 1, **opts)(X)


def test_jit_shardings_that_stay_accepted():
    mesh = nx.Mesh("m", (1,))
    assert jit(lambda a: a + 1, in_shardings=nx.P(), out_shardings=[{}], mesh=mesh)(
        X).tolist() == [2.0, 3.0, 4.0]
    assert jit(lambda a: a + 1, in_shardings=(None,), mesh=mesh)(X).tolist() == [2.0, 3.0, 4.0]
    assert jit(lambda a, n: a * n, static_argnums=np.int64(1))(X, 2).tolist() == [2.0, 4.0, 6.0]


def test_shard_jit_check_replicas_is_a_bool():
    mesh = nx.Mesh("m", (2,))
    with pytest.raises(TypeError, match=r"shard_jit: expected check_replicas to be a bool, "
                                        r"got 'yes' \(str\)"):
        shard_jit(lambda a: a + 1, mesh, input_shardings=[{}], check_replicas="yes")
    f = shard_jit(lambda a: a + 1, mesh, input_shardings=[{}], check_replicas=False)
    assert [r.tolist() for r in f([[X], [X]])] == [[2.0, 3.0, 4.0]] * 2


def test_sharding_constraints_and_shard_map_flags_of_the_wrong_kind():
    with pytest.raises(TypeError, match=r"with_sharding_constraint: expected sharding to be a "
                                        r"P \(PartitionSpec\).*got 3.5 \(float\)"):
        jit(lambda a: with_sharding_constraint(a, 3.5))(X)
    mesh = nx.Mesh("m", (1,), axis_names=("x",))
    with pytest.raises(TypeError, match=r"shard_map: expected check_vma to be a bool, got "
                                        r"'yes' \(str\)"):
        shard_map(lambda a: a, mesh, in_specs=nx.P("x"), out_specs=nx.P("x"), check_vma="yes")
    assert shard_map(lambda a: a, mesh, in_specs=nx.P("x"), out_specs=nx.P("x"),
                     check_vma=False)(X).tolist() == [1.0, 2.0, 3.0]


# ----------------------------------------------------------------------------------------
# Control flow: a Python value where one is needed, never a tensor read by its truth
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("fun, args, match", [
    (lambda r, xs: scan(_body, 0.0, xs, reverse=r), (True, X), "scan: expected reverse to be"),
    (lambda n: scan(lambda c, _: (c + 1.0, c), 0.0, None, length=n), (3,),
     "scan: expected length to be"),
    (lambda n, xs: scan(_body, 0.0, xs, unroll=n), (2, X), "scan: expected unroll to be"),
    (lambda n, xs: nx_map(lambda e: e * 2, xs, batch_size=n), (2, X),
     "map: expected batch_size to be"),
    (lambda r, xs: associative_scan(nx.add, xs, reverse=r), (True, X),
     "associative_scan: expected reverse to be"),
    (lambda a, xs: associative_scan(nx.add, xs, axis=a), (0, X),
     "associative_scan: expected axis to be"),
    (lambda n: while_loop(lambda s: s < 10, lambda s: s + 1, 0, max_iterations=n), (3,),
     "while_loop: expected max_iterations to be"),
    (lambda n, a: nx.reshape(a, (n, -1)), (3, X), "reshape: expected shape entries to be"),
    (lambda n, a: nx.sum(a, axes=[n]), (0, X), "expected axis to be"),
])
def test_a_traced_tensor_where_a_python_value_is_needed(fun, args, match):
    with pytest.raises(TypeError, match=match + " " + TRACED):
        jit(fun)(*args)


@pytest.mark.parametrize("call, match", [
    (lambda: scan(_body, 0.0, X, reverse="yes"), r"scan: expected reverse to be a bool, got "
                                                 r"'yes' \(str\)"),
    (lambda: scan(_body, 0.0, X, reverse=None), "scan: expected reverse to be a bool, got None"),
    (lambda: scan(_body, 0.0, X, reverse=1), r"scan: expected reverse to be a bool, got 1 \(int"),
    (lambda: associative_scan(nx.add, X, reverse="yes"),
     "associative_scan: expected reverse to be a bool"),
    (lambda: associative_scan(nx.add, X, axis=0.0),
     r"associative_scan: expected axis to be an integer, got 0.0 \(float\)"),
    (lambda: fori_loop(0, 2.5, lambda i, v: v + 1, 0),
     r"fori_loop: expected upper to be an integer or a scalar integer tensor, got 2.5"),
    (lambda: fori_loop("a", 3, lambda i, v: v + 1, 0), "fori_loop: expected lower to be an"),
    (lambda: jit(lambda a: fori_loop(0, a, lambda i, v: v + 1, 0))(nx.tensor(2.0)),
     "fori_loop: expected upper to be an integer or a scalar integer tensor"),
    (lambda: jit(lambda a: cond("x", lambda: a, lambda: -a))(X),
     r"cond: expected pred to be a scalar tensor, a bool or a real number, got 'x' \(str\)"),
    (lambda: jit(lambda a: cond([(None, lambda: a), (True, lambda: -a)]))(X),
     "cond: expected pred to be a scalar tensor, a bool or a real number, got None"),
    (lambda: checkpoint(lambda a: a, prevent_cse="no"),
     r"checkpoint: expected prevent_cse to be a bool, got 'no' \(str\)"),
])
def test_control_flow_options_of_the_wrong_kind(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_control_flow_values_that_stay_accepted():
    assert scan(_body, 0.0, X, reverse=np.True_)[1].tolist() == [1.0, 2.0, 3.0]
    assert jit(lambda n: fori_loop(0, n, lambda i, v: v + 1, 0))(3).tolist() == 3
    assert int(fori_loop(np.int64(0), 3, lambda i, v: v + 1, 0)) == 3
    assert jit(lambda a: cond(np.array(True), lambda: a, lambda: -a))(X).tolist() == \
        [1.0, 2.0, 3.0]
    assert jit(lambda a: cond(0, lambda: a, lambda: -a))(X).tolist() == [-1.0, -2.0, -3.0]


# ----------------------------------------------------------------------------------------
# jvp: the tangent of an integer primal is zero (nxpy's float0: zeros of its own type)
# ----------------------------------------------------------------------------------------
def test_jvp_float_tangent_for_an_integer_primal_is_jax_s_type_error():
    p = nx.tensor([1, 2])
    with pytest.raises(TypeError, match=r"jvp: tangent leaf 0 has type f32, but its primal is "
                                        r"s32: the tangent of an integer or bool primal is "
                                        r"zero.*zeros_like"):
        jvp(lambda a: a * 2, (p,), (nx.tensor([1.0, 2.0]),))
    with pytest.raises(TypeError, match="but its primal is s32"):   # inside jit too
        jit(lambda q: jvp(lambda a: a * 2, (q,), (nx.tensor([1.0, 1.0]),)))(p)
    with pytest.raises(TypeError, match="tangent leaf 0 has type s64, but its primal is s32"):
        jvp(lambda a: a * 2, (p,), (nx.tensor([0, 0], type="s64"),))
    with pytest.raises(TypeError, match="tangent leaf 0 has type f32, but its primal is pred"):
        jvp(lambda b: nx.select(b, 1.0, 2.0), (nx.tensor(True),), (nx.tensor(1.0),))
    with pytest.raises(ValueError, match=r"tangent leaf 0 has shape \[3\], its primal s32\[2\]"):
        jvp(lambda a: a * 2, (p,), (nx.tensor([0, 0, 0]),))
    _, f_jvp = linearize(lambda a, b: a * b, nx.tensor([1.0]), nx.tensor([2]))
    with pytest.raises(TypeError, match="tangent leaf 1 has type f32, but its primal is s32"):
        f_jvp(nx.tensor([1.0]), nx.tensor([1.0]))


def test_jvp_zero_tangents_of_integer_primals_as_nxpy_and_jax_spell_them():
    p, f = nx.tensor([1, 2]), (lambda x, n: x * n)
    want = jax.jvp(f, (np.array([1.0, 1.0], np.float32), np.array([1, 2], np.int32)),
                   (np.array([1.0, 1.0], np.float32), np.zeros(2, jax.dtypes.float0)))
    for zero in (xnp.zeros_like(p), np.zeros(2, np.int32), np.zeros(2, jax.dtypes.float0)):
        y, t = jvp(f, (nx.tensor([1.0, 1.0]), p), (nx.tensor([1.0, 1.0]), zero))
        assert (y.tolist(), t.tolist()) == (np.asarray(want[0]).tolist(),
                                            np.asarray(want[1]).tolist())
    y, t = jit(lambda q: jvp(lambda a: a * 2, (q,), (np.zeros(2, jax.dtypes.float0),)))(p)
    assert (y.tolist(), t.tolist()) == ([2, 4], [0, 0])


# ----------------------------------------------------------------------------------------
# nxpy.numpy: numbers never from strings, ranges NumPy checks, counts that are integers
# ----------------------------------------------------------------------------------------
V = np.array([1.0, 2.0, 3.0, 4.0])
M = V.reshape(2, 2)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: xnp.std(V, ddof="1"), TypeError, r"std: expected ddof to be a real number, got "
                                              r"'1' \(str\)"),
    (lambda: xnp.var(V, ddof=True), TypeError, "var: expected ddof to be a real number"),
    (lambda: xnp.nanstd(V, ddof="1"), TypeError, "nanstd: expected ddof to be a real number"),
    (lambda: xnp.nanvar(V, ddof=[1]), TypeError, "nanvar: expected ddof to be a real number"),
    (lambda: xnp.std(V, correction="1"), TypeError, "std: expected correction to be a real"),
    (lambda: xnp.cov(M, ddof="1"), TypeError, "cov: expected ddof to be a real number"),
    (lambda: xnp.quantile(V, 1.5), ValueError, r"quantile: expected q to be in the range "
                                               r"\[0, 1\], got 1.5"),
    (lambda: xnp.quantile(V, [0.5, -0.1]), ValueError, r"quantile: expected q to be in the "
                                                       r"range \[0, 1\]"),
    (lambda: xnp.quantile(V, np.nan), ValueError, r"expected q to be in the range \[0, 1\]"),
    (lambda: xnp.nanquantile(V, 1.5), ValueError, r"nanquantile: expected q to be in the range"),
    (lambda: xnp.percentile(V, 150), ValueError, r"percentile: expected q to be in the range "
                                                 r"\[0, 100\], got 150"),
    (lambda: xnp.nanpercentile(V, -1), ValueError, r"nanpercentile: expected q to be in the "
                                                   r"range \[0, 100\]"),
    (lambda: jit(lambda a: xnp.quantile(a, 1.5))(nx.tensor(V)), ValueError,
     r"quantile: expected q to be in the range"),
    (lambda: xnp.histogram(V, bins=2.5), TypeError, r"histogram_bin_edges: expected bins to be "
                                                    r"an int or a 1-D array of edges"),
    (lambda: xnp.histogram(V, bins=True), TypeError, "expected bins to be an int or a 1-D"),
    (lambda: jit(lambda a, n: xnp.histogram(a, bins=n))(nx.tensor(V), 3), TypeError,
     "histogram_bin_edges: expected bins to be " + TRACED),
    (lambda: xnp.histogram(V, range=5), TypeError, r"histogram: expected range to be a \(min, "
                                                   r"max\) pair or None, got 5"),
    (lambda: xnp.histogram(V, range=(3.0, 1.0)), ValueError,
     "histogram: expected range's max to be at least its min"),
    (lambda: xnp.interp(V, V, V, period=0), ValueError,
     "interp: expected period to be a non-zero number, got 0"),
    (lambda: xnp.reshape(V, (2.0, 2)), TypeError, "reshape: expected shape to be a sequence of "
                                                  "integers"),
    (lambda: xnp.reshape(V, 4.0), TypeError, r"reshape: expected shape to be an integer"),
    (lambda: xnp.tile(V, 1.5), TypeError, r"tile: expected reps to be an integer, got 1.5"),
    (lambda: xnp.roll(V, 1.5), TypeError, r"roll: expected shift to be an integer, got 1.5"),
    (lambda: xnp.roll(V, "1"), TypeError, r"roll: expected shift to be an integer, got '1'"),
    (lambda: xnp.roll(V, [1, 1.5], axis=(0, 0)), TypeError, "roll: expected shift to be a "
                                                            "sequence of integers"),
    (lambda: xnp.rot90(M, k=1.5), TypeError, r"rot90: expected k to be an integer, got 1.5"),
    (lambda: xnp.split(V, 1.5), TypeError, "split: expected indices_or_sections to be an "
                                           "integer, got 1.5"),
    (lambda: xnp.array_split(V, [1, 2.5]), TypeError, "array_split: expected "
                                                      "indices_or_sections to be a sequence"),
    (lambda: xnp.moveaxis(M, 0.0, 1), TypeError, "moveaxis: expected source to be an int"),
    (lambda: xnp.expand_dims(M, 0.0), TypeError, "expand_dims: expected axis to be None, an int"),
    (lambda: xnp.pad(V, 1.5), TypeError, "pad: expected pad_width to be a sequence of integers"),
    (lambda: xnp.trace(M, offset=1.5), TypeError, "diagonal: expected offset to be an integer"),
    (lambda: xnp.rollaxis(M, 0, 1.0), TypeError, "rollaxis: expected start to be an integer"),
    (lambda: xnp.diag_indices(2.0), TypeError, "diag_indices: expected n to be an integer"),
    (lambda: xnp.nan_to_num(V, nan="0"), TypeError, "nan_to_num: expected nan to be a real "
                                                    "number, got '0'"),
    (lambda: xnp.isclose(V, V, rtol="1e-5"), TypeError, "isclose: expected rtol to be a real"),
    (lambda: xnp.allclose(V, V, atol=None), TypeError, "isclose: expected atol to be a real"),
    (lambda: nx.tensor("1", type="f32"), TypeError, "tensor: cannot build a tensor from '1': "
                                                    "expected numbers, not strings"),
    (lambda: nx.tensor(["1", "2"], type="s32"), TypeError, "expected numbers, not strings"),
    (lambda: nx.full((2,), "1", type="f32"), TypeError, "full: value: cannot build a tensor "
                                                        "from '1'"),
])
def test_numpy_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_numpy_arguments_that_stay_accepted():
    """Floats for ddof (NumPy's and jnp's), a traced ddof and q (unchecked, as jnp), the
    ends of q's range, an empty histogram range, integer-valued NumPy scalars."""
    x = nx.tensor(V)
    assert xnp.std(V, ddof=1.5).item() == pytest.approx(np.std(V, ddof=1.5))
    assert xnp.var(V, ddof=np.int64(1)).item() == pytest.approx(np.var(V, ddof=1))
    assert xnp.var(V, ddof=np.array(1)).item() == pytest.approx(np.var(V, ddof=1))
    assert jit(lambda a, d: xnp.std(a, ddof=d))(x, 1).item() == pytest.approx(np.std(V, ddof=1))
    assert jit(lambda a, q: xnp.quantile(a, q))(x, 0.5).item() == np.quantile(V, 0.5)
    assert xnp.quantile(V, [0.0, 1.0]).tolist() == np.quantile(V, [0.0, 1.0]).tolist()
    assert xnp.percentile(V, 100).item() == np.percentile(V, 100)
    assert xnp.cov(M, ddof=0).tolist() == np.cov(M, ddof=0).tolist()
    assert xnp.histogram(V, bins=2, range=(1.0, 1.0))[0].tolist() == \
        np.histogram(V, bins=2, range=(1.0, 1.0))[0].tolist()
    assert xnp.roll(V, np.int32(1)).tolist() == np.roll(V, 1).tolist()
    assert xnp.reshape(V, np.array([2, 2])).shape == (2, 2)
    assert xnp.moveaxis(M, np.array([0]), [1]).shape == (2, 2)
    assert xnp.nan_to_num([np.nan], nan=2).tolist() == [2.0]
    edges = nx.tensor([0.0, 2.5, 5.0])  # traced edges are edges, not a count
    assert jit(lambda a, e: xnp.histogram(a, bins=e)[0])(x, edges).tolist() == \
        np.histogram(V, bins=[0.0, 2.5, 5.0])[0].tolist()


# ----------------------------------------------------------------------------------------
# nxpy.nn: optional tensors of a wrong shape, named; flags
# ----------------------------------------------------------------------------------------
Q = np.ones((2, 4, 2, 8), np.float32)      # (B, T, N, H)
K = np.ones((2, 5, 2, 8), np.float32)      # (B, S, K, H)
A = np.ones((2, 3), np.float32)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: nn.dot_product_attention(Q, K, K, bias=np.ones((3, 5), np.float32)), ValueError,
     r"dot_product_attention: expected bias to broadcast to the logits' shape \(B, N, T, S\) "
     r"= \(2, 2, 4, 5\).*got shape \(1, 1, 3, 5\)"),
    (lambda: nn.dot_product_attention(Q, K, K, bias=np.ones((3, 1, 4, 5), np.float32)),
     ValueError, r"expected bias to broadcast to the logits' shape"),
    (lambda: nn.dot_product_attention(Q, K, K, bias=np.ones((1, 3, 4, 5), np.float32)),
     ValueError, r"expected bias to broadcast .*the heads dimension 1 or N"),
    (lambda: nn.dot_product_attention(Q, K, K, mask=np.ones((1, 3), bool)), ValueError,
     r"expected mask to broadcast to the logits' shape .*got shape \(1, 1, 1, 3\)"),
    (lambda: nn.dot_product_attention(Q, K, K, bias="x"), TypeError,
     "dot_product_attention: expected bias to be a tensor"),
    (lambda: nn.dot_product_attention(Q, K, K, scale="x"), TypeError,
     "dot_product_attention: expected scale to be a real number"),
    (lambda: nn.dot_product_attention(Q, K, K, scale=np.ones(3)), TypeError,
     "dot_product_attention: expected scale to be a real number"),
    (lambda: nn.dot_product_attention(Q, K, K, is_causal="yes"), TypeError,
     "dot_product_attention: expected is_causal to be a bool, got 'yes'"),
    (lambda: nn.dot_product_attention(Q, K, K, return_residual=1), TypeError,
     "dot_product_attention: expected return_residual to be a bool"),
    (lambda: nn.standardize(A, mean=np.ones(4, np.float32)), ValueError,
     r"standardize: expected mean to broadcast with x's shape \(2, 3\), got shape \(4,\)"),
    (lambda: nn.standardize(A, variance=np.ones((5, 1), np.float32)), ValueError,
     "standardize: expected variance to broadcast"),
    (lambda: nn.standardize(A, epsilon="x"), TypeError, "standardize: expected epsilon to be"),
    (lambda: nn.leaky_relu(A, np.ones(4, np.float32)), ValueError,
     "leaky_relu: expected negative_slope to broadcast with x's shape"),
    (lambda: nn.leaky_relu(A, "x"), TypeError, "leaky_relu: expected negative_slope to be"),
    (lambda: nn.elu(A, np.ones(4, np.float32)), ValueError, "elu: expected alpha to broadcast"),
    (lambda: nn.celu(A, "x"), TypeError, "celu: expected alpha to be"),
    (lambda: nn.squareplus(A, np.ones(4, np.float32)), ValueError,
     "squareplus: expected b to broadcast"),
    (lambda: nn.logsumexp(A, b="x"), TypeError, "logsumexp: expected b to be a tensor"),
    (lambda: nn.logsumexp(A, return_sign="x"), TypeError,
     "logsumexp: expected return_sign to be a bool"),
    (lambda: nn.logmeanexp(A, where=np.ones(4, bool)), ValueError,
     "logmeanexp: expected where to broadcast"),
    (lambda: nn.gelu(A, approximate="x"), TypeError, "gelu: expected approximate to be a bool"),
    (lambda: jit(lambda n: nn.one_hot(nx.tensor([0, 1]), n))(3), TypeError,
     "one_hot: expected num_classes to be " + TRACED),
])
def test_nn_arguments(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_nn_arguments_that_stay_accepted():
    """What JAX broadcasts: a bias or mask with unit dims, per-row parameters, a scalar
    tensor scale (traced too)."""
    for kw in ({"bias": np.ones((1, 1, 1, 5), np.float32)}, {"bias": np.ones((4, 5))},
               {"mask": np.ones((2, 2, 4, 5), bool)}, {"scale": nx.tensor(0.5)},
               {"scale": np.float32(0.5)}, {"is_causal": np.True_}):
        want = jax.nn.dot_product_attention(Q, K, K, **{
            k: np.asarray(v) if isinstance(v, nx.Tensor) else v for k, v in kw.items()})
        got = nn.dot_product_attention(Q, K, K, **kw)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)
    assert jit(lambda s: nn.dot_product_attention(Q, K, K, scale=s))(nx.tensor(0.5)).shape == \
        Q.shape
    np.testing.assert_allclose(np.asarray(nn.standardize(A, mean=np.ones(3, np.float32))),
                               np.asarray(jax.nn.standardize(A, mean=np.ones(3, np.float32))))
    assert nn.leaky_relu(np.array([-1.0, 1.0]), np.array([0.5, 0.5])).tolist() == [-0.5, 1.0]


# ----------------------------------------------------------------------------------------
# Interop
# ----------------------------------------------------------------------------------------
def test_to_jax_under_jax_jit_says_to_make_a_python_number_static():
    rows = interop.to_jax(lambda a, n: nx.reshape(a, (n, -1)))
    six = jnp.ones(6)
    with pytest.raises(TypeError, match=r"(?s)to_jax\(<lambda>\): reshape: .*argument 1 of "
                                        r"<lambda> came in as a traced tensor: jax.jit traces "
                                        r"every argument, Python numbers too.*jax.jit\(\.\.\., "
                                        r"static_argnums=1\)"):
        jax.jit(rows)(six, 3)
    flip = interop.to_jax(lambda a, *, up: a if up > 0 else -a)
    with pytest.raises(nx.HostOnlyError, match=r"(?s)argument .up. of <lambda> came in as a traced "
                                               r"tensor.*static_argnames='up'"):
        jax.jit(flip)(six, up=1)
    # the fixes it names work, and eagerly a Python number reaches fn as it is (as in JAX)
    assert jax.jit(rows, static_argnums=1)(six, 3).shape == (3, 2)
    assert rows(six, 2).shape == (2, 3)
    assert jax.jit(flip, static_argnames="up")(six, up=-1).tolist() == [-1.0] * 6
    assert jax.jit(lambda a: rows(a, 3))(six).shape == (3, 2)


def test_from_jax_function_returning_no_array_names_it():
    """JAX's own message names nxpy's wrapper ("function flat at jax_functions.py")."""
    def greeting(x):
        return "hello"
    with pytest.raises(TypeError, match=r"from_jax: the JAX function 'greeting' returned str "
                                        r"'hello' as its result leaf 0"):
        interop.from_jax(greeting)(nx.tensor([1.0]))
    assert interop.from_jax(lambda x: (x, 3))(nx.tensor([1.0]))[1].tolist() == 3


@pytest.mark.parametrize("call, match", [
    (lambda: interop.to_jax_array("abc"), r"to_jax_array: expected an nxpy tensor \(or a "
                                          r"pytree holding some\), got 'abc' \(str\)"),
    (lambda: interop.to_jax_array(np.ones(2)), "to_jax_array: expected an nxpy tensor.*"
                                               "jnp.asarray"),
    (lambda: interop.to_jax_array({"n": 3}), "to_jax_array: expected an nxpy tensor"),
    (lambda: interop.from_jax_array([1, 2, 3]), r"from_jax_array: expected a jax.Array \(or a "
                                                r"pytree holding some\), got \[1, 2, 3\] "
                                                r"\(list\).*nx.tensor"),
    (lambda: interop.from_jax_array("abc"), "from_jax_array: expected a jax.Array"),
])
def test_array_conversions_with_nothing_to_convert(call, match):
    with pytest.raises(TypeError, match=match):
        call()


def test_array_conversions_of_mixed_trees_still_pass_other_leaves():
    e = nx.tensor([1.0, 2.0], backend="exla")
    tree = interop.to_jax_array({"a": e, "n": None, "k": [1.5]})
    assert tree["a"] is e.data and tree["k"] == [1.5]
    back = interop.from_jax_array({"a": tree["a"], "t": e, "k": [1.5]})
    assert back["a"].data is e.data and back["t"] is e and back["k"] == [1.5]
    assert interop.to_jax_array(None) is None and interop.from_jax_array({}) == {}
