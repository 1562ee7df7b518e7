"""The last bad inputs (issue 44, part 3): each, tried as a user would, is an nxpy error
that names the argument and the fix, raised by the front end before anything reaches
XLA: never a silent value, never an internal op's message. Beside each case, where
NumPy or JAX raise too, the same class; where nxpy is stricter, docs/guarantees.md says
so. The values that stay accepted are checked too, so a check that rejects too much
fails here."""
import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import (associative_scan, cond, fori_loop, jit, jvp, linearize, map as nx_map,
                       scan, shard_jit, while_loop)

import jax  # after nxpy (nxpy's conftest starts XLA)

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
    import nxpy.numpy as xnp
    p, f = nx.tensor([1, 2]), (lambda x, n: x * n)
    want = jax.jvp(f, (np.array([1.0, 1.0], np.float32), np.array([1, 2], np.int32)),
                   (np.array([1.0, 1.0], np.float32), np.zeros(2, jax.dtypes.float0)))
    for zero in (xnp.zeros_like(p), np.zeros(2, np.int32), np.zeros(2, jax.dtypes.float0)):
        y, t = jvp(f, (nx.tensor([1.0, 1.0]), p), (nx.tensor([1.0, 1.0]), zero))
        assert (y.tolist(), t.tolist()) == (np.asarray(want[0]).tolist(),
                                            np.asarray(want[1]).tolist())
    y, t = jit(lambda q: jvp(lambda a: a * 2, (q,), (np.zeros(2, jax.dtypes.float0),)))(p)
    assert (y.tolist(), t.tolist()) == ([2, 4], [0, 0])
