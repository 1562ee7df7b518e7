"""nx.with_default_backend (Nx.with_default_backend/2) and nx.compatible (Nx.compatible?/2)."""
import dataclasses
import threading
from collections import namedtuple

import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import jit


# ----------------------------------------------------------------------------------------
# with_default_backend
# ----------------------------------------------------------------------------------------
def test_block_sets_and_restores_the_default():
    assert nx.default_backend().name == "numpy"
    with nx.with_default_backend("exla") as b:
        assert b is nx.get_backend("exla") and nx.default_backend() is b
        t = nx.tensor([1.0, 2.0]) * 2
        assert t.backend is b and t.tolist() == [2.0, 4.0]
    assert nx.default_backend().name == "numpy"
    assert nx.tensor([1]).backend.name == "numpy"


def test_blocks_nest_and_restore_on_error():
    with nx.with_default_backend("exla"):
        with nx.with_default_backend("numpy"):
            assert nx.default_backend().name == "numpy"
        assert nx.default_backend().name == "exla"
        with pytest.raises(ZeroDivisionError):
            with nx.with_default_backend("numpy"):
                1 / 0
        assert nx.default_backend().name == "exla"
    assert nx.default_backend().name == "numpy"


def test_setting_the_default_inside_a_block_lasts_until_the_block_ends():
    """As in Nx: default_backend/1 inside the block changes the block's default, and the one
    from before the block comes back when it ends."""
    with nx.with_default_backend("exla"):
        old = nx.default_backend("numpy")
        assert old.name == "exla" and nx.default_backend().name == "numpy"
    assert nx.default_backend().name == "numpy"
    old = nx.default_backend("exla")
    try:
        with nx.with_default_backend("numpy"):
            nx.default_backend("exla")
        assert nx.default_backend().name == "exla"  # the process default was never touched
    finally:
        nx.default_backend(old)


def test_a_block_is_local_to_its_thread():
    seen = {}
    inside, leave = threading.Event(), threading.Event()

    def other():
        inside.wait(10)
        seen["other"] = nx.default_backend().name
        seen["tensor"] = nx.tensor([1]).backend.name
        leave.set()

    th = threading.Thread(target=other)
    th.start()
    with nx.with_default_backend("exla"):
        inside.set()
        leave.wait(10)
        seen["here"] = nx.default_backend().name
    th.join(10)
    assert seen == {"other": "numpy", "tensor": "numpy", "here": "exla"}


def test_a_jit_on_the_evaluator_returns_on_the_block_backend():
    f = jit(lambda x: x * 2)
    assert f(nx.tensor([1])).backend.name == "numpy"
    with nx.with_default_backend("exla"):
        r = f(np.array([3], np.int32))
        assert r.backend.name == "exla" and r.tolist() == [6]
    assert f(nx.tensor([1])).backend.name == "numpy"
    assert f.trace_count == 1


def test_block_errors():
    with pytest.raises(ValueError, match="unknown backend 'nope': expected one of"):
        with nx.with_default_backend("nope"):
            pass
    assert nx.default_backend().name == "numpy"
    with pytest.raises(TypeError, match="backend must be a name or a Backend instance, got 3"):
        with nx.with_default_backend(3):
            pass

    def body(x):
        with nx.with_default_backend("exla"):
            return x

    with pytest.raises(nx.HostOnlyError, match="nx.with_default_backend is a host-only"):
        jit(body)(nx.tensor([1]))
    assert nx.default_backend().name == "numpy"


# ----------------------------------------------------------------------------------------
# compatible
# ----------------------------------------------------------------------------------------
Pair = namedtuple("Pair", "a b")


@dataclasses.dataclass
class Layer:
    w: object
    act: str = "relu"


@pytest.mark.parametrize("left, right, want", [
    # Nx's doctests
    (nx.iota((3, 2)), nx.iota((3, 2)), True),
    (nx.iota((3, 2)), nx.iota((3, 2), names=["rows", "columns"]), True),
    (nx.iota((3, 2), names=["rows", None]), nx.iota((3, 2), names=[None, "columns"]), True),
    (nx.iota((3, 2), names=["foo", "bar"]), nx.iota((3, 2), names=["rows", "columns"]), False),
    (nx.iota((3, 2)), nx.iota((2, 3)), False),
    (nx.iota((2, 2)), nx.iota((2, 2), type="f32"), False),
    ((nx.iota((3, 2)), (1, 2)), (nx.iota((3, 2)), (3, 4)), True),
    ({"foo": nx.iota((3, 2))}, {"foo": nx.iota((3, 2))}, True),
    ({"foo": nx.iota((3, 2))}, {"bar": nx.iota((3, 2))}, False),
    # numbers, arrays, ranks, structure, static data
    (1, 2, True),
    (1, 2.0, False),
    (np.zeros((2, 3), np.float32), nx.template((2, 3), "f32"), True),
    (np.zeros((2, 3), np.float64), nx.template((2, 3), "f32"), False),
    (nx.iota((3,)), nx.iota((3, 1)), False),
    ((nx.iota((2,)),), [nx.iota((2,))], False),
    ((1, 2), (1, 2, 3), False),
    (Pair(1.0, nx.iota((2,))), Pair(5.0, nx.iota((2,))), True),
    (Layer(nx.iota((2,))), Layer(nx.iota((2,)), act="tanh"), False),
    (Layer(nx.iota((2,))), Layer(nx.iota((2,))), True),
])
def test_compatible(left, right, want):
    assert nx.compatible(left, right) is want
    assert nx.compatible(right, left) is want


def test_compatible_on_traced_tensors_and_bad_leaves():
    seen = []

    def f(x, y):
        seen.append((nx.compatible(x, y), nx.compatible(x, nx.template((2,), "f32"))))
        return x

    jit(f)(nx.tensor([1.0, 2.0]), nx.tensor([3, 4]))
    assert seen == [(False, True)]
    assert nx.compatible(Pair("a", 1), Pair(1, 1)) is False  # a str field is static data
    with pytest.raises(TypeError, match="compatible: right: expected a tensor.*got object"):
        nx.compatible([1], [object()])
