"""The hot call paths give the slow paths' results: Jit with NumPy arrays, JAX's C++
dispatch around EXLA executables (and the cases it must not take), eager fast kernels."""
import ml_dtypes
import numpy as np
import pytest

import nxpy as nx
from nxpy.defn import jit

from helpers import COMPILERS

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int8, np.uint16, np.int32, np.bool_,
          np.complex64, np.float64, np.int64, np.uint64, np.complex128]


def _value(dt, shape=(2, 3)):
    a = np.arange(6).reshape(shape) % 5
    return (a % 2 == 0) if dt is np.bool_ else a.astype(dt)


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("compiler", COMPILERS)
def test_numpy_arguments_on_the_hot_path(dt, compiler):
    f = jit(lambda x, y: nx.select(nx.not_equal(x, y), x, y), compiler=compiler)
    a, b = _value(dt), _value(dt)[::-1].copy()
    want = np.where(a != b, a, b)
    for _ in range(3):  # first call: slow path; then the hot path (and the C++ dispatch)
        r = f(a, b)
        assert r.type == nx.types.from_dtype(np.dtype(dt))
        np.testing.assert_array_equal(r.to_numpy(), want)
    # mixed with tensors, and in the other order
    np.testing.assert_array_equal(f(nx.tensor(a), b).to_numpy(), want)
    np.testing.assert_array_equal(f(b, nx.tensor(a)).to_numpy(), np.where(a != b, b, a))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_results_do_not_alias_the_callers_arrays(compiler):
    f = jit(lambda x: nx.reshape(x, (4,)), compiler=compiler)
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    for _ in range(3):
        r = f(a)
    a[0, 0] = 100.0  # the caller writes to its array afterwards
    assert r.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_device_tensors_on_another_device_are_moved():
    f = jit(lambda x: x + 1, compiler="exla")
    exla = nx.get_backend("exla")
    x0 = exla.from_numpy(np.float32([1, 2]), nx.types.F32, device_id=0)
    x1 = exla.from_numpy(np.float32([5, 6]), nx.types.F32, device_id=1)
    for _ in range(3):
        assert f(x0).tolist() == [2.0, 3.0]
        assert f(x1).tolist() == [6.0, 7.0]
    assert f(x1).device_id == 0


def test_sharded_results_feed_a_jit():
    """Per-device pieces of a sharded result (Deferred data) are valid hot-path inputs."""
    mesh = nx.Mesh("m", (2,), axis_names=("a",), devices=[0, 1])
    pieces = nx.defn.shard_jit(lambda x: x * 2, mesh, input_shardings=[{0: ["a"]}],
                               compiler="exla")([[nx.tensor([1.0])], [nx.tensor([2.0])]])
    f = jit(lambda x: x + 1, compiler="exla")
    for _ in range(3):
        assert f(pieces[0]).tolist() == [3.0]


@pytest.mark.parametrize("backend", ["numpy", "exla"])
def test_eager_fast_kernels_match_the_op_methods(backend):
    """The second call of an eager op (fast kernel) gives what the first gave, for every
    unary and binary op on a few dtypes, names included."""
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.int32, np.uint8):
        a = nx.tensor((rng.random((2, 3)) * 4 + 1).astype(dt), names=["i", None], backend=backend)
        b = nx.tensor((rng.random((1, 3)) * 3 + 1).astype(dt), backend=backend)
        for name in nx.UNARY:
            fn = getattr(nx, name)
            try:
                first = fn(a)
            except TypeError:
                continue
            again = fn(a)
            assert (again.type, again.names, again.shape) == (first.type, first.names, first.shape)
            np.testing.assert_array_equal(again.to_numpy(), first.to_numpy(), err_msg=name)
        for name in nx.BINARY:
            fn = getattr(nx, name)
            try:
                first = fn(a, b)
            except TypeError:
                continue
            again = fn(a, b)
            assert (again.type, again.names, again.shape) == (first.type, first.names, first.shape)
            np.testing.assert_array_equal(again.to_numpy(), first.to_numpy(), err_msg=name)


@pytest.mark.parametrize("compiler", COMPILERS)
def test_templates_keep_names_apart_on_the_hot_path(compiler):
    """The hot path looks programs up by interned templates: tensors differing only in
    names, and eager EXLA results renamed after their (name-less) program ran, each get the
    program of their own names."""
    f = jit(lambda x: x * 2, compiler=compiler)
    backend = "exla" if compiler == "exla" else "numpy"
    plain = nx.iota((2, 3), backend=backend)
    named = nx.iota((2, 3), names=["i", None], backend=backend)
    renamed = named + 1  # eager: EXLA runs a program without names, then names the result
    assert renamed.names == ("i", None)
    assert renamed.template is named.template and plain.template is not named.template
    for _ in range(3):
        assert f(plain).names == (None, None)
        assert f(named).names == ("i", None)
        assert f(renamed).names == ("i", None)
        assert f(renamed).tolist() == [[2, 4, 6], [8, 10, 12]]
    # results carry their program's template: fed back, they hit the same entry
    r = f(named)
    assert r.template is named.template
    assert f(r).tolist() == [[0, 4, 8], [12, 16, 20]]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_arrays_of_other_dtypes_and_objects_are_not_hot_path_hits(compiler):
    f = jit(lambda x: x + 1, compiler=compiler)
    a = np.arange(3, dtype=np.float32)
    for _ in range(2):
        assert f(a).tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="object"):
        f(np.array([1, "a"], dtype=object))
    assert f(a.astype(np.float64)).type == nx.types.F64


@pytest.mark.parametrize("compiler", COMPILERS)
def test_arrays_then_named_tensors_of_the_same_shape_and_dtype(compiler):
    """All-array calls have their own hot path keyed by shape and dtype: a named tensor of
    the same shape and dtype among arrays must not take it (its program keeps the names)."""
    f = jit(lambda x, y: x + y, compiler=compiler)
    a = np.ones((2, 3), np.float32)
    named = nx.tensor(a, names=["i", None])
    for _ in range(3):
        assert f(a, a).names == (None, None)
        assert f(a, named).names == ("i", None)
        assert f(named, a).names == ("i", None)
    assert f(a, named).tolist() == [[2.0] * 3] * 2


@pytest.mark.parametrize("compiler", COMPILERS)
def test_arrays_of_wider_dtypes_after_narrower_keep_their_precision(compiler):
    """JAX's dispatch narrows 64-bit host arrays when its x64 mode is off: a float64 or
    int64 array after a float32/int32 one of the same shape must get its own program."""
    f = jit(lambda x: x + 1, compiler=compiler)
    for _ in range(3):
        assert f(np.zeros(2, np.float32)).type == nx.types.F32
        assert f(np.zeros(2, np.int32)).type == nx.types.S32
    wide = f(np.array([1e-12, 2.0 ** 40], np.float64))
    assert wide.type == nx.types.F64 and wide.tolist() == [1.0 + 1e-12, 2.0 ** 40 + 1]
    big = f(np.array([2 ** 40, -2 ** 40], np.int64))
    assert big.type == nx.types.S64 and big.tolist() == [2 ** 40 + 1, -2 ** 40 + 1]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_arrays_of_non_native_byte_order(compiler):
    """They are no nxpy type (convert them first): rejected on every call, never passed
    on to a program of the native dtype."""
    f = jit(lambda x: x * 2, compiler=compiler)
    assert f(np.arange(3, dtype=np.float32)).tolist() == [0.0, 2.0, 4.0]
    for _ in range(3):
        with pytest.raises(TypeError, match=r"argument 0 \(x\).*unsupported NumPy dtype >f4"):
            f(np.arange(3, dtype=">f4"))


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("args", ["tensors", "arrays"])
def test_structured_results_on_the_hot_path(compiler, args):
    """``run.call`` builds the whole result: several outputs, containers, a lone tensor in
    a tuple, on every call after the first."""
    f = jit(lambda x, y: (x + y, {"d": x - y, "p": (x * y,)}), compiler=compiler)
    g = jit(lambda x: (x,), compiler=compiler)
    a, b = np.float32([1, 2]), np.float32([3, 5])
    x, y = (nx.tensor(a), nx.tensor(b)) if args == "tensors" else (a, b)
    for _ in range(3):
        s, rest = f(x, y)
        assert (s.tolist(), rest["d"].tolist(), rest["p"][0].tolist()) == \
            ([4.0, 7.0], [-2.0, -3.0], [3.0, 10.0])
        one = g(x)
        assert type(one) is tuple and one[0].tolist() == [1.0, 2.0]


def test_numpy_fast_kernels_ignore_floating_point_warnings():
    """The NumPy backend's fast kernels compute inf/NaN silently, as XLA does (and as the
    op's full path does on the first call)."""
    import warnings
    big = nx.tensor(np.float32([3e38, 0.0]), backend="numpy")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):  # first call: full path; then the fast kernel
            r = nx.multiply(big, big)
            assert r.to_numpy()[0] == np.inf
            q = nx.divide(big, nx.tensor(np.float32([0.0, 0.0]), backend="numpy"))
            assert q.to_numpy()[0] == np.inf and np.isnan(q.to_numpy()[1])
    assert np.geterr()["over"] == "warn"  # the caller's NumPy error state is untouched


def test_numpy_fast_kernels_from_many_threads():
    """A fast kernel runs in a context one thread enters at a time (NumPy releases the GIL
    inside large ufuncs): concurrent calls decline it and take the op's full path, with the
    same results and no warnings."""
    import threading
    import warnings
    a = np.linspace(-1, 1, 200_000, dtype=np.float32) * 3e38
    x = nx.tensor(a, backend="numpy")
    with np.errstate(over="ignore"):
        want = (a.astype(np.float64) * 4).astype(np.float32)
    errors = []

    def work():
        try:
            for _ in range(20):
                np.testing.assert_array_equal(nx.add(nx.add(x, x), nx.add(x, x)).to_numpy(),
                                              want)
        except Exception as e:  # reported below
            errors.append(e)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []


def test_a_declining_fast_kernel_falls_back_to_the_op_method():
    """A backend's fast kernel may raise to decline a call: the front end and the Evaluator
    then run the op method (the conformance of both paths does not depend on it)."""
    from nxpy.backends.numpy import NumpyBackend

    class Moody(NumpyBackend):
        name = "moody"
        calls = 0

        def fast_kernel(self, name, out, *args):
            def k(*datas):
                Moody.calls += 1
                raise RuntimeError("not now")
            return k

    nx.register_backend("moody", Moody)
    try:
        x = nx.tensor(np.float32([1, 2]), backend="moody")
        f = jit(lambda v: nx.exp(v) + v, compiler="evaluator")
        for _ in range(3):
            assert nx.add(x, x).tolist() == [2.0, 4.0]
            assert nx.negate(x).tolist() == [-1.0, -2.0]
        front = Moody.calls
        assert front >= 4  # the front end's kernels were tried, and declined
        old = nx.default_backend("moody")  # the Evaluator computes on the default backend
        try:
            for _ in range(3):
                r = f(x)
                assert r.backend.name == "moody"
                np.testing.assert_allclose(r.to_numpy(), np.exp([1, 2]) + [1, 2], rtol=1e-6)
        finally:
            nx.default_backend(old)
        assert Moody.calls > front  # and the Evaluator's
    finally:
        from nxpy import plugins
        plugins.BACKENDS.unregister("moody")



@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("where", ["numpy", "exla", "arrays"])
def test_calls_leave_no_reference_cycles(compiler, where):
    """A call frees everything it made when it returns: no reference cycle per call (a
    self-referencing closure in the result builder was one). Cycles keep results, device
    buffers included, alive until the garbage collector runs, and every collection runs
    JAX's gc callback, where a Ctrl-C arriving then is swallowed."""
    import gc
    a = np.arange(8, dtype=np.float32)
    x = a if where == "arrays" else nx.tensor(a, backend=where)
    one = jit(lambda v: v * 2, compiler=compiler)
    tree = jit(lambda v: (v * 2, {"s": v + 1, "t": [v]}), compiler=compiler)
    for _ in range(3):
        one(x), tree(x), nx.add(nx.tensor(a), nx.tensor(a))

    def window():
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for _ in range(20):
                one(x), tree(x), nx.add(nx.tensor(a), nx.tensor(a))
            gc.collect()
            return [type(o).__name__ for o in gc.garbage]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
    # a cycle per call shows in every window; what earlier tests of this worker left to be
    # released once (their programs, as caches turn over) shows in the first at most
    assert window() == [] or window() == []
