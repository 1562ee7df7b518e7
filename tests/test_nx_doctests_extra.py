"""Nx's doctests (nx/lib/nx.ex) that nxpy used to disagree with (issue 28, part 5), ported:
``pad`` keeps names, ``select`` takes a non-scalar ``pred``'s names (no merge of the
branches' names), ``reshape`` to a tensor's shape (and names), ``concatenate`` and
``stack`` traverse tuples of tensors as containers. Three of Nx's examples nxpy departs
from on purpose (docs/guarantees.md, "Departures from Nx"), each pinned on every path: a
negative tensor index counts from the end (Nx clamps it to 0), and two error cases Nx
raises for that nxpy accepts: ``tensor(t, type=)`` converts and ``bitcast`` reinterprets
complex numbers. Vectorized examples are ported without the vectorized axes (nxpy has
none)."""
from __future__ import annotations

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import jit


def _is(t, type_, shape, values, names=None):
    assert str(t.type) == type_, t.type
    assert t.shape == shape, t.shape
    assert t.names == tuple(names or (None,) * len(shape)), t.names
    assert t.tolist() == values, t.tolist()


def test_pad_keeps_names():
    t = nx.tensor([[1], [2], [3]], names=[None, "data"])
    _is(nx.pad(t, 0, [(0, 0, 0), (1, 1, 0)]), "s32", (3, 3), [[0, 1, 0], [0, 2, 0], [0, 3, 0]],
        [None, "data"])
    # compiled too (the template carries the names)
    r = jit(lambda x: nx.pad(x, 0, [(1, 0, 0), (0, 1, 1)]), compiler="evaluator")(t)
    _is(r, "s32", (4, 2), [[0, 0], [1, 0], [2, 0], [3, 0]], [None, "data"])


def test_select_names_come_from_pred():
    x = nx.tensor([2, 4, 6], names=["x"])
    y = nx.tensor([3, 2, 1])
    _is(nx.select(nx.greater(x, y), nx.tensor([2, 4, 6], names=["i"]),
                  nx.tensor([1, 3, 5], names=["j"])), "s32", (3,), [1, 4, 6], ["x"])
    x = nx.tensor([2, 4, 6, 8, 10], names=["x"])
    y = nx.tensor([1, 6, 2, 11, 2], names=["x"])
    _is(nx.select(nx.greater(x, y), nx.tensor(2), nx.tensor([1, 3, 5, 7, 9], names=["x"])),
        "s32", (5,), [2, 3, 2, 7, 2], ["x"])
    _is(nx.select(nx.tensor([0, 1, 2], type="u8"), nx.tensor([0, 0, 0]), nx.tensor([1, 1, 1])),
        "s32", (3,), [1, 0, 0])
    _is(nx.select(nx.tensor([0, 1, 0]), nx.tensor([1, 1, 1]), nx.tensor([2.0, 2.0, 2.0])),
        "f32", (3,), [2.0, 1.0, 2.0])
    # a scalar pred merges the branches' names (Nx's binary_broadcast), which must agree
    _is(nx.select(nx.tensor(1), nx.tensor([1, 2], names=["a"]), 0), "s32", (2,), [1, 2], ["a"])
    with pytest.raises(ValueError, match="select: cannot merge names 'a' and 'b'"):
        nx.select(nx.tensor(1), nx.iota((2,), names=["a"]), nx.iota((2,), names=["b"]))


def test_reshape_to_a_tensors_shape():
    shape = nx.tensor([[0], [0], [0], [0]], names=["x", "y"])
    _is(nx.reshape(nx.tensor([1, 2, 3, 4]), shape), "s32", (4, 1), [[1], [2], [3], [4]],
        ["x", "y"])
    _is(nx.reshape(nx.tensor([1, 2, 3, 4]), shape, names=["a", None]), "s32", (4, 1),
        [[1], [2], [3], [4]], ["a", None])
    _is(nx.tensor([1, 2, 3, 4]).reshape(shape), "s32", (4, 1), [[1], [2], [3], [4]], ["x", "y"])
    # the other examples of Nx.reshape
    t = nx.tensor([1, 2, 3, 4], names=["x"])
    _is(nx.reshape(t, (2, 2), names=["x", "y"]), "s32", (2, 2), [[1, 2], [3, 4]], ["x", "y"])
    _is(nx.reshape(nx.tensor(1), (1, 1, 1), names=["x", "y", "z"]), "s32", (1, 1, 1), [[[1]]],
        ["x", "y", "z"])
    _is(nx.reshape(nx.tensor([[1, 2, 3], [4, 5, 6]]), (-1, 2), names=["x", "y"]), "s32", (3, 2),
        [[1, 2], [3, 4], [5, 6]], ["x", "y"])


def test_concatenate_and_stack_traverse_tuples():
    nested = (nx.tensor([1, 2]), (nx.tensor([3, 4]), nx.tensor([5, 6])))
    _is(nx.concatenate(nested), "s32", (6,), [1, 2, 3, 4, 5, 6])
    _is(nx.stack(nested), "s32", (3, 2), [[1, 2], [3, 4], [5, 6]])
    _is(nx.stack([1, 2, 3]), "s32", (3,), [1, 2, 3])
    _is(nx.stack([nx.tensor([1, 2, 3]), nx.tensor([4, 5, 6])]), "s32", (2, 3),
        [[1, 2, 3], [4, 5, 6]])
    assert nx.stack([nx.iota((2, 1, 4))] * 3, axis=-1).shape == (2, 1, 4, 3)
    _is(nx.stack([nx.tensor(1), nx.tensor(2)], name="x"), "s32", (2,), [1, 2], ["x"])
    # a tuple of numbers is data (one tensor), as before
    _is(nx.concatenate([(1, 2), (3,)]), "s32", (3,), [1, 2, 3])
    # inside a compiled function the tuple is traversed too
    r = jit(lambda a, b: nx.concatenate((a, (b, a))), compiler="evaluator")(
        nx.tensor([1]), nx.tensor([2]))
    _is(r, "s32", (3,), [1, 2, 1])
    # the other concatenate examples
    t1 = nx.iota((2, 2, 2), names=["x", "y", "z"], type="f32")
    t2 = nx.iota((1, 2, 2), names=["x", "y", "z"], type="u8")
    t3 = nx.iota((1, 2, 2), names=["x", "y", "z"], type="s64")
    r = nx.concatenate([t1, t2, t3], axis="x")
    assert str(r.type) == "f32" and r.shape == (4, 2, 2) and r.names == ("x", "y", "z")
    t1 = nx.iota((1, 3, 2), names=["x", "y", "z"])
    t2 = nx.iota((1, 1, 2), names=["x", "y", "z"])
    t3 = nx.iota((1, 2, 2), names=["x", "y", "z"])
    _is(nx.concatenate([t1, t2, t3], axis="y"), "s32", (1, 6, 2),
        [[[0, 1], [2, 3], [4, 5], [0, 1], [0, 1], [2, 3]]], ["x", "y", "z"])
    assert nx.concatenate([nx.iota((1, 2, 3)), nx.iota((1, 1, 3))], axis=1).shape == (1, 3, 3)
    for bad in ([nx.iota((1, 2, 3)), nx.iota((1, 1, 3))], [nx.iota((1, 2, 3)), nx.iota((1, 1))]):
        with pytest.raises(ValueError, match=r"concatenate: tensors\[1\] has shape"):
            nx.concatenate(bad, axis=0)
    with pytest.raises(ValueError, match="stack: tensors"):
        nx.stack((nx.tensor([1, 2]), (nx.tensor([3]),)))


PATHS = {"numpy": lambda f: f,
         "evaluator": lambda f: jit(f, compiler="evaluator"),
         "exla": lambda f: jit(f, compiler="exla")}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_a_negative_tensor_index_counts_from_the_end(path):
    """Nx's ``t[m][m]`` with ``m = Nx.tensor(-1)`` clamps to 0 and gives 1; nxpy's ``x[...]``
    is NumPy's and jax.numpy's, so it gives the last element, 4 (docs/ops_indexing.md).
    Nx's own ops keep Nx's rule: ``slice`` and ``take`` clamp a negative index to 0."""
    t, a = nx.tensor([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32)
    run = PATHS[path]
    for m in (-1, -2, -3):
        want = a[max(m, -2)][max(m, -2)]   # NumPy's wrap; past the front, jnp's clamp
        assert run(lambda t, m: t[m][m])(t, nx.tensor(m)).tolist() == want, m
        assert run(lambda t, m: t[m, m])(t, nx.tensor(m)).tolist() == want, m
    m = nx.tensor(-1)
    assert run(lambda t, m: nx.slice(t, [m, m], [1, 1]))(t, m).tolist() == [[1]]
    assert run(lambda t, m: nx.take(nx.take(t, m), m))(t, m).tolist() == 1


@pytest.mark.parametrize("path", sorted(PATHS))
def test_tensor_of_a_tensor_with_another_type_converts(path):
    """Nx raises for ``Nx.tensor(t, type: :f32)`` of an s32 tensor; nxpy converts, as
    ``jnp.asarray(x, dtype)`` does: the value ``nx.as_type`` (Nx's spelling) gives."""
    t = nx.tensor([1, -2, 3])
    got = PATHS[path](lambda x: nx.tensor(x, type="f32"))(t)
    _is(got, "f32", (3,), [1.0, -2.0, 3.0])
    assert got.tolist() == nx.as_type(t, "f32").tolist()
    _is(nx.tensor(nx.tensor([1.5, -2.5]), type="s32"), "s32", (2,), [1, -2])


@pytest.mark.parametrize("path", sorted(PATHS))
def test_bitcast_between_complex_and_64_bit_types_is_numpys_view(path):
    """Nx and jax.lax refuse ``bitcast`` to or from a complex type; nxpy reinterprets the
    bits as NumPy's ``view`` (and ``jax.Array.view``) does: real part in the low half."""
    z = np.array([1 + 2j, -0.5j, np.inf - 0j], np.complex64)
    run = PATHS[path]
    for to in ("s64", "u64", "f64"):
        bits = run(lambda x, to=to: nx.bitcast(x, to))(nx.tensor(z))
        assert str(bits.type) == to
        assert bits.to_numpy().tobytes() == z.view(np.dtype(nx.types.parse(to).dtype)).tobytes()
        back = run(lambda x: nx.bitcast(x, "c64"))(bits)
        assert back.to_numpy().tobytes() == z.tobytes()
    with pytest.raises(TypeError, match="bitcast: expected a type of the same bit width as c64"):
        nx.bitcast(nx.tensor(z), "c128")


def test_tensor_and_bitcast_error_cases():
    # the error cases that do agree with Nx
    with pytest.raises(ValueError, match="tensor: expected names to have one name"):
        nx.tensor([[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], names=["batch"])
    with pytest.raises(ValueError, match="tensor: cannot merge names 'column' and 'row'"):
        nx.tensor(nx.tensor([1, 2, 3], names=["column"]), names=["row"])
    _is(nx.tensor(nx.tensor([1, 2, 3], names=["column"])), "s32", (3,), [1, 2, 3])
    with pytest.raises(TypeError, match="bitcast: expected a type of the same bit width as s16"):
        nx.bitcast(nx.tensor([0, 1, 2], names=["data"], type="s16"), "f32")
    t = nx.bitcast(nx.tensor([0, 0, 0], names=["data"], type="s32"), "f32")
    _is(t, "f32", (3,), [0.0, 0.0, 0.0], ["data"])
    _is(nx.bitcast(t, "s32"), "s32", (3,), [0, 0, 0], ["data"])
    _is(nx.bitcast(nx.tensor([[0, -1], [1, -2]], type="s8"), "u8"), "u8", (2, 2),
        [[0, 255], [1, 254]])
